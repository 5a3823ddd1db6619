"""The run-directory checks on the hot path: the per-decision cost of reading a run directory.

What a report, an analysis and a summary pay per decision line: opening the logs as regular files, the record
checks (bounded numbers, the one name rule for labels and models), the scan that feeds the tables. A run of
baselines is played once and its lines repeated (new session numbers) to ``--decisions`` lines; each reader
is timed ``--repeat`` times and the best time kept (the machine is shared).

Run it with two copies of the package to compare (each prints ns per decision):
    .venv/bin/python bench/bench_edges.py               # this checkout
    /path/to/main/.venv/bin/python bench/bench_edges.py # main, before the change
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import orjson


def play(out: Path, decisions: int) -> int:
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    doc = {"experiment": {"name": "edges", "game": "beauty_contest", "sessions": 4, "runs": 1, "seed": 1},
           "game": {}, "players": [{"agent": "rational"}, {"agent": "random", "count": 4}]}
    asyncio.run(Host(parse_experiment(doc, "b.toml"), out, HostOptions(concurrency=2, quiet=True)).run())
    runs = [orjson.loads(x) for x in (out / "runs.jsonl").read_bytes().splitlines()]
    decs = [orjson.loads(x) for x in (out / "decisions.jsonl").read_bytes().splitlines()]
    copies = max(1, decisions // len(decs))
    with (out / "runs.jsonl").open("wb") as rf, (out / "decisions.jsonl").open("wb") as df:
        for k in range(copies):
            for r in runs:
                rf.write(orjson.dumps({**r, "session": r["session"] + 4 * k}) + b"\n")
            for d in decs:
                df.write(orjson.dumps({**d, "session": d["session"] + 4 * k}) + b"\n")
    return copies * len(decs)


def best(fn, repeat: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        t = time.process_time()  # CPU time: the machine is shared, wall time measures the neighbours
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decisions", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from econarena.analysis.metrics import summarize
    from econarena.analysis.scan import Base, scan
    from econarena.formats.rundir import iter_records, loads_line, record_problem

    class Decisions(Base):
        wants_decisions = True

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "d"
        n = play(out, args.decisions)
        parsed = [loads_line(x) for x in (out / "decisions.jsonl").read_bytes().splitlines(True)]
        readers = {
            "record_problem (in memory)": lambda: sum(1 for r in parsed if record_problem(r, "decisions") is None),
            "iter_records(decisions)": lambda: sum(1 for _ in iter_records(out / "decisions.jsonl", "decisions")),
            "summary": lambda: summarize(out),
            "scan (report/analyze)": lambda: scan([out], [Decisions()]),
        }
        result = {name: 1e9 * best(fn, args.repeat) / n for name, fn in readers.items()}
    print(json.dumps({"decisions": n, "ns_per_decision": {k: round(v) for k, v in result.items()}}))


if __name__ == "__main__":
    main()
