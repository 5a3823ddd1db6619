"""Mixed equilibria: the distance to a mixture, the indifference test, and asymmetric matching pennies
(its equilibrium, deviation and baselines), all against hand-computed values."""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from econarena.games import get_game
from econarena.games.base import Setup
from econarena.games.classic.matching_pennies import MatchingPennies, PenniesParams
from econarena.games.mixed import frequencies, mixed_problems, mixture_problem, total_variation
from econarena.hosts.contract import check_game

GAME = MatchingPennies()


def _setup(**params: float) -> Setup:
    return GAME.setup(PenniesParams(**params), 2, np.random.default_rng(0))


def test_total_variation_by_hand() -> None:
    assert total_variation({"heads": 1.0, "tails": 0.0}, {"heads": 0.2, "tails": 0.8}) == pytest.approx(0.8)
    assert total_variation({"heads": 0.2, "tails": 0.8}, {"heads": 0.2, "tails": 0.8}) == 0.0
    # three choices: 1/2 (|1/2 - 1/3| + |1/2 - 1/3| + |0 - 1/3|) = 1/2 (1/6 + 1/6 + 1/3) = 1/3
    third = {"r": 1 / 3, "p": 1 / 3, "s": 1 / 3}
    assert total_variation({"r": 0.5, "p": 0.5, "s": 0.0}, third) == pytest.approx(1 / 3)
    assert total_variation({"r": 1.0}, {"s": 1.0}) == 1.0  # disjoint supports: the largest distance


def test_frequencies_leave_unusable_moves_out() -> None:
    assert frequencies(["heads", None, "tails", "heads"], ("heads", "tails")) == {"heads": 2 / 3, "tails": 1 / 3}
    assert frequencies([None, None], ("heads", "tails")) is None


@pytest.mark.parametrize("mix, why", [({"heads": 0.5, "tails": 0.6}, "sum to 1.1"), ({"edge": 1.0}, "names 'edge'"),
                                      ({"heads": 1.5, "tails": -0.5}, "is -0.5, not a number >= 0"),
                                      ({"heads": math.nan, "tails": 1.0}, "is nan")])
def test_a_mixture_that_is_no_distribution_is_named(mix: dict[str, float], why: str) -> None:
    assert why in (mixture_problem(mix, ("heads", "tails")) or "")


def test_the_equilibrium_by_hand() -> None:
    # A = 4, B = 1, C = 1, K = 10: the mismatcher shows heads with 1 / (4 + 1) = 0.2; per run the matcher
    # expects 10 x 4 x 1 / 5 = 8, the mismatcher 10 x 1 / 2 = 5
    setup = _setup()
    assert GAME.mixed_equilibrium(setup) == ({"heads": 0.5, "tails": 0.5}, {"heads": 0.2, "tails": 0.8})
    ne = GAME.equilibrium(setup)
    assert ne.actions == (0.5, 0.2) and ne.payoffs == pytest.approx((8.0, 5.0))
    # A = 3, B = 1, C = 2, K = 4: q = 1/4; 4 x 3 x 1 / 4 = 3 and 4 x 2 / 2 = 4
    other = _setup(heads_prize=3, tails_prize=1, mismatch_prize=2, rounds=4)
    assert GAME.mixed_equilibrium(other)[1] == {"heads": 0.25, "tails": 0.75}
    assert GAME.equilibrium(other).payoffs == pytest.approx((3.0, 4.0))
    assert mixed_problems(GAME, setup, GAME.mixed_equilibrium(setup)) == []
    assert mixed_problems(GAME, other, GAME.mixed_equilibrium(other)) == []


def test_a_wrong_mixture_is_refused_naming_seat_choice_and_gain() -> None:
    setup = _setup()
    # the mismatcher at 1/2: the matcher's heads earns 4 x 1/2 = 2, its tails 1 x 1/2 = 0.5, a gain of 1.5
    (problem,) = mixed_problems(GAME, setup, ({"heads": 0.5, "tails": 0.5}, {"heads": 0.5, "tails": 0.5}))
    assert problem.startswith("seat 0: 'tails' is in the support but earns 0.5") and "gains 1.5" in problem
    # a pure matcher (heads) against 0.2: the mismatcher's heads earns 0, its tails 1
    problems = mixed_problems(GAME, setup, ({"heads": 1.0}, {"heads": 0.2, "tails": 0.8}))
    assert any(p.startswith("seat 1: 'heads' is in the support but earns 0.0") and "gains 1.0" in p
               for p in problems)
    # a pure mismatcher (tails) against 1/2: outside its support heads earns 1/2 as well, no more: only the
    # matcher's side breaks (heads earns 0, tails 1 against a mismatcher on tails)
    problems = mixed_problems(GAME, setup, ({"heads": 0.5, "tails": 0.5}, {"tails": 1.0}))
    assert problems and all(p.startswith("seat 0:") for p in problems)


class WrongPennies(MatchingPennies):
    """Declares the mismatcher at 1/2 each (its rational baseline plays that too)."""

    name: ClassVar[str] = "wrong_pennies"

    def mixed_equilibrium(self, setup: Setup) -> tuple[dict[str, float], dict[str, float]]:
        return {"heads": 0.5, "tails": 0.5}, {"heads": 0.5, "tails": 0.5}


