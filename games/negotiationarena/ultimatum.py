"""NegotiationArena: the multi-turn ultimatum game (spec 2.3), RED splits ``total`` dollars with BLUE.

Rules: RED starts with ``total`` dollars (100), BLUE with none. They alternate messages, RED first, at most
``turns`` messages (8: 4 moves each). Each message ACCEPTs the split proposed in the other's message just
before (the game ends and RED pays BLUE that amount), REJECTs (both lose everything; the game ends) or
proposes a split: how many dollars RED gives BLUE. Nobody may propose on the game's last message; it must
accept or reject. When the messages run out without an accept, nobody gets anything.

Parameters: ``total`` (100; the paper's scaling runs use 1e2 to 1e10), ``turns`` (8; 2 is the classical
one-shot game, 3 the three-period one), ``metrics`` ("correct" or "paper").

Payoffs: an accepted gift g pays RED total - g and BLUE g; a rejection or no deal pays 0 / 0. With
``metrics = "paper"`` the per-run metric ``payoff`` follows the authors' notebook, which also sets RED's
payoff to 0 when it equals the total (an accepted gift of 0); the Outcome's payoffs always follow the rules.

Equilibrium: none is declared for the Host; the subgame-perfect play (a responder accepts any gift, since
the alternative is nothing) is the ``rational`` baseline: RED proposes 0, BLUE accepts whatever is on the
table, RED accepts a counter-proposal only when it is 0. ``random`` picks uniformly among legal replies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..base import ActionField, GameInfo, GameParams, Setup, whole_number
from ..params import fmt_num
from .common import BLUE, FAMILY, PROPOSE, RED, NAState, NegotiationGame, Trade, log_resources, thaw

CURRENCY = "Dollars"


class UltimatumParams(GameParams):
    total: int = Field(default=100, ge=1, le=10**11)
    """The dollars RED splits with BLUE."""
    turns: int = Field(default=8, ge=2, le=100)
    """Messages in all, RED first (2: the one-shot game)."""
    metrics: Literal["correct", "paper"] = "correct"
    """`correct`: the rules' payoffs; `paper`: the authors' notebook (RED's payoff 0 on a gift of 0)."""


class MultiTurnUltimatum(NegotiationGame[UltimatumParams]):
    name: ClassVar[str] = "ultimatum"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "NegotiationArena: multi-turn ultimatum, RED proposes how to split its dollars"
    Params = UltimatumParams
    log_class: ClassVar[str] = "MultiTurnUltimatumGame"
    choices: ClassVar[tuple[str, ...]] = ("accept", "reject", "propose")
    info: ClassVar[GameInfo] = GameInfo(
        title="Multi-turn ultimatum", moves="sequential", rounds=True, messages="public+secret", n_players=2,
        family=FAMILY, action_axis="dollars given to BLUE", scale_key="total", round_curve="price",
        equilibrium_note="subgame perfect: the responder accepts any gift; RED offers 0")

    def setup(self, params: UltimatumParams, n_players: int, rng: np.random.Generator) -> Setup:
        self._two(n_players)
        return Setup(2, params.model_dump())

    def endowments(self, setup: Setup) -> tuple[dict[str, int], dict[str, int]]:
        return {CURRENCY: setup["total"]}, {CURRENCY: 0}

    def trade_fields(self, state: NAState, player: int) -> tuple[ActionField, ...]:
        return (ActionField("red_gives", "number", "dollars Player RED gives Player BLUE in your proposed split "
                            "(only read when decision is propose)", low=0, high=state.setup["total"],
                            integer=True, read_when=PROPOSE),)

    def trade_of(self, setup: Setup, player: int, action: Mapping[str, Any]) -> Trade:
        return {"red_gives": {CURRENCY: int(action["red_gives"])}, "blue_gives": {}}

    def check(self, state: NAState, player: int, action: dict[str, Any]) -> str | None:
        if action["decision"] == "propose" and self.final_turn(state):
            return "this is the last message of the game: you may only accept or reject"
        return super().check(state, player, action)

    def price_of(self, trade: Trade | None) -> float | None:
        return None if trade is None else float(trade["red_gives"].get(CURRENCY, 0))

    def payoffs_of(self, setup: Setup, deal: Trade | None) -> tuple[float, float]:
        if deal is None:
            return 0.0, 0.0
        g = float(deal["red_gives"].get(CURRENCY, 0))
        return setup["total"] - g, g

    def metric_payoffs(self, setup: Setup, deal: Trade | None) -> tuple[float, float]:
        pay = self.payoffs_of(setup, deal)
        return self.paper_reading(setup, pay) if setup.values.get("metrics") == "paper" else pay

    def paper_reading(self, setup: Setup, pay: tuple[float, float]) -> tuple[float, float]:
        red, blue = pay
        return (0.0 if red == setup["total"] else red), blue

    def recorded_payoffs(self, setup: Setup, delta: Sequence[Mapping[str, int]], accepted: bool
                         ) -> tuple[float, float]:
        """Accepted: what each player holds at the end (the executed, netted trade); otherwise 0 / 0."""
        if not accepted:
            return 0.0, 0.0
        return float(setup["total"] + sum(delta[RED].values())), float(sum(delta[BLUE].values()))

    def recorded_price(self, delta: Sequence[Mapping[str, int]], accepted: bool) -> float | None:
        return float(sum(delta[BLUE].values())) if accepted else None

    def off_protocol(self, trade: Trade) -> bool:
        return any(trade["blue_gives"].values())

    def offer_text(self, trade: Trade) -> str:
        g = trade["red_gives"].get(CURRENCY, 0)
        return f"Player RED Gives {CURRENCY}: {g} | Player BLUE Gives {CURRENCY}: 0"

    def observation(self, state: NAState, player: int) -> dict[str, Any]:
        s = state.setup
        mine = s["total"] if player == RED else 0
        return {**self.base_observation(state, player), "total": fmt_num(s["total"]),
                "my_resources": f"{CURRENCY}: {mine}", "red_moves": (s["turns"] + 1) // 2,
                "blue_moves": s["turns"] // 2, "last_mover": "Player BLUE" if s["turns"] % 2 == 0 else "Player RED"}

    def strategy(self, state: NAState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        base = {"reason": "", "message": "", "red_gives": 0}
        last = self.final_turn(state)
        if kind == "rational":
            table = self.price_of(thaw(state.table)) if state.table is not None else None
            if table is not None and (player == BLUE or table == 0 or last):
                return {**base, "reason": "nothing beats taking it", "message": "I accept.", "decision": "accept"}
            if last:
                return {**base, "message": "No.", "decision": "reject"}
            gift = 0 if player == RED else state.setup["total"] // 2
            return {**base, "reason": "offer the least", "message": f"I propose RED gives {gift}.",
                    "decision": "propose", "red_gives": gift}
        if kind == "random":
            assert rng is not None
            options = ["reject"] + ([] if last else ["propose"]) + (["accept"] if state.table is not None else [])
            d = options[int(rng.integers(len(options)))]
            return {**base, "reason": "random", "message": f"message {int(rng.integers(100))}", "decision": d,
                    "red_gives": int(rng.integers(0, state.setup["total"] + 1))}
        return super().strategy(state, player, kind, rng, **kw)

    def params_from_log(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        init = raw["player_initial_resources"]
        red = log_resources(init[RED], "player_initial_resources[0]", "bad_parameter")
        blue = log_resources(init[BLUE], "player_initial_resources[1]", "bad_parameter")
        if set(red) != {CURRENCY} or any(blue.values()):
            raise ValueError(f"expected RED to hold only {CURRENCY} and BLUE nothing, got {red} / {blue}")
        return {"total": red[CURRENCY], "turns": whole_number(raw["iterations"], "iterations")}

    def action_from_log(self, setup: Setup, seat: int, answer: str, trade: Trade | None, message: str,
                        reason: str) -> dict[str, Any]:
        if answer == "ACCEPT":
            d, g = "accept", 0
        elif answer == "REJECT":
            d, g = "reject", 0
        elif trade is not None:
            d, g = "propose", trade["red_gives"].get(CURRENCY, 0)
        else:
            d, g = "none", 0
        return {"reason": reason, "message": message, "decision": d, "red_gives": g}
