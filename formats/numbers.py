"""One reading of "a number or nothing" for values read from JSON records and files.

A JSON value counts as a number when it is an int or a float (not a bool, which Python counts as an int)
that a float holds finitely: NaN, the infinities and an int too large for a float are no numbers (the last
raised OverflowError in ``math.isfinite``).
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
