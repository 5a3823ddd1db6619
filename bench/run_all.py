"""`make bench`: run every benchmark in turn and print its figures, each beside the previous one.

``--record`` replaces ``bench/previous.json`` with the figures of this run (after a performance change
has been measured and committed), so the next ``make bench`` compares against them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from figures import PREVIOUS, RESULTS_ENV, load_average  # noqa: E402

BENCHES = ["bench_e2e.py", "bench_host.py", "bench_gama.py", "bench_report.py", "bench_analysis.py",
           "bench_first_report.py --sessions 30 --repeats 3",
           "bench_concurrency.py", "bench_concurrency.py --via sdk", "bench_llm_cost.py", "bench_startup.py",
           "bench_steering.py", "bench_hf.py", "bench_ray.py", "bench_quick_tier.py", "bench_reasoning.py"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--record", action="store_true", help="write this run's figures to bench/previous.json")
    ap.add_argument("--only", nargs="+", metavar="SCRIPT", help="run only these scripts (e.g. bench_e2e.py)")
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        results.touch()
        env = {**os.environ, RESULTS_ENV: str(results)}
        for line in args.only or BENCHES:
            name, *options = line.split()
            path = HERE / name
            print(f"== {line}", flush=True)
            if not path.exists():
                print("   (missing)")
                failed += 1
                continue
            failed += subprocess.call([sys.executable, str(path), *options], env=env) != 0
        figures = {}
        for line in results.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            figures[rec.pop("name")] = rec
    if args.record and figures:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                                text=True).stdout.strip() or "?"
        try:
            old = json.loads(PREVIOUS.read_text(encoding="utf-8"))["figures"]
        except (OSError, ValueError, KeyError):
            old = {}
        stamp = time.strftime("%Y-%m-%d")
        for rec in figures.values():
            rec.update(commit=commit, date=stamp, load=load_average())
        merged = {**old, **figures}  # figures of scripts not run this time are kept
        PREVIOUS.write_text(json.dumps({"about": "figures of the last recorded `make bench` (bench/run_all.py "
                                        "--record); each script prints its figures beside these",
                                        "figures": merged}, indent=1) + "\n", encoding="utf-8")
        print(f"recorded {len(figures)} figures in {PREVIOUS}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
