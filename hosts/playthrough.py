"""A run in progress: the coordinates and shared facts of a run, the state of play, the players'
conversations, and one decision as a single value passed through the Host."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..agents.base import Message
from ..games.base import Outcome, Setup
from ..games.text import storable
from .experiment import Lineup


@dataclass
class RunContext:
    """Where a run stands in the experiment and what all its decisions share.

    ``counters`` is each seat's next decision index in the session (decision seeds, scripted replies and
    cached samples follow it, so a resumed session repeats an uninterrupted one exactly)."""

    table: int  # index of the table (lineup x grid cell) in the Host's list
    lineup: Lineup
    session: int
    run: int
    setup: Setup
    seats: tuple[int, ...]  # seat -> player entry
    ne: Outcome | None
    counters: list[int]
    history: list[dict[str, Any]] | None = None
    n_past: int = 0

    @property
    def coords(self) -> tuple[str, int, int]:
        return self.lineup.name, self.session, self.run


@dataclass(frozen=True)
class Decision:
    """One seat's decision at one move: the run it belongs to and everything the seat sees."""

    ctx: RunContext
    rnd: int
    seat: int
    state: Any
    talk: Conversations
    steer: str | None = None  # a prompt action's instruction, added at the end of the request

    @property
    def entry(self) -> int:
        return self.ctx.seats[self.seat]


@dataclass
class Playthrough:
    """A run in progress: its state, the players' conversations and what the run record needs."""

    state: Any
    talk: Conversations
    n_seats: int
    rnd: int = 0
    errors: list[str] = field(default_factory=list)
    round_log: list[dict[str, Any]] = field(default_factory=list)
    first_valid: list[bool] = field(default_factory=list)
    moves: list[int] = field(default_factory=list)  # decisions per seat so far (the steered turn)
    # per seat: moves lost to a reply cut at max_tokens, and whether the seat broke a rule by its own reply
    cut: list[int] = field(default_factory=list)
    own_break: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.first_valid = self.first_valid or [True] * self.n_seats
        self.moves = self.moves or [0] * self.n_seats
        self.cut = self.cut or [0] * self.n_seats
        self.own_break = self.own_break or [False] * self.n_seats

    def branch(self) -> Playthrough:
        """An independent copy to continue differently (steering plays every action from one prefix)."""
        return Playthrough(self.state, self.talk.copy(), self.n_seats, self.rnd, list(self.errors),
                           list(self.round_log), list(self.first_valid), list(self.moves), list(self.cut),
                           list(self.own_break))

    def truncated(self) -> list[bool] | None:
        """Per seat, whether its rule breaks in this run were only replies cut at the token limit (the run
        record's ``truncated``; None when no reply was cut, and the record then has no such key)."""
        if not any(self.cut):
            return None
        return [c > 0 and not own for c, own in zip(self.cut, self.own_break)]


class Conversations:
    """Each player's conversation through one run (games that declare ``rounds``).

    A player's first request is the full prompt; each later one carries the round's report and the new
    request, after the player's own earlier replies. Games without rounds get a fresh prompt each time.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.history: dict[int, tuple[Message, ...]] = {}
        self.reports: dict[int, list[str]] = {}
        self._logged: dict[int, int] = {}

    def request(self, seat: int, fresh: tuple[Message, ...], follow_up: Any) -> tuple[Message, ...]:
        past = self.history.get(seat)
        if not self.enabled or past is None:
            return fresh
        text = "\n\n".join([*self.reports.pop(seat, []), follow_up()])
        return (*past, Message("user", text))

    def restart(self, seat: int) -> None:
        """Forget the seat's conversation; its next record logs the whole new prompt from offset 0."""
        self.history.pop(seat, None)
        self.reports.pop(seat, None)
        self._logged[seat] = 0

    def report(self, seat: int, text: str) -> None:
        if seat in self.history:  # a report only means something to a player who has spoken
            self.reports.setdefault(seat, []).append(text)

    def copy(self) -> Conversations:
        out = Conversations(self.enabled)
        out.history = dict(self.history)  # tuples of frozen messages: shared safely
        out.reports = {k: list(v) for k, v in self.reports.items()}
        out._logged = dict(self._logged)
        return out

    def logged(self, seat: int) -> int:
        return self._logged.get(seat, 0) if self.enabled else 0

    def answered(self, seat: int, messages: tuple[Message, ...], reply: str, logged_upto: int) -> None:
        """Keep the conversation; ``logged_upto`` counts the messages already in decision records."""
        if self.enabled:
            self.history[seat] = (*messages, Message("assistant", storable(reply)))  # sendable again
            self._logged[seat] = logged_upto
