"""Benchmark figures printed beside the previous measurement of the same figure.

``bench/previous.json`` holds, per figure name, the value measured before the last performance change
(with the commit and the machine's load at the time), so every ``make bench`` shows what moved. A run of
``bench/run_all.py --record`` replaces it with the figures just measured. The machine is shared and
small (2 cores): scripts repeat each timing and print the median, and say so.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
PREVIOUS = HERE / "previous.json"
RESULTS_ENV = "ECONARENA_BENCH_RESULTS"  # run_all.py collects every script's figures in this file


def previous() -> dict[str, Any]:
    try:
        return json.loads(PREVIOUS.read_text(encoding="utf-8"))["figures"]
    except (OSError, ValueError, KeyError):
        return {}


def load_average() -> str:
    try:
        return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not POSIX
        return "load average unknown"


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def show(name: str, value: float, unit: str, what: str, *, higher_is_better: bool = True,
         digits: int = 0) -> None:
    """One figure on one line, with the previous value and the change; collected for ``--record``."""
    fmt = f"{{:,.{digits}f}}"
    line = f"{what}: {fmt.format(value)} {unit}"
    before = previous().get(name)
    if isinstance(before, dict) and isinstance(before.get("value"), (int, float)) and before["value"]:
        ratio = value / before["value"]
        better = ratio >= 1 if higher_is_better else ratio <= 1
        line += (f"   [previous {fmt.format(before['value'])} ({before.get('commit', '?')}): "
                 f"x{ratio:.2f}, {'better' if better else 'worse'}]")
    print(line, flush=True)
    path = os.environ.get(RESULTS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"name": name, "value": value, "unit": unit, "what": what}) + "\n")
