"""End to end, as a user meets it: ``econarena run FILE --quiet`` of baseline-only experiments, every log
and the summary written, then ``econarena summary`` of the finished directory.

1. A 5-player second-price auction with rational players: 8,000 sessions, 40,000 decisions.
2. GAMA-Bench's Guess 2/3 with ten rational players over 20 rounds: 200 runs, 40,000 decisions.

Each command runs in its own process; the interpreter's start-up (the median wall time of
``econarena --version``) is subtracted, so the figure is what the run itself costs, imports of the package
included. Python's bytecode cache is on, as in any install (``PYTHONDONTWRITEBYTECODE`` is dropped for the
timed processes, which otherwise compile every module of the package from source at each start: 0.1-0.2 s),
and one untimed run per tree writes it. Each timing is repeated (``--repeat``) and the median printed.
Goal: >= 20,000 decisions/s for both.

``--against DIR`` times another copy of the package too (DIR holds an ``econarena`` folder, e.g. made with
``git archive``), alternating run by run with this one, so both see the same load on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from figures import load_average, median, show  # noqa: E402

CLI = [sys.executable, "-m", "econarena.cli"]

SPA = """[experiment]
name = "bench-spa"
game = "second_price_auction"
environment = "self"
players_per_game = 5
sessions = {sessions}
runs = 1
seed = 1

[game]
private_value = {{ normal = [50, 10] }}
assets = 100

[[players]]
agent = "rational"
"""

GAMA = """[experiment]
name = "bench-gama"
game = "guessing_game"
environment = "melee"
sessions = {sessions}
runs = 1
seed = 1

[game]
rounds = 20

[[players]]
agent = "rational"
count = 10
"""

# name -> (TOML, sessions, decisions per session, description)
EXPERIMENTS = {
    "e2e_spa": (SPA, 8000, 5, "second-price auction, 5 rational players, 40,000 decisions"),
    "e2e_gama": (GAMA, 200, 200, "Guess 2/3, 10 rational players x 20 rounds, 40,000 decisions"),
}


def wall(args: list[str], cwd: Path, tree: str | None = None) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree:
        env["PYTHONPATH"] = tree
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=sorted(EXPERIMENTS))
    ap.add_argument("--against", metavar="DIR", help="also time the package in DIR/econarena, interleaved")
    args = ap.parse_args()
    trees: list[str | None] = [None] + ([str(Path(args.against).resolve())] if args.against else [])
    print(f"(median of {args.repeat} runs each, interpreter start-up subtracted; {load_average()})")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        warm = tmp / "warm.toml"
        warm.write_text(SPA.format(sessions=10), encoding="utf-8")
        for t in trees:  # writes the bytecode cache of every module a run imports
            wall([*CLI, "run", str(warm), "--out", str(tmp / f"warm-{trees.index(t)}"), "--quiet"], tmp, t)
            wall([*CLI, "summary", str(tmp / f"warm-{trees.index(t)}")], tmp, t)
        startup = {t: median([wall([*CLI, "--version"], tmp, t) for _ in range(5)]) for t in trees}
        print(f"start-up of `econarena --version`: {startup[None] * 1000:.0f} ms (subtracted)")
        for name, (text, sessions, per_session, what) in EXPERIMENTS.items():
            if args.only and name != args.only:
                continue
            toml = tmp / f"{name}.toml"
            toml.write_text(text.format(sessions=sessions), encoding="utf-8")
            decisions = sessions * per_session
            runs: dict[str | None, list[float]] = {t: [] for t in trees}
            summaries: dict[str | None, list[float]] = {t: [] for t in trees}
            for i in range(args.repeat):
                for k, tree in enumerate(trees):
                    out = tmp / f"{name}-{i}-{k}"
                    runs[tree].append(wall([*CLI, "run", str(toml), "--out", str(out), "--quiet"], tmp, tree)
                                      - startup[tree])
                    lines = (out / "decisions.jsonl").read_bytes().count(b"\n")
                    if lines != decisions:
                        raise RuntimeError(f"{out}: {lines} decisions logged, expected {decisions}")
                    summaries[tree].append(wall([*CLI, "summary", str(out)], tmp, tree) - startup[tree])
            show(name, decisions / median(runs[None]), "decisions/s", f"econarena run: {what}")
            show(f"{name}_summary", median(summaries[None]), "s", "   econarena summary of that directory",
                 higher_is_better=False, digits=2)
            for tree in trees[1:]:
                rate = decisions / median(runs[tree])
                print(f"   against {tree}: {rate:,.0f} decisions/s, summary {median(summaries[tree]):.2f} s; "
                      f"this tree x{decisions / median(runs[None]) / rate:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
