"""The steering analysis (spec 3.5) against hand-computed numbers, from run directories built here.

Two tone games, A and B, with the CFR numbers at their report iteration 20:
  A: NashConv 0.030625 = 49/1600, CFR gain 0.719375 = 1151/1600 (the spec's regret-matching fixture)
  B: NashConv 0.010, CFR gain 0.05 (B logs every 6 iterations: 18 is the last logged at or below 20)
  NashConv mean (49/1600 + 16/1600) / 2 = 65/3200 = 0.0203125, sd (ddof 1) = 0.020625 / sqrt 2
  CFR gain mean (1151/1600 + 80/1600) / 2 = 1231/3200 = 0.3846875, sd = 0.669375 / sqrt 2
  ratio of means = 1231/65; per-game ratios 1151/49 and 5: mean 698/49, sd (906/49) / sqrt 2
Branch pooling: A has 8 branches, B 4; agreement A 2/8, B 2/4 -> 4/12 (the unweighted mean would be 3/8).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from econarena.analysis.families import steering as S
from econarena.cli import main
from econarena.formats.rundir import LogError

pd = pytest.importorskip("pandas")

TONES = ["calm", "assertive", "submissive", "any"]
OFFERS = ["1 apple for 1 banana", "2 apples for 1 orange", "any offer"]
SQ2 = math.sqrt(2)


def it(iteration: int, nc: float, gain: float, strategy: list[float]) -> dict[str, Any]:
    return {"iteration": iteration, "nash_conv": nc, "cfr_gain": gain,
            "ratio": gain / nc if nc > 0 else None, "strategy": strategy}


def game(session: int, space: str, actions: list[str], iterations: list[dict[str, Any]], n: int,
         shares: dict[str, float], report_iteration: int = 20, total: int = 100) -> dict[str, Any]:
    samples = n // len(actions) or 1
    return {"lineup": "self", "session": session, "seat": 1, "space": space, "actions": actions,
            "instructions": [f"Use {a}." for a in actions[:-1]] + [""], "baseline": len(actions) - 1,
            "samples": samples, "payoff": "structured",
            "values": [[[0.0, 0.0]] * samples for _ in actions],
            "runs": [[i * samples + k for k in range(samples)] for i in range(len(actions))],
            "iterations": iterations, "report_iteration": report_iteration, "total_iterations": total,
            "branches": {"n": n, **shares}}


UNIFORM4 = [0.25] * 4
GAME_A = game(0, "tones", TONES, [
    it(5, 0.2, 0.1, UNIFORM4), it(10, 0.09, 0.4, UNIFORM4), it(15, 0.05, 0.6, UNIFORM4),
    it(20, 0.030625, 0.719375, [0.0175, 0.9575, 0.0125, 0.0125]),
    it(100, 0.006125, 0.743875, [0.01, 0.97, 0.01, 0.01])],
    n=8, shares={"agreement": 2 / 8, "nonzero": 6 / 8, "neg1": 4 / 8, "neg2": 1 / 8, "pos1": 5 / 8,
                 "pos2": 2 / 8, "rule_breaks": 0.0})
GAME_B = game(1, "tones", TONES, [
    it(6, 0.3, 0.02, UNIFORM4), it(12, 0.2, 0.03, UNIFORM4), it(18, 0.010, 0.05, UNIFORM4),
    it(24, 0.008, 0.06, [0.1, 0.6, 0.2, 0.1])],
    n=4, shares={"agreement": 2 / 4, "nonzero": 1 / 4, "neg1": 0.0, "neg2": 0.0, "pos1": 1 / 4,
                 "pos2": 1 / 4, "rule_breaks": 1 / 4}, total=24)
# offers: C has NashConv 0 at the report iteration (left out of the per-game ratios), D has gain < NashConv
GAME_C = game(0, "offers", OFFERS, [it(5, 0.1, 0.1, [0.2, 0.4, 0.4]), it(20, 0.0, 0.2, [0.0, 1.0, 0.0])],
              n=3, shares={"agreement": 0.0, "nonzero": 1 / 3, "neg1": 1 / 3, "neg2": 0.0, "pos1": 1 / 3,
                           "pos2": 0.0, "rule_breaks": 0.0}, total=20)
GAME_D = game(1, "offers", OFFERS, [it(5, 0.3, 0.0, [0.4, 0.2, 0.4]), it(20, 0.04, 0.02, [0.5, 0.5, 0.0])],
              n=6, shares={"agreement": 1 / 6, "nonzero": 3 / 6, "neg1": 2 / 6, "neg2": 1 / 6, "pos1": 2 / 6,
                           "pos2": 1 / 6, "rule_breaks": 0.0}, total=20)


def run_record(session: int, run: int, space: str, action: str, index: int) -> dict[str, Any]:
    return {"lineup": "self", "session": session, "run": run, "labels": ["m", "m"], "agents": ["scripted"] * 2,
            "models": [None, None], "params": {}, "complete": True, "payoffs": [1.0, -1.0], "ne_payoffs": None,
            "valid": [True, True], "deviation": [None, None], "winners": [0], "metrics": {"agreement": False},
            "steer": {"action": action, "action_index": index, "sample": 0, "seat": 1, "space": space}}


def write_dir(path: Path, games: list[dict[str, Any]], name: str | None = None, extra: str = "") -> Path:
    """A steering run directory as the orchestrator leaves it: config, manifest, branches and games."""
    path.mkdir(parents=True)
    (path / "config.toml").write_text(f'[experiment]\nname = "{name or path.name}"\ngame = "toy_trade"\n',
                                      encoding="utf-8")
    (path / "manifest.json").write_text(json.dumps({"status": "done", "experiment": name or path.name}),
                                        encoding="utf-8")
    runs = [run_record(g["session"], i, g["space"], a, i) for g in games for i, a in enumerate(g["actions"])]
    (path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    (path / "decisions.jsonl").write_text("", encoding="utf-8")
    (path / "steering.jsonl").write_text("".join(json.dumps(g) + "\n" for g in games) + extra, encoding="utf-8")
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> list[Path]:
    return [write_dir(tmp_path / "steer-tones", [GAME_A, GAME_B], "steer"),
            write_dir(tmp_path / "steer-offers", [GAME_C, GAME_D], "steer")]


def row(table: Any, space: str) -> Any:
    return table[table["space"] == space].iloc[0]


# ---------------------------------------------------------------------------------------------- table

def test_table_means_sds_and_both_ratio_readings(dirs: list[Path]) -> None:
    t = S.steering_table(dirs)
    assert list(t["space"]) == ["offers", "tones"] and set(t["experiment"]) == {"steer"}
    r = row(t, "tones")
    assert r["games"] == 2 and r["actions"] == 4 and r["payoff"] == "structured"
    assert r["nash_conv_mean"] == pytest.approx(0.0203125, abs=1e-15)
    assert r["nash_conv_sd"] == pytest.approx(0.020625 / SQ2, abs=1e-15)  # sample sd, ddof = 1
    assert r["cfr_gain_mean"] == pytest.approx(0.3846875, abs=1e-15)
    assert r["cfr_gain_sd"] == pytest.approx(0.669375 / SQ2, abs=1e-15)
    assert r["ratio_of_means"] == pytest.approx(1231 / 65, rel=1e-12)  # 18.94, the paper's reading
    assert r["ratio_mean"] == pytest.approx(698 / 49, rel=1e-12)  # 14.24: not the same number
    assert r["ratio_sd"] == pytest.approx(906 / 49 / SQ2, rel=1e-12)
    assert (r["ratio_games"], r["ratio_left_out"]) == (2, 0)
    assert r["gain_above_nash_conv"] == 1.0
    assert r["iteration"] == "18 in 1 game, 20 in 1 game (asked 20: the last logged at or below)"


def test_table_leaves_nash_conv_zero_out_of_per_game_ratios(dirs: list[Path]) -> None:
    r = row(S.steering_table(dirs), "offers")
    assert r["iteration"] == "20"
    assert r["nash_conv_mean"] == pytest.approx(0.02) and r["nash_conv_sd"] == pytest.approx(0.04 / SQ2)
    assert r["cfr_gain_mean"] == pytest.approx(0.11) and r["cfr_gain_sd"] == pytest.approx(0.18 / SQ2)
    assert r["ratio_of_means"] == pytest.approx(5.5)  # 0.11 / 0.02: game C still counts here
    assert r["ratio_mean"] == pytest.approx(0.5)  # only D: 0.02 / 0.04
    assert math.isnan(r["ratio_sd"])  # one game: no sd
    assert (r["ratio_games"], r["ratio_left_out"]) == (1, 1)
    assert r["gain_above_nash_conv"] == 0.5  # C: 0.2 > 0; D: 0.02 < 0.04


def test_shares_are_pooled_over_branches(dirs: list[Path]) -> None:
    r = row(S.steering_table(dirs), "tones")
    assert r["branches"] == 12
    expected = {"agreement": 4 / 12, "nonzero": 7 / 12, "neg1": 4 / 12, "neg2": 1 / 12, "pos1": 6 / 12,
                "pos2": 3 / 12, "rule_breaks": 1 / 12}
    for key, value in expected.items():
        assert r[key] == pytest.approx(value, abs=1e-15), key
    assert r["agreement"] != pytest.approx((2 / 8 + 2 / 4) / 2)  # not the mean over games (0.375)
    o = row(S.steering_table(dirs), "offers")  # 3 and 6 branches
    assert o["branches"] == 9 and o["agreement"] == pytest.approx(1 / 9) and o["neg2"] == pytest.approx(1 / 9)
    assert o["nonzero"] == pytest.approx(4 / 9) and o["neg1"] == pytest.approx(3 / 9)


def test_iteration_given_picks_equal_or_last_below(dirs: list[Path]) -> None:
    r = row(S.steering_table(dirs, at=10), "tones")  # A logged 10 (0.09, 0.4); B the last below: 6 (0.3, 0.02)
    assert r["iteration"] == "6 in 1 game, 10 in 1 game (asked 10: the last logged at or below)"
    assert r["nash_conv_mean"] == pytest.approx(0.195) and r["cfr_gain_mean"] == pytest.approx(0.21)
    assert r["gain_above_nash_conv"] == 0.5
    r = row(S.steering_table(dirs, at=100), "tones")  # A: 100; B: its last, 24
    assert r["nash_conv_mean"] == pytest.approx((0.006125 + 0.008) / 2)
    assert r["cfr_gain_mean"] == pytest.approx((0.743875 + 0.06) / 2)
    with pytest.raises(S.SteeringError, match=r"session 1 logged no iteration <= 5 \(first logged: 6\)"):
        S.steering_table(dirs, at=5)


def test_directories_with_one_experiment_name_pool_and_others_stay_apart(tmp_path: Path) -> None:
    a = write_dir(tmp_path / "a", [GAME_A], "same")
    b = write_dir(tmp_path / "b", [GAME_B], "same")
    c = write_dir(tmp_path / "c", [GAME_B], "other")
    t = S.steering_table([a, b, c])
    assert list(zip(t["experiment"], t["games"])) == [("other", 1), ("same", 2)]
    assert row(t[t["experiment"] == "same"], "tones")["nash_conv_mean"] == pytest.approx(0.0203125)
    # a folder of run directories is searched one level down, as `econarena report` does
    assert len(S.collect([tmp_path])) == 3
    assert len(S.steering_table(str(a))) == 1  # one directory as a plain string, not its characters


def test_format_table_prints_the_paper_layout(dirs: list[Path]) -> None:
    text = S.format_table(S.steering_table(dirs))
    lines = {ln.split("  ")[0]: ln for ln in text.splitlines()}
    assert lines["metric"].split() == ["metric", "steer", "/", "self", "/", "offers", "steer", "/", "self", "/",
                                       "tones"]
    assert "0.0200 ± 0.0283" in lines["NashConv (mean ± sd)"]
    assert "0.0203 ± 0.0146" in lines["NashConv (mean ± sd)"]
    assert "0.3847 ± 0.4733" in lines["CFR gain (mean ± sd)"]
    assert re.search(r"5\.50\s+18\.94$", lines["gain/NashConv (of means)"])
    assert "0.50 (1 game with NashConv 0 left out)" in lines["gain/NashConv (per game, mean ± sd)"]
    assert "14.24 ± 13.07" in lines["gain/NashConv (per game, mean ± sd)"]
    assert re.search(r"11\.11 %\s+33\.33 %$", lines["agreement after 2 messages"])
    assert "ddof = 1" in text
    assert S.format_table(S.steering_table([])) .startswith("no steering games")


# ---------------------------------------------------------------------------------------------- curves

def test_curves_and_strategies(dirs: list[Path]) -> None:
    games = S.collect(dirs)
    c = S.curves(games)
    off = c[c["space"] == "offers"].set_index("iteration")
    assert list(off.index) == [5, 20] and list(off["games"]) == [2, 2]
    assert off.loc[5, "nash_conv_mean"] == pytest.approx(0.2) and off.loc[5, "nash_conv_sd"] == pytest.approx(
        0.2 / SQ2)
    assert off.loc[5, "cfr_gain_mean"] == pytest.approx(0.05) and off.loc[5, "cfr_gain_sd"] == pytest.approx(
        0.1 / SQ2)
    tones = c[c["space"] == "tones"]
    assert list(tones["iteration"]) == [5, 6, 10, 12, 15, 18, 20, 24, 100] and set(tones["games"]) == {1}

    final = S.final_strategies(games)
    a = final[(final["space"] == "tones") & (final["session"] == 0)]
    assert set(a["iteration"]) == {100} and list(a["probability"]) == [0.01, 0.97, 0.01, 0.01]
    m = S.mean_strategies(games)
    t = m[m["space"] == "tones"].set_index("action")
    assert list(t.index) == TONES and list(t["baseline"]) == [False, False, False, True]
    assert set(t["final_iteration"]) == {"24, 100"}  # B's last logged is 24, A's 100
    assert t.loc["calm", "mean"] == pytest.approx(0.055) and t.loc["calm", "sd"] == pytest.approx(0.09 / SQ2)
    assert t.loc["assertive", "mean"] == pytest.approx(0.785) and t.loc["any", "mean"] == pytest.approx(0.055)
    o = m[m["space"] == "offers"].set_index("action")
    assert list(o["mean"]) == pytest.approx([0.25, 0.75, 0.0]) and set(o["games"]) == {2}


# ---------------------------------------------------------------------------------------------- reading

def test_no_steering_file_no_rows(tmp_path: Path) -> None:
    d = write_dir(tmp_path / "plain", [GAME_A])
    (d / "steering.jsonl").unlink()
    assert S.read_steering(d) == [] and S.collect([d]) == [] and S.steering_table([d]).empty


def test_not_json_line_is_a_log_error_naming_file_and_line(tmp_path: Path) -> None:
    d = write_dir(tmp_path / "bad", [GAME_A], extra="{not json\n")
    with pytest.raises(LogError, match=r"bad/steering\.jsonl: line 2: not a steering record: not JSON"):
        S.read_steering(d)


@pytest.mark.parametrize("change, why", [
    (lambda g: g["iterations"][1].update(strategy=[0.5, 0.5]), r"iterations\[1\]: 'strategy' must hold one number "
                                                               r"per action \(4\)"),
    (lambda g: g["iterations"][0].update(nash_conv="0.1"), r"iterations\[0\]: 'nash_conv' must be a finite number"),
    (lambda g: g["branches"].update(agreement=1.5), r"branches\.agreement must be a share in \[0, 1\]"),
    (lambda g: g.update(baseline=4), r"'baseline' 4 is no index of the 4 actions"),
    (lambda g: g.pop("report_iteration"), r"'report_iteration' must be an integer >= 0"),
])
def test_wrong_shape_line_is_a_log_error(tmp_path: Path, change: Any, why: str) -> None:
    bad = json.loads(json.dumps(GAME_B))
    change(bad)
    d = write_dir(tmp_path / "bad", [GAME_A, bad])
    with pytest.raises(LogError, match=r"steering\.jsonl: line 2: not a steering record: " + why):
        S.read_steering(d)


def test_torn_last_line_and_duplicate_game_count_nothing(tmp_path: Path) -> None:
    d = write_dir(tmp_path / "torn", [GAME_A, GAME_A, GAME_B], extra='{"lineup": "self", "sess')
    games = S.read_steering(d)
    assert [g.session for g in games] == [0, 1]
    assert row(S.steering_table([d]), "tones")["games"] == 2


def test_cli_report_on_a_bad_steering_line_exits_2_with_one_line(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("matplotlib")
    d = write_dir(tmp_path / "bad", [GAME_A], extra="[1, 2]\n")
    assert main(["report", str(d), "--out", str(tmp_path / "rep"), "--boot", "20"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "steering.jsonl: line 2: not a steering record: expected a JSON object" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------------------------------------- report

@pytest.fixture
def built(dirs: list[Path], tmp_path: Path) -> Any:
    pytest.importorskip("matplotlib")
    from econarena.analysis.report import build_report

    return build_report(dirs, tmp_path / "report", n_boot=20, transcripts=0)


def test_report_has_the_steering_section(built: Any) -> None:
    page = built.html.read_text(encoding="utf-8")
    assert "<a href='#card-steering'>Steering</a>" in page and "id='card-steering'" in page
    card = page.split("id='card-steering'", 1)[1].split("</section>", 1)[0]
    for cell in ("<b>0.0203</b><small>± 0.0146</small>", "<b>0.3847</b><small>± 0.4733</small>", "18.94"):
        assert cell in card, cell
    section = page[page.index("<h3 id='detail-steering'>"):]
    for cell in ("0.0203 ± 0.0146", "0.3847 ± 0.4733", "18.94", "14.24 ± 13.07", "33.33 %", "11.11 %",
                 "18 in 1 game, 20 in 1 game", "Strategy per information state"):
        assert cell in section, cell
    section = page  # the figures come before the detail
    keys = [f.key for f in built.figures]
    assert "steer_curves" in keys and "steer_strategies" in keys
    for f in built.figures:
        if f.key.startswith("steer_"):
            assert f.png.stat().st_size > 5000 and f.svg.is_file()
            assert f"data-figure='{f.key}'" in section
    names = {p.name for p in built.files}
    assert {"steering.csv", "steering_strategies.csv"} <= names
    csv = pd.read_csv(built.out / "steering.csv")
    tones = csv[csv["space"] == "tones"].iloc[0]
    assert tones["ratio_of_means"] == pytest.approx(1231 / 65) and tones["agreement"] == pytest.approx(1 / 3)
    strat = pd.read_csv(built.out / "steering_strategies.csv")
    assert len(strat) == 4 + 3


def test_report_without_steering_has_no_section(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from econarena.analysis.report import build_report

    d = write_dir(tmp_path / "plain", [GAME_A])
    (d / "steering.jsonl").unlink()
    rep = build_report([d], tmp_path / "report", n_boot=20, transcripts=0)
    page = rep.html.read_text(encoding="utf-8")
    assert "id='card-steering'" not in page and not (tmp_path / "report" / "steering.csv").exists()


def test_steering_report_renders_in_chromium(built: Any, tmp_path: Path) -> None:
    binary = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
                  None)
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed, and CI must render the report (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom",
             built.html.as_uri()]
    dom = subprocess.run([binary, *flags], capture_output=True, text=True, timeout=90)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body, dom.stdout[:500]
    n = len(built.figures)
    assert n >= 2 and f'data-images-total="{n}"' in body.group(0) and f'data-images-loaded="{n}"' in body.group(0)
    assert 'data-figure="steer_curves"' in dom.stdout and 'data-figure="steer_strategies"' in dom.stdout


def test_strategy_per_information_state(dirs: list[Path]) -> None:
    """Each game is one information state of the steered player; its row holds the CFR average strategy at
    the report iteration (the largest probability in bold), NashConv and CFR gain there."""
    tables = {title.split(":")[0]: (head, rows) for title, head, rows in S.strategy_tables(S.collect(dirs))}
    head, rows = tables["steer / self / tones"]
    assert head == ["state", "what the steered player saw", *TONES, "NashConv", "CFR gain"]
    assert rows[0] == ["game 0", "", "0.02", "<b>0.96</b>", "0.01", "0.01", "0.0306", "0.7194"]
    assert rows[1][:2] == ["game 1", ""] and rows[1][-2:] == ["0.0100", "0.0500"]  # iteration 18: the last <= 20
    head, rows = tables["steer / self / offers"]
    assert rows[1][2:5] == ["<b>0.50</b>", "<b>0.50</b>", "0.00"]
