"""Trivial policies every game offers (``agent = "policy"``, ``policy = "constant"`` or ``"accept"``): replies
that read nothing of the game but the shape of the answer, so a benchmark can show its floor beside the
``random`` baseline (a score a trivial policy reaches measures no understanding).

- ``constant``: every number 50 (clipped to its bounds; an allocation gives 50 to every item, clipped to the
  total), every choice its first option, every target the first one offered, every text "ok";
- ``accept``: "accept" wherever a choice offers it, otherwise as ``constant``.

The same rule, read from a reply's JSON Schema, is what tests/policyservers.py plays on a loopback server,
so the baseline's row and a model that answers this way score the same.
"""

from __future__ import annotations

from typing import Any

from .fields import ActionField, ActionSpec

TRIVIAL_POLICIES = ("constant", "accept")
CONSTANT = 50


def _clip(x: float, low: float | None, high: float | None) -> float:
    if low is not None:
        x = max(x, low)
    if high is not None:
        x = min(x, high)
    return x


def _value(f: ActionField, kind: str) -> Any:
    if f.kind == "choice":
        return "accept" if kind == "accept" and "accept" in f.choices else f.choices[0]
    if f.kind == "number":
        x = _clip(CONSTANT, f.low, f.high)
        return int(round(x)) if f.integer else x
    if f.kind == "allocation":
        x = _clip(CONSTANT, 0, f.total)
        return {item: int(round(x)) if f.integer else x for item in f.items}
    if f.kind == "target":
        return f.targets[0] if f.targets else None
    return "ok"


def trivial_action(spec: ActionSpec, kind: str) -> dict[str, Any]:
    """The trivial policy ``kind``'s reply (every field, read or not: as a model answering a schema would)."""
    if kind not in TRIVIAL_POLICIES:
        raise ValueError(f"unknown trivial policy {kind!r} (one of {', '.join(TRIVIAL_POLICIES)})")
    return {f.name: _value(f, kind) for f in spec.fields}
