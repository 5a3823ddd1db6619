"""The family tables keep a [grid] cell apart: GLEE's card, GAMA-Bench's scores and NegotiationArena's pair
matrices have one row (or table) per label and cell, its games counted within the cell, each number equal
to a hand computation from runs.jsonl; and their figures show a facet or a legend entry per cell."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import read_jsonl, run_experiment

pytest.importorskip("pandas")

GLEE = {"experiment": {"name": "glee-cells", "game": "bargaining", "sessions": 3, "runs": 1, "seed": 7,
                       "environment": "melee"},
        "game": {"max_rounds": 4},
        "grid": {"game": {"money": [10000, 100]}},
        "players": [{"agent": "rational", "label": "R"}, {"agent": "random", "label": "X"}]}
GAMA = {"experiment": {"name": "gama-cells", "game": "guessing_game", "sessions": 2, "runs": 2, "seed": 5,
                       "environment": "melee"},
        "game": {"rounds": 3},
        "grid": {"game": {"ratio": [0.9, 0.5]}},
        "players": [{"agent": "rational"}, {"agent": "random", "count": 3}]}
NA = {"experiment": {"name": "na-cells", "game": "ultimatum", "sessions": 3, "runs": 1, "seed": 1,
                     "environment": "melee"},
      "game": {"turns": 4},
      "grid": {"game": {"total": [1000, 100]}},
      "players": [{"agent": "random"}, {"agent": "rational"}]}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three grids played once, and one report over all of them (figures drawn)."""
    from econarena.analysis.report import build_report

    root = tmp_path_factory.mktemp("families")
    out = {}
    for name, doc in (("glee", GLEE), ("gama", GAMA), ("na", NA)):
        run_experiment(doc, root / name)
        out[name] = root / name
    build_report([out["glee"], out["gama"], out["na"]], root / "report", n_boot=100, seed=1, transcripts=0)
    out["report"] = root / "report"
    return out


def _runs(d: Path, lineup: str) -> list[dict[str, Any]]:
    return [r for r in read_jsonl(d / "runs.jsonl") if r["lineup"] == lineup and r.get("complete", True)]


def _card(report: Path, family: str) -> str:
    page = (report / "report.html").read_text(encoding="utf-8")
    card = page[page.index(f"id='card-{family}'"):]
    return card[:card.index("</section>")]


def test_glee_card_has_a_row_per_player_and_cell_equal_to_a_hand_computation(study: dict[str, Path]) -> None:
    from econarena.analysis import cells
    from econarena.analysis.families import glee

    data = glee.collect([study["glee"]])["bargaining"]
    rows = glee.card_rows(data, n_boot=100, seed=1, found=cells.factors(GLEE))
    # cells in natural order (100 before 10000, although the grid declares 10000 first), both players in each
    assert [(r["cell"], r["player"]) for r in rows if r["player"] == "R"] == [("money=100", "R"),
                                                                               ("money=10000", "R")]
    assert len(rows) == 4
    for money in ("100", "10000"):
        mine = [r for r in _runs(study["glee"], f"melee [money={money}]") if all(r["valid"])]
        assert mine, "each cell has games without a rule break"
        for player in ("R", "X"):
            gains = [r["metrics"]["self_gain"][i] for r in mine for i, lab in enumerate(r["labels"]) if lab == player]
            eff = [min(1.0, max(0.0, r["metrics"]["efficiency"])) for r in mine for lab in r["labels"]
                   if lab == player]
            got = next(r for r in rows if r["player"] == player and r["cell"] == f"money={money}")
            assert got["seats"] == len(gains) == len(mine)  # the cell's games, not both cells'
            assert got["self_gain"].value == pytest.approx(sum(gains) / len(gains))
            assert got["efficiency"].value == pytest.approx(sum(eff) / len(eff))
    card = _card(study["report"], "glee")
    assert "<th>cell</th>" in card and card.count("money=100<") == 2 and card.count("money=10000<") == 2


