"""Auctions of one item: sealed-bid second-price (Vickrey) and the English (ascending clock) auction; the rules
of each are below its name.

Shared parameters: ``private_value`` v_i and ``assets`` A_i (numbers, per-player lists, or
``{normal=[mean, sd]}`` / ``{uniform=[low, high]}`` drawn once per session; drawn assets are redrawn
until positive and drawn private values until they fall in (0, A_i]; drawn values are rounded to cents),
``entrance_fee`` (default 0), deducted from the assets of a player who breaks a rule. A payoff IS the
final asset, as the paper's prompt defines it: remaining assets plus the value of an item won (A - price + v
for the winner, A for the others, A - fee for a rule breaker). Deviation from equilibrium:
``|final asset / NE asset - 1|``, undefined (None) for a player who broke a rule in the run.

second_price_auction
    Each bidder submits one bid in [0, A_i] (JSON key ``bid``). The highest valid bid wins, ties go to
    the lowest player id, and the winner pays the second-highest valid bid. With fewer than two valid
    bids there is no sale (``void``). A rule breaker (unparsable reply, bid < 0, bid > A_i) has no bid.
    Equilibrium: bidding one's value is weakly dominant; the highest-value bidder (lowest id on ties)
    wins and pays the second-highest value, so its NE asset is A + v_max - v_second, everyone else's A.

english_auction
    A clock starts at ``start_price`` and rises by ``increment`` each round. Every active bidder answers
    ``{"decision": "stay"}`` or ``{"decision": "drop"}`` at the current price; a drop is final. Staying at
    a price above one's assets, or an unusable reply, is a rule break: it counts as a drop and the fee is
    deducted. The auction ends when at most one bidder stays: a single stayer wins at the current price;
    if all remaining bidders drop in the same round, the lowest id among those who dropped validly wins at
    the previous price (if that happens in the first round, nobody accepted the start price: no sale).
    After ``max_rounds`` rounds with two or more bidders still in, the auction ends with no sale (those
    still in are recorded with the final clock price as their action).
    Equilibrium: stay while price < value, computed on the same price grid by playing those strategies.
    Baselines: ``rational`` and ``level_k`` (any k) stay while price < value (staying up to one's value is
    dominant, so every level plays it), ``random`` stays or drops with equal chance where staying is legal.
    Fast forward: while every bidder still in plays ``rational`` or ``level_k``, the rounds before the next
    drop change nothing but the clock, so the clock jumps to the round where the first of them drops (or to
    the last round); a private value of 1,000,000 with increment 0.01 then costs a few steps, not 10^8
    rounds. The skipped rounds are not decisions and are not logged as such (see ``Game.fast_forward``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
    Skip,
    draw_param,
    fmt_num,
    validate_param,
)


class AuctionParams(GameParams):
    private_value: Any = Field(default_factory=lambda: {"normal": [50.0, 10.0]})
    """Each bidder's value of the item: a number, a per-player list or a distribution drawn once per session
    (redrawn until it falls in (0, assets])."""
    assets: Any = 100.0
    """Each bidder's money: a number, a per-player list or a distribution; a bid above it breaks a rule."""
    entrance_fee: float = Field(default=0.0, ge=0, le=1e12)
    """Deducted from the assets of a bidder who breaks a rule."""

    @field_validator("private_value", "assets")
    @classmethod
    def _per_player(cls, v: Any) -> Any:
        return validate_param(v, per_player=True, positive=True)


class EnglishAuctionParams(AuctionParams):
    start_price: float = Field(default=0.0, ge=0, le=1e12)
    """`english_auction`: the clock's first price."""
    increment: float = Field(default=1.0, gt=0, le=1e12)
    """`english_auction`: how much the clock rises each round."""
    max_rounds: int = Field(default=200, gt=0)
    """`english_auction`: after this many rounds with two or more bidders in, the auction ends unsold."""


def _draw_values(params: AuctionParams, n: int, rng: np.random.Generator) -> dict[str, Any]:
    assets = draw_param("assets", params.assets, n, rng, per_player=True, positive_below=[math.inf] * n)
    values = draw_param("private_value", params.private_value, n, rng, per_player=True,
                        positive_below=assets)
    for i, (v, a) in enumerate(zip(values, assets)):
        if a <= 0:
            raise ValueError(f"assets of player {i} drew {a}, must be > 0")
        if not 0 < v <= a:
            raise ValueError(f"private_value of player {i} is {v}, must lie in (0, assets={a}]")
    return {"private_value": values, "assets": assets, "entrance_fee": params.entrance_fee}


