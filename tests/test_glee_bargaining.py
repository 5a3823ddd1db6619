"""GLEE bargaining: subgame-perfect splits, metrics and prompts against the spec's hand-computed numbers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from econarena.cli import main
from econarena.games import get_game
from econarena.games.base import RULE_VIOLATION
from econarena.games.glee.bargaining import (
    BargainingParams,
    backward_induction,
    bargaining_metrics,
    stationary_share,
)
from econarena.hosts.prompts import Template

sys.path.insert(0, str(Path(__file__).parent))
from rounds_helper import play_turns  # noqa: E402

GAME = get_game("bargaining")


def _setup(**params):
    return GAME.setup(BargainingParams(**params), 2, np.random.default_rng(0))


def _play(setup, replies):
    return play_turns(GAME, setup, replies)


# spec 1.2 table: (delta_A, delta_B, p* for T = infinity, Alice's SPE share for T = 12)
TABLE = [(0.8, 0.8, 0.555556, 0.517378), (0.8, 0.9, 0.357143, 0.307388), (0.8, 0.95, 0.208333, 0.168188),
         (0.9, 0.8, 0.714286, 0.614776), (0.9, 0.9, 0.526316, 0.377669), (0.9, 0.95, 0.344828, 0.210118),
         (0.95, 0.8, 0.833333, 0.672750), (0.95, 0.9, 0.689655, 0.420236), (0.95, 0.95, 0.512821, 0.235713),
         (1, 0.8, 1, 0.737856), (1, 0.9, 1, 0.468559), (1, 0.95, 1, 0.264908), (0.9, 1, 0, 0), (0.8, 1, 0, 0)]


@pytest.mark.parametrize(("da", "db", "pstar", "t12"), TABLE)
def test_spe_shares_match_the_spec_table(da, db, pstar, t12) -> None:
    assert stationary_share(da, db) == pytest.approx(pstar, abs=1e-6)
    assert backward_induction(da, db, 12)[0] == pytest.approx(t12, abs=1e-6)


def test_spe_section_4_numbers() -> None:
    assert stationary_share(0.9, 0.9) == pytest.approx(10 / 19)
    assert stationary_share(0.8, 0.95) == pytest.approx(0.208333, abs=1e-6)
    assert stationary_share(0.95, 0.8) == pytest.approx(0.833333, abs=1e-6)
    assert stationary_share(1, 1) is None
    assert backward_induction(1, 1, 12)[0] == 0  # Bob proposes last and takes all
    # backward induction by hand for T = 3, (0.9, 0.8): x3 = 1, x2 = 1 - 0.9, x1 = 1 - 0.8 * 0.1
    assert backward_induction(0.9, 0.8, 3) == pytest.approx([0.92, 0.1, 1.0])
    assert backward_induction(0.5, 0.5, 1) == [1.0]


@pytest.mark.parametrize(("da", "db", "rounds"), [(0.9, 0.9, 99), (0.8, 0.95, 99), (0.95, 0.8, 99), (1, 0.9, 99),
                                                   (0.9, 0.9, 12), (0.8, 0.8, 12), (1, 0.8, 12), (0.9, 1, 12),
                                                   (0.95, 0.9, 3)])
def test_two_rational_players_reproduce_the_spe_split(da, db, rounds) -> None:
    setup = _setup(money=10_000, delta_alice=da, delta_bob=db, max_rounds=rounds)
    state = GAME.initial_state(setup)
    while movers := GAME.to_move(state):
        seat = movers[0]
        state = GAME.apply(state, {seat: GAME.judge(state, seat, json.dumps(GAME.strategy(state, seat,
                                                                                           "rational"))).action})
    expected = stationary_share(da, db) if rounds > 20 else backward_induction(da, db, rounds)[0]
    assert state.deal is not None and state.deal[0] == 1  # immediate agreement
    assert state.deal[1] / 10_000 == pytest.approx(expected, abs=1e-6)
    out = GAME.outcome(state)
    assert out.payoffs == pytest.approx(GAME.equilibrium(setup).payoffs)


def test_rational_responder_accepts_when_indifferent_and_rejects_below() -> None:
    setup = _setup(money=100, delta_alice=0.9, delta_bob=0.9, max_rounds=99)
    state = GAME.initial_state(setup)
    # Bob's continuation: 0.9 x 100 x 10/19 = 47.368...; an offer of 47.37 is accepted, 47 is not
    for bob, want in ((47.37, "accept"), (47.0, "reject")):
        s = GAME.apply(state, {0: {"alice_gain": 100 - bob, "bob_gain": bob}})
        assert GAME.strategy(s, 1, "rational") == {"decision": want}
    assert GAME.equilibrium(_setup(delta_alice=1.0, delta_bob=1.0)) is None


def test_metrics_unit_case_and_no_deal_readings() -> None:
    m = bargaining_metrics(0.9, 0.8, 3, 0.6, 3)
    assert m["efficiency"] == pytest.approx(0.742) and m["fairness"] == pytest.approx(0.96)
    assert m["self_gain"] == pytest.approx([0.486, 0.256])
    assert bargaining_metrics(0.9, 0.8, None, None, 5) == {"efficiency": 0.0, "fairness": 1.0,
                                                           "self_gain": [0.0, 0.0]}
    code = bargaining_metrics(0.9, 0.8, None, None, 5, "code")
    assert code["efficiency"] == pytest.approx(0.8 ** 4) and code["fairness"] == 0.0
    assert code["self_gain"] == pytest.approx([0.0, 0.8 ** 4])


def test_a_played_run_gives_payoffs_and_metrics() -> None:
    setup = _setup(money=1000, delta_alice=0.9, delta_bob=0.8, max_rounds=12, messages_allowed=True)
    state, log = _play(setup, ['{"alice_gain": 900, "bob_gain": 100, "message": "take it"}', '{"decision": "reject"}',
                               '{"bob_gain": 500, "alice_gain": 500, "message": "fair"}', '{"decision": "reject"}',
                               '{"alice_gain": 600, "bob_gain": 400, "message": "last"}', '{"decision": "accept"}'])
    out = GAME.outcome(state)
    assert out.payoffs == pytest.approx((600 * 0.81, 400 * 0.64)) and out.winners == (0,)
    m = GAME.metrics(setup, log)
    assert m["efficiency"] == pytest.approx(0.742) and m["fairness"] == pytest.approx(0.96)
    assert m["agreement"] and m["rounds"] == 3 and m["alice_share"] == pytest.approx(0.6)
    assert m["first_offer_alice_share"] == pytest.approx(0.9)
    assert log[0]["events"]["say"] == {"player": 0, "message": "take it",
                                       "offer": {"alice_gain": 900.0, "bob_gain": 100.0}}
    assert log[3]["events"]["say"] == {"player": 0, "message": None, "decision": "reject"}


def test_rule_breaks_pass_the_round_and_no_deal_pays_nothing() -> None:
    setup = _setup(money=100, max_rounds=2, metrics="code", delta_bob=0.5)
    state = GAME.initial_state(setup)
    judged = GAME.judge(state, 0, '{"alice_gain": 70, "bob_gain": 20}')
    assert judged.violation == RULE_VIOLATION and "exactly 100" in judged.detail
    state, log = _play(setup, ['{"alice_gain": 70, "bob_gain": 20}', '{"bob_gain": 50, "alice_gain": 50}',
                               "I refuse"])
    assert GAME.is_terminal(state)
    out = GAME.outcome(state)
    assert out.void and out.payoffs == (0.0, 0.0) and out.valid == (False, True)
    m = GAME.metrics(setup, log)
    assert not m["agreement"] and m["rounds"] == 2 and m["first_offer_alice_share"] is None
    assert m["efficiency"] == pytest.approx(0.5) and m["fairness"] == 0.0  # the code's no-deal reading


def test_prompt_golden_lines() -> None:
    """Spec section 4.5: M = 1000, delta_A = 1, delta_B = 0.9, complete information, T = 10, messages."""
    setup = _setup(money=1000, delta_alice=1.0, delta_bob=0.9, max_rounds=10, messages_allowed=True)
    tpl = Template(GAME)
    state = GAME.initial_state(setup)
    rules = tpl.render(state, 0, "melee", "default")[1].content
    assert ("Beware of inflation! With each passing round, the money is worth 0% less for you. "
            "For Bob, the money is worth 10% less.") in rules
    assert "You have 10 rounds to divide the money, or both of you will get nothing!" in rules
    assert '"alice_gain"' not in rules and "- alice_gain: float" in rules and "- message: str" in rules
    bob_rules = tpl.render(state, 1, "melee", "default")[1].content
    assert "Alice proposes in round 1, Bob in round 2" in bob_rules and "For Alice, the money is worth 0% less" \
        in bob_rules
    state = GAME.apply(state, {0: {"alice_gain": 600.0, "bob_gain": 400.0, "message": "hi"}})
    state = GAME.apply(state, {1: {"decision": "reject"}})
    bob_proposes = tpl.follow_up(state, 1, "default")
    assert "inflation" not in bob_proposes.lower() and bob_proposes.index("- bob_gain") < bob_proposes.index("- alice")
    state = GAME.apply(state, {1: {"bob_gain": 500.0, "alice_gain": 500.0, "message": "half"}})
    alice_answers = tpl.follow_up(state, 0, "default")
    assert ("the money Bob gains is worth 10% less than in the first round. The money you gains is worth the same "
            "as in the first round.") in alice_answers
    assert "# Bob's message: half" in alice_answers and "# Your gain: 500" in alice_answers


def test_incomplete_information_hides_the_other_delta() -> None:
    setup = _setup(delta_alice=0.8, delta_bob=0.95, complete_information=False, max_rounds=99)
    obs = GAME.observation(GAME.initial_state(setup), 0)
    assert "20% less for you" in obs["inflation_message"] and "5%" not in obs["inflation_message"]
    assert "You don't know how the inflation affects Bob" in obs["inflation_message"]
    assert obs["horizon_message"] == ""  # the "infinite" horizon is not announced


def test_cli_run_with_rational_random_and_scripted_players(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("bargaining", [{"agent": "rational"}, {"agent": "rational", "label": "rational-b"}],
                                {"money": 100, "delta_alice": 0.8, "delta_bob": 0.95, "max_rounds": 12},
                                sessions=2, seed=1)
    path = tmp_path / "spe.toml"
    path.write_text(arena.to_toml(doc))
    assert main(["run", str(path), "--out", str(tmp_path / "spe"), "--quiet"]) == 0
    for r in arena.sorted_runs(tmp_path / "spe"):
        assert r["complete"] and r["rounds"] == 2  # an offer and its acceptance
        assert r["metrics"]["alice_share"] == pytest.approx(0.168188, abs=1e-4)
        assert r["deviation"] == [0.0, 0.0]
    doc = arena.experiment_dict("bargaining", [
        {"agent": "random"}, {"agent": "scripted", "responses": ['{"decision": "reject"}', "no idea"]}],
        {"money": 100, "max_rounds": 4, "messages_allowed": True}, sessions=2, seed=2)
    path.write_text(arena.to_toml(doc))
    assert main(["run", str(path), "--out", str(tmp_path / "mixed"), "--quiet"]) == 0
    runs = arena.sorted_runs(tmp_path / "mixed")
    assert len(runs) == 2 and all(r["complete"] for r in runs)
    for r in runs:  # the scripted Bob never accepts and cannot offer: no deal, the paper's no-deal metrics
        assert r["payoffs"] == [0.0, 0.0] and r["metrics"]["fairness"] == 1.0 and r["valid"] == [True, False]
    decisions = arena.read_jsonl(tmp_path / "mixed" / "decisions.jsonl")  # offer, answer; Bob's unusable offer
    assert [d["player"] for d in decisions if d["session"] == 0] == [0, 1, 1, 0, 1, 1]


def test_bob_hears_of_an_unusable_opening_offer() -> None:
    """Bob has not spoken before round 2, so no report reaches him: his request says it instead."""
    setup = _setup(max_rounds=5)
    state, _ = _play(setup, ["no offer today"])
    assert state.round == 2 and GAME.to_move(state) == (1,)
    assert GAME.observation(state, 1)["request"].startswith("Alice made no usable offer in round 1.\nRound 2")
    state, _ = _play(setup, ['{"alice_gain": 1, "bob_gain": 9999}', '{"decision": "reject"}'])
    assert GAME.observation(state, 1)["request"].startswith("Round 2")
