"""GLEE persuasion: commitment and babbling benchmarks, payoffs, metrics and prompts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from econarena.cli import main
from econarena.games import get_game
from econarena.games.glee.persuasion import (
    PersuasionParams,
    babbling_buys,
    commitment_purchase_rate,
    commitment_q,
    persuasion_metrics,
)
from econarena.hosts.prompts import Template

GAME = get_game("persuasion")


def _setup(**params):
    return GAME.setup(PersuasionParams(**params), 2, np.random.default_rng(0))


@pytest.mark.parametrize(("p", "v", "q", "rate", "babble"), [
    (1 / 3, 1.2, 0.1, 0.4, False), (1 / 3, 1.25, 0.125, 0.416667, False), (1 / 3, 2, 0.5, 0.666667, False),
    (1 / 3, 3, 1, 1, True), (1 / 3, 4, 1, 1, True), (0.5, 1.2, 0.2, 0.6, False), (0.5, 1.25, 0.25, 0.625, False),
    (0.5, 2, 1, 1, True), (0.5, 4, 1, 1, True), (0.8, 1.2, 0.8, 0.96, False), (0.8, 1.25, 1, 1, True),
    (0.8, 4, 1, 1, True)])
def test_commitment_and_babbling_table(p, v, q, rate, babble) -> None:
    assert commitment_q(p, v) == pytest.approx(q, abs=1e-6)
    assert commitment_purchase_rate(p, v) == pytest.approx(rate, abs=1e-6)
    assert babbling_buys(p, v) is babble


def test_metrics_section_4_numbers() -> None:
    m = persuasion_metrics(20, 12, 9, 5, 2.0)
    assert m["efficiency"] == pytest.approx(0.75) and m["fairness"] == pytest.approx(0.625)
    assert m["self_gain"] == pytest.approx([0.6, 0.30])
    assert persuasion_metrics(20, 12, 9, 5, 2.0, reading="code")["self_gain"] == pytest.approx([0.6, 0.20])
    edge = persuasion_metrics(20, 0, 0, 20, 2.0)
    assert edge["efficiency"] is None and edge["fairness"] == 1.0
    assert persuasion_metrics(20, 20, 10, 0, 2.0)["fairness"] is None


def _run(setup, qualities, seller, buyer):
    """Play with chosen qualities: ``seller``/``buyer`` are the replies per round."""
    state = dataclasses.replace(GAME.initial_state(setup), quality=qualities[0])
    log = []
    for t, (a, b) in enumerate(zip(seller, buyer)):
        for seat, action in ((0, a), (1, b)):
            after = GAME.apply(state, {seat: action}, np.random.default_rng(t))
            log.append({"round": len(log), "actions": [action if i == seat else None for i in range(2)],
                        "events": GAME.events(state, after, {seat: action})})
            state = after
        if t + 1 < len(qualities):
            state = dataclasses.replace(state, quality=qualities[t + 1])
    return state, log


def test_hand_played_run_payoffs_and_metrics() -> None:
    setup = _setup(rounds=4, money=100, value_high=2.0, p_high=0.5)
    yes, no = {"decision": "yes"}, {"decision": "no"}
    state, log = _run(setup, ["high", "low", "low", "high"], [yes, yes, no, None], [yes, yes, no, no])
    assert GAME.is_terminal(state)
    out = GAME.outcome(state)
    # sales in rounds 1 and 2: Alice 2; Bob +100 (high) - 100 (low) = 0
    assert out.payoffs == (2.0, 0.0) and out.valid == (False, True) and out.winners == (0,)
    m = GAME.metrics(setup, log)
    # n = 2 high, k = 1 bought, r = 1 low not bought, T = 4
    assert m["efficiency"] == 0.5 and m["fairness"] == 0.5
    assert m["self_gain"] == pytest.approx([0.5, (1 * 1 - 1) / 4])
    assert m["purchase_rate"] == 0.5 and m["recommend_rate"] == pytest.approx(2 / 3)
    assert log[1]["events"] == {"round": 1, "phase": "buyer", "valid": True,
                                "say": {"player": 1, "message": None, "decision": "yes"},
                                "quality": "high", "bought": True, "signal": "yes"}


def test_commitment_play_reaches_the_purchase_rate() -> None:
    setup = _setup(rounds=100, p_high=0.5, value_high=1.25)
    bought = lows = recommended_lows = 0
    for run in range(20):
        rng = np.random.default_rng(run)
        state = GAME.initial_state(setup)
        while movers := GAME.to_move(state):
            seat = movers[0]
            state = GAME.apply(state, {seat: GAME.strategy(state, seat, "rational", rng=rng)}, rng)
        for q, signal, b in state.history:
            bought += b
            assert b == (signal == "yes") and (q == "low" or b)  # obedient; every high product sold
            lows += q == "low"
            recommended_lows += q == "low" and b
    assert bought / 2000 == pytest.approx(0.625, abs=0.04)
    assert recommended_lows / lows == pytest.approx(0.25, abs=0.05)


def test_babbling_buyer_ignores_the_message() -> None:
    for v, want in ((1.25, "no"), (2.0, "yes")):
        setup = _setup(message_type="text", value_high=v)
        state = GAME.apply(GAME.initial_state(setup), {0: {"message": "Best product ever!"}})
        assert GAME.strategy(state, 1, "babbling") == GAME.strategy(state, 1, "rational") == {"decision": want}
    setup = _setup()
    state = GAME.apply(GAME.initial_state(setup), {0: {"decision": "yes"}})
    assert GAME.strategy(state, 1, "rational") == {"decision": "yes"}  # obeys a binary recommendation
    assert GAME.strategy(state, 1, "babbling") == {"decision": "no"}  # 0.5 x 1.25 < 1
    assert GAME.strategy(GAME.initial_state(setup), 0, "babbling") == {"decision": "yes"}


def test_quality_draws_come_from_the_chance_generator() -> None:
    setup = _setup(p_high=0.5, rounds=30)
    ends = []
    for seed in (1, 1, 2):
        rng = np.random.default_rng(seed)
        state = GAME.initial_state(setup)
        while movers := GAME.to_move(state):
            state = GAME.apply(state, {movers[0]: {"decision": "no"}}, rng)
        ends.append([q for q, _, _ in state.history])
    assert ends[0] == ends[1] != ends[2]
    assert ends[0][0] == setup["first_quality"] and {"high", "low"} == set(ends[0])


def test_prompts_seller_buyer_and_myopic_statistics() -> None:
    tpl = Template(GAME)
    setup = _setup(buyer="myopic", message_type="text", complete_information=False, money=100)
    state = dataclasses.replace(GAME.initial_state(setup), quality="low")
    seller = tpl.render(state, 0, "melee", "default")[1].content
    assert "This round's product is low-quality." in seller and "A new potential buyer has arrived!" in seller
    assert "Send the buyer a message" in seller and "You don't know how much a product is worth" in seller
    state = GAME.apply(state, {0: {"message": "Great deal"}})
    buyer = tpl.render(state, 1, "melee", "default")[1].content
    assert "Alice's message: Great deal" in buyer and "no product has been sold yet" in buyer
    assert "worth $125 to you" in buyer
    after = GAME.apply(state, {1: {"decision": "yes"}}, np.random.default_rng(0))
    assert GAME.report(state, after, {1: {"decision": "yes"}}, 1) is None  # the myopic buyer leaves
    assert GAME.report(state, after, {1: {"decision": "yes"}}, 0) == {"what": "The buyer bought the product."}
    after = GAME.apply(after, {0: {"message": "Another one"}})
    assert "Statistics: 1 of the 1 earlier buyers bought" in GAME.observation(after, 1)["request"]
    long = _setup(money=100)
    state = GAME.apply(GAME.initial_state(long), {0: {"decision": "no"}})
    assert "Alice does not recommend you to buy the product." in GAME.observation(state, 1)["request"]


def test_cli_run_with_rational_random_and_scripted_players(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("persuasion", [
        {"agent": "rational"}, {"agent": "random"},
        {"agent": "scripted", "responses": ['{"decision": "yes"}', "maybe"]}],
        {"rounds": 5, "p_high": 0.5, "value_high": 2.0}, environment="rational", players_per_game=2,
        sessions=2, seed=6)
    path = tmp_path / "per.toml"
    path.write_text(arena.to_toml(doc))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 4 and all(r["complete"] and r["rounds"] == 10 for r in runs)
    for r in runs:
        log = r["round_log"]
        sold = sum(e["events"]["bought"] for e in log if e["events"]["phase"] == "buyer")
        assert r["payoffs"][0] == sold and r["metrics"]["purchase_rate"] == sold / 5
        if r["labels"][0] == "scripted":  # seller says yes, then an unusable reply: every other round
            recs = [e["events"]["say"]["recommendation"] for e in log if e["events"]["phase"] == "seller"]
            assert recs == ["yes", None, "yes", None, "yes"] and r["valid"] == [False, True]
            assert sold == 5  # the rational buyer obeys "yes" and, with no signal, buys since 0.5 x 2 >= 1


def test_a_myopic_buyer_starts_a_new_conversation_every_round(arena, tmp_path) -> None:
    """GLEE resets a myopic buyer's chat each round: every buyer decision is a fresh system + request,
    logged from offset 0, while the seller (and a long-living buyer) keep one conversation. (Scripted players:
    they are sent prompts like a model; a strategy baseline is sent none.)"""
    say = {"agent": "scripted", "responses": ['{"decision": "yes", "message": "Buy it."}']}
    for buyer, fresh in (("myopic", True), ("long-living", False)):
        out = tmp_path / buyer
        doc = arena.experiment_dict("persuasion", [{**say, "label": "seller"}, {**say, "label": "buyer"}],
                                    {"rounds": 3, "buyer": buyer}, sessions=1, seed=2)
        assert arena.run_experiment(doc, out).status == "complete"
        decisions = arena.read_jsonl(out / "decisions.jsonl")
        buyer_turns = [d for d in decisions if d["player"] == 1]
        seller_turns = [d for d in decisions if d["player"] == 0]
        assert len(buyer_turns) == 3 and all(d["valid"] for d in decisions)
        assert all((d["messages_from"] == 0 and d["messages"][0]["role"] == "system") == fresh
                   for d in buyer_turns[1:])
        assert all(d["messages_from"] > 0 for d in seller_turns[1:])
