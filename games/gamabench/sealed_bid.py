"""GAMA-Bench (6): repeated sealed-bid auction, first-price or second-price, with a report after each round.

Rules: in every round each of N players gets a private valuation and submits one sealed bid. The highest
valid bid wins the item; a tie at the top is broken at random (the round's chance generator; without one,
the lowest id among the tied wins). First-price: the winner pays its own bid. Second-price: the winner
pays the second-highest valid bid (the tied top bid on a tie, 0 when nobody else bid validly). The winner's
utility is valuation - price, everyone else's 0; a run's payoff is the sum over rounds.

Valuations exactly as the reference: round k (0-based) gives player i element i of
``random.Random(valuation_seed + k).sample(range(valuation_min, valuation_max + interval, interval), N)``,
so they are identical in every run and session and need no generator (a local, seeded Random is pure).

A bid is a whole number >= 0 (up to ``BID_CAP``). The reference accepts any integer; bids above the
valuation stay legal moves here too, only bad ones (they can lose money). Negative, fractional or larger
bids are rule breaks: such a player has no bid that round, cannot win, earns 0.

Parameters (defaults as the leaderboard): ``valuation_min`` 0, ``valuation_max`` 200, ``interval`` 10,
``valuation_seed`` 42, ``rounds`` 20, ``mode`` "first" or "second", ``scoring`` "code", "paper" or "oct2024".

Score (per run, the reference code since 2024-11-20): the mean over rounds and players of
max(0, (v - b) / v') x 100, v' = v or 1 when v = 0. A rule-breaking reply counts 0 (the minimum of the
clipped term), so it never raises a score. ``scoring = "paper"`` is the same formula: the spec's
discrepancy section says the ICLR paper's numbers (Gemini-1.5-Pro 26.9) were made with this current
formula, so paper and code agree. ``scoring = "oct2024"`` is the formula of the Oct-2024 board
(mean(v - b) / valuation_max x 100, unclipped, can be negative); a rule break counts as a bid of
max(v, valuation_max) there, no better than any bid up to the top valuation. Because of the v = 0 slots
the best code score is below 100 (about 94.5 at the defaults). The leaderboard scores first-price only.

Equilibrium: second-price: bidding one's valuation is weakly dominant; the highest valuation (valuations
are distinct) wins and pays the second-highest valuation. First-price: there is no dominant strategy and,
with valuations drawn without replacement from a grid and whole-number bids, no equilibrium is declared.
The ``rational`` baseline bids floor((N - 1) / N x v) there, the symmetric Bayes-Nash bid for independent
uniform valuations, an approximation of this draw. Deviation (second-price): |mean bid - mean valuation| /
(valuation_max - valuation_min).

``level_k`` follows Crawford and Iriberri's level-k auctions (Econometrica 2007), with valuations read as
independent and uniform on [valuation_min, valuation_max] = [m, M]. Level 0 is their truthful bidder: it
bids its valuation v. Second price: bidding v is a best response to any bids, so every level bids v.
First price: level 1 best-responds to N - 1 truthful bidders, maximising (v - b) ((b - m) / (M - m))^(N-1),
which gives b = m + (N - 1) / N x (v - m); level 2 faces bids that are the same linear map of uniform
valuations, and its best response is that same bid, so every level k >= 1 bids floor(m + (N - 1)(v - m) / N)
(their random level 0, bidding uniformly on [m, M], leads to the same bids). With m = 0 this is the rational
bid: in the uniform case level-k and equilibrium bidding coincide, as Crawford and Iriberri note.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from random import Random
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ..base import ActionField, GameInfo, GameParams, ImportedRun, Outcome, Setup, fmt_num, whole_number
from ..repeated import RepeatedGame, RepeatedState
from .reference import judged, outside_rules, player_count

BID_CAP = 1_000_000_000  # bids above this are rule breaks: keeps payoffs finite for any reply


class SealedBidParams(GameParams):
    valuation_min: int = Field(default=0, ge=0, le=1_000_000)
    """The lowest valuation on the grid."""
    valuation_max: int = Field(default=200, ge=1, le=1_000_000)
    """The highest valuation on the grid."""
    interval: int = Field(default=10, ge=1, le=1_000_000)
    """The grid's step: valuations are drawn without replacement from min, min + interval, ..."""
    valuation_seed: int = Field(default=42, ge=0, le=2**32)
    """The seed of the valuations' draw (the leaderboard's 42), apart from the session's seed."""
    rounds: int = Field(default=20, ge=1, le=1000)
    """Rounds per run, each with a report."""
    mode: Literal["first", "second"] = "first"
    """`first`: the winner pays its bid (the scored mode); `second`: the second-highest bid."""
    scoring: Literal["code", "paper", "oct2024"] = "code"
    """`code`: the released code's 0-100 score; `paper`: the paper's formula; `oct2024`: the board's earlier
    formula."""

    @model_validator(mode="after")
    def _grid(self) -> SealedBidParams:
        if self.valuation_max <= self.valuation_min:
            raise ValueError(f"valuation_max ({self.valuation_max}) must be greater than valuation_min "
                             f"({self.valuation_min})")
        if (self.valuation_max - self.valuation_min) % self.interval:
            raise ValueError(f"interval ({self.interval}) must divide valuation_max - valuation_min "
                             f"({self.valuation_max - self.valuation_min})")
        return self


