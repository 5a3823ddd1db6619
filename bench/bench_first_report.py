"""The first report right after `econarena run`, side by side with other trees (the columnar copy written
as the run plays: analysis/follow.py). For each tree, alternating: `run` of GLEE bargaining's grid with
baseline players (``--sessions`` games per configuration: 150 gives 57,600 games), then at once `report`
of it, each timed as a process of its own (wall, CPU and peak memory from ``wait4``; the follower is a
process of its own too, so its CPU is in neither: it ran beside the run). Each tree keeps its copies in its
own folder, empty before its run, so every report is the first read after its run; every tree plays into
the same path (the report names the directory), so their outputs compare. ``--repeats N`` plays
the study N times per tree (the run's time is the median; the report follows the last run). Checks that
every tree's report holds the same numbers (the CSVs byte for byte, the parquet exports by content).

    .venv/bin/python bench/bench_first_report.py --sessions 150 --against /tmp/pkgbase --against /tmp/pkg-old

``--against DIR``: DIR holds an ``econarena`` folder (a worktree linked as DIR/econarena), repeatable.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from bench_analysis import same_numbers, study_config  # noqa: E402
from figures import load_average, show  # noqa: E402

CLI = [sys.executable, "-m", "econarena.cli"]


def timed(args: list[str], tree: str | None, columns: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one command of ``tree`` (None: this one), for that process alone."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "ECONARENA_FOLLOW")}
    env["ECONARENA_COLUMNS"] = str(columns)
    if tree:
        env["PYTHONPATH"] = tree
    start = time.perf_counter()
    proc = subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        raise SystemExit(f"{' '.join(args)} failed ({status}):\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=150, help="games per configuration (150: 57,600 games)")
    ap.add_argument("--against", action="append", default=[], metavar="DIR", help="another tree, interleaved")
    ap.add_argument("--repeats", type=int, default=1, help="runs of the study per tree (the run's median)")
    ap.add_argument("--no-report", action="store_true", help="time the runs only")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-first-report-"))
    trees: list[str | None] = [None, *(str(Path(a).resolve()) for a in args.against)]
    names = ["this tree", *args.against]
    config = tmp / "study.toml"
    config.write_text(study_config(args.sessions), encoding="utf-8")
    print(f"{load_average()} at the start; {384 * args.sessions:,} games")
    runs: dict[int, list[tuple[float, float, float]]] = {i: [] for i in range(len(trees))}
    first = (0.0, 0.0, 0.0)
    try:
        for rep in range(args.repeats):
            for i, tree in enumerate(trees):
                # one path for every tree's run: the report names its directory, so the outputs compare
                columns, run_dir = tmp / f"columns-{i}", tmp / "run"
                shutil.rmtree(columns, ignore_errors=True)
                shutil.rmtree(run_dir, ignore_errors=True)
                runs[i].append(timed(["run", str(config), "--out", str(run_dir), "--quiet"], tree, columns))
                w, c, r = runs[i][-1]
                print(f"  {names[i]:24s} run #{rep + 1}: {w:6.1f} s wall, {c:6.1f} s CPU, {r:5.0f} MB")
                if rep == args.repeats - 1 and not args.no_report:
                    w, c, r = timed(["report", str(run_dir), "--out", str(tmp / f"out-{i}")], tree, columns)
                    if i == 0:
                        first = (w, c, r)
                    print(f"  {names[i]:24s} first report after it: {w:6.1f} s wall, {c:6.1f} s CPU, {r:5.0f} MB")
        for i in range(len(trees)):
            walls = [x[0] for x in runs[i]]
            print(f"{names[i]:24s} run: median {statistics.median(walls):.2f} s wall of {len(walls)} "
                  f"({', '.join(f'{w:.2f}' for w in walls)}), CPU median "
                  f"{statistics.median(x[1] for x in runs[i]):.2f} s")
        show(f"first_report_run_{384 * args.sessions}", statistics.median(x[1] for x in runs[0]), "s CPU",
             f"econarena run, GLEE bargaining grid, {384 * args.sessions:,} games (median)",
             higher_is_better=False, digits=2)
        if not args.no_report:
            show(f"first_report_{384 * args.sessions}", first[1], "s CPU",
                 "   the report right after it (from the copy written as it played)", higher_is_better=False,
                 digits=1)
            for i in range(1, len(trees)):
                print(f"numbers, this tree vs {names[i]}: {same_numbers(tmp / 'out-0', tmp / f'out-{i}')}")
        print(f"{load_average()} at the end")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
