"""GLEE bargaining: Rubinstein alternating offers over a sum of money, discounting shown as inflation.

Rules (GLEE, Shapira et al., section 2.1): Alice (seat 0) and Bob (seat 1) divide ``money`` (M). In odd
rounds t Alice proposes (alice_gain, bob_gain), summing to M, and Bob accepts or rejects; in even rounds Bob
proposes and Alice answers. Acceptance in round t pays Alice alice_gain x delta_alice^(t-1) and Bob
bob_gain x delta_bob^(t-1); after ``max_rounds`` rounds without acceptance both get 0. Players read the
discount as inflation of (1 - delta) x 100 % per round. A proposer may attach a public ``message`` when
``messages_allowed``. Each player knows its own delta, the other's only with ``complete_information``.
The horizon is announced only when max_rounds <= 20; the paper's "infinite" horizon is max_rounds = 99
(the game stops there; the players are not told).

Rule breaks: an unusable offer (gains not summing to M, negative, not numbers) leaves the round without an
offer, so it passes like a rejection; an unusable answer counts as a rejection. The seat is marked invalid.

Parameters (every key of the paper's Table 2; defaults are the paper's regression reference levels):
``money`` M (1e4), ``delta_alice`` and ``delta_bob`` (0.9), ``max_rounds`` T (99 = infinite),
``complete_information`` (true), ``messages_allowed`` (false); ``show_inflation_update`` (true: the
responder is reminded of the accumulated inflation, as GLEE's code does, proposers never) and ``metrics``
("paper" or "code").

Metrics per run (normalised by M): with a deal in round t at Alice share p, efficiency = delta_A^(t-1) p +
delta_B^(t-1) (1 - p), fairness = 1 - 4 (p - 1/2)^2, self_gain = [p delta_A^(t-1), (1 - p) delta_B^(t-1)].
Without a deal the paper's values are 0, 1 and [0, 0]; ``metrics = "code"`` gives the released code's
reading (it records both gains as 0, so p = 0: efficiency = delta_B^(t-1), fairness 0, self_gain [0,
delta_B^(t-1)] with t the rounds played). Also: agreement, rounds, alice_share, first_offer_alice_share.

Equilibrium (subgame perfect, the responder accepts when indifferent): with an announced horizon T,
backward induction x_T = 1, x_t = 1 - delta_responder(t) x_(t+1) gives the proposer's share x_t, Alice's
x_1; with the unannounced ("infinite") horizon, p* = (1 - delta_B) / (1 - delta_A delta_B) for Alice
(Bob proposing keeps (1 - delta_A) / (1 - delta_A delta_B)); p* is undefined when both deltas are 1 (no
equilibrium is declared; the baseline then offers half). Agreement is immediate. The ``rational`` baseline
proposes that share (rounded to cents) and accepts an offer worth at least its discounted continuation
share (less one cent); it uses both deltas even when the prompt hides the other's. Deviation: |payoff -
equilibrium payoff| / M.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..base import ActionField, ActionSpec, GameInfo, GameParams, ImportedRun, Outcome, Setup, foreign_move_problem
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

CENT = 0.01
INFINITE = 99  # the paper's "infinite" horizon (GLEE's data also writes 25 for it; any value above 20)


class BargainingParams(GameParams):
    money: Money = 10_000.0
    """M: the amount Alice and Bob divide."""
    delta_alice: float = Field(default=0.9, gt=0, le=1)
    """Alice's discount factor per round (read as inflation of (1 - delta) x 100 %)."""
    delta_bob: float = Field(default=0.9, gt=0, le=1)
    """Bob's discount factor per round."""
    max_rounds: int = Field(default=99, ge=1, le=200)
    """T: after this many rounds without a deal both get 0; announced only when at most 20 (99: the paper's
    infinite horizon)."""
    complete_information: bool = True
    """Whether each player is told the other's discount factor."""
    messages_allowed: bool = False
    """Whether a proposer may attach a free-text message."""
    show_inflation_update: bool = True
    """Remind the responder of the accumulated inflation, as GLEE's code does."""
    metrics: Literal["paper", "code"] = "paper"
    """`paper`: the paper's metric formulas; `code`: the released code's."""