def test_check_passes_the_game_and_refuses_a_wrong_mixture() -> None:
    checks = {c.name: c for c in check_game(get_game("matching_pennies"), seeds=5)}
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
    assert "the mixtures' expected values" in checks["equilibrium"].detail  # no drawn run is compared with them
    unilateral = next(c for name, c in checks.items() if "deviation" in name)
    assert unilateral.detail.startswith("mixed:") and not getattr(unilateral, "skipped", False)
    wrong = next(c for c in check_game(WrongPennies(), seeds=5) if c.name == unilateral.name)
    assert not wrong.ok and "seed 0, 2 seats: seat 0: 'tails' is in the support but earns 0.5" in wrong.detail


def test_deviation_is_the_total_variation_of_the_run() -> None:
    setup = _setup(rounds=4)
    state, log = GAME.initial_state(setup), []
    for a, b in (("heads", "tails"), ("heads", "heads"), ("tails", "heads"), ("heads", "tails")):
        actions = {0: {"coin": a}, 1: {"coin": b}}
        new = GAME.apply(state, actions)
        log.append({"events": GAME.events(state, new, actions)})
        state = new
    out, ne = GAME.outcome(state), GAME.equilibrium(setup)
    # matcher: heads 3 of 4 against 1/2 -> 1/4; mismatcher: heads 2 of 4 against 0.2 -> 0.3
    assert out.actions == (0.75, 0.5)
    assert GAME.deviation(setup, out, ne, 0) == pytest.approx(0.25)
    assert GAME.deviation(setup, out, ne, 1) == pytest.approx(0.3)
    # payoffs: round 2 matches on heads (matcher 4), rounds 1, 3, 4 differ (mismatcher 1 each)
    assert out.payoffs == (4.0, 3.0)
    assert GAME.metrics(setup, log) == {"heads_rate": [0.75, 0.5], "payoff": [4.0, 3.0], "match_rate": 0.25,
                                        "invalid_rounds": [0, 0]}


def test_the_rational_baseline_mixes_at_the_equilibrium_frequencies() -> None:
    setup = _setup(rounds=1000)
    state, rng = GAME.initial_state(setup), np.random.default_rng(3)
    while GAME.to_move(state):
        state = GAME.apply(state, {i: GAME.strategy(state, i, "rational", rng=rng) for i in (0, 1)})
    rates = GAME.outcome(state).actions
    # 1000 draws: the standard errors are 0.016 (p = 1/2) and 0.013 (p = 0.2); 3.5 of them either side
    assert abs(rates[0] - 0.5) < 0.056 and abs(rates[1] - 0.2) < 0.045


def test_a_run_logs_the_declared_choices_and_the_deviation(arena, tmp_path: Path) -> None:
    doc = arena.experiment_dict("matching_pennies", [
        {"agent": "scripted", "label": "S", "responses": ['{"coin": "Heads"}']},
        {"agent": "rational"}], {"rounds": 5}, sessions=1, runs=1)
    assert arena.run_experiment(doc, tmp_path).status == "complete"
    (run,) = arena.read_jsonl(tmp_path / "runs.jsonl")
    coins = [r["actions"][1]["coin"] for r in run["round_log"]]
    assert [r["actions"][0] for r in run["round_log"]] == [{"coin": "heads"}] * 5
    assert run["actions"][0] == 1.0 and run["deviation"][0] == pytest.approx(0.5)  # always heads vs 1/2
    heads = coins.count("heads")
    assert run["payoffs"] == [4.0 * heads, 1.0 * (5 - heads)]  # a match is always on heads here
    assert run["deviation"][1] == pytest.approx(abs(heads / 5 - 0.2))
    assert run["ne_payoffs"] == pytest.approx([5 * 4 / 5, 5 / 2])


def test_without_a_generator_the_baselines_give_the_favoured_coin() -> None:
    state = GAME.initial_state(_setup())
    # the matcher's mixture is a tie (heads); the mismatcher's favours tails (0.8)
    assert [GAME.strategy(state, i, "rational") for i in (0, 1)] == [{"coin": "heads"}, {"coin": "tails"}]
    assert GAME.strategy(state, 1, "random") == {"coin": "heads"}


def test_the_indifference_test_names_what_it_cannot_read() -> None:
    setup = _setup()
    assert mixed_problems(GAME, setup, ({"heads": 1.0},)) == ["the mixed equilibrium has 1 mixtures for 2 seats"]
    (bad,) = mixed_problems(GAME, setup, ({"heads": 0.7, "tails": 0.7}, {"heads": 0.2, "tails": 0.8}))
    assert bad.startswith("seat 0: the mixture's probabilities sum to 1.4")
    ultimatum = get_game("ultimatum")  # one proposer moves first: no simultaneous stage game to test
    u = ultimatum.setup(ultimatum.Params(), 2, np.random.default_rng(0))
    (why,) = mixed_problems(ultimatum, u, ({"accept": 1.0}, {"accept": 1.0}))
    assert why.startswith("the mixed-equilibrium test needs every seat to move at once first")
