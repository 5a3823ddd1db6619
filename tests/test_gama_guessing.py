"""Guess 2/3 of the average (GAMA-Bench game 1): rules and the per-run score against hand-computed values."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from econarena.games import get_game

sys.path.insert(0, str(Path(__file__).parent))
from rounds_helper import play_rounds  # noqa: E402

from econarena.games.gamabench.guessing import GuessingParams, guessing_score

GAME = get_game("guessing_game")


def _play(choices_per_round: list[list[int | None]], **params):
    params_ = GuessingParams(rounds=len(choices_per_round), **params)
    return play_rounds(GAME, params_, "chosen_number", choices_per_round)


def test_round_winners_and_payoffs() -> None:
    # mean 30, target 20: 20 is closest; a broken reply is left out of the mean
    setup, state, log = _play([[10, 20, 60, None]])
    assert log[0]["events"]["mean"] == 30 and log[0]["events"]["target"] == 20
    assert log[0]["events"]["winners"] == [1]
    out = GAME.outcome(state)
    assert out.payoffs == (0.0, 1.0, 0.0, 0.0) and out.valid == (True, True, True, False)


def test_ties_all_win() -> None:
    _, _, log = _play([[30, 10, 10, 30]])  # mean 20, target 13.33: both 10s are closest
    assert log[0]["events"]["winners"] == [1, 2]


@pytest.mark.parametrize("ratio, expected", [(2 / 3, 60.0), (1.0, 80.0), (1.5, 40.0)])
def test_score_branches(ratio: float, expected: float) -> None:
    # round means 50 and 30 -> A = 40, D = 100
    assert guessing_score([[50, 50], [20, 40]], 0, 100, ratio) == pytest.approx(expected)
    setup, _, log = _play([[50, 50], [20, 40]], ratio=ratio)
    assert GAME.score(setup, log) == pytest.approx(expected)


def test_score_with_min_above_zero_code_versus_paper() -> None:
    # A = 60 - 10 = 50, D = 100: the reference computes (110 - 50) / 100; the intended reading (100 - 50) / 100
    assert guessing_score([[60]], 10, 110, 2 / 3, "code") == pytest.approx(60.0)
    assert guessing_score([[60]], 10, 110, 2 / 3, "paper") == pytest.approx(50.0)


def test_rounds_without_valid_numbers_are_left_out() -> None:
    assert guessing_score([[], [30]], 0, 100, 2 / 3) == pytest.approx(70.0)
    assert guessing_score([[], []], 0, 100, 2 / 3) is None


def test_whole_numbers_only_and_bounds_are_rules() -> None:
    setup = GAME.setup(GuessingParams(), 3, np.random.default_rng(0))
    state = GAME.initial_state(setup)
    assert GAME.judge(state, 0, '{"chosen_number": 33}').action == {"chosen_number": 33}
    assert GAME.judge(state, 0, '{"chosen_number": 33.5}').violation == "schema_error"
    assert GAME.judge(state, 0, '{"chosen_number": 101}').violation == "rule_violation"


def test_equilibrium_and_rational_play() -> None:
    setup = GAME.setup(GuessingParams(rounds=3), 4, np.random.default_rng(0))
    ne = GAME.equilibrium(setup)
    assert ne is not None and ne.actions == (0.0,) * 4 and ne.payoffs == (3.0,) * 4
    assert GAME.equilibrium(GAME.setup(GuessingParams(ratio=1.0), 4, np.random.default_rng(0))) is None
    state = GAME.initial_state(setup)
    assert GAME.strategy(state, 0, "rational") == {"chosen_number": 0}
