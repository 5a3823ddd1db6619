"""Steering: the OpenSpiel subgame and CFR numbers, action spaces, [steer] validation, and
whole steering experiments against a real HTTP server whose replies depend on the prompt action."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from econarena.games import GAMES
from econarena.games.steering.cfr import SpaceError, action_space, solve, tones
from econarena.hosts.config import ConfigError, parse_experiment

sys.path.insert(0, str(Path(__file__).parent))
from fakeservers import FakeLLMServer  # noqa: E402

SPEC_VALUES = [0.5, 1.0, 0.0, 0.25]  # calm, assertive, submissive, any (spec section 4, steering 2)


def _values(u: list[float], samples: int = 2) -> list[list[list[float]]]:
    return [[[0.0, x] for _ in range(samples)] for x in u]


def regret_matching(values: Sequence[float], iterations: int) -> tuple[list[float], float, float]:
    """Plain regret matching on one decision, an implementation independent of OpenSpiel's to check it
    against: the average strategy, NashConv and CFR gain against the LAST action (the ``any`` convention)."""
    u = np.asarray(values, dtype=float)
    regret = np.zeros_like(u)
    total = np.zeros_like(u)
    for _ in range(iterations):
        pos = np.maximum(regret, 0.0)
        sigma = pos / pos.sum() if pos.sum() > 0 else np.full_like(u, 1.0 / len(u))
        total += sigma
        regret += u - sigma @ u
    avg = total / iterations
    return avg.tolist(), float(u.max() - avg @ u), float(avg @ u - u[-1])


# ---- the solver: OpenSpiel's CFR on our subgame ----

def test_cfr_fixture_after_20_iterations_matches_the_spec() -> None:
    curve = solve(_values(SPEC_VALUES), player=1, baseline=3, iterations=20, every=5)
    last = curve[-1]
    assert last.iteration == 20
    assert last.strategy == pytest.approx([0.0175, 0.9575, 0.0125, 0.0125])
    assert last.nash_conv == pytest.approx(0.030625, abs=1e-12)
    assert last.cfr_gain == pytest.approx(0.719375, abs=1e-12)
    assert last.ratio == pytest.approx(0.719375 / 0.030625)
    assert [c.iteration for c in curve] == [5, 10, 15, 20]


def test_cfr_fixture_after_100_iterations_matches_the_spec() -> None:
    last = solve(_values(SPEC_VALUES), 1, 3, 100, 100)[-1]
    assert last.nash_conv == pytest.approx(0.006125, abs=1e-12)
    assert last.cfr_gain == pytest.approx(0.743875, abs=1e-12)


def test_first_iteration_is_the_uniform_strategy() -> None:
    # after one iteration the average policy is the uniform start: NashConv = 1 - 0.4375, gain = 0.4375 - 0.25
    first = solve(_values(SPEC_VALUES), 1, 3, 1, 1)[0]
    assert first.strategy == pytest.approx([0.25] * 4)
    assert first.nash_conv == pytest.approx(0.5625)
    assert first.cfr_gain == pytest.approx(0.1875)


def test_openspiel_agrees_with_plain_regret_matching_on_random_values() -> None:
    rng = np.random.default_rng(7)
    for n_actions in (2, 4, 25):
        u = rng.uniform(-20, 20, n_actions)
        last = solve(_values(list(u)), 1, n_actions - 1, 37, 37)[-1]
        avg, nash_conv, gain = regret_matching(list(u), 37)
        assert last.strategy == pytest.approx(avg, abs=1e-9)
        assert last.nash_conv == pytest.approx(nash_conv, abs=1e-9)
        assert last.cfr_gain == pytest.approx(gain, abs=1e-9)


def test_samples_are_a_uniform_chance_node_and_the_other_seat_adds_nothing() -> None:
    # action 0's samples pay 0 and 2 (mean 1), action 1 pays 0.5: CFR must prefer action 0 by its MEAN;
    # seat 0 never decides, so its payoffs (here large) do not enter NashConv
    values = [[[100.0, 0.0], [-100.0, 2.0]], [[7.0, 0.5], [7.0, 0.5]]]
    last = solve(values, 1, 1, 50, 50)[-1]
    avg, nash_conv, gain = regret_matching([1.0, 0.5], 50)
    assert last.strategy == pytest.approx(avg)
    assert last.nash_conv == pytest.approx(nash_conv)
    assert last.cfr_gain == pytest.approx(gain)


def test_equal_values_give_no_gain_and_no_nash_conv() -> None:
    last = solve(_values([3.0, 3.0, 3.0]), 1, 2, 20, 5)[-1]
    assert last.nash_conv == 0.0 and last.cfr_gain == 0.0 and last.ratio is None


@pytest.mark.parametrize("bad", [[[1.0]], [[[float("nan"), 1.0]]]])
def test_solver_refuses_malformed_values(bad: Any) -> None:
    with pytest.raises(ValueError):
        solve(bad, 0, 0, 5, 5)


# ---- action spaces ----

def test_tones_are_four_actions_with_an_empty_any() -> None:
    space = tones()
    assert [label for label, _ in space] == ["calm", "assertive", "submissive", "any"]
    assert space[-1] == ("any", "") and all(text.startswith("Tone:") for _, text in space[:3])


def test_user_lists_gain_an_any_and_refuse_duplicates() -> None:
    game = GAMES["bargaining"]
    P = game.Params()
    space = action_space(game, ["Offer a fair split.", {"label": "greedy", "instruction": "Ask for 90%."}], P)
    assert space == (("Offer a fair split.", "Offer a fair split."), ("greedy", "Ask for 90%."), ("any", ""))
    assert action_space(game, ["x", "ANY"], P)[-1] == ("any", "")
    for bad in (["x", "X"], [], [42], [{"label": "a"}]):
        with pytest.raises(SpaceError):
            action_space(game, bad, P)
    with pytest.raises(SpaceError, match="no action space 'offers'"):
        action_space(game, "offers", P)


# ---- [steer] validation ----

def _doc(**steer: Any) -> dict[str, Any]:
    return {"experiment": {"name": "s", "game": "bargaining", "environment": "self", "players_per_game": 2},
            "game": {"money": 100.0}, "players": [{"agent": "rational", "label": "r"}], "steer": steer}


@pytest.mark.parametrize("steer,expected", [
    ({"seat": 2}, "steer.seat: 2 is not a seat of this 2-player game"),
    ({"report_at": 200}, "steer.report_at: 200 is beyond steer.iterations (100)"),
    ({"actions": "offers"}, "steer.actions: bargaining has no action space 'offers'"),
    ({"actions": ["a", "A"]}, "steer.actions: actions: the label 'A' appears twice"),
    ({"samples": 0}, "'steer.samples'"),
    ({"spam": 1}, "unknown key 'steer.spam'"),
])
def test_bad_steer_tables_name_the_key(steer: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        parse_experiment(_doc(**steer), "s.toml")


def test_steering_needs_a_sequential_game_and_one_run_per_session() -> None:
    doc = _doc()
    doc["experiment"].update(game="beauty_contest", runs=3)
    doc["game"] = {}
    with pytest.raises(ConfigError) as err:
        parse_experiment(doc, "s.toml")
    assert "simultaneous moves" in str(err.value) and "leave runs at 1" in str(err.value)


# ---- whole steering experiments over HTTP ----

def bargainer(protocol: str, body: Any) -> str:
    """A GLEE bargainer whose answer depends on the prompt action: Bob rejects Alice's 60/40 offer only
    when told to be assertive, then asks for 70 % himself, which Alice accepts."""
    text = body["messages"][-1]["content"]
    if "- decision" in text:
        return '{"decision": "reject"}' if "be assertive" in text else '{"decision": "accept"}'
    alice_first = text.find("- alice_gain") < text.find("- bob_gain")
    return '{"alice_gain": 60, "bob_gain": 40}' if alice_first else '{"alice_gain": 30, "bob_gain": 70}'


def steer_doc(url: str, **steer: Any) -> dict[str, Any]:
    return {"experiment": {"name": "steer-bargain", "game": "bargaining", "environment": "self",
                           "players_per_game": 2, "sessions": 2, "seed": 5},
            "game": {"money": 100.0, "delta_alice": 0.9, "delta_bob": 0.9},
            "players": [{"agent": "openai", "label": "fake", "model": "fake", "base_url": f"{url}/v1"}],
            "steer": {"seat": 1, "actions": "tones", "samples": 2, "iterations": 20, "every": 5,
                      "report_at": 20, **steer}}


def run_steer(doc: dict[str, Any], out: Path, resume: bool = False) -> Any:
    from econarena.agents.llm import RuntimeOptions
    from econarena.hosts.host import HostOptions
    from econarena.hosts.steer import SteerHost

    exp = parse_experiment(doc, "steer.toml")
    options = HostOptions(concurrency=8, quiet=True, resume=resume, runtime=RuntimeOptions(cache=False))
    return asyncio.run(SteerHost(exp, out, options).run())


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_steering_bargaining_over_http_values_and_cfr(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reset()
    server.reply = bargainer
    result = run_steer(steer_doc(server.url), tmp_path / "out")
    assert result.status == "complete" and result.runs_total == 2 * 4 * 2 == result.runs_done
    runs = lines(tmp_path / "out" / "runs.jsonl")
    assert len(runs) == 16 and all(r["complete"] for r in runs)
    # accept in round 1: Bob gets 40; assertive: reject, round 2 Bob keeps 70 worth 0.9 -> 63, Alice 27
    for r in runs:
        expected = [27.0, 63.0] if r["steer"]["action"] == "assertive" else [60.0, 40.0]
        assert r["payoffs"] == pytest.approx(expected), r["steer"]
        assert r["run"] == r["steer"]["action_index"] * 2 + r["steer"]["sample"]
    # one prefix (Alice's offer) per game, then 8 branches of 1 (accept) or 3 (reject, offer, accept) moves
    decisions = lines(tmp_path / "out" / "decisions.jsonl")
    assert len(decisions) == 2 * (1 + 6 * 1 + 2 * 3) == server.count("openai")
    steered = [d for d in decisions if d["round"] == 1]
    assert all(("be assertive" in d["messages"][-1]["content"]) == (d["run"] in (2, 3)) for d in steered)
    assert not any("Tone:" in d["messages"][-1]["content"] for d in steered if d["run"] in (6, 7))  # "any"
    records = lines(tmp_path / "out" / "steering.jsonl")
    assert len(records) == 2
    for rec in records:
        assert rec["actions"] == ["calm", "assertive", "submissive", "any"] and rec["baseline"] == 3
        assert rec["values"][1] == [[27.0, 63.0], [27.0, 63.0]] and rec["values"][0][1] == [60.0, 40.0]
        assert [it["iteration"] for it in rec["iterations"]] == [5, 10, 15, 20]
        last = rec["iterations"][-1]
        # by hand: uniform first (value 45.75), then all on assertive: avg 0.9625 on it at iteration 20
        assert last["strategy"] == pytest.approx([0.0125, 0.9625, 0.0125, 0.0125])
        assert last["nash_conv"] == pytest.approx(63 - (0.9625 * 63 + 0.0375 * 40))
        assert last["cfr_gain"] == pytest.approx(0.9625 * 63 + 0.0375 * 40 - 40)
        assert rec["branches"]["n"] == 8 and rec["branches"]["pos2"] == 1.0 and rec["branches"]["neg1"] == 0.0


def test_resume_recomputes_a_missing_steering_line_without_calls(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reset()
    server.reply = bargainer
    out = tmp_path / "out"
    run_steer(steer_doc(server.url, samples=1), out)
    path = out / "steering.jsonl"
    first = lines(path)
    # a kill after a game's runs were written but before its steering line: drop game 1's line, tear one
    path.write_text(json.dumps(first[0]) + "\n" + '{"lineup": "fake", "sess', encoding="utf-8")
    calls = server.count("openai")
    result = run_steer(steer_doc(server.url, samples=1), out, resume=True)
    assert result.status == "complete"
    again = lines(path)
    assert sorted((r["session"], json.dumps(r["values"])) for r in again) == \
        sorted((r["session"], json.dumps(r["values"])) for r in first)
    assert len(lines(out / "runs.jsonl")) == 8
    # game 1 was replayed for its prefix only? No: all its runs were kept, so no call at all
    assert server.count("openai") == calls
    assert (out / "steering.discarded.jsonl").exists()
    # the rewritten file is encoded as every line of a run directory (it was json.dumps's spacing)
    assert all(b'": ' not in ln[:40] for ln in path.read_bytes().splitlines())


# ---- fruit trade, the paper's game: steered over HTTP, scripted, and with a judge ----

def fruit_trader(protocol: str, body: Any) -> str:
    """Player 1 offers 1 apple for 1 banana; Player 2 accepts unless told to be assertive, then asks for
    2 apples for 1 orange; Player 1 accepts any counter (the hypothetical third message)."""
    text = body["messages"][-1]["content"]
    zero = {"apple": 0, "banana": 0, "orange": 0}
    if "- decision" in text and "- give" not in text:
        return '{"decision": "accept"}'
    if "You are Player 2" in text:
        if "be assertive" in text:
            return json.dumps({"message": "Two apples for an orange.", "decision": "counter",
                               "give": {**zero, "orange": 1}, "receive": {**zero, "apple": 2}})
        return json.dumps({"message": "Deal.", "decision": "accept", "give": zero, "receive": zero})
    return json.dumps({"message": "An apple for a banana?", "give": {**zero, "apple": 1},
                       "receive": {**zero, "banana": 1}})


def fruit_doc(url: str, **steer: Any) -> dict[str, Any]:
    return {"experiment": {"name": "steer-fruit", "game": "fruit_trade", "environment": "self",
                           "players_per_game": 2, "sessions": 3, "seed": 11},
            "game": {"endowment_range": [2, 2]},  # every trade here is feasible; the values are drawn
            "players": [{"agent": "openai", "label": "fake", "model": "fake", "base_url": f"{url}/v1"}],
            "steer": {"actions": "tones", "samples": 2, "iterations": 20, "every": 5, "report_at": 20, **steer}}


def worth(values: dict[str, int], delta: dict[str, int]) -> int:
    return sum(values[f] * n for f, n in delta.items())


def test_steering_fruit_trade_tones_over_http(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reset()
    server.reply = fruit_trader
    assert run_steer(fruit_doc(server.url), tmp_path / "out").status == "complete"
    runs = {(r["session"], r["run"]): r for r in lines(tmp_path / "out" / "runs.jsonl")}
    assert len(runs) == 3 * 8
    for rec in lines(tmp_path / "out" / "steering.jsonl"):
        v1, v2 = runs[(rec["session"], 0)]["params"]["valuations"]
        direct = [worth(v1, {"banana": 1, "apple": -1}), worth(v2, {"apple": 1, "banana": -1})]
        counter = [worth(v1, {"orange": 1, "apple": -2}), worth(v2, {"apple": 2, "orange": -1})]
        assert rec["values"] == [[direct] * 2, [counter] * 2, [direct] * 2, [direct] * 2]
        u2 = [direct[1], counter[1], direct[1], direct[1]]
        _, nash_conv, gain = regret_matching(u2, 20)
        assert rec["iterations"][-1]["nash_conv"] == pytest.approx(nash_conv, abs=1e-9)
        assert rec["iterations"][-1]["cfr_gain"] == pytest.approx(gain, abs=1e-9)
        assert rec["branches"]["agreement"] == 0.75 and rec["payoff"] == "structured"
        for i in range(4):
            metrics = runs[(rec["session"], 2 * i)]["metrics"]
            assert metrics["agreement"] == (i != 1) and metrics["deal"]


def test_steering_fruit_trade_offers_with_a_scripted_model_and_judge(tmp_path: Path) -> None:
    """payoff = "llm": the judge's numbers (scripted: 5 for Player 1, -30 clipped to -20 for Player 2)
    are the values CFR uses, and the structured reading is logged next to them."""
    offer = {"message": "Deal?", "give": {"apple": 1, "banana": 0, "orange": 0},
             "receive": {"apple": 0, "banana": 1, "orange": 0}}
    reply = {"message": "Yes.", "decision": "accept", "give": {"apple": 0, "banana": 0, "orange": 0},
             "receive": {"apple": 0, "banana": 0, "orange": 0}}
    doc = {"experiment": {"name": "judged", "game": "fruit_trade", "sessions": 1, "seed": 2},
           "game": {"payoff": "llm"},
           "players": [{"agent": "scripted", "label": "p1", "responses": [json.dumps(offer)]},
                       {"agent": "scripted", "label": "p2", "responses": [json.dumps(reply)]}],
           "judge": {"agent": "scripted", "responses": ["5", "I would say -30"]},
           "steer": {"actions": "offers", "samples": 1, "iterations": 10, "every": 10, "report_at": 10}}
    assert run_steer(doc, tmp_path / "out").status == "complete"
    rec = lines(tmp_path / "out" / "steering.jsonl")[0]
    assert len(rec["actions"]) == 25 and rec["actions"][-1] == "any" and rec["payoff"] == "llm"
    assert rec["values"] == [[[5.0, -20.0]]] * 25
    assert rec["iterations"][-1]["nash_conv"] == 0.0 and rec["iterations"][-1]["cfr_gain"] == 0.0
    runs = lines(tmp_path / "out" / "runs.jsonl")
    assert len(runs) == 25
    params = runs[0]["params"]
    v1, v2 = params["valuations"]
    structured = [worth(v1, {"banana": 1, "apple": -1}), worth(v2, {"apple": 1, "banana": -1})]
    for r in runs:
        assert r["payoffs"] == [5.0, -20.0] and r["extra"]["judge_payoffs"] == [5.0, -20.0]
        assert r["extra"]["structured_payoffs"] == structured
    judge = lines(tmp_path / "out" / "judge.jsonl")
    assert len(judge) == 2 * 25 and {j["seat"] for j in judge} == {0, 1}
    assert all("Player 1's proposal" in j["messages"][-1]["content"] for j in judge)
    # the judge is not a player: no decision record of it, and the summary has only p1 and p2
    assert {d["label"] for d in lines(tmp_path / "out" / "decisions.jsonl")} == {"p1", "p2"}
    steered = {d["run"]: d["messages"][-1]["content"] for d in lines(tmp_path / "out" / "decisions.jsonl")
               if d["player"] == 1}
    assert len(steered) == 25
    for run, text in steered.items():  # each branch's request ends with its own offer's instruction
        instruction = rec["instructions"][run]
        assert text.endswith(instruction) and (run == 24) == (instruction == "")
    assert "you give 1 apple" in rec["instructions"][0]


def test_a_judged_game_without_a_judge_is_refused() -> None:
    doc = {"experiment": {"name": "j", "game": "fruit_trade"}, "game": {"payoff": "llm"},
           "players": [{"agent": "rational"}, {"agent": "random"}]}
    with pytest.raises(ConfigError, match=r"takes its payoffs from a judge model: add a \[judge\]"):
        parse_experiment(doc, "j.toml")
    doc["judge"] = {"agent": "rational"}
    with pytest.raises(ConfigError, match="judge.agent: a judge reads a dialogue"):
        parse_experiment(doc, "j.toml")


def test_an_opening_that_breaks_a_rule_leaves_nothing_to_steer(tmp_path: Path) -> None:
    doc = {"experiment": {"name": "broken", "game": "fruit_trade", "sessions": 2, "seed": 2},
           "players": [{"agent": "scripted", "label": "p1", "responses": ["no JSON here"]},
                       {"agent": "scripted", "label": "p2", "responses": ["{}"]}],
           "steer": {"samples": 2, "iterations": 5, "every": 5, "report_at": 5}}
    result = run_steer(doc, tmp_path / "out")
    assert result.status == "complete"
    recs = lines(tmp_path / "out" / "steering.jsonl")
    assert len(recs) == 2 and all(r["skipped"].startswith("the game ended before") for r in recs)
    runs = lines(tmp_path / "out" / "runs.jsonl")
    assert len(runs) == 2 and all(r["steer"] is None and r["valid"] == [False, True] for r in runs)
    again = run_steer(doc, tmp_path / "out", resume=True)  # nothing to redo
    assert again.status == "complete" and len(lines(tmp_path / "out" / "steering.jsonl")) == 2
    from econarena.analysis.families.steering import format_table, steering_table

    table = steering_table([tmp_path / "out"])
    assert table["games"].tolist() == [0] and table["unsteerable"].tolist() == [2]
    assert "games without a steered decision" in format_table(table)


def test_steering_with_a_local_model_under_constrained_decoding(tmp_path: Path) -> None:
    """The steered player is a local Hugging Face model (a tiny random Llama with a byte-level tokenizer,
    so xgrammar can spell the reply's JSON): its 8 branches are generated through the hf provider, each
    reply is JSON of the reply's shape, and the values CFR uses are the branches' payoffs."""
    pytest.importorskip("torch")
    pytest.importorskip("xgrammar")
    from hf_fixtures import build_tiny_llama

    model = build_tiny_llama(tmp_path / "tiny", byte_level=True)
    doc = {"experiment": {"name": "local", "game": "fruit_trade", "sessions": 1, "seed": 3},
           "players": [{"agent": "rational", "label": "opener"},
                       {"agent": "hf", "label": "tiny", "model": str(model), "max_tokens": 160,
                        "structured": "strict", "temperature": 0.9}],
           "steer": {"actions": "tones", "samples": 2, "iterations": 20, "every": 10, "report_at": 20}}
    assert run_steer(doc, tmp_path / "out").status == "complete"
    decisions = [d for d in lines(tmp_path / "out" / "decisions.jsonl") if d["label"] == "tiny"]
    assert len(decisions) == 8 and all(d["structured"] == "strict" and d["error"] is None for d in decisions)
    assert all(d["violation"] != "parse_error" for d in decisions if d["tokens_out"] < 160)
    runs = {r["run"]: r for r in lines(tmp_path / "out" / "runs.jsonl")}
    rec = lines(tmp_path / "out" / "steering.jsonl")[0]
    assert rec["values"] == [[runs[r]["payoffs"] for r in row] for row in rec["runs"]]
    u2 = [sum(runs[r]["payoffs"][1] for r in row) / 2 for row in rec["runs"]]
    assert rec["iterations"][-1]["nash_conv"] == pytest.approx(regret_matching(u2, 20)[1], abs=1e-9)


@pytest.mark.slow
@pytest.mark.timeout(600, func_only=True)  # converting the bundled model is the session fixture's
def test_shipped_tones_config_with_the_bundled_model(tmp_path: Path, bundled_model: Path) -> None:
    """configs/steering/tones.toml as shipped (the bundled SmolLM2 steered, the rational opener), cut to
    one game and one sample per tone: every branch is a SmolLM2 reply judged like any reply."""
    from econarena.hosts.config import load_experiment

    exp = load_experiment(Path(__file__).parent.parent / "configs" / "steering" / "tones.toml")
    doc = exp.raw
    doc = {**doc, "experiment": {**doc["experiment"], "sessions": 1},
           "steer": {**doc["steer"], "samples": 1}, "players": [
               {"agent": "rational", "label": "opener"},
               {"agent": "hf", "label": "negotiator", "max_tokens": 160, "structured": "strict"}]}
    assert run_steer(doc, tmp_path / "out").status == "complete"
    smol = [d for d in lines(tmp_path / "out" / "decisions.jsonl") if d["label"] == "negotiator"]
    assert len(smol) >= 4 and all(d["model"] == "SmolLM2-135M-Instruct" and d["error"] is None for d in smol)
    rec = lines(tmp_path / "out" / "steering.jsonl")[0]
    assert rec["actions"] == ["calm", "assertive", "submissive", "any"] and len(rec["iterations"]) == 20


def test_a_judged_fruit_trade_runs_without_steering(tmp_path: Path) -> None:
    """payoff = "llm" is a property of the game, not of steering: `econarena run` asks the judge too."""
    from econarena.cli import main

    toml = tmp_path / "judged.toml"
    toml.write_text('[experiment]\nname = "judged-run"\ngame = "fruit_trade"\nsessions = 2\nruns = 1\n'
                    '[game]\npayoff = "llm"\n[[players]]\nagent = "rational"\n[[players]]\nagent = "random"\n'
                    '[judge]\nagent = "scripted"\nresponses = ["worth 3 points", "nothing"]\n', encoding="utf-8")
    assert main(["run", str(toml), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    runs = lines(tmp_path / "out" / "runs.jsonl")
    assert len(runs) == 2 and all(r["payoffs"] == [3.0, 0.0] for r in runs)
    assert all(r["extra"]["judge_raw"] == ["worth 3 points", "nothing"] for r in runs)
    assert len(lines(tmp_path / "out" / "judge.jsonl")) == 4
    config = (tmp_path / "out" / "config.toml").read_text(encoding="utf-8")
    assert "[judge]" in config and 'agent = "scripted"' in config


def test_validate_and_dry_run_count_branches(capsys: pytest.CaptureFixture[str]) -> None:
    from econarena.cli import main

    folder = Path(__file__).parent.parent / "configs" / "steering"
    assert main(["validate", str(folder / "tones.toml"), str(folder / "offers.toml")]) == 0
    out = capsys.readouterr().out
    assert "32 session(s) x 4 prompt action(s) x 2 sample(s) = 8 branch runs per session" in out
    assert "32 session(s) x 25 prompt action(s) x 2 sample(s) = 50 branch runs per session" in out
    assert main(["steer", str(folder / "tones.toml"), "--dry-run"]) == 0
    # 32 games x 8 branches x at most 2 decisions per seat; the rational opener makes no API call
    assert "negotiator                     at most 512 LLM calls" in capsys.readouterr().out
