"""Reasoning on the report's pages: folded under its move in a conversation (escaped, cut, hidden said),
and kept only for the runs the page shows."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from econarena.analysis.transcripts import Collector, transcript_html

LOG = [
    {"round": 0, "actions": [{"message": "600 for me", "offer": 600}, None],
     "events": {"say": {"player": 0, "message": "600 for me", "offer": 600}}},
    {"round": 1, "actions": [None, {"message": "no", "decision": "reject"}],
     "events": {"say": {"player": 1, "message": "no", "decision": "reject"}}},
]


def test_reasoning_is_folded_under_its_move() -> None:
    page = transcript_html(LOG, ["A", "B"], (), {(0, 0): ("I could ask <b>700</b>", False, 41),
                                                (1, 1): ("", True, 12)})
    first, second = page.split("<div class='turn")[1:3]
    assert "<details class='reasoning'><summary>reasoning, 41 tokens</summary>" in first
    assert "I could ask &lt;b&gt;700&lt;/b&gt;" in first and "<b>700</b>" not in page
    assert "reasoning, 12 tokens</summary><i>withheld by the provider" in second
    assert "details" not in transcript_html(LOG, ["A", "B"], ())  # no reasoning: the page as before


def test_collector_keeps_reasoning_of_the_shown_runs_only() -> None:
    c = Collector(max_runs=1)
    d = SimpleNamespace(exp={"game": "pirate_game"}, config={"x": 1}, path=Path("d"))
    c.game, c.total, c.heap, c.count, c.thoughts, c._keys = None, 0, [], 0, {}, set()
    for session in (0, 1):
        c.run(d, session, {"lineup": "m", "session": session, "run": 0, "round_log": LOG})  # type: ignore[arg-type]
    for session in (0, 1):
        c.decision(d, {"lineup": "m", "session": session, "run": 0, "round": 0, "player": 0,  # type: ignore[arg-type]
                       "reasoning": f"thought {session}", "reasoning_tokens": 3})
    c.decision(d, {"lineup": "m", "session": 0, "run": 0, "round": 1, "player": 1})  # type: ignore[arg-type]
    c.end(d)  # type: ignore[arg-type]
    (_, _, total, runs), = c.found
    assert total == 2 and len(runs) == 1 and runs[0]["session"] == 0
    assert runs[0]["_reasoning"] == {(0, 0): ("thought 0", False, 3)}


def test_bench_rows_and_labels_carry_reasoning_settings(tmp_path: Path) -> None:
    """One model at two efforts is two leaderboard rows (its default label says the setting; under one
    label the reasoning settings still keep them apart), not a clash of one label."""
    from econarena.analysis import benchmark as B
    from econarena.hosts import bench as H

    high, low = tmp_path / "high.toml", tmp_path / "low.toml"
    high.write_text('agent = "openai"\nmodel = "o4-mini"\nreasoning_effort = "high"\nmax_tokens = 8000\n')
    low.write_text('agent = "openai"\nmodel = "o4-mini"\nreasoning_effort = "low"\nmax_tokens = 8000\n')
    (a,), (b,) = H.model_specs(str(high)), H.model_specs(str(low))
    assert (a.label, b.label) == ("openai/o4-mini [effort=high]", "openai/o4-mini [effort=low]")

    def result(effort: str, score: float) -> dict:
        return {"model": {"label": "mine", "reasoning": {"reasoning_effort": effort}}, "settings_digest": effort,
                "complete": True, "overall": {"score": score}, "subscores": {}, "suite": {}, "tier": "quick"}

    kept, why = B.one_row_per_model([(tmp_path / "1", result("high", 0.7)), (tmp_path / "2", result("low", 0.5))])
    assert why is None and len(kept) == 2
    assert B._row_label(kept[0][1]["model"]) == "mine [reasoning_effort=high]".replace("reasoning_effort", "effort")
    _, clash = B.one_row_per_model([(tmp_path / "1", result("high", 0.7)), (tmp_path / "2", result("high", 0.5))])
    assert clash is not None and "several different results" in clash
