"""The contract every game follows: pure rules, immutable state, declared action schemas.

A game never does I/O, never prints and never touches global random state. Private information is drawn
from a ``numpy.random.Generator`` that the Host derives from the session seed. A session's drawn
configuration (:class:`Setup`) stays fixed across its runs; each run starts from ``initial_state(setup)``.

Replies are judged in three steps, kept apart because the rule-breaking metric needs them:
``parse_error`` (no JSON object, or the action key is missing), ``schema_error`` (the value has the wrong
type), ``rule_violation`` (well-formed but against the rules, e.g. a bid above one's assets).
"""

from __future__ import annotations

import abc
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

PARSE_ERROR = "parse_error"
SCHEMA_ERROR = "schema_error"
RULE_VIOLATION = "rule_violation"
Violation = Literal["parse_error", "schema_error", "rule_violation"]


class GameParams(BaseModel):
    """Base for every game's parameter model: unknown keys are errors, and "0.5" is not a number."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


FieldKind = Literal["number", "choice", "text", "allocation", "target"]


@dataclass(frozen=True)
class ActionField:
    """One key of the JSON reply. The kind decides how it is judged (see ``judge_value``).

    - ``number``: ``low``/``high`` are rule bounds (inclusive, breaking them is a rule violation);
      ``integer`` demands a whole number (a schema error otherwise); ``step`` a grid from ``low``.
    - ``choice``: one of ``choices`` (case-insensitive).
    - ``text``: a string of at most ``max_length`` characters; ``secret`` marks a private note that the
      Host logs but never shows to other players.
    - ``allocation``: an object over ``items`` (player ids or goods) of non-negative numbers summing to
      ``total``; ``integer`` as for numbers.
    - ``target``: the id of a player in ``targets``; ``allow_none`` lets ``null`` mean "nobody".
    """

    name: str
    kind: FieldKind
    description: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    integer: bool = False
    step: float | None = None
    max_length: int | None = None
    secret: bool = False
    items: tuple[str, ...] = ()
    total: float | None = None
    targets: tuple[int, ...] = ()
    allow_none: bool = False

    def type_name(self) -> str:
        return {"number": "int" if self.integer else "float", "choice": "str", "text": "str",
                "allocation": "object", "target": "int"}[self.kind]

    def format_hint(self) -> str:
        if self.kind == "choice":
            return " or ".join(f'"{c}"' for c in self.choices)
        if self.kind == "number":
            return "a whole number" if self.integer else "a number"
        if self.kind == "text":
            return f"a string of at most {self.max_length} characters" if self.max_length else "a string"
        if self.kind == "allocation":
            keys = ", ".join(f'"{k}": number' for k in self.items)
            return f"{{{keys}}} summing to {fmt_num(self.total)}"
        ids = ", ".join(str(t) for t in self.targets)
        return f"one of the player ids {ids}" + (" or null" if self.allow_none else "")


@dataclass(frozen=True)
class ActionSpec:
    """What a player must answer at this state; prompts, parsing and validation all derive from it."""

    fields: tuple[ActionField, ...]

    def field(self, name: str) -> ActionField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


@dataclass(frozen=True)
class Judgement:
    """The Host's reading of one reply."""

    action: dict[str, Any] | None
    violation: Violation | None
    detail: str | None
    extras: dict[str, Any] = field(default_factory=dict)  # other keys the reply carried (logged)

    @property
    def valid(self) -> bool:
        return self.violation is None


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
class ImportedRun:
    """One run of another tool's released results, read into this game's terms (``from_reference``).

    ``round_log`` has the Host's shape (``{"round", "actions": [per seat a reply dict or None],
    "events": {...}}``) so the game's own ``score`` and ``metrics`` read imported and native runs alike.
    """

    params: dict[str, Any]  # keys of the game's Params
    n_players: int
    round_log: list[dict[str, Any]]
    payoffs: list[float] | None = None  # per seat, when the source records them
    messages: list[list[dict[str, Any]]] | None = None  # per seat, the stored chat, when present


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


