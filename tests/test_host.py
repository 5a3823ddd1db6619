"""The Host: environments, history, prompt variants, baseline agents, seeds and concurrency."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from econarena.agents.base import Reply
from econarena.hosts.config import parse_experiment
from econarena.hosts.host import Host, HostOptions

RATIONAL_SENTENCE = "every other player is perfectly rational"
SELF_SENTENCE = "reason about strategy at a level similar to yours"


def prompt(d: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in d["messages"])


def prompted(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of players that were sent a prompt; a strategy baseline's record has none."""
    for d in decisions:
        assert (d["messages"] is None) == (d["agent"] in ("rational", "random", "level_k")), d
        assert (d["messages_from"] is None) == (d["messages"] is None)
    return [d for d in decisions if d["messages"] is not None]


def scripted(label: str, *responses: str) -> dict[str, Any]:
    return {"agent": "scripted", "label": label, "responses": list(responses)}


def test_melee_seats_every_entry_with_its_count(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("beauty_contest",
                                [scripted("A", '{"answer": 10}'), {"agent": "level_k", "label": "L2", "k": 2},
                                 {"agent": "rational", "count": 3}], {"upper_bound": 90}, sessions=2)
    arena.run_experiment(doc, tmp_path)
    runs = arena.sorted_runs(tmp_path)
    assert [(r["lineup"], r["session"], r["run"]) for r in runs] == [("melee", 0, 0), ("melee", 1, 0)]
    for r in runs:
        assert r["labels"] == ["A", "L2", "rational", "rational", "rational"]
        assert r["agents"] == ["scripted", "level_k", "rational", "rational", "rational"]
        assert r["environment"] == "melee"
        # answers 10, 20 (= 90/2 x (2/3)^2), 0, 0, 0: mean 6, target 4; distances 6, 16, 4, 4, 4,
        # so the three zeros share 100.
        assert r["actions"] == pytest.approx([10.0, 20.0, 0.0, 0.0, 0.0])
        assert r["winners"] == [2, 3, 4]
        assert r["payoffs"] == pytest.approx([0.0, 0.0, 100 / 3, 100 / 3, 100 / 3])
    decisions = arena.read_jsonl(tmp_path / "decisions.jsonl")
    assert len(decisions) == 10 and len(prompted(decisions)) == 2
    assert all(RATIONAL_SENTENCE not in prompt(d) and SELF_SENTENCE not in prompt(d) for d in prompted(decisions))


def test_rational_environment_one_table_per_non_rational_entry(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("second_price_auction",
                                [scripted("S", '{"bid": 70}'), {"agent": "level_k", "label": "L"}],
                                {"private_value": [60, 45, 30, 20]}, environment="rational", players_per_game=4,
                                sessions=2)
    arena.run_experiment(doc, tmp_path)
    runs = arena.sorted_runs(tmp_path)
    assert [(r["lineup"], r["session"]) for r in runs] == [("L", 0), ("L", 1), ("S", 0), ("S", 1)]
    for r in runs:
        assert r["labels"] == [r["lineup"], "rational", "rational", "rational"]
        assert r["environment"] == "rational"
    s = runs[2]
    # S bids 70 with value 60; the rational seats bid 45, 30, 20: S pays 45 -> 100 - 45 + 60 = 115 (= NE).
    assert s["actions"] == [70.0, 45.0, 30.0, 20.0]
    assert s["payoffs"] == [115.0, 100.0, 100.0, 100.0]
    assert s["ne_payoffs"] == [115.0, 100.0, 100.0, 100.0]
    decisions = arena.read_jsonl(tmp_path / "decisions.jsonl")
    assert len(decisions) == 16
    assert [d["label"] for d in prompted(decisions)] == ["S", "S"]  # the level-k player L reads no prompt
    for d in decisions:
        if d["label"] in ("S", "L"):
            assert d["player"] == 0
        if d["label"] == "S":
            assert RATIONAL_SENTENCE in prompt(d)


def test_self_environment_copies_of_each_entry(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("beauty_contest",
                                [scripted("S", '{"answer": 1}', '{"answer": 2}', '{"answer": 3}'),
                                 {"agent": "rational"}],
                                {"upper_bound": 10}, environment="self", players_per_game=3)
    arena.run_experiment(doc, tmp_path)
    runs = {r["lineup"]: r for r in arena.sorted_runs(tmp_path)}
    assert set(runs) == {"S", "rational"}
    assert runs["S"]["labels"] == ["S", "S", "S"] and runs["S"]["environment"] == "self"
    assert runs["rational"]["labels"] == ["rational"] * 3
    # every copy is its own seat with its own decision counter: each makes decision 0 -> answer 1
    assert runs["S"]["actions"] == [1.0, 1.0, 1.0]
    assert runs["S"]["payoffs"] == pytest.approx([100 / 3] * 3)
    decisions = arena.read_jsonl(tmp_path / "decisions.jsonl")
    assert len(decisions) == 6 and all(SELF_SENTENCE in prompt(d) for d in prompted(decisions))
    assert {d["label"] for d in prompted(decisions)} == {"S"}
    assert {(d["player"], d["decision_index"]) for d in decisions if d["label"] == "S"} == {(0, 0), (1, 0), (2, 0)}


def test_scripted_agent_cycles_through_responses_across_runs_of_a_session(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("beauty_contest",
                                [scripted("S", '{"answer": 1}', '{"answer": 2}', "oops"), {"agent": "rational"}],
                                {"upper_bound": 10}, sessions=2, runs=5)
    arena.run_experiment(doc, tmp_path)
    for session in (0, 1):
        got = [d for d in arena.sorted_decisions(tmp_path) if d["label"] == "S" and d["session"] == session]
        assert [d["decision_index"] for d in got] == [0, 1, 2, 3, 4]
        assert [d["response"] for d in got] == ['{"answer": 1}', '{"answer": 2}', "oops", '{"answer": 1}',
                                                '{"answer": 2}']
        assert [d["action"] for d in got] == [1.0, 2.0, None, 1.0, 2.0]
        assert [d["violation"] for d in got] == [None, None, "parse_error", None, None]
        assert got[2]["detail"] == "no JSON object found in the reply"


def test_scripted_english_auction_one_decision_per_round(tmp_path: Path, arena) -> None:
    # Clock 0, 10, 20, ...; S stays twice then drops at 20 (decision 2); the rational seat (value 30)
    # stays at 0, 10, 20 and is alone at 20 -> wins at 20: 100 - 20 + 30 = 110.
    doc = arena.experiment_dict("english_auction",
                                [scripted("S", '{"decision": "stay"}', '{"decision": "stay"}',
                                          '{"decision": "drop"}'), {"agent": "rational"}],
                                {"private_value": [60, 30], "increment": 10}, runs=2)
    arena.run_experiment(doc, tmp_path)
    runs = arena.sorted_runs(tmp_path)
    assert runs[0]["winners"] == [1] and runs[0]["payoffs"] == [100.0, 110.0] and runs[0]["rounds"] == 3
    # run 2 continues the cycle: decision 3 -> stay, 4 -> stay, 5 -> drop: the same outcome
    assert runs[1]["payoffs"] == [100.0, 110.0]
    s = [d for d in arena.sorted_decisions(tmp_path) if d["label"] == "S"]
    assert [(d["run"], d["round"], d["decision_index"], d["action"]) for d in s] == [
        (0, 0, 0, "stay"), (0, 1, 1, "stay"), (0, 2, 2, "drop"), (1, 0, 3, "stay"), (1, 1, 4, "stay"),
        (1, 2, 5, "drop")]
    assert "Round 3: the price is now 20." in prompt(s[2])


def run_history(tmp_path: Path, arena, history: str, game: str = "second_price_auction") -> list[dict[str, Any]]:
    params = {"private_value": [60, 45]} if game != "beauty_contest" else {"upper_bound": 10}
    key = "bid" if game != "beauty_contest" else "answer"
    doc = arena.experiment_dict(game, [scripted("S", *(f'{{"{key}": {x}}}' for x in (11, 12, 13, 14, 15))),
                                       {"agent": "rational"}], params, runs=5, history=history, max_history=2)
    arena.run_experiment(doc, tmp_path)
    return [d for d in arena.sorted_decisions(tmp_path) if d["player"] == 0]


def history_block(text: str) -> list[dict[str, Any]]:
    start = text.index("[\n{")
    return json.loads(text[start:text.index("\n]", start) + 2])


def test_history_none_shows_nothing(tmp_path: Path, arena) -> None:
    for d in run_history(tmp_path, arena, "none"):
        assert "played" not in prompt(d) and '"run"' not in prompt(d)


def test_history_actions_shows_past_choices_from_run_two(tmp_path: Path, arena) -> None:
    ds = run_history(tmp_path, arena, "actions")
    assert "before" not in prompt(ds[0])
    assert "played 1 time(s) before" in prompt(ds[1])
    assert "Your player id is 0." in prompt(ds[1]) and "players are listed by id" in prompt(ds[1])
    assert history_block(prompt(ds[1])) == [{"run": 1, "players": [{"player": 0, "bid": 11.0},
                                                                     {"player": 1, "bid": 45.0}]}]
    # run 5 sees runs 3 and 4 only (max_history = 2)
    assert "played 4 time(s) before" in prompt(ds[4])
    assert history_block(prompt(ds[4])) == [
        {"run": 3, "players": [{"player": 0, "bid": 13.0}, {"player": 1, "bid": 45.0}]},
        {"run": 4, "players": [{"player": 0, "bid": 14.0}, {"player": 1, "bid": 45.0}]}]
    assert "payoff" not in json.dumps(history_block(prompt(ds[4])))
    # the history variant of the answer format asks about the previous run
    assert "- previous bid: float" in prompt(ds[1]) and "- previous bid" not in prompt(ds[0])


def test_history_full_adds_values_winners_and_payoffs(tmp_path: Path, arena) -> None:
    ds = run_history(tmp_path, arena, "full")
    # run 1: S bids 11, rational bids 45: seat 1 wins and pays 11 -> 100 - 11 + 45 = 134
    assert history_block(prompt(ds[1])) == [{"run": 1, "players": [
        {"player": 0, "bid": 11.0, "private value": 60.0, "payoff": 100.0, "winner": False},
        {"player": 1, "bid": 45.0, "private value": 45.0, "payoff": 134.0, "winner": True}]}]


def test_history_full_beauty_contest_shows_target(tmp_path: Path, arena) -> None:
    ds = run_history(tmp_path, arena, "full", "beauty_contest")
    # run 1: S answers 11, outside [0, 10] -> a rule break; the rational 0 is the only valid choice.
    block = history_block(prompt(ds[1]))
    assert block == [{"run": 1, "players": [
        {"player": 0, "answer": None, "note": "broke a rule", "payoff": 0.0, "winner": False},
        {"player": 1, "answer": 0.0, "payoff": 100.0, "winner": True}], "target": 0.0}]
    assert ds[0]["violation"] == "rule_violation"


def test_cot_prompt_variant(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("beauty_contest", [scripted("S", 'Thinking... {"answer": 3}'),
                                                   {"agent": "rational"}], {"upper_bound": 10}, prompt="cot")
    arena.run_experiment(doc, tmp_path)
    d = arena.sorted_decisions(tmp_path)[0]
    assert "step by step" in prompt(d) and "- answer: float" in prompt(d)
    assert d["action"] == 3.0 and d["valid"]
    default = tmp_path / "default"
    arena.run_experiment({**doc, "experiment": {**doc["experiment"], "prompt": "default"}}, default)
    assert "step by step" not in prompt(arena.sorted_decisions(default)[0])


def test_decision_records_judge_every_reply(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("beauty_contest",
                                [scripted("S", '{"popular answer": 50, "answer": 4}', '{"answer": "4"}', "",
                                          '{"answer": 40}', "\x00" * 10 + "{" * 500),
                                 {"agent": "rational"}], {"upper_bound": 10}, runs=5)
    result = arena.run_experiment(doc, tmp_path)
    assert result.status == "complete"
    s = [d for d in arena.sorted_decisions(tmp_path) if d["label"] == "S"]
    assert [d["violation"] for d in s] == [None, "schema_error", "parse_error", "rule_violation", "parse_error"]
    assert s[0]["extras"] == {"popular answer": 50}
    assert s[3]["response"] == '{"answer": 40}' and "outside [0, 10]" in s[3]["detail"]
    assert all(d["template"] == "beauty_contest/v1" and d["error"] is None for d in s)
    runs = arena.sorted_runs(tmp_path)
    assert [r["valid"][0] for r in runs] == [True, False, False, False, False]


def test_session_configuration_fixed_across_runs_and_shared_by_tables(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("second_price_auction", [{"agent": "random", "label": "R"},
                                                         {"agent": "level_k", "label": "L"}],
                                {"private_value": {"normal": [50, 10]}, "assets": {"uniform": [80, 120]}},
                                environment="rational", players_per_game=3, sessions=3, runs=3, seed=11)
    arena.run_experiment(doc, tmp_path)
    runs = arena.sorted_runs(tmp_path)
    by_session: dict[int, list[dict[str, Any]]] = {}
    for r in runs:
        by_session.setdefault(r["session"], []).append(r["params"])
    for params in by_session.values():
        assert len(params) == 6 and all(p == params[0] for p in params)  # 2 tables x 3 runs
    assert len({json.dumps(p[0]) for p in by_session.values()}) == 3  # sessions differ


def test_random_agent_reproducible_from_the_seed(tmp_path: Path, arena) -> None:
    def play(seed: int, out: str) -> list[dict[str, Any]]:
        doc = arena.experiment_dict("english_auction", [{"agent": "random", "count": 3}], {"increment": 5},
                                    sessions=4, runs=2, seed=seed)
        arena.run_experiment(doc, tmp_path / out)
        return arena.sorted_runs(tmp_path / out)

    a, b, c = play(1, "a"), play(1, "b"), play(2, "c")
    assert a == b
    assert [r["actions"] for r in a] != [r["actions"] for r in c]
    assert len({json.dumps(r["actions"]) for r in a}) > 1  # the draws differ between decisions


def test_concurrency_does_not_change_results(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("english_auction",
                                [{"agent": "random", "count": 2}, scripted("S", '{"decision": "stay"}', "x"),
                                 {"agent": "rational"}], {"increment": 4}, sessions=12, runs=3, seed=4,
                                history="full")
    arena.run_experiment(doc, tmp_path / "c1", concurrency=1)
    arena.run_experiment(doc, tmp_path / "c16", concurrency=16)
    assert arena.sorted_runs(tmp_path / "c1") == arena.sorted_runs(tmp_path / "c16")
    assert arena.sorted_decisions(tmp_path / "c1") == arena.sorted_decisions(tmp_path / "c16")


def test_players_of_a_simultaneous_move_decide_concurrently(tmp_path: Path, arena, monkeypatch) -> None:
    import econarena.hosts.host as host_mod

    in_flight, peak = 0, 0

    class Slow:
        kind, model = "slow", None

        def __init__(self, label: str) -> None:
            self.label = label

        async def decide(self, request) -> Reply:  # noqa: ANN001
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return Reply(text='{"answer": 1}')

    monkeypatch.setattr(host_mod, "create_agent", lambda agent, label, **kw: Slow(label))
    doc = arena.experiment_dict("beauty_contest", [{"agent": "random", "count": 5}], {"upper_bound": 10})
    arena.run_experiment(doc, tmp_path, concurrency=8)
    assert peak == 5


class _Broken:
    """An agent of the protocol only (``decide``): the Host asks it with a prompt, like a model."""

    kind = "rational"

    def __init__(self, label: str) -> None:
        from econarena.agents.baselines import RationalAgent

        self.label, self.model, self.inner = label, None, RationalAgent(label)

    async def decide(self, request) -> Reply:  # noqa: ANN001
        if request.coords["session"] == 1 and request.coords["run"] == 1:
            raise RuntimeError("boom")
        return await self.inner.decide(request)


class _BrokenStrategy:
    """A strategy baseline (asked directly, without a prompt) whose 9th action fails: with 2 seats, 3 runs
    per session and one session after the other, that is seat 0 of session 1, run 1."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, agent: str, label: str, **kw: Any) -> Any:
        from econarena.agents.baselines import RationalAgent

        outer = self

        class Broken(RationalAgent):
            def act(self, strategy, rng):  # noqa: ANN001, ANN202
                outer.calls += 1
                if outer.calls == 9:
                    raise RuntimeError("boom")
                return super().act(strategy, rng)

        return Broken(label)


@pytest.mark.parametrize("path", ["prompt", "direct"])
def test_agent_failure_stops_that_session_and_is_logged(tmp_path: Path, arena, monkeypatch, path: str) -> None:
    import econarena.hosts.host as host_mod

    make = (lambda agent, label, **kw: _Broken(label)) if path == "prompt" else _BrokenStrategy()
    monkeypatch.setattr(host_mod, "create_agent", make)
    doc = arena.experiment_dict("beauty_contest", [{"agent": "rational", "count": 2}], {"upper_bound": 10},
                                sessions=2, runs=3)
    exp = parse_experiment(doc, "test.toml")
    # concurrency 1: one session after the other, so the direct path's 9th call is session 1, run 1
    result = asyncio.run(Host(exp, tmp_path, HostOptions(concurrency=1, quiet=True)).run())
    assert result.status == "incomplete" and result.runs_done == 4 and result.runs_incomplete == 1
    runs = arena.read_jsonl(tmp_path / "runs.jsonl")
    bad = [r for r in runs if not r["complete"]]
    assert [(r["session"], r["run"]) for r in bad] == [(1, 1)]
    assert "RuntimeError: boom" in bad[0]["error"]
    assert not any(r["session"] == 1 and r["run"] == 2 for r in runs)  # later runs need its history
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["status"] == "incomplete"
    errors = [d for d in arena.read_jsonl(tmp_path / "decisions.jsonl") if d["error"]]
    assert errors and not any(d["valid"] for d in errors)


def test_prompt_templates_can_be_overridden_and_the_id_says_so(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("beauty_contest", [{"agent": "rational"}, scripted("S", '{"answer": 1}')],
                                {"upper_bound": 10})
    doc["prompts"] = {"system": "You are player {player_id} of {n_players}.",
                      "env_self": "unused here", "format_default": "Reply in JSON with:"}
    arena.run_experiment(doc, tmp_path)
    d = arena.sorted_decisions(tmp_path)[1]
    assert d["messages"][0] == {"role": "system", "content": "You are player 1 of 2."}
    assert "Reply in JSON with:\n- understanding: str" in d["messages"][1]["content"]
    assert re.fullmatch(r"beauty_contest/v1\+custom-[0-9a-f]{8}", d["template"])


def test_progress_prints_plain_lines_when_not_on_a_terminal(monkeypatch, capsys) -> None:
    from econarena.hosts.host import Progress

    monkeypatch.setattr(Progress, "LOG_EVERY_S", 0.0)
    monkeypatch.setattr(Progress, "FIRST_LOG_S", 0.0)
    p = Progress(4, "exp", enabled=True)
    assert capsys.readouterr().err == "exp: started, 4 of 4 runs to play\n"  # at once, before any run ends
    p.step(runs=1, decisions=5)
    p.step(runs=3, decisions=15)
    p.close()
    err = capsys.readouterr().err
    assert "exp: 1/4 runs, 5 decisions (" in err and "exp: 4/4 runs, 20 decisions" in err and "\r" not in err
    assert "left" in err.splitlines()[0]
    quiet = Progress(4, "exp", enabled=False)
    quiet.step(runs=4)
    assert capsys.readouterr().err == ""
