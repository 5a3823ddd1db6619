"""A base for games of K simultaneous rounds with a report after each (GAMA-Bench's games 1-6 use it; any family may).

Every player moves in every round; a round's choices go to ``round_payoffs`` and ``round_events``. The run's
payoff is the sum of the round payoffs, its action per seat the mean (numbers) or last (choices) of the
seat's valid choices, and a seat is valid when none of its replies broke a rule. Subclasses declare one
reply field (``reply_field``) and the per-round rules; the score reads the round log, so runs imported
from other tools are scored by the same code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from .base import ActionField, ActionSpec, Game, Outcome, P, Setup


@dataclass(frozen=True)
class RepeatedState:
    setup: Setup
    round: int = 0
    choices: tuple[tuple[Any, ...], ...] = ()  # per finished round, the value per seat (None: broke a rule)
    payoffs: tuple[tuple[float, ...], ...] = ()
    extra: tuple[Mapping[str, Any], ...] = ()  # per round, what chance or the rules added (events)


class RepeatedGame(Game[P, RepeatedState]):
    """K simultaneous rounds; subclasses supply the one-round rules."""

    rounds_key: ClassVar[str] = "rounds"

    # ---- what a subclass supplies ----
    def reply_field(self, state: RepeatedState, player: int) -> ActionField:
        raise NotImplementedError

    def round_payoffs(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                      extra: Mapping[str, Any]) -> tuple[float, ...]:
        raise NotImplementedError

    def round_extra(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                    rng: np.random.Generator | None) -> dict[str, Any]:
        """Per-round facts beyond the choices (chance, tie-breaks), drawn from the move's generator."""
        return {}

    def round_events(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                     extra: Mapping[str, Any], payoffs: tuple[float, ...]) -> dict[str, Any]:
        return {**extra, "payoffs": list(payoffs)}

    # ---- the protocol ----
    def max_moves(self, params: P, n_players: int) -> tuple[int, bool]:
        return int(getattr(params, self.rounds_key)), True

    def initial_state(self, setup: Setup) -> RepeatedState:
        return RepeatedState(setup)

    def to_move(self, state: RepeatedState) -> tuple[int, ...]:
        if state.round >= state.setup[self.rounds_key]:
            return ()
        return tuple(range(state.setup.n_players))

    def action_spec(self, state: RepeatedState, player: int) -> ActionSpec:
        return ActionSpec((self.reply_field(state, player),))

    def apply(self, state: RepeatedState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> RepeatedState:
        assert self.to_move(state), "apply() on a finished game"
        s = state.setup
        key = self.action_key
        choices = tuple(None if (a := actions.get(i)) is None else a[key] for i in range(s.n_players))
        extra = self.round_extra(s, state.round, choices, rng)
        pay = self.round_payoffs(s, state.round, choices, extra)
        return replace(state, round=state.round + 1, choices=state.choices + (choices,),
                       payoffs=state.payoffs + (pay,), extra=state.extra + (extra,))

    def events(self, before: RepeatedState, after: RepeatedState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        r = after.round - 1
        return self.round_events(after.setup, r, after.choices[r], after.extra[r], after.payoffs[r])

    def outcome(self, state: RepeatedState) -> Outcome:
        n = state.setup.n_players
        totals = tuple(math.fsum(p[i] for p in state.payoffs) for i in range(n))
        valid = tuple(all(c[i] is not None for c in state.choices) for i in range(n))
        best = max(totals) if totals else 0.0
        winners = tuple(i for i, t in enumerate(totals) if t == best) if state.payoffs else ()
        return Outcome(actions=tuple(self.summary_action([c[i] for c in state.choices]) for i in range(n)),
                       valid=valid, payoffs=totals, winners=winners, void=False,
                       extra={"rounds": state.round})



def round_values(rounds: Sequence[Mapping[str, Any]], key: str) -> list[list[Any]]:
    """Per round, the valid values of ``key`` (invalid or missing replies left out)."""
    out = []
    for r in rounds:
        out.append([a[key] for a in r.get("actions", []) if a is not None and a.get(key) is not None])
    return out
