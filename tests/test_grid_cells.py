"""A [grid] cell is part of every metric row's identity: metrics.csv, the exports and the report's card give
one row per label and cell, its sessions counted within the cell, equal to the summary's and to a hand
computation from runs.jsonl; and the cell's text read back into each factor's level, in natural order."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import read_jsonl, run_experiment

from econarena.analysis import cells

pd = pytest.importorskip("pandas")

DOC = {"experiment": {"name": "bc-cells", "game": "beauty_contest", "sessions": 4, "runs": 1, "seed": 3,
                      "environment": "melee"},
       "game": {"upper_bound": 100, "prize": 100},
       "grid": {"game": {"ratio": [0.9, 0.5]}},
       "players": [{"agent": "level_k", "k": 1}, {"agent": "random", "count": 3}]}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from econarena.analysis.report import build_report

    root = tmp_path_factory.mktemp("cells")
    run_experiment(DOC, root / "run")
    build_report([root / "run"], root / "report", n_boot=50, seed=1, transcripts=0)
    return root / "run", root / "report"


def _metric_rows(report: Path) -> list[dict[str, str]]:
    with open(report / "metrics.csv", encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_metrics_csv_has_a_row_per_label_and_cell_equal_to_a_hand_computation(study: tuple[Path, Path]) -> None:
    run, report = study
    rows = _metric_rows(report)
    assert list(rows[0])[7:11] == ["label", "cell", "ratio", "metric"]
    runs = read_jsonl(run / "runs.jsonl")
    for ratio in ("0.9", "0.5"):
        mine = [r for r in runs if r["lineup"] == f"melee [ratio={ratio}]"]
        assert len(mine) == 4
        # level-1 plays ratio x the midpoint 50 of [0, 100]: its deviation from 0 is that over 100
        dev = [r for r in rows if r["label"] == "level_k" and r["cell"] == f"ratio={ratio}"
               and r["metric"] == "mean_deviation"]
        assert len(dev) == 1 and dev[0]["ratio"] == ratio
        assert float(dev[0]["value"]) == pytest.approx(float(ratio) * 50 / 100)
        assert dev[0]["sessions"] == "4" and dev[0]["n"] == "4"  # the cell's sessions, not both cells' 8
        payoff = [r for r in rows if r["label"] == "random" and r["cell"] == f"ratio={ratio}"
                  and r["metric"] == "mean_payoff"][0]
        by_hand = [p for r in mine for p, label in zip(r["payoffs"], r["labels"]) if label == "random"]
        assert len(by_hand) == 12 and payoff["n"] == "12"
        assert float(payoff["value"]) == pytest.approx(sum(by_hand) / 12)
    # no row pools the cells
    assert not [r for r in rows if r["label"] in ("level_k", "random") and r["cell"] == ""]


def test_metrics_csv_agrees_with_the_summary(study: tuple[Path, Path]) -> None:
    from econarena.analysis.metrics import summarize

    run, report = study
    summary = summarize(run)["labels"]
    rows = _metric_rows(report)
    for name, s in summary.items():
        label, _, cell = name.partition(" [")
        got = {r["metric"]: float(r["value"]) for r in rows
               if r["label"] == label and r["cell"] == cell[:-1] and r["value"] != ""}
        assert got["payoff_ratio"] == pytest.approx(s["payoff_ratio"])
        assert got["mean_deviation"] == pytest.approx(s["mean_deviation"])
        assert got["win_rate"] == pytest.approx(s["win_rate"])


def test_the_exports_and_the_card_carry_the_cell(study: tuple[Path, Path]) -> None:
    run, report = study
    players = pd.read_parquet(report / "players.parquet")
    assert set(players["cell"]) == {"ratio=0.9", "ratio=0.5"}
    assert (players["cell"] == players["lineup"].str.slice(7, -1)).all()
    page = (report / "report.html").read_text(encoding="utf-8")
    card = page[page.index("id='card-econarena'"):]
    card = card[:card.index("</section>")]
    assert "<th>cell</th>" in card and card.count("ratio=0.5") == 2 and card.count("ratio=0.9") == 2


def test_a_study_without_a_grid_has_no_cell_columns(tmp_path: Path) -> None:
    from econarena.analysis.report import build_report

    doc = {**DOC, "grid": None}
    del doc["grid"]
    run_experiment(doc, tmp_path / "run")
    build_report([tmp_path / "run"], tmp_path / "report", n_boot=20, seed=1, transcripts=0)
    rows = _metric_rows(tmp_path / "report")
    assert "ratio" not in rows[0] and {r["cell"] for r in rows} == {""}
    assert "cell" not in pd.read_parquet(tmp_path / "report" / "players.parquet").columns


def test_a_cell_reads_back_into_its_levels() -> None:
    config = {"grid": {"game": {"ratio": [0.5, 1.0], "prize": [10, 20]}, "llm": {"reasoning_effort": [
        "high", "low", "medium"]}}}
    found = cells.factors(config)
    assert [f.key for f in found] == ["ratio", "prize", "reasoning_effort"]
    assert found[0].levels == ("0.5", "1")  # whole floats as the Host names them
    assert cells.levels("ratio=0.5,prize=20,reasoning_effort=low", found) == {
        "ratio": "0.5", "prize": "20", "reasoning_effort": "low"}
    assert cells.levels("cell 3: ratio=1,prize=10,reasoning_effort=high", found)["ratio"] == "1"
    assert found[2].natural() == ["low", "medium", "high"]
    assert found[2].ordered and not found[0].ordered  # two levels: a difference, not a trend
    assert cells.cell_of("melee [ratio=0.5]", True) == "ratio=0.5"
    assert cells.cell_of("melee [ratio=0.5]", False) == ""
    assert cells.cell_of("melee", True) == ""
    # a baseline's label leaves out the [grid.llm] factor; an LLM seat's keeps it
    cell = "ratio=0.5,prize=20,reasoning_effort=low"
    assert cells.shown_cell(cell, found, baseline=True) == "ratio=0.5,prize=20"
    assert cells.shown_cell(cell, found, baseline=False) == cell
    ranks = sorted(["ratio=1,prize=10,reasoning_effort=high", "ratio=0.5,prize=10,reasoning_effort=medium",
                    "ratio=0.5,prize=10,reasoning_effort=low"], key=lambda c: cells.cell_rank(c, found))
    assert ranks[0].endswith("low") and ranks[1].endswith("medium") and ranks[2].startswith("ratio=1")


def test_bid_deviation_measures_the_bid_itself(tmp_path: Path) -> None:
    """Second-price auction: |bid - value| / value per valid seat-run, by hand from runs.jsonl; the rational
    bidder bids its value (0), and a game whose equilibrium action is not the value has no such row."""
    from econarena.analysis.report import build_report

    doc = {"experiment": {"name": "spa", "game": "second_price_auction", "sessions": 3, "runs": 2, "seed": 4,
                          "environment": "melee"},
           "grid": {"game": {"assets": [100, 1000]}},
           "players": [{"agent": "rational"}, {"agent": "random", "count": 2}]}
    run_experiment(doc, tmp_path / "spa")
    run_experiment(DOC, tmp_path / "bc")
    build_report([tmp_path / "spa", tmp_path / "bc"], tmp_path / "report", n_boot=20, seed=1, transcripts=0)
    rows = [r for r in _metric_rows(tmp_path / "report") if r["metric"] == "bid_deviation"]
    assert {r["game"] for r in rows} == {"second_price_auction"}
    runs = read_jsonl(tmp_path / "spa" / "runs.jsonl")
    for assets in ("100", "1000"):
        mine = [r for r in runs if r["lineup"] == f"melee [assets={assets}]"]
        gaps = [abs(a - v) / v for r in mine for a, v, label, ok in
                zip(r["actions"], r["private_values"], r["labels"], r["valid"]) if label == "random" and ok]
        got = [r for r in rows if r["label"] == "random" and r["cell"] == f"assets={assets}"]
        assert len(got) == 1 and got[0]["assets"] == assets
        assert float(got[0]["value"]) == pytest.approx(sum(gaps) / len(gaps)) and int(got[0]["n"]) == len(gaps)
        assert got[0]["sessions"] == "3"
        rational = [r for r in rows if r["label"] == "rational" and r["cell"] == f"assets={assets}"]
        assert float(rational[0]["value"]) == 0.0


def test_compare_by_a_factor_is_paired_and_equals_the_hand_computed_differences(study: tuple[Path, Path]) -> None:
    from econarena.analysis.compare import compare_by, format_compare_by
    from econarena.analysis.load import load

    run, _ = study
    table = compare_by(load(run), cells.factors(DOC), "ratio", ("mean_deviation",), n_boot=200, seed=2)
    # natural order: 0.5 is the reference although the grid declares 0.9 first
    assert set(table["reference"]) == {"0.5"} and set(table["level"]) == {"0.9"}
    assert bool(table["paired"].all())
    level_k = table[table["player"] == "level_k"].iloc[0]
    assert level_k["diff"].value == pytest.approx(0.45 - 0.25)  # level-1 plays 45 and 25 in every session
    runs = read_jsonl(run / "runs.jsonl")

    def mean_random(ratio: str) -> float:
        devs = [d for r in runs if r["lineup"] == f"melee [ratio={ratio}]"
                for d, label in zip(r["deviation"], r["labels"]) if label == "random"]
        return sum(devs) / len(devs)

    rnd = table[table["player"] == "random"].iloc[0]
    assert rnd["diff"].value == pytest.approx(mean_random("0.9") - mean_random("0.5"))
    assert rnd["diff"].low <= rnd["diff"].value <= rnd["diff"].high
    text = format_compare_by(table, "ratio")
    assert "2 comparisons" in text and "paired on the session" in text
    with pytest.raises(ValueError, match="no such \\[grid\\] factor.*ratio"):
        compare_by(load(run), cells.factors(DOC), "temperature")


def test_the_report_compares_every_grid_factor_paired(study: tuple[Path, Path]) -> None:
    _, report = study
    page = (report / "report.html").read_text(encoding="utf-8")
    part = page[page.index("id='comparisons'"):page.index("id='usage'")]
    assert "nothing to compare here" not in part
    assert "ratio, each level (A) against ratio=0.5 (B), paired on the session; 6 comparisons" in part
    assert "0.200 [0.200, 0.200]*" in part  # level-1's deviation, 0.45 - 0.25 in every session
