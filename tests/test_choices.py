"""Choice fields through a whole run: a game of one's own with capitalised choices is played, prompted and
logged in the spelling it declares (the field-level rules are in test_choice_fields.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def trusted_tests_folder(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """The tests' folder trusted (--trust) for one test; the games it files are taken out again after, so no
    later test that lists every game meets them."""
    from econarena.games import GAMES, plugins

    before = set(dict.keys(GAMES))
    monkeypatch.setattr(plugins, "_trusted", [])
    plugins.trust(Path(__file__).parent)
    yield
    for key in set(dict.keys(GAMES)) - before:
        dict.__delitem__(GAMES, key)


def test_own_game_with_capitalised_choices_plays_and_logs_the_declared_spelling(
        arena, tmp_path: Path, trusted_tests_folder: None) -> None:
    doc = arena.experiment_dict("own_games.effort:Effort", [
        {"agent": "scripted", "label": "S", "responses": ['{"effort": "m"}']},
        {"agent": "rational"}], sessions=1, runs=1)
    result = arena.run_experiment(doc, tmp_path)
    assert result.status == "complete"
    (run,) = arena.read_jsonl(tmp_path / "runs.jsonl")
    assert run["round_log"][0]["actions"] == [{"effort": "M"}, {"effort": "M"}]
    assert run["valid"] == [True, True] and run["payoffs"] == [4.0, 4.0]  # PAYOFF["M"]["M"]
    (mine,) = [d for d in arena.read_jsonl(tmp_path / "decisions.jsonl") if d["label"] == "S"]
    assert mine["violation"] is None and mine["action"] == "M"
    prompt = "\n".join(m["content"] for m in mine["messages"])
    assert '"L" or "M" or "H"' in prompt
