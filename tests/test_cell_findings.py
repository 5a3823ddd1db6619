"""The summary and the findings follow the design: ``bid_deviation`` (|bid - value| / value, where bidding
one's value is dominant) in ``summary`` by hand from runs.jsonl, players ranked within a [grid] cell and a
player's cells set side by side in natural order, never a baseline with its own copies; and the figures
give each cell a legend entry that names it (read from the matplotlib objects)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import cli, read_jsonl, run_experiment

from econarena.analysis import cells, findings

pd = pytest.importorskip("pandas")

SPA = {"experiment": {"name": "spa-cells", "game": "second_price_auction", "sessions": 3, "runs": 2, "seed": 4,
                      "environment": "melee"},
       "grid": {"game": {"assets": [1000, 100]}},
       "players": [{"agent": "rational"}, {"agent": "random", "count": 2}]}


@pytest.fixture(scope="module")
def spa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spa") / "run"
    run_experiment(SPA, out)
    return out


def _gaps(run: Path, lineup: str, label: str) -> list[float]:
    return [abs(a - v) / v for r in read_jsonl(run / "runs.jsonl") if r["lineup"] == lineup
            for a, v, lab, ok in zip(r["actions"], r["private_values"], r["labels"], r["valid"]) if lab == label and ok]


def test_summary_has_the_bid_deviation_per_label_and_cell(spa: Path) -> None:
    from econarena.analysis.metrics import summarize, summary_csv

    labels = summarize(spa)["labels"]
    for assets in ("100", "1000"):
        gaps = _gaps(spa, f"melee [assets={assets}]", "random")
        assert len(gaps) == 12  # 3 sessions x 2 runs x 2 seats, the cell's only
        assert labels[f"random [assets={assets}]"]["bid_deviation"] == pytest.approx(sum(gaps) / 12)
        assert labels[f"rational [assets={assets}]"]["bid_deviation"] == 0.0  # it bids its value
    head = summary_csv(summarize(spa)).splitlines()[0].split(",")
    assert head[head.index("score_std") + 1] == "bid_deviation"
    r = cli("summary", str(spa))
    assert r.returncode == 0, r.stderr
    table = r.stdout[r.stdout.index("label "):]
    assert "bid deviation" in table.splitlines()[0]
    row = next(line for line in table.splitlines() if line.startswith("random [assets=100]"))
    assert f"{sum(_gaps(spa, 'melee [assets=100]', 'random')) / 12:.3f}" in row


def test_a_game_without_a_dominant_bid_has_no_bid_deviation(tmp_path: Path) -> None:
    from econarena.analysis.metrics import summarize, summary_csv

    doc = {"experiment": {"name": "bc", "game": "beauty_contest", "sessions": 1, "runs": 1, "seed": 1},
           "players": [{"agent": "random", "count": 3}]}
    run_experiment(doc, tmp_path / "bc")
    summary = summarize(tmp_path / "bc")
    assert all("bid_deviation" not in v for v in summary["labels"].values())
    assert "bid_deviation" not in summary_csv(summary)


def test_summary_findings_rank_within_a_cell_and_read_the_bid(spa: Path) -> None:
    from econarena.analysis.metrics import summarize

    found = cells.factors(SPA)
    text = findings.summary_findings(summarize(spa), "melee", lambda c: cells.cell_rank(c, found))
    joined = " ".join(text)
    # one ranking per cell, 100 before 1000 (natural order), by the bid's own deviation
    first = next(i for i, x in enumerate(text) if x.startswith("[assets=100] "))
    second = next(i for i, x in enumerate(text) if x.startswith("[assets=1000] "))
    assert first < second
    assert "Closest to the equilibrium: rational (deviation of the bid from the value 0.000)" in text[first]
    assert "random [assets" not in joined  # no sentence names a player of another cell
    # a player's cells side by side, by hand
    mean = {a: sum(_gaps(spa, f"melee [assets={a}]", "random")) / 12 for a in ("100", "1000")}
    across = next(x for x in text if x.startswith("random across its cells"))
    assert across == (f"random across its cells, deviation of the bid from the value: assets=100: {mean['100']:.3f}; "
                      f"assets=1000: {mean['1000']:.3f}.")


def _row(label: str, cell: str, metric: str, value: float, low: float, high: float, baseline: bool,
         run_dir: str = "d") -> dict[str, Any]:
    return {"run_dir": run_dir, "experiment": "spa-effort", "game": "second_price_auction", "environment": "melee",
            "history": "none", "prompt": "default", "group": "", "label": label, "cell": cell, "metric": metric,
            "value": value, "ci_low": low, "ci_high": high, "n": 6, "sessions": 3, "baseline": baseline}


def test_report_findings_compare_within_a_cell_and_settings_within_a_player() -> None:
    rows = []
    for effort, dev in (("low", 0.30), ("medium", 0.20), ("high", 0.05)):
        cell = f"reasoning_effort={effort}"
        rows.append(_row("Reasoner", cell, "bid_deviation", dev, dev - 0.01, dev + 0.01, False))
        rows.append(_row("rational", cell, "bid_deviation", 0.0, 0.0, 0.0, True))
        rows.append(_row("Reasoner", cell, "mean_deviation", 0.0, 0.0, 0.0, False))
        rows.append(_row("rational", cell, "mean_deviation", 0.0, 0.0, 0.0, True))
    out = findings.report_findings(rows, max_settings=3)
    titles = [t for t, _ in out]
    assert titles[:3] == [f"spa-effort [reasoning_effort={e}] (melee)" for e in ("low", "medium", "high")]
    low = dict(out)["spa-effort [reasoning_effort=low] (melee)"]
    # within the cell, by the bid (the asset deviation, 0 for both, would call them level)
    assert low[0].startswith("Closest to the equilibrium: rational (deviation of the bid from the value 0.000")
    assert "furthest: Reasoner (0.300 [0.290, 0.310])" in low[0]
    assert "are level" not in " ".join(s for _, ss in out for s in ss)
    across = dict(out)["Across the cells of a grid"]
    assert across == ["Reasoner across its cells, deviation of the bid from the value: reasoning_effort=low: "
                      "0.300 [0.290, 0.310]; reasoning_effort=medium: 0.200 [0.190, 0.210]; reasoning_effort=high: "
                      "0.050 [0.040, 0.060]. reasoning_effort=low and reasoning_effort=high are clear of the noise "
                      "(the 95% intervals do not overlap)."]  # the baseline's copies are never compared


def test_figures_give_each_cell_its_legend_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from econarena.analysis import figures
    from econarena.analysis.load import load

    drawn: dict[str, Any] = {}

    def keep(fig: Any, out: Path, key: str, sources: Any) -> tuple[Path, Path]:
        drawn[key] = fig
        return out / f"{key}.png", out / f"{key}.svg"

    monkeypatch.setattr(figures, "_save", keep)
    doc = {"experiment": {"name": "bc", "game": "beauty_contest", "sessions": 2, "runs": 2, "seed": 3,
                          "environment": "melee"},
           "grid": {"game": {"ratio": [0.9, 0.5]}},
           "players": [{"agent": "level_k", "k": 1}, {"agent": "random", "count": 2}]}
    run_experiment(doc, tmp_path / "bc")
    frames = load(tmp_path / "bc")
    figures.figure_action_paths(frames, tmp_path, n_boot=20, seed=1)
    legend = [t.get_text() for t in drawn["fig4_action_paths"].legends[0].get_texts()]
    assert legend[:4] == ["level_k [ratio=0.5]", "level_k [ratio=0.9]", "random [ratio=0.5]", "random [ratio=0.9]"]
    figures.figure_melee_payoff(frames, tmp_path, n_boot=20, seed=1)
    ticks = [t.get_text().replace("\n", " ") for t in drawn["fig1_melee_payoff"].axes[0].get_xticklabels()]
    assert sorted(ticks) == legend[:4]


def test_a_baseline_label_never_carries_an_llm_factor() -> None:
    """Figures: a baseline's rows drop the [grid.llm] factor and only its first cell's copy is drawn."""
    from econarena.analysis.figures import _players
    from econarena.analysis.frames import Frames

    found = cells.factors({"grid": {"game": {"ratio": [0.5, 0.9]}, "llm": {"reasoning_effort": ["high", "low"]}}})
    rows = [{"run_dir": "d", "label": lab, "agent": agent, "role": "player", "cell": f"ratio={r},reasoning_effort={e}",
             "payoff": 1.0} for lab, agent in (("Reasoner", "openai"), ("rational", "rational"))
            for r in ("0.5", "0.9") for e in ("high", "low")]
    empty = pd.DataFrame()
    shown = _players(Frames(pd.DataFrame(rows), empty, empty, empty, ["d"], {"d": found}))
    assert sorted(shown["label"]) == sorted(
        [f"Reasoner [ratio={r},reasoning_effort={e}]" for r in ("0.5", "0.9") for e in ("high", "low")]
        + ["rational [ratio=0.5]", "rational [ratio=0.9]"])
    kept = shown[shown["agent"] == "rational"]
    assert set(kept["cell"]) == {"ratio=0.5,reasoning_effort=low", "ratio=0.9,reasoning_effort=low"}  # low < high


def test_the_reasoning_figure_names_the_game_beside_the_player(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from econarena.analysis import figures, reasoning

    drawn: dict[str, Any] = {}

    def keep(fig: Any, out: Path, key: str, sources: Any) -> tuple[Path, Path]:
        drawn[key] = fig
        return out / f"{key}.png", out / f"{key}.svg"

    monkeypatch.setattr(figures, "_save", keep)
    rows = []
    for exp, game, bid in (("bc-effort", "beauty_contest", float("nan")), ("spa-effort", "second_price_auction", 0.3)):
        for effort, tokens in (("low", 10.0), ("high", 90.0)):
            rows.append({c: float("nan") for c in reasoning.COLUMNS} | {
                "experiment": exp, "game": game, "label": "Reasoner", "model": "m", "effort": effort,
                "budget": float("nan"), "reasoning tokens / decision": tokens, "deviation from NE": 0.1,
                "bid deviation": bid, "payoff ratio": 1.0, "rule breaks %": 0.0, "tokens out / decision": 5.0})
    reasoning.reasoning_figure(pd.DataFrame(rows, columns=list(reasoning.COLUMNS)), tmp_path, [])
    fig = drawn[reasoning.KEY]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["Reasoner (Beauty contest)", "Reasoner (Second-price auction)"]
    assert any(ax.get_title().startswith("|bid - value| / value") for ax in fig.axes)
