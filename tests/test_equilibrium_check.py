"""``econarena check`` verifies the declared equilibrium: a wrongly declared one fails naming seat, setup,
deviation and gain; a right one passes; a game that says why it cannot be checked is a skip, not a pass."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from econarena.games.base import ActionField, ActionSpec, Game, GameInfo, GameParams, Outcome, Setup
from econarena.games.classic.matching_pennies import MatchingPennies
from econarena.hosts.contract import check_game

# my payoff for (my effort, the other's effort): M is dominant, so (M, M) is the unique equilibrium, paying 4
PAY = {("L", "L"): 1.0, ("L", "M"): 0.0, ("L", "H"): 0.0,
       ("M", "L"): 2.0, ("M", "M"): 4.0, ("M", "H"): 6.0,
       ("H", "L"): 0.0, ("H", "M"): 3.0, ("H", "H"): 5.0}


@dataclass(frozen=True)
class State:
    setup: Setup
    efforts: tuple[str | None, ...] | None = None


class Effort(Game):
    """A symmetric 3x3 effort game.

    Rules: both players pick an effort L, M or H at once and earn the table PAY.
    Parameters: none.
    Equilibrium: M is dominant, so (M, M), paying 4 each.
    Deviation: 1 when the effort is not the equilibrium's, else 0.
    """

    name: ClassVar[str] = "effort"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "a symmetric 3x3 effort game"
    Params = GameParams
    action_key: ClassVar[str] = "effort"
    history_key: ClassVar[str] = "effort"
    info: ClassVar[GameInfo] = GameInfo(title="Effort", family="tests", n_players=2, action_axis="effort")
    declared: ClassVar[str] = "M"

    def setup(self, params: GameParams, n_players: int, rng: np.random.Generator) -> Setup:
        return Setup(2, {})

    def initial_state(self, setup: Setup) -> State:
        return State(setup)

    def to_move(self, state: State) -> tuple[int, ...]:
        return (0, 1) if state.efforts is None else ()

    def action_spec(self, state: State, player: int) -> ActionSpec:
        return ActionSpec((ActionField("effort", "choice", "how hard to work", choices=("L", "M", "H")),))

    def observation(self, state: State, player: int) -> dict[str, Any]:
        return {}

    def apply(self, state: State, actions: Any, rng: np.random.Generator | None = None) -> State:
        return replace(state, efforts=tuple(None if actions.get(i) is None else actions[i]["effort"] for i in (0, 1)))

    def outcome(self, state: State) -> Outcome:
        e = state.efforts or (None, None)
        pay = tuple(0.0 if None in e else PAY[(e[i], e[1 - i])] for i in (0, 1))
        return Outcome(actions=e, valid=tuple(x is not None for x in e), payoffs=pay, winners=(0, 1), void=False)

    def equilibrium(self, setup: Setup) -> Outcome:
        p = PAY[(self.declared, self.declared)]
        return Outcome(actions=(self.declared,) * 2, valid=(True, True), payoffs=(p, p), winners=(0, 1), void=False)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        return float(outcome.actions[player] != ne.actions[player])

    def strategy(self, state: State, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        if kind == "random" and rng is not None:
            return {"effort": ("l", "M", "h")[int(rng.integers(3))]}  # any case is a valid reply
        if kind == "rational":
            return {"effort": self.declared}
        return super().strategy(state, player, kind, rng, **kw)


class WronglyDeclared(Effort):
    declared: ClassVar[str] = "H"  # (H, H) with its true payoff 5; M against H earns 6


class Unchecked(WronglyDeclared):
    equilibrium_unchecked: ClassVar[str | None] = "types are drawn from a continuum"


def _named(game: Game, name: str = "equilibrium survives unilateral deviations") -> Any:
    return next(c for c in check_game(game, seeds=4) if c.name == name)


def test_a_right_equilibrium_passes() -> None:
    c = _named(Effort())
    assert c.ok and not c.skipped, c.detail
    assert c.detail.startswith("no seat gains by a unilateral deviation on 3 drawn setups (18 deviations")


def test_a_wrong_pure_equilibrium_fails_naming_seat_setup_deviation_and_gain() -> None:
    c = _named(WronglyDeclared())
    assert not c.ok
    assert c.detail == ("seed 0, 2 seats: seat 0 gains 1 by playing effort='M' at its decision 1 instead of 'H' "
                        "(earning 6, the equilibrium 5)")


def test_a_declared_reason_is_a_skip_never_a_pass() -> None:
    c = _named(Unchecked())
    assert c.skipped and c.detail == "types are drawn from a continuum"


class EvenPennies(MatchingPennies):
    """Matching pennies declared wrongly as 1/2 heads for both seats (the mismatcher's is B / (A + B) = 1/5)."""

    def mixed_equilibrium(self, setup: Setup) -> tuple[dict[str, float], dict[str, float]]:
        return {"heads": 0.5, "tails": 0.5}, {"heads": 0.5, "tails": 0.5}


def test_a_right_mixed_equilibrium_passes() -> None:
    c = _named(MatchingPennies())
    assert c.ok and not c.skipped and c.detail.startswith("mixed: on 3 drawn setups"), c.detail


def test_a_wrong_mixed_equilibrium_fails_naming_seat_choice_and_gain() -> None:
    # against the mismatcher's 1/2, the matcher's heads earns 4 x 1/2 = 2 in a round, tails 1 x 1/2 = 0.5
    c = _named(EvenPennies())
    assert not c.ok
    assert c.detail == ("seed 0, 2 seats: seat 0: 'tails' is in the support but earns 0.5 against the others' "
                        "mixture, less than 2.0: moving its weight to the best choice gains 1.5")
