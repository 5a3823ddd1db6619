"""NegotiationArena: seller and buyer (spec 2.4), RED sells one X to BLUE for ZUP.

Rules: RED (the seller, moving first) holds one X that cost it ``seller_cost`` ZUP (40) to produce; BLUE (the
buyer) holds ``buyer_money`` ZUP (100) and is willing to pay at most ``buyer_value`` (60). Each knows only
its own numbers. They alternate messages, at most ``turns`` (10, five each). Each message proposes a price
(RED gives X: 1, BLUE gives ZUP: price), ACCEPTs the price proposed in the other's message just before (the
sale happens) or REJECTs (the game ends without a sale). The prompt allows ``max_proposals`` proposals (4),
not enforced, as in the paper. The buyer may not offer, nor accept, a price above its money.

Parameters: ``seller_cost`` (40; 60 in the reverse setting), ``buyer_value`` (60; 40 reversed),
``buyer_money`` (100), ``turns`` (10), ``max_proposals`` (4), ``metrics`` ("correct" or "paper").

Payoffs: a sale at price p pays the seller p - cost and the buyer value - p; no sale 0 / 0. In the 40/60
setting the buyer wins (a larger payoff change) iff p < 50.

Metrics beyond the shared ones: ``bad_counter_offer`` (the buyer's first counter-price p2 above the
seller's first price p1; a buyer message without a price counts as p2 = 0; None when the seller's first
message has no price).

Equilibrium: none is declared; the ``rational`` baseline is truthful and accepts any gain: it accepts a
price that does not lose it money and otherwise proposes its own value (cost or willingness to pay).
``random`` picks uniformly among legal replies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..base import ActionField, GameInfo, GameParams, Setup, whole_number
from .common import BLUE, FAMILY, PROPOSE, RED, NAState, NegotiationGame, Trade, log_resources, thaw

GOOD, MONEY = "X", "ZUP"
# The ``anchor`` opponent: its first message proposes a price that leaves the other side ANCHOR_LEFT of the
# surplus with probability ANCHOR_P, else (and afterwards) it plays ``rational``: the bench's fixed opponent
# (suite v2) against which accepting its opening is not the best reply.
ANCHOR_P = 0.75
ANCHOR_LEFT = 0.1


class BuySellParams(GameParams):
    seller_cost: int = Field(default=40, ge=0, le=10**9)
    """What the item cost RED (the seller) to produce."""
    buyer_value: int = Field(default=60, ge=0, le=10**9)
    """The most BLUE (the buyer) is willing to pay."""
    buyer_money: int = Field(default=100, ge=1, le=10**9)
    """BLUE's money; it may not offer or accept a higher price."""
    turns: int = Field(default=10, ge=2, le=100)
    """Messages in all, RED first."""
    max_proposals: int = Field(default=4, ge=1, le=50)
    """Proposals each player is told it may make (not enforced, as in the paper)."""
    metrics: Literal["correct", "paper"] = "correct"
    """`correct`: our formulas; `paper`: the authors' aggregation."""


