"""GAMA-Bench throughput: decisions per second of ten rational players over 20 rounds of Guess 2/3.

What a real GAMA-Bench run does is included: per-seat conversations that grow every round (request,
reply, report), prompt rendering, reply judging, the round log and score in every run record, the JSONL
logs with each decision's new messages, and the summary.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from figures import load_average, median, show  # noqa: E402

from econarena.analysis.metrics import write_summary  # noqa: E402
from econarena.hosts.config import parse_experiment  # noqa: E402
from econarena.hosts.host import Host, HostOptions  # noqa: E402


def experiment(sessions: int) -> dict:
    return {
        "experiment": {"name": "bench-gama", "game": "guessing_game", "environment": "melee", "sessions": sessions,
                       "runs": 1, "seed": 1},
        "game": {"rounds": 20},
        "players": [{"agent": "rational", "count": 10}],
    }


def _summary(host: Host, out: Path) -> dict:
    """As ``econarena run`` writes it: from the records counted while the run wrote them (older releases,
    timed with ``PYTHONPATH``, read the logs back)."""
    tally = getattr(host.dir, "tally", None)
    return write_summary(out, tally) if tally is not None else write_summary(out)


def measure(sessions: int, concurrency: int) -> tuple[int, float, int]:
    exp = parse_experiment(experiment(sessions), "<bench>")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        start = time.perf_counter()
        host = Host(exp, out, HostOptions(concurrency=concurrency, quiet=True))
        result = asyncio.run(host.run())
        summary = _summary(host, out)
        elapsed = time.perf_counter() - start
        size = sum(f.stat().st_size for f in out.iterdir())
    assert result.status == "complete"
    assert summary["labels"]["rational"]["score"] == 100.0  # everyone plays the equilibrium 0
    return result.decisions, elapsed, size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    measure(2, args.concurrency)  # warm-up: imports, template cache
    runs = [measure(args.sessions, args.concurrency) for _ in range(args.repeat)]
    n, _, size = runs[0]
    print(f"(in-process Host, median of {args.repeat}; {load_average()})")
    show("host_gama", median([d / s for d, s, _ in runs]), "decisions/s",
         f"Host: {n} rational decisions, 10 players x 20 rounds of Guess 2/3 x {args.sessions} runs, logs + "
         f"summary ({size / 1e6:.1f} MB written)")


if __name__ == "__main__":
    main()
