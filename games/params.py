"""Game parameters: strict pydantic models, and numbers given as values, per-player lists or distributions.

Why a module of its own: every game's ``Params`` builds on these checks, and the Host's drawing of a
session's configuration must be exactly reproducible from the session's generator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np
from pydantic import BaseModel, ConfigDict


class GameParams(BaseModel):
    """Base for every game's parameter model: unknown keys are errors, and "0.5" is not a number."""

    # a string under a field (an attribute docstring) is its entry in the generated TOML reference (docs/)
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


# ---- parameters: numbers, per-player lists, or distributions drawn once per session ----

DRAW_DECIMALS = 2  # drawn values are rounded so the number a prompt shows is exactly the one judged


SHOWN_DECIMALS = 6  # what fmt_num shows of a number: parameters shown as they are have at most this many


def fmt_num(x: float | None) -> str:
    """Numbers in prompts and messages: no trailing zeros, no float noise."""
    if x is None:
        return "none"
    text = f"{x:.{SHOWN_DECIMALS}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


@overload
def draw_param(name: str, spec: Any, n: int, rng: np.random.Generator, *, per_player: Literal[False],
               positive_below: Sequence[float] | None = None) -> float: ...
@overload
def draw_param(name: str, spec: Any, n: int, rng: np.random.Generator, *, per_player: Literal[True],
               positive_below: Sequence[float] | None = None) -> list[float]: ...
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
    fixed = [value] if isinstance(value, (int, float)) else value if isinstance(value, list) else []
    for x in fixed:  # a value used as it is appears in prompts (fmt_num): it must be shown as it is paid
        if isinstance(x, float) and round(x, SHOWN_DECIMALS) != x:
            raise ValueError(f"{x!r} has more than {SHOWN_DECIMALS} decimals, which the prompts cannot show "
                             f"(they would say {fmt_num(x)}); round it to at most {SHOWN_DECIMALS} decimals")
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
