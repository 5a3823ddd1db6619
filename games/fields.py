"""Reply fields and judging: what a player must answer, and the three kinds of failure.

Replies are judged in three steps, kept apart because the rule-breaking metric needs them:
``parse_error`` (no JSON object, or a key is missing), ``schema_error`` (a value of the wrong type),
``rule_violation`` (well-formed but against the rules, e.g. a bid above one's assets). Judging is linear in
the reply's length and bounds what a reply can make us store.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .params import MAX_GAME_NUMBER, fmt_num
from .text import PlayerText, text_problem

# Final: each name keeps its literal type, so a Judgement built from one is checked against Violation
PARSE_ERROR: Final = "parse_error"
SCHEMA_ERROR: Final = "schema_error"
RULE_VIOLATION: Final = "rule_violation"
# not a judgement of the model: its reply was cut at the token limit (max_tokens) before it ended, and could not
# be read; the Host records it so, and the summaries count it apart from the model's own errors
TRUNCATED: Final = "truncated"
Violation = Literal["parse_error", "schema_error", "rule_violation", "truncated"]


FieldKind = Literal["number", "choice", "text", "allocation", "target"]


@dataclass(frozen=True)
class ActionField:
    """One key of the JSON reply. The kind decides how it is judged (see ``judge_value``).

    - ``number``: ``low``/``high`` are rule bounds (inclusive, breaking them is a rule violation);
      ``integer`` demands a whole number (a schema error otherwise); ``step`` a grid from ``low``.
    - ``choice``: one of ``choices``, matched whatever the reply's case (``"defect"`` is ``"Defect"``); the
      action holds the spelling declared, which the prompt shows and the log records. Two choices that
      differ only by case could not be told apart, so declaring them is refused.
    - ``text``: a string of at most ``max_length`` characters; ``secret`` marks a private note that the
      Host logs but never shows to other players.
    - ``allocation``: an object over ``items`` (player ids or goods) of non-negative numbers summing to
      ``total``; ``integer`` as for numbers.
    - ``target``: the id of a player in ``targets``; ``allow_none`` lets ``null`` mean "nobody".

    ``read_when = (other, values)``: the field is read only when the reply's ``other`` field (declared
    before it) is one of ``values`` (a trade read only with ``decision = "propose"``). Otherwise it need not
    be there and is not judged: a value that is there stays in the action only when it would pass.
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
    read_when: tuple[str, tuple[str, ...]] | None = None

    def __post_init__(self) -> None:
        if self.kind == "choice":
            seen: dict[str, str] = {}
            for c in self.choices:
                if not isinstance(c, str):
                    raise ValueError(f"choice field {self.name!r}: choices must be strings, got {c!r}")
                key = c.strip().casefold()
                if key in seen:
                    raise ValueError(f"choice field {self.name!r}: the choices {seen[key]!r} and {c!r} differ "
                                     "only by case or spaces, and a reply is matched without either; rename one")
                seen[key] = c

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
            return f"{{{keys}}}" + (f" summing to {fmt_num(self.total)}" if self.total is not None else "")
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


def judge_reply(spec: ActionSpec, text: str, check: Any = None) -> Judgement:
    """Parse, type-check and rule-check one raw reply against the declared fields, in that order.

    A reply that is not text (games/text.py: a lone surrogate, written raw or as a ``\\ud800`` escape that
    JSON decodes) is a parse error: accepted, it would reach the next prompt and every log and report."""
    if not text.isascii() and (problem := text_problem(text)):
        return Judgement(None, PARSE_ERROR, f"the reply {problem}")
    obj = extract_json(text)
    if obj is None:
        return Judgement(None, PARSE_ERROR, "no JSON object found in the reply")
    if ("\\ud" in text or "\\uD" in text) and (problem := _not_text(obj, 0)):  # only an escape makes one
        return Judgement(None, PARSE_ERROR, f"the reply's JSON {problem}")
    return judge_object(spec, obj, check)


