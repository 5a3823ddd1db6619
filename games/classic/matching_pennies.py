"""Asymmetric matching pennies, repeated for an announced number of rounds: a game whose only equilibrium
is mixed.

Rules: two players play ``rounds`` (K) rounds and both know K. In every round each shows, at the same time
as the other, ``heads`` or ``tails`` (reply key ``coin``). Seat 0, the matcher, wins when the coins match:
it earns ``heads_prize`` A when both show heads, ``tails_prize`` B when both show tails. Seat 1, the
mismatcher, earns ``mismatch_prize`` C when they differ. The loser of a round earns 0. After each round
both players are told both coins and both round payoffs. A run's payoff is the sum over its rounds. A reply
that cannot be used is played as ``tails`` (the opponent is paid as against tails) and the seat is marked
invalid.

Parameters: ``heads_prize`` A (4), ``tails_prize`` B (1), ``mismatch_prize`` C (1), all above 0 and at
most 1e9; ``rounds`` K (10, from 1 to 1000).

Equilibrium: no pure profile is an equilibrium (whoever loses a round would switch). In the unique one the
mismatcher shows heads with probability q = B / (A + B), which makes the matcher indifferent (heads earns
A q, tails B (1 - q), both A B / (A + B)); the matcher shows heads with probability 1/2, which makes the
mismatcher indifferent (heads and tails both earn C / 2). With the defaults the mismatcher shows heads
1 time in 5: the big prize on heads makes the matcher want heads, so the mismatcher avoids heads, and the
matcher's own mixture does not move at all (it is set by the mismatcher's payoffs). The stage game's
equilibrium is unique, so the repeated game's only subgame-perfect equilibrium plays it in every round
whatever happened before (backward induction). Expected equilibrium payoffs per run: K A B / (A + B) for
the matcher, K C / 2 for the mismatcher. The declared equilibrium actions are the heads probabilities
(1/2, B / (A + B)); ``mixed_equilibrium`` gives the two mixtures.

A run's action per seat is its heads rate: the share of its usable moves that showed heads (None when
none was usable). Deviation: the total variation distance between the seat's empirical frequencies over
the run's rounds and its equilibrium mixture, 1/2 (|f(heads) - s(heads)| + |f(tails) - s(tails)|), which
with two choices is |heads rate - s(heads)| (games/mixed.py). It is 0 only when the seat's frequencies are
the mixture; a seat that always plays heads is 1/2 from the matcher's mixture and 4/5 from the
mismatcher's (defaults). Over few rounds even a perfect mixer deviates by chance: its expected TV over K
rounds is about sqrt(2 s (1 - s) / (pi K)): 0.123 exactly for s = 1/2 and K = 10 (E|X - 5| / 10 for X
binomial(10, 1/2), 1260/1024/10), so compare seats with each other, not one seat with 0.

Metrics per run: ``heads_rate`` and ``payoff`` per seat, ``match_rate`` (share of rounds the coins
matched; 1/2 x 1/5 + 1/2 x 4/5 = 1/2 in equilibrium), ``invalid_rounds`` per seat.

Baselines (policies): ``rational`` draws each round's coin from its equilibrium mixture; ``random`` shows
heads or tails with probability 1/2 each (which for the matcher is its equilibrium mixture). Asked without a
generator (a reference action, no draw), either gives the coin its mixture favours, heads on a tie.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from ..base import ActionField, ActionSpec, Game, GameInfo, GameParams, Outcome, Setup, fmt_num
from ..mixed import frequencies, total_variation

HEADS, TAILS = "heads", "tails"
COINS = (HEADS, TAILS)
MAX_PRIZE = 1e9  # K x prize stays at most 1e12, the contract's largest game number


class PenniesParams(GameParams):
    heads_prize: float = Field(default=4.0, gt=0, le=MAX_PRIZE)
    """A: what the matcher earns when both show heads."""
    tails_prize: float = Field(default=1.0, gt=0, le=MAX_PRIZE)
    """B: what the matcher earns when both show tails."""
    mismatch_prize: float = Field(default=1.0, gt=0, le=MAX_PRIZE)
    """C: what the mismatcher earns when the coins differ."""
    rounds: int = Field(default=10, ge=1, le=1000)
    """K: the announced number of rounds."""


@dataclass(frozen=True)
class PenniesState:
    setup: Setup
    replies: tuple[tuple[str | None, str | None], ...] = ()  # per finished round, each seat's coin (None: unusable)

    @property
    def round(self) -> int:
        return len(self.replies)


def played(reply: str | None) -> str:
    """The coin a reply is played as: an unusable reply (None) shows tails."""
    return HEADS if reply == HEADS else TAILS


def stage_payoffs(table: Mapping[str, Any], a: str, b: str) -> tuple[float, float]:
    """One round's payoffs for the coins ``a`` (the matcher, seat 0) and ``b`` (the mismatcher, seat 1)."""
    if a == b:
        return (float(table["heads_prize"]) if a == HEADS else float(table["tails_prize"])), 0.0
    return 0.0, float(table["mismatch_prize"])


