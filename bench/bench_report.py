"""The report on the issue's scenario: GAMA-Bench's 104 leaderboard directories (13 models x 8 games x 5 runs,
synthetic files of the reference's format and size, see gamabench_corpus.py) plus one run of our own.

Prints the page's weight (report.html embeds every figure: nothing else is loaded) and the build time of
``econarena report`` (wall and CPU, best of --repeat), against the budget: <= 2 MB, <= 10 s.

``--against DIR`` builds the same report with another copy of the package too (DIR holds an ``econarena``
folder, e.g. made with ``git archive``), alternating build by build, so both see the same load.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gamabench_corpus import write_tree

CLI = [sys.executable, "-m", "econarena.cli"]
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


def _build(tmp: Path, tree: str | None) -> tuple[float, float, int]:
    """One ``econarena report`` of the corpus (with the package in ``tree`` when given): (wall s, CPU s, the
    page's bytes). Each tree builds into its own folder, so the page weighed is the one that tree wrote (a
    shared folder printed the weight of whichever tree built last)."""
    env = dict(os.environ)
    out = tmp / ("report" if tree is None else "report-against")
    if tree:
        env["PYTHONPATH"] = tree
    shutil.rmtree(out, ignore_errors=True)
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run([*CLI, "report", str(tmp / "ref"), str(tmp / "own"), "--out", str(out)],
                   check=True, capture_output=True, env=env)
    return time.perf_counter() - start, _cpu() - cpu, (out / "report.html").stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temporary folder)")
    ap.add_argument("--against", metavar="DIR", help="also build with the package in DIR/econarena, interleaved")
    args = ap.parse_args()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        if not (tmp / "ref" / "gamabench_scores.csv").exists():
            write_tree(tmp / "raw")
            subprocess.run([*CLI, "import", "gamabench", str(tmp / "raw"), "--out", str(tmp / "ref")], check=True,
                           capture_output=True)
            (tmp / "own.toml").write_text(OWN, encoding="utf-8")
            subprocess.run([*CLI, "run", str(tmp / "own.toml"), "--out", str(tmp / "own"), "--quiet"],
                           check=True, capture_output=True)
        dirs = sum(1 for d in (tmp / "ref").iterdir() if d.is_dir()) + 1
        trees: list[str | None] = [None] + ([str(Path(args.against).resolve())] if args.against else [])
        best: dict[str | None, tuple[float, float, int]] = {}
        for _ in range(args.repeat):
            for tree in trees:
                best[tree] = min(best.get(tree, (float("inf"), 0.0, 0)), _build(tmp, tree))
        wall_s, cpu_s, html = best[None]
        print(f"report: {dirs} run directories -> report.html {html / 1e6:.2f} MB (everything it loads; budget "
              f"2 MB), built in {wall_s:.1f} s wall, {cpu_s:.1f} s CPU (best of {args.repeat}; budget 10 s)")
        for tree in trees[1:]:
            print(f"   against {tree}: report.html {best[tree][2] / 1e6:.2f} MB, {best[tree][0]:.1f} s wall, "
                  f"{best[tree][1]:.1f} s CPU (x{best[tree][1] / cpu_s:.2f} this tree's CPU)")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
