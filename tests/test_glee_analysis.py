"""GLEE's linear models and the model-choice meta-game (analysis/families/glee.py, analysis/families/metagame.py).

The run directories are written by hand in the record format the language games log (``params``,
``labels``, ``metrics`` with per-seat lists); their game is a made-up family declared in this file and put
into the registry for the test only, so the numbers are known exactly.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("statsmodels")
pytest.importorskip("pandas")

from econarena.analysis.families import glee  # noqa: E402
from econarena.analysis.families.metagame import best_responses, pure_equilibria  # noqa: E402
from econarena.cli import main  # noqa: E402
from econarena.games import GAMES  # noqa: E402
from econarena.games.base import GameInfo  # noqa: E402

TOY = "toy_split"
TOY_INFO = GameInfo(title="Toy split", moves="sequential", rounds=True, family="glee",
                    factors=(("stake", 100), ("market", {"horizon": 99, "talk": False})))


class ToyGame:
    """Only what the analysis reads of a game: its name and declaration (no rules are played here)."""

    name = TOY
    info = TOY_INFO


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(GAMES, TOY, ToyGame())


def write_run_dir(path: Path, runs: list[dict[str, Any]], game: str = TOY) -> Path:
    path.mkdir(parents=True)
    (path / "config.toml").write_text(f'[experiment]\nname = "{path.name}"\ngame = "{game}"\n', encoding="utf-8")
    lines = []
    for k, r in enumerate(runs):
        labels = r.get("labels", ["m_a", "m_a"])
        lines.append(json.dumps({
            "lineup": "melee", "session": k, "run": 0, "labels": labels, "agents": ["scripted"] * 2,
            "models": r.get("models", [None, None]), "params": r["params"], "complete": True,
            "payoffs": [0.0, 0.0], "ne_payoffs": None, "valid": r.get("valid", [True, True]),
            "deviation": [None, None], "winners": [], "metrics": r["metrics"]}))
    (path / "runs.jsonl").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    (path / "decisions.jsonl").write_text("", encoding="utf-8")
    return path


MARKETS = [(99, False), (99, True), (12, False), (12, True)]
PLAYERS = ["m_a", "m_x", "m_y"]


def exact_runs() -> list[dict[str, Any]]:
    """Full factorial, no noise: efficiency = 0.5 + 0.1 [stake=1000] + 0.2 [p1=m_x] - 0.05 [p2=m_y]
    + 0.03 [market = (12, true)]; self-gains 0.3 + 0.1 [p1=m_y] (seat 1) and 0.2 + 0.1 [p2=m_x] (seat 2)."""
    runs = []
    for stake, (horizon, talk), p1, p2 in itertools.product((100, 1000), MARKETS, PLAYERS, PLAYERS):
        eff = 0.5 + 0.1 * (stake == 1000) + 0.2 * (p1 == "m_x") - 0.05 * (p2 == "m_y") + 0.03 * (
            (horizon, talk) == (12, True))
        runs.append({"params": {"stake": stake, "horizon": horizon, "talk": talk, "metrics": "paper"},
                     "labels": [p1, p2],
                     "metrics": {"efficiency": eff, "self_gain": [0.3 + 0.1 * (p1 == "m_y"), 0.2 + 0.1 * (p2 == "m_x")],
                                 "agreement": True, "note": "text is not modelled"}})
    return runs


def effect(fit: glee.Fit, term: str, level: str = "") -> dict[str, Any]:
    return next(e for e in fit.effects if e["term"] == term and e["level"] == level)


# ------------------------------------------------------------------------------------------- OLS

def test_exact_design_recovers_the_known_effects(tmp_path: Path, toy: None) -> None:
    d = write_run_dir(tmp_path / "exact", exact_runs())
    datas = glee.collect([d], "glee")
    data = datas[TOY]
    assert len(data.rows) == 72 and data.seats == 2
    assert data.metrics == ["efficiency", "self_gain_p1", "self_gain_p2"]  # bools and text are not outcomes
    f = glee.fit(data, "efficiency")
    assert f.n == 72 and f.notes == []
    assert effect(f, "const")["effect_x100"] == pytest.approx(50.0, abs=1e-9)
    assert effect(f, "stake", "1000")["effect_x100"] == pytest.approx(10.0, abs=1e-9)
    assert effect(f, "stake", "1000")["reference"] == "100"
    assert effect(f, "p1_model", "m_x")["effect_x100"] == pytest.approx(20.0, abs=1e-9)
    assert effect(f, "p1_model", "m_y")["effect_x100"] == pytest.approx(0.0, abs=1e-9)
    assert effect(f, "p2_model", "m_y")["effect_x100"] == pytest.approx(-5.0, abs=1e-9)
    assert effect(f, "p2_model", "m_y")["reference"] == "m_a"  # most frequent, ties by name
    market = effect(f, "market", "horizon=12, talk=true")
    assert market["effect_x100"] == pytest.approx(3.0, abs=1e-9)
    assert market["reference"] == "horizon=99, talk=false"
    assert effect(f, "market", "horizon=99, talk=true")["effect_x100"] == pytest.approx(0.0, abs=1e-9)
    # no noise: a zero-width interval and a perfect fit
    assert all(e["high_x100"] - e["low_x100"] == pytest.approx(0.0, abs=1e-6) for e in f.effects)
    assert f.r2 == pytest.approx(1.0)
    # the terms: const, 1 stake level, 3 market levels, 2 + 2 players, in that order
    assert [(e["term"], e["level"]) for e in f.effects] == [
        ("const", ""), ("stake", "1000"), ("market", "horizon=12, talk=false"),
        ("market", "horizon=12, talk=true"), ("market", "horizon=99, talk=true"),
        ("p1_model", "m_x"), ("p1_model", "m_y"), ("p2_model", "m_x"), ("p2_model", "m_y")]


def test_statsmodels_agrees_with_the_normal_equations(tmp_path: Path, toy: None) -> None:
    """The same design with noise: coefficients and standard errors equal (X'X)^-1 X'y and
    sqrt(s2 diag (X'X)^-1), s2 = RSS / (n - k), computed here with numpy alone."""
    rng = np.random.default_rng(5)
    runs = exact_runs()
    for r in runs:
        r["metrics"]["efficiency"] += float(rng.normal(0, 0.05))
    data = glee.collect([write_run_dir(tmp_path / "noisy", runs)])[TOY]
    f = glee.fit(data, "efficiency")
    X = np.array([[1.0] + [float(row[t] == lev) for t, lev in [(e["term"], e["level"]) for e in f.effects[1:]]]
                  for row in data.rows])
    y = np.array([row["efficiency"] for row in data.rows])
    xtx_inv = np.linalg.inv(X.T @ X)
    beta = xtx_inv @ X.T @ y
    s2 = float(((y - X @ beta) ** 2).sum()) / (len(y) - X.shape[1])
    se = np.sqrt(s2 * np.diag(xtx_inv))
    np.testing.assert_allclose([e["effect_x100"] for e in f.effects], 100 * beta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose([e["se_x100"] for e in f.effects], 100 * se, rtol=1e-9)
    for e, s in zip(f.effects, se):
        assert e["high_x100"] - e["low_x100"] == pytest.approx(2 * 1.959963984540054 * 100 * s)


def balanced_runs(reps: int, seed: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    """2 x 2 balanced: stake x p1 player, one market, one p2 player; y = 0.5 + 0.1 b + 0.2 x + N(0, 0.1)."""
    rng = np.random.default_rng(seed)
    runs, ys = [], []
    for stake, p1 in itertools.product((100, 1000), ("m_a", "m_x")):
        for _ in range(reps):
            y = 0.5 + 0.1 * (stake == 1000) + 0.2 * (p1 == "m_x") + float(rng.normal(0, 0.1))
            ys.append((stake == 1000, p1 == "m_x", y))
            runs.append({"params": {"stake": stake, "horizon": 99, "talk": False}, "labels": [p1, "m_a"],
                         "metrics": {"efficiency": y, "self_gain": [0.5, 0.5]}})
    return runs, np.array(ys, dtype=float)


def test_balanced_design_closed_form_and_interval_width(tmp_path: Path, toy: None) -> None:
    """Balanced additive 2 x 2: the effect is the difference of the two margins' means and its variance is
    4 s2 / N; the interval (1.96 SE each side) covers the truth here and halves with 4x the runs."""
    runs, ys = balanced_runs(10, seed=3)
    f = glee.fit(glee.collect([write_run_dir(tmp_path / "b10", runs)])[TOY], "efficiency", model_ref="m_a")
    b, x, y = ys[:, 0] == 1, ys[:, 1] == 1, ys[:, 2]
    eff_b, eff_x = y[b].mean() - y[~b].mean(), y[x].mean() - y[~x].mean()
    const = y.mean() - 0.5 * eff_b - 0.5 * eff_x
    rss = float(((y - const - eff_b * b - eff_x * x) ** 2).sum())
    se = math.sqrt(4 * rss / (len(y) - 3) / len(y))
    e_b, e_x = effect(f, "stake", "1000"), effect(f, "p1_model", "m_x")
    assert e_b["effect_x100"] == pytest.approx(100 * eff_b, rel=1e-9)
    assert e_x["effect_x100"] == pytest.approx(100 * eff_x, rel=1e-9)
    assert e_b["se_x100"] == pytest.approx(100 * se, rel=1e-9)
    assert e_x["se_x100"] == pytest.approx(100 * se, rel=1e-9)  # balanced: the same precision
    assert e_b["low_x100"] < 10.0 < e_b["high_x100"] and e_x["low_x100"] < 20.0 < e_x["high_x100"]
    assert [e["term"] for e in f.effects] == ["const", "stake", "p1_model"]  # one-level factors add nothing
    runs40, _ = balanced_runs(40, seed=3)
    f40 = glee.fit(glee.collect([write_run_dir(tmp_path / "b40", runs40)])[TOY], "efficiency")
    w10 = e_b["high_x100"] - e_b["low_x100"]
    w40 = effect(f40, "stake", "1000")["high_x100"] - effect(f40, "stake", "1000")["low_x100"]
    assert 0.35 < w40 / w10 < 0.7


def test_absent_reference_collinear_columns_and_clipping(tmp_path: Path, toy: None) -> None:
    """Only self-play (p2 = p1): p2's columns are not identifiable and are dropped with a note; a reference
    level not played is replaced by the first one present; fairness is clipped to [0, 1]."""
    runs = []
    for stake, p in itertools.product((1000, 10_000), ("m_a", "m_x")):
        runs.append({"params": {"stake": stake, "horizon": 99, "talk": False}, "labels": [p, p],
                     "metrics": {"fairness": 1.4 if stake == 1000 else -0.3, "self_gain": [0.5, 0.5]}})
    runs.append({**runs[0], "valid": [True, False]})  # a rule break: left out as GLEE's data
    data = glee.collect([write_run_dir(tmp_path / "self", runs)])[TOY]
    assert data.dropped_invalid == 1 and len(data.rows) == 4
    f = glee.fit(data, "fairness")
    assert any("reference level '100' is absent" in n for n in f.notes)
    assert any(n.startswith("p2_model=m_x: not identifiable") for n in f.notes)
    assert effect(f, "stake", "10000")["effect_x100"] == pytest.approx(-100.0)  # 1.4 -> 1, -0.3 -> 0
    assert effect(f, "const")["effect_x100"] == pytest.approx(100.0)
    assert not any(e["term"] == "p2_model" for e in f.effects)


def test_undefined_metric_values_leave_that_model_only(tmp_path: Path, toy: None) -> None:
    runs = exact_runs()
    for r in runs[:10]:
        r["metrics"]["efficiency"] = None
    data = glee.collect([write_run_dir(tmp_path / "nan", runs)])[TOY]
    assert glee.fit(data, "efficiency").n == 62
    assert glee.fit(data, "self_gain_p1").n == 72


# ------------------------------------------------------------------------------------ meta-game

def test_prisoners_dilemma_has_one_pure_equilibrium() -> None:
    A = [[3, 0], [5, 1]]
    B = [[3, 5], [0, 1]]
    assert pure_equilibria(A, B) == [(1, 1)]
    rows, cols = best_responses(A, B)
    assert rows.tolist() == [[False, False], [True, True]]
    assert cols.tolist() == [[False, True], [False, True]]


def test_matching_pennies_has_none() -> None:
    A = np.array([[1.0, -1.0], [-1.0, 1.0]])
    assert pure_equilibria(A, -A) == []


def test_coordination_and_ties_give_several() -> None:
    assert pure_equilibria([[2, 0], [0, 1]], [[2, 0], [0, 1]]) == [(0, 0), (1, 1)]
    flat = np.full((3, 3), 0.4)
    assert len(pure_equilibria(flat, flat)) == 9  # weak best responses count


def test_three_by_three_by_hand() -> None:
    # player 1's best rows per column: c0 -> r1, c1 -> r2, c2 -> r2
    A = [[1, 0, 3], [3, 1, 2], [2, 5, 4]]
    # player 2's best columns per row: r0 -> c2, r1 -> c0, r2 -> c1
    B = [[0, 1, 2], [4, 3, 1], [1, 6, 0]]
    assert pure_equilibria(A, B) == [(1, 0), (2, 1)]
    B2 = [[0, 1, 2], [1, 3, 1], [1, 0, 6]]  # r0 -> c2, r1 -> c1, r2 -> c2
    assert pure_equilibria(A, B2) == [(2, 2)]
    A_tie = [[1, 0, 4], [3, 1, 2], [2, 5, 4]]  # c2 -> r0 and r2 (a tie): both are best responses
    assert pure_equilibria(A_tie, B2) == [(0, 2), (2, 2)]


def test_unobserved_cells_certify_nothing() -> None:
    A = [[3, 0], [math.nan, 1]]
    B = [[3, 5], [0, 1]]
    # (1, 1): B's row 1 is known and 1 >= 0, A's column 1 is known and 1 >= 0: an equilibrium;
    # (0, 0) is not one (player 2 gains by moving to column 1), and column 0 has an unobserved cell
    assert pure_equilibria(A, B) == [(1, 1)]
    assert pure_equilibria([[1, math.nan]], [[1, math.nan]]) == []  # the deviation to column 1 is unknown
    with pytest.raises(ValueError, match="same shape"):
        pure_equilibria([[1, 2]], [[1], [2]])


def test_pair_table_means_and_equilibria(tmp_path: Path, toy: None) -> None:
    data = glee.collect([write_run_dir(tmp_path / "pairs", exact_runs())])[TOY]
    t = glee.pair_table(data)
    assert t is not None and t.rows == PLAYERS and t.cols == PLAYERS
    assert (t.runs == 8).all()
    np.testing.assert_allclose(t.p1, [[0.3] * 3, [0.3] * 3, [0.4] * 3])
    np.testing.assert_allclose(t.p2, [[0.2, 0.3, 0.2]] * 3)
    # seat 1 is best with m_y whatever seat 2 picks; seat 2 with m_x: the one equilibrium is (m_y, m_x)
    assert t.equilibria == [(2, 1)]
    assert "pure equilibria (p1, p2): (m_y, m_x)" in glee.format_equilibria(t)


# ------------------------------------------------------------------------------------------- CLI

def test_cli_analyze_prints_effects_and_writes_csv(tmp_path: Path, toy: None,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    d = write_run_dir(tmp_path / "runs" / "exact", exact_runs())
    other = write_run_dir(tmp_path / "runs" / "other", [], game="beauty_contest")  # another family: ignored
    out = tmp_path / "out"
    assert main(["analyze", "glee", str(d), str(other), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "toy_split: efficiency (n = 72, R2 = 1.000; effects x100)" in text
    assert "stake=1000" in text and "+10.0  [+10.0, +10.0]  vs 100" in text
    assert "pure equilibria (p1, p2): (m_y, m_x)" in text
    with (out / "glee_effects.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == glee.CSV_COLUMNS == (
        "game", "metric", "term", "level", "reference", "effect_x100", "low_x100", "high_x100", "se_x100",
        "p_value", "n", "r2")
    assert {r["metric"] for r in rows} == {"efficiency", "self_gain_p1", "self_gain_p2"}
    row = next(r for r in rows if r["metric"] == "efficiency" and r["term"] == "p1_model" and r["level"] == "m_x")
    assert float(row["effect_x100"]) == pytest.approx(20.0) and row["reference"] == "m_a" and row["n"] == "72"
    with (out / "glee_pairs.csv").open(encoding="utf-8") as fh:
        pairs = list(csv.DictReader(fh))
    assert tuple(pairs[0]) == glee.PAIR_COLUMNS and len(pairs) == 9
    assert [(p["p1"], p["p2"]) for p in pairs if p["equilibrium"] == "true"] == [("m_y", "m_x")]
    # only some metrics, another reference player
    assert main(["analyze", "glee", str(tmp_path / "runs"), "--out", str(out), "--metrics", "self_gain",
                 "--baseline-model", "m_x"]) == 0
    with (out / "glee_effects.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["metric"] for r in rows} == {"self_gain_p1", "self_gain_p2"}
    row = next(r for r in rows if r["metric"] == "self_gain_p2" and r["term"] == "p2_model" and r["level"] == "m_a")
    assert float(row["effect_x100"]) == pytest.approx(-10.0) and row["reference"] == "m_x"


def test_cli_analyze_bad_input_is_one_line(tmp_path: Path, toy: None, capsys: pytest.CaptureFixture[str]) -> None:
    d = write_run_dir(tmp_path / "exact", exact_runs())
    assert main(["analyze", "glee", str(d), "--metrics", "efficency"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--metrics efficency: not a metric of these runs" in err
    assert main(["analyze", "glee", str(d), "--baseline-model", "nobody"]) == 2
    assert "--baseline-model 'nobody': no seat was played by it" in capsys.readouterr().err
    assert main(["analyze", "negotiationarena", str(d)]) == 2
    assert "analyze negotiationarena: no game family by that name declares regression factors; known: glee" \
        in capsys.readouterr().err
    assert main(["analyze", "glee", str(d / "nothing-here")]) == 2
    assert main(["analyze", "glee", str(tmp_path / "missing")]) == 2
    assert "missing: no such file or directory" in capsys.readouterr().err
    runs = exact_runs()[:2]
    del runs[1]["params"]["talk"]
    bad = write_run_dir(tmp_path / "bad", runs)
    assert main(["analyze", "glee", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'params' has no 'talk' (a declared factor of toy_split)" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------------------------------- report

def test_report_adds_effect_plots_and_pair_heatmap(tmp_path: Path, toy: None) -> None:
    pytest.importorskip("matplotlib")
    from econarena.analysis.report import build_report

    rng = np.random.default_rng(2)
    runs = exact_runs()
    for r in runs:
        r["metrics"]["efficiency"] += float(rng.normal(0, 0.02))
    d = write_run_dir(tmp_path / "exact", runs)
    rep = build_report([d], tmp_path / "report", n_boot=50)
    keys = [f.key for f in rep.figures]
    assert f"effects_{TOY}" in keys and f"pairs_{TOY}" in keys
    for f in rep.figures:
        assert f.png.stat().st_size > 5000 and f.svg.is_file()
    assert {p.name for p in rep.files} >= {"glee_effects.csv", "glee_pairs.csv"}
    page = rep.html.read_text(encoding="utf-8")
    assert "<h4>Linear models (glee)</h4>" in page and "id='card-glee'" in page
    card = page.split("id='card-glee'", 1)[1].split("</section>", 1)[0]
    assert "efficiency" in card and "self-gain" in card and "<caption>Toy split</caption>" in card
    assert "Toy split: model-choice meta-game on self_gain: pure equilibria (p1, p2): (m_y, m_x)" in page
    assert "stake=1000 (vs 100)" in page and "0.400 / 0.300 (n=8) *" in page
    with (tmp_path / "report" / "glee_effects.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    row = next(r for r in rows if r["metric"] == "efficiency" and r["term"] == "stake")
    assert float(row["low_x100"]) < 10.0 < float(row["high_x100"])


def test_report_without_factor_games_has_no_linear_section(tmp_path: Path) -> None:
    """A game that declares no factors (here: not registered at all) adds nothing."""
    d = write_run_dir(tmp_path / "plain", exact_runs()[:3])
    assert glee.report_sections([d], tmp_path / "figs", tmp_path) == []
    assert glee.collect([d]) == {}


def test_pair_identity_variant(tmp_path: Path, toy: None, capsys: pytest.CaptureFixture[str]) -> None:
    """One term per ordered pair, relative to the reference player's self-play: the additive effects add."""
    d = write_run_dir(tmp_path / "exact", exact_runs())
    data = glee.collect([d])[TOY]
    f = glee.fit(data, "efficiency", pairs=True)
    assert not any(e["term"].endswith("_model") for e in f.effects)
    pairs = {e["level"]: e for e in f.effects if e["term"] == "pair"}
    assert len(pairs) == 8 and {e["reference"] for e in pairs.values()} == {"m_a | m_a"}
    assert pairs["m_x | m_y"]["effect_x100"] == pytest.approx(15.0, abs=1e-9)  # +20 and -5
    assert pairs["m_y | m_x"]["effect_x100"] == pytest.approx(0.0, abs=1e-9)
    assert effect(f, "stake", "1000")["effect_x100"] == pytest.approx(10.0, abs=1e-9)
    assert main(["analyze", "glee", str(d), "--pairs", "--metrics", "self_gain_p2", "--out", str(tmp_path)]) == 0
    assert "pair=m_a | m_x" in capsys.readouterr().out


def test_players_by_model_name(tmp_path: Path, toy: None) -> None:
    """--by model: the model a seat ran (the label where the seat had none, e.g. a baseline)."""
    runs = exact_runs()
    for r in runs:
        r["models"] = [f"org/{r['labels'][0]}", None]
    data = glee.collect([write_run_dir(tmp_path / "m", runs)], by="model")[TOY]
    assert {r["p1_model"] for r in data.rows} == {"org/m_a", "org/m_x", "org/m_y"}
    assert {r["p2_model"] for r in data.rows} == set(PLAYERS)
    f = glee.fit(data, "efficiency", model_ref="org/m_a")
    assert effect(f, "p1_model", "org/m_x")["effect_x100"] == pytest.approx(20.0, abs=1e-9)
    assert any("p2_model: reference level 'org/m_a' is absent" in n for n in f.notes)


def test_a_word_where_other_runs_hold_a_number_is_refused_not_dropped(tmp_path: Path) -> None:
    """`"efficiency": "high"` in one run of a bargaining directory left that run out of the efficiency model
    (n = 3 of 4) in silence; now the analysis stops naming the file, both lines and the key."""
    import json

    from conftest import run_experiment

    from econarena.analysis.families.glee import collect
    from econarena.formats.rundir import LogError

    out = tmp_path / "barg"
    run_experiment({"experiment": {"name": "barg", "game": "bargaining", "sessions": 4, "runs": 1, "seed": 1},
                    "game": {}, "players": [{"agent": "rational"}, {"agent": "random"}]}, out)
    lines = (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[1])
    assert isinstance(rec["metrics"]["efficiency"], float)
    rec["metrics"]["efficiency"] = "high"
    lines[1] = json.dumps(rec)
    (out / "runs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(LogError, match=r"runs.jsonl: 'metrics.efficiency' of bargaining is the word 'high' at "
                                       r"line 2 but a number at .*runs.jsonl: line 1"):
        collect([out])


def test_metrics_kept_on_the_same_runs_share_a_design_to_the_bit(tmp_path: Path, toy: None) -> None:
    """``designs`` (one pseudo-inverse per set of kept runs) changes no bit of any number or note: noisy
    metrics, one of them with runs left out (its own design), and a collinear seat column."""
    rng = np.random.default_rng(7)
    runs = exact_runs()
    for k, r in enumerate(runs):
        r["metrics"]["efficiency"] = None if k % 9 == 0 else float(rng.normal(0.5, 0.1))
        r["metrics"]["fairness"] = float(rng.normal(0.6, 0.1))
        r["metrics"]["self_gain"] = [float(x) for x in rng.normal(0.4, 0.1, 2)]
    data = glee.collect([write_run_dir(tmp_path / "noisy", runs)])[TOY]
    designs: dict[Any, Any] = {}
    shared = [glee.fit(data, m, designs=designs) for m in data.metrics]
    alone = [glee.fit(data, m) for m in data.metrics]
    assert len(data.metrics) >= 4 and len(designs) == 2  # efficiency's gaps make the second
    for a, b in zip(shared, alone):
        assert (a.n, a.notes) == (b.n, b.notes)
        assert json.dumps(a.effects) == json.dumps(b.effects)  # every float's repr: the same bits
        assert math.isnan(a.r2) and math.isnan(b.r2) or a.r2 == b.r2
