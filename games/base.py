"""The contract every game follows: a declaration, pure rules, immutable state, optional capabilities.

A game never does I/O, never prints and never touches global random state. Private information is drawn
from a ``numpy.random.Generator`` that the Host derives from the session seed; chance inside a run comes
from the generator the Host passes to ``apply``. A session's drawn configuration (:class:`Setup`) stays
fixed across its runs; each run starts from ``initial_state(setup)``. Reply fields and judging live in
:mod:`.fields`, parameters in :mod:`.params`; their names are re-exported here for games to import.
"""

from __future__ import annotations

import abc
import contextlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

import numpy as np

from .fields import (
    PARSE_ERROR,
    RULE_VIOLATION,
    SCHEMA_ERROR,
    TRUNCATED,
    ActionField,
    ActionSpec,
    FieldKind,
    Judgement,
    Violation,
    bounded_extras,
    extract_json,
    is_plain_json,
    judge_object,
    judge_reply,
)
from .params import (
    DRAW_DECIMALS,
    MAX_GAME_NUMBER,
    GameParams,
    draw_param,
    fmt_num,
    validate_param,
)

__all__ = [
    "DRAW_DECIMALS", "MAX_GAME_NUMBER", "PARSE_ERROR", "RULE_VIOLATION", "SCHEMA_ERROR", "ActionField",
    "ActionSpec", "FieldKind", "ForeignValue", "Game", "GameInfo", "GameParams", "ImportedRun", "Judgement",
    "Outcome", "ReplayCheck", "Setup", "Skip", "TRUNCATED", "Violation", "bounded_extras", "draw_param",
    "extract_json", "fmt_num", "foreign_move_problem", "game_number", "is_plain_json", "judge_object",
    "judge_reply", "validate_param", "whole_number",
]


@dataclass(frozen=True)
class Setup:
    """A session's drawn configuration: fixed across its runs, JSON-ready, logged with every run."""

    n_players: int
    values: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.values)


@dataclass(frozen=True)
class Outcome:
    """Final result of one run, in seat order."""

    actions: tuple[Any, ...]  # the (last) valid action value per seat, None where none
    valid: tuple[bool, ...]  # False if the seat broke a rule at any point of the run
    payoffs: tuple[float, ...]
    winners: tuple[int, ...]
    void: bool
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Skip:
    """Moves a game skips because no decision in them can change anything (``Game.fast_forward``)."""

    state: Any  # the state after the skipped moves, as playing them would have left it
    moves: int  # how many moves were skipped (at least 1)
    actions: Mapping[int, dict[str, Any]]  # what each seat to move played in every one of them


@dataclass(frozen=True)
class ReplayCheck:
    """Our rules' replay of an imported run set beside the source's own record of it.

    The source's record is what happened in that study (under its harness's rules and parser); the replay
    says whether our rules, fed the same moves, reach the same outcome. ``causes`` are short codes of what
    differs or had to be tolerated (they are listed even when the outcomes agree, e.g. a malformed proposal
    nobody accepted); ``kind`` classes the first cause of a disagreement: ``parser difference``, ``rule
    difference``, ``malformed move``, ``metric definition``, ``source inconsistency`` or ``unexplained``.
    """

    agree: bool
    recorded: Any  # the source's outcome, JSON-ready (e.g. payoffs, the deal)
    replayed: Any  # our rules' outcome of the same moves, same shape; None when the replay could not finish
    causes: tuple[str, ...] = ()
    kind: str = ""
    detail: str = ""  # one line for a reader: what differs and why


@dataclass(frozen=True)
class ImportedRun:
    """One run of another tool's released results, read into this game's terms (``from_reference``).

    ``round_log`` has the Host's shape (``{"round", "actions": [per seat a reply dict or None],
    "events": {...}}``) so the game's own ``score`` and ``metrics`` read imported and native runs alike.
    ``recorded``: the source's own record of the outcome where it keeps one apart from the moves (then it
    is the outcome of record: ``payoffs`` per seat, ``metrics`` that override the replay's, anything else
    the game keeps); ``check``: the replay against that record (None: nothing to compare).
    """

    params: dict[str, Any]  # keys of the game's Params
    n_players: int
    round_log: list[dict[str, Any]]
    payoffs: list[float] | None = None  # per seat, when the source records them
    messages: list[list[dict[str, Any]]] | None = None  # per seat, the stored chat, when present
    recorded: dict[str, Any] | None = None
    check: ReplayCheck | None = None


