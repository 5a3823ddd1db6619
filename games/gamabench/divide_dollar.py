"""GAMA-Bench (3): Divide the Dollar, played for K rounds with a report after each.

Rules: each of N players bids, at the same time, a whole number of golds (0 or more; like the reference
there is no upper limit). If the bids add up to at most ``golds`` (G), every player receives their bid;
otherwise nobody receives anything that round. A reply that breaks a rule (not a whole number, negative)
claims nothing: it adds 0 to the sum and earns 0.

Parameters (defaults as the leaderboard): ``golds`` 100, ``rounds`` 20.

Score (per run, the reference's): S = mean over rounds of |sum of bids - G|, score = max(0, (G - S) / G x 100).
The clip at 0 is applied ONCE to the run, not to each round (clipping per round turns the reference's
1.2 for Mixtral-8x7B into 22.4). Like the reference it is computed on the per-player scale (sum / N against
G / N), which gives the same value and the notebook's rounding. Invalid replies never flatter: a round with
a rule-breaking reply counts a distance of at least G (as far off as a table that claimed nothing), i.e.
max(|sum of valid bids - G|, G).

Equilibrium: every split that sums to exactly G is one (raising a bid voids everything, lowering it loses
the difference); the declared one is the even split, floor(G / N) each with the remainder going one gold
each to the lowest seats, which the ``rational`` baseline plays. ``random`` bids uniformly from 0 to G.
Deviation: |mean bid - equilibrium bid| / G.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from ..base import ActionField, GameInfo, GameParams, ImportedRun, Outcome, Setup, fmt_num
from ..repeated import RepeatedGame, RepeatedState
from .reference import as_int, reference_choices, reference_meta, replay


class DollarParams(GameParams):
    golds: int = Field(default=100, ge=1, le=1_000_000_000)
    """G: if the bids add up to at most G, everyone receives their bid; otherwise nobody receives anything."""
    rounds: int = Field(default=20, ge=1, le=1000)
    """Rounds per run, each with a report."""


class DivideDollar(RepeatedGame[DollarParams]):
    name: ClassVar[str] = "divide_dollar"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GAMA-Bench: K rounds of bidding for a share of G golds; 0-100 score"
    Params = DollarParams
    action_key: ClassVar[str] = "bid_amount"
    history_key: ClassVar[str] = "mean bid"
    info: ClassVar[GameInfo] = GameInfo(
        title="Divide the Dollar", rounds=True, score=True, family="gamabench",
        reference=(("divide_dollar", {}),), action_axis="mean bid / golds",
        scale_key="golds", equilibrium_note="NE: bids summing to golds (even split declared)",
        deviation_note="|mean bid - even split| / golds", round_curve="total")

    def setup(self, params: DollarParams, n_players: int, rng: np.random.Generator) -> Setup:
        return Setup(n_players, params.model_dump())

    def reply_field(self, state: RepeatedState, player: int) -> ActionField:
        return ActionField("bid_amount", "number", "the golds you bid", low=0.0, integer=True)

    def round_extra(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                    rng: np.random.Generator | None) -> dict[str, Any]:
        total = sum(c for c in choices if c is not None)  # exact: bids are Python ints of any size
        return {"total": total, "invalid": sum(1 for c in choices if c is None),
                "paid": total <= setup["golds"]}

    def round_payoffs(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                      extra: Mapping[str, Any]) -> tuple[float, ...]:
        return tuple(float(c) if extra["paid"] and c is not None else 0.0 for c in choices)

    def round_events(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                     extra: Mapping[str, Any], payoffs: tuple[float, ...]) -> dict[str, Any]:
        return {**extra, "bids": list(choices), "payoffs": list(payoffs)}

    def observation(self, state: RepeatedState, player: int) -> dict[str, Any]:
        s = state.setup
        return {"n_players": s.n_players, "rounds": s["rounds"], "round": state.round + 1, "golds": s["golds"]}

    def report(self, before: RepeatedState, after: RepeatedState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any]:
        r = after.round - 1
        extra = after.extra[r]
        mine = after.choices[r][player]
        return {"round": r + 1, "total": extra["total"],
                "verdict": "did not exceed" if extra["paid"] else "exceeded",
                "your_bid": "nothing valid" if mine is None else str(mine),
                "your_payoff": fmt_num(after.payoffs[r][player])}

    # ---- capabilities ----
    @staticmethod
    def summary_action(values: Sequence[Any]) -> Any:
        """The mean valid bid; exact integer arithmetic, since a bid may be as large as 1e308."""
        seen = [v for v in values if v is not None]
        return sum(seen) / len(seen) if seen else None

    @staticmethod
    def _even_split(golds: int, n: int, player: int) -> int:
        return golds // n + (1 if player < golds % n else 0)

    def equilibrium(self, setup: Setup) -> Outcome | None:
        n, g, k = setup.n_players, setup["golds"], setup["rounds"]
        bids = tuple(float(self._even_split(g, n, i)) for i in range(n))
        return Outcome(actions=bids, valid=(True,) * n, payoffs=tuple(b * k for b in bids),
                       winners=tuple(range(n)), void=False)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        a = outcome.actions[player]
        return None if a is None else abs(a - ne.actions[player]) / setup["golds"]

    def strategy(self, state: RepeatedState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        if kind == "rational":
            return {"bid_amount": self._even_split(s["golds"], s.n_players, player)}
        if kind == "random":
            assert rng is not None
            return {"bid_amount": int(rng.integers(0, s["golds"] + 1))}
        return super().strategy(state, player, kind, rng, **kw)

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        per_round = []
        for r in rounds:
            acts = r.get("actions", [])
            per_round.append(([a["bid_amount"] for a in acts if a is not None],
                              sum(1 for a in acts if a is None), len(acts)))
        return dollar_score(per_round, setup["golds"])

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        meta = reference_meta(raw)
        n, choices = reference_choices(raw, as_int)
        params = DollarParams(golds=meta.get("golds", 100), rounds=len(choices))
        return replay(self, params, n, choices, raw, (("total_proposal", "total"),))


def dollar_score(per_round: Sequence[tuple[Sequence[int], int, int]], golds: int) -> float | None:
    """Score from each round's (valid bids, rule breakers, seats); see the module docstring.

    Distances are summed as exact integers first: a bid of 1e308 must give 0, not an overflow.
    """
    dists = []
    n_seats = []
    for bids, bad, n in per_round:
        if not n:
            continue
        dist = abs(sum(bids) - golds)
        dists.append(max(dist, golds) if bad else dist)
        n_seats.append(n)
    if not dists:
        return None
    if sum(dists) >= golds * len(dists):  # S >= G: the clip decides, whatever the size
        return 0.0
    # the reference's order: per-player scale, mean over rounds, then the one clip
    s = sum(d / n for d, n in zip(dists, n_seats)) / len(dists)
    share = golds / n_seats[0]
    return max(0.0, (share - s) / share * 100)
