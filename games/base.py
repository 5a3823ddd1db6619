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


@dataclass(frozen=True)
class ActionField:
    """One key of the JSON reply that carries the action."""

    name: str
    kind: Literal["number", "choice"]
    description: str
    low: float | None = None  # rule bounds (inclusive); breaking them is a rule violation
    high: float | None = None
    choices: tuple[str, ...] = ()

    def type_name(self) -> str:
        return "float" if self.kind == "number" else "str"

    def format_hint(self) -> str:
        if self.kind == "choice":
            return " or ".join(f'"{c}"' for c in self.choices)
        return "a number"


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


class Game(abc.ABC):
    """Rules of one game. Subclasses are stateless; all state lives in the frozen state objects."""

    name: ClassVar[str]
    version: ClassVar[str]
    description: ClassVar[str]
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

    @abc.abstractmethod
    def check(self, state: Any, player: int, action: dict[str, Any]) -> str | None:
        """A rule violation's description, or None; runs after parsing and type checks."""

    @abc.abstractmethod
    def apply(self, state: Any, actions: Mapping[int, dict[str, Any] | None]) -> Any:
        """Advance by one move. ``None`` marks a seat whose reply broke a rule; returns a new state."""

    def is_terminal(self, state: Any) -> bool:
        return not self.to_move(state)

    @abc.abstractmethod
    def outcome(self, state: Any) -> Outcome: ...

    @abc.abstractmethod
    def equilibrium(self, setup: Setup) -> Outcome:
        """Nash-equilibrium actions and payoffs for exactly this draw."""

    @abc.abstractmethod
    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        """Distance from equilibrium for one seat (see the module docstrings for the formula)."""

    @abc.abstractmethod
    def strategy(self, state: Any, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        """Reference actions for baseline agents: ``rational``, ``random``, ``level_k`` (with ``k``)."""

    # ---- judging replies: generic, driven by the action spec ----

    def judge(self, state: Any, player: int, text: str) -> Judgement:
        spec = self.action_spec(state, player)
        obj = extract_json(text)
        if obj is None:
            return Judgement(None, PARSE_ERROR, "no JSON object found in the reply")
        norm = {_norm_key(k): (k, v) for k, v in obj.items()}
        action: dict[str, Any] = {}
        for f in spec.fields:
            hit = norm.get(_norm_key(f.name))
            if hit is None:
                return Judgement(None, PARSE_ERROR, f"JSON has no key {f.name!r}", _extras(obj, spec))
            value = hit[1]
            if f.kind == "number":
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    return Judgement(None, SCHEMA_ERROR,
                                     f"{f.name!r} must be a number, got {_short(value)}",
                                     _extras(obj, spec))
                try:
                    number = float(value)  # an int too large for a float overflows
                except OverflowError:
                    number = math.inf
                if not math.isfinite(number):
                    return Judgement(None, SCHEMA_ERROR, f"{f.name!r} must be finite", _extras(obj, spec))
                action[f.name] = number
            else:
                if not isinstance(value, str):
                    return Judgement(None, SCHEMA_ERROR,
                                     f"{f.name!r} must be one of {f.format_hint()}, got "
                                     f"{_short(value)}", _extras(obj, spec))
                choice = value.strip().lower()
                if choice not in f.choices:
                    return Judgement(None, SCHEMA_ERROR,
                                     f"{f.name!r} must be one of {f.format_hint()}, got {value[:80]!r}",
                                     _extras(obj, spec))
                action[f.name] = choice
        for f in spec.fields:
            if f.kind == "number":
                v = action[f.name]
                if (f.low is not None and v < f.low) or (f.high is not None and v > f.high):
                    return Judgement(None, RULE_VIOLATION,
                                     f"{f.name} {fmt_num(v)} is outside [{fmt_num(f.low)}, {fmt_num(f.high)}]",
                                     _extras(obj, spec) | {"attempted": action})
        problem = self.check(state, player, action)
        if problem:
            return Judgement(None, RULE_VIOLATION, problem, _extras(obj, spec) | {"attempted": action})
        return Judgement(action, None, None, _extras(obj, spec))


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
