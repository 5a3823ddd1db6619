"""GLEE at the paper's scale: its three families' whole grids (384 + 576 + 360 = 1,320
configurations) with baseline players, ``--sessions`` games each (445: 587,400 games, the size of GLEE's
study), played as a user with a batch scheduler would (each family as ``--shards`` shards run side by
side), then ``econarena report`` reading the shards where they are (no merge): right after the playing (each
run's follower wrote its shard's columnar copy as it played, analysis/follow.py: that report reads no JSON),
again, and with ``--cold`` once more after the copies are removed (it parses the logs and writes them); then
``analyze glee``. Prints the wall time, CPU time and peak memory of every step.

Heavy (tens of minutes, a few GB of logs): not part of ``make bench`` or ``make test``; run it by hand:

    .venv/bin/python bench/bench_paper_scale.py [--sessions 445] [--shards 2] [--keep DIR]

The code before streaming read a study whole into memory (3 GB at 57,600 games, growing with them: about
35 GB and half an hour for this one), so it is not run against it here.
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
from figures import load_average  # noqa: E402

CLI = [sys.executable, "-m", "econarena.cli"]
FAMILIES = {"bargaining": 384, "negotiation": 576, "persuasion": 360}
PLAYERS = '[[players]]\nalias = "alice"\n\n[[players]]\nalias = "bob"\n'
BASELINES = '[[players]]\nagent = "rational"\nlabel = "alice"\n\n[[players]]\nagent = "rational"\nlabel = "bob"\n'


def config(family: str, sessions: int) -> str:
    text = (HERE.parent / "configs" / "glee" / f"{family}.toml").read_text(encoding="utf-8")
    assert "sessions = 30" in text and PLAYERS in text, f"configs/glee/{family}.toml changed: update the benchmark"
    return text.replace("sessions = 30", f"sessions = {sessions}").replace(PLAYERS, BASELINES)


def start(args: list[str]) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen[bytes], what: str) -> tuple[float, float]:
    """(CPU s, peak RSS MB) of a started command, once it ends."""
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{what} failed ({status}):\n{err[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=445, help="games per configuration (445: 587,400 games)")
    ap.add_argument("--shards", type=int, default=2, help="shards per family, played side by side")
    ap.add_argument("--keep", metavar="DIR", help="play in DIR and keep it (a second call skips the playing)")
    ap.add_argument("--cold", action="store_true", help="also time a report from the logs (copies removed)")
    args = ap.parse_args()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-paper-"))
    tmp.mkdir(parents=True, exist_ok=True)
    # the columnar copies (analysis/columnar.py) in a folder of this study's, written by each run's follower
    # as it plays: the report right after the playing reads them (the goal: at most 60 s and 1 GB)
    copies = tmp / "columns"
    os.environ["ECONARENA_COLUMNS"] = str(copies)
    games = sum(FAMILIES.values()) * args.sessions
    print(f"GLEE's three grids, {sum(FAMILIES.values()):,} configurations x {args.sessions} games = {games:,} games; "
          f"{load_average()}", flush=True)
    try:
        shards = []
        for family in FAMILIES:
            toml = tmp / f"{family}.toml"
            toml.write_text(config(family, args.sessions), encoding="utf-8")
            dirs = [tmp / f"{family}-shard-{k}" for k in range(1, args.shards + 1)]
            shards += dirs
            if all((d / "manifest.json").exists() for d in dirs):
                continue
            wall = time.perf_counter()
            procs = [(start(["run", str(toml), "--shard", f"{k}/{args.shards}", "--out", str(d), "--quiet"]), d)
                     for k, d in enumerate(dirs, 1)]
            stats = [finish(p, f"run {d.name}") for p, d in procs]
            wall = time.perf_counter() - wall
            size = sum(f.stat().st_size for d in dirs for f in d.glob("*.jsonl")) / 1e9
            print(f"run {family} ({FAMILIES[family] * args.sessions:,} games, {args.shards} shards side by side, "
                  f"{size:.2f} GB of logs): {wall:.0f} s wall, {sum(c for c, _ in stats):.0f} s CPU, peak "
                  f"{max(r for _, r in stats):.0f} MB per shard", flush=True)
        report = ["report", *map(str, shards), "--out", str(tmp / "report")]
        steps = [("report right after the playing (the copies written as it played)", report),
                 ("report again", report)]
        if args.cold:
            steps.append(("report, first read of the logs (writes the copies)", report))
        steps.append(("analyze glee, from the copies",
                      ["analyze", "glee", *map(str, shards), "--out", str(tmp / "analysis")]))
        for name, cmd in steps:
            if name.startswith("report, first read"):
                shutil.rmtree(copies, ignore_errors=True)
            wall = time.perf_counter()
            cpu, rss = finish(start(cmd), name)
            wall = time.perf_counter() - wall
            print(f"{name} of the {len(shards)} shard directories ({games:,} games): {wall:.0f} s wall, "
                  f"{cpu:.0f} s CPU, peak {rss:.0f} MB; {load_average()}", flush=True)
        page = (tmp / "report" / "report.html").stat().st_size / 1e3
        print(f"report.html: {page:.0f} KB")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
