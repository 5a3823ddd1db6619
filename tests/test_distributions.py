"""The report's per-family metric distributions and NegotiationArena section, from real runs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")


def _run(arena, tmp_path: Path, game: str, sessions: int = 4) -> Path:
    doc = arena.experiment_dict(game, [{"agent": "rational", "label": "R"}, {"agent": "random", "label": "Z"}],
                                sessions=sessions, seed=5)
    out = tmp_path / game
    assert arena.run_experiment(doc, out).status == "complete"
    return out


def test_collect_splits_seat_metrics_by_label_and_table_metrics_by_pair(arena, tmp_path: Path) -> None:
    from econarena.analysis.distributions import collect

    d = _run(arena, tmp_path, "ultimatum")
    values = collect([d])["negotiationarena"]
    runs = arena.read_jsonl(d / "runs.jsonl")
    payoffs = sorted(v.value for v in values if v.metric == "payoff (seat's own)" and v.group == "R")
    assert payoffs == sorted(r["metrics"]["payoff"][0] for r in runs)
    turns = [v for v in values if v.metric == "turns"]
    assert turns and all(v.group == "R vs Z" for v in turns)
    assert not any(v.metric == "agreement" for v in values)  # booleans are not plotted


def test_report_has_metric_boxes_and_negotiation_matrices(arena, tmp_path: Path) -> None:
    from econarena.analysis.report import build_report

    dirs = [_run(arena, tmp_path, "ultimatum"), _run(arena, tmp_path, "bargaining")]
    report = build_report(dirs, tmp_path / "report", n_boot=50, transcripts=1)
    html = report.html.read_text(encoding="utf-8")
    assert "data-figure='negotiationarena_metrics'" in html and "data-figure='glee_metrics'" in html
    assert "id='card-negotiationarena'" in html and "win rate P1 / P2" in html and "payoff P1 / P2" in html
    for key in ("negotiationarena_metrics", "glee_metrics"):
        assert (tmp_path / "report" / "figures" / f"{key}.png").stat().st_size > 10_000
