"""NegotiationArena: resource exchange (spec 2.2), RED and BLUE trade goods to end with as many as possible.

Rules: RED holds {X: 25, Y: 5}, BLUE {X: 5, Y: 25}; each knows only its own holdings and the goal "acquire
as many resources as possible". They alternate messages, RED first, 8 messages in all. A message either
accepts the trade proposed in the other's message just before (the game ends and the trade is executed),
proposes a new trade (whole amounts; what RED gives and what BLUE gives) or proposes nothing. The prompt
allows each player at most ``max_proposals`` proposals (3), not enforced, as in the paper. A player may not
offer, nor accept to give, more of a resource than it holds (a rule violation).

Parameters: ``red_resources`` / ``blue_resources`` (resource -> amount), ``turns`` (8), ``max_proposals``
(3), ``metrics`` ("correct" or "paper": the win-rate formula of the aggregation, see
analysis/families/negotiationarena.py).

Payoffs: the change in a player's total count of resources, unweighted: RED gets sum(BLUE gives) - sum(RED
gives), BLUE the opposite (zero-sum); no deal 0 / 0. The winner has the larger change.

Equilibrium: none is declared (counts are zero-sum, so no trade is individually rational for both). The
``rational`` baseline accepts a trade that gains it resources, otherwise asks 2 of its scarce resource for
1 of its abundant one; ``random`` picks uniformly among legal replies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ..base import ActionField, GameInfo, GameParams, Setup, whole_number
from .common import BLUE, FAMILY, PROPOSE, RED, NAState, NegotiationGame, Trade, log_resources, thaw

_RESOURCE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,19}$")


class ExchangeParams(GameParams):
    red_resources: dict[str, int] = Field(default_factory=lambda: {"X": 25, "Y": 5})
    """What RED holds: resource name -> amount."""
    blue_resources: dict[str, int] = Field(default_factory=lambda: {"X": 5, "Y": 25})
    """What BLUE holds: resource name -> amount."""
    turns: int = Field(default=8, ge=2, le=100)
    """Messages in all, RED first."""
    max_proposals: int = Field(default=3, ge=1, le=50)
    """Proposals each player is told it may make (not enforced, as in the paper)."""
    metrics: Literal["correct", "paper"] = "correct"
    """`correct`: our win-rate formula; `paper`: the authors' aggregation."""

    @field_validator("red_resources", "blue_resources")
    @classmethod
    def _resources(cls, v: dict[str, int]) -> dict[str, int]:
        if not 1 <= len(v) <= 6:
            raise ValueError("expected 1 to 6 resources")
        for k, n in v.items():
            if not _RESOURCE.match(k):
                raise ValueError(f"resource name {k!r}: letters, digits and _ only, starting with a letter")
            if not 0 <= n <= 1_000_000:
                raise ValueError(f"{k}: expected an amount from 0 to 1000000, got {n}")
        return v


def _text(res: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in res.items())