@dataclass(frozen=True)
class BargainingState:
    setup: Setup
    round: int = 1  # 1-based, as the players read it
    phase: Literal["offer", "respond", "done"] = "offer"
    offer: tuple[float, float] | None = None  # (alice_gain, bob_gain) on the table
    message: str | None = None
    deal: tuple[int, float, float] | None = None  # (round, alice_gain, bob_gain) once accepted
    broke: frozenset[int] = frozenset()
    last: tuple[Any, ...] = (None, None)
    opening_missed: bool = False  # round 1 had no usable offer: Bob, who has not spoken yet, is told so



def backward_induction(delta_alice: float, delta_bob: float, rounds: int) -> list[float]:
    """The proposer's share x_t for t = 1..rounds (index t - 1): x_T = 1, x_t = 1 - delta_resp(t) x_(t+1)."""
    deltas = (delta_alice, delta_bob)
    x = [0.0] * rounds
    x[-1] = 1.0
    for t in range(rounds - 1, 0, -1):
        responder = 1 - proposer(t)
        x[t - 1] = 1.0 - deltas[responder] * x[t]
    return x


def stationary_share(delta_alice: float, delta_bob: float) -> float | None:
    """Alice's infinite-horizon SPE share p* = (1 - d_B) / (1 - d_A d_B); None when both deltas are 1."""
    if delta_alice == 1 and delta_bob == 1:
        return None
    return (1 - delta_bob) / (1 - delta_alice * delta_bob)


def _g(setup: Setup, seat: int) -> float:
    return float(setup["delta_alice"] if seat == 0 else setup["delta_bob"])


def _announced(setup: Setup) -> bool:
    return int(setup["max_rounds"]) <= ANNOUNCED_MAX


def proposer_share(setup: Setup, t: int) -> float:
    """The share the SPE gives the proposer of round t (half when the infinite game has no SPE)."""
    da, db = _g(setup, 0), _g(setup, 1)
    if _announced(setup):
        return backward_induction(da, db, int(setup["max_rounds"]))[t - 1]
    p = stationary_share(da, db)
    if p is None:
        return 0.5
    return p if proposer(t) == 0 else stationary_share(db, da) or 0.0


# The ``anchor`` opponent: at its first offer it keeps all but ANCHOR_LEFT of the money with probability
# ANCHOR_P, else (and afterwards) it plays ``rational``. Rejecting the anchor costs the responder nothing in the
# SPE (its continuation is worth what the equilibrium offer gives), accepting it loses most of its share: the
# fixed opponent of the bench (suite v2) against which always-accepting is not the best reply.
ANCHOR_P = 0.75
ANCHOR_LEFT = 0.1


def rational_offer(setup: Setup, t: int) -> dict[str, float]:
    money = float(setup["money"])
    me = proposer(t)
    mine = round(money * proposer_share(setup, t), 2)
    gains = {me: mine, 1 - me: money - mine}
    return {"alice_gain": gains[0], "bob_gain": gains[1]}


def acceptance_threshold(setup: Setup, t: int) -> float:
    """Money the responder of round t needs to accept: its discounted share as next round's proposer."""
    if t >= int(setup["max_rounds"]):
        return 0.0
    responder = 1 - proposer(t)
    return float(setup["money"]) * _g(setup, responder) * proposer_share(setup, t + 1)


def bargaining_metrics(delta_alice: float, delta_bob: float, deal_round: int | None, alice_share: float | None,
                       rounds_played: int, reading: str = "paper") -> dict[str, Any]:
    """Efficiency, fairness and self-gains (normalised by M) of one run; see the module docstring."""
    if deal_round is None or alice_share is None:
        if reading == "code":
            bob = delta_bob ** (rounds_played - 1)
            return {"efficiency": bob, "fairness": 0.0, "self_gain": [0.0, bob]}
        return {"efficiency": 0.0, "fairness": 1.0, "self_gain": [0.0, 0.0]}
    p = alice_share
    fa, fb = delta_alice ** (deal_round - 1), delta_bob ** (deal_round - 1)
    return {"efficiency": fa * p + fb * (1 - p), "fairness": 1 - 4 * (p - 0.5) ** 2,
            "self_gain": [p * fa, (1 - p) * fb]}


def inflation_message(setup: Setup, seat: int) -> str:
    mine, theirs = _g(setup, seat), _g(setup, 1 - seat)
    if mine == 1 and theirs == 1:
        return ""
    rival = NAMES[1 - seat]
    text = f"Beware of inflation! With each passing round, the money is worth {pretty((1 - mine) * 100)}% less for you."
    if not setup["complete_information"]:
        return text + f" You don't know how the inflation affects {rival}."
    if mine == theirs:
        return text[:-len(" for you.")] + f" for both you and {rival}."
    return text + f" For {rival}, the money is worth {pretty((1 - theirs) * 100)}% less."


