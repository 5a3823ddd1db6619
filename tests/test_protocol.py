"""The game protocol: reply field kinds, rounds with conversations, reask, round logs and scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from econarena.games.base import (
    PARSE_ERROR,
    RULE_VIOLATION,
    SCHEMA_ERROR,
    ActionField,
    ActionSpec,
    judge_reply,
)


def _judge(field: ActionField, text: str):
    return judge_reply(ActionSpec((field,)), text)


# ---- field kinds ----

def test_number_integer_and_step() -> None:
    f = ActionField("n", "number", "", 0, 10, integer=True)
    assert _judge(f, '{"n": 3}').action == {"n": 3}
    assert _judge(f, '{"n": 3.0}').action == {"n": 3}  # a whole number written as a float is fine
    assert _judge(f, '{"n": 3.5}').violation == SCHEMA_ERROR
    assert _judge(f, '{"n": 11}').violation == RULE_VIOLATION
    g = ActionField("p", "number", "", 0, 1, step=0.25)
    assert _judge(g, '{"p": 0.75}').valid
    assert _judge(g, '{"p": 0.7}').violation == RULE_VIOLATION


def test_text_length_is_a_rule() -> None:
    f = ActionField("message", "text", "", max_length=5)
    assert _judge(f, '{"message": "hi"}').action == {"message": "hi"}
    assert _judge(f, '{"message": 5}').violation == SCHEMA_ERROR
    bad = _judge(f, '{"message": "hello there"}')
    assert bad.violation == RULE_VIOLATION and "11 characters" in (bad.detail or "")


def test_allocation_keys_types_and_total() -> None:
    f = ActionField("split", "allocation", "", items=("0", "1", "2"), total=100, integer=True)
    assert _judge(f, '{"split": {"0": 98, "1": 0, "2": 2}}').action == {"split": {"0": 98, "1": 0, "2": 2}}
    assert _judge(f, '{"split": [98, 0, 2]}').action == {"split": {"0": 98, "1": 0, "2": 2}}
    assert _judge(f, '{"split": {"0": 98, "1": 2}}').violation == SCHEMA_ERROR  # a key missing
    assert _judge(f, '{"split": {"0": 98, "1": "x", "2": 2}}').violation == SCHEMA_ERROR
    assert _judge(f, '{"split": {"0": 97.5, "1": 0.5, "2": 2}}').violation == SCHEMA_ERROR  # not whole
    assert _judge(f, '{"split": {"0": 90, "1": 0, "2": 2}}').violation == RULE_VIOLATION  # sums to 92
    assert _judge(f, '{"split": {"0": 102, "1": -4, "2": 2}}').violation == RULE_VIOLATION  # negative


def test_target_forms_and_legality() -> None:
    f = ActionField("target", "target", "", targets=(1, 3), allow_none=True)
    for text, want in (('{"target": 3}', 3), ('{"target": "player_3"}', 3), ('{"target": "Player 1"}', 1),
                       ('{"target": null}', None), ('{"target": -1}', None), ('{"target": "3"}', 3)):
        assert _judge(f, text).action == {"target": want}, text
    assert _judge(f, '{"target": 2}').violation == RULE_VIOLATION  # not among those that can be named
    assert _judge(f, '{"target": "the strongest"}').violation == SCHEMA_ERROR
    strict = ActionField("target", "target", "", targets=(1,))
    assert _judge(strict, '{"target": null}').violation == SCHEMA_ERROR


def test_missing_key_is_a_parse_error() -> None:
    f = ActionField("target", "target", "", targets=(1,))
    assert _judge(f, '{"aim": 1}').violation == PARSE_ERROR


# ---- rounds, conversations and reask through the Host ----

def _guessing(arena, tmp_path: Path, responses: list[str], reask: int, rounds: int = 3,
              others: dict | None = None):
    doc = arena.experiment_dict("guessing_game", [
        {"agent": "scripted", "label": "S", "responses": responses},
        {"agent": "rational", "count": 2, **(others or {})}], {"rounds": rounds}, sessions=1, reask=reask)
    result = arena.run_experiment(doc, tmp_path)
    assert result.status == "complete"
    return arena.read_jsonl(tmp_path / "runs.jsonl"), arena.read_jsonl(tmp_path / "decisions.jsonl")


def test_reask_logs_every_attempt_and_the_first_counts(arena, tmp_path: Path) -> None:
    runs, decisions = _guessing(arena, tmp_path, ["nonsense", '{"chosen_number": 30}'], reask=2, rounds=2)
    mine = [d for d in decisions if d["label"] == "S"]
    # round 0: nonsense (parse error), re-asked, 30; round 1: nonsense again, then 30
    assert [(d["round"], d["attempt"], d["violation"]) for d in mine] == [
        (0, 0, PARSE_ERROR), (0, 1, None), (1, 0, PARSE_ERROR), (1, 1, None)]
    assert "could not be used" in mine[1]["messages"][-1]["content"]
    (run,) = runs
    assert run["valid"][0] is True and run["first_valid"][0] is False
    assert run["round_log"][0]["actions"][0] == {"chosen_number": 30}


def test_without_reask_a_bad_reply_has_no_action(arena, tmp_path: Path) -> None:
    runs, decisions = _guessing(arena, tmp_path, ["nonsense", '{"chosen_number": 30}'], reask=0, rounds=2)
    mine = [d for d in decisions if d["label"] == "S"]
    assert [d["attempt"] for d in mine] == [0, 0]
    (run,) = runs
    assert run["round_log"][0]["actions"][0] is None and run["round_log"][1]["actions"][0] == {"chosen_number": 30}
    assert run["valid"][0] is False and run["first_valid"][0] is False


def _conversation(decisions: list[dict], player: int) -> list[dict]:
    """Rebuild one player's conversation from its decision records (messages + reply per record)."""
    chat: list[dict] = []
    for d in sorted((d for d in decisions if d["player"] == player), key=lambda d: d["decision_index"]):
        assert d["messages_from"] == len(chat), "records must continue the conversation exactly"
        chat += d["messages"] + [{"role": "assistant", "content": d["response"]}]
    return chat