class Game(abc.ABC):
    """Rules of one game. Subclasses are stateless; all state lives in the frozen state objects.

    Required: ``setup``, ``initial_state``, ``to_move``, ``action_spec``, ``observation``, ``apply`` and
    ``outcome``. Optional capabilities: ``equilibrium``/``deviation`` (return None when the game has
    none), ``strategy`` (baselines), ``report``/``events`` (rounds), ``score`` and ``metrics``.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    description: ClassVar[str]
    info: ClassVar[GameInfo]
    Params: ClassVar[type[GameParams]]
    action_key: ClassVar[str]  # main JSON key, for summaries
    history_key: ClassVar[str]  # what a run's recorded action is called in history shown to players
    has_private_values: ClassVar[bool] = False

    @abc.abstractmethod
    def setup(self, params: GameParams, n_players: int, rng: np.random.Generator) -> Setup:
        """Draw the session's configuration (bounds, values, assets) once per session."""

    @abc.abstractmethod
    def initial_state(self, setup: Setup) -> Any: ...

    @abc.abstractmethod
    def to_move(self, state: Any) -> tuple[int, ...]:
        """Players who decide now; several at once is a simultaneous move. Empty when terminal."""

    @abc.abstractmethod
    def action_spec(self, state: Any, player: int) -> ActionSpec: ...

    @abc.abstractmethod
    def observation(self, state: Any, player: int) -> dict[str, Any]:
        """The facts a player may see now, as template fields."""

    def check(self, state: Any, player: int, action: dict[str, Any]) -> str | None:
        """A rule violation beyond the declared fields' own checks, or None."""
        return None

    @abc.abstractmethod
    def apply(self, state: Any, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> Any:
        """Advance by one move. ``None`` marks a seat whose reply broke a rule; returns a new state.

        ``rng`` is the move's chance generator, derived by the Host from the session, run and round, so
        chance (who is hit, a round's valuations) does not depend on concurrency or resume.
        """

    def is_terminal(self, state: Any) -> bool:
        return not self.to_move(state)

    @abc.abstractmethod
    def outcome(self, state: Any) -> Outcome: ...

    # ---- optional capabilities ----
    def equilibrium(self, setup: Setup) -> Outcome | None:
        """Nash-equilibrium actions and payoffs for exactly this draw; None when the game declares none."""
        return None

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        """Distance from equilibrium for one seat (see the module docstrings for the formula)."""
        return None

    def strategy(self, state: Any, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        """Reference actions for baseline agents (``rational``, ``random``, ...); see ``info.policies``."""
        raise ValueError(f"{self.name} offers no {kind!r} strategy")

    def events(self, before: Any, after: Any, actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        """The public record of one move (logged in the run record's ``rounds``; input to ``score``)."""
        return {}

    def report(self, before: Any, after: Any, actions: Mapping[int, dict[str, Any] | None],
               player: int) -> dict[str, Any] | None:
        """Template fields of the report one player gets after a round (``info.rounds`` games)."""
        return None

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        """The run's 0-100 score from its round records (``{"round", "actions", "events"}``)."""
        return None

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The game's own per-run metrics from its round records (logged with the run)."""
        return {}

    def policies(self) -> tuple[str, ...]:
        return self.info.policies

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

    def max_moves(self, params: GameParams, n_players: int) -> tuple[int, bool]:
        """Decisions per seat in one run: (count, exact); an upper bound when ``exact`` is False."""
        return 1, True

    # ---- judging replies: generic, driven by the action spec ----

    def judge(self, state: Any, player: int, text: str) -> Judgement:
        return judge_reply(self.action_spec(state, player), text,
                           lambda action: self.check(state, player, action))


def judge_reply(spec: ActionSpec, text: str, check: Any = None) -> Judgement:
    """Parse, type-check and rule-check one raw reply against the declared fields, in that order."""
    obj = extract_json(text)
    if obj is None:
        return Judgement(None, PARSE_ERROR, "no JSON object found in the reply")
    norm = {_norm_key(k): (k, v) for k, v in obj.items()}
    extras = _extras(obj, spec)
    action: dict[str, Any] = {}
    for f in spec.fields:
        hit = norm.get(_norm_key(f.name))
        if hit is None:
            return Judgement(None, PARSE_ERROR, f"JSON has no key {f.name!r}", extras)
        value, problem = _typed(f, hit[1])
        if problem is not None:
            return Judgement(None, SCHEMA_ERROR, problem, extras)
        action[f.name] = value
    for f in spec.fields:
        problem = _rule_problem(f, action[f.name])
        if problem is not None:
            return Judgement(None, RULE_VIOLATION, problem, extras | {"attempted": action})
    problem = check(action) if check is not None else None
    if problem:
        return Judgement(None, RULE_VIOLATION, problem, extras | {"attempted": action})
    return Judgement(action, None, None, extras)


def _show(value: Any) -> str:
    try:
        return json.dumps(value)[:80]
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)  # an int too large for a float overflows
    except OverflowError:
        return math.inf


def _typed(f: ActionField, value: Any) -> tuple[Any, str | None]:
    """The value in its field's type, or a schema problem."""
    if f.kind == "number":
        number = _number(value)
        if number is None:
            return None, f"{f.name!r} must be {f.format_hint()}, got {_show(value)}"
        if not math.isfinite(number):
            return None, f"{f.name!r} must be finite"
        if f.integer:
            if not number.is_integer():
                return None, f"{f.name!r} must be a whole number, got {_show(value)}"
            return int(number), None
        return number, None
    if f.kind == "choice":
        if not isinstance(value, str) or value.strip().lower() not in f.choices:
            return None, f"{f.name!r} must be one of {f.format_hint()}, got {_show(value)}"
        return value.strip().lower(), None
    if f.kind == "text":
        if not isinstance(value, str):
            return None, f"{f.name!r} must be a string, got {_show(value)}"
        return value, None
    if f.kind == "allocation":
        return _allocation(f, value)
    return _target(f, value)


def _allocation(f: ActionField, value: Any) -> tuple[Any, str | None]:
    if isinstance(value, list) and len(value) == len(f.items):
        value = dict(zip(f.items, value))
    if not isinstance(value, dict):
        return None, f"{f.name!r} must be {f.format_hint()}, got {_show(value)}"
    byname = {_norm_key(str(k)): v for k, v in value.items()}
    wanted = {_norm_key(k): k for k in f.items}
    if set(byname) != set(wanted):
        return None, f"{f.name!r} must have exactly the keys {', '.join(f.items)}, got {_show(sorted(value))}"
    out = {}
    for nk, key in wanted.items():
        number = _number(byname[nk])
        if number is None or not math.isfinite(number):
            return None, f"{f.name!r}.{key} must be a finite number, got {_show(byname[nk])}"
        if f.integer and not number.is_integer():
            return None, f"{f.name!r}.{key} must be a whole number, got {_show(byname[nk])}"
        out[key] = int(number) if f.integer else number
    return out, None


_PLAYER_REF = re.compile(r"^\s*(?:player[\s_#-]*)?(-?\d{1,9})\s*$", re.I)


def _target(f: ActionField, value: Any) -> tuple[Any, str | None]:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none")):
        return (None, None) if f.allow_none else (None, f"{f.name!r} must name a player, got null")
    if isinstance(value, str) and (m := _PLAYER_REF.match(value)):
        value = int(m.group(1))
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None, f"{f.name!r} must be a player id (a whole number), got {_show(value)}"
    if value == -1 and f.allow_none:
        return None, None
    return value, None


def _rule_problem(f: ActionField, v: Any) -> str | None:
    if f.kind == "number":
        if (f.low is not None and v < f.low) or (f.high is not None and v > f.high):
            return f"{f.name} {fmt_num(v)} is outside [{fmt_num(f.low)}, {fmt_num(f.high)}]"
        if f.step and not math.isclose((v - (f.low or 0.0)) / f.step,
                                       round((v - (f.low or 0.0)) / f.step), abs_tol=1e-9):
            return f"{f.name} {fmt_num(v)} is not on the grid of step {fmt_num(f.step)}"
    elif f.kind == "text":
        if f.max_length is not None and len(v) > f.max_length:
            return f"{f.name} has {len(v)} characters, more than the {f.max_length} allowed"
    elif f.kind == "allocation":
        if any(x < 0 for x in v.values()):
            return f"{f.name} has a negative share"
        if f.total is not None and not math.isclose(math.fsum(v.values()), f.total, rel_tol=1e-9, abs_tol=1e-9):
            return f"{f.name} sums to {fmt_num(math.fsum(v.values()))}, not {fmt_num(f.total)}"
    elif f.kind == "target" and v is not None and v not in f.targets:
        return f"{f.name} {v} is not one of the players that can be named ({', '.join(map(str, f.targets))})"
    return None


def _norm_key(key: str) -> str:
    return re.sub(r"[\s_\-]+", " ", key.strip().lower())


def _extras(obj: dict[str, Any], spec: ActionSpec) -> dict[str, Any]:
    names = {_norm_key(f.name) for f in spec.fields}
    return bounded_extras({k: v for k, v in obj.items() if _norm_key(k) not in names})


EXTRAS_MAX_DEPTH = 8  # a reply's other keys are kept for reading, not for re-parsing: bound what they cost
EXTRAS_MAX_CHARS = 20_000


def _cut(value: Any, depth: int) -> Any:
    if isinstance(value, dict):
        if depth >= EXTRAS_MAX_DEPTH:
            return f"<object nested deeper than {EXTRAS_MAX_DEPTH} levels, dropped: see the raw response>"
        return {str(k): _cut(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth >= EXTRAS_MAX_DEPTH:
            return f"<list nested deeper than {EXTRAS_MAX_DEPTH} levels, dropped: see the raw response>"
        return [_cut(v, depth + 1) for v in value]
    return value


def bounded_extras(extras: dict[str, Any]) -> dict[str, Any]:
    """The reply's other keys, cut to EXTRAS_MAX_DEPTH levels and EXTRAS_MAX_CHARS of JSON.

    A reply nested a thousand levels deep would otherwise be stored as-is and make every later
    ``json.dumps`` of the decision record fail; the raw text is always kept in ``response``.
    """
    out = _cut(extras, 0)
    text = json.dumps(out)
    if len(text) > EXTRAS_MAX_CHARS:
        return {"truncated_json": text[:EXTRAS_MAX_CHARS]}
    return out


def _short(value: Any) -> str:
    """A value quoted in a detail message: at most 80 characters, whatever its depth."""
    return json.dumps(_cut(value, EXTRAS_MAX_DEPTH - 2))[:80]


FALLBACK_ATTEMPTS = 64  # decoding attempts from stray "{" positions: keeps judging linear in the reply


def _fenced_blocks(text: str) -> list[str]:
    """Bodies of ``` fences (an optional ``json`` tag dropped) that look like one object, in order.

    Fences are paired left to right with ``str.find``: linear, where a lazy regex over the whole reply
    was quadratic on a reply of many fences.
    """
    marks = []
    pos = text.find("```")
    while pos != -1:
        marks.append(pos)
        pos = text.find("```", pos + 3)
    out = []
    for a, b in zip(marks[0::2], marks[1::2]):
        body = text[a + 3:b]
        if body[:4].lower() == "json":
            body = body[4:]
        body = body.strip()
        if body.startswith("{") and body.endswith("}"):
            out.append(body)
    return out


def extract_json(text: str) -> dict[str, Any] | None:
    """The reply's JSON object: a fenced block if any, else the LAST balanced ``{...}`` that parses.

    The last one wins because chain-of-thought replies reason first and answer at the end.
    """
    if not text:
        return None
    for block in reversed(_fenced_blocks(text)):
        obj = _loads(block)
        if obj is not None:
            return obj
    candidates = []
    depth = 0
    start = -1
    in_str = False
    escape = False
    for i, ch in enumerate(text):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                candidates.append(text[start:i + 1])
    for cand in reversed(candidates):
        obj = _loads(cand)
        if obj is not None:
            return obj
    # An unbalanced brace in the prose ("I pick { hmm ...") hides the answer from the scan above:
    # decode from every "{" instead and keep the object that ends last (the outermost one on nesting).
    best: tuple[int, dict[str, Any]] | None = None
    starts = [m.start() for m in re.finditer(r"\{", text)][-FALLBACK_ATTEMPTS:]
    for start in starts:
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and (best is None or end > best[0]):
            best = (end, obj)
    return best[1] if best else None


def _finite_or_text(text: str) -> float | str:
    x = float(text)
    return x if math.isfinite(x) else text


# NaN, Infinity and 1e999 stay as their text: a number key then fails as a schema error, and whatever the
# reply carried can still be logged as strict JSON.
_DECODER = json.JSONDecoder(parse_constant=str, parse_float=_finite_or_text)


def _loads(s: str) -> dict[str, Any] | None:
    try:
        obj = _DECODER.decode(s)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


# ---- parameters: numbers, per-player lists, or distributions drawn once per session ----

DRAW_DECIMALS = 2  # drawn values are rounded so the number a prompt shows is exactly the one judged


def fmt_num(x: float | None) -> str:
    """Numbers in prompts and messages: no trailing zeros, no float noise."""
    if x is None:
        return "none"
    text = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def draw_param(name: str, spec: Any, n: int, rng: np.random.Generator, *, per_player: bool,
               positive_below: Sequence[float] | None = None) -> float | list[float]:
    """Resolve one parameter. ``{normal=[mean, sd]}`` / ``{uniform=[lo, hi]}`` are drawn here.

    With ``positive_below`` (per-player upper limits, ``math.inf`` for "positive"), draws of either
    distribution are redrawn until they fall in (0, limit] -- the auctions' rule that a private value is
    positive and not above the assets -- so a session never fails on an unlucky draw.
    """
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return [float(spec)] * n if per_player else float(spec)
    if isinstance(spec, list):
        if not per_player:
            raise ValueError(f"{name}: a list is only allowed for per-player parameters")
        if len(spec) != n:
            raise ValueError(f"{name}: list has {len(spec)} entries but the game has {n} players")
        return [float(x) for x in spec]
    if isinstance(spec, dict) and len(spec) == 1:
        (kind, args), = spec.items()
        count = n if per_player else 1
        if kind not in ("normal", "uniform"):  # pragma: no cover - excluded by the schema
            raise ValueError(f"{name}: unknown distribution {kind!r}")
        a, b = args
        out = []
        for i in range(count):
            limit = positive_below[i] if positive_below is not None else None
            for _ in range(10_000):
                x = round(float(rng.normal(a, b) if kind == "normal" else rng.uniform(a, b)), DRAW_DECIMALS)
                if limit is None or 0 < x <= limit:
                    break
            else:
                raise ValueError(f"{name}: {kind}{args} never fell in (0, {fmt_num(limit)}]")
            out.append(x)
        return out if per_player else out[0]
    raise ValueError(f"{name}: expected a number, a list or {{normal|uniform = [a, b]}}")


MAX_GAME_NUMBER = 1e12  # sums and means of a table must stay exact and finite in float64


def _all_finite(value: Any) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.isfinite(value) and abs(value) <= MAX_GAME_NUMBER
    if isinstance(value, list):
        return all(_all_finite(x) for x in value)
    if isinstance(value, dict):
        return all(_all_finite(x) for x in value.values())
    return True


def validate_param(value: Any, *, per_player: bool, positive: bool = False) -> Any:
    """Schema check used by the games' pydantic validators; messages say what was expected."""
    expected = ("a number" + (", a per-player list of numbers" if per_player else "")
                + ", { normal = [mean, sd] } or { uniform = [low, high] }")
    if isinstance(value, bool):
        raise ValueError(f"expected {expected}")
    if not _all_finite(value):  # TOML allows inf and nan; a prompt saying "inf" and NaN payoffs help nobody
        raise ValueError(f"numbers must be finite and at most {MAX_GAME_NUMBER:.0e} in size")
    if isinstance(value, (int, float)):
        if positive and value <= 0:
            raise ValueError(f"must be > 0, got {value}")
        return value
    if isinstance(value, list):
        if not per_player:
            raise ValueError(f"expected {expected}")
        if not value or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            raise ValueError("a per-player list must hold numbers")
        if positive and any(x <= 0 for x in value):
            raise ValueError("every entry must be > 0")
        return value
    if isinstance(value, dict) and len(value) == 1:
        (kind, args), = value.items()
        if kind not in ("normal", "uniform"):
            raise ValueError(f"unknown distribution {kind!r}; expected 'normal' or 'uniform'")
        if (not isinstance(args, list) or len(args) != 2
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in args)):
            raise ValueError(f"{kind} takes [a, b] (two numbers)")
        a, b = args
        if kind == "normal" and b < 0:
            raise ValueError("normal sd must be >= 0")
        if kind == "uniform" and b < a:
            raise ValueError("uniform needs low <= high")
        if positive and kind == "uniform" and a <= 0:
            raise ValueError("uniform low must be > 0")
        return value
    raise ValueError(f"expected {expected}")