def _not_text(value: Any, depth: int) -> str | None:
    """Why a string of a parsed reply (a key or a value, at any depth) is not text, or None."""
    if isinstance(value, str):
        problem = text_problem(value)
        return f"has a string that {problem}" if problem else None
    if depth > EXTRAS_MAX_DEPTH:
        return None  # deeper parts are never read, only kept in the raw response
    if isinstance(value, dict):
        for k, v in value.items():
            problem = _not_text(k, depth + 1) or _not_text(v, depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for v in value:
            problem = _not_text(v, depth + 1)
            if problem:
                return problem
    return None


def is_plain_json(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is what parsing its own JSON text gives back: dicts with string keys, lists,
    strings, bools, None, ints and finite floats (not subclasses, not tuples, not too deep). Such an
    object can be judged as it is (:func:`judge_object`) with the judgement its text would get."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return True
    if t is float:
        return math.isfinite(value)
    if depth >= EXTRAS_MAX_DEPTH:
        return False
    if t is dict:
        for k, v in value.items():  # loops, not all(genexpr): a baseline's action is checked per decision
            if type(k) is not str:
                return False
            tv = type(v)
            if not (tv is str or tv is int or tv is bool or v is None or (tv is float and math.isfinite(v))
                    or is_plain_json(v, depth + 1)):
                return False
        return True
    if t is list:
        return all(is_plain_json(v, depth + 1) for v in value)
    return False


def judge_object(spec: ActionSpec, obj: dict[str, Any], check: Any = None) -> Judgement:
    """Type-check and rule-check a reply already parsed into a JSON object (``judge_reply`` after parsing).

    Keys are read without case, spaces, '_' or '-' (``Decision`` is ``decision``): two keys that read as
    the same field (``"decision"`` and ``"Decision"``, or one key written twice in the JSON text) make the
    reply ambiguous, a parse error, never a silent choice of one of them."""
    keyed = [(_NORMAL.get(k) or _norm_key(k), k, v) for k, v in obj.items()]
    norm = {nk: (k, v) for nk, k, v in keyed}
    names = {_NORMAL.get(f.name) or _norm_key(f.name) for f in spec.fields}
    extras = bounded_extras({k: v for nk, k, v in keyed if nk not in names})
    twice = _ambiguous(obj, keyed, norm, names) if len(norm) < len(keyed) or hasattr(obj, "repeated") else {}
    action: dict[str, Any] = {}
    read = []
    for f in spec.fields:
        nk = _NORMAL.get(f.name) or _norm_key(f.name)
        hit = norm.get(nk)
        unclear = twice.get(nk) or (_inner_ambiguous(hit[1]) if f.kind == "allocation" and hit is not None
                                    and isinstance(hit[1], dict) else None)
        if f.read_when is not None and action.get(f.read_when[0]) not in f.read_when[1]:
            if hit is not None and unclear is None:  # not read now: kept only when it would pass, never a
                value, problem = _typed(f, hit[1])  # reason to refuse
                if problem is None and _rule_problem(f, value) is None:
                    action[f.name] = value
            continue
        if unclear is not None:
            return Judgement(None, PARSE_ERROR, unclear, extras)
        if hit is None:
            return Judgement(None, PARSE_ERROR, f"JSON has no key {f.name!r}", extras)
        value, problem = _typed(f, hit[1])
        if problem is not None:
            return Judgement(None, SCHEMA_ERROR, problem, extras)
        action[f.name] = value
        read.append(f)
    for f in read:
        problem = _rule_problem(f, action[f.name])
        if problem is not None:
            return Judgement(None, RULE_VIOLATION, problem, extras | {"attempted": action})
    problem = check(action) if check is not None else None
    if problem:
        return Judgement(None, RULE_VIOLATION, problem, extras | {"attempted": action})
    return Judgement(action, None, None, extras)


def _ambiguous(obj: dict[str, Any], keyed: list[tuple[str, str, Any]], norm: dict[str, tuple[str, Any]],
               names: set[str]) -> dict[str, str]:
    """Per field (normal form) whose value the reply does not settle, why: two keys that read as that field,
    or one key the JSON text wrote twice (listed by the decoder, ``_Repeated``). A field that is read then
    makes the reply a parse error (``judge_object``); keys no field reads change nothing."""
    out: dict[str, str] = {}
    for k in getattr(obj, "repeated", ()):
        nk = _norm_key(k)
        if nk in names:
            out.setdefault(nk, f"the key {_short(k)} is written twice, so the reply is ambiguous; write each key once")
    seen: dict[str, str] = {}
    for nk, k, _ in keyed:
        if nk in names and nk in seen:
            out.setdefault(nk, f"the keys {_short(seen[nk])} and {_short(k)} read as the same key (case, spaces, '_', "
                               "'-' and Unicode's look-alike forms do not count), so the reply is ambiguous; write "
                               "each key once")
        seen.setdefault(nk, k)
    return out


def _inner_ambiguous(value: dict[str, Any]) -> str | None:
    """The same for the keys of an object inside a field (an allocation's goods or players)."""
    if repeated := getattr(value, "repeated", ()):
        return f"the key {_short(repeated[0])} is written twice in one object, so the reply is ambiguous"
    seen: dict[str, Any] = {}
    for k in value:
        nk = _norm_key(str(k))
        if nk in seen:
            return (f"the keys {_short(seen[nk])} and {_short(k)} read as the same key, so the reply is ambiguous; "
                    "write each key once")
        seen[nk] = k
    return None


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
        if isinstance(value, str):
            wanted = value.strip().casefold()
            for c in f.choices:  # the declared spelling is the action's, whatever the reply's case
                if c.strip().casefold() == wanted:
                    return c, None
        return None, f"{f.name!r} must be one of {f.format_hint()}, got {_show(value)}"
    if f.kind == "text":
        if not isinstance(value, str):
            return None, f"{f.name!r} must be a string, got {_show(value)}"
        return PlayerText(value), None  # a player's words: quoted wherever a prompt shows them
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
            shown = fmt_num(v) if abs(v) < MAX_GAME_NUMBER else f"{v:g}"  # 1e308 is not 309 digits long
            return f"{f.name} {shown} is outside [{fmt_num(f.low)}, {fmt_num(f.high)}]"
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


_KEY_SEPARATORS = re.compile(r"[\s_\-]+")


_NORMAL: dict[str, str] = {}  # key -> normal form, for the few distinct short keys replies use


def _norm_key(key: str) -> str:
    """Keys compare without case, spaces, '_' or '-' (``Popular-Answer`` is ``popular answer``), and as
    Unicode reads them: compatibility forms folded (the ligature in ``ﬁeld``, fullwidth ``ｄｅｃｉｓｉｏｎ``),
    full case folding, invisible format characters (a zero-width space, a soft hyphen, a direction mark)
    dropped; distinct letters stay distinct (the dotless ``ı``). A key a reader takes for ``decision`` is
    that key, so beside it the reply is ambiguous. The few distinct keys repeat across decisions, so the
    normal forms of short ones are kept (at most 4096)."""
    normal = _NORMAL.get(key)
    if normal is None:
        text = key if key.isascii() else "".join(
            c for c in unicodedata.normalize("NFKC", key) if unicodedata.category(c) != "Cf")
        normal = _KEY_SEPARATORS.sub(" ", text.strip().casefold())
        if len(key) <= 64 and len(_NORMAL) < 4096:
            _NORMAL[key] = normal
    return normal


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
    if not extras:  # the usual case: nothing to cut or measure
        return {}
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


_SPECIAL = re.compile(r'[{}"\\]')


def extract_json(text: str) -> dict[str, Any] | None:
    """The reply's JSON object: a fenced block if any (the last that parses), else the LAST balanced ``{...}``
    that parses, else (braces in the prose that never close) the object that ends last outside any
    balanced ``{...}`` that does not parse.

    The last one wins because chain-of-thought replies reason first and answer at the end.
    """
    if not text:
        return None
    for block in reversed(_fenced_blocks(text)):
        obj = _loads(block)
        if obj is not None:
            return obj
    candidates = []
    opened: list[int] = []  # positions of the "{" not yet closed
    spans: list[tuple[int, int]] = []  # every balanced {...}, at any depth: (start, end)
    in_str = False
    escaped = -1  # the position right after a backslash inside a string: that character is not special
    for m in _SPECIAL.finditer(text):  # only braces, quotes and backslashes: prose is skipped in C
        i, ch = m.start(), m.group()
        if in_str:
            if i == escaped:
                continue
            if ch == "\\":
                escaped = i + 1
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and opened:
            in_str = True
        elif ch == "{":
            opened.append(i)
        elif ch == "}" and opened:
            start = opened.pop()
            spans.append((start, i))
            if not opened:
                candidates.append(text[start:i + 1])
    for cand in reversed(candidates):
        obj = _loads(cand)
        if obj is not None:
            return obj
    # An unbalanced brace in the prose ("I pick { hmm ...") hides the answer from the scan above:
    # decode from every "{" instead and keep the object that ends last (the outermost one on nesting). An
    # object inside a balanced {...} that is no JSON is not the answer: it is part of one written wrong
    # (``{"bid": 90, "alt": {"bid": 3},}`` with its trailing comma is no reply of 3).
    best: tuple[int, dict[str, Any]] | None = None
    starts = [m.start() for m in re.finditer(r"\{", text)][-FALLBACK_ATTEMPTS:]
    inside = _Enclosing(spans)
    for start in starts:
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and (best is None or end > best[0]) and not inside(start, end - 1):
            best = (end, obj)
    return best[1] if best else None


class _Enclosing:
    """Whether a span ``[a, b]`` lies strictly inside one of the balanced ``{...}`` spans of a reply (they
    nest, never cross): a binary search over their starts with the furthest end before each."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        spans.sort()
        self.starts = [s for s, _ in spans]
        self.reach: list[int] = []
        far = -1
        for _, e in spans:
            far = max(far, e)
            self.reach.append(far)

    def __call__(self, a: int, b: int) -> bool:
        k = bisect.bisect_left(self.starts, a)  # the spans that start before a
        return k > 0 and self.reach[k - 1] > b


def _finite_or_text(text: str) -> float | str:
    x = float(text)
    return x if math.isfinite(x) else text


class _Repeated(dict[str, Any]):
    """A JSON object whose text wrote some key more than once (``repeated``: those keys); JSON keeps the
    last silently, the judge calls it ambiguous (``_ambiguous``)."""

    repeated: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    out = _Repeated(obj)
    out.repeated = tuple(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]  # add: None
    return out


# NaN, Infinity and 1e999 stay as their text: a number key then fails as a schema error, and whatever the
# reply carried can still be logged as strict JSON. A key written twice is remembered (``_pairs``).
_DECODER = json.JSONDecoder(parse_constant=str, parse_float=_finite_or_text, object_pairs_hook=_pairs)


def _loads(s: str) -> dict[str, Any] | None:
    try:
        obj = _DECODER.decode(s)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None
