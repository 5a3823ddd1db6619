"""Sealed-bid auction (GAMA-Bench game 6): valuations, winners, prices, the score against hand-computed values."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from econarena.cli import main
from econarena.games import get_game
from econarena.games.gamabench.sealed_bid import SealedBidParams, round_valuations, sealed_bid_score

GAME = get_game("sealed_bid_auction")


def _setup(n: int = 3, **params):
    return GAME.setup(SealedBidParams(**params), n, np.random.default_rng(0))


def _play(setup, bids_per_round, rng=None):
    state = GAME.initial_state(setup)
    log = []
    for r, bids in enumerate(bids_per_round):
        actions = {i: None if b is None else {"bid": b} for i, b in enumerate(bids)}
        after = GAME.apply(state, actions, rng)
        log.append({"round": r, "actions": [actions[i] for i in range(len(bids))],
                    "events": GAME.events(state, after, actions)})
        state = after
    return state, log


def test_valuations_are_the_reference_draw() -> None:
    # random.seed(int) and random.Random(int) seed alike; round k uses seed 42 + k, player i element i
    r = random.Random()
    r.seed(42)
    assert round_valuations(0, 200, 10, 42, 0, 10) == tuple(r.sample(range(0, 210, 10), 10))
    assert round_valuations(0, 200, 10, 42, 0, 10) == (200, 30, 0, 80, 70, 160, 20, 110, 10, 100)
    assert round_valuations(0, 200, 10, 42, 1, 3) == tuple(random.Random(43).sample(range(0, 210, 10), 3))
    setup = _setup(3)
    assert GAME.observation(GAME.initial_state(setup), 0)["valuation"] == 200  # round 0, player 0


def test_first_price_winner_pays_own_bid() -> None:
    setup = _setup(3, rounds=1)  # round 0 valuations (200, 30, 0)
    state, log = _play(setup, [[150, 20, 160]])
    ev = log[0]["events"]
    assert ev["winner"] == 2 and ev["payment"] == 160
    # player 2 values the item at 0 and paid 160: utility -160 (an overbid is legal, just bad)
    assert GAME.outcome(state).payoffs == (0.0, 0.0, -160.0)


def test_second_price_winner_pays_second_bid() -> None:
    setup = _setup(3, rounds=1, mode="second")
    state, log = _play(setup, [[150, 20, None]])
    assert log[0]["events"]["winner"] == 0 and log[0]["events"]["payment"] == 20
    assert GAME.outcome(state).payoffs == (180.0, 0.0, 0.0)  # 200 - 20
    assert GAME.outcome(state).valid == (True, True, False)
    _, log = _play(setup, [[150, None, None]])
    assert log[0]["events"]["payment"] == 0  # nobody else bid validly


def test_ties_are_broken_by_the_round_generator() -> None:
    setup = _setup(3, rounds=1)
    winners = {_play(setup, [[90, 90, 10]], np.random.default_rng(s))[1][0]["events"]["winner"] for s in range(20)}
    assert winners == {0, 1}
    assert _play(setup, [[90, 90, 10]])[1][0]["events"]["winner"] == 0  # no generator: lowest id


def test_bids_are_whole_numbers_from_zero() -> None:
    state = GAME.initial_state(_setup(3))
    assert GAME.judge(state, 1, '{"bid": 500}').action == {"bid": 500}  # above the valuation 30: allowed
    assert GAME.judge(state, 1, '{"bid": -5}').violation == "rule_violation"
    assert GAME.judge(state, 1, '{"bid": 1e12}').violation == "rule_violation"
    assert GAME.judge(state, 1, '{"bid": 12.5}').violation == "schema_error"


def test_score_hand_computed() -> None:
    # (v, b): (100, 50) -> 0.5; (0, 0) -> max(0, 0/1) = 0; (40, 60) -> max(0, -0.5) = 0; rule break -> 0
    pairs = [[(100, 50), (0, 0)], [(40, 60), (80, None)]]
    assert sealed_bid_score(pairs, 200) == pytest.approx(0.5 / 4 * 100)
    assert sealed_bid_score(pairs, 200, "paper") == pytest.approx(12.5)
    # Oct-2024 board: mean(v - b) / 200, unclipped; the rule break counts as bidding max(v, 200) = 200
    # (50 + 0 - 20 - 120) / 4 / 200 x 100 = -11.25
    assert sealed_bid_score(pairs, 200, "oct2024") == pytest.approx(-11.25)
    assert sealed_bid_score([], 200) is None


def test_score_from_the_round_log() -> None:
    setup = _setup(3, rounds=2)  # valuations (200, 30, 0), then (10, 90, 40)
    _, log = _play(setup, [[100, 15, 0], [5, 90, None]])
    # terms: 0.5, 0.5, 0 | 0.5, 0, 0 (rule break) -> 1.5 / 6 = 25
    assert GAME.score(setup, log) == pytest.approx(25.0)
    assert GAME.score(setup, json.loads(json.dumps(log))) == pytest.approx(25.0)


def test_equilibrium_second_price_and_rational_bids() -> None:
    setup = _setup(3, rounds=2, mode="second")
    ne = GAME.equilibrium(setup)
    # round 0 (200, 30, 0): player 0 pays 30 -> 170; round 1 (10, 90, 40): player 1 pays 40 -> 50
    assert ne is not None and ne.payoffs == (170.0, 50.0, 0.0)
    assert GAME.equilibrium(_setup(3)) is None  # first price: none declared
    state = GAME.initial_state(_setup(10))
    assert GAME.strategy(state, 0, "rational") == {"bid": 180}  # floor(9/10 x 200)
    assert GAME.strategy(state, 1, "rational") == {"bid": 27}  # floor(9/10 x 30)


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match="interval"):
        SealedBidParams(interval=7)
    with pytest.raises(ValueError):
        SealedBidParams(rounds=10**12)
    with pytest.raises(ValueError, match="distinct valuations"):
        GAME.setup(SealedBidParams(valuation_max=20), 4, np.random.default_rng(0))


def test_from_reference_tiny_file() -> None:
    raw = {"meta": {"player_num": 2, "valuation_min": 0, "valuation_max": 200, "interval": 10, "seed": 44,
                    "mode": "second highest bid", "round_id": 2},
           "round_records": [
               {"responses": [150, 20], "valuations": [200, 30], "bid_winner": "player_0",
                "bid_winner_payment": 20, "utility": [180, 0]},
               {"responses": [5, 80], "valuations": [10, 90], "bid_winner": "player_1",
                "bid_winner_payment": 5, "utility": [0, 85]}],
           "player_data": [{"id": "player_0", "records": [150, 5], "utility": [180, 0], "prompt": []},
                           {"id": "player_1", "records": [20, 80], "utility": [0, 85], "prompt": []}]}
    imp = GAME.from_reference(raw)
    assert imp.params["valuation_seed"] == 42 and imp.params["mode"] == "second" and imp.params["rounds"] == 2
    assert imp.payoffs == [180.0, 85.0]
    assert imp.round_log[1]["actions"] == [{"bid": 5}, {"bid": 80}]
    setup = GAME.setup(SealedBidParams(**imp.params), imp.n_players, np.random.default_rng(0))
    # 0.25 + 1/3 + 0.5 + 10/90 -> mean x 100
    assert GAME.score(setup, imp.round_log) == pytest.approx((0.25 + 10 / 30 + 0.5 + 10 / 90) / 4 * 100)
    del raw["meta"]["mode"]
    assert GAME.from_reference(raw).params["mode"] == "first"  # the reference's default


def test_cli_run_with_baselines_and_a_script(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("sealed_bid_auction", [
        {"agent": "rational"}, {"agent": "random"},
        {"agent": "scripted", "responses": ['{"bid": 40}', "I bid nothing"]}],
        params={"rounds": 3, "mode": "second"}, sessions=2, seed=3)
    path = tmp_path / "sba.toml"
    path.write_text(arena.to_toml(doc))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 2 and all(r["complete"] and len(r["round_log"]) == 3 for r in runs)
    assert all(0 <= r["score"] <= 100 for r in runs)
    decisions = arena.read_jsonl(tmp_path / "out" / "decisions.jsonl")
    scripted = [d for d in decisions if d["agent"] == "scripted"]
    # decisions 0, 1, 2 of each session: the script, the garbage (a parse error), the script again
    assert len(scripted) == 6 and sum(d["violation"] == "parse_error" for d in scripted) == 2
    # a conversation: the second round's request carries the first round's report (the scripted seat's: the
    # baselines are sent no prompt)
    later = [d for d in decisions if d["agent"] == "scripted" and d["round"] == 1]
    assert later and all(any("Round 1 result" in m["content"] for m in d["messages"]) for d in later)
    assert all(d["messages"] is None for d in decisions if d["agent"] in ("rational", "random"))
