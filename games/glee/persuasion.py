"""GLEE persuasion: a seller who knows each round's quality talks to a buyer, for ``rounds`` rounds.

Rules (GLEE, Shapira et al., section 2.3, and the released code): each round a product of high quality
(probability ``p_high``) or low quality is drawn by chance; Alice (seat 0, the seller) sees it, then either
recommends or not (``message_type = "binary"``: ``decision`` yes / no) or sends a free ``message``
(``"text"``, cheap talk). Bob (seat 1, the buyer) decides to buy or not at the price M = ``money``, then
learns the quality. A high-quality product is worth v M (``value_high``), a low-quality one c M
(``value_low``, 0 in the paper). Alice earns 1 per sale; Bob earns M (v - 1) for a high-quality buy, M (c -
1) for a low-quality one and 0 when he does not buy. Bob knows p, v and c; Alice knows v only with
``complete_information``. A long-living buyer is one player for all rounds and is told each outcome; a
myopic buyer is "a new buyer" every round who reads only statistics of earlier sales (counts, as GLEE's
code shows): his conversation starts afresh every round (``fresh_conversation``), as GLEE resets it, and
he gets no outcome reports.

Chance: round 1's quality is drawn with the session's configuration (the Host's session generator, so it
is shared by the runs and tables of a session); the quality of round t + 1 is drawn by the chance
generator the Host passes with the buyer's move of round t.

Rule breaks: an unusable seller reply sends no recommendation / message that round; an unusable buyer
reply counts as not buying. The seat is marked invalid.

Parameters (every key of the paper's Table 2; defaults are the paper's regression reference levels):
``p_high`` p (0.5), ``value_high`` v (1.25), ``money`` M (1e4), ``complete_information`` (true),
``message_type`` ("binary"), ``buyer`` ("long-living" or "myopic"), ``rounds`` T (20), ``value_low`` c
(0), ``metrics`` ("paper" or "code").

Metrics per run, with n high-quality rounds, k of them bought, r low-quality rounds not bought:
efficiency = k / n (None when n = 0), fairness = r / (T - n) (None when n = T), self_gain = [purchases / T,
(k (v - 1) + (T - n - r) (c - 1)) / T] (the buyer's utility over T M); ``metrics = "code"`` gives the
released code's buyer self-gain (k (v - 1) + r (c - 1)) / T, which charges the low-quality rounds NOT
bought. Also: purchase_rate, recommend_rate (binary), high_rounds, high_bought, low_not_bought.

Equilibrium (per-round benchmarks; no run outcome is declared since it depends on chance): with
commitment (Bayesian persuasion) the seller always recommends a high-quality product and a low-quality
one with probability q = min{p (v - 1) / ((1 - p) (1 - c)), 1} (q = min{p / (1 - p) (v - 1), 1} for c = 0),
and the obedient buyer buys on a recommendation: purchase rate p + (1 - p) q. Cheap talk has only the
babbling equilibrium: the buyer ignores the message and buys every round iff p v + (1 - p) c >= 1.
Baselines (policies): ``commitment`` (the seller commits as above, in text mode saying "I recommend" or
"I do not recommend"; the buyer obeys a binary recommendation and babbles in text mode), ``babbling``
(the seller recommends everything; the buyer buys iff p v + (1 - p) c >= 1), ``rational`` = commitment,
``random``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ..base import ActionField, ActionSpec, Game, GameInfo, GameParams, ImportedRun, Outcome, Setup
from . import reference as R
from .common import MESSAGE_CHARS, NAMES, Money, hidden_by_incomplete_information, pretty, say, set_at, two_seats

RECOMMEND = "I recommend buying this product."
ADVISE_AGAINST = "I do not recommend buying this product."


class PersuasionParams(GameParams):
    p_high: float = Field(default=0.5, gt=0, lt=1)
    """p: the probability that a round's product is of high quality."""
    value_high: float = Field(default=1.25, gt=0, le=100)
    """v: a high-quality product is worth v x M to the buyer."""
    money: Money = 10_000.0
    """M: the product's price."""
    complete_information: bool = True
    """Whether the seller is told v."""
    message_type: Literal["binary", "text"] = "binary"
    """`binary`: the seller recommends or not; `text`: a free message (cheap talk)."""
    buyer: Literal["long-living", "myopic"] = "long-living"
    """`long-living`: one buyer for every round, told each outcome; `myopic`: a new buyer each round who reads
    statistics."""
    rounds: int = Field(default=20, ge=1, le=100)
    """T: rounds per run."""
    value_low: float = Field(default=0.0, ge=0, le=100)
    """c: a low-quality product is worth c x M to the buyer (0 in the paper)."""
    metrics: Literal["paper", "code"] = "paper"
    """`paper`: the paper's metric formulas; `code`: the released code's."""

    @model_validator(mode="after")
    def _low_below_high(self) -> PersuasionParams:
        if not self.value_low < 1 <= self.value_high:
            raise ValueError(f"need value_low < 1 <= value_high (a low-quality buy loses money, a high-quality one "
                             f"does not), got value_low {self.value_low} and value_high {self.value_high}")
        return self