def test_a_glee_study_without_a_grid_keeps_one_row_per_player(tmp_path: Path) -> None:
    from econarena.analysis.families import glee

    doc = {k: v for k, v in GLEE.items() if k != "grid"}
    run_experiment(doc, tmp_path / "plain")
    rows = glee.card_rows(glee.collect([tmp_path / "plain"])["bargaining"], n_boot=50, seed=1)
    assert sorted((r["player"], r["cell"]) for r in rows) == [("R", ""), ("X", "")]
    runs = [r for r in read_jsonl(tmp_path / "plain" / "runs.jsonl") if all(r["valid"])]
    assert {r["seats"] for r in rows} == {len(runs)}


def test_gamabench_scores_have_a_row_per_label_and_cell(study: dict[str, Path]) -> None:
    from econarena.analysis.families import gamabench

    rows = gamabench.score_table(gamabench.collect([study["gama"]]).scores)
    assert {(r["label"], r["cell"]) for r in rows} == {(lab, f"ratio={x}") for lab in ("rational", "random")
                                                       for x in ("0.5", "0.9")}
    for ratio in ("0.5", "0.9"):
        mine = _runs(study["gama"], f"melee [ratio={ratio}]")
        assert len(mine) == 4  # 2 sessions x 2 runs: the cell's, not both cells' 8
        scores = [float(r["score"]) for r in mine]
        for label in ("rational", "random"):  # every seat sits at one table: each run once per label
            got = next(r for r in rows if r["label"] == label and r["cell"] == f"ratio={ratio}")
            assert got["runs"] == 4 and got["model"] == f"{label} [ratio={ratio}]"
            assert got["score"] == pytest.approx(statistics.fmean(scores))
            assert got["std"] == pytest.approx(statistics.stdev(scores))
    assert not [r for r in rows if not r["cell"]]  # nothing pools the cells
    with open(study["report"] / "gamabench_scores.csv", encoding="utf-8", newline="") as fh:
        written = list(csv.DictReader(fh))
    assert list(written[0])[:3] == ["model", "cell", "game"]
    assert {(r["model"], r["cell"], r["runs"]) for r in written} == {
        (lab, f"ratio={x}", "4") for lab in ("rational", "random") for x in ("0.5", "0.9")}
    card = _card(study["report"], "gamabench")
    assert "<th>cell</th>" in card and card.count("ratio=0.5<") == 2


def test_negotiationarena_pairs_are_kept_per_cell(study: dict[str, Path]) -> None:
    from econarena.analysis.families import negotiationarena as na

    rows = na.collect([study["na"]])
    table = na.pair_table(rows)
    assert [(r["cell"], r["p1_model"], r["p2_model"]) for r in table] == [
        ("total=100", "random", "rational"), ("total=1000", "random", "rational")]
    for total in ("100", "1000"):
        mine = _runs(study["na"], f"melee [total={total}]")
        got = next(r for r in table if r["cell"] == f"total={total}")
        assert got["games"] == len(mine) == 3
        assert got["p1_payoff"] == pytest.approx(sum(r["metrics"]["payoff"][0] for r in mine) / 3)
        assert got["p2_payoff"] == pytest.approx(sum(r["metrics"]["payoff"][1] for r in mine) / 3)
        w1 = sum(bool(r["metrics"]["win"][0]) for r in mine) / 3
        w2 = sum(bool(r["metrics"]["win"][1]) for r in mine) / 3
        if w1 + w2:
            assert got["p1_win_rate"] == pytest.approx(w1 / (w1 + w2))
        else:
            assert got["p1_win_rate"] is None
    head = na.pairs_csv(table).splitlines()[0]
    assert head.startswith("scenario,cell,p1_model")
    card = _card(study["report"], "negotiationarena")
    # natural order: total=100 before total=1000, a win-rate and a payoff table each, 3 games per cell
    assert card.index("Multi-turn ultimatum [total=100]: win rate") < card.index(
        "Multi-turn ultimatum [total=1000]: win rate")
    assert card.count("(3 games)") == 4 and "(6 games)" not in card


