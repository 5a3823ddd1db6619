"""The report on the issue's scenario: GAMA-Bench's 104 leaderboard directories (13 models x 8 games x 5 runs,
synthetic files of the reference's format and size, see gamabench_corpus.py) plus one run of our own.

Prints the page's weight (report.html embeds every figure: nothing else is loaded) and the build time of
``econarena report`` (wall and CPU, best of --repeat), against the budget: <= 2 MB, <= 10 s.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gamabench_corpus import write_tree

ECONARENA = str(Path(sys.executable).with_name("econarena"))
OWN = """
[experiment]
name = "quickstart-baselines"
game = "beauty_contest"
sessions = 8
runs = 2
seed = 7
history = "actions"
[game]
upper_bound = 100
[[players]]
agent = "scripted"
label = "scripted-llm"
responses = ['{"answer": 30}', '{"answer": 12}', 'no idea']
[[players]]
agent = "rational"
[[players]]
agent = "level_k"
label = "level-1"
k = 1
[[players]]
agent = "level_k"
label = "level-2"
k = 2
[[players]]
agent = "random"
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder)")
    args = ap.parse_args()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        if not (tmp / "ref" / "gamabench_scores.csv").exists():
            write_tree(tmp / "raw")
            subprocess.run([ECONARENA, "import", "gamabench", str(tmp / "raw"), "--out", str(tmp / "ref")], check=True,
                           capture_output=True)
            (tmp / "own.toml").write_text(OWN, encoding="utf-8")
            subprocess.run([ECONARENA, "run", str(tmp / "own.toml"), "--out", str(tmp / "own"), "--quiet"],
                           check=True, capture_output=True)
        dirs = sum(1 for d in (tmp / "ref").iterdir() if d.is_dir()) + 1
        best = None
        for _ in range(args.repeat):
            shutil.rmtree(tmp / "report", ignore_errors=True)
            cpu, start = _cpu(), time.perf_counter()
            subprocess.run([ECONARENA, "report", str(tmp / "ref"), str(tmp / "own"), "--out", str(tmp / "report")],
                           check=True, capture_output=True)
            took = (time.perf_counter() - start, _cpu() - cpu)
            best = took if best is None or took[0] < best[0] else best
        assert best is not None
        html = (tmp / "report" / "report.html").stat().st_size
        print(f"report: {dirs} run directories -> report.html {html / 1e6:.2f} MB (everything it loads; budget "
              f"2 MB), built in {best[0]:.1f} s wall, {best[1]:.1f} s CPU (best of {args.repeat}; budget 10 s)")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
