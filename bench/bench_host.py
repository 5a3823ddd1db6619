"""Host throughput: decisions per second of a 5-player second-price auction with only rational agents.

Everything a real run does is included: prompt rendering, reply parsing and validation, JSONL logs with
the full messages, and the summary. Goal: >= 2,000 decisions/s on the 2-core reference machine.
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
        "experiment": {"name": "bench-host", "game": "second_price_auction", "environment": "self",
                       "players_per_game": 5, "sessions": sessions, "runs": 1, "seed": 1},
        "game": {"private_value": {"normal": [50, 10]}, "assets": 100},
        "players": [{"agent": "rational"}],
    }


def _summary(host: Host, out: Path) -> dict:
    """As ``econarena run`` writes it: from the records counted while the run wrote them (older releases,
    timed with ``PYTHONPATH``, read the logs back)."""
    tally = getattr(host.dir, "tally", None)
    return write_summary(out, tally) if tally is not None else write_summary(out)


def measure(sessions: int, concurrency: int) -> tuple[int, float]:
    exp = parse_experiment(experiment(sessions), "<bench>")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        start = time.perf_counter()
        host = Host(exp, out, HostOptions(concurrency=concurrency, quiet=True))
        result = asyncio.run(host.run())
        _summary(host, out)
        elapsed = time.perf_counter() - start
    assert result.status == "complete"
    return result.decisions, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    measure(50, args.concurrency)  # warm-up: imports, template cache
    runs = [measure(args.sessions, args.concurrency) for _ in range(args.repeat)]
    n = runs[0][0]
    rate = median([d / s for d, s in runs])
    print(f"(in-process Host, median of {args.repeat}; {load_average()})")
    show("host_spa", rate, "decisions/s", f"Host: {n} rational decisions, 5-player second-price, logs + summary")


if __name__ == "__main__":
    main()
