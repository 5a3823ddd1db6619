"""Fruit trade: the two-message negotiation of the steering paper (spec 3.1-3.3), as a game of ours.

Rules: two players trade fruit (apple, banana, orange by default). Every player privately holds between
``endowment_range`` pieces of each fruit and values each piece at a whole number of points in
``valuation_range``, drawn uniformly and independently per player and fruit (the ranges are public).
Player 1 (seat 0) opens with a message and a structured proposal from its own side (``give``,
``receive``); player 2 (seat 1, the player a steering experiment steers) answers with a message and
``decision``: ``accept`` executes player 1's proposal (if player 2 does not hold what it must give, no trade
happens: recorded as ``infeasible``, not a rule break), ``counter`` proposes its own trade. With
``payoff = "structured"`` player 1 then answers the counter once more, ``accept`` or ``reject``, without a
message: this is the paper's hypothetical third message, which nobody reads. With ``payoff = "llm"`` the
game ends after two messages and a judge model values the trade (``judge_requests`` / ``judged_outcome``).

A proposal is a rule violation when it has a negative or fractional count, moves nothing on one side,
lists a fruit on both sides, gives more of a fruit than the proposer holds, or asks for more than the most
anyone can hold (the top of ``endowment_range``). A reply that breaks a rule ends the game without a trade.

Parameters: ``fruits`` (2 to 6 lower-case names), ``endowment_range`` ([1, 2]), ``valuation_range``
([0, 4]), ``payoff`` ("structured" or "llm"), ``message_chars`` (1000, the bound of a message's text).

Payoffs (spec 3.1): seat i gets sum_f v_i(f) (e_i after(f) - e_i before(f)) of the executed trade, (0, 0)
without one. With ``payoff = "llm"`` the judge's number per seat is the payoff (its first number, cast to
int, clipped to [-20, 20], 0 when unreadable, as OpenSpiel's reference does); the structured payoffs are
logged next to it, with the counter-proposal counted as accepted exactly when it is worth > 0 to player 1.

Equilibrium: none is declared (the paper studies steering, not an equilibrium of this game). The
``rational`` baseline proposes its best one-for-one trade with quantities 1-2 by its own values, accepts a
proposal that is feasible and worth > 0 to it, otherwise counters with its own best; ``random`` picks
uniformly among legal replies. ``prompt_actions("offers", params)`` gives the paper's 24 one-for-one offers plus
"any" for steering player 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ..base import ActionField, ActionSpec, Game, GameInfo, GameParams, Outcome, Setup

P1, P2 = 0, 1
NAMES = ("Player 1", "Player 2")
DEFAULT_FRUITS = ("apple", "banana", "orange")
HEADER = "#" * 28
JUDGE_CLIP = 20  # OpenSpiel clips the judged payoff to [-20, 20]
JUDGE_RAW_CHARS = 2000  # what of a judge's raw reply the outcome keeps
OFFER_QUANTITIES = (1, 2)  # the paper's one-for-one offers (spec 3.2)
_FRUIT = re.compile(r"^[a-z][a-z_]{0,19}$")


class FruitParams(GameParams):
    """Why ``message_chars`` defaults to 1000 and not OpenSpiel's 300: OpenSpiel silently cuts a generated
    text, while here the model writes the message inside its JSON reply and an over-long text is judged a
    rule break that ends the game. A chatty but otherwise sound reply should not lose the trade, so the
    bound (the same as NegotiationArena's) only keeps the other player's prompt and the logs bounded."""

    fruits: list[str] = Field(default_factory=lambda: list(DEFAULT_FRUITS))
    """The fruits traded: 2 to 6 distinct lower-case names."""
    endowment_range: list[int] = Field(default_factory=lambda: [1, 2])
    """[low, high]: each player privately holds a uniform whole number of each fruit in this range."""
    valuation_range: list[int] = Field(default_factory=lambda: [0, 4])
    """[low, high]: each player values each piece of each fruit at a uniform whole number of points in this
    range."""
    payoff: Literal["structured", "llm"] = "structured"
    """`structured`: the executed trade's value to each player; `llm`: a judge model (`[judge]`) values the
    two messages."""
    message_chars: int = Field(default=1000, ge=20, le=20_000)
    """The longest message a player may write; a longer one is a rule break that ends the game."""

    @field_validator("fruits")
    @classmethod
    def _fruits(cls, v: list[str]) -> list[str]:
        if not 2 <= len(v) <= 6:
            raise ValueError("expected 2 to 6 fruits")
        for name in v:
            if not _FRUIT.match(name):
                raise ValueError(f"fruit name {name!r}: lower-case letters and _ only, at most 20")
        if len(set(v)) != len(v):
            raise ValueError("fruit names must differ")
        return v

    @field_validator("endowment_range")
    @classmethod
    def _endowment(cls, v: list[int]) -> list[int]:
        # at least one piece of every fruit: a legal proposal always exists
        if len(v) != 2 or not 1 <= v[0] <= v[1] <= 20:
            raise ValueError("expected [low, high] with 1 <= low <= high <= 20")
        return v

    @field_validator("valuation_range")
    @classmethod
    def _valuation(cls, v: list[int]) -> list[int]:
        if len(v) != 2 or not 0 <= v[0] <= v[1] <= 100:
            raise ValueError("expected [low, high] with 0 <= low <= high <= 100")
        return v


@dataclass(frozen=True)
class Offer:
    """A proposed trade from its proposer's side (only the fruits that move), hashable for the state."""

    by: int
    give: tuple[tuple[str, int], ...]
    receive: tuple[tuple[str, int], ...]

    @staticmethod
    def of(by: int, give: Mapping[str, int], receive: Mapping[str, int]) -> Offer:
        return Offer(by, tuple((k, int(n)) for k, n in give.items() if n),
                     tuple((k, int(n)) for k, n in receive.items() if n))

    def deltas(self, seat: int) -> dict[str, int]:
        """How the trade changes ``seat``'s holdings, per fruit that moves."""
        sign = 1 if seat == self.by else -1
        out: dict[str, int] = {}
        for k, n in self.receive:
            out[k] = out.get(k, 0) + sign * n
        for k, n in self.give:
            out[k] = out.get(k, 0) - sign * n
        return out

    def gives_of(self, seat: int) -> dict[str, int]:
        """What ``seat`` hands over in this trade."""
        return dict(self.give if seat == self.by else self.receive)

    def to_json(self) -> dict[str, Any]:
        """Both sides by player, the form the logs and the judge read."""
        return {"player_1_gives": self.gives_of(P1), "player_2_gives": self.gives_of(P2)}


@dataclass(frozen=True)
class FruitState:
    setup: Setup
    turn: int = 0  # moves made: 0 opening, 1 reply, 2 player 1's answer to a counter
    proposal: Offer | None = None  # player 1's opening proposal
    decision: str | None = None  # player 2's decision
    counter: Offer | None = None  # player 2's counter-proposal
    final: str | None = None  # player 1's answer to the counter (structured payoff only)
    messages: tuple[str | None, str | None] = (None, None)
    ended: str | None = None  # accept | counter (llm) | counter_accept | counter_reject | broken
    deal: Offer | None = None  # the executed trade
    infeasible: bool = False  # an accepted trade asked a player for fruit it does not hold
    broke: frozenset[int] = frozenset()


# ---- pure helpers: payoffs, feasibility, offers, the judge's number ----

def trade_payoff(valuations: Mapping[str, int], deltas: Mapping[str, int]) -> float:
    """sum_f v(f) (e after(f) - e before(f)): the spec 3.1 payoff of one seat."""
    return float(sum(valuations[f] * d for f, d in deltas.items()))


def payoffs_of(setup: Setup, deal: Offer | None) -> tuple[float, float]:
    if deal is None:
        return 0.0, 0.0
    v = setup["valuations"]
    return trade_payoff(v[P1], deal.deltas(P1)), trade_payoff(v[P2], deal.deltas(P2))


def holds(setup: Setup, seat: int, offer: Offer) -> bool:
    """Whether ``seat`` holds everything the trade asks it to give."""
    mine = setup["endowments"][seat]
    return all(n <= mine[f] for f, n in offer.gives_of(seat).items())


def feasible(setup: Setup, offer: Offer) -> bool:
    return holds(setup, P1, offer) and holds(setup, P2, offer)


def judge_number(reply: str | None) -> int:
    """OpenSpiel's reading of a judge's reply: the first number, cast to int (toward zero), clipped to
    [-20, 20]; 0 when there is none or no reply at all."""
    if not reply:
        return 0
    m = re.search(r"[-+\u2212]?\d+(?:\.\d+)?", reply)
    if m is None:
        return 0
    x = float(m.group(0).replace("\u2212", "-"))  # 400 digits overflow to +-inf: clipped like any large number
    return max(-JUDGE_CLIP, min(JUDGE_CLIP, int(x) if math.isfinite(x) else int(math.copysign(JUDGE_CLIP, x))))


def offer_label(q_give: int, give: str, q_receive: int, receive: str) -> str:
    return f"{q_give} {give} for {q_receive} {receive}"


_LABEL = re.compile(r"^\s*(\d+)\s+([a-z_]+)\s+for\s+(\d+)\s+([a-z_]+)\s*$")


def valid_offer(give: Mapping[str, int], receive: Mapping[str, int],
                fruits: Sequence[str] = DEFAULT_FRUITS) -> bool:
    """Spec 3.2: exactly one known fruit given for one other fruit, each quantity 1 or 2. Quantities 0 or
    >= 3, the same fruit on both sides and bundles are invalid."""
    g = {k: n for k, n in give.items() if n}
    r = {k: n for k, n in receive.items() if n}
    if len(g) != 1 or len(r) != 1 or any(n < 0 for n in [*give.values(), *receive.values()]):
        return False
    (x, qx), = g.items()
    (y, qy), = r.items()
    return x != y and x in fruits and y in fruits and qx in OFFER_QUANTITIES and qy in OFFER_QUANTITIES


def valid_offer_label(label: str, fruits: Sequence[str] = DEFAULT_FRUITS) -> bool:
    """A label of the offers space ("1 apple for 2 banana", or "any") that names a valid offer."""
    if label == "any":
        return True
    m = _LABEL.match(label)
    if m is None:
        return False
    qg, x, qr, y = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
    if x == y:
        return False
    return valid_offer({x: qg}, {y: qr}, fruits)


def offer_space(fruits: Sequence[str] = DEFAULT_FRUITS) -> tuple[tuple[str, str], ...]:
    """The paper's offers: player 2 gives q1 of x for q2 of y (x != y, q in {1, 2}), then "any"."""
    out = []
    for x in fruits:
        for y in fruits:
            if x == y:
                continue
            for qg in OFFER_QUANTITIES:
                for qr in OFFER_QUANTITIES:
                    out.append((offer_label(qg, x, qr, y),
                                f"Offer: in your reply, make this counter-proposal: you give {qg} {x} and "
                                f"receive {qr} {y} (decision \"counter\", give {{\"{x}\": {qg}}}, receive "
                                f"{{\"{y}\": {qr}}}, every other fruit 0)."))
    out.append(("any", ""))
    return tuple(out)


def _items(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing"


def _holdings(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {n}" for k, n in counts.items())


def email(sender: int, body: str, trade_line: str) -> str:
    """One message as the paper shows it: the '#' header, sender and receiver, then the text."""
    return (f"{HEADER}\nTrade Proposal Message:\nfrom: {NAMES[sender]}\nto: {NAMES[1 - sender]}\n{HEADER}\n"
            f"{body}\n[{trade_line}]")


def offer_line(offer: Offer) -> str:
    who = NAMES[offer.by]
    return f"Proposed trade: {who} gives {_items(dict(offer.give))} and receives {_items(dict(offer.receive))}"


class FruitTrade(Game[FruitParams, FruitState]):
    name: ClassVar[str] = "fruit_trade"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "Steering paper: two players trade fruit by two messages; private values"
    Params = FruitParams
    action_key: ClassVar[str] = "decision"
    history_key: ClassVar[str] = "decision"
    has_private_values: ClassVar[bool] = True
    info: ClassVar[GameInfo] = GameInfo(
        title="Fruit trade", moves="sequential", rounds=True, messages="public", family="steering",
        n_players=2, score=False, policies=("rational", "random"), action_axis="trade value",
        equilibrium_note="none declared", history_extra=("deal",))

    # ---- setup and flow ----
    def setup(self, params: FruitParams, n_players: int, rng: np.random.Generator) -> Setup:
        if n_players != 2:
            raise ValueError(f"fruit_trade is a two-player game, got {n_players} players")
        fruits = list(params.fruits)
        (elo, ehi), (vlo, vhi) = params.endowment_range, params.valuation_range
        endow = rng.integers(elo, ehi + 1, size=(2, len(fruits)))
        value = rng.integers(vlo, vhi + 1, size=(2, len(fruits)))
        return Setup(2, {**params.model_dump(),
                         "endowments": [{f: int(endow[s, j]) for j, f in enumerate(fruits)} for s in (P1, P2)],
                         "valuations": [{f: int(value[s, j]) for j, f in enumerate(fruits)} for s in (P1, P2)]})

    def initial_state(self, setup: Setup) -> FruitState:
        return FruitState(setup)

    def to_move(self, state: FruitState) -> tuple[int, ...]:
        if state.ended:
            return ()
        return (P2,) if state.turn == 1 else (P1,)

    def max_moves(self, params: FruitParams, n_players: int) -> tuple[int, bool]:
        """Per seat: player 1 decides at most twice (opening, answer to a counter), only once with a judge."""
        return (2 if params.payoff == "structured" else 1), False

    # ---- replies ----
    def _trade_fields(self, setup: Setup, accept_note: bool) -> tuple[ActionField, ...]:
        note = " (ignored when you accept: repeat the proposal from your side, or write zeros)" if accept_note else ""
        fruits = tuple(setup["fruits"])
        when = ("decision", ("counter",)) if accept_note else None  # ignored on "accept", as the note says
        return (ActionField("give", "allocation", f"the fruit you give, a whole number per fruit, 0 for none{note}",
                            items=fruits, integer=True, read_when=when),
                ActionField("receive", "allocation",
                            f"the fruit you want in return, a whole number per fruit, 0 for none{note}",
                            items=fruits, integer=True, read_when=when))

    def hidden_from_history(self, params: GameParams) -> str | None:
        return "each player knows only its own holdings and values, as the rules say"

    def action_spec(self, state: FruitState, player: int) -> ActionSpec:
        s = state.setup
        message = ActionField("message", "text", f"your message to {NAMES[1 - player]}",
                              max_length=int(s["message_chars"]))
        if state.turn == 0:
            return ActionSpec((message, *self._trade_fields(s, False)))
        if state.turn == 1:
            return ActionSpec((message, ActionField(
                "decision", "choice", "\"accept\" Player 1's proposal as it stands, or \"counter\" with the trade "
                "in give and receive", choices=("accept", "counter")), *self._trade_fields(s, True)))
        return ActionSpec((ActionField("decision", "choice", "\"accept\" Player 2's counter-proposal (the trade "
                                       "happens) or \"reject\" it (no trade)", choices=("accept", "reject")),))

    def check(self, state: FruitState, player: int, action: dict[str, Any]) -> str | None:
        if state.turn == 0 or (state.turn == 1 and action["decision"] == "counter"):
            return self.proposal_problem(state.setup, player, action["give"], action["receive"])
        return None

    def proposal_problem(self, setup: Setup, seat: int, give: Mapping[str, int],
                         receive: Mapping[str, int]) -> str | None:
        """Why a proposal breaks the rules, or None (negative and fractional counts fail earlier)."""
        if not any(give.values()):
            return "a proposal must give at least one fruit"
        if not any(receive.values()):
            return "a proposal must ask for at least one fruit in return"
        both = [f for f in give if give[f] and receive.get(f)]
        if both:
            return f"{both[0]} is on both sides of the proposal"
        mine = setup["endowments"][seat]
        for f, n in give.items():
            if n > mine[f]:
                return f"you would give {n} {f} but hold only {mine[f]}"
        top = setup["endowment_range"][1]
        for f, n in receive.items():
            if n > top:
                return f"you ask for {n} {f}, but nobody holds more than {top} of a fruit"
        return None

    def apply(self, state: FruitState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> FruitState:
        assert self.to_move(state), "apply() on a finished game"
        seat = self.to_move(state)[0]
        action = actions.get(seat)
        turn = state.turn + 1
        if action is None:
            return replace(state, turn=turn, ended="broken", broke=state.broke | {seat})
        s = state.setup
        if state.turn == 0:
            return replace(state, turn=turn, proposal=Offer.of(P1, action["give"], action["receive"]),
                           messages=(action["message"], None))
        if state.turn == 1:
            msgs = (state.messages[0], action["message"])
            if action["decision"] == "accept":
                assert state.proposal is not None
                ok = holds(s, P2, state.proposal)
                return replace(state, turn=turn, decision="accept", messages=msgs, ended="accept",
                               deal=state.proposal if ok else None, infeasible=not ok)
            counter = Offer.of(P2, action["give"], action["receive"])
            ended = "counter" if s["payoff"] == "llm" else None
            return replace(state, turn=turn, decision="counter", counter=counter, messages=msgs, ended=ended)
        assert state.counter is not None
        if action["decision"] == "accept":
            ok = feasible(s, state.counter)
            return replace(state, turn=turn, final="accept", ended="counter_accept",
                           deal=state.counter if ok else None, infeasible=not ok)
        return replace(state, turn=turn, final="reject", ended="counter_reject")

    # ---- outcome ----
    def hypothetical_deal(self, setup: Setup, proposal: Offer | None, decision: str | None,
                          counter: Offer | None) -> Offer | None:
        """The trade the structured payoffs of a judged (two-message) run count: the accepted proposal,
        else the counter-proposal if it is feasible and worth > 0 to player 1 by its own values."""
        if decision == "accept" and proposal is not None:
            return proposal if holds(setup, P2, proposal) else None
        if (decision == "counter" and counter is not None and feasible(setup, counter)
                and trade_payoff(setup["valuations"][P1], counter.deltas(P1)) > 0):
            return counter
        return None

    def _counted_deal(self, state: FruitState) -> Offer | None:
        if state.setup["payoff"] == "llm" and state.ended == "counter":
            return self.hypothetical_deal(state.setup, state.proposal, state.decision, state.counter)
        return state.deal

    def outcome(self, state: FruitState) -> Outcome:
        """Structured payoffs; in ``llm`` mode the Host replaces them through ``judged_outcome`` (a run
        ended by a rule break is never judged: it pays (0, 0))."""
        deal = self._counted_deal(state)
        pay = payoffs_of(state.setup, deal)
        return self._outcome(state, pay, deal, deal is None, {})

    def _outcome(self, state: FruitState, pay: tuple[float, float], deal: Offer | None, void: bool,
                 extra: Mapping[str, Any]) -> Outcome:
        winners = tuple(i for i in (P1, P2) if pay[i] == max(pay) and pay[P1] != pay[P2])
        first = "propose" if state.proposal is not None else None
        last = (state.final or first, state.decision)
        structured = payoffs_of(state.setup, self._counted_deal(state))
        return Outcome(
            actions=last, valid=tuple(i not in state.broke for i in (P1, P2)), payoffs=pay, winners=winners,
            void=void,
            extra={"ended": state.ended, "payoff_mode": state.setup["payoff"],
                   "deal": deal.to_json() if deal is not None else None,
                   "agreement": state.decision == "accept", "infeasible": state.infeasible,
                   "structured_payoffs": list(structured), **extra})

    # ---- judged payoffs (payoff = "llm") ----
    def emails(self, state: FruitState) -> list[str]:
        """The emails sent so far, in order, each with its structured part."""
        out = []
        if state.proposal is not None:
            out.append(email(P1, state.messages[0] or "", offer_line(state.proposal)))
        if state.decision == "accept":
            out.append(email(P2, state.messages[1] or "", "Decision: Player 2 accepts Player 1's proposal"))
        elif state.decision == "counter" and state.counter is not None:
            out.append(email(P2, state.messages[1] or "",
                             "Decision: Player 2 makes a counter-proposal. " + offer_line(state.counter)))
        return out

    def dialogue(self, state: FruitState) -> str:
        return "\n\n".join(self.emails(state))

    def judge_requests(self, setup: Setup, state: FruitState) -> dict[int, dict[str, Any]] | None:
        """Per seat the judge's question (both players' private facts, like OpenSpiel's scorer). None in
        ``structured`` mode and for a run ended by a rule break (no trade, nothing to judge)."""
        if setup["payoff"] != "llm" or state.ended in (None, "broken"):
            return None
        out = {}
        for seat in (P1, P2):
            out[seat] = {"seat_name": NAMES[seat], "other_name": NAMES[1 - seat], "dialogue": self.dialogue(state),
                         "fruits": ", ".join(setup["fruits"]),
                         "my_holdings": _holdings(setup["endowments"][seat]),
                         "my_values": _holdings(setup["valuations"][seat]),
                         "other_holdings": _holdings(setup["endowments"][1 - seat]),
                         "other_values": _holdings(setup["valuations"][1 - seat]),
                         "agreed": "yes" if state.decision == "accept" else "no",
                         "clip": JUDGE_CLIP}
        return out

    def judged_outcome(self, setup: Setup, state: FruitState, replies: Mapping[int, str | None]) -> Outcome:
        pay = (float(judge_number(replies.get(P1))), float(judge_number(replies.get(P2))))
        raw = [None if replies.get(i) is None else str(replies.get(i))[:JUDGE_RAW_CHARS] for i in (P1, P2)]
        deal = self._counted_deal(state)
        return self._outcome(state, pay, deal, pay == (0.0, 0.0), {"judge_payoffs": list(pay), "judge_raw": raw})

    # ---- prompts ----
    def _task(self, state: FruitState, player: int) -> str:
        s = state.setup
        if state.ended:
            return "The game is over."
        if state.turn == 0:
            return ("Write your opening trade proposal to Player 2: a message, and the exact trade in give (what "
                    "you give) and receive (what you want in return).")
        if state.turn == 1:
            assert state.proposal is not None
            p = state.proposal
            return (f"Player 1's proposal, from your side: you give {_items(p.gives_of(P2))} and receive "
                    f"{_items(p.gives_of(P1))}. Write your only message: decision \"accept\" makes that trade (then "
                    "give and receive are ignored: repeat the proposal from your side or write zeros); decision "
                    "\"counter\" proposes the trade in give and receive instead.")
        assert state.counter is not None
        c = state.counter
        last = ("Answer \"accept\" to make this trade or \"reject\" to end the game without a trade; no message "
                "is sent now." if s["payoff"] == "structured" else "")
        return (f"Player 2's counter-proposal, from your side: you give {_items(c.gives_of(P1))} and receive "
                f"{_items(c.gives_of(P2))}. {last}").strip()

    def observation(self, state: FruitState, player: int) -> dict[str, Any]:
        s = state.setup
        (elo, ehi), (vlo, vhi) = s["endowment_range"], s["valuation_range"]
        if s["payoff"] == "structured":
            after = ("After a counter-proposal, Player 1 answers once more, \"accept\" or \"reject\", without a "
                     "message; accepting makes the counter-proposal's trade.")
        else:
            after = ("After a counter-proposal the game ends; a referee who sees both players' holdings and values "
                     "decides whether Player 1 would have accepted it and values the trade.")
        dialogue = self.dialogue(state)
        return {"my_name": NAMES[player], "other_name": NAMES[1 - player], "fruits": ", ".join(s["fruits"]),
                "endowment_low": elo, "endowment_high": ehi, "value_low": vlo, "value_high": vhi,
                "message_chars": s["message_chars"], "after_counter": after,
                "my_holdings": _holdings(s["endowments"][player]), "my_values": _holdings(s["valuations"][player]),
                "dialogue": dialogue + "\n\n" if dialogue else "", "task": self._task(state, player)}

    def report(self, before: FruitState, after: FruitState, actions: Mapping[int, dict[str, Any] | None],
               player: int) -> dict[str, Any] | None:
        seat = self.to_move(before)[0]
        if player == seat or before.turn >= 2:
            return None
        if actions.get(seat) is None:
            return {"what": f"{NAMES[seat]} sent no usable reply; the game ends without a trade."}
        return {"what": self.emails(after)[before.turn]}

    def events(self, before: FruitState, after: FruitState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        seat = self.to_move(before)[0]
        action = actions.get(seat)
        say: dict[str, Any] = {"player": seat, "message": None, "decision": None, "offer": None}
        if action is not None:
            if before.turn == 0:
                say.update(message=action["message"], decision="propose", offer=after.proposal.to_json()
                           if after.proposal else None)
            elif before.turn == 1:
                say.update(message=action["message"], decision=action["decision"],
                           offer=after.counter.to_json() if after.counter is not None else None)
            else:
                say.update(decision=action["decision"])
        return {"turn": before.turn + 1, "say": say, "ended": after.ended,
                "deal": after.deal.to_json() if after.deal is not None and before.deal is None else None,
                "infeasible": after.infeasible and not before.infeasible}

    # ---- metrics ----
    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Per run: agreement after two messages (player 2 accepted), deal (a trade counted, the third
        message's acceptance included; with a judge, the counter worth > 0 to player 1), infeasible, the
        structured payoffs, and how the run ended."""
        proposal = counter = None
        decision = None
        deal = None
        infeasible = False
        ended = None
        for r in rounds:
            ev = r["events"]
            say = ev["say"]
            if say["player"] == P1 and say["decision"] == "propose" and say["offer"]:
                proposal = _offer_from_json(P1, say["offer"])
            elif say["player"] == P2 and say["decision"] is not None:
                decision = say["decision"]
                if say["offer"]:
                    counter = _offer_from_json(P2, say["offer"])
            if ev.get("deal"):
                deal = _offer_from_json(P1, ev["deal"])
            infeasible = infeasible or bool(ev.get("infeasible"))
            ended = ev.get("ended") or ended
        if setup["payoff"] == "llm" and ended == "counter":
            deal = self.hypothetical_deal(setup, proposal, decision, counter)
        return {"agreement": decision == "accept", "deal": deal is not None, "infeasible": infeasible,
                "structured_payoffs": list(payoffs_of(setup, deal)), "ended": ended, "turns": len(rounds)}

    # ---- steering ----
    def prompt_actions(self, kind: str, params: FruitParams) -> tuple[tuple[str, str], ...] | None:
        """``offers``: the paper's one-for-one offers of this game's fruits (24 for three), plus "any"."""
        return offer_space(tuple(params.fruits)) if kind == "offers" else None

    def needs_judge(self, params: FruitParams) -> bool:
        return params.payoff == "llm"

    # ---- baselines ----
    def best_offer(self, setup: Setup, seat: int) -> tuple[dict[str, int], dict[str, int]]:
        """The one-for-one trade (quantities 1-2, affordable) worth most to ``seat`` by its own values;
        ties go to the smaller trade, then to the earlier fruits."""
        fruits = list(setup["fruits"])
        mine, v = setup["endowments"][seat], setup["valuations"][seat]
        best: tuple[Any, ...] | None = None
        for i, x in enumerate(fruits):
            for j, y in enumerate(fruits):
                if x == y:
                    continue
                for qg in OFFER_QUANTITIES:
                    if qg > mine[x]:
                        continue
                    for qr in OFFER_QUANTITIES:
                        key = (-(v[y] * qr - v[x] * qg), qg + qr, i, j)
                        if best is None or key < best[0]:
                            best = (key, x, qg, y, qr)
        assert best is not None  # every seat holds at least one of every fruit
        _, x, qg, y, qr = best
        return {f: qg if f == x else 0 for f in fruits}, {f: qr if f == y else 0 for f in fruits}

    def strategy(self, state: FruitState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        fruits = list(s["fruits"])
        zero = {f: 0 for f in fruits}
        if kind == "rational":
            if state.turn == 0:
                give, receive = self.best_offer(s, player)
                return {"message": f"I offer {_items(give)} for {_items(receive)}.", "give": give, "receive": receive}
            if state.turn == 1:
                assert state.proposal is not None
                p = state.proposal
                if holds(s, P2, p) and trade_payoff(s["valuations"][P2], p.deltas(P2)) > 0:
                    return {"message": "Agreed.", "decision": "accept", "give": zero, "receive": zero}
                give, receive = self.best_offer(s, player)
                return {"message": f"Instead I offer {_items(give)} for {_items(receive)}.", "decision": "counter",
                        "give": give, "receive": receive}
            assert state.counter is not None
            ok = feasible(s, state.counter) and trade_payoff(s["valuations"][P1], state.counter.deltas(P1)) > 0
            return {"decision": "accept" if ok else "reject"}
        if kind == "random":
            assert rng is not None
            msg = f"message {int(rng.integers(1000))}"
            if state.turn == 2:
                return {"decision": ("accept", "reject")[int(rng.integers(2))]}
            if state.turn == 1 and int(rng.integers(2)) == 0:
                return {"message": msg, "decision": "accept", "give": zero, "receive": zero}
            give, receive = self._random_offer(s, player, rng)
            out = {"message": msg, "give": give, "receive": receive}
            return {"message": msg, "decision": "counter", "give": give, "receive": receive} if state.turn == 1 \
                else out
        return super().strategy(state, player, kind, rng, **kw)

    def _random_offer(self, setup: Setup, seat: int, rng: np.random.Generator) -> tuple[dict[str, int], dict[str, int]]:
        """A legal proposal: one fruit surely given and another surely asked for, each other fruit given,
        asked for or left out at random; counts uniform within the rules."""
        fruits = list(setup["fruits"])
        mine, top = setup["endowments"][seat], setup["endowment_range"][1]
        order = [fruits[int(k)] for k in rng.permutation(len(fruits))]
        side = {order[0]: "give", order[1]: "receive"}
        for f in order[2:]:
            side[f] = ("give", "receive", "none")[int(rng.integers(3))]
        give = {f: int(rng.integers(1, mine[f] + 1)) if side[f] == "give" else 0 for f in fruits}
        receive = {f: int(rng.integers(1, top + 1)) if side[f] == "receive" else 0 for f in fruits}
        return give, receive


def _offer_from_json(by: int, data: Mapping[str, Any]) -> Offer:
    """An offer read back from its logged form (``Offer.to_json``), as proposed by ``by``."""
    p1 = {k: int(n) for k, n in (data.get("player_1_gives") or {}).items()}
    p2 = {k: int(n) for k, n in (data.get("player_2_gives") or {}).items()}
    return Offer.of(by, p1 if by == P1 else p2, p2 if by == P1 else p1)
