"""Game rules, payoffs, equilibria, parameter draws and reply judging against hand-computed numbers.

Every expected number below is written as a literal worked out by hand (the comment shows the working),
never recomputed with the code under test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from econarena.games import GAMES
from econarena.games.base import PARSE_ERROR, RULE_VIOLATION, SCHEMA_ERROR, draw_param, extract_json
from econarena.games.econarena.auctions import EnglishAuction, SecondPriceAuction
from econarena.games.econarena.contests import BeautyContest

BC, SP, EA = BeautyContest(), SecondPriceAuction(), EnglishAuction()


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------------
# beauty contest

def bc_play(choices: list[float | None], upper: float = 10, ratio: float = 2 / 3, prize: float = 100):
    setup = BC.setup(BC.Params(upper_bound=upper, ratio=ratio, prize=prize), len(choices), rng())
    state = BC.initial_state(setup)
    assert BC.to_move(state) == tuple(range(len(choices)))  # a simultaneous move
    end = BC.apply(state, {i: None if c is None else {"answer": c} for i, c in enumerate(choices)})
    assert BC.is_terminal(end) and BC.to_move(end) == ()
    return setup, BC.outcome(end)


def test_beauty_contest_paper_example_four_tens_win() -> None:
    # [0, 10], four choose 10, one chooses 0: mean 8, target 2/3 * 8 = 16/3.
    # |10 - 16/3| = 14/3 < |0 - 16/3| = 16/3, so the four 10s win and share 100: 25 each.
    _, out = bc_play([10, 10, 10, 10, 0])
    assert out.extra["target"] == pytest.approx(16 / 3)
    assert out.winners == (0, 1, 2, 3)
    assert out.payoffs == pytest.approx((25.0, 25.0, 25.0, 25.0, 0.0))
    assert out.valid == (True,) * 5 and not out.void


def test_beauty_contest_single_winner_takes_the_prize() -> None:
    # [1, 4, 10]: mean 5, target 10/3; distances 7/3, 2/3, 20/3 -> seat 1 alone.
    _, out = bc_play([1, 4, 10])
    assert out.winners == (1,)
    assert out.payoffs == pytest.approx((0.0, 100.0, 0.0))


def test_beauty_contest_exact_tie_between_different_choices_shares() -> None:
    # [0, 4, 5]: mean 3, target 2; distances 2, 2, 3 -> seats 0 and 1 share 100: 50 each.
    _, out = bc_play([0, 4, 5])
    assert out.extra["target"] == pytest.approx(2.0)
    assert out.winners == (0, 1)
    assert out.payoffs == pytest.approx((50.0, 50.0, 0.0))


def test_beauty_contest_invalid_choice_left_out_of_the_mean_and_earns_nothing() -> None:
    # Seat 0 broke a rule. Valid [10, 10, 10, 0]: mean 7.5, target 5; every valid seat is 5 away, so all
    # four share 100 (25 each). Had seat 0 counted as 0, the target would be 4 and the 0 alone would win.
    _, out = bc_play([None, 10, 10, 10, 0])
    assert out.extra["target"] == pytest.approx(5.0)
    assert out.winners == (1, 2, 3, 4)
    assert out.payoffs == pytest.approx((0.0, 25.0, 25.0, 25.0, 25.0))
    assert out.valid == (False, True, True, True, True)
    assert out.actions[0] is None


def test_beauty_contest_no_valid_choice_no_winner() -> None:
    _, out = bc_play([None, None, None])
    assert out.winners == () and out.void
    assert out.payoffs == (0.0, 0.0, 0.0)
    assert out.extra["target"] is None


def test_beauty_contest_ratio_parameter() -> None:
    # ratio 1/2, [1, 3, 8]: mean 4, target 2; distances 1, 1, 6 -> seats 0 and 1 share a prize of 60.
    _, out = bc_play([1, 3, 8], ratio=0.5, prize=60)
    assert out.extra["target"] == pytest.approx(2.0)
    assert out.winners == (0, 1)
    assert out.payoffs == pytest.approx((30.0, 30.0, 0.0))


def test_beauty_contest_equilibrium_and_deviation() -> None:
    setup, out = bc_play([2.5, 10, 0, 5], upper=10, prize=100)
    ne = BC.equilibrium(setup)
    assert ne.actions == (0.0, 0.0, 0.0, 0.0)
    assert ne.payoffs == pytest.approx((25.0, 25.0, 25.0, 25.0))  # prize / n = 100 / 4
    assert ne.winners == (0, 1, 2, 3)
    # |choice - 0| / upper: 2.5/10, 10/10, 0/10, 5/10
    assert [BC.deviation(setup, out, ne, i) for i in range(4)] == pytest.approx([0.25, 1.0, 0.0, 0.5])
    _, broke = bc_play([None, 3], upper=10)
    assert BC.deviation(setup, broke, ne, 0) is None  # undefined for an invalid choice


@pytest.mark.parametrize(("k", "expected"), [(0, 45.0), (1, 30.0), (2, 20.0), (3, 40 / 3)])
def test_beauty_contest_level_k(k: int, expected: float) -> None:
    # upper 90: level 0 picks the middle 45; each level multiplies by 2/3: 30, 20, 13.33...
    setup = BC.setup(BC.Params(upper_bound=90), 3, rng())
    assert BC.strategy(BC.initial_state(setup), 0, "level_k", k=k)["answer"] == pytest.approx(expected)
    assert BC.strategy(BC.initial_state(setup), 0, "rational") == {"answer": 0.0}


def test_beauty_contest_random_strategy_is_legal_and_reproducible() -> None:
    setup = BC.setup(BC.Params(upper_bound=10), 3, rng())
    state = BC.initial_state(setup)
    a = [BC.strategy(state, 0, "random", rng(5))["answer"] for _ in range(3)]
    assert a == [BC.strategy(state, 0, "random", rng(5))["answer"]] * 3
    assert all(0 <= x <= 10 for x in (BC.strategy(state, 0, "random", rng(s))["answer"] for s in range(50)))


# ---------------------------------------------------------------------------------------------------
# second-price sealed-bid auction

def sp_play(bids: list[float | None], values: list[float], assets: float | list[float] = 100, fee: float = 0):
    n = len(bids)
    setup = SP.setup(SP.Params(private_value=values, assets=assets, entrance_fee=fee), n, rng())
    end = SP.apply(SP.initial_state(setup), {i: None if b is None else {"bid": b} for i, b in enumerate(bids)})
    return setup, SP.outcome(end)


def test_second_price_winner_pays_second_highest_bid_paper_example() -> None:
    # The paper's example: assets 100, wins an item worth 60 paying 50 -> final asset 100 - 50 + 60 = 110.
    _, out = sp_play([70, 50, 20], values=[60, 55, 30])
    assert out.winners == (0,)
    assert out.extra["price"] == 50.0
    assert out.payoffs == (110.0, 100.0, 100.0)
    assert not out.void


def test_second_price_overbidding_winner_can_lose_money() -> None:
    # Seat 1 bids 90 with value 40, seat 0 bids 80: seat 1 pays 80 -> 100 - 80 + 40 = 60.
    _, out = sp_play([80, 90, 10], values=[70, 40, 5])
    assert out.winners == (1,)
    assert out.payoffs == (100.0, 60.0, 100.0)


def test_second_price_tie_goes_to_lowest_id_and_price_is_the_tied_bid() -> None:
    # Seats 1 and 2 both bid 50: seat 1 wins and pays the second-highest bid, 50: 100 - 50 + 55 = 105.
    _, out = sp_play([10, 50, 50], values=[20, 55, 60])
    assert out.winners == (1,)
    assert out.extra["price"] == 50.0
    assert out.payoffs == (100.0, 105.0, 100.0)


def test_second_price_fewer_than_two_valid_bids_is_void() -> None:
    _, out = sp_play([None, 50, None], values=[20, 55, 60], fee=5)
    assert out.void and out.winners == ()
    assert out.extra["price"] is None
    assert out.payoffs == (95.0, 100.0, 95.0)  # the rule breakers lose the entrance fee of 5
    assert out.valid == (False, True, False)


def test_second_price_rule_breaker_has_no_bid_and_pays_the_fee() -> None:
    # Seat 0 broke a rule (its 95 never counts); valid bids 40 and 30: seat 1 wins, pays 30.
    # Seat 0: 100 - 7 = 93; seat 1: 100 - 30 + 45 = 115; seat 2: 100.
    _, out = sp_play([None, 40, 30], values=[90, 45, 35], fee=7)
    assert out.winners == (1,)
    assert out.payoffs == (93.0, 115.0, 100.0)
    assert out.actions == (None, 40.0, 30.0)


def test_second_price_equilibrium_worked_example() -> None:
    # values 60, 45, 30 with assets 100: everyone bids its value; seat 0 wins and pays 45:
    # NE assets A + v_max - v_second = 100 + 60 - 45 = 115 for seat 0, 100 for the others.
    setup, out = sp_play([70, 50, 20], values=[60, 45, 30])
    ne = SP.equilibrium(setup)
    assert ne.actions == (60.0, 45.0, 30.0)
    assert ne.payoffs == (115.0, 100.0, 100.0)
    assert ne.winners == (0,)
    # played: seat 0 wins at 50 -> 110. Deviation |110/115 - 1| = 5/115 = 1/23; the others 0.
    assert out.payoffs == (110.0, 100.0, 100.0)
    assert [SP.deviation(setup, out, ne, i) for i in range(3)] == pytest.approx([1 / 23, 0.0, 0.0])


def test_second_price_equilibrium_per_player_assets_and_tied_values() -> None:
    # assets 200 and 50; equal values 40: the lowest id wins and pays 40 -> 200 - 40 + 40 = 200.
    setup = SP.setup(SP.Params(private_value=[40, 40], assets=[200, 50]), 2, rng())
    ne = SP.equilibrium(setup)
    assert ne.winners == (0,)
    assert ne.payoffs == (200.0, 50.0)


def test_second_price_strategies() -> None:
    setup = SP.setup(SP.Params(private_value=[60, 45], assets=[100, 80]), 2, rng())
    state = SP.initial_state(setup)
    assert SP.strategy(state, 1, "rational") == {"bid": 45.0}
    assert SP.strategy(state, 1, "level_k", k=2) == {"bid": 45.0}
    bids = [SP.strategy(state, 1, "random", rng(s))["bid"] for s in range(50)]
    assert all(0 <= b <= 80 for b in bids) and len(set(bids)) > 40


# ---------------------------------------------------------------------------------------------------
# English (clock) auction

def ea_setup(values: list[float], assets: float | list[float] = 100, *, start: float = 0, inc: float = 10,
             fee: float = 0, max_rounds: int = 200):
    params = EA.Params(private_value=values, assets=assets, start_price=start, increment=inc,
                       entrance_fee=fee, max_rounds=max_rounds)
    return EA.setup(params, len(values), rng())


def ea_play(setup, rounds: list[dict[int, str | None]]):
    """Apply scripted rounds (seat -> "stay" / "drop" / None for a rule break); returns the final state."""
    state = EA.initial_state(setup)
    for moves in rounds:
        assert set(EA.to_move(state)) == set(moves), "script must name exactly the active bidders"
        state = EA.apply(state, {i: None if m is None else {"decision": m} for i, m in moves.items()})
    assert EA.is_terminal(state)
    return state


def test_english_clock_rises_by_increment_and_a_drop_is_final() -> None:
    setup = ea_setup([60, 50, 30], start=5, inc=10)
    state = EA.initial_state(setup)
    assert EA.observation(state, 0)["price"] == "5"
    assert EA.to_move(state) == (0, 1, 2)
    before = state
    state = EA.apply(state, {0: {"decision": "stay"}, 1: {"decision": "stay"}, 2: {"decision": "drop"}})
    assert before.round == 0 and before.active == (True, True, True)  # apply returned a new state
    assert EA.observation(state, 0)["price"] == "15"  # 5 + 1 x 10
    assert EA.to_move(state) == (0, 1)  # seat 2 never moves again
    state = EA.apply(state, {0: {"decision": "stay"}, 1: {"decision": "stay"}})
    assert EA.observation(state, 1)["price"] == "25"
    assert EA.observation(state, 1)["active_others"] == 1


def test_english_single_stayer_wins_at_the_current_price() -> None:
    # start 0, +10: round 1 (price 0) all stay; round 2 (price 10) seat 2 drops; round 3 (price 20)
    # seat 1 drops, seat 0 stays -> seat 0 wins at 20: 100 - 20 + 60 = 140.
    setup = ea_setup([60, 50, 30])
    end = ea_play(setup, [{0: "stay", 1: "stay", 2: "stay"}, {0: "stay", 1: "stay", 2: "drop"},
                          {0: "stay", 1: "drop"}])
    out = EA.outcome(end)
    assert out.winners == (0,)
    assert out.extra["price"] == 20.0
    assert out.extra["rounds"] == 3
    assert out.payoffs == (140.0, 100.0, 100.0)
    assert out.actions == (20.0, 20.0, 10.0)  # winner: price paid; others: their exit price


def test_english_all_remaining_drop_together_lowest_valid_id_wins_at_previous_price() -> None:
    # round 1 (price 0) all stay; round 2 (price 10) all leave: seat 0 broke a rule (not a valid
    # drop), seats 1 and 2 drop -> seat 1 wins at the previous price 0: 100 - 0 + 50 = 150.
    # Seat 0 pays the entrance fee 3: 97.
    setup = ea_setup([60, 50, 30], fee=3)
    end = ea_play(setup, [{0: "stay", 1: "stay", 2: "stay"}, {0: None, 1: "drop", 2: "drop"}])
    out = EA.outcome(end)
    assert out.winners == (1,)
    assert out.extra["price"] == 0.0
    assert out.payoffs == (97.0, 150.0, 100.0)
    assert out.valid == (False, True, True)


def test_english_first_round_all_drop_is_no_sale() -> None:
    setup = ea_setup([60, 50])
    out = EA.outcome(ea_play(setup, [{0: "drop", 1: "drop"}]))
    assert out.void and out.winners == ()
    assert out.payoffs == (100.0, 100.0)


def test_english_staying_above_assets_is_a_rule_break_counted_as_drop_with_fee() -> None:
    # assets 100 and 30, start price 40: seat 1 may not stay at 40 > 30.
    setup = ea_setup([60, 20], assets=[100, 30], start=40, fee=2)
    state = EA.initial_state(setup)
    j = EA.judge(state, 1, '{"decision": "stay"}')
    assert j.violation == RULE_VIOLATION and "above assets" in j.detail
    assert EA.judge(state, 1, '{"decision": "drop"}').valid
    assert EA.judge(state, 0, '{"decision": "stay"}').valid
    # the Host passes None for the broken reply: a drop with the fee; seat 0 is left alone and wins at 40.
    end = EA.apply(state, {0: {"decision": "stay"}, 1: None})
    out = EA.outcome(end)
    assert out.winners == (0,) and out.extra["price"] == 40.0
    assert out.payoffs == (120.0, 28.0)  # 100 - 40 + 60; 30 - 2
    assert out.valid == (True, False)


def test_english_max_rounds_ends_without_a_sale() -> None:
    setup = ea_setup([60, 50], max_rounds=3)
    both = {0: "stay", 1: "stay"}
    end = ea_play(setup, [both, both, both])
    out = EA.outcome(end)
    assert out.void and out.winners == ()
    assert out.extra["rounds"] == 3
    assert out.payoffs == (100.0, 100.0)
    # both were still in at the third clock price: that price is their recorded action, and they are valid
    assert out.actions == (20.0, 20.0) and out.valid == (True, True)


def test_english_equilibrium_on_grid_equals_second_price_outcome() -> None:
    # values 60, 50, 30 are on the grid 0, 10, 20, ...: seat 2 leaves at 30 (30 < 30 is false), seat 1
    # at 50, seat 0 wins at 50 -> 100 + 60 - 50 = 110, exactly the second-price NE.
    setup = ea_setup([60, 50, 30])
    ne = EA.equilibrium(setup)
    assert ne.winners == (0,)
    assert ne.extra["price"] == 50.0
    assert ne.payoffs == (110.0, 100.0, 100.0)
    sp_setup = SP.setup(SP.Params(private_value=[60, 50, 30], assets=100), 3, rng())
    assert SP.equilibrium(sp_setup).payoffs == ne.payoffs


def test_english_equilibrium_off_grid() -> None:
    # values 63, 47, 30, grid step 10: seat 1 stays at 40 (40 < 47) and leaves at 50; seat 0 wins at 50:
    # 100 + 63 - 50 = 113 (the sealed-bid NE would be 100 + 63 - 47 = 116).
    setup = ea_setup([63, 47, 30])
    ne = EA.equilibrium(setup)
    assert ne.winners == (0,) and ne.extra["price"] == 50.0
    assert ne.payoffs == (113.0, 100.0, 100.0)
    # tied top values 50, 50: both leave at 50 together -> seat 0 wins at the previous price 40: 110.
    tied = EA.equilibrium(ea_setup([50, 50, 30]))
    assert tied.winners == (0,) and tied.extra["price"] == 40.0
    assert tied.payoffs == (110.0, 100.0, 100.0)


def test_english_deviation_is_relative_asset_gap() -> None:
    setup = ea_setup([60, 50, 30])
    ne = EA.equilibrium(setup)  # 110, 100, 100
    end = ea_play(setup, [{0: "stay", 1: "stay", 2: "stay"}, {0: "stay", 1: "stay", 2: "drop"},
                          {0: "stay", 1: "drop"}])  # seat 0 wins at 20 -> 140
    out = EA.outcome(end)
    # |140/110 - 1| = 30/110 = 3/11
    assert [EA.deviation(setup, out, ne, i) for i in range(3)] == pytest.approx([3 / 11, 0.0, 0.0])


def test_english_strategies() -> None:
    setup = ea_setup([60, 25], assets=[100, 30], start=20, inc=10)
    state = EA.initial_state(setup)  # price 20
    assert EA.strategy(state, 0, "rational") == {"decision": "stay"}
    assert EA.strategy(state, 1, "rational") == {"decision": "stay"}  # 20 < 25
    state = EA.apply(state, {0: {"decision": "stay"}, 1: {"decision": "stay"}})  # price 30
    assert EA.strategy(state, 1, "rational") == {"decision": "drop"}
    state = EA.apply(state, {0: {"decision": "stay"}, 1: {"decision": "stay"}})  # price 40 > assets 30
    assert all(EA.strategy(state, 1, "random", rng(s)) == {"decision": "drop"} for s in range(20))
    assert {EA.strategy(state, 0, "random", rng(s))["decision"] for s in range(20)} == {"stay", "drop"}


# ---------------------------------------------------------------------------------------------------
# parameter draws

def test_draw_numbers_and_lists() -> None:
    assert draw_param("x", 5, 3, rng(), per_player=False) == 5.0
    assert draw_param("x", 5, 3, rng(), per_player=True) == [5.0, 5.0, 5.0]
    assert draw_param("x", [1, 2, 3], 3, rng(), per_player=True) == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="2 entries but the game has 3 players"):
        draw_param("x", [1, 2], 3, rng(), per_player=True)
    with pytest.raises(ValueError, match="only allowed for per-player"):
        draw_param("x", [1, 2, 3], 3, rng(), per_player=False)


def test_setup_per_player_list_of_wrong_length_is_an_error() -> None:
    with pytest.raises(ValueError, match="private_value"):
        SP.setup(SP.Params(private_value=[10, 20], assets=100), 3, rng())


def test_normal_values_redrawn_into_zero_to_assets() -> None:
    # mean 90, sd 50, assets 100: about 42% of raw draws fall outside (0, 100]; all kept ones are inside.
    params = SP.Params(private_value={"normal": [90, 50]}, assets=100)
    values = [v for s in range(200) for v in SP.setup(params, 5, rng(s))["private_value"]]
    assert all(0 < v <= 100 for v in values)
    assert max(values) > 99 and min(values) < 20  # redrawn, not clipped into a corner
    assert all(round(v, 2) == v for v in values)  # drawn values are rounded to cents


def test_uniform_draws_stay_in_range() -> None:
    params = BC.Params(upper_bound={"uniform": [10, 100]})
    uppers = [BC.setup(params, 3, rng(s))["upper_bound"] for s in range(200)]
    assert all(10 <= u <= 100 for u in uppers)
    assert len(set(uppers)) > 150
    assets = [a for s in range(50) for a in
              SP.setup(SP.Params(private_value=1, assets={"uniform": [500, 600]}), 4, rng(s))["assets"]]
    assert all(500 <= a <= 600 for a in assets) and len(set(assets)) > 150  # one draw per player


def test_draws_are_reproducible_from_the_seed() -> None:
    params = EA.Params(private_value={"normal": [50, 10]}, assets={"uniform": [80, 120]})
    a, b, c = (EA.setup(params, 4, rng(s)).to_dict() for s in (7, 7, 8))
    assert a == b
    assert a != c


def test_auction_values_redrawn_for_any_distribution_and_assets_kept_positive() -> None:
    # uniform values reaching above the assets are redrawn like normal ones; normal assets stay > 0.
    params = SP.Params(private_value={"uniform": [50, 150]}, assets={"uniform": [60, 200]})
    values = []
    for s in range(100):
        setup = SP.setup(params, 5, rng(s))
        assert all(50 <= v <= a for v, a in zip(setup["private_value"], setup["assets"]))
        values += setup["private_value"]
    assert max(values) > 140
    params = SP.Params(private_value={"normal": [5, 5]}, assets={"normal": [50, 40]})  # P(A <= 0) = 11%
    for s in range(100):
        setup = SP.setup(params, 5, rng(s))
        assert all(0 < v <= a for v, a in zip(setup["private_value"], setup["assets"]))


def test_beauty_contest_normal_upper_bound_stays_positive() -> None:
    params = BC.Params(upper_bound={"normal": [20, 20]})
    assert all(BC.setup(params, 3, rng(s))["upper_bound"] > 0 for s in range(200))


def test_impossible_draws_are_errors() -> None:
    with pytest.raises(ValueError, match="never fell"):
        SP.setup(SP.Params(private_value={"uniform": [200, 300]}, assets=100), 2, rng())
    with pytest.raises(ValueError, match="private_value"):
        SP.setup(SP.Params(private_value=[150, 50], assets=100), 2, rng())


@pytest.mark.parametrize("bad", [True, "50", {"normal": [1]}, {"poisson": [1, 2]}, {"uniform": [5, 1]},
                                 {"normal": [50, -1]}, [], [1, "x"], {"normal": [1, 2], "uniform": [1, 2]}])
def test_bad_parameter_specs_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError):
        SP.Params(private_value=bad)


def test_game_params_reject_unknown_keys() -> None:
    for game in GAMES.values():
        with pytest.raises(ValueError, match="bogus"):
            game.Params(bogus=1)


# ---------------------------------------------------------------------------------------------------
# judging replies

@pytest.fixture
def bc_state():
    return BC.initial_state(BC.setup(BC.Params(upper_bound=10), 3, rng()))


@pytest.mark.parametrize(("text", "violation"), [
    ("I choose seven.", PARSE_ERROR),
    ("", PARSE_ERROR),
    ('{"number": 3}', PARSE_ERROR),
    ('{"popular answer": 3}', PARSE_ERROR),
    ("[3]", PARSE_ERROR),
    ('{"answer": "3"}', SCHEMA_ERROR),
    ('{"answer": true}', SCHEMA_ERROR),
    ('{"answer": null}', SCHEMA_ERROR),
    ('{"answer": [3]}', SCHEMA_ERROR),
    ('{"answer": NaN}', SCHEMA_ERROR),
    ('{"answer": Infinity}', SCHEMA_ERROR),
    ('{"answer": 1e400}', SCHEMA_ERROR),
    ('{"answer": 1' + "0" * 400 + "}", SCHEMA_ERROR),  # an int too large for a float
    ('{"answer": 10.5}', RULE_VIOLATION),
    ('{"answer": -0.01}', RULE_VIOLATION),
])
def test_judge_failures(bc_state, text: str, violation: str) -> None:
    j = BC.judge(bc_state, 0, text)
    assert j.violation == violation
    assert j.action is None and not j.valid
    assert j.detail


def test_judge_rule_violation_keeps_the_attempted_action(bc_state) -> None:
    j = BC.judge(bc_state, 0, '{"answer": 11, "reason": "why not"}')
    assert j.violation == RULE_VIOLATION and "outside [0, 10]" in j.detail
    assert j.extras == {"reason": "why not", "attempted": {"answer": 11.0}}


@pytest.mark.parametrize(("text", "answer"), [
    ('{"answer": 3}', 3.0),
    ('{"answer": 0}', 0.0),
    ('{"answer": 10}', 10.0),  # both ends of the range are legal
    ('{"Answer": 2.5}', 2.5),
    ('Sure!\n```json\n{"answer": 4, "reason": "a {nested} brace"}\n```\nGood luck.', 4.0),
    ("```\n{\"answer\": 6}\n```", 6.0),
    ('Average {maybe 50}, so 2/3 of it... first guess {"answer": 9}. Final: {"answer": 2}', 2.0),
    ('Let me think step by step. {"answer": 8}\nOn reflection:\n{"answer": 1, "x": {"y": 1}}', 1.0),
    ('I pick { hmm, a stray brace. Final answer: {"answer": 3}', 3.0),
    ('{"answer": 7} trailing words with a quote " and a brace }', 7.0),
])
def test_judge_valid_replies(bc_state, text: str, answer: float) -> None:
    j = BC.judge(bc_state, 0, text)
    assert j.valid, j.detail
    assert j.action == {"answer": answer}


def test_judge_records_popular_answer_and_other_keys_in_extras(bc_state) -> None:
    text = '{"understanding": "guess 2/3", "popular answer": 5, "answer": 3.3, "reason": "level 1"}'
    j = BC.judge(bc_state, 0, text)
    assert j.valid
    assert j.action == {"answer": 3.3}
    assert j.extras == {"understanding": "guess 2/3", "popular answer": 5, "reason": "level 1"}


def test_judge_choice_fields() -> None:
    setup = ea_setup([60, 50])
    state = EA.initial_state(setup)
    assert EA.judge(state, 0, '{"decision": " STAY "}').action == {"decision": "stay"}
    assert EA.judge(state, 0, '{"decision": "leave"}').violation == SCHEMA_ERROR
    assert EA.judge(state, 0, '{"decision": 1}').violation == SCHEMA_ERROR
    assert EA.judge(state, 0, '{"choice": "stay"}').violation == PARSE_ERROR


def test_judge_auction_bid_range_is_per_player() -> None:
    setup = SP.setup(SP.Params(private_value=[10, 10], assets=[100, 20]), 2, rng())
    state = SP.initial_state(setup)
    assert SP.judge(state, 0, '{"bid": 50}').valid
    j = SP.judge(state, 1, '{"bid": 50}')
    assert j.violation == RULE_VIOLATION and "outside [0, 20]" in j.detail
    assert SP.judge(state, 1, '{"bid": -1}').violation == RULE_VIOLATION


GARBAGE = [
    "{" * 5000, "}" * 5000, "{" * 3000 + "}" * 3000, '{"answer": ' * 2000, "[" * 100_000 + "]" * 100_000,
    '{"a": ' * 5000 + "1" + "}" * 5000, "\x00\xff\ud800", "```json\n{broken\n```", '{"answer": 3',
    '"{"', "{'answer': 3}", "x" * 200_000 + "{", '{"answer": 1e99999}', "{}" * 10_000,
    '{"answer": -1' + "0" * 5000 + "}",
]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_never_crashes(bc_state, text: str) -> None:
    j = BC.judge(bc_state, 0, text)
    assert j.violation in (PARSE_ERROR, SCHEMA_ERROR, RULE_VIOLATION)
    json.dumps(j.extras)  # whatever was kept can be logged


@pytest.mark.parametrize("text", [
    '{"answer": 9, "alt": {"answer": 3}, }',  # a trailing comma: the reply of 9 is no JSON, the 3 inside it is
    '{"plan": {"answer": 3}, "answer": 9 // my final answer\n}',  # a comment
    "{'answer': 9, 'alt': {\"answer\": 3}}",  # single quotes outside
    'I pick { hmm {"answer": 9, "alt": {"answer": 3},}',  # the same after a stray brace
    '```json\n{"answer": 9, "alt": {"answer": 3},}\n```',
])
def test_an_object_inside_a_reply_written_wrong_is_not_the_answer(bc_state, text: str) -> None:
    """The fallback for braces that never close decoded from every "{" and kept an object nested inside the
    real answer when that answer was no JSON: a silent reply of 3 where the model answered 9."""
    j = BC.judge(bc_state, 0, text)
    assert j.violation == PARSE_ERROR and j.action is None, j
    assert BC.judge(bc_state, 0, 'I pick { hmm {"answer": 9, "alt": {"answer": 3}}').action == {"answer": 9.0}


def test_extract_json_prefers_last_object() -> None:
    assert extract_json('{"a": 1} then {"a": 2}') == {"a": 2}
    assert extract_json('```json\n{"a": 1}\n``` and later ```json\n{"a": 2}\n```') == {"a": 2}
    assert extract_json('{"a": {"b": {"c": 1}}}') == {"a": {"b": {"c": 1}}}
    assert extract_json("no json") is None
