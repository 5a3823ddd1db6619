"""Host throughput: decisions per second of a 5-player second-price auction with only rational agents.

Everything a real run does is included: prompt rendering, reply parsing and validation, JSONL logs with
the full messages, and the summary. Goal: >= 2,000 decisions/s on the 2-core reference machine.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from econarena.analysis.metrics import write_summary
from econarena.hosts.config import parse_experiment
from econarena.hosts.host import Host, HostOptions


def experiment(sessions: int) -> dict:
    return {
        "experiment": {"name": "bench-host", "game": "second_price_auction", "environment": "self",
                       "players_per_game": 5, "sessions": sessions, "runs": 1, "seed": 1},
        "game": {"private_value": {"normal": [50, 10]}, "assets": 100},
        "players": [{"agent": "rational"}],
    }


def measure(sessions: int, concurrency: int) -> tuple[int, float]:
    exp = parse_experiment(experiment(sessions), "<bench>")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        start = time.perf_counter()
        result = asyncio.run(Host(exp, out, HostOptions(concurrency=concurrency, quiet=True)).run())
        write_summary(out)
        elapsed = time.perf_counter() - start
    assert result.status == "complete"
    return result.decisions, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    measure(50, args.concurrency)  # warm-up: imports, template cache
    n, secs = measure(args.sessions, args.concurrency)
    print(f"host: {n} rational decisions (5-player second-price, logs + summary) in {secs:.2f}s "
          f"= {n / secs:,.0f} decisions/s (goal >= 2,000)")


if __name__ == "__main__":
    main()