class GameError(RuntimeError):
    """A game broke its own contract during a run: it raised, never ended, asked a seat to move with no action
    to take, or paid a payoff that is no finite number or beyond the bounds it declared (a silent ``null``
    would read as a result). The message names the game, the lineup, session, run and step, and what the
    game did; the run directory is left as after any stop (finished runs kept)."""


def payoff_problem(payoffs: Any, bounds: tuple[float, float] | None) -> str | None:
    """Why these payoffs break the contract (``econarena check`` and ``run`` both ask), or None.

    Finite floats (ints allowed) within ``bounds`` where declared, with a relative slack of 1e-9 for the
    rounding of sums."""
    for seat, p in enumerate(payoffs):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p):
            return f"seat {seat}'s payoff {p!r} is not a finite number"
        if bounds is not None:
            lo, hi = bounds
            if not lo - 1e-9 * max(1.0, abs(lo)) <= p <= hi + 1e-9 * max(1.0, abs(hi)):
                return f"seat {seat}'s payoff {p!r} is outside the declared bounds [{lo}, {hi}]"
    return None


class ForeignValue(ValueError):
    """A value in another tool's released file that this game's own rules refuse: ``from_reference`` raises
    it and the importer refuses the item under ``category`` (never imports it as an agreeing result).

    ``bad_parameter``: the game's Params model refuses it, or a parameter the outcome depends on is
    missing; ``bad_move``: the game's judge refuses a move the outcome rests on; ``bad_number``: not a
    finite number within ``MAX_GAME_NUMBER`` (sums and means of such numbers overflowed or lost precision).
    """

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


def foreign_move_problem(game: Game, state: Any, seat: int, action: Mapping[str, Any]) -> tuple[str, str] | None:
    """(violation, detail) when the game's own judge refuses a move read from another tool's file, None when
    it accepts it: the same types, bounds and rules as a reply played here. The violation tells a value of
    the wrong type (``schema_error``, ``parse_error``: not what the source's own parser could have written)
    from one our rules forbid (``rule_violation``: the source's rules may have allowed it). Free-text fields
    are judged empty: their length bounds what we send a model, not what a move is."""
    spec = game.action_spec(state, seat)
    judged = {**action, **{f.name: "" for f in spec.fields if f.kind == "text"}}
    j = game.judge_action(state, seat, judged)
    return None if j.action is not None else (j.violation or SCHEMA_ERROR, j.detail or "refused")


def whole_number(value: Any, where: str, category: str = "bad_parameter") -> int:
    """A whole number as another tool stored it (``12``, ``12.0``, ``"12"``); :class:`ForeignValue`
    (``category``; ``bad_number`` beyond MAX_GAME_NUMBER) for anything else, so that ``2.5`` is never read
    as 2 nor ``true`` as 1."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not (math.isfinite(value) and value.is_integer())):
        raise ForeignValue(category, f"{where}: expected a whole number, got {_shown(value)}")
    if abs(value) > MAX_GAME_NUMBER:
        raise ForeignValue("bad_number", f"{where}: {_shown(value)} is beyond {MAX_GAME_NUMBER:.0e}")
    return int(value)


def game_number(value: Any, where: str, category: str = "bad_number") -> float:
    """A number another tool stored (``12.5``, ``"12.5"``), checked as a game's numbers are: finite and within
    MAX_GAME_NUMBER (:class:`ForeignValue` ``category`` otherwise; a bool is not a number)."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ForeignValue(category, f"{where}: expected a number, got {_shown(value)}")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x) or abs(x) > MAX_GAME_NUMBER:
        raise ForeignValue(category, f"{where}: {_shown(value)} is not a finite number within {MAX_GAME_NUMBER:.0e}")
    return x


