"""One reading of "a number or nothing" for values read from JSON records and files.

A JSON value counts as a number when it is an int or a float (not a bool, which Python counts as an int)
that a float holds finitely: NaN, the infinities and an int too large for a float are no numbers (the last
raised OverflowError in ``math.isfinite``). :func:`plain` is the other way: a computed mean as a CSV writes
it, without float noise.
"""

from __future__ import annotations

import math
from typing import Any


def finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite number, else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    try:
        f = float(x)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


CSV_DIGITS = 12  # significant digits a CSV keeps of a computed number (the families' CSVs write ``.12g`` too)


def plain(x: float, digits: int = CSV_DIGITS) -> float:
    """``x`` rounded to ``digits`` significant digits, so that its shortest round-trip text (``repr``, what
    pandas writes) carries no float noise: a mean of 0.4435 written as 0.44349999999999995, a ratio of 0.75 as
    0.7499999999999999. What is left is the number as far as its inputs know it; NaN and the infinities stay."""
    if not math.isfinite(x) or x == 0.0:
        return x
    return float(f"{x:.{digits}g}")
