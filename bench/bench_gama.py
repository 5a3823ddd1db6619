"""GAMA-Bench throughput: decisions per second of ten rational players over 20 rounds of Guess 2/3.

What a real GAMA-Bench run does is included: per-seat conversations that grow every round (request,
reply, report), prompt rendering, reply judging, the round log and score in every run record, the JSONL
logs with each decision's new messages, and the summary.
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
        "experiment": {"name": "bench-gama", "game": "guessing_game", "environment": "melee", "sessions": sessions,
                       "runs": 1, "seed": 1},
        "game": {"rounds": 20},
        "players": [{"agent": "rational", "count": 10}],
    }


def measure(sessions: int, concurrency: int) -> tuple[int, float, int]:
    exp = parse_experiment(experiment(sessions), "<bench>")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        start = time.perf_counter()
        result = asyncio.run(Host(exp, out, HostOptions(concurrency=concurrency, quiet=True)).run())
        summary = write_summary(out)
        elapsed = time.perf_counter() - start
        size = sum(f.stat().st_size for f in out.iterdir())
    assert result.status == "complete"
    assert summary["labels"]["rational"]["score"] == 100.0  # everyone plays the equilibrium 0
    return result.decisions, elapsed, size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    measure(2, args.concurrency)  # warm-up: imports, template cache
    n, secs, size = measure(args.sessions, args.concurrency)
    print(f"gama: {n} rational decisions (10 players x 20 rounds of Guess 2/3 x {args.sessions} runs, logs + "
          f"summary, {size / 1e6:.1f} MB written) in {secs:.2f}s = {n / secs:,.0f} decisions/s")


if __name__ == "__main__":
    main()