def _shown(value: Any) -> str:
    """A value for a one-line message: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class GameInfo:
    """What a game IS, declared once; the Host, prompts and analysis read this instead of game names.

    ``rounds``: a run has several rounds with a report after each, and every player keeps one
    conversation through the run (GAMA-Bench's shape). ``messages``: whether replies carry public text
    (and secret notes). ``scale_key``: the setup key that normalises the action in figures (a number, or a
    per-player list). ``score``: the game computes a 0-100 per-run score. ``policies``: baseline
    strategies it offers. ``family`` groups games in reports.
    """

    title: str
    moves: Literal["simultaneous", "sequential"] = "simultaneous"
    rounds: bool = False
    messages: Literal["none", "public", "public+secret"] = "none"
    scale_key: str | None = None
    action_axis: str = "action"
    equilibrium_note: str = ""
    score: bool = False
    policies: tuple[str, ...] = ("rational", "random")
    family: str = "econarena"
    stakes_key: str | None = None  # the setup key whose size sorts sessions into stake groups (L/M/H)
    stakes_inclusive: bool = False  # groups are L: stakes <(=) 100, M: <(=) 1000, H: above
    deviation_note: str = ""  # how the deviation is measured, for axis labels
    history_extra: tuple[str, ...] = ()  # outcome.extra keys shown with `history = "full"`
    round_curve: str = ""  # the per-round quantity a report plots (a key of the round events)
    # Where another tool's released results of this game lie and how they map onto Params: (folder under
    # the reference's raw_results/, Params overrides), e.g. ("bar_game_implicit", {"mode": "implicit"}).
    # The FIRST entry is the scored (leaderboard) setting; later entries are other modes, imported and
    # scored under their own column. Read by ``econarena import``; empty: the game imports nothing.
    reference: tuple[tuple[str, dict[str, Any]], ...] = ()
    # The regression factors of the family's linear models (``econarena analyze``, analysis/families/glee.py), as
    # (name, reference level) pairs: each is a Params key, one-hot encoded with the reference level dropped,
    # so an effect reads "relative to the reference" (GLEE Table 8's baselines), e.g. ("delta_a", 0.9).
    # A dict reference merges several keys into one categorical variable named by the first element, its
    # levels the combinations present in the data: ("market", {"horizon": 99, "complete_information": True,
    # "messages": False}). Empty: the game has no such models.
    factors: tuple[tuple[str, Any], ...] = ()
    n_players: int | None = None  # a game for exactly this many seats (the two-player language games)
    # the equilibrium action is dominant and equals the seat's private value (bid it; stay in until it): the
    # analysis then measures the action itself (``bid_deviation``), which moves where payoffs do not
    dominant_value: bool = False


P = TypeVar("P", bound=GameParams)  # a game's own parameter model
S = TypeVar("S")  # a game's own (frozen) state class


class Game(abc.ABC, Generic[P, S]):
    """Rules of one game. Subclasses are stateless; all state lives in the frozen state objects.

    The contract in parts (:mod:`.capabilities`): the core a game must write (:class:`.capabilities.Core`:
    the declarations and ``setup``, ``initial_state``, ``to_move``, ``action_spec``, ``observation``,
    ``apply``, ``outcome``) and the capabilities it may add, each a protocol of the methods it writes:
    solvable (``equilibrium``, ``deviation``), scored (``score``), replayable from released logs
    (``from_reference``), judged by an LLM (``needs_judge``, ``judge_requests``, ``judged_outcome``) and
    steerable (``prompt_actions``). The rest are refinements with a default here: baselines
    (``strategy``), rounds (``events``, ``report``, ``fresh_conversation``), ``metrics``, ``check``.

    A game names its own types, ``class Auction(Game[AuctionParams, AuctionState])``, so the type checker
    holds every method to the parameters and state that game really takes; plain ``Game`` means any game.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    description: ClassVar[str]
    info: ClassVar[GameInfo]
    Params: ClassVar[type[GameParams]]
    action_key: ClassVar[str]  # main JSON key, for summaries
    history_key: ClassVar[str]  # what a run's recorded action is called in history shown to players
    has_private_values: ClassVar[bool] = False
    # why `econarena check` cannot verify the declared equilibrium by unilateral deviations (continuous types,
    # huge sequential trees): it then reports a skip saying so; None: it is verified
    equilibrium_unchecked: ClassVar[str | None] = None

    @abc.abstractmethod
    def setup(self, params: P, n_players: int, rng: np.random.Generator) -> Setup:
        """Draw the session's configuration (bounds, values, assets) once per session."""

    @abc.abstractmethod
    def initial_state(self, setup: Setup) -> S: ...

    @abc.abstractmethod
    def to_move(self, state: S) -> tuple[int, ...]:
        """Players who decide now; several at once is a simultaneous move. Empty when terminal."""

    @abc.abstractmethod
    def action_spec(self, state: S, player: int) -> ActionSpec: ...

    @abc.abstractmethod
    def observation(self, state: S, player: int) -> dict[str, Any]:
        """The facts a player may see now, as template fields."""

    def check(self, state: S, player: int, action: dict[str, Any]) -> str | None:
        """A rule violation beyond the declared fields' own checks, or None."""
        return None

    @abc.abstractmethod
    def apply(self, state: S, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> S:
        """Advance by one move. ``None`` marks a seat whose reply broke a rule; returns a new state.

        ``rng`` is the move's chance generator, derived by the Host from the session, run and round, so
        chance (who is hit, a round's valuations) does not depend on concurrency or resume.
        """

    def is_terminal(self, state: S) -> bool:
        return not self.to_move(state)

    @abc.abstractmethod
    def outcome(self, state: S) -> Outcome: ...

    # ---- optional capabilities ----
    def equilibrium(self, setup: Setup) -> Outcome | None:
        """Nash-equilibrium actions and payoffs for exactly this draw; None when the game declares none."""
        return None

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        """Distance from equilibrium for one seat (see the module docstrings for the formula)."""
        return None

    def mixed_equilibrium(self, setup: Setup) -> tuple[Mapping[str, float], ...] | None:
        """Per seat, the equilibrium's mixture over the choices of the stage game's one choice field (a
        probability per choice, summing to 1; see :mod:`.mixed`); None: the equilibrium is pure (or none)."""
        return None

    def payoff_bounds(self, setup: Setup) -> tuple[float, float] | None:
        """(lowest, highest) payoff any seat can end a run with under this draw, for the contract checks
        (``econarena check``); None: not declared (the built-in games' bounds sit in the conformance tests)."""
        return None

    def strategy(self, state: S, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        """Reference actions for baseline agents (``rational``, ``random``, ...); see ``info.policies``."""
        raise ValueError(f"{self.name} offers no {kind!r} strategy")

    def fast_forward(self, state: S, policies: Mapping[int, tuple[str, Mapping[str, Any]]]) -> Skip | None:
        """Skip the coming moves in which no decision can change anything, when the game can tell.

        ``policies`` maps the seats whose decisions are baseline strategies of this game to (kind,
        options), e.g. ``{0: ("rational", {}), 2: ("level_k", {"k": 2})}``; the other seats (models,
        people, scripts) must be asked. The Host calls this only when every seat to move is in
        ``policies``, and a game answers only when it can prove that playing those policies for the next
        ``moves`` moves changes nothing but a counter (the English auction's clock, while every bidder
        stays): the run then ends exactly as if the moves had been played, in work that does not grow with
        the numbers a user typed. The skipped moves are not decisions: nobody is asked, none is logged;
        the round log holds one entry for them (``round`` to ``through``). Default: None (play every move).
        """
        return None

    def events(self, before: S, after: S, actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        """The public record of one move (logged in the run record's ``rounds``; input to ``score``)."""
        return {}

    def report(self, before: S, after: S, actions: Mapping[int, dict[str, Any] | None],
               player: int) -> dict[str, Any] | None:
        """Template fields of the report one player gets after a round (``info.rounds`` games)."""
        return None

    def fresh_conversation(self, state: S, player: int) -> bool:
        """True when this player's next request starts a new conversation instead of continuing its own
        (GLEE's myopic buyer: a new buyer every round who remembers nothing). Games with rounds only."""
        return False

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        """The run's 0-100 score from its round records (``{"round", "actions", "events"}``)."""
        return None

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The game's own per-run metrics from its round records (logged with the run)."""
        return {}

    def policies(self) -> tuple[str, ...]:
        return self.info.policies

    def reference(self, state: S, player: int, kind: str, rng: np.random.Generator | None = None,
                  **kw: Any) -> dict[str, Any]:
        """The action of baseline ``kind``: a trivial policy every game offers (games/trivial.py), read from
        the action's shape alone, or the game's own :meth:`strategy`."""
        from .trivial import TRIVIAL_POLICIES, trivial_action

        if kind in TRIVIAL_POLICIES:
            return trivial_action(self.action_spec(state, player), kind)
        return self.strategy(state, player, kind, rng, **kw)

    @staticmethod
    def summary_action(values: Sequence[Any]) -> Any:
        """One seat's run as one value, from its per-round values (None = no valid reply): the mean of
        numbers, else the last value. Records, history and imported runs all use it."""
        seen = [v for v in values if v is not None]
        if not seen:
            return None
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen):
            return math.fsum(seen) / len(seen)
        return seen[-1]

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        """Read one result file of the reference implementation (already parsed JSON); pure, no I/O."""
        raise NotImplementedError(f"{self.name} cannot read reference results")

    # ---- steering (econarena steer) and judged payoffs ----
    def prompt_actions(self, kind: str, params: P) -> tuple[tuple[str, str], ...] | None:
        """A named space of prompt actions for steering: (label, instruction) pairs, the uninformed
        ``("any", "")`` included. The steering module offers tones for every game; a game adds spaces that
        depend on its goods (fruit trade's one-for-one offers). None: no space of that name here."""
        return None

    def judge_requests(self, setup: Setup, state: S) -> dict[int, dict[str, Any]] | None:
        """Per seat, the template fields (``judge`` prompt) of the question a judge model answers to value
        the finished run for that seat, when this game's payoffs come from a judge (fruit trade with
        ``payoff = "llm"``). None: the game computes its own payoffs (the default)."""
        return None

    def needs_judge(self, params: P) -> bool:
        """Whether these parameters take payoffs from a judge model (an experiment must name one)."""
        return False

    def judged_outcome(self, setup: Setup, state: S, replies: Mapping[int, str | None]) -> Outcome:
        """The finished run's outcome with payoffs read from the judge's raw replies per seat (None: the
        judge gave no reply). Called only when ``judge_requests`` returned fields."""
        raise NotImplementedError(f"{self.name} has no judged payoffs")

    def hidden_from_history(self, params: P) -> str | None:
        """What these parameters keep from the players that ``history = "full"`` would show them (every
        seat's payoff and private value of the session's earlier runs, whose draw is the same), in a few
        words; None when nothing is kept (the auctions' full history shows the values by design: the prompt
        never says they stay unknown). The experiment is then refused, never shown a history that contradicts
        its own prompt."""
        return None

    def max_moves(self, params: P, n_players: int) -> tuple[int, bool]:
        """Decisions per seat in one run: (count, exact); an upper bound when ``exact`` is False."""
        return 1, True

    # ---- judging replies: generic, driven by the action spec ----

    def judge(self, state: S, player: int, text: str) -> Judgement:
        return judge_reply(self.action_spec(state, player), text,
                           lambda action: self.check(state, player, action))

    def judge_action(self, state: S, player: int, action: dict[str, Any]) -> Judgement:
        """The judgement of a reply given as its parsed object (a baseline's action, see
        ``fields.is_plain_json``): what ``judge`` gives for the object's JSON text, without the text."""
        return judge_object(self.action_spec(state, player), action,
                            lambda a: self.check(state, player, a))