@dataclass(frozen=True)
class PersuasionState:
    setup: Setup
    round: int = 1
    phase: Literal["seller", "buyer", "done"] = "seller"
    quality: str = "high"  # this round's quality: "high" or "low"
    signal: str | None = None  # this round's recommendation ("yes"/"no") or message; None: none usable
    history: tuple[tuple[str, str | None, bool], ...] = ()  # per round: (quality, signal, bought)
    broke: frozenset[int] = frozenset()
    last: tuple[Any, ...] = (None, None)


def commitment_q(p: float, v: float, c: float = 0.0) -> float:
    """Probability of recommending a low-quality product under commitment: min{p (v-1) / ((1-p)(1-c)), 1}."""
    return min(p * (v - 1) / ((1 - p) * (1 - c)), 1.0)


def commitment_purchase_rate(p: float, v: float, c: float = 0.0) -> float:
    return p + (1 - p) * commitment_q(p, v, c)


def babbling_buys(p: float, v: float, c: float = 0.0) -> bool:
    """The cheap-talk buyer ignores the message and buys iff the prior expected value covers the price."""
    return p * v + (1 - p) * c >= 1 - 1e-12


def persuasion_metrics(rounds: int, n: int, k: int, r: int, value_high: float, value_low: float = 0.0,
                       reading: str = "paper") -> dict[str, Any]:
    """Efficiency, fairness and self-gains from (T, n, k, r); see the module docstring."""
    purchases = k + (rounds - n - r)
    if reading == "code":
        bob = (k * (value_high - 1) + r * (value_low - 1)) / rounds
    else:
        bob = (k * (value_high - 1) + (rounds - n - r) * (value_low - 1)) / rounds
    return {"efficiency": k / n if n else None, "fairness": r / (rounds - n) if n < rounds else None,
            "self_gain": [purchases / rounds, bob]}


def _draw(p: float, rng: np.random.Generator) -> str:
    return "high" if float(rng.random()) < p else "low"


