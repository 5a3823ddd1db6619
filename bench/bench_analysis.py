"""Analysis at the papers' scale: GLEE bargaining's whole grid (384 configurations) with baseline
players, ``--sessions`` games each (150: 57,600 games, as the issue measured), then ``econarena analyze
glee`` and ``econarena report`` of it: wall time, CPU time and peak memory (of that process alone) of each.

``--against DIR`` runs the same commands with another copy of the package too (DIR holds an ``econarena``
folder: ``git archive --prefix=econarena/ main | tar -x -C DIR``), alternating command by command so both
see the same load, and checks that both wrote the same numbers (metrics.csv, the GLEE CSVs and the parquet
exports' content). ``--sizes 30 150`` also measures a smaller study, to see whether memory grows with the
number of games (the goal: the report's peak at 57,600 games at most 1.5x its peak at 11,520).

This tree's commands run twice: first with no columnar copy of the study (the first read,
which writes it: ``analysis/columnar.py``, under ``ECONARENA_COLUMNS`` in the benchmark's folder), then from
the copy (every later read); the ratios are given for both. The tree given by ``--against`` predates copies.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from figures import load_average, show  # noqa: E402

CLI = [sys.executable, "-m", "econarena.cli"]
CONFIG = HERE.parent / "configs" / "glee" / "bargaining.toml"


def study_config(sessions: int) -> str:
    """configs/glee/bargaining.toml with the baselines in both seats and ``sessions`` games per cell."""
    text = CONFIG.read_text(encoding="utf-8").replace("sessions = 30", f"sessions = {sessions}")
    players = '[[players]]\nalias = "alice"\n\n[[players]]\nalias = "bob"\n'
    assert players in text, "configs/glee/bargaining.toml changed its players: update the benchmark"
    return text.replace(players, '[[players]]\nagent = "rational"\nlabel = "alice"\n\n'
                                 '[[players]]\nagent = "rational"\nlabel = "bob"\n')


COLUMNS: Path | None = None  # where this run of the benchmark keeps the columnar copies


def timed(args: list[str], tree: str | None = None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one command, measured for that process alone (``wait4``)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if COLUMNS is not None:
        env["ECONARENA_COLUMNS"] = str(COLUMNS)
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


def same_numbers(a: Path, b: Path) -> str:
    """Whether two report folders hold the same numbers: CSVs byte for byte, parquet by content."""
    import pandas as pd

    diff = [n for n in ("metrics.csv", "glee_effects.csv", "glee_pairs.csv")
            if (a / n).read_bytes() != (b / n).read_bytes()]
    for name in ("players.parquet", "runs.parquet", "decisions.parquet"):
        x, y = pd.read_parquet(a / name), pd.read_parquet(b / name)
        if x.drop(columns=[c for c in x if "latency" in c]).to_csv() != y.drop(columns=[c for c in y if "latency"
                                                                                         in c]).to_csv():
            diff.append(name)
    return "identical numbers" if not diff else "DIFFERENT: " + ", ".join(diff)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[150], metavar="SESSIONS",
                    help="games per configuration (150: 57,600 games; 30: 11,520)")
    ap.add_argument("--against", metavar="DIR", help="also run the package in DIR/econarena, interleaved")
    ap.add_argument("--keep", metavar="DIR", help="play in DIR and keep it (a second call reuses the studies)")
    args = ap.parse_args()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-analysis-"))
    tmp.mkdir(parents=True, exist_ok=True)
    global COLUMNS
    COLUMNS = tmp / "columns"
    trees: list[str | None] = [None] + ([str(Path(args.against).resolve())] if args.against else [])
    print(f"{load_average()} at the start")
    peaks: dict[int, float] = {}
    try:
        for sessions in args.sizes:
            games = 384 * sessions
            run_dir = tmp / f"glee-bargaining-{sessions}"
            if not (run_dir / "manifest.json").exists():
                shutil.rmtree(run_dir, ignore_errors=True)
                (tmp / f"study-{sessions}.toml").write_text(study_config(sessions), encoding="utf-8")
                wall, cpu, rss = timed(["run", str(tmp / f"study-{sessions}.toml"), "--out", str(run_dir),
                                        "--quiet"])
                print(f"econarena run, {games:,} games: {wall:.1f} s wall, {cpu:.1f} s CPU, {rss:.0f} MB")
            size = sum(f.stat().st_size for f in run_dir.glob("*.jsonl")) / 1e6
            print(f"-- {games:,} games ({size:.0f} MB of logs)")
            got: dict[tuple[str, str | None], tuple[float, float, float]] = {}
            for tree in trees:
                tag = "this tree" if tree is None else "against"
                out = tmp / f"out-{sessions}-{'new' if tree is None else 'old'}"
                shutil.rmtree(out, ignore_errors=True)
                if tree is None:  # the first read (no copy yet), then every later one (from the copy)
                    shutil.rmtree(COLUMNS, ignore_errors=True)
                    got[("analyze, first read", tree)] = timed(["analyze", "glee", str(run_dir), "--out", str(out)])
                    got[("report, first read", tree)] = timed(["report", str(run_dir), "--out", str(out)])
                    shutil.rmtree(out, ignore_errors=True)
                got[("analyze", tree)] = timed(["analyze", "glee", str(run_dir), "--out", str(out)], tree)
                got[("report", tree)] = timed(["report", str(run_dir), "--out", str(out)], tree)
                for cmd in ("analyze, first read", "report, first read", "analyze", "report"):
                    if (cmd, tree) in got:
                        wall, cpu, rss = got[(cmd, tree)]
                        print(f"   {tag:9s} {cmd:19s}: {wall:6.1f} s wall, {cpu:6.1f} s CPU, peak {rss:5.0f} MB")
            new = tmp / f"out-{sessions}-new"
            page = (new / "report.html").stat().st_size / 1e3
            print(f"   report.html: {page:.0f} KB")
            if args.against:
                for cmd in ("analyze", "report"):
                    for first in (", first read", ""):
                        (w0, c0, r0), (w1, c1, r1) = got[(cmd + first, None)], got[(cmd, trees[1])]
                        what = first.strip(", ") or "from the copy"
                        print(f"   {cmd} ({what}): x{w1 / w0:.1f} faster (wall), x{c1 / c0:.1f} (CPU), "
                              f"x{r1 / r0:.1f} less memory")
                print(f"   {same_numbers(new, tmp / f'out-{sessions}-old')}")
            peaks[games] = got[("report", None)][2]
            if sessions == 150:
                show("analysis_report_57600", got[("report", None)][1], "s CPU",
                     "econarena report, GLEE bargaining grid, 57,600 games", higher_is_better=False, digits=1)
                show("analysis_report_57600_first_read", got[("report, first read", None)][1], "s CPU",
                     "   the same, the first read (no columnar copy yet)", higher_is_better=False, digits=1)
                show("analysis_report_57600_rss", got[("report", None)][2], "MB",
                     "   its peak memory", higher_is_better=False)
                show("analysis_analyze_57600_rss", got[("analyze", None)][2], "MB",
                     "   econarena analyze glee: peak memory", higher_is_better=False)
        if len(peaks) > 1:
            small, large = min(peaks), max(peaks)
            print(f"report's peak memory at {large:,} games / at {small:,}: x{peaks[large] / peaks[small]:.2f}")
        print(f"{load_average()} at the end")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
