"""Beauty contest (guess a ratio of the average), as in the EconArena paper, Section 3.1 and B.1.

Rules: n players each choose a real number in [0, upper_bound]. The target is ``ratio`` (default 2/3)
times the mean of the VALID choices. Winners are the valid choices closest to the target; exact ties share
the prize (``prize / #winners`` each, everyone else 0). Invalid choices (unparsable, wrong type, outside
[0, upper_bound]) earn 0 and are left out of the mean. With no valid choice there is no winner.

Parameters: ``upper_bound`` (number or distribution, drawn once per session and redrawn until > 0),
``ratio`` (0 < ratio < 1), ``prize`` (> 0).

Equilibrium: the unique Nash equilibrium is everyone choosing 0; all tie, each earns ``prize / n``.
Deviation from equilibrium: ``|choice - 0| / upper_bound`` (the paper's ratio |pi(a)/pi(a*) - 1| is
undefined at a* = 0, so the distance is normalised by the range instead); undefined for invalid choices.

Paper example: 5 players on [0, 10], four choose 10 and one chooses 0. The mean is 8, the target 16/3,
so the four 10s (distance 14/3) beat the 0 (distance 16/3) and share the prize.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator

from ..base import (
    ActionField,
    ActionSpec,
    Game,
    GameInfo,
    GameParams,
    Outcome,
    Setup,
    draw_param,
    fmt_num,
    validate_param,
)

TIE_TOLERANCE = 1e-9  # relative to the range; absorbs float noise, nothing else


class BeautyContestParams(GameParams):
    upper_bound: Any = 100.0
    """The top of the range of choices [0, upper_bound]: a number or a distribution drawn once per session
    (redrawn until > 0)."""
    ratio: float = Field(default=2 / 3, gt=0, lt=1)
    """The target is this ratio times the mean of the valid choices (0 < ratio < 1)."""
    prize: float = Field(default=100.0, gt=0, le=1e12)
    """Shared equally by the choices closest to the target."""

    @field_validator("upper_bound")
    @classmethod
    def _ub(cls, v: Any) -> Any:
        return validate_param(v, per_player=False, positive=True)


@functools.lru_cache(maxsize=1024)
def _answer_spec(upper: float) -> ActionSpec:
    """A number in [0, upper]: specs are asked for at every decision and repeat, so each is built once."""
    return ActionSpec((ActionField("answer", "number", "the number which you would like to choose", 0.0, upper),))


@dataclass(frozen=True)
class BeautyContestState:
    setup: Setup
    choices: tuple[float | None, ...] | None = None  # None until the single move is made


def winners_of(choices: tuple[float | None, ...], ratio: float, upper: float) -> tuple[tuple[int, ...], float | None]:
    """Winning seats and the target; shared by outcome() and tests so the rule is written once."""
    valid = [c for c in choices if c is not None]
    if not valid:
        return (), None
    target = ratio * float(np.mean(valid))
    dists = [abs(c - target) if c is not None else None for c in choices]
    best = min(d for d in dists if d is not None)
    tol = TIE_TOLERANCE * max(1.0, upper)
    return tuple(i for i, d in enumerate(dists) if d is not None and d - best <= tol), target


class BeautyContest(Game[BeautyContestParams, BeautyContestState]):
    name: ClassVar[str] = "beauty_contest"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "choose a number in [0, upper]; closest to ratio x mean wins the prize"
    Params = BeautyContestParams
    action_key: ClassVar[str] = "answer"
    history_key: ClassVar[str] = "answer"
    info: ClassVar[GameInfo] = GameInfo(
        title="Beauty contest", scale_key="upper_bound", action_axis="chosen number / upper bound",
        equilibrium_note="NE: 0", stakes_key="upper_bound", deviation_note="|choice| / upper",
        policies=("rational", "random", "level_k"), history_extra=("target",))

    def setup(self, params: BeautyContestParams, n_players: int, rng: np.random.Generator) -> Setup:
        upper = draw_param("upper_bound", params.upper_bound, n_players, rng, per_player=False,
                           positive_below=[math.inf])
        if upper <= 0:
            raise ValueError(f"upper_bound drew {upper}, must be > 0")
        return Setup(n_players, {"upper_bound": upper, "ratio": params.ratio, "prize": params.prize})

    def initial_state(self, setup: Setup) -> BeautyContestState:
        return BeautyContestState(setup)

    def to_move(self, state: BeautyContestState) -> tuple[int, ...]:
        return tuple(range(state.setup.n_players)) if state.choices is None else ()

    def action_spec(self, state: BeautyContestState, player: int) -> ActionSpec:
        return _answer_spec(state.setup["upper_bound"])

    def observation(self, state: BeautyContestState, player: int) -> dict[str, Any]:
        s = state.setup
        ratio = s["ratio"]
        words = "two thirds of" if abs(ratio - 2 / 3) < 1e-12 else f"{fmt_num(ratio)} times"
        return {"n_players": s.n_players, "upper_bound": fmt_num(s["upper_bound"]), "prize": fmt_num(s["prize"]),
                "ratio": fmt_num(ratio), "ratio_words": words}

    def apply(self, state: BeautyContestState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> BeautyContestState:
        n = state.setup.n_players
        choices = tuple(None if (a := actions.get(i)) is None else float(a["answer"]) for i in range(n))
        return BeautyContestState(state.setup, choices)

    def outcome(self, state: BeautyContestState) -> Outcome:
        assert state.choices is not None, "outcome() of an unfinished game"
        s = state.setup
        winners, target = winners_of(state.choices, s["ratio"], s["upper_bound"])
        share = s["prize"] / len(winners) if winners else 0.0
        payoffs = tuple(share if i in winners else 0.0 for i in range(s.n_players))
        return Outcome(actions=state.choices, valid=tuple(c is not None for c in state.choices),
                       payoffs=payoffs, winners=winners, void=not winners, extra={"target": target})

    def equilibrium(self, setup: Setup) -> Outcome:
        n = setup.n_players
        share = setup["prize"] / n
        return Outcome(actions=(0.0,) * n, valid=(True,) * n, payoffs=(share,) * n,
                       winners=tuple(range(n)), void=False, extra={"target": 0.0})

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        choice = outcome.actions[player]
        if choice is None:
            return None
        return abs(choice - ne.actions[player]) / setup["upper_bound"]

    def strategy(self, state: BeautyContestState, player: int, kind: str,
                 rng: np.random.Generator | None = None, **kw: Any) -> dict[str, Any]:
        s = state.setup
        if kind == "rational":
            return {"answer": 0.0}
        if kind == "level_k":
            return {"answer": s["upper_bound"] / 2 * s["ratio"] ** int(kw.get("k", 1))}
        if kind == "random":
            assert rng is not None
            return {"answer": float(rng.uniform(0.0, s["upper_bound"]))}
        raise ValueError(f"unknown strategy {kind!r}")
