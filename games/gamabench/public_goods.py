"""GAMA-Bench (4): the Public Goods game, played for K rounds with a report after each.

Rules: every round each of N players holds ``tokens`` (T) tokens and puts, at the same time as the others,
a whole number c from 0 to T into a public pot. The pot is multiplied by ``ratio`` (R) and shared equally:
a player's round payoff is T - c + R x (sum of contributions) / N. Holdings reset to T every round (the
leaderboard's ``token_initialization = "fixed"``, ``reset = True``). The reference checks no range, so
contributions above T occur in its files; here c in [0, T] is a rule of the game, but ``from_reference``
imports recorded values as they are. A reply that breaks a rule forfeits the round: it puts nothing in
and earns 0 (every valid reply earns at least 0).

Parameters (defaults as the leaderboard): ``tokens`` 20, ``ratio`` 2, ``rounds`` 20.

Score (per run, the reference's): S = mean over rounds of (sum of contributions) / N, score =
(T - S) / T x 100 (no clip, so imported contributions above T can push it below 0). Invalid replies never
flatter: a rule-breaking seat counts as contributing T, the least rational choice when R < N.

Equilibrium: contribute 0 when R < N (each token put in returns only R / N < 1 to its owner; for R = N any
contribution is a best reply and 0 is declared), everything when R > N. The ``rational`` baseline plays
it; ``random`` contributes uniformly from 0 to T. Deviation: |mean contribution - equilibrium| / T.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from ..base import ActionField, GameInfo, GameParams, ImportedRun, Outcome, Setup, fmt_num
from ..repeated import RepeatedGame, RepeatedState
from .reference import as_int, reference_choices, reference_meta, replay


class GoodsParams(GameParams):
    tokens: int = Field(default=20, ge=1, le=1_000_000)
    """T: each player's tokens every round, of which it puts a whole number into the pot."""
    ratio: float = Field(default=2, ge=0, le=1000)
    """R: the pot is multiplied by R and shared equally."""
    rounds: int = Field(default=20, ge=1, le=1000)
    """Rounds per run, each with a report."""


class PublicGoods(RepeatedGame[GoodsParams]):
    name: ClassVar[str] = "public_goods"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GAMA-Bench: K rounds of contributing to a multiplied public pot; 0-100 score"
    Params = GoodsParams
    action_key: ClassVar[str] = "tokens_contributed"
    history_key: ClassVar[str] = "mean contribution"
    info: ClassVar[GameInfo] = GameInfo(
        title="Public Goods", rounds=True, score=True, family="gamabench",
        reference=(("public_goods", {}),),
        action_axis="mean contribution / tokens", scale_key="tokens",
        equilibrium_note="NE: contribute 0 (when ratio <= N)", deviation_note="|mean contribution - NE| / tokens",
        round_curve="mean_contribution")

    def setup(self, params: GoodsParams, n_players: int, rng: np.random.Generator) -> Setup:
        return Setup(n_players, params.model_dump())

    def reply_field(self, state: RepeatedState, player: int) -> ActionField:
        return ActionField("tokens_contributed", "number", "the tokens you put into the public pot",
                           low=0.0, high=float(state.setup["tokens"]), integer=True)

    def round_extra(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                    rng: np.random.Generator | None) -> dict[str, Any]:
        pot = sum(c for c in choices if c is not None)
        n = setup.n_players
        return {"pot": pot, "share": setup["ratio"] * pot / n, "mean_contribution": pot / n,
                "invalid": sum(1 for c in choices if c is None)}

    def round_payoffs(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                      extra: Mapping[str, Any]) -> tuple[float, ...]:
        return tuple(0.0 if c is None else float(setup["tokens"] - c + extra["share"]) for c in choices)

    def round_events(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                     extra: Mapping[str, Any], payoffs: tuple[float, ...]) -> dict[str, Any]:
        return {**extra, "contributions": list(choices), "payoffs": list(payoffs)}

    def observation(self, state: RepeatedState, player: int) -> dict[str, Any]:
        s = state.setup
        return {"n_players": s.n_players, "rounds": s["rounds"], "round": state.round + 1, "tokens": s["tokens"],
                "ratio": fmt_num(s["ratio"])}

    def report(self, before: RepeatedState, after: RepeatedState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any]:
        r = after.round - 1
        extra = after.extra[r]
        mine = after.choices[r][player]
        return {"round": r + 1,
                "contributions": ", ".join(f"player {i}: {'no valid reply' if c is None else c}"
                                           for i, c in enumerate(after.choices[r])),
                "pot": extra["pot"], "share": fmt_num(extra["share"]),
                "your_contribution": "no valid contribution (you forfeit the round)" if mine is None else str(mine),
                "your_payoff": fmt_num(after.payoffs[r][player]),
                "payoffs": ", ".join(f"player {i}: {fmt_num(p)}" for i, p in enumerate(after.payoffs[r]))}

    # ---- capabilities ----
    @staticmethod
    def _ne_contribution(setup: Setup) -> int:
        return setup["tokens"] if setup["ratio"] > setup.n_players else 0

    def equilibrium(self, setup: Setup) -> Outcome | None:
        n, t, k = setup.n_players, setup["tokens"], setup["rounds"]
        c = self._ne_contribution(setup)
        pay = float(t - c + setup["ratio"] * c) * k  # everyone puts c in: the pot is n c, the share R c
        return Outcome(actions=(float(c),) * n, valid=(True,) * n, payoffs=(pay,) * n,
                       winners=tuple(range(n)), void=False)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        a = outcome.actions[player]
        return None if a is None else abs(a - ne.actions[player]) / setup["tokens"]

    def strategy(self, state: RepeatedState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        if kind == "rational":
            return {"tokens_contributed": self._ne_contribution(s)}
        if kind == "random":
            assert rng is not None
            return {"tokens_contributed": int(rng.integers(0, s["tokens"] + 1))}
        return super().strategy(state, player, kind, rng, **kw)

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        t = setup["tokens"]
        per_round = []
        for r in rounds:
            acts = r.get("actions", [])
            per_round.append([t if a is None else a["tokens_contributed"] for a in acts])
        return goods_score(per_round, t)

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        meta = reference_meta(raw)
        init, reset = meta.get("token_initialization", "fixed"), meta.get("reset", True)
        if init != "fixed" or reset is not True:
            raise ValueError(f"reference result: only token_initialization 'fixed' with reset true is supported, "
                             f"got {init!r} and reset {reset!r}")
        n, choices = reference_choices(raw, as_int)
        params = GoodsParams(tokens=meta.get("tokens", 20), ratio=meta.get("ratio", 2), rounds=len(choices))
        return replay(self, params, n, choices, raw, (("total_tokens", "pot"),))


def goods_score(per_round: Sequence[Sequence[float]], tokens: float) -> float | None:
    """Score from each round's contributions per seat (rule breakers already counted as T)."""
    means = [sum(r) / len(r) for r in per_round if r]
    if not means:
        return None
    s = sum(means) / len(means)
    return (tokens - s) / tokens * 100
