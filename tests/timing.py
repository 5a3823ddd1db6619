"""Time budgets for tests, scaled to how fast the machine running them is right now.

A budget such as "the report builds in 8 s of CPU" was set on the development machine (2 cores). CI and
later sessions run the same suite on machines of the same kind that are at times three times slower (a
slower host, or other jobs beside ours); a fixed number then fails a correct build. ``budget(s)``
multiplies ``s`` by the machine's measured slowness (the median of five runs of a fixed pure-Python
workload timed now, against its time where the budgets were set, so a busy machine counts as a slow one),
never by less than 1: the budgets stay as strict as they were where they were set, and a test still fails
when the code itself turns slow (a ten-fold regression is not hidden by a 3x factor).
``ECONARENA_TEST_SLOWNESS`` overrides the measurement (a number, e.g. 3 under a profiler).
"""

from __future__ import annotations

import json
import os
import statistics
import time

# The median of ``_workload`` where the budgets were set. Machines of one kind differ by ~3x from day to day:
# on 2026-11-26 it took 0.057 s on one that ran bench/bench_e2e.py at 6,290 decisions/s, where the budgets
# were set on one that ran the same commit (d4159cc) at 20,818: 0.057 / 3.3 = 0.017.
REFERENCE_S = 0.018
MAX_SLOWNESS = 20.0


def _workload() -> int:
    """Interpreter-bound work of the kind the budgets cover: dicts, strings, JSON, sorting."""
    total = 0
    for i in range(3_000):
        row = {"run": i, "seat": i % 10, "answer": str(i * 7 % 101), "ok": i % 3 != 0}
        text = json.dumps(row, sort_keys=True)
        total += len(json.loads(text)) + len(sorted(text))
    return total


_last: tuple[float, float] = (-1e9, 1.0)  # (when, slowness): one measurement serves the next few seconds
FRESH_S = 20.0


def slowness(repeats: int = 5) -> float:
    """How many times slower than the development machine this one is at the moment (at least 1)."""
    global _last
    forced = os.environ.get("ECONARENA_TEST_SLOWNESS")
    if forced:
        return max(1.0, float(forced))
    if time.monotonic() - _last[0] < FRESH_S:
        return _last[1]
    took = []
    for _ in range(repeats):
        start = time.perf_counter()
        _workload()
        took.append(time.perf_counter() - start)
    _last = (time.monotonic(), min(MAX_SLOWNESS, max(1.0, statistics.median(took) / REFERENCE_S)))
    return _last[1]


def budget(seconds: float) -> float:
    """``seconds`` stretched by the machine's current slowness."""
    return seconds * slowness()
