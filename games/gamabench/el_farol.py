"""GAMA-Bench (2): the El Farol Bar, played for K rounds with a report after each.

Rules: each of N players decides, at the same time, to ``go`` to the bar or ``stay`` home. If at most
``ratio`` x N players go (#go / N <= ratio), every goer earns ``max``; otherwise every goer earns ``min``.
A stayer earns ``home`` whatever happens. In ``implicit`` mode a player learns after each round only what
they earned (a stayer learns nothing about the bar); in ``explicit`` mode everyone also learns how many
went and whether the bar was crowded. A reply that breaks a rule is at neither place: it does not count
towards the crowd and earns 0 (parameters keep 0 <= min <= home <= max, so this is never better).

Parameters (defaults as the leaderboard): ``min`` 0, ``max`` 10, ``home`` 5, ``ratio`` 0.6, ``rounds`` 20,
``mode`` "implicit" (the leaderboard's mode) or "explicit".

Score (per run, the reference's): S = mean over rounds of |#go / N - ratio|, score =
(max(ratio, 1 - ratio) - S) / max(ratio, 1 - ratio) x 100. N counts every seat. Invalid replies never
flatter: in a round with m rule-breaking seats and g goers, the round's distance is the larger of
|g / N - ratio| and |(g + m) / N - ratio|, i.e. each breaker counts as whichever of go / stay is worse.

Equilibrium: the symmetric equilibrium is mixed (go with probability ratio), so no equilibrium outcome is
declared and no deviation is measured. The ``rational`` baseline goes with probability ``ratio``, drawn
from the decision's generator (without one it plays a pure equilibrium: the first floor(ratio x N) seats
go); ``random`` goes with probability 1/2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ..base import ActionField, GameInfo, GameParams, ImportedRun, Setup, fmt_num
from ..repeated import RepeatedGame, RepeatedState
from .reference import as_label, reference_choices, reference_meta, replay

CHOICES = ("go", "stay")


class BarParams(GameParams):
    min: float = Field(default=0, ge=0, le=1_000_000)
    """What every goer earns when the bar is crowded."""
    max: float = Field(default=10, ge=0, le=1_000_000)
    """What every goer earns when the bar is not crowded."""
    home: float = Field(default=5, ge=0, le=1_000_000)
    """What a player who stays home earns."""
    ratio: float = Field(default=0.6, ge=0, le=1)
    """The bar is crowded when more than this share of the players go."""
    rounds: int = Field(default=20, ge=1, le=1000)
    """Rounds per run, each with a report."""
    mode: Literal["implicit", "explicit"] = "implicit"
    """`implicit`: a player learns only what it earned (the scored mode); `explicit`: everyone also learns how
    many went."""

    @model_validator(mode="after")
    def _order(self) -> BarParams:
        if not self.min <= self.home <= self.max or self.min == self.max:
            raise ValueError(f"need min <= home <= max and min < max, got min {fmt_num(self.min)}, "
                             f"home {fmt_num(self.home)}, max {fmt_num(self.max)}")
        return self


def crowded(goers: int, n: int, ratio: float) -> bool:
    """More than ``ratio`` of the players went (the reference compares #go / N with the ratio)."""
    return goers / n > ratio


class ElFarolBar(RepeatedGame[BarParams]):
    name: ClassVar[str] = "el_farol_bar"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GAMA-Bench: K rounds of go to the bar or stay home; 0-100 score"
    Params = BarParams
    action_key: ClassVar[str] = "decision"
    history_key: ClassVar[str] = "share of rounds going"
    info: ClassVar[GameInfo] = GameInfo(
        title="El Farol Bar", rounds=True, score=True, family="gamabench",
        reference=(("bar_game_implicit", {"mode": "implicit"}),
                   ("bar_game_explicit", {"mode": "explicit"})), action_axis="share of rounds going",
        equilibrium_note="mixed NE: go with probability ratio (none declared)", round_curve="go_ratio")

    def setup(self, params: BarParams, n_players: int, rng: np.random.Generator) -> Setup:
        return Setup(n_players, params.model_dump())

    def reply_field(self, state: RepeatedState, player: int) -> ActionField:
        return ActionField("decision", "choice", "go to the bar or stay home", choices=CHOICES)

    def round_payoffs(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                      extra: Mapping[str, Any]) -> tuple[float, ...]:
        goer = float(setup["min"] if extra["crowded"] else setup["max"])
        return tuple(0.0 if c is None else goer if c == "go" else float(setup["home"]) for c in choices)

    def round_extra(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                    rng: np.random.Generator | None) -> dict[str, Any]:
        n = setup.n_players
        go = sum(1 for c in choices if c == "go")
        return {"go": go, "stay": sum(1 for c in choices if c == "stay"),
                "invalid": sum(1 for c in choices if c is None), "go_ratio": go / n,
                "crowded": crowded(go, n, setup["ratio"])}

    def round_events(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                     extra: Mapping[str, Any], payoffs: tuple[float, ...]) -> dict[str, Any]:
        return {**extra, "choices": list(choices), "payoffs": list(payoffs)}

    def observation(self, state: RepeatedState, player: int) -> dict[str, Any]:
        s = state.setup
        n = s.n_players
        feedback = ("you learn only what you earned yourself" if s["mode"] == "implicit"
                    else "everyone learns how many players went and whether the bar was crowded, "
                         "and you learn what you earned")
        return {"n_players": n, "rounds": s["rounds"], "round": state.round + 1, "min": fmt_num(s["min"]),
                "max": fmt_num(s["max"]), "home": fmt_num(s["home"]), "ratio_percent": f"{fmt_num(s['ratio'] * 100)}%",
                "max_goers": math.floor(s["ratio"] * n + 1e-9), "feedback": feedback}

    def report(self, before: RepeatedState, after: RepeatedState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any]:
        r = after.round - 1
        s = after.setup
        extra = after.extra[r]
        mine = after.choices[r][player]
        attendance = ""
        if s["mode"] == "explicit":
            verdict = ("more than", "crowded, so going was worse") if extra["crowded"] else \
                ("at most", "pleasant, so going was better")
            attendance = (f"{extra['go']} of the {s.n_players} players went to the bar, which is {verdict[0]} "
                          f"{fmt_num(s['ratio'] * 100)}%: the bar was {verdict[1]} than staying home. ")
        choice = {"go": "went to the bar", "stay": "stayed home"}.get(mine, "gave no valid decision")
        return {"round": r + 1, "attendance": attendance, "your_choice": choice,
                "your_payoff": fmt_num(after.payoffs[r][player])}

    # ---- capabilities ----
    @staticmethod
    def summary_action(values: Sequence[Any]) -> Any:
        """A seat's run in one number: the share of its valid decisions that were ``go``."""
        seen = [v for v in values if v is not None]
        return sum(1 for v in seen if v == "go") / len(seen) if seen else None

    def strategy(self, state: RepeatedState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        if kind == "rational":
            if rng is None:
                return {"decision": "go" if player < math.floor(s["ratio"] * s.n_players + 1e-9) else "stay"}
            return {"decision": "go" if rng.random() < s["ratio"] else "stay"}
        if kind == "random":
            assert rng is not None
            return {"decision": CHOICES[int(rng.integers(2))]}
        return super().strategy(state, player, kind, rng, **kw)

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        counts = []
        for r in rounds:
            acts = r.get("actions", [])
            counts.append((sum(1 for a in acts if a is not None and a.get("decision") == "go"),
                           sum(1 for a in acts if a is None), len(acts)))
        return bar_score(counts, setup["ratio"])

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        meta = reference_meta(raw)
        n, choices = reference_choices(raw, as_label)
        params = BarParams(**{k: meta[k] for k in ("min", "max", "home", "ratio", "mode") if k in meta},
                           rounds=len(choices))
        return replay(self, params, n, choices, raw, (("go_num", "go"),))


def bar_score(counts: Sequence[tuple[int, int, int]], ratio: float) -> float | None:
    """Score from each round's (goers, rule breakers, seats); see the module docstring."""
    dists = []
    for go, bad, n in counts:
        if n:
            dists.append(max(abs(go / n - ratio), abs((go + bad) / n - ratio)))
    if not dists:
        return None
    top = max(ratio, 1 - ratio)
    return (top - math.fsum(dists) / len(dists)) / top * 100