class BuySell(NegotiationGame[BuySellParams]):
    name: ClassVar[str] = "buy_sell"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "NegotiationArena: a seller and a buyer haggle over the price of one item"
    Params = BuySellParams
    log_class: ClassVar[str] = "BuySellGame"
    choices: ClassVar[tuple[str, ...]] = ("propose", "accept", "reject")
    has_private_values: ClassVar[bool] = True
    info: ClassVar[GameInfo] = GameInfo(
        title="Seller and buyer", moves="sequential", rounds=True, messages="public+secret", n_players=2, family=FAMILY,
        action_axis="price (ZUP)", round_curve="price",
        equilibrium_note="none declared; any price between cost and value is a deal both gain from",
        policies=("rational", "random", "anchor"))

    def setup(self, params: BuySellParams, n_players: int, rng: np.random.Generator) -> Setup:
        self._two(n_players)
        return Setup(2, params.model_dump())

    def endowments(self, setup: Setup) -> tuple[dict[str, int], dict[str, int]]:
        return {GOOD: 1}, {MONEY: setup["buyer_money"]}

    def trade_fields(self, state: NAState, player: int) -> tuple[ActionField, ...]:
        return (ActionField("price", "number", "the ZUP Player BLUE pays for the X in your proposal (only read "
                            "when decision is propose)", low=0, integer=True, read_when=PROPOSE),)

    def trade_of(self, setup: Setup, player: int, action: Mapping[str, Any]) -> Trade:
        return {"red_gives": {GOOD: 1}, "blue_gives": {MONEY: int(action["price"])}}

    def price_of(self, trade: Trade | None) -> float | None:
        return None if trade is None else float(trade["blue_gives"].get(MONEY, 0))

    def payoffs_of(self, setup: Setup, deal: Trade | None) -> tuple[float, float]:
        if deal is None:
            return 0.0, 0.0
        p = float(deal["blue_gives"].get(MONEY, 0))
        return p - setup["seller_cost"], setup["buyer_value"] - p

    def offer_text(self, trade: Trade) -> str:
        return f"Player RED Gives {GOOD}: 1 | Player BLUE Gives {MONEY}: {trade['blue_gives'].get(MONEY, 0)}"

    def observation(self, state: NAState, player: int) -> dict[str, Any]:
        s = state.setup
        if player == RED:
            res, goal = f"{GOOD}: 1", f"Sell the resource for {MONEY}. It cost {GOOD}: {s['seller_cost']} {MONEY} " \
                                      "to produce."
        else:
            res, goal = f"{MONEY}: {s['buyer_money']}", f"Buy the resource with {MONEY}. You are willing to pay " \
                                                      f"at most {GOOD}: {s['buyer_value']} {MONEY} for it."
        return {**self.base_observation(state, player), "my_resources": res, "my_goal": goal,
                "max_proposals": s["max_proposals"]}

    def strategy(self, state: NAState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        own = s["seller_cost"] if player == RED else min(s["buyer_value"], s["buyer_money"])
        if kind == "anchor" and state.turn < 2:
            assert rng is not None
            if rng.random() < ANCHOR_P:  # a price that leaves the other side ANCHOR_LEFT of the surplus
                cost, value = s["seller_cost"], min(s["buyer_value"], s["buyer_money"])
                gap = ANCHOR_LEFT * (value - cost)
                price = int(round(value - gap if player == RED else cost + gap))
                return {"reason": "anchor", "message": f"My price is {price} ZUP.", "decision": "propose",
                        "price": price}
        if kind == "anchor":
            kind = "rational"
        if kind == "rational":
            if state.table is not None:
                t = thaw(state.table)
                if self.payoffs_of(s, t)[player] >= 0 and self.feasible(s, t, player) is None:
                    return {"reason": "no loss", "message": "Deal.", "decision": "accept", "price": 0}
            if self.final_turn(state):
                return {"reason": "no gain left", "message": "No deal.", "decision": "reject", "price": 0}
            return {"reason": "truthful", "message": f"My price is {own} ZUP.", "decision": "propose",
                    "price": own}
        if kind == "random":
            assert rng is not None
            options = ["propose", "reject"]
            if state.table is not None and self.feasible(s, thaw(state.table), player) is None:
                options.append("accept")
            d = options[int(rng.integers(len(options)))]
            top = s["buyer_money"] if player == BLUE else 2 * max(s["buyer_value"], s["seller_cost"], 1)
            return {"reason": "random", "message": f"message {int(rng.integers(100))}", "decision": d,
                    "price": int(rng.integers(0, top + 1))}
        return super().strategy(state, player, kind, rng, **kw)

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out = super().metrics(setup, rounds)
        says = [r["events"] for r in rounds]
        first_red = next((e for e in says if e["say"]["player"] == RED), None)
        first_blue = next((e for e in says if e["say"]["player"] == BLUE), None)
        bad = None
        if first_red is not None and first_red["say"].get("decision") == "propose" and first_blue is not None:
            p1 = first_red["price"]
            p2 = first_blue["price"] if first_blue["say"].get("decision") == "propose" else 0.0
            bad = bool(p2 > p1)
        out["bad_counter_offer"] = bad
        return out

    def params_from_log(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        goals = raw["player_goals"]
        init = raw["player_initial_resources"]
        cost = log_resources(goals[RED], "player_goals[0]", "bad_parameter")[GOOD]
        value = log_resources(goals[BLUE], "player_goals[1]", "bad_parameter")[GOOD]
        money = log_resources(init[BLUE], "player_initial_resources[1]", "bad_parameter")[MONEY]
        turns = whole_number(raw["iterations"], "iterations")
        return {"seller_cost": cost, "buyer_value": value, "buyer_money": money, "turns": turns,
                "max_proposals": max(1, turns // 2 - 1)}

    def action_from_log(self, setup: Setup, seat: int, answer: str, trade: Trade | None, message: str,
                        reason: str) -> dict[str, Any]:
        if answer == "ACCEPT":
            d, p = "accept", 0
        elif answer == "REJECT":
            d, p = "reject", 0
        elif trade is not None:
            d, p = "propose", trade["blue_gives"].get(MONEY, 0)
        else:
            d, p = "none", 0
        return {"reason": reason, "message": message, "decision": d, "price": p}

    def recorded_payoffs(self, setup: Setup, delta: Sequence[Mapping[str, int]], accepted: bool
                         ) -> tuple[float, float]:
        """Valued changes: ZUP at face value, the good at the seller's cost / the buyer's value."""
        red = delta[RED].get(MONEY, 0) + delta[RED].get(GOOD, 0) * setup["seller_cost"]
        blue = delta[BLUE].get(MONEY, 0) + delta[BLUE].get(GOOD, 0) * setup["buyer_value"]
        return float(red), float(blue)

    def recorded_price(self, delta: Sequence[Mapping[str, int]], accepted: bool) -> float | None:
        return float(delta[RED].get(MONEY, 0)) if accepted else None

    def off_protocol(self, trade: Trade) -> bool:
        red, blue = trade["red_gives"], trade["blue_gives"]
        return red.get(GOOD, 0) != 1 or any(v for k, v in red.items() if k != GOOD) or any(
            v for k, v in blue.items() if k != MONEY)

    def outcome_consistent(self, setup: Setup, summary: Mapping[str, Any], pay: tuple[float, float]) -> bool:
        got = summary.get("player_outcome")
        if not isinstance(got, list) or len(got) != 2 or not all(isinstance(x, (int, float)) for x in got):
            return True  # nothing comparable recorded
        return all(abs(float(a) - b) < 1e-9 for a, b in zip(got, pay))
