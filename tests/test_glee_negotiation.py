"""GLEE negotiation: payoffs, the outside option, the truthful baseline and the metrics' two readings."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from econarena.cli import main
from econarena.games import get_game
from econarena.games.base import SCHEMA_ERROR
from econarena.games.glee.negotiation import NegotiationParams, negotiation_metrics
from econarena.hosts.prompts import Template

sys.path.insert(0, str(Path(__file__).parent))
from rounds_helper import play_turns  # noqa: E402

GAME = get_game("negotiation")


def _setup(**params):
    return GAME.setup(NegotiationParams(**params), 2, np.random.default_rng(0))


def _play(setup, replies):
    return play_turns(GAME, setup, replies)


def test_metrics_section_4_numbers() -> None:
    m = negotiation_metrics(0.8, 1.2, 1e4, 11_000)
    assert m["fairness"] == pytest.approx(0.96) and m["efficiency"] == 1.0
    assert m["self_gain"] == pytest.approx([0.3, 0.1])
    m = negotiation_metrics(0.8, 1.2, 1e4, 13_000)
    assert m["fairness"] == pytest.approx(0.64) and m["efficiency"] == 0.0
    assert m["self_gain"] == pytest.approx([0.5, -0.1])
    assert negotiation_metrics(0.8, 1.2, 1e4, 13_000, "code")["efficiency"] == 1.0


def test_efficiency_without_trade_both_readings() -> None:
    # no trade is efficient when the seller values the product at least as much as the buyer
    assert negotiation_metrics(1.2, 0.8, 1e4, None) == {"fairness": 1.0, "efficiency": 1.0, "self_gain": [0.0, 0.0]}
    assert negotiation_metrics(0.8, 1.2, 1e4, None)["efficiency"] == 0.0
    assert negotiation_metrics(1.0, 1.0, 1e4, None)["efficiency"] == 1.0
    assert negotiation_metrics(1.0, 1.0, 1e4, None, "code")["efficiency"] == 1.0
    assert negotiation_metrics(1.0, 1.0, 1e4, 5000, "code")["efficiency"] == 1.0
    assert negotiation_metrics(1.0, 1.0, 1e4, 5000)["efficiency"] == 0.0  # below V_A
    assert negotiation_metrics(1.2, 0.8, 1e4, 10_000, "code")["efficiency"] == 0.0  # traded, should not have


def test_played_run_with_counteroffers_and_acceptance() -> None:
    setup = _setup(seller_value=0.8, buyer_value=1.2, money=10_000, max_rounds=10, messages_allowed=True)
    state, log = _play(setup, ['{"message": "a bargain", "product_price": 13000}', '{"decision": "reject"}',
                               '{"message": "meet me", "product_price": "$9000"}',
                               '{"message": "final", "product_price": 11000}', '{"decision": "accept"}'])
    out = GAME.outcome(state)
    assert out.payoffs == pytest.approx((3000.0, 1000.0)) and out.winners == (0,) and not out.void
    m = GAME.metrics(setup, log)
    assert m["fairness"] == pytest.approx(0.96) and m["efficiency"] == 1.0 and m["agreement"]
    assert m["final_price"] == 11_000 and m["first_offer"] == 13_000 and m["rounds"] == 3
    assert log[2]["events"]["say"] == {"player": 1, "message": None, "price": None}  # "$9000" is not a number
    assert GAME.judge(GAME.initial_state(setup), 0, '{"message": "x", "product_price": "$9000"}').violation \
        == SCHEMA_ERROR


def test_outside_option_ends_without_trade() -> None:
    setup = _setup(seller_value=1.0, buyer_value=1.5, money=100, max_rounds=10)
    state, log = _play(setup, ['{"product_price": 140}', '{"decision": "buy_from_john"}'])
    assert GAME.is_terminal(state) and GAME.outcome(state).payoffs == (0.0, 0.0)
    m = GAME.metrics(setup, log)
    assert m["outside_option"] == 1 and not m["agreement"] and m["efficiency"] == 0.0 and m["fairness"] == 1.0
    # the seller's outside option has its own name; the buyer's is not valid for her
    state = GAME.apply(GAME.initial_state(setup), {0: {"product_price": 120.0}})
    state = GAME.apply(state, {1: {"decision": "reject"}})
    state = GAME.apply(state, {1: {"product_price": 90.0}})
    assert not GAME.judge(state, 0, '{"decision": "buy_from_john"}').valid
    assert GAME.judge(state, 0, '{"decision": "sell_to_john"}').valid


@pytest.mark.parametrize(("fa", "fb", "rounds", "price", "deal_round"), [
    (0.8, 1.2, 1, 8000.0, 1),  # the seller posts V_A, the buyer gains 4000 and accepts
    (1.2, 0.8, 10, None, None),  # no gains from trade: nobody accepts, John in the last round
    (1.0, 1.5, 30, 10_000.0, 1),
])
def test_truthful_baseline(fa, fb, rounds, price, deal_round) -> None:
    setup = _setup(seller_value=fa, buyer_value=fb, money=10_000, max_rounds=rounds)
    state = GAME.initial_state(setup)
    while movers := GAME.to_move(state):
        state = GAME.apply(state, {movers[0]: GAME.strategy(state, movers[0], "rational")})
    assert (state.trade[1] if state.trade else None) == price
    if price is None:
        assert state.round == rounds and state.outside is not None
    assert GAME.equilibrium(setup) is None


def test_prompts_show_values_and_options() -> None:
    setup = _setup(seller_value=0.8, buyer_value=1.2, money=10_000, max_rounds=10, complete_information=False)
    tpl = Template(GAME)
    state = GAME.initial_state(setup)
    alice = tpl.render(state, 0, "melee", "default")[1].content
    assert "worth no less than $8,000 to you" in alice and "You don't know the value of the product to Bob." in alice
    assert "You have 10 rounds to close the deal." in alice and "Round 1\nSend your offer to Bob." in alice
    state = GAME.apply(state, {0: {"product_price": 11_000.0}})
    bob = tpl.render(state, 1, "melee", "default")[1].content
    assert "# The product price will be $11,000." in bob and "(3) buy_from_john: buy the product from John for " \
        "$12,000" in bob
    one = _setup(max_rounds=1)
    text = tpl.render(GAME.initial_state(one), 0, "melee", "default")[1].content
    assert "If Bob rejects the offer, you will sell the product to another buyer, John" in text
    assert "The product is worth $10,000 to Bob." in text and "Round 1" not in text


def test_cli_run_with_rational_random_and_scripted_players(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("negotiation", [
        {"agent": "rational"}, {"agent": "random"},
        {"agent": "scripted", "responses": ['{"product_price": 9500}', '{"decision": "accept"}', "hmm"]}],
        {"seller_value": 0.8, "buyer_value": 1.2, "max_rounds": 10}, environment="rational", players_per_game=2,
        sessions=2, seed=4)
    path = tmp_path / "neg.toml"
    path.write_text(arena.to_toml(doc))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 4 and all(r["complete"] for r in runs)
    for r in runs:
        assert r["ne_payoffs"] is None and set(r["metrics"]) >= {"fairness", "efficiency", "self_gain"}
        if r["labels"][0] == "scripted":  # the truthful buyer accepts 9,500 < 12,000 at once
            assert r["metrics"]["final_price"] == 9500 and r["payoffs"] == [1500.0, 2500.0]


def test_bob_hears_of_an_unusable_opening_offer() -> None:
    setup = _setup(max_rounds=5)
    state, _ = _play(setup, ['{"product_price": -3}'])
    assert state.round == 2 and GAME.observation(state, 1)["request"].startswith(
        "Alice made no usable offer in round 1.\nRound 2")