def inflation_update(setup: Setup, seat: int, t: int) -> str:
    """The responder's reminder of accumulated inflation (GLEE shows it to responders only)."""
    if t <= 1 or not setup["show_inflation_update"]:
        return ""
    who = [("you", _g(setup, seat))]
    if setup["complete_information"]:
        who.append((NAMES[1 - seat], _g(setup, 1 - seat)))
    lossy = [f"the money {name} gains is worth {pretty((1 - d ** (t - 1)) * 100)}% less than in the first round."
             for name, d in who if d < 1]
    if not lossy:
        return ""
    same = [f"the money {name} gains is worth the same as in the first round." for name, d in who if d == 1]
    rest = " ".join(s[0].upper() + s[1:] for s in lossy[1:] + same)
    return "Due to inflation, " + lossy[0] + (" " + rest if rest else "") + "\n"


class Bargaining(AlternatingOffers[BargainingParams, BargainingState]):
    name: ClassVar[str] = "bargaining"
    glee_game_type: ClassVar[str] = "bargaining"  # the game_type of GLEE's released config.json files
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GLEE: alternating offers over a sum of money, discounting shown as inflation"
    State = BargainingState
    Params = BargainingParams
    hidden = "how the inflation affects the other"
    action_key: ClassVar[str] = "alice_gain"
    history_key: ClassVar[str] = "last reply"
    info: ClassVar[GameInfo] = GameInfo(
        title="Bargaining (GLEE)", moves="sequential", rounds=True, messages="public", family="glee",
        factors=(("delta_alice", 0.9), ("delta_bob", 0.9), ("money", 10000.0),
                 ("market", {"complete_information": True, "messages_allowed": False, "max_rounds": 99})),
        n_players=2, scale_key="money", action_axis="share of the money",
        equilibrium_note="SPE: immediate agreement, Alice p* = (1 - dB) / (1 - dA dB) or backward induction",
        deviation_note="|payoff - SPE payoff| / M", round_curve="alice_share",
        policies=("rational", "random", "anchor"))

    def action_spec(self, state: BargainingState, player: int) -> ActionSpec:
        if state.phase == "respond":
            return ActionSpec((ActionField("decision", "choice", "whether you accept the offer",
                                           choices=("accept", "reject")),))
        money = float(state.setup["money"])
        rival = NAMES[1 - player]
        mine = ActionField(f"{NAMES[player].lower()}_gain", "number", "the part that you will receive in your offer",
                           low=0.0, high=money)
        theirs = ActionField(f"{rival.lower()}_gain", "number", f"the part that {rival} will receive in your offer",
                             low=0.0, high=money)
        fields = (mine, theirs) + ((message_field(rival),) if state.setup["messages_allowed"] else ())
        return ActionSpec(fields)

    def check(self, state: BargainingState, player: int, action: dict[str, Any]) -> str | None:
        if state.phase != "offer":
            return None
        total = action["alice_gain"] + action["bob_gain"]
        money = float(state.setup["money"])
        if not math.isclose(total, money, rel_tol=1e-9, abs_tol=1e-6):
            return f"alice_gain + bob_gain is {pretty(total)}, but the offer must divide exactly {pretty(money)}"
        return None

    def apply(self, state: BargainingState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> BargainingState:
        assert self.to_move(state), "apply() on a finished game"
        t, last_round = state.round, int(state.setup["max_rounds"])
        seat = self.to_move(state)[0]
        action = actions.get(seat)
        ended = replace(state, phase="done", offer=None, message=None)
        next_round = replace(state, round=t + 1, phase="offer", offer=None, message=None)
        if state.phase == "offer":
            if action is None:
                out = ended if t >= last_round else next_round
                return replace(out, broke=state.broke | {seat}, opening_missed=t == 1)
            offer = (float(action["alice_gain"]), float(action["bob_gain"]))
            return replace(state, phase="respond", offer=offer, message=action.get("message"),
                           last=set_at(state.last, seat, offer[seat]))
        assert state.offer is not None
        if action is None:
            out = ended if t >= last_round else next_round
            return replace(out, broke=state.broke | {seat})
        last = set_at(state.last, seat, action["decision"])
        if action["decision"] == "accept":
            return replace(ended, deal=(t, *state.offer), last=last)
        return replace(ended if t >= last_round else next_round, last=last)

    def outcome(self, state: BargainingState) -> Outcome:
        s = state.setup
        if state.deal is None:
            payoffs = (0.0, 0.0)
        else:
            t, a, b = state.deal
            payoffs = (a * _g(s, 0) ** (t - 1), b * _g(s, 1) ** (t - 1))
        best = max(payoffs)
        winners = tuple(i for i in range(2) if payoffs[i] == best) if state.deal is not None and best > 0 else ()
        return Outcome(actions=state.last, valid=tuple(i not in state.broke for i in range(2)), payoffs=payoffs,
                       winners=winners, void=state.deal is None,
                       extra={"agreement": state.deal is not None,
                              "deal_round": state.deal[0] if state.deal else None,
                              "alice_share": state.deal[1] / float(s["money"]) if state.deal else None})

    def events(self, before: BargainingState, after: BargainingState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        seat = self.to_move(before)[0]
        action = actions.get(seat)
        base = {"round": before.round, "phase": before.phase, "proposer": proposer(before.round),
                "valid": action is not None, "end": after.phase == "done"}
        money = float(before.setup["money"])
        if before.phase == "offer":
            if action is None:
                return {**base, "say": say(seat, None, offer=None), "alice_share": None}
            offer = {"alice_gain": float(action["alice_gain"]), "bob_gain": float(action["bob_gain"])}
            return {**base, "say": say(seat, action.get("message"), offer=offer),
                    "alice_share": offer["alice_gain"] / money}
        assert before.offer is not None
        decision = None if action is None else action["decision"]
        return {**base, "say": say(seat, None, decision=decision), "offer": list(before.offer),
                "accepted": decision == "accept", "alice_share": before.offer[0] / money}

    # ---- prompts ----
    def observation(self, state: BargainingState, player: int) -> dict[str, Any]:
        s = state.setup
        rival = NAMES[1 - player]
        money = pretty(float(s["money"]))
        t = state.round
        if state.phase == "offer" and proposer(t) == player:
            extra = f" and a message to {rival}" if s["messages_allowed"] else ""
            request = f"Round {t}\nSend your offer to divide ${money}{extra}."
            if state.opening_missed and t == 2:
                request = f"{rival} made no usable offer in round 1.\n" + request
        elif state.phase == "respond" and proposer(t) != player and state.offer is not None:
            lines = [f"Round {t}", inflation_update(s, player, t) + f"{rival}'s offer:"]
            if state.message is not None:
                lines.append(f"# {rival}'s message: {state.message}")
            lines += [f"# Your gain: {pretty(state.offer[player])}",
                      f"# {rival}'s gain: {pretty(state.offer[1 - player])}", "Do you accept this offer?"]
            request = "\n".join(lines)
        else:
            request = f"Wait for {rival}."
        horizon = int(s["max_rounds"])
        return {"player_name": NAMES[player], "rival_name": rival, "money": money, "round": t,
                "inflation_message": inflation_message(s, player),
                "horizon_message": (f"You have {horizon} rounds to divide the money, or both of you will get nothing!"
                                    if horizon <= ANNOUNCED_MAX else ""),
                "message_rule": " and can describe it in a few words" if s["messages_allowed"] else "",
                "request": request}

    def report(self, before: BargainingState, after: BargainingState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any] | None:
        t = before.round
        p = proposer(t)
        rival = NAMES[1 - player]
        if before.phase == "offer":
            if actions.get(p) is not None:
                return None  # the responder reads the offer in its request
            what = (f"Your reply in round {t} could not be used, so you made no offer this round." if player == p
                    else f"{rival} made no usable offer in round {t}.")
            return {"what": what}
        decision = None if (a := actions.get(1 - p)) is None else a["decision"]
        if player == p:
            what = (f"{rival} gave no usable answer to your offer from round {t}, which counts as a rejection."
                    if decision is None else f"{rival} {decision}ed your offer from round {t}.")
        else:
            what = (f"Your answer to {rival}'s offer from round {t} could not be used: it counts as a rejection."
                    if decision is None else f"You have chosen to {decision} {rival}'s offer from round {t}.")
        if after.phase == "done" and after.deal is None:
            what += " The last round is over without a deal: both of you get nothing."
        return {"what": what}

    # ---- capabilities ----
    def max_moves(self, params: BargainingParams, n_players: int) -> tuple[int, bool]:
        return int(params.max_rounds), False

    def equilibrium(self, setup: Setup) -> Outcome | None:
        if not _announced(setup) and stationary_share(_g(setup, 0), _g(setup, 1)) is None:
            return None
        offer = rational_offer(setup, 1)
        payoffs = (offer["alice_gain"], offer["bob_gain"])
        best = max(payoffs)
        return Outcome(actions=(offer["alice_gain"], "accept"), valid=(True, True), payoffs=payoffs,
                       winners=tuple(i for i in range(2) if payoffs[i] == best), void=False,
                       extra={"agreement": True, "deal_round": 1, "alice_share": offer["alice_gain"] / setup["money"]})

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        return abs(outcome.payoffs[player] - ne.payoffs[player]) / float(setup["money"])

    def strategy(self, state: BargainingState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        t = state.round
        rival = NAMES[1 - player]
        if kind == "anchor" and state.phase == "offer" and t <= 2:
            assert rng is not None
            if rng.random() < ANCHOR_P:  # a greedy opening a best reply rejects (the bench's trap for accepting)
                money = float(s["money"])
                mine = round(money * (1 - ANCHOR_LEFT), 2)
                return {"alice_gain": mine, "bob_gain": money - mine} if player == 0 else \
                    {"alice_gain": money - mine, "bob_gain": mine}
        if kind == "anchor":
            kind = "rational"
        if kind == "rational" and state.phase == "offer":
            out: dict[str, Any] = rational_offer(s, t)
            if s["messages_allowed"]:
                out["message"] = f"I propose this split; you will not get a better one from me, {rival}."
            return out
        if kind == "rational" and state.phase == "respond" and state.offer is not None:
            ok = state.offer[player] >= acceptance_threshold(s, t) - CENT
            return {"decision": "accept" if ok else "reject"}
        if kind == "random" and state.phase in ("offer", "respond"):
            assert rng is not None
            if state.phase == "respond":
                return {"decision": ("accept", "reject")[int(rng.integers(2))]}
            money = float(s["money"])
            a = round(float(rng.uniform(0, money)), 2)
            out = {"alice_gain": a, "bob_gain": money - a}
            if s["messages_allowed"]:
                out["message"] = f"Random offer {int(rng.integers(1000))}."
            return out
        return super().strategy(state, player, kind, rng, **kw)

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return bargaining_run_metrics(setup.to_dict(), [r["events"] for r in rounds])

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        """One of GLEE's released bargaining games (games/glee/reference.py): GLEE's reading of its rows is
        the outcome of record; the replay of the rows through these rules is the check."""
        return _bargaining_from_reference(self, raw)


def bargaining_run_metrics(params: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A run's metrics from its round events (native or imported alike)."""
    money = float(params["money"])
    deal = next((e for e in events if e["phase"] == "respond" and e.get("accepted")), None)
    played = max((int(e["round"]) for e in events), default=0)
    first = next((e for e in events if e["phase"] == "offer"), None)
    first_share = (first["say"]["offer"]["alice_gain"] / money
                   if first is not None and first["round"] == 1 and first["say"]["offer"] is not None else None)
    share = deal["offer"][0] / money if deal else None
    out = bargaining_metrics(float(params["delta_alice"]), float(params["delta_bob"]),
                             int(deal["round"]) if deal else None, share, max(played, 1),
                             str(params.get("metrics", "paper")))
    return {**out, "agreement": deal is not None, "rounds": played, "alice_share": share,
            "first_offer_alice_share": first_share}


# ---- GLEE's released games (games/glee/reference.py) ----

def _offer(game: Bargaining, keys: tuple[str, str], money: float, ma: bool, human: bool,
           causes: set[str]) -> R.Move:
    """A row's offer as our action (GLEE's two gains), with what our rules make of it."""
    def offer(row: Mapping[str, Any], state: Any, seat: int) -> tuple[dict[str, Any] | None, str | None]:
        x, y = R.number(row, keys[0]), R.number(row, keys[1])
        if x is None or y is None:
            causes.add("unreadable_move")
            return None, None
        action: dict[str, Any] = {"alice_gain": x, "bob_gain": y}
        if ma:
            action["message"] = R.message(row, human)
        if min(x, y) < 0 or not math.isclose(x + y, money, rel_tol=1e-9, abs_tol=1e-6):
            causes.add("offer_not_dividing_money")
        if (problem := foreign_move_problem(game, state, seat, action)) is not None:
            causes.add("invalid_move")  # our rules refuse the offer: our replay stops there
            return action, f"our rules refuse this offer ({problem[1]})"
        return action, None
    return offer


def _decide(causes: set[str]) -> R.Move:
    """A row's decision as our action: accept or reject, else unreadable."""
    def decide(row: Mapping[str, Any], state: Any, seat: int) -> tuple[dict[str, Any] | None, str | None]:
        d = R.cell(row, "decision")
        if d in ("accept", "reject"):
            return {"decision": d}, None
        causes.add("unknown_decision" if d is not None else "unreadable_move")
        return None, None
    return decide


def _bargaining_from_reference(game: Bargaining, raw: Mapping[str, Any]) -> ImportedRun:
    config, rows, human = raw["config"], list(raw["rows"]), bool(raw.get("human"))
    money = R.number_arg(config, "money_to_divide")
    raw_max = R.whole_arg(config, "max_rounds")
    ci = R.as_bool(R.arg(config, "complete_information", True), "complete_information")
    ma = R.as_bool(R.arg(config, "messages_allowed", False), "messages_allowed")
    da, db = R.delta(config, 0), R.delta(config, 1)
    params: dict[str, Any] = {"money": money, "delta_alice": da, "delta_bob": db,
                              "max_rounds": R.horizon(raw_max, INFINITE),
                              "complete_information": ci, "messages_allowed": ma}
    # our bounds before any arithmetic: a money or price of 0 is a bad parameter, not a division by zero
    checked = BargainingParams(**{**params, "max_rounds": min(raw_max, 200)})
    names = R.public_names(config)
    keys = (f"{names[0].lower()}_gain", f"{names[1].lower()}_gain")
    if not rows:
        raise ValueError("game.csv has no rows")
    # GLEE's reading (analyze/configs.py): the last row decides; an accepted offer is the row before it
    last = R.final_decision(rows, ("accept", "reject"))
    finished = last is not None
    played = R.last_round(rows)
    accepted = last == "accept" and len(rows) >= 2
    a = R.number(rows[-2], keys[0]) if accepted else None
    b = R.number(rows[-2], keys[1]) if accepted else None
    deal = accepted and a is not None and b is not None
    share = a / money if deal and a is not None else None
    recorded: dict[str, Any] = {"finished": finished, "agreement": deal, "rounds": played,
                                "deal_round": played if deal else None, "alice_gain": a if deal else None,
                                "bob_gain": b if deal else None, "max_rounds_raw": raw_max}
    first = R.number(rows[0], keys[0])
    extra = {"agreement": deal, "rounds": played, "alice_share": share,
             "first_offer_alice_share": first / money if first is not None and R.row_round(rows[0]) == 1 else None}
    recorded["metrics"] = {**bargaining_metrics(da, db, played if deal else None, share, max(played, 1), "paper"),
                           **extra}
    recorded["metrics_code"] = {**bargaining_metrics(da, db, played if deal else None, share, max(played, 1),
                                                     "code"), **extra}
    pay = (a * da ** (played - 1), b * db ** (played - 1)) if deal and a is not None and b is not None else (0.0, 0.0)
    recorded["payoff"] = list(pay)
    recorded["winners"] = [i for i in (0, 1) if pay[i] == max(pay)] if deal and max(pay) > 0 else []
    # our replay of the same rows
    setup = game.setup(checked, 2, np.random.default_rng(0))
    state = game.initial_state(setup)
    causes: set[str] = set()
    state, log, error = R.replay_turns(game, state, rows, names, causes, _offer(game, keys, money, ma, human, causes),
                                       _decide(causes))
    if error is None and game.to_move(state) and finished and R.cell(rows[-1], "decision") == "reject":
        causes.add("ended_before_horizon")
    replayed = None
    if error is None:
        t = state.deal[0] if state.deal else None
        replayed = {"agreement": state.deal is not None, "deal_round": t,
                    "alice_gain": state.deal[1] if state.deal else None,
                    "bob_gain": state.deal[2] if state.deal else None}
    check = R.verdict(recorded, replayed, ("agreement", "deal_round", "alice_gain", "bob_gain"), causes, error)
    pay_replay = list(game.outcome(state).payoffs) if error is None else None
    return ImportedRun(params, 2, log, pay_replay, raw.get("messages"), recorded, check)