def test_family_figures_show_each_cell(study: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The legends and facets name the cell: read from the matplotlib figures, not their pixels."""
    from econarena.analysis import figures
    from econarena.analysis.families import gamabench
    from econarena.analysis.families import negotiationarena as na

    drawn: dict[str, Any] = {}

    def keep(fig: Any, out: Path, key: str, sources: Any) -> tuple[Path, Path]:
        drawn[key] = fig
        return out / f"{key}.png", out / f"{key}.svg"

    monkeypatch.setattr(figures, "_save", keep)
    gamabench.report_section([study["gama"]], study["report"], study["report"])
    legend = [t.get_text() for t in drawn["gama_scores"].axes[0].get_legend().get_texts()]
    assert sorted(legend) == sorted(f"{lab} [ratio={x}]" for lab in ("rational", "random") for x in ("0.5", "0.9"))
    rounds = [t.get_text() for t in drawn["gama_rounds"].legends[0].get_texts()]
    assert sorted(rounds) == sorted(legend)
    na.report_section([study["na"]], study["report"])
    titles = [ax.get_title() for ax in drawn["na_offers"].axes if ax.get_title()]
    assert len(titles) == 2 and titles[0].startswith("Multi-turn ultimatum [total=")
    from econarena.analysis.families import glee

    glee.report_sections([study["glee"]], study["report"], study["report"])
    # GLEE's model-choice meta-game pools the drawn parameters: said in its title where a grid is pooled
    assert "(pooled over cells)" in drawn["pairs_bargaining"].get_suptitle()


def test_a_large_glee_grid_is_pooled_on_the_card_said_and_split_in_the_detail(tmp_path: Path) -> None:
    """More than 16 cells would fill the first screen: the card pools them, says so beside each row, and the
    detail below has every cell's row."""
    from econarena.analysis.families import glee
    from econarena.analysis.report import build_report

    doc = {**GLEE, "experiment": {**GLEE["experiment"], "sessions": 1},
           "grid": {"game": {"delta_alice": [0.8, 0.9, 0.95, 1.0], "money": [100, 10000, 1000000],
                             "max_rounds": [2, 4]}}}
    run_experiment(doc, tmp_path / "big")
    build_report([tmp_path / "big"], tmp_path / "report", n_boot=20, seed=1, transcripts=0)
    card = _card(tmp_path / "report", "glee")
    assert card.count("pooled over cells (24)") == 2 and "more than 16 cells" in card
    valid = [r for r in read_jsonl(tmp_path / "big" / "runs.jsonl") if all(r["valid"])]
    pooled = glee.card_rows(glee.collect([tmp_path / "big"])["bargaining"], 20, 1, split=False)
    assert {r["seats"] for r in pooled} == {len(valid)}
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    detail = page[page.index("efficiency, fairness, self-gain per cell"):]
    detail = detail[:detail.index("</table>")]
    assert detail.count("<tr>") == 2 * 24  # a row per player and cell (the header row has a style)


def test_a_large_grid_pools_within_cells_from_the_cells_own_draws(tmp_path: Path) -> None:
    """Two games or more in every cell: the pooled row's interval resamples games within cells (the grid's
    design) and each cell's row is its part of those draws; the values are the hand means either way."""
    from econarena.analysis.families import glee
    from econarena.analysis.stats import bootstrap_strata

    doc = {**GLEE, "experiment": {**GLEE["experiment"], "sessions": 3},
           "grid": {"game": {"delta_alice": [0.8, 0.9, 0.95], "money": [100, 10000], "max_rounds": [2, 3, 4]}}}
    run_experiment(doc, tmp_path / "big")
    data = glee.collect([tmp_path / "big"])["bargaining"]
    rows, pooled = glee.card_tables(data, 40, 2)
    assert pooled is not None and len({r["cell"] for r in rows}) == 18
    names, codes = data.cells()
    for r in pooled:
        vals, where = glee._seat_values(data, r["player"], "self_gain", codes)
        idx = np.argsort(where, kind="stable")
        if not glee._two_each(vals[idx], where[idx]):
            continue  # a cell with one game: resampled as one (checked by the test above)
        whole, cells = bootstrap_strata([glee._sums(vals[idx], where[idx])], n_boot=40, seed=2)[0]
        got = r["self_gain"]
        assert got.value == pytest.approx(float(np.nanmean(vals))) and (got.low, got.high) == (whole.low, whole.high)
        for c, e in cells.items():
            row = next(x for x in rows if x["player"] == r["player"] and x["cell"] == names[c])
            assert row["self_gain"] == e
            assert e.value == pytest.approx(float(np.nanmean(vals[where == c])))
        break
    else:
        pytest.fail("no player's self-gain had two games in every cell")