def mixtures(table: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """The equilibrium mixtures: the matcher's 1/2 each, the mismatcher's heads with B / (A + B)."""
    a, b = float(table["heads_prize"]), float(table["tails_prize"])
    q = b / (a + b)
    return {HEADS: 0.5, TAILS: 0.5}, {HEADS: q, TAILS: 1.0 - q}


def equilibrium_payoffs(table: Mapping[str, Any]) -> tuple[float, float]:
    """Expected equilibrium payoffs per run: K A B / (A + B) and K C / 2."""
    a, b, c, k = (float(table["heads_prize"]), float(table["tails_prize"]), float(table["mismatch_prize"]),
                  int(table["rounds"]))
    return k * a * b / (a + b), k * c / 2


class MatchingPennies(Game[PenniesParams, PenniesState]):
    name: ClassVar[str] = "matching_pennies"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "Classic: asymmetric matching pennies, repeated; its only equilibrium is mixed"
    Params = PenniesParams
    action_key: ClassVar[str] = "coin"
    history_key: ClassVar[str] = "heads rate"
    info: ClassVar[GameInfo] = GameInfo(
        title="Matching pennies (asymmetric, repeated)", rounds=True, family="classic", n_players=2,
        action_axis="heads rate",
        equilibrium_note="mixed: matcher heads 1/2, mismatcher heads B/(A+B), every round",
        deviation_note="total variation from the equilibrium mixture", round_curve="match")

    def setup(self, params: PenniesParams, n_players: int, rng: np.random.Generator) -> Setup:
        if n_players != 2:
            raise ValueError(f"{self.name} is a two-player game, got {n_players} players")
        return Setup(2, params.model_dump())

    def initial_state(self, setup: Setup) -> PenniesState:
        return PenniesState(setup)

    def to_move(self, state: PenniesState) -> tuple[int, ...]:
        return () if state.round >= int(state.setup["rounds"]) else (0, 1)

    def action_spec(self, state: PenniesState, player: int) -> ActionSpec:
        return ActionSpec((ActionField("coin", "choice", "the side of the coin you show this round", choices=COINS),))

    def apply(self, state: PenniesState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> PenniesState:
        assert self.to_move(state), "apply() on a finished game"
        a0, a1 = actions.get(0), actions.get(1)
        pair = (None if a0 is None else str(a0["coin"]), None if a1 is None else str(a1["coin"]))
        return replace(state, replies=state.replies + (pair,))

    def outcome(self, state: PenniesState) -> Outcome:
        pays = [stage_payoffs(state.setup.values, played(a), played(b)) for a, b in state.replies]
        totals = tuple(math.fsum(p[i] for p in pays) for i in (0, 1))
        best = max(totals)
        rates = tuple(None if (f := frequencies((r[i] for r in state.replies), COINS)) is None else f[HEADS]
                      for i in (0, 1))
        return Outcome(actions=rates, valid=tuple(all(r[i] is not None for r in state.replies) for i in (0, 1)),
                       payoffs=totals, winners=tuple(i for i in (0, 1) if totals[i] == best) if pays else (),
                       void=False, extra={"rounds": state.round})

    def events(self, before: PenniesState, after: PenniesState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        replies = after.replies[-1]
        coins = [played(x) for x in replies]
        return {"choices": list(replies), "coins": coins, "payoffs": list(stage_payoffs(after.setup.values, *coins)),
                "match": 1.0 if coins[0] == coins[1] else 0.0}

    # ---- prompts ----
    def observation(self, state: PenniesState, player: int) -> dict[str, Any]:
        s = state.setup
        return {"rounds": s["rounds"], "round": state.round + 1, "heads_prize": fmt_num(s["heads_prize"]),
                "tails_prize": fmt_num(s["tails_prize"]), "mismatch_prize": fmt_num(s["mismatch_prize"]),
                "role": "matcher" if player == 0 else "mismatcher",
                "goal": "the coins match" if player == 0 else "the coins differ"}

    def report(self, before: PenniesState, after: PenniesState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any]:
        other = 1 - player
        replies = after.replies[-1]
        coins = [played(x) for x in replies]
        pay = stage_payoffs(after.setup.values, *coins)
        totals = self.outcome(after).payoffs

        def said(seat: int) -> str:
            return coins[seat] if replies[seat] is not None else "no usable reply (played as tails)"

        return {"round": after.round, "your_choice": said(player), "other_choice": said(other),
                "your_payoff": fmt_num(pay[player]), "other_payoff": fmt_num(pay[other]),
                "your_total": fmt_num(totals[player]), "other_total": fmt_num(totals[other])}

    # ---- capabilities ----
    def max_moves(self, params: PenniesParams, n_players: int) -> tuple[int, bool]:
        return int(params.rounds), True

    def payoff_bounds(self, setup: Setup) -> tuple[float, float]:
        k = int(setup["rounds"])
        return 0.0, k * max(float(setup["heads_prize"]), float(setup["tails_prize"]), float(setup["mismatch_prize"]))

    def equilibrium(self, setup: Setup) -> Outcome:
        mix = mixtures(setup.values)
        pay = equilibrium_payoffs(setup.values)
        return Outcome(actions=(mix[0][HEADS], mix[1][HEADS]), valid=(True, True), payoffs=pay,
                       winners=tuple(i for i in (0, 1) if pay[i] == max(pay)), void=False,
                       extra={"rounds": int(setup["rounds"])})

    def mixed_equilibrium(self, setup: Setup) -> tuple[dict[str, float], dict[str, float]]:
        return mixtures(setup.values)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        rate = outcome.actions[player]
        if rate is None:
            return None
        s = ne.actions[player]
        return total_variation({HEADS: rate, TAILS: 1.0 - rate}, {HEADS: s, TAILS: 1.0 - s})

    def strategy(self, state: PenniesState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        if kind not in self.info.policies or not self.to_move(state):
            return super().strategy(state, player, kind, rng, **kw)
        heads = 0.5 if kind == "random" else mixtures(state.setup.values)[player][HEADS]
        if rng is None:  # asked for a reference action without draws: the coin the mixture favours (heads on a tie)
            return {"coin": HEADS if heads >= 0.5 else TAILS}
        return {"coin": HEADS if rng.random() < heads else TAILS}

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return pennies_metrics([r["events"] for r in rounds])


def pennies_metrics(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's metrics from its round events (see the module docstring)."""
    k = len(events)
    rates = [None if (f := frequencies((e["choices"][i] for e in events), COINS)) is None else f[HEADS]
             for i in (0, 1)]
    return {"heads_rate": rates,
            "payoff": [math.fsum(float(e["payoffs"][i]) for e in events) for i in (0, 1)],
            "match_rate": math.fsum(float(e["match"]) for e in events) / k if k else None,
            "invalid_rounds": [sum(1 for e in events if e["choices"][i] is None) for i in (0, 1)]}