class ResourceExchange(NegotiationGame[ExchangeParams]):
    name: ClassVar[str] = "resource_exchange"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "NegotiationArena: two players trade resources by message; more is better"
    Params = ExchangeParams
    log_class: ClassVar[str] = "TradingGame"
    choices: ClassVar[tuple[str, ...]] = ("accept", "propose", "none")
    has_private_values: ClassVar[bool] = True
    info: ClassVar[GameInfo] = GameInfo(
        title="Resource exchange", moves="sequential", rounds=True, messages="public+secret", n_players=2,
        family=FAMILY, action_axis="resource change", round_curve="price",
        equilibrium_note="none declared (zero-sum counts)")

    def setup(self, params: ExchangeParams, n_players: int, rng: np.random.Generator) -> Setup:
        self._two(n_players)
        return Setup(2, params.model_dump())

    def resources(self, setup: Setup) -> tuple[str, ...]:
        return tuple(sorted(set(setup["red_resources"]) | set(setup["blue_resources"])))

    def endowments(self, setup: Setup) -> tuple[dict[str, int], dict[str, int]]:
        return dict(setup["red_resources"]), dict(setup["blue_resources"])

    def trade_fields(self, state: NAState, player: int) -> tuple[ActionField, ...]:
        items = self.resources(state.setup)
        return (ActionField("red_gives", "allocation", "what Player RED gives in your proposed trade (whole "
                            "amounts; only read when decision is propose)", items=items, integer=True,
                            read_when=PROPOSE),
                ActionField("blue_gives", "allocation", "what Player BLUE gives in your proposed trade (whole "
                            "amounts; only read when decision is propose)", items=items, integer=True,
                            read_when=PROPOSE))

    def trade_of(self, setup: Setup, player: int, action: Mapping[str, Any]) -> Trade:
        return {"red_gives": {k: int(v) for k, v in action["red_gives"].items() if v},
                "blue_gives": {k: int(v) for k, v in action["blue_gives"].items() if v}}

    def check(self, state: NAState, player: int, action: dict[str, Any]) -> str | None:
        if action["decision"] == "propose":
            t = self.trade_of(state.setup, player, action)
            if not t["red_gives"] and not t["blue_gives"]:
                return "a proposed trade must move some resources"
        return super().check(state, player, action)

    def payoffs_of(self, setup: Setup, deal: Trade | None) -> tuple[float, float]:
        if deal is None:
            return 0.0, 0.0
        red = float(sum(deal["blue_gives"].values()) - sum(deal["red_gives"].values()))
        return red, 0.0 - red

    def observation(self, state: NAState, player: int) -> dict[str, Any]:
        s = state.setup
        mine = s["red_resources"] if player == RED else s["blue_resources"]
        return {**self.base_observation(state, player), "my_resources": _text(mine),
                "max_proposals": s["max_proposals"], "resource_names": ", ".join(self.resources(s)),
                "role": "start by making a proposal" if player == RED else "start by responding to a trade"}

    def strategy(self, state: NAState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        items = self.resources(state.setup)
        zero = {k: 0 for k in items}
        mine = self.endowments(state.setup)[player]
        if kind == "rational":
            if state.table is not None:
                t = thaw(state.table)
                gain = self.payoffs_of(state.setup, t)[player]
                if gain > 0 and self.feasible(state.setup, t, player) is None:
                    return {"reason": "this trade gains me resources", "message": "Deal.", "decision": "accept",
                            "red_gives": zero, "blue_gives": zero}
            rich = max(items, key=lambda k: (mine.get(k, 0), k))
            poor = min(items, key=lambda k: (mine.get(k, 0), k))
            if mine.get(rich, 0) < 1 or rich == poor:
                return {"reason": "nothing to offer", "message": "No trade.", "decision": "none",
                        "red_gives": zero, "blue_gives": zero}
            give, get = {**zero, rich: 1}, {**zero, poor: 2}
            red, blue = (give, get) if player == RED else (get, give)
            return {"reason": "ask two for one", "message": f"I offer 1 {rich} for 2 {poor}.",
                    "decision": "propose", "red_gives": red, "blue_gives": blue}
        if kind == "random":
            assert rng is not None
            options = ["propose", "none"] + (["accept"] if state.table is not None and self.feasible(
                state.setup, thaw(state.table), player) is None else [])
            d = options[int(rng.integers(len(options)))]
            give = {k: int(rng.integers(0, min(mine.get(k, 0), 10) + 1)) for k in items}
            get = {k: int(rng.integers(0, 11)) for k in items}
            if d == "propose" and not any(give.values()) and not any(get.values()):
                get[items[0]] = 1
            red, blue = (give, get) if player == RED else (get, give)
            return {"reason": "random", "message": f"message {int(rng.integers(100))}", "decision": d,
                    "red_gives": red, "blue_gives": blue}
        return super().strategy(state, player, kind, rng, **kw)

    def params_from_log(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        init = raw["player_initial_resources"]
        turns = whole_number(raw["iterations"], "iterations")
        return {"red_resources": log_resources(init[RED], "player_initial_resources[0]", "bad_parameter"),
                "blue_resources": log_resources(init[BLUE], "player_initial_resources[1]", "bad_parameter"),
                "turns": turns, "max_proposals": max(1, turns // 2 - 1)}

    def action_from_log(self, setup: Setup, seat: int, answer: str, trade: Trade | None, message: str,
                        reason: str) -> dict[str, Any]:
        items = self.resources(setup)
        d = "accept" if answer == "ACCEPT" else "propose" if trade is not None else "none"
        t = trade or {"red_gives": {}, "blue_gives": {}}
        return {"reason": reason, "message": message, "decision": d,
                "red_gives": {k: t["red_gives"].get(k, 0) for k in items},
                "blue_gives": {k: t["blue_gives"].get(k, 0) for k in items}}

    def recorded_payoffs(self, setup: Setup, delta: Sequence[Mapping[str, int]], accepted: bool
                         ) -> tuple[float, float]:
        """The change in each player's count of resources, every name the log holds included."""
        return float(sum(delta[RED].values())), float(sum(delta[BLUE].values()))