class Persuasion(Game[PersuasionParams, PersuasionState]):
    name: ClassVar[str] = "persuasion"
    glee_game_type: ClassVar[str] = "persuasion"  # the game_type of GLEE's released config.json files
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GLEE: a seller who knows each product's quality advises a buyer, 20 rounds"
    Params = PersuasionParams
    action_key: ClassVar[str] = "decision"
    history_key: ClassVar[str] = "last reply"

    def hidden_from_history(self, params: GameParams) -> str | None:
        return hidden_by_incomplete_information(params, "how much a product is worth to the buyer")
    info: ClassVar[GameInfo] = GameInfo(
        title="Persuasion (GLEE)", moves="sequential", rounds=True, messages="public", family="glee",
        factors=(("p_high", 0.5), ("value_high", 1.25), ("money", 10000.0),
                 ("market", {"complete_information": True, "message_type": "binary", "buyer": "long-living"})),
        n_players=2,
        action_axis="purchase", policies=("rational", "random", "commitment", "babbling"),
        equilibrium_note="commitment: recommend low quality with q = min{p(v-1)/(1-p), 1}; cheap talk babbles",
        round_curve="bought")

    def setup(self, params: PersuasionParams, n_players: int, rng: np.random.Generator) -> Setup:
        two_seats(self.name, n_players)
        return Setup(2, {**params.model_dump(), "first_quality": _draw(params.p_high, rng)})

    def initial_state(self, setup: Setup) -> PersuasionState:
        return PersuasionState(setup, quality=setup["first_quality"])

    def to_move(self, state: PersuasionState) -> tuple[int, ...]:
        return {"seller": (0,), "buyer": (1,)}.get(state.phase, ())

    def action_spec(self, state: PersuasionState, player: int) -> ActionSpec:
        buyer = self._buyer_name(state.setup)
        if player == 0 and state.setup["message_type"] == "text":
            return ActionSpec((ActionField("message", "text", f"your message to {buyer}", max_length=MESSAGE_CHARS),))
        if player == 0:
            return ActionSpec((ActionField("decision", "choice", f"whether you recommend {buyer} to buy the product",
                                           choices=("yes", "no")),))
        return ActionSpec((ActionField("decision", "choice", "whether you buy this round's product",
                                       choices=("yes", "no")),))

    @staticmethod
    def _buyer_name(setup: Setup) -> str:
        return "the buyer" if setup["buyer"] == "myopic" else NAMES[1]

    def apply(self, state: PersuasionState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> PersuasionState:
        assert self.to_move(state), "apply() on a finished game"
        if state.phase == "seller":
            action = actions.get(0)
            if action is None:
                return replace(state, phase="buyer", signal=None, broke=state.broke | {0})
            signal = action["message"] if "message" in action else action["decision"]
            return replace(state, phase="buyer", signal=signal, last=set_at(state.last, 0, signal))
        action = actions.get(1)
        bought = action is not None and action["decision"] == "yes"
        broke = state.broke | ({1} if action is None else set())
        last = state.last if action is None else set_at(state.last, 1, action["decision"])
        history = (*state.history, (state.quality, state.signal, bought))
        if state.round >= int(state.setup["rounds"]):
            return replace(state, phase="done", history=history, broke=broke, last=last, signal=None)
        assert rng is not None, "persuasion draws each round's quality from the move's chance generator"
        return replace(state, round=state.round + 1, phase="seller", quality=_draw(float(state.setup["p_high"]), rng),
                       signal=None, history=history, broke=broke, last=last)

    def outcome(self, state: PersuasionState) -> Outcome:
        s = state.setup
        m, v, c = float(s["money"]), float(s["value_high"]), float(s["value_low"])
        sales = sum(1 for _, _, b in state.history if b)
        bob = sum(m * ((v if q == "high" else c) - 1) for q, _, b in state.history if b)
        payoffs = (float(sales), float(bob))
        winners = tuple(i for i, x in enumerate(payoffs) if x > 0)
        return Outcome(actions=state.last, valid=tuple(i not in state.broke for i in range(2)), payoffs=payoffs,
                       winners=winners, void=False,
                       extra={"sales": sales, "high_rounds": sum(1 for q, _, _ in state.history if q == "high")})

    def events(self, before: PersuasionState, after: PersuasionState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        base = {"round": before.round, "phase": before.phase}
        if before.phase == "seller":
            action = actions.get(0)
            if action is None:
                return {**base, "valid": False, "say": say(0, None, recommendation=None)}
            if "message" in action:
                return {**base, "valid": True, "say": say(0, action["message"], recommendation=None)}
            return {**base, "valid": True, "say": say(0, None, recommendation=action["decision"])}
        action = actions.get(1)
        bought = after.history[-1][2]
        return {**base, "valid": action is not None,
                "say": say(1, None, decision=None if action is None else action["decision"]),
                "quality": before.quality, "bought": bought, "signal": before.signal}

    # ---- prompts ----
    def observation(self, state: PersuasionState, player: int) -> dict[str, Any]:
        s = state.setup
        money, t = pretty(float(s["money"])), state.round
        v, c, p = float(s["value_high"]), float(s["value_low"]), float(s["p_high"])
        worth_high, worth_low = pretty(v * float(s["money"])), pretty(c * float(s["money"]))
        buyer = self._buyer_name(s)
        chance = f"Each product is high quality with probability {pretty(p * 100)}%, otherwise low quality."
        if player == 0:
            about = (f"A high-quality product is worth ${worth_high} to {buyer}, a low-quality one ${worth_low}."
                     if s["complete_information"] else
                     f"You don't know how much a product is worth to {buyer}.")
            role = (f"You are {NAMES[0]}, a seller. In each of the {s['rounds']} rounds you offer one product for "
                    f"${money}. You see its quality; {buyer} does not. {chance} {about} You earn a fixed amount for "
                    "every product sold, whatever its quality."
                    + (" Every round a new potential buyer arrives." if s["buyer"] == "myopic" else ""))
        else:
            role = (f"You are {'a buyer' if s['buyer'] == 'myopic' else NAMES[1] + ', a buyer'}. {NAMES[0]} sells a "
                    f"product for ${money}. {chance} A high-quality product is worth ${worth_high} to you, a "
                    f"low-quality one ${worth_low}. {NAMES[0]} knows the quality before you decide; you learn it "
                    "after you decide." + ("" if s["buyer"] == "myopic" else
                                           f" The game lasts {s['rounds']} rounds, one product per round."))
        if state.phase == "seller" and player == 0:
            lines = [f"Round {t}", f"This round's product is {state.quality}-quality."]
            if s["buyer"] == "myopic":
                lines.append("A new potential buyer has arrived!")
            lines.append(f"Decide whether to recommend {buyer} to buy the product." if s["message_type"] == "binary"
                         else f"Send {buyer} a message to help them decide whether to buy the product.")
            request = "\n".join(lines)
        elif state.phase == "buyer" and player == 1:
            lines = [f"Round {t}"]
            if s["buyer"] == "myopic":
                sold = sum(1 for *_, b in state.history if b)
                high = sum(1 for q, _, b in state.history if b and q == "high")
                lines.append(f"Statistics: {sold} of the {len(state.history)} earlier buyers bought the product "
                             f"offered to them; {high} of those products were high quality. You are buyer number {t}."
                             if state.history else "You are the first buyer: no product has been sold yet.")
            if state.signal is None:
                lines.append(f"{NAMES[0]} sent you nothing this round.")
            elif s["message_type"] == "text":
                lines.append(f"{NAMES[0]}'s message: {state.signal}")
            else:
                lines.append(f"{NAMES[0]} {'recommends' if state.signal == 'yes' else 'does not recommend'} "
                             "you to buy the product.")
            lines.append("Would you like to buy the current product?")
            request = "\n".join(lines)
        else:
            request = "Wait for the other player."
        return {"player_name": NAMES[player], "role_message": role, "round": t, "rounds": s["rounds"],
                "request": request}

    def fresh_conversation(self, state: PersuasionState, player: int) -> bool:
        return player == 1 and state.setup["buyer"] == "myopic"  # a new buyer each round

    def report(self, before: PersuasionState, after: PersuasionState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any] | None:
        s = before.setup
        if before.phase == "seller":
            if player == 0 and actions.get(0) is None:
                return {"what": f"Your reply in round {before.round} could not be used: {self._buyer_name(s)} got "
                                "nothing from you."}
            return None
        quality, _, bought = after.history[-1]
        buyer = self._buyer_name(s)
        if player == 0:
            return {"what": f"{buyer[0].upper() + buyer[1:]} {'bought' if bought else 'did not buy'} the product."}
        if s["buyer"] == "myopic":
            return None  # this buyer leaves; the next one reads only the statistics
        worth = pretty((float(s["value_high"]) if quality == "high" else float(s["value_low"])) * float(s["money"]))
        head = ("Your answer could not be used: you did not buy. " if actions.get(1) is None else "")
        if bought:
            return {"what": f"You bought the product from {NAMES[0]} for ${pretty(float(s['money']))}! The product was "
                            f"{quality}-quality. It's worth ${worth} for you."}
        return {"what": f"{head}You did not buy. The product was {quality}-quality; it would have been worth "
                        f"${worth} for you."}

    # ---- capabilities ----
    def max_moves(self, params: PersuasionParams, n_players: int) -> tuple[int, bool]:
        return int(params.rounds), True

    def strategy(self, state: PersuasionState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        p, v, c = float(s["p_high"]), float(s["value_high"]), float(s["value_low"])
        text = s["message_type"] == "text"
        if kind not in self.info.policies or state.phase == "done":
            return super().strategy(state, player, kind, rng, **kw)
        if kind == "random":
            assert rng is not None
            if player == 0 and text:
                return {"message": (RECOMMEND, ADVISE_AGAINST, "Hello!")[int(rng.integers(3))]}
            return {"decision": ("yes", "no")[int(rng.integers(2))]}
        if player == 0:
            if kind == "babbling":
                recommend = True
            else:  # commitment (= rational)
                gen = rng if rng is not None else np.random.default_rng(state.round)
                recommend = state.quality == "high" or float(gen.random()) < commitment_q(p, v, c)
            if text:
                return {"message": RECOMMEND if recommend else ADVISE_AGAINST}
            return {"decision": "yes" if recommend else "no"}
        if kind != "babbling" and not text and state.signal is not None:
            return {"decision": state.signal}  # obey the committed recommendation
        return {"decision": "yes" if babbling_buys(p, v, c) else "no"}

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return persuasion_run_metrics(setup.to_dict(), [r["events"] for r in rounds])

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        """One of GLEE's released persuasion games (games/glee/reference.py): GLEE's reading of its rows is
        the outcome of record; the replay of the rows through these rules is the check."""
        return _persuasion_from_reference(self, raw)


def persuasion_run_metrics(params: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ends = [e for e in events if e["phase"] == "buyer"]
    recs = [e["say"]["recommendation"] for e in events if e["phase"] == "seller"]
    played = len(ends)
    if not played:
        return {"efficiency": None, "fairness": None, "self_gain": [None, None], "purchase_rate": None}
    n = sum(1 for e in ends if e["quality"] == "high")
    k = sum(1 for e in ends if e["quality"] == "high" and e["bought"])
    r = sum(1 for e in ends if e["quality"] == "low" and not e["bought"])
    out = persuasion_metrics(played, n, k, r, float(params["value_high"]), float(params.get("value_low", 0.0)),
                             str(params.get("metrics", "paper")))
    binary = [x for x in recs if x is not None]
    return {**out, "purchase_rate": sum(1 for e in ends if e["bought"]) / played,
            "recommend_rate": sum(1 for x in binary if x == "yes") / len(binary) if binary else None,
            "high_rounds": n, "high_bought": k, "low_not_bought": r}


# ---- GLEE's released games (games/glee/reference.py) ----

def _yes(text: str | None) -> bool | None:
    if text is None:
        return None
    t = text.strip().lower()
    return True if t == "yes" else False if t == "no" else None


def _replay(game: Persuasion, setup: Setup, by_round: Mapping[int, list[Mapping[str, Any]]], names: Sequence[str],
            qualities: Sequence[str], text: bool, human: bool,
            causes: set[str]) -> tuple[Any, list[dict[str, Any]], str | None]:
    """Our replay of the rows round by round, each round's recorded quality standing for the chance draw:
    the state it reached, the log, and where it stopped (None when every round was played)."""
    state = game.initial_state(setup)
    log: list[dict[str, Any]] = []
    for t, (number_, rs) in enumerate(sorted(by_round.items())):
        movers = [row for row in rs if R.seat_of(R.cell(row, "player"), names) is not None]
        if number_ != t + 1 or [R.seat_of(R.cell(x, "player"), names) for x in movers] != [0, 1]:
            causes.add("turn_order")
            return state, log, f"round {number_}: expected a Nature row, then {names[0]}, then the buyer"
        if not game.to_move(state):
            causes.add("move_after_end")
            return state, log, f"round {number_}: a move after the game ended"
        seller, buyer = movers
        if text:
            say_: dict[str, Any] | None = {"message": R.message(seller, human) or ""}
        else:
            rec = _yes(R.cell(seller, "decision"))
            say_ = None if rec is None else {"decision": "yes" if rec else "no"}
            if rec is None:
                causes.add("unreadable_move")
        buy = _yes(R.cell(buyer, "decision"))
        if buy is None:
            causes.add("unreadable_move")
        for seat, action in ((0, say_), (1, None if buy is None else {"decision": "yes" if buy else "no"})):
            after = game.apply(state, {seat: action}, np.random.default_rng(0))
            log.append({"round": len(log), "actions": [action if j == seat else None for j in (0, 1)],
                        "events": game.events(state, after, {seat: action})})
            state = after
        if t + 1 < len(qualities) and state.phase == "seller":
            state = replace(state, quality=qualities[t + 1])
    return state, log, None


def _persuasion_from_reference(game: Persuasion, raw: Mapping[str, Any]) -> ImportedRun:
    config, rows, human = raw["config"], list(raw["rows"]), bool(raw.get("human"))
    p = R.number_arg(config, "p")
    if math.isclose(p, 1 / 3, abs_tol=1e-6):
        p = 1 / 3  # the human configs write 0.333333333, the model configs 0.3333333333333333
    total = R.whole_arg(config, "total_rounds", 20)
    text = str(R.arg(config, "seller_message_type", "text")) == "text"
    myopic = R.as_bool(R.arg(config, "is_myopic", False), "is_myopic")
    params: dict[str, Any] = {
              "p_high": p, "value_high": R.number_arg(config, "v"), "money": R.number_arg(config, "product_price"),
              "complete_information": R.as_bool(R.arg(config, "is_seller_know_cv", True), "is_seller_know_cv"),
              "message_type": "text" if text else "binary", "buyer": "myopic" if myopic else "long-living",
              "rounds": total, "value_low": R.number_arg(config, "c", 0.0)}
    names = R.public_names(config)
    if not rows:
        raise ValueError("game.csv has no rows")
    by_round: dict[int, list[Mapping[str, Any]]] = {}
    for row in rows:
        t = R.row_round(row)
        if t is None:
            raise ValueError(f"game.csv: a row without a round number: {dict(row)!r}"[:200])
        by_round.setdefault(t, []).append(row)
    # GLEE's reading (analyze/configs.py): per round the first row is Nature's quality, the last the buyer's
    # decision; a purchase is "yes" in it
    qualities = ["high" if "high" in (R.cell(rs[0], "round_quality") or "") else "low" for _, rs in
                 sorted(by_round.items())]
    deals = ["yes" in (R.cell(rs[-1], "decision") or "") for _, rs in sorted(by_round.items())]
    played = len(qualities)
    n = sum(1 for q in qualities if q == "high")
    k = sum(1 for q, d in zip(qualities, deals) if q == "high" and d)
    r = sum(1 for q, d in zip(qualities, deals) if q == "low" and not d)
    v, c, m = params["value_high"], params["value_low"], params["money"]
    last_buyer = R.seat_of(R.cell(rows[-1], "player"), names) == 1
    if last_buyer and R.cell(rows[-1], "decision") is not None and _yes(R.cell(rows[-1], "decision")) is None:
        R.final_decision(rows, ("yes", "no"))  # the last decision ends the game: a cut "ye" is refused
    extra = {"purchase_rate": sum(deals) / played, "high_rounds": n, "high_bought": k, "low_not_bought": r}
    recorded: dict[str, Any] = {"finished": last_buyer and R.cell(rows[-1], "decision") is not None,
                                "rounds": played, "purchases": sum(deals), "high_rounds": n, "high_bought": k,
                                "low_not_bought": r, "agreement": any(deals),
                                "setup": {"first_quality": qualities[0]}}
    recorded["metrics"] = {**persuasion_metrics(played, n, k, r, v, c, "paper"), **extra}
    recorded["metrics_code"] = {**persuasion_metrics(played, n, k, r, v, c, "code"), **extra}
    pay = (float(sum(deals)), math.fsum(m * ((v if q == "high" else c) - 1) for q, d in zip(qualities, deals) if d))
    recorded["payoff"] = list(pay)
    recorded["winners"] = [i for i in (0, 1) if pay[i] > 0]
    causes: set[str] = set()
    if played < total:
        causes.add("rounds_short")
    # our replay: each round's recorded quality stands for the chance draw
    setup = Setup(2, {**PersuasionParams(**params).model_dump(), "first_quality": qualities[0]})
    state, log, error = _replay(game, setup, by_round, names, qualities, text, human, causes)
    replayed = None
    if error is None:
        ends = [e["events"] for e in log if e["events"]["phase"] == "buyer"]
        replayed = {"purchases": sum(1 for e in ends if e["bought"]),
                    "high_rounds": sum(1 for e in ends if e["quality"] == "high"),
                    "high_bought": sum(1 for e in ends if e["quality"] == "high" and e["bought"]),
                    "low_not_bought": sum(1 for e in ends if e["quality"] == "low" and not e["bought"])}
    check = R.verdict(recorded, replayed, ("purchases", "high_rounds", "high_bought", "low_not_bought"), causes,
                      error)
    pay_replay = list(game.outcome(state).payoffs) if error is None else None
    return ImportedRun(dict(params), 2, log, pay_replay, raw.get("messages"), recorded, check)