@pytest.mark.parametrize("others", ["rational", "scripted"])
def test_each_player_keeps_one_conversation_with_round_reports(arena, tmp_path: Path, others: str) -> None:
    # the other two seats play 0 every round: rational players (asked directly, sent no prompt, so they
    # have no conversation), or scripted ones (sent the same prompts and reports as a model)
    play_zero = {"agent": "scripted", "label": "Z", "responses": ['{"chosen_number": 0}']}
    runs, decisions = _guessing(arena, tmp_path, ['{"chosen_number": 50}'], reask=0, rounds=3,
                                others=play_zero if others == "scripted" else None)
    chat = _conversation(decisions, 0)
    roles = [m["role"] for m in chat]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    # the rational players pick 0: the average is 50/3, its 2/3 is 100/9 = 11.11; they win
    assert "Result of round 1" in chat[3]["content"] and "11.111111" in chat[3]["content"]
    assert "did not win" in chat[3]["content"] and "Round 2 of 3" in chat[3]["content"]
    if others == "scripted":
        other = _conversation(decisions, 1)
        assert "You picked 0 and won" in other[3]["content"]
    else:
        assert all(d["messages"] is None and d["messages_from"] is None for d in decisions if d["player"] > 0)
    (run,) = runs
    # three rounds with the same numbers: mean 50/3 each round; score (100 - 50/3) / 100 * 100
    assert run["score"] == pytest.approx(100 - 50 / 3)
    assert run["rounds"] == 3 and len(run["round_log"]) == 3
    assert run["payoffs"] == [0.0, 3.0, 3.0]


def test_grid_cells_are_counted_and_checked(arena, tmp_path: Path) -> None:
    doc = arena.experiment_dict("guessing_game", [{"agent": "rational", "count": 3}], {"rounds": 2})
    doc["grid"] = {"game": {"ratio": [0.5, 1.5]}, "experiment": {"prompt": ["default", "cot"]}}
    path = tmp_path / "g.toml"
    path.write_text(arena.to_toml(doc), encoding="utf-8")
    proc = arena.cli("validate", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "4 grid cells" in proc.stdout
    doc["grid"]["game"]["ratio"] = [0.5, -1.0]
    path.write_text(arena.to_toml(doc), encoding="utf-8")
    proc = arena.cli("validate", str(path))
    assert proc.returncode == 2
    assert "'grid.game.ratio'" in proc.stderr and "ratio=-1" in proc.stderr and "Traceback" not in proc.stderr


def test_grid_cells_play_as_their_own_tables(arena, tmp_path: Path) -> None:
    from econarena.analysis.metrics import summarize

    doc = arena.experiment_dict("guessing_game", [{"agent": "rational", "count": 2}, {"agent": "random"}],
                                {"rounds": 2}, sessions=2, seed=4)
    doc["grid"] = {"game": {"ratio": [0.5, 1.5]}, "experiment": {"runs": [1, 2]}}
    result = arena.run_experiment(doc, tmp_path)
    # cells: (0.5, 1 run), (0.5, 2 runs), (1.5, 1 run), (1.5, 2 runs); 2 sessions each
    assert result.status == "complete" and result.runs_total == 2 * (1 + 2 + 1 + 2)
    runs = arena.read_jsonl(tmp_path / "runs.jsonl")
    names = {r["lineup"] for r in runs}
    assert names == {"melee [ratio=0.5,runs=1]", "melee [ratio=0.5,runs=2]", "melee [ratio=1.5,runs=1]",
                     "melee [ratio=1.5,runs=2]"}
    for r in runs:
        assert r["params"]["ratio"] == r["cell"]["game.ratio"]
        if r["cell"]["game.ratio"] == 1.5:  # ratio > 1: the rational number is the maximum
            assert all(a == {"chosen_number": 100} for a in r["round_log"][0]["actions"][:2])
    rows = summarize(tmp_path)["labels"]
    assert rows["rational [ratio=1.5,runs=2]"]["player_runs"] == 2 * 2 * 2  # 2 seats x 2 sessions x 2 runs
    # the same session draws are shared by every cell: a paired comparison across the grid
    toml = (tmp_path / "config.toml").read_text(encoding="utf-8")
    assert "[grid.game]" in toml and "[grid.experiment]" in toml