@lru_cache(maxsize=4096)
def round_valuations(lo: int, hi: int, step: int, seed: int, round_: int, n: int) -> tuple[int, ...]:
    """Round ``round_``'s valuations, player i gets element i (the reference's draw, reproduced exactly)."""
    return tuple(Random(seed + round_).sample(range(lo, hi + step, step), n))


def _valuations(setup: Setup, round_: int) -> tuple[int, ...]:
    return round_valuations(setup["valuation_min"], setup["valuation_max"], setup["interval"],
                            setup["valuation_seed"], round_, setup.n_players)


class SealedBidAuction(RepeatedGame[SealedBidParams]):
    name: ClassVar[str] = "sealed_bid_auction"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GAMA-Bench: K rounds of a sealed-bid auction (first or second price); 0-100 score"
    Params = SealedBidParams
    action_key: ClassVar[str] = "bid"
    history_key: ClassVar[str] = "mean bid"
    has_private_values: ClassVar[bool] = True
    info: ClassVar[GameInfo] = GameInfo(
        title="Sealed-bid auction", rounds=True, score=True, family="gamabench",
        policies=("rational", "random", "level_k"),
        reference=(("sealed_bid_auction/first_price", {"mode": "first"}),
                   ("sealed_bid_auction/second_price", {"mode": "second"})),
        action_axis="mean bid / valuation_max", scale_key="valuation_max",
        equilibrium_note="NE (second price): bid = valuation; first price: none declared",
        deviation_note="|mean bid - mean valuation| / (max - min)", round_curve="bid_ratio")

    def setup(self, params: SealedBidParams, n_players: int, rng: np.random.Generator) -> Setup:
        slots = (params.valuation_max - params.valuation_min) // params.interval + 1
        if n_players > slots:
            raise ValueError(f"{n_players} players need {n_players} distinct valuations, but the grid "
                             f"{params.valuation_min}..{params.valuation_max} step {params.interval} has {slots}")
        if n_players < 1:
            raise ValueError("the auction needs at least one player")
        return Setup(n_players, params.model_dump())

    def reply_field(self, state: RepeatedState, player: int) -> ActionField:
        return ActionField("bid", "number", "your bid for this round's item", 0.0, float(BID_CAP), integer=True)

    def round_extra(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                    rng: np.random.Generator | None) -> dict[str, Any]:
        vals = _valuations(setup, round_)
        bids = [(c, i) for i, c in enumerate(choices) if c is not None]
        if not bids:
            return {"valuations": list(vals), "winner": None, "payment": None}
        top = max(b for b, _ in bids)
        tied = [i for b, i in bids if b == top]
        winner = tied[int(rng.integers(len(tied)))] if rng is not None and len(tied) > 1 else tied[0]
        if setup["mode"] == "first":
            price = top
        else:
            others = [b for b, i in bids if i != winner]
            price = max(others) if others else 0
        return {"valuations": list(vals), "winner": winner, "payment": price}

    def round_payoffs(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                      extra: Mapping[str, Any]) -> tuple[float, ...]:
        w = extra["winner"]
        return tuple(float(extra["valuations"][i] - extra["payment"]) if i == w else 0.0
                     for i in range(setup.n_players))

    def round_events(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                     extra: Mapping[str, Any], payoffs: tuple[float, ...]) -> dict[str, Any]:
        ratios = [c / v for c, v in zip(choices, extra["valuations"]) if c is not None and v > 0]
        return {**extra, "bids": list(choices), "payoffs": list(payoffs),
                "bid_ratio": math.fsum(ratios) / len(ratios) if ratios else None}

    def observation(self, state: RepeatedState, player: int) -> dict[str, Any]:
        s = state.setup
        return {"n_players": s.n_players, "rounds": s["rounds"], "round": state.round + 1,
                "valuation": _valuations(s, state.round)[player],
                "valuation_min": s["valuation_min"], "valuation_max": s["valuation_max"],
                "interval": s["interval"],
                "price_rule": "its own bid" if s["mode"] == "first" else "the second-highest bid"}

    def report(self, before: RepeatedState, after: RepeatedState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any]:
        r = after.round - 1
        extra = after.extra[r]
        mine = after.choices[r][player]
        w = extra["winner"]
        won = w == player
        return {"round": r + 1, "your_valuation": extra["valuations"][player],
                "your_bid": "no valid bid" if mine is None else fmt_num(mine),
                "winning_bid": "none" if w is None else fmt_num(after.choices[r][w]),
                "price": "none" if w is None else fmt_num(extra["payment"]),
                "result": "won the item" if won else "did not win the item",
                "utility": fmt_num(after.payoffs[r][player])}

    # ---- capabilities ----
    def max_moves(self, params: SealedBidParams, n_players: int) -> tuple[int, bool]:
        return int(params.rounds), True

    def equilibrium(self, setup: Setup) -> Outcome | None:
        if setup["mode"] != "second":
            return None
        n, k = setup.n_players, setup["rounds"]
        pay = [0.0] * n
        for r in range(k):
            vals = _valuations(setup, r)
            order = sorted(range(n), key=lambda i: -vals[i])
            w = order[0]
            pay[w] += vals[w] - (vals[order[1]] if n > 1 else 0)
        means = tuple(math.fsum(_valuations(setup, r)[i] for r in range(k)) / k for i in range(n))
        best = max(pay)
        return Outcome(actions=means, valid=(True,) * n, payoffs=tuple(pay),
                       winners=tuple(i for i, p in enumerate(pay) if p == best), void=False)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        a = outcome.actions[player]
        span = setup["valuation_max"] - setup["valuation_min"]
        return None if a is None else abs(a - ne.actions[player]) / span

    def strategy(self, state: RepeatedState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        v = _valuations(s, state.round)[player]
        if kind == "rational":
            n = s.n_players
            return {"bid": v if s["mode"] == "second" else (n - 1) * v // n}
        if kind == "random":
            assert rng is not None
            return {"bid": int(rng.integers(0, s["valuation_max"] + 1))}
        if kind == "level_k":
            if s["mode"] == "second" or int(kw.get("k", 1)) == 0:
                return {"bid": v}
            n, m = s.n_players, s["valuation_min"]
            return {"bid": m + (n - 1) * (v - m) // n}
        return super().strategy(state, player, kind, rng, **kw)

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        per_round = []
        for r in rounds:
            vals = r["events"]["valuations"]
            bids = [None if a is None else a.get("bid") for a in r["actions"]]
            per_round.append(list(zip(vals, bids)))
        return sealed_bid_score(per_round, setup["valuation_max"], setup.values.get("scoring", "code"))

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        pairs = [(a["bid"], v) for r in rounds for a, v in zip(r["actions"], r["events"]["valuations"])
                 if a is not None and a.get("bid") is not None]
        over = sum(1 for b, v in pairs if b > v)
        return {"bids": len(pairs), "bids_above_valuation": over}

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        meta = raw["meta"]
        records = raw["round_records"]
        players = raw["player_data"]
        n = player_count(raw)
        k = whole_number(meta.get("round_id", len(records)), "meta.round_id")
        mode = "second" if "second" in str(meta.get("mode", "highest bid")) else "first"
        # the reference bumps its seed once per round and stores the final value in meta
        seed = whole_number(meta.get("seed", 42 + k), "meta.seed") - k
        params: dict[str, Any] = {"valuation_min": whole_number(meta.get("valuation_min", 0), "meta.valuation_min"),
                  "valuation_max": whole_number(meta.get("valuation_max", 200), "meta.valuation_max"),
                  "interval": whole_number(meta.get("interval", 10), "meta.interval"), "valuation_seed": seed,
                  "rounds": len(records), "mode": mode}
        state = self.initial_state(self.setup(SealedBidParams(**params), n, np.random.default_rng(0)))
        log = []
        problems: list[str] = []
        for r, rec in enumerate(records):
            bids = [whole_number(players[i]["records"][r], f"round {r + 1}, player {i}: bid", "bad_move")
                    for i in range(n)]
            problems += judged(self, state, {i: {"bid": b} for i, b in enumerate(bids)}, r)
            winner = rec.get("bid_winner")
            w = int(str(winner).rsplit("_", 1)[-1]) if winner is not None else None
            utility = [float(u) for u in rec.get("utility", [0] * n)]
            vals = [int(v) for v in rec["valuations"]]
            ratios = [b / v for b, v in zip(bids, vals) if v > 0]
            log.append({"round": r, "actions": [{"bid": b} for b in bids],
                        "events": {"valuations": vals, "winner": w,
                                   "payment": rec.get("bid_winner_payment"), "bids": bids, "payoffs": utility,
                                   "bid_ratio": math.fsum(ratios) / len(ratios) if ratios else None}})
        payoffs = [math.fsum(float(u) for u in p.get("utility", [])) for p in players[:n]]
        messages = [list(p["prompt"]) for p in players[:n]] if all("prompt" in p for p in players[:n]) else None
        return ImportedRun(params, n, log, payoffs, messages, check=outside_rules(None, problems))


def sealed_bid_score(per_round: Sequence[Sequence[tuple[float, float | None]]], vmax: float,
                     scoring: str = "code") -> float | None:
    """The per-run score from each round's (valuation, bid or None) pairs (see the module docstring)."""
    terms = []
    for pairs in per_round:
        for v, b in pairs:
            if scoring == "oct2024":
                terms.append((v - (max(v, vmax) if b is None else b)) / vmax)
            else:
                terms.append(0.0 if b is None else max(0.0, (v - b) / (v if v else 1)))
    if not terms:
        return None
    return math.fsum(terms) / len(terms) * 100
