"""JSON Schemas for replies, derived from a game's declared action fields (pure, no I/O).

Why: players with ``structured = "format"`` or ``"strict"`` get their reply constrained by a schema (an
API's structured-output mode, or constrained decoding for a local model). The schema must say exactly
what the game will judge, so it is built from the :class:`ActionSpec`, never written by hand.

Two modes, kept apart because the rule-breaking metric must stay measurable:

- ``format``: keys, types and choices, and the *length* of numbers (an integer part of at most
  :data:`NUMBER_DIGITS` digits, or two more than the rule bound needs), never the rule bounds themselves,
  so a bid above one's assets or a number outside the range can still be given and is still judged.
  Without a length bound small models run a number on to the token limit (``1000000000...``).
- ``strict``: also the rule bounds (``minimum``/``maximum``), so such rule breaks become impossible.

Every schema is an object with all keys required and no others, in the order the prompt lists them.
With ``reasoning=True`` (chain-of-thought prompts) a ``reasoning`` string comes first, so the model can
think before it commits to the answer keys; its length is bounded (``reasoning_chars``) so a rambling
model still closes the object before its token limit.

Each field kind (number, choice, text, allocation, target) is one function in :data:`KINDS`: it maps an
:class:`ActionField` and the mode to the field's schema.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from .base import ActionField, ActionSpec

Mode = Literal["format", "strict"]
MODES: tuple[str, ...] = ("format", "strict")
NUMBER_DIGITS = 6  # format mode: numbers up to 999999 (or 100x the rule bound, whichever is larger)
REASONING_KEY = "reasoning"
DEFAULT_REASONING_CHARS = 600


def number_limit(field: ActionField) -> float:
    """The largest magnitude ``format`` allows: all-nines, at least 100x any rule bound (a length bound)."""
    bound = max((abs(x) for x in (field.low, field.high) if x is not None), default=0.0)
    digits = NUMBER_DIGITS
    if bound >= 1:
        digits = max(digits, int(math.floor(math.log10(bound))) + 1 + 2)
    return float(10 ** digits - 1)


def _number(field: ActionField, mode: Mode) -> dict[str, Any]:
    limit = number_limit(field)
    out: dict[str, Any] = {"type": "integer" if field.integer else "number", "description": field.description,
                           "minimum": -limit, "maximum": limit}
    if mode == "strict":
        if field.low is not None:
            out["minimum"] = field.low
        if field.high is not None:
            out["maximum"] = field.high
    return out


def _choice(field: ActionField, mode: Mode) -> dict[str, Any]:
    return {"type": "string", "description": field.description, "enum": list(field.choices)}


TEXT_FORMAT_CHARS = 2000  # format mode: free text is bounded only so a rambling model closes the object


def _text(field: ActionField, mode: Mode) -> dict[str, Any]:
    """``strict`` enforces the game's length rule; ``format`` only a generous bound (twice the rule), so
    an over-long message stays possible and is judged as the rule break it is."""
    rule = field.max_length
    limit = rule if mode == "strict" and rule else (2 * rule if rule else TEXT_FORMAT_CHARS)
    return {"type": "string", "description": field.description, "maxLength": int(limit)}


def _allocation(field: ActionField, mode: Mode) -> dict[str, Any]:
    """An object with exactly the declared items. The sum rule cannot be said in JSON Schema, so even
    ``strict`` leaves a wrong total possible (it is judged as a rule violation)."""
    share = _number(ActionField(field.name, "number", "", 0.0 if mode == "strict" else None,
                                field.total if mode == "strict" else None, integer=field.integer), mode)
    share.pop("description")
    props = {item: dict(share) for item in field.items}
    return {"type": "object", "description": field.description, "properties": props,
            "required": list(field.items), "additionalProperties": False}


def _target(field: ActionField, mode: Mode) -> dict[str, Any]:
    """``strict``: exactly the players that may be named; ``format``: any whole number (or null)."""
    if mode == "strict":
        return {"description": field.description,
                "enum": [*field.targets, *([None] if field.allow_none else [])]}
    base = {"type": "integer", "minimum": -999, "maximum": 999}
    if field.allow_none:
        return {"description": field.description, "anyOf": [base, {"type": "null"}]}
    return {**base, "description": field.description}


KINDS: dict[str, Callable[[ActionField, Mode], dict[str, Any]]] = {
    "number": _number,
    "choice": _choice,
    "text": _text,
    "allocation": _allocation,
    "target": _target,
}


def json_schema(spec: ActionSpec, mode: Mode, reasoning: bool = False,
                reasoning_chars: int = DEFAULT_REASONING_CHARS) -> dict[str, Any]:
    """The reply schema for ``spec``: an object with every action key required and nothing else."""
    if mode not in MODES:
        raise ValueError(f"structured mode {mode!r}: expected one of {', '.join(MODES)}")
    props: dict[str, Any] = {}
    if reasoning:
        props[REASONING_KEY] = {"type": "string", "maxLength": int(reasoning_chars),
                                "description": "your step-by-step thinking, before the answer"}
    for f in spec.fields:
        convert = KINDS.get(f.kind)
        if convert is None:
            raise ValueError(f"action field {f.name!r}: no JSON Schema for kind {f.kind!r} "
                             f"(known: {', '.join(KINDS)})")
        if f.name in props:
            raise ValueError(f"action field {f.name!r} appears twice (or clashes with {REASONING_KEY!r})")
        props[f.name] = convert(f, mode)
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def reasoning_chars(max_tokens: int) -> int:
    """A reasoning length that leaves room for the answer keys within ``max_tokens`` (~2.5 chars/token)."""
    return max(40, int((max_tokens - 40) * 2.5))