def _largest(spec: Any) -> float | None:
    """The largest value a number, per-player list or uniform draw can take; None for a normal draw."""
    if isinstance(spec, (int, float)):
        return float(spec)
    if isinstance(spec, list):
        return float(max(spec))
    if isinstance(spec, dict) and "uniform" in spec:
        return float(spec["uniform"][1])
    return None


def _final_assets(setup: Setup, winner: int | None, price: float, broke: tuple[bool, ...]) -> tuple[float, ...]:
    out = []
    for i in range(setup.n_players):
        a = setup["assets"][i]
        if broke[i]:
            a -= setup["entrance_fee"]
        if i == winner:
            a += setup["private_value"][i] - price
        out.append(a)
    return tuple(out)


def _asset_deviation(outcome: Outcome, ne: Outcome, player: int) -> float | None:
    """None for a rule breaker: with no usable bid there is no strategy to compare with the equilibrium
    (with entrance_fee 0 its untouched assets would otherwise read as a near-perfect 0.0)."""
    if not outcome.valid[player]:
        return None
    return abs(outcome.payoffs[player] / ne.payoffs[player] - 1.0)


def _auction_observation(setup: Setup, player: int) -> dict[str, Any]:
    return {"n_players": setup.n_players, "private_value": fmt_num(setup["private_value"][player]),
            "assets": fmt_num(setup["assets"][player]), "entrance_fee": fmt_num(setup["entrance_fee"])}


@functools.lru_cache(maxsize=1024)
def _bid_spec(assets: float) -> ActionSpec:
    """A bid up to one's assets: specs are asked for at every decision and repeat, so each is built once."""
    return ActionSpec((ActionField("bid", "number", "the bid which you would like to place", 0.0, assets),))


_STAY_OR_DROP = ActionSpec((ActionField("decision", "choice", "whether you stay in at the current price",
                                        choices=("stay", "drop")),))


# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SecondPriceState:
    setup: Setup
    bids: tuple[float | None, ...] | None = None


def second_price_result(bids: tuple[float | None, ...]) -> tuple[int | None, float]:
    """Winner (highest bid, lowest id on ties) and price (second-highest bid); (None, 0) if < 2 bids."""
    valid = [(b, i) for i, b in enumerate(bids) if b is not None]
    if len(valid) < 2:
        return None, 0.0
    ranked = sorted(valid, key=lambda t: (-t[0], t[1]))
    return ranked[0][1], ranked[1][0]


