"""GLEE negotiation: alternating price offers for one item between a seller and a buyer.

Rules (GLEE, Shapira et al., section 2.2, and the released code): Alice (seat 0) sells one product she
values at V_A = money x seller_value; Bob (seat 1) buys, valuing it at V_B = money x buyer_value. In odd
rounds Alice posts a ``product_price`` and Bob decides; in even rounds Bob posts and Alice decides. The
responder may ``accept`` (trade at the posted price), ``reject`` (the game goes on with the roles swapped;
in the last round it ends without a trade) or take the outside option of the released code: sell to /
buy from another trader, John, at one's own valuation (``sell_to_john`` / ``buy_from_john``), which ends
the game without a trade between them. No discounting. Trade at p pays (p - V_A, V_B - p); no trade (0,
0). Each player knows its own valuation, the other's only with ``complete_information``. The horizon is
announced when max_rounds <= 20; the paper's "infinite" horizon is max_rounds = 30 (not announced).
A proposer may attach a public ``message`` when ``messages_allowed``.

Rule breaks: an unusable price (negative, not a number) leaves the round without an offer, so it passes
like a rejection; an unusable answer counts as a rejection. The seat is marked invalid.

Parameters (every key of the paper's Table 2; defaults are the paper's regression reference levels):
``money`` M (1e4, GLEE's product_price_order), ``seller_value`` F_A and ``buyer_value`` F_B (1),
``max_rounds`` T (1; 30 = infinite), ``complete_information`` (true), ``messages_allowed`` (false),
``metrics`` ("paper" or "code").

Metrics per run (p = price / M): fairness = 1 - 4 (p - (F_A + F_B) / 2)^2 with a trade, 1 without (not
bounded to [0, 1]); efficiency (paper) = 1 iff (V_A >= V_B and no trade) or (trade and V_A <= price <= V_B),
else 0; with ``metrics = "code"`` the released code's reading: F_B > F_A -> 1 iff a trade happened (at any
price), F_B < F_A -> 1 iff none, F_A = F_B -> 1. self_gain = [p - F_A, F_B - p] with a trade, [0, 0]
without. Also: agreement, final_price, first_offer, rounds, outside_option.

Equilibrium: none is declared (with the unannounced horizon and no discounting any price in [V_A, V_B]
is supported; with private values the paper's benchmark is a posted price). The ``rational`` baseline is
the truthful / accept-if-gain strategy: a proposer posts its own valuation, a responder accepts any price
that leaves it a gain >= 0, rejects otherwise and takes the outside option in the last round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..base import (
    MAX_GAME_NUMBER,
    ActionField,
    ActionSpec,
    GameInfo,
    GameParams,
    ImportedRun,
    Outcome,
    Setup,
    foreign_move_problem,
)
from . import reference as R
from .common import (
    ANNOUNCED_MAX,
    NAMES,
    AlternatingOffers,
    Money,
    message_field,
    pretty,
    proposer,
    say,
    set_at,
)

OUTSIDE = ("sell_to_john", "buy_from_john")  # per seat: the seller sells to John, the buyer buys from him
INFINITE = 30  # the paper's "infinite" horizon (GLEE's data also writes 25 and 99 for it; any value above 20)
# GLEE's decisions (the released code's spelling, "Jhon" included): ours, and the seat whose own outside
# option the name describes (None: either)
GLEE_DECISIONS = {"AcceptOffer": ("accept", None), "RejectOffer": ("reject", None),
                  "SellToJhon": ("outside", 0), "BuyFromJhon": ("outside", 1), "DealWithJhon": ("outside", None)}


class NegotiationParams(GameParams):
    money: Money = 10_000.0
    """M: the scale of the valuations (GLEE's product_price_order)."""
    seller_value: float = Field(default=1.0, gt=0, le=100)
    """F_A: Alice (the seller) values the product at M x seller_value."""
    buyer_value: float = Field(default=1.0, gt=0, le=100)
    """F_B: Bob (the buyer) values the product at M x buyer_value."""
    max_rounds: int = Field(default=1, ge=1, le=200)
    """T: the most rounds; announced only when at most 20 (30: the paper's infinite horizon)."""
    complete_information: bool = True
    """Whether each player is told the other's valuation."""
    messages_allowed: bool = False
    """Whether a proposer may attach a free-text message."""
    metrics: Literal["paper", "code"] = "paper"
    """`paper`: the paper's metric formulas; `code`: the released code's."""


@dataclass(frozen=True)
class NegotiationState:
    setup: Setup
    round: int = 1
    phase: Literal["offer", "respond", "done"] = "offer"
    price: float | None = None  # the price on the table
    message: str | None = None
    trade: tuple[int, float] | None = None  # (round, price) once accepted
    outside: int | None = None  # the seat that took the outside option
    broke: frozenset[int] = frozenset()
    last: tuple[Any, ...] = (None, None)
    opening_missed: bool = False  # round 1 had no usable offer: Bob, who has not spoken yet, is told so


# The ``anchor`` opponent: its first price leaves the other side ANCHOR_LEFT of the surplus between the two
# valuations with probability ANCHOR_P, else (and afterwards) it plays ``rational`` (truthful, accepts any
# gain): the bench's fixed opponent (suite v2) against which accepting its opening is not the best reply.
ANCHOR_P = 0.75
ANCHOR_LEFT = 0.1


def values(setup: Setup) -> tuple[float, float]:
    """(V_A, V_B) in money."""
    m = float(setup["money"])
    return m * float(setup["seller_value"]), m * float(setup["buyer_value"])


def negotiation_metrics(seller_value: float, buyer_value: float, money: float, price: float | None,
                        reading: str = "paper") -> dict[str, Any]:
    """Fairness, efficiency and self-gains of one run (price None: no trade); see the module docstring."""
    fa, fb = seller_value, buyer_value
    if reading == "code":
        efficiency = 1.0 if fa == fb else float((price is not None) == (fb > fa))
    elif price is None:
        efficiency = float(fa >= fb)
    else:
        efficiency = float(money * fa <= price <= money * fb)
    if price is None:
        return {"fairness": 1.0, "efficiency": efficiency, "self_gain": [0.0, 0.0]}
    p = price / money
    return {"fairness": 1 - 4 * (p - (fa + fb) / 2) ** 2, "efficiency": efficiency, "self_gain": [p - fa, fb - p]}


class Negotiation(AlternatingOffers[NegotiationParams, NegotiationState]):
    name: ClassVar[str] = "negotiation"
    glee_game_type: ClassVar[str] = "negotiation"  # the game_type of GLEE's released config.json files
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GLEE: a seller and a buyer alternate price offers for one item, outside option John"
    State = NegotiationState
    Params = NegotiationParams
    hidden = "the value of the product to the other"
    action_key: ClassVar[str] = "product_price"
    history_key: ClassVar[str] = "last reply"
    info: ClassVar[GameInfo] = GameInfo(
        title="Negotiation (GLEE)", moves="sequential", rounds=True, messages="public", family="glee",
        factors=(("seller_value", 1.0), ("buyer_value", 1.0), ("money", 10000.0),
                 ("market", {"complete_information": True, "messages_allowed": False, "max_rounds": 1})),
        n_players=2, scale_key="money", action_axis="price / money",
        equilibrium_note="no unique SPE; baseline: truthful prices, accept if gain >= 0",
        round_curve="price_share", policies=("rational", "random", "anchor"))

    def action_spec(self, state: NegotiationState, player: int) -> ActionSpec:
        if state.phase == "respond":
            return ActionSpec((ActionField("decision", "choice", "accept the offer, reject it, or trade with John "
                                           "instead", choices=("accept", "reject", OUTSIDE[player])),))
        # bounded like every game number (params.MAX_GAME_NUMBER, 100x the largest valuation): a price of
        # 1e308, accepted, overflowed the run's metrics; no valuation comes near the bound
        price = ActionField("product_price", "number",
                            f"the price you want to {'sell' if player == 0 else 'buy'} the product for", low=0.0,
                            high=MAX_GAME_NUMBER)
        if state.setup["messages_allowed"]:
            return ActionSpec((message_field(NAMES[1 - player]), price))
        return ActionSpec((price,))

    def apply(self, state: NegotiationState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> NegotiationState:
        assert self.to_move(state), "apply() on a finished game"
        t, last_round = state.round, int(state.setup["max_rounds"])
        seat = self.to_move(state)[0]
        action = actions.get(seat)
        ended = replace(state, phase="done", price=None, message=None)
        onward = ended if t >= last_round else replace(state, round=t + 1, phase="offer", price=None, message=None)
        if action is None:
            return replace(onward, broke=state.broke | {seat}, opening_missed=t == 1 and state.phase == "offer")
        if state.phase == "offer":
            price = float(action["product_price"])
            return replace(state, phase="respond", price=price, message=action.get("message"),
                           last=set_at(state.last, seat, price))
        assert state.price is not None
        decision = action["decision"]
        last = set_at(state.last, seat, decision)
        if decision == "accept":
            return replace(ended, trade=(t, state.price), last=last)
        if decision == OUTSIDE[seat]:
            return replace(ended, outside=seat, last=last)
        return replace(onward, last=last)

    def outcome(self, state: NegotiationState) -> Outcome:
        va, vb = values(state.setup)
        if state.trade is None:
            payoffs = (0.0, 0.0)
        else:
            price = state.trade[1]
            payoffs = (price - va, vb - price)
        best = max(payoffs)
        winners = tuple(i for i in range(2) if payoffs[i] == best) if state.trade is not None and best > 0 else ()
        return Outcome(actions=state.last, valid=tuple(i not in state.broke for i in range(2)), payoffs=payoffs,
                       winners=winners, void=state.trade is None,
                       extra={"agreement": state.trade is not None,
                              "final_price": state.trade[1] if state.trade else None,
                              "outside_option": state.outside})

    def events(self, before: NegotiationState, after: NegotiationState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        seat = self.to_move(before)[0]
        action = actions.get(seat)
        money = float(before.setup["money"])
        base = {"round": before.round, "phase": before.phase, "proposer": proposer(before.round),
                "valid": action is not None, "end": after.phase == "done"}
        if before.phase == "offer":
            price = None if action is None else float(action["product_price"])
            return {**base, "say": say(seat, None if action is None else action.get("message"), price=price),
                    "price_share": None if price is None else price / money}
        decision = None if action is None else action["decision"]
        return {**base, "say": say(seat, None, decision=decision), "price": before.price,
                "accepted": decision == "accept", "outside": decision is not None and decision.endswith("john"),
                "price_share": None if before.price is None else before.price / money}

    # ---- prompts ----
    def observation(self, state: NegotiationState, player: int) -> dict[str, Any]:
        s = state.setup
        rival = NAMES[1 - player]
        own, other = values(s)[player], values(s)[1 - player]
        t, horizon = state.round, int(s["max_rounds"])
        label = f"Round {t}\n" if 1 < horizon <= ANNOUNCED_MAX else ""
        if player == 0:
            role = (f"You are selling one product that is worth no less than ${pretty(own)} to you. {rival} is a "
                    "potential buyer to whom you are offering the product. Your goal is to earn as much money as "
                    "you can for the product.")
            john = (f"When you answer {rival}'s offer you may instead sell the product to another buyer, John, who "
                    f"is willing to pay ${pretty(own)} for it; that ends the negotiation.")
        else:
            role = (f"You want to buy one product that is worth no more than ${pretty(own)} to you. {rival} is "
                    "the seller. Your goal is to buy the product but save as much money as you can.")
            john = (f"When you answer {rival}'s offer you may instead buy the product from another seller, John, "
                    f"for ${pretty(own)}; that ends the negotiation.")
        if horizon == 1 and player == 0:
            john = (f"If {rival} rejects the offer, you will sell the product to another buyer, John, who is "
                    f"willing to buy the product from you for ${pretty(own)}.")
        info = (f"The product is worth ${pretty(other)} to {rival}." if s["complete_information"]
                else f"You don't know the value of the product to {rival}.")
        if state.phase == "offer" and proposer(t) == player:
            request = f"{label}Send your {'counteroffer' if t > 1 else 'offer'} to {rival}."
            if state.opening_missed and t == 2:
                request = f"{rival} made no usable offer in round 1.\n" + request
        elif state.phase == "respond" and proposer(t) != player and state.price is not None:
            price = pretty(state.price)
            lines = [f"{label}{rival}'s offer:"]
            if state.message is not None:
                lines.append(f"# {rival}'s message: {state.message}")
            lines += [f"# The product price will be ${price}.", "You have three options:",
                      f"(1) accept: accept {rival}'s offer, and {'sell' if player == 0 else 'buy'} the product "
                      f"for ${price}",
                      f"(2) reject: reject {rival}'s offer" + (
                          f" and proceed to the next round, where you will send {rival} a counteroffer"
                          if t < horizon else " (this was the last round: nobody trades)"),
                      f"(3) {OUTSIDE[player]}: " + (f"sell the product to John for ${pretty(own)}" if player == 0
                                                    else f"buy the product from John for ${pretty(own)}")]
            request = "\n".join(lines)
        else:
            request = f"Wait for {rival}."
        return {"player_name": NAMES[player], "rival_name": rival, "role_message": role, "info_message": info,
                "outside_message": john,
                "horizon_message": f"You have {horizon} rounds to close the deal." if 1 < horizon <= ANNOUNCED_MAX
                else "", "message_rule": " with a message" if s["messages_allowed"] else "",
                "round": t, "request": request}

    def report(self, before: NegotiationState, after: NegotiationState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any] | None:
        t = before.round
        p = proposer(t)
        rival = NAMES[1 - player]
        if before.phase == "offer":
            if actions.get(p) is not None:
                return None
            what = (f"Your reply in round {t} could not be used, so you made no offer this round." if player == p
                    else f"{rival} made no usable offer in round {t}.")
            return {"what": what}
        action = actions.get(1 - p)
        decision = None if action is None else action["decision"]
        price = pretty(before.price or 0.0)
        if decision is None:
            what = (f"{rival} gave no usable answer to your offer, which counts as a rejection." if player == p
                    else "Your answer could not be used: it counts as a rejection.")
        elif decision == "accept":
            what = (f"{rival} accepted your offer: the product is sold for ${price}." if player == p
                    else f"You accepted {rival}'s offer: the product is sold for ${price}.")
        elif decision == "reject":
            what = f"{rival} rejected your offer from round {t}." if player == p else \
                f"You have chosen to reject {rival}'s offer from round {t}."
        else:
            what = (f"{rival} chose to trade with John instead: the negotiation is over." if player == p
                    else "You chose to trade with John: the negotiation is over.")
        if after.phase == "done" and after.trade is None and decision in (None, "reject"):
            what += " The last round is over without a deal."
        return {"what": what}

    # ---- capabilities ----
    def max_moves(self, params: NegotiationParams, n_players: int) -> tuple[int, bool]:
        return int(params.max_rounds), False

    def strategy(self, state: NegotiationState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        own = values(s)[player]
        if kind == "anchor" and state.phase == "offer" and state.round <= 2:
            assert rng is not None
            if rng.random() < ANCHOR_P:  # a price that leaves the other side ANCHOR_LEFT of the surplus
                sv, bv = values(s)
                price = bv - ANCHOR_LEFT * (bv - sv) if player == 0 else sv + ANCHOR_LEFT * (bv - sv)
                return {"product_price": round(price, 2)}
        if kind == "anchor":
            kind = "rational"
        if kind == "rational" and state.phase == "offer":
            out: dict[str, Any] = {"product_price": round(own, 2)}
            if s["messages_allowed"]:
                out = {"message": f"My price is my valuation: ${pretty(own)}.", **out}
            return out
        if kind == "rational" and state.phase == "respond" and state.price is not None:
            gain = state.price - own if player == 0 else own - state.price
            if gain >= -1e-9:
                return {"decision": "accept"}
            return {"decision": OUTSIDE[player] if state.round >= int(s["max_rounds"]) else "reject"}
        if kind == "random" and state.phase == "offer":
            assert rng is not None
            out = {"product_price": round(float(rng.uniform(0, 2 * max(values(s)))), 2)}
            if s["messages_allowed"]:
                out = {"message": f"How about this, {NAMES[1 - player]}?", **out}
            return out
        if kind == "random" and state.phase == "respond":
            assert rng is not None
            return {"decision": ("accept", "reject", OUTSIDE[player])[int(rng.integers(3))]}
        return super().strategy(state, player, kind, rng, **kw)

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return negotiation_run_metrics(setup.to_dict(), [r["events"] for r in rounds])

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        """One of GLEE's released negotiation games (games/glee/reference.py): GLEE's reading of its rows is
        the outcome of record; the replay of the rows through these rules is the check."""
        return _negotiation_from_reference(self, raw)


def negotiation_run_metrics(params: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    money = float(params["money"])
    deal = next((e for e in events if e["phase"] == "respond" and e.get("accepted")), None)
    first = next((e for e in events if e["phase"] == "offer" and e["say"]["price"] is not None), None)
    price = float(deal["price"]) if deal else None
    out = negotiation_metrics(float(params["seller_value"]), float(params["buyer_value"]), money, price,
                              str(params.get("metrics", "paper")))
    outside = next((e["say"]["player"] for e in events if e["phase"] == "respond" and e.get("outside")), None)
    return {**out, "agreement": deal is not None, "final_price": price,
            "first_offer": first["say"]["price"] if first else None,
            "rounds": max((int(e["round"]) for e in events), default=0), "outside_option": outside}


# ---- GLEE's released games (games/glee/reference.py) ----

def _offer(game: Negotiation, ma: bool, human: bool, causes: set[str]) -> R.Move:
    """A row's price as our action, with what our rules make of it."""
    def offer(row: Mapping[str, Any], state: Any, seat: int) -> tuple[dict[str, Any] | None, str | None]:
        p = R.number(row, "product_price")
        if p is None or p < 0:
            causes.add("unreadable_move")
            return None, None
        action: dict[str, Any] = {"product_price": p}
        if ma:
            action["message"] = R.message(row, human)
        if (problem := foreign_move_problem(game, state, seat, action)) is not None:
            causes.add("invalid_move")  # our rules refuse the price: our replay stops there
            return action, f"our rules refuse this price ({problem[1]})"
        return action, None
    return offer


def _decide(causes: set[str]) -> R.Move:
    """A row's GLEE decision as ours (an outside option taken by the seat that holds it)."""
    def decide(row: Mapping[str, Any], state: Any, seat: int) -> tuple[dict[str, Any] | None, str | None]:
        d = R.cell(row, "decision")
        ours, whose = GLEE_DECISIONS.get(d or "", (None, None))
        if ours is None:
            causes.add("unknown_decision" if d is not None else "unreadable_move")
            return None, None
        if ours == "outside" and whose is not None and whose != seat:
            causes.add("outside_option_swapped")
        return {"decision": OUTSIDE[seat] if ours == "outside" else ours}, None
    return decide


def _negotiation_from_reference(game: Negotiation, raw: Mapping[str, Any]) -> ImportedRun:
    config, rows, human = raw["config"], list(raw["rows"]), bool(raw.get("human"))
    money = R.number_arg(config, "product_price_order")
    fa, fb = R.number_arg(config, "seller_value"), R.number_arg(config, "buyer_value")
    raw_max = R.whole_arg(config, "max_rounds")
    ci = R.as_bool(R.arg(config, "complete_information", True), "complete_information")
    ma = R.as_bool(R.arg(config, "messages_allowed", False), "messages_allowed")
    params: dict[str, Any] = {"money": money, "seller_value": fa, "buyer_value": fb,
                              "max_rounds": R.horizon(raw_max, INFINITE),
                              "complete_information": ci, "messages_allowed": ma}
    # our bounds before any arithmetic: a money or price of 0 is a bad parameter, not a division by zero
    checked = NegotiationParams(**{**params, "max_rounds": min(raw_max, 200)})
    names = R.public_names(config)
    if not rows:
        raise ValueError("game.csv has no rows")
    # GLEE's reading (analyze/configs.py): a trade iff the last decision is AcceptOffer, at the price before it
    last = R.final_decision(rows, tuple(GLEE_DECISIONS))
    played = R.last_round(rows)
    price = R.number(rows[-2], "product_price") if last == "AcceptOffer" and len(rows) >= 2 else None
    trade = price is not None
    decisions = sum(1 for r in rows if R.cell(r, "decision") is not None)
    messages = sum(1 for r in rows if R.message(r, human) is not None)
    recorded: dict[str, Any] = {"finished": last is not None, "agreement": trade, "rounds": played,
                                "final_price": price, "max_rounds_raw": raw_max, "n_decisions": decisions,
                                "n_messages": messages}
    first = next((R.number(r, "product_price") for r in rows if R.number(r, "product_price") is not None), None)
    outside = None
    if last in GLEE_DECISIONS and GLEE_DECISIONS[last][0] == "outside":
        outside = R.seat_of(R.cell(rows[-1], "player"), names)
    extra = {"agreement": trade, "final_price": price, "first_offer": first, "rounds": played,
             "outside_option": outside}
    recorded["metrics"] = {**negotiation_metrics(fa, fb, money, price, "paper"), **extra}
    recorded["metrics_code"] = {**negotiation_metrics(fa, fb, money, price, "code"), **extra}
    va, vb = money * fa, money * fb
    pay = (price - va, vb - price) if price is not None else (0.0, 0.0)
    recorded["payoff"] = list(pay)
    recorded["winners"] = [i for i in (0, 1) if pay[i] == max(pay)] if trade and max(pay) > 0 else []
    causes: set[str] = set()
    if (messages > decisions and messages > 1) or (not human and decisions > played):
        causes.add("glee_cleaning_drop")
    # our replay of the same rows
    setup = game.setup(checked, 2, np.random.default_rng(0))
    state = game.initial_state(setup)
    state, log, error = R.replay_turns(game, state, rows, names, causes, _offer(game, ma, human, causes),
                                       _decide(causes))
    if error is None and game.to_move(state) and last == "RejectOffer":
        causes.add("ended_before_horizon")
    replayed = None
    if error is None:
        replayed = {"agreement": state.trade is not None, "final_price": state.trade[1] if state.trade else None}
    check = R.verdict(recorded, replayed, ("agreement", "final_price"), causes, error)
    pay_replay = list(game.outcome(state).payoffs) if error is None else None
    return ImportedRun(params, 2, log, pay_replay, raw.get("messages"), recorded, check)
