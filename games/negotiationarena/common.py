"""NegotiationArena (Bianchi et al. 2024): the alternating-message engine its three scenarios share.

Two players, RED (seat 0, moves first) and BLUE (seat 1), send one message each in turn, at most ``turns``
messages in all (the paper's ``iterations``: 8 for resource exchange and the ultimatum, 10 for buy/sell).
Each message carries a public text, a secret ``reason`` (logged, never shown to the opponent) and a
structured part: ``accept`` (the trade proposed in the opponent's message just before), ``reject`` (ends
the game without a deal, where the scenario allows it), ``propose`` (a new trade) or ``none`` (just talk,
where allowed). A trade says what RED gives and what BLUE gives; accepting executes it. A reply that
breaks a rule after the Host's re-asks ends the game without a deal (the paper aborted such games).

Parameters, payoffs and the baseline strategies are in each scenario's module; none declares an
equilibrium for the Host (the rational baselines play the scenario's textbook strategy instead).
The released ``game_state.json`` logs are read by ``from_reference`` (pure: parsed JSON in): the outcome
the log records is the outcome of record, and the replay of its moves through these rules is a check
beside it (logs.py reads the log and names the causes of a disagreement).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, cast

import numpy as np

from ..base import ActionField, ActionSpec, Game, ImportedRun, Outcome, P, ReplayCheck, Setup, foreign_move_problem
from ..text import quoted
from .logs import (
    CAUSES,
    Trade,
    answer_differs,
    end_summary,
    names_in,
    primary,
    read_trade,
)
from .logs import log_resources as log_resources  # re-exported: the scenarios read their parameters with it
from .logs import parse_trade_text as parse_trade_text  # re-exported

RED, BLUE = 0, 1
NAMES = ("Player RED", "Player BLUE")
MESSAGE_CHARS = 1000
REASON_CHARS = 2000
FAMILY = "negotiationarena"
PROPOSE = ("decision", ("propose",))  # a trade field is read only with a proposal, as the prompts say


@dataclass(frozen=True)
class NAState:
    setup: Setup
    turn: int = 0  # messages sent so far
    table: tuple[tuple[str, int], ...] | None = None  # the trade proposed in the previous message (frozen)
    table_by: int | None = None
    ended: str | None = None  # accept | reject | limit | broken
    deal: tuple[tuple[str, int], ...] | None = None
    proposals: tuple[int, int] = (0, 0)
    broke: frozenset[int] = frozenset()
    last: tuple[Any, Any] = (None, None)  # per seat, its last decision
    last_move: tuple[tuple[str, Any], ...] = ()  # the previous message's public part (frozen dict)


def freeze(trade: Trade) -> tuple[tuple[str, int], ...]:
    """A trade as a hashable tuple of ("red:X", n) / ("blue:Y", n) pairs, for the frozen state."""
    return tuple(sorted([(f"red:{k}", int(v)) for k, v in trade["red_gives"].items()]
                        + [(f"blue:{k}", int(v)) for k, v in trade["blue_gives"].items()]))


def thaw(frozen: Sequence[tuple[str, int]]) -> Trade:
    out: Trade = {"red_gives": {}, "blue_gives": {}}
    for key, n in frozen:
        side, _, res = key.partition(":")
        out[f"{side}_gives"][res] = n
    return out


def trade_text(trade: Trade) -> str:
    """The paper's canonical trade text: ``Player RED Gives X: 5, Y: 2 | Player BLUE Gives Y: 3``."""
    def side(gives: Mapping[str, int]) -> str:
        return ", ".join(f"{k}: {v}" for k, v in gives.items() if v) or "nothing"
    return f"Player RED Gives {side(trade['red_gives'])} | Player BLUE Gives {side(trade['blue_gives'])}"


def tag(text: str, name: str) -> str | None:
    """The content between the first ``<name>`` and the first ``</name>``, or None when absent."""
    a = text.find(f"<{name}>")
    b = text.find(f"</{name}>")
    if a < 0 or b < a:
        return None
    return text[a + len(name) + 2:b].strip()


def log_models(raw: Mapping[str, Any]) -> list[str]:
    """The model of each seat (RED first) as the log names it."""
    players = raw.get("players") or []
    names = [str(p.get("agent_name", "")) for p in players]
    if names[:2] == [NAMES[BLUE], NAMES[RED]]:
        players = players[::-1]
    return [str(p.get("model", "unknown")) for p in players[:2]]