class SecondPriceAuction(Game[AuctionParams, SecondPriceState]):
    name: ClassVar[str] = "second_price_auction"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "sealed bids; highest bid wins and pays the second-highest bid"
    Params = AuctionParams
    action_key: ClassVar[str] = "bid"
    history_key: ClassVar[str] = "bid"
    has_private_values: ClassVar[bool] = True
    info: ClassVar[GameInfo] = GameInfo(
        title="Second-price auction", scale_key="private_value", action_axis="bid / private value",
        equilibrium_note="NE: bid = value", stakes_key="assets", stakes_inclusive=True,
        deviation_note="|asset / NE asset - 1|", policies=("rational", "random", "level_k"), dominant_value=True)

    def setup(self, params: AuctionParams, n_players: int, rng: np.random.Generator) -> Setup:
        return Setup(n_players, _draw_values(params, n_players, rng))

    def initial_state(self, setup: Setup) -> SecondPriceState:
        return SecondPriceState(setup)

    def to_move(self, state: SecondPriceState) -> tuple[int, ...]:
        return tuple(range(state.setup.n_players)) if state.bids is None else ()

    def action_spec(self, state: SecondPriceState, player: int) -> ActionSpec:
        return _bid_spec(state.setup["assets"][player])

    def observation(self, state: SecondPriceState, player: int) -> dict[str, Any]:
        return _auction_observation(state.setup, player)

    def apply(self, state: SecondPriceState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> SecondPriceState:
        n = state.setup.n_players
        return replace(state, bids=tuple(None if (a := actions.get(i)) is None else float(a["bid"])
                                         for i in range(n)))

    def outcome(self, state: SecondPriceState) -> Outcome:
        assert state.bids is not None, "outcome() of an unfinished game"
        winner, price = second_price_result(state.bids)
        broke = tuple(b is None for b in state.bids)
        return Outcome(actions=state.bids, valid=tuple(not b for b in broke),
                       payoffs=_final_assets(state.setup, winner, price, broke),
                       winners=() if winner is None else (winner,), void=winner is None,
                       extra={"price": price if winner is not None else None})

    def equilibrium(self, setup: Setup) -> Outcome:
        return self.outcome(self.apply(self.initial_state(setup),
                                       {i: {"bid": v} for i, v in enumerate(setup["private_value"])}))

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        return _asset_deviation(outcome, ne, player)

    def strategy(self, state: SecondPriceState, player: int, kind: str,
                 rng: np.random.Generator | None = None, **kw: Any) -> dict[str, Any]:
        s = state.setup
        if kind in ("rational", "level_k"):
            return {"bid": s["private_value"][player]}
        if kind == "random":
            assert rng is not None
            return {"bid": round(float(rng.uniform(0.0, s["assets"][player])), 2)}
        raise ValueError(f"unknown strategy {kind!r}")


# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EnglishState:
    setup: Setup
    round: int = 0
    active: tuple[bool, ...] = ()
    exit_price: tuple[float | None, ...] = ()  # price at which each seat left
    broke: tuple[bool, ...] = ()
    done: bool = False
    winner: int | None = None
    price_paid: float | None = None
    end_reason: str | None = None

    def price(self) -> float:
        return self.setup["start_price"] + self.round * self.setup["increment"]


class EnglishAuction(Game[EnglishAuctionParams, EnglishState]):
    name: ClassVar[str] = "english_auction"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "ascending clock; bidders stay or drop each round; last one in wins"
    Params = EnglishAuctionParams
    action_key: ClassVar[str] = "decision"
    history_key: ClassVar[str] = "exit price"  # the price at which the bidder left (the winner: price paid)
    has_private_values: ClassVar[bool] = True
    info: ClassVar[GameInfo] = GameInfo(
        title="English auction", scale_key="private_value", action_axis="drop-out price / private value",
        equilibrium_note="NE: stay until the value", stakes_key="assets", stakes_inclusive=True,
        deviation_note="|asset / NE asset - 1|", policies=("rational", "random", "level_k"), dominant_value=True)

    def setup(self, params: EnglishAuctionParams, n_players: int, rng: np.random.Generator) -> Setup:
        values = _draw_values(params, n_players, rng)
        values.update(start_price=params.start_price, increment=params.increment, max_rounds=params.max_rounds)
        return Setup(n_players, values)

    def max_moves(self, params: EnglishAuctionParams, n_players: int) -> tuple[int, bool]:
        """At most ``max_rounds`` rounds, and fewer when the assets are bounded: staying at a price above
        one's assets is a rule break that counts as a drop, so the auction is over by the first round whose
        price exceeds the largest assets, round floor((A - start) / increment) + 1 (one more for rounding)."""
        top = _largest(params.assets)
        span = None if top is None else (top - params.start_price) / params.increment
        if span is None or not math.isfinite(span):  # a normal distribution: no largest draw; or a tiny increment
            return params.max_rounds, False
        return max(1, min(params.max_rounds, math.floor(span) + 3)), False

    def initial_state(self, setup: Setup) -> EnglishState:
        n = setup.n_players
        return EnglishState(setup, 0, (True,) * n, (None,) * n, (False,) * n)

    def to_move(self, state: EnglishState) -> tuple[int, ...]:
        return () if state.done else tuple(i for i, a in enumerate(state.active) if a)

    def action_spec(self, state: EnglishState, player: int) -> ActionSpec:
        return _STAY_OR_DROP

    def observation(self, state: EnglishState, player: int) -> dict[str, Any]:
        s = state.setup
        obs = _auction_observation(s, player)
        obs.update(price=fmt_num(state.price()), round=state.round + 1, start_price=fmt_num(s["start_price"]),
                   increment=fmt_num(s["increment"]), active_others=sum(state.active) - 1,
                   max_rounds=s["max_rounds"])
        return obs

    def check(self, state: EnglishState, player: int, action: dict[str, Any]) -> str | None:
        if action["decision"] == "stay" and state.price() > state.setup["assets"][player]:
            return (f"stayed at price {fmt_num(state.price())} above assets "
                    f"{fmt_num(state.setup['assets'][player])}")
        return None

    def apply(self, state: EnglishState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> EnglishState:
        assert not state.done, "apply() on a finished auction"
        price = state.price()
        active, exit_price, broke = list(state.active), list(state.exit_price), list(state.broke)
        movers = self.to_move(state)
        valid_droppers = []
        for i in movers:
            act = actions.get(i)
            if act is None or act["decision"] != "stay":
                active[i] = False
                exit_price[i] = price
                if act is None:
                    broke[i] = True
                else:
                    valid_droppers.append(i)
        stayers = [i for i in movers if active[i]]
        nxt = replace(state, active=tuple(active), exit_price=tuple(exit_price), broke=tuple(broke))
        if len(stayers) == 1:
            return replace(nxt, done=True, winner=stayers[0], price_paid=price, end_reason="last bidder")
        if not stayers:
            if state.round == 0 or not valid_droppers:
                return replace(nxt, done=True, end_reason="no bidder accepted the price")
            prev = price - state.setup["increment"]
            return replace(nxt, done=True, winner=min(valid_droppers), price_paid=prev,
                           end_reason="all remaining dropped together")
        if state.round + 1 >= state.setup["max_rounds"]:
            still_in = tuple(price if i in stayers else p for i, p in enumerate(exit_price))
            return replace(nxt, exit_price=still_in, done=True, end_reason="max_rounds reached")
        return replace(nxt, round=state.round + 1)

    def outcome(self, state: EnglishState) -> Outcome:
        assert state.done, "outcome() of an unfinished auction"
        w = state.winner
        actions = tuple(state.price_paid if i == w else state.exit_price[i] for i in range(state.setup.n_players))
        return Outcome(actions=actions, valid=tuple(not b for b in state.broke),
                       payoffs=_final_assets(state.setup, w, state.price_paid or 0.0, state.broke),
                       winners=() if w is None else (w,), void=w is None,
                       extra={"price": state.price_paid, "rounds": state.round + 1, "end": state.end_reason})

    def equilibrium(self, setup: Setup) -> Outcome:
        state = self.initial_state(setup)
        while not state.done:
            state = self._skip_to_next_drop(state)
            state = self.apply(state, {i: self.strategy(state, i, "rational") for i in self.to_move(state)})
        return self.outcome(state)

    def _skip_to_next_drop(self, state: EnglishState) -> EnglishState:
        """Jump the clock to the next round where an equilibrium bidder drops (or the last round).

        In the rounds between, every active bidder stays and nothing but the round number changes, so
        skipping them gives the same outcome as playing them; the equilibrium then costs one step per
        bidder, not per clock tick (a tiny increment or a huge max_rounds no longer hangs the start).
        """
        s = state.setup
        start, inc = s["start_price"], s["increment"]
        target = s["max_rounds"] - 1
        for i, active in enumerate(state.active):
            if not active:
                continue
            v = s["private_value"][i]
            # first round with price >= v, near; a drop after the last round (or too far for a float: a tiny
            # increment) starts the search at the last round, where k * inc still changes with k
            q = (v - start) / inc
            k = target if not math.isfinite(q) or q > target else max(state.round, math.ceil(q) - 1)
            while k < target and start + k * inc < v:
                k += 1
            while k > state.round and start + (k - 1) * inc >= v:
                k -= 1
            target = min(target, k)
        return replace(state, round=target) if target > state.round else state

    def fast_forward(self, state: EnglishState, policies: Mapping[int, tuple[str, Mapping[str, Any]]]) -> Skip | None:
        movers = self.to_move(state)
        if not movers or any(policies.get(i, ("",))[0] not in ("rational", "level_k") for i in movers):
            return None
        after = self._skip_to_next_drop(state)
        if after.round == state.round:
            return None
        return Skip(after, after.round - state.round, {i: {"decision": "stay"} for i in movers})

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        return _asset_deviation(outcome, ne, player)

    def strategy(self, state: EnglishState, player: int, kind: str,
                 rng: np.random.Generator | None = None, **kw: Any) -> dict[str, Any]:
        s = state.setup
        if kind in ("rational", "level_k"):
            return {"decision": "stay" if state.price() < s["private_value"][player] else "drop"}
        if kind == "random":
            assert rng is not None
            legal = ["drop"] + (["stay"] if state.price() <= s["assets"][player] else [])
            return {"decision": legal[int(rng.integers(len(legal)))]}
        raise ValueError(f"unknown strategy {kind!r}")
