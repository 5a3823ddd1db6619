"""A symmetric 3x3 effort game with capitalised choices, and versions of it that break the contract.

Rules: two players choose an effort ``L``, ``M`` or ``H`` at once (reply key ``effort``). The row player
earns ``PAYOFF[own][other]``; an unusable reply is played as ``L`` and marks the seat invalid.
Parameters: ``bonus`` b (0) added to every payoff.
Equilibrium: ``M`` strictly dominates (against L: 3 > 2, 1; against M: 4 > 1, 3; against H: 6 > 3, 5), so
(M, M) is the unique equilibrium and pays 4 + b each. ``WrongEffort`` declares (H, H) with its payoff 5 + b
and a rational baseline that plays H: M against H earns 6 + b, a gain of 1. ``NanEffort`` pays NaN when
both play H; ``HugeEffort`` pays 1e200 then, beyond its declared bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from econarena.games.base import ActionField, ActionSpec, Game, GameInfo, GameParams, Outcome, Setup

CHOICES = ("L", "M", "H")
PAYOFF = {"L": {"L": 2.0, "M": 1.0, "H": 3.0}, "M": {"L": 3.0, "M": 4.0, "H": 6.0},
          "H": {"L": 1.0, "M": 3.0, "H": 5.0}}


class EffortParams(GameParams):
    bonus: float = Field(default=0.0, ge=0, le=100)
    """b: added to every payoff."""


@dataclass(frozen=True)
class State:
    setup: Setup
    chosen: tuple[str | None, ...] | None = None


class Effort(Game):
    name: ClassVar[str] = "effort"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "A symmetric 3x3 effort game"
    Params = EffortParams
    action_key: ClassVar[str] = "effort"
    history_key: ClassVar[str] = "effort"
    info: ClassVar[GameInfo] = GameInfo(title="Effort 3x3", family="own", n_players=2, action_axis="effort level")
    played: ClassVar[str] = "M"  # what the rational baseline plays and the equilibrium declares

    def setup(self, params: EffortParams, n_players: int, rng: np.random.Generator) -> Setup:
        if n_players != 2:
            raise ValueError(f"two players, got {n_players}")
        return Setup(2, params.model_dump())

    def initial_state(self, setup: Setup) -> State:
        return State(setup)

    def to_move(self, state: State) -> tuple[int, ...]:
        return (0, 1) if state.chosen is None else ()

    def action_spec(self, state: State, player: int) -> ActionSpec:
        return ActionSpec((ActionField("effort", "choice", "your effort", choices=CHOICES),))

    def observation(self, state: State, player: int) -> dict[str, Any]:
        return {"bonus": state.setup["bonus"]}

    def apply(self, state: State, actions: Any, rng: np.random.Generator | None = None) -> State:
        return replace(state, chosen=tuple(None if actions.get(i) is None else actions[i]["effort"] for i in (0, 1)))

    def pay(self, a: str, b: str, bonus: float) -> float:
        return PAYOFF[a][b] + bonus

    def outcome(self, state: State) -> Outcome:
        chosen = state.chosen or (None, None)
        moves = [c or "L" for c in chosen]
        pay = tuple(self.pay(moves[i], moves[1 - i], state.setup["bonus"]) for i in (0, 1))
        return Outcome(actions=tuple(None if c is None else float(CHOICES.index(c)) for c in chosen),
                       valid=tuple(c is not None for c in chosen), payoffs=pay,
                       winners=tuple(i for i in (0, 1) if chosen[i] is not None), void=False)

    def payoff_bounds(self, setup: Setup) -> tuple[float, float]:
        return 1.0 + setup["bonus"], 6.0 + setup["bonus"]

    def equilibrium(self, setup: Setup) -> Outcome:
        p = self.pay(self.played, self.played, setup["bonus"])
        x = float(CHOICES.index(self.played))
        return Outcome(actions=(x, x), valid=(True, True), payoffs=(p, p), winners=(0, 1), void=False)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        a = outcome.actions[player]
        return None if a is None else abs(a - ne.actions[player]) / 2

    def strategy(self, state: State, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        if kind == "random" and rng is not None:
            return {"effort": CHOICES[int(rng.integers(3))]}
        if kind == "rational":
            return {"effort": self.played}
        return super().strategy(state, player, kind, rng, **kw)


class WrongEffort(Effort):
    name: ClassVar[str] = "wrong_effort"
    played: ClassVar[str] = "H"


class NanEffort(Effort):
    name: ClassVar[str] = "nan_effort"

    def pay(self, a: str, b: str, bonus: float) -> float:
        return math.nan if a == b == "H" else super().pay(a, b, bonus)


class HugeEffort(Effort):
    name: ClassVar[str] = "huge_effort"

    def pay(self, a: str, b: str, bonus: float) -> float:
        return 1e200 if a == b == "H" else super().pay(a, b, bonus)