class NegotiationGame(Game[P, NAState]):
    """The shared engine; a scenario fills in its fields, trades and payoffs."""

    log_class: ClassVar[str]  # the ``class`` of the released logs this scenario reads
    choices: ClassVar[tuple[str, ...]]  # decisions allowed in this scenario
    history_key: ClassVar[str] = "decision"
    action_key: ClassVar[str] = "decision"

    # ---- what a scenario supplies ----
    def trade_fields(self, state: NAState, player: int) -> tuple[ActionField, ...]:
        raise NotImplementedError

    def trade_of(self, setup: Setup, player: int, action: Mapping[str, Any]) -> Trade:
        """The proposal an action makes (only read when its decision is ``propose``)."""
        raise NotImplementedError

    def payoffs_of(self, setup: Setup, deal: Trade | None) -> tuple[float, float]:
        """The scenario's payoff per seat for an executed trade (None: no deal)."""
        raise NotImplementedError

    def price_of(self, trade: Trade | None) -> float | None:
        """The one number a proposal is about (price, gift), for anchoring; None where there is none."""
        return None

    def endowments(self, setup: Setup) -> tuple[dict[str, int], dict[str, int]]:
        raise NotImplementedError

    # ---- the engine ----
    def initial_state(self, setup: Setup) -> NAState:
        return NAState(setup)

    def to_move(self, state: NAState) -> tuple[int, ...]:
        return () if state.ended else (state.turn % 2,)

    def max_moves(self, params: Any, n_players: int) -> tuple[int, bool]:
        return (params.turns + 1) // 2, False

    def _two(self, n_players: int) -> None:
        if n_players != 2:
            raise ValueError(f"{self.name} is a two-player game (RED and BLUE), got {n_players} players")

    def note_fields(self) -> tuple[ActionField, ...]:
        return (ActionField("reason", "text", "your private reasoning; the other player never sees it",
                            max_length=REASON_CHARS, secret=True),
                ActionField("message", "text", "your message to the other player", max_length=MESSAGE_CHARS))

    def decision_field(self, state: NAState, player: int) -> ActionField:
        return ActionField("decision", "choice", "what you do with this message", choices=self.choices)

    def action_spec(self, state: NAState, player: int) -> ActionSpec:
        return ActionSpec((*self.note_fields(), self.decision_field(state, player),
                           *self.trade_fields(state, player)))

    def final_turn(self, state: NAState) -> bool:
        return state.turn + 1 >= state.setup["turns"]

    def check(self, state: NAState, player: int, action: dict[str, Any]) -> str | None:
        d = action["decision"]
        if d == "accept" and state.table is None:
            return "there is no trade on the table to accept: the other player's last message proposed none"
        if d == "accept":
            return self.feasible(state.setup, thaw(state.table or ()), player)
        if d == "propose":
            trade = self.trade_of(state.setup, player, action)
            return self.feasible(state.setup, trade, player)
        return None

    def feasible(self, setup: Setup, trade: Trade, player: int) -> str | None:
        """A player may not give more than they hold (each knows only their own holdings)."""
        mine = self.endowments(setup)[player]
        gives = trade["red_gives" if player == RED else "blue_gives"]
        for res, n in gives.items():
            if n > mine.get(res, 0):
                return f"you would give {n} {res} but hold only {mine.get(res, 0)}"
        return None

    def apply(self, state: NAState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> NAState:
        assert self.to_move(state), "apply() on a finished game"
        seat = state.turn % 2
        action = actions.get(seat)
        turn = state.turn + 1
        limit = "limit" if turn >= state.setup["turns"] else None
        if action is None:
            return replace(state, turn=turn, ended="broken", broke=state.broke | {seat}, table=None,
                           last_move=(("decision", None),))
        d = action["decision"]
        last = (d, state.last[1]) if seat == RED else (state.last[0], d)
        public = self.public_part(state.setup, seat, action)
        if d == "accept" and state.table is not None:
            return replace(state, turn=turn, ended="accept", deal=state.table, table=None, last=last,
                           last_move=tuple(public.items()))
        if d == "reject":
            return replace(state, turn=turn, ended="reject", table=None, last=last, last_move=tuple(public.items()))
        table = None
        proposals = state.proposals
        if d == "propose":
            table = freeze(self.trade_of(state.setup, seat, action))
            proposals = (proposals[0] + 1, proposals[1]) if seat == RED else (proposals[0], proposals[1] + 1)
        return replace(state, turn=turn, ended=limit, table=table, table_by=seat if table else None,
                       proposals=proposals, last=last, last_move=tuple(public.items()))

    def public_part(self, setup: Setup, seat: int, action: Mapping[str, Any]) -> dict[str, Any]:
        """What the opponent sees of a move: the message, the decision and the proposed trade."""
        trade = self.trade_of(setup, seat, action) if action["decision"] == "propose" else None
        return {"message": action.get("message"), "decision": action["decision"], "offer": trade}

    def outcome(self, state: NAState) -> Outcome:
        deal = thaw(state.deal) if state.deal is not None else None
        pay = self.payoffs_of(state.setup, deal)
        best = max(pay)
        winners = tuple(i for i in (RED, BLUE) if pay[i] == best and pay[RED] != pay[BLUE])
        return Outcome(actions=state.last, valid=tuple(i not in state.broke for i in (RED, BLUE)),
                       payoffs=pay, winners=winners, void=deal is None,
                       extra={"ended": state.ended, "turns": state.turn, "deal": deal,
                              "price": self.price_of(deal)})

    def events(self, before: NAState, after: NAState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        seat = before.turn % 2
        action = actions.get(seat)
        if action is None:
            say: dict[str, Any] = {"player": seat, "message": None, "decision": None, "offer": None}
        else:
            say = {"player": seat, **self.public_part(before.setup, seat, action)}
        deal = thaw(after.deal) if after.deal is not None and before.deal is None else None
        return {"turn": before.turn + 1, "say": say, "price": self.price_of(say["offer"]), "ended": after.ended,
                "deal": deal}

    # ---- prompts ----
    def move_text(self, setup: Setup, seat: int, public: Mapping[str, Any]) -> str:
        who = NAMES[seat]
        if public.get("decision") is None:
            return f"{who} sent no usable reply."
        lines = [f"{who} says: {quoted(public.get('message') or '')}"]  # one quoted line (games/text.py)
        d = public["decision"]
        if d == "propose":
            lines.append(f"{who} proposes: {self.offer_text(public['offer'])}")
        elif d == "accept":
            lines.append(f"{who} ACCEPTS your proposal.")
        elif d == "reject":
            lines.append(f"{who} REJECTS.")
        else:
            lines.append(f"{who} makes no proposal.")
        return "\n".join(lines)

    def offer_text(self, trade: Trade) -> str:
        return trade_text(trade)

    def report(self, before: NAState, after: NAState, actions: Mapping[int, dict[str, Any] | None],
               player: int) -> dict[str, Any] | None:
        seat = before.turn % 2
        if player == seat:
            return None
        public = dict(after.last_move)
        return {"what": self.move_text(before.setup, seat, public)}

    def hidden_from_history(self, params: Any) -> str | None:
        """The scenarios with private holdings or valuations tell each player it does not know the other's;
        a full history's payoffs of the session's earlier runs (the same draw) would tell it."""
        return ("each player's system prompt says it does not know the other's resources or valuation"
                if self.has_private_values else None)

    def base_observation(self, state: NAState, player: int) -> dict[str, Any]:
        turns = state.setup["turns"]
        mine = (turns - player + 1) // 2
        move = (state.turn - player) // 2 + 1
        opp = ""
        if state.turn > 0 and state.last_move:
            opp = self.move_text(state.setup, 1 - player, dict(state.last_move)) + "\n\n"
        table = self.offer_text(thaw(state.table)) if state.table is not None else "none"
        return {"my_name": NAMES[player], "other_name": NAMES[1 - player], "turns": turns,
                "my_moves": mine, "move": move, "opponent_move": opp, "on_table": table,
                "last_note": " This is your last message." if self.final_turn(state) else ""}

    # ---- released logs ----
    def params_from_log(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def action_from_log(self, setup: Setup, seat: int, answer: str, trade: Trade | None, message: str,
                        reason: str) -> dict[str, Any]:
        raise NotImplementedError

    def recorded_payoffs(self, setup: Setup, delta: Sequence[Mapping[str, int]], accepted: bool
                         ) -> tuple[float, float]:
        """Each seat's payoff from the log's own final - initial holdings (the correct reading)."""
        raise NotImplementedError

    def recorded_price(self, delta: Sequence[Mapping[str, int]], accepted: bool) -> float | None:
        """The one number the executed trade is about (price, gift) by the recorded holdings; None if none."""
        return None

    def paper_reading(self, setup: Setup, pay: tuple[float, float]) -> tuple[float, float]:
        """The per-run payoff as the authors' notebooks score it (the same as ours unless a scenario says)."""
        return pay

    def off_protocol(self, trade: Trade) -> bool:
        """Whether a trade has a part this scenario's rules do not execute (a two-sided transfer)."""
        return False

    def outcome_consistent(self, setup: Setup, summary: Mapping[str, Any], pay: tuple[float, float]) -> bool:
        """Whether the summary's own ``player_outcome`` agrees with the payoffs read from the holdings."""
        return True

    def _replay(self, raw: Mapping[str, Any], setup: Setup
                ) -> tuple[list[dict[str, Any]], set[str], str | None, NAState]:
        """The moves through our rules and parser: (round log, cause codes met, the reason the replay stopped
        early or None, the last state). Never raises on a move's content: unknown resources are dropped from
        a proposal and flagged; a structural break (turn order, a move after our game ended) stops it."""
        state = self.initial_state(setup)
        known = set(self.endowments(setup)[RED]) | set(self.endowments(setup)[BLUE])
        log: list[dict[str, Any]] = []
        flags: set[str] = set()
        for entry in raw.get("game_state") or []:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("current_iteration"), int):
                continue  # START and END carry settings and the summary, not moves
            it = entry["current_iteration"]
            if state.ended:
                return log, flags, f"iteration {it}: a move after the game ended by our reading", state
            try:
                seat = int(entry["turn"])
            except (KeyError, TypeError, ValueError):
                return log, flags, f"iteration {it}: no valid turn", state
            if seat != self.to_move(state)[0]:
                return log, flags, f"iteration {it}: turn {seat}, expected {state.turn % 2}", state
            public = entry.get("player_public_info_dict") or {}
            private = entry.get("player_private_info_dict") or {}
            text = str(entry.get("player_complete_answer") or "")
            stored = public.get("player answer", tag(text, "player answer") or "NONE")
            if answer_differs(stored):
                flags.add("answer_variant")
            trade, tflags = read_trade(public.get("newly proposed trade", tag(text, "newly proposed trade")))
            flags |= tflags
            if trade is not None and names_in(trade) - known:
                flags.add("unknown_resource_proposed")
                trade = {side: {k: v for k, v in gives.items() if k in known} for side, gives in trade.items()}
            message = str(public.get("message", tag(text, "message") or ""))
            reason = str(private.get("reason", tag(text, "reason") or ""))
            action = self.action_from_log(setup, seat, str(stored).strip(), trade, message, reason)
            if action["decision"] in ("propose", "accept") and foreign_move_problem(self, state, seat, action):
                # our rules refuse it (a negative or oversized gift, more than one holds): the study's engine
                # executed it; our replay reads the move as proposing or accepting nothing, and says so
                flags.add("invalid_move")
                action = self.action_from_log(setup, seat, "", None, message, reason)
            after = self.apply(state, {seat: action})
            log.append({"round": len(log), "actions": [action if i == seat else None for i in (RED, BLUE)],
                        "events": self.events(state, after, {seat: action})})
            state = after
        return log, flags, None, state

    def _recorded(self, setup: Setup, end: Mapping[str, Any]) -> dict[str, Any]:
        """The outcome of record, from the log's END summary (see logs.end_summary)."""
        pay = self.recorded_payoffs(setup, end["delta"], end["accepted"])
        return {"payoff": list(pay), "payoff_paper": list(self.paper_reading(setup, pay)),
                "agreement": end["accepted"], "final_price": self.recorded_price(end["delta"], end["accepted"]),
                "final_response": end["final_response"], "delta": end["delta"],
                "proposed_trade": end["trade"], "player_outcome": end["player_outcome"],
                "consistent": self.outcome_consistent(setup, end, pay)}

    def _check(self, setup: Setup, end: Mapping[str, Any], recorded: Mapping[str, Any], flags: set[str],
               error: str | None, state: NAState) -> ReplayCheck:
        causes = set(flags)
        known = set(self.endowments(setup)[RED]) | set(self.endowments(setup)[BLUE])
        if end["accepted"] and end["trade"] is not None:
            mine, tflags = read_trade(end["trade"])
            causes |= tflags
            if mine is not None and self.off_protocol(mine):
                causes.add("two_sided_transfer")
            if names_in(mine) - known:
                causes.add("unknown_resource_accepted")
            if not any(v for d in end["delta"] for v in d.values()):  # nothing moved: did the trade net to nothing?
                moves = mine is not None and any(mine["red_gives"].get(k, 0) != mine["blue_gives"].get(k, 0)
                                                 for k in set(mine["red_gives"]) | set(mine["blue_gives"]))
                causes.add("summary_ignores_trade" if moves else "zero_net_accept")
        if not recorded["consistent"]:
            causes.add("outcome_mismatch")
        replayed: dict[str, Any] | None = None
        if error is not None:
            causes.add("replay_error")
        else:
            out = self.outcome(state)
            deal = thaw(state.deal) if state.deal is not None else None
            paper = self.paper_reading(setup, (out.payoffs[0], out.payoffs[1]))
            replayed = {"payoff": list(out.payoffs), "payoff_paper": list(paper),
                        "agreement": deal is not None, "final_price": self.price_of(deal)}
        agree = replayed is not None and replayed["agreement"] == recorded["agreement"] and all(
            abs(a - b) < 1e-9 for a, b in zip(replayed["payoff"], recorded["payoff"]))
        order = [c for c in CAUSES if c in causes]
        detail = ""
        kind = ""
        if not agree:
            first = primary(order)
            order = [first] + [c for c in order if c != first]
            kind = CAUSES[first][0]
            got = "no result" if replayed is None else f"{_pair(replayed['payoff'])}"
            detail = (f"recorded {_pair(recorded['payoff'])} ({recorded['final_response']}), our replay {got}"
                      + (f" ({error})" if error else "") + f": {CAUSES[first][1]}")
        keep = {k: recorded[k] for k in ("payoff", "payoff_paper", "agreement", "final_price")}
        return ReplayCheck(agree, keep, replayed, tuple(order), kind, detail)

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        """One released game: the moves replayed through these rules, the outcome the log records and the
        check of one against the other (see logs.py). ``payoffs`` are the replay's (None when it stopped
        early); ``recorded`` is the outcome of record (None when the log has no END summary).

        Raises ValueError only when the log is not a game of this scenario at all (no class, no moves,
        unreadable parameters or summary)."""
        if raw.get("class") != self.log_class:
            raise ValueError(f"expected a {self.log_class} log, got class {raw.get('class')!r}")
        params = self.params_from_log(raw)
        # Params is this game's own model (a class attribute cannot name the type variable P)
        setup = self.setup(cast(P, self.Params.model_validate(params)), 2, np.random.default_rng(0))
        log, flags, error, state = self._replay(raw, setup)
        if not log and error is None:
            raise ValueError("the log holds no moves")
        end = end_summary(raw)
        recorded = self._recorded(setup, end) if end is not None else None
        check = self._check(setup, end, recorded, flags, error, state) if end is not None and recorded else None
        pay = list(self.outcome(state).payoffs) if error is None else None
        players = raw.get("players") or []
        if [str(p.get("agent_name")) for p in players[:2]] == [NAMES[BLUE], NAMES[RED]]:
            players = players[::-1]
        chats = [list(p.get("conversation") or []) for p in players[:2]]
        return ImportedRun(params, 2, log, pay, chats if len(chats) == 2 else None, recorded, check)

    # ---- metrics ----
    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Per run (spec 2.6): payoff changes, who won, agreement, first offer and final price, proposals."""
        deal = None
        ended = None
        first_by: int | None = None  # who made the first proposal
        first_price = None
        first_response = None
        proposals = [0, 0]
        for r in rounds:
            ev = r["events"]
            say = ev["say"]
            if first_by is not None and first_response is None and say["player"] != first_by:
                first_response = say.get("decision")
            if say.get("decision") == "propose":
                proposals[say["player"]] += 1
                if first_by is None:
                    first_by, first_price = say["player"], ev.get("price")
            if ev.get("deal") is not None:
                deal = ev["deal"]
            ended = ev.get("ended") or ended
        pay = self.metric_payoffs(setup, deal)
        return {"payoff": list(pay), "win": [pay[0] > pay[1], pay[0] < pay[1]], "agreement": deal is not None,
                "ended": ended, "first_offer": first_price, "first_response": first_response,
                "final_price": self.price_of(deal) if deal is not None else None,
                "proposals": proposals, "turns": len(rounds)}

    def metric_payoffs(self, setup: Setup, deal: Trade | None) -> tuple[float, float]:
        return self.payoffs_of(setup, deal)


def _pair(pay: Sequence[float]) -> str:
    return " / ".join(f"{x:g}" for x in pay)


def reader_for(raw: Mapping[str, Any], games: Mapping[str, Game]) -> Game | None:
    """The registered scenario whose released logs have this ``class``."""
    for g in games.values():
        if isinstance(g, NegotiationGame) and g.log_class == raw.get("class"):
            return g
    return None
