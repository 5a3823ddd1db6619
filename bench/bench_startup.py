"""Start-up cost per command: what every short run pays before its first decision.

Six commands, each in a fresh process, as a user types them: ``econarena --help``, ``list``, ``report
--help``, ``validate`` and ``run`` of a one-game experiment (two ``agent = "openai"`` seats against an
instant fake server in its own process, one baseline; 2 sessions), and ``summary`` of that run's directory.
For each: the wall and CPU time of the process (median of ``--repeat``), the time its imports take
(``python -X importtime``: the sum of every module's own time) with the packages that take most of it, and
which game families, and whether numpy and pydantic, it imported. Python's bytecode cache is on, as in any
install (``PYTHONDONTWRITEBYTECODE`` is dropped, one untimed round writes the cache).

``--against COMMIT`` (or a DIR that holds an ``econarena`` folder) measures another copy of the package too,
made with ``git archive``, alternating process by process with this one, so both see the same load.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_concurrency import start_server  # noqa: E402
from figures import load_average, median, show  # noqa: E402

TINY = """[experiment]
name = "tiny"
game = "beauty_contest"
sessions = 2
seed = 1

[[players]]
agent = "openai"
model = "fake-model"
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "FAKE_KEY"
count = 2

[[players]]
agent = "rational"
"""

COMMANDS = ("help", "list", "report_help", "validate", "run", "summary")
HEAVY = ("numpy", "pydantic", "pandas", "duckdb", "pyarrow")  # packages a short command should not need


def _env(tree: str | None) -> dict[str, str]:
    """This tree: the package this script imports (its PYTHONPATH kept, as the caller set it); another: only
    the folder that holds it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and (not tree or k != "PYTHONPATH")}
    env["FAKE_KEY"] = "sk-bench-not-a-real-key"
    if tree:
        env["PYTHONPATH"] = tree
    return env


def _args(command: str, tmp: Path, out: Path) -> list[str]:
    return {"help": ["--help"], "list": ["list"], "report_help": ["report", "--help"],
            "validate": ["validate", str(tmp / "tiny.toml")],
            "run": ["run", str(tmp / "tiny.toml"), "--out", str(out), "--no-cache", "--quiet"],
            "summary": ["summary", str(out)]}[command]


def once(command: str, tmp: Path, out: Path, tree: str | None, importtime: bool = False) -> tuple[float, float, str]:
    """(wall s, CPU s, stderr) of one command in a fresh process."""
    if command == "run" and out.exists():
        shutil.rmtree(out)
    argv = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "econarena.cli",
            *_args(command, tmp, out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(tree), cwd=tmp)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[-4:])} failed ({proc.returncode}): {proc.stderr.strip()[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr


LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def imports(stderr: str) -> tuple[float, dict[str, float]]:
    """Seconds of imports in all, and per top-level package (each module's own time)."""
    per: dict[str, float] = defaultdict(float)
    for line in stderr.splitlines():
        m = LINE.match(line)
        if m:
            per[m.group(4).split(".")[0]] += int(m.group(1)) / 1e6
    return sum(per.values()), dict(per)


def loaded(stderr: str) -> str:
    """The game families and heavy packages one process imported (from its ``-X importtime`` lines)."""
    names = {m.group(4) for m in map(LINE.match, stderr.splitlines()) if m}
    # a family counts by any module of it: its package's own line can be missing from -X importtime's output
    # (seen for validate and run: the family's modules listed, its package not), which read as "none"
    families = sorted({n.split(".")[2] for n in names if n.count(".") >= 2 and n.startswith("econarena.games.")
                       and n.split(".")[2] in FAMILIES})
    heavy = [p for p in HEAVY if p in names]
    return f"families: {', '.join(families) or 'none'}; {', '.join(heavy) or 'no numpy/pydantic'}"


FAMILIES = ("classic", "econarena", "gamabench", "glee", "negotiationarena", "steering")


def tree_of(against: str, tmp: Path) -> str:
    """A folder holding an ``econarena`` package: ``against`` itself, or the commit it names, archived."""
    if (Path(against) / "econarena").is_dir():
        return str(Path(against).resolve())
    repo = Path(__file__).resolve().parent.parent
    out = tmp / "against"
    (out / "econarena").mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", against], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(out / "econarena")], input=archive.stdout, check=True)
    return str(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--against", metavar="COMMIT|DIR",
                    help="also measure the package at COMMIT (or in DIR/econarena), interleaved")
    args = ap.parse_args()
    server, port = start_server(0.0)
    print(f"(fresh process per command; medians of {args.repeat}; {load_average()})")
    try:
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            trees: list[str | None] = [None] + ([tree_of(args.against, tmp)] if args.against else [])
            (tmp / "tiny.toml").write_text(TINY.format(port=port), encoding="utf-8")
            outs = {t: tmp / f"out-{k}" for k, t in enumerate(trees)}
            for t in trees:  # untimed: writes the bytecode cache, and the directory summary reads
                for c in COMMANDS:
                    once(c, tmp, outs[t], t)
            wall: dict[tuple[str, str | None], list[float]] = defaultdict(list)
            cpu: dict[tuple[str, str | None], list[float]] = defaultdict(list)
            imp: dict[tuple[str, str | None], list[float]] = defaultdict(list)
            top: dict[tuple[str, str | None], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
            what: dict[tuple[str, str | None], str] = {}
            for _ in range(args.repeat):
                for c in COMMANDS:
                    for t in trees:
                        w, u, _ = once(c, tmp, outs[t], t)
                        wall[c, t].append(w)
                        cpu[c, t].append(u)
                        stderr = once(c, tmp, outs[t], t, importtime=True)[2]
                        total, per = imports(stderr)
                        what[c, t] = loaded(stderr)
                        imp[c, t].append(total)
                        for pkg, s in per.items():
                            top[c, t][pkg].append(s)
            for c in COMMANDS:
                w, u, i = median(wall[c, None]), median(cpu[c, None]), median(imp[c, None])
                heavy = sorted(((median(v), k) for k, v in top[c, None].items()), reverse=True)[:5]
                show(f"startup_{c}_ms", 1000 * w, "ms",
                     f"econarena {c}: wall (CPU {1000 * u:.0f} ms, imports {1000 * i:.0f} ms: "
                     + ", ".join(f"{k} {1000 * s:.0f}" for s, k in heavy) + ")", higher_is_better=False)
                print(f"   imported: {what[c, None]}", flush=True)
                for t in trees[1:]:
                    tw, tu, ti = median(wall[c, t]), median(cpu[c, t]), median(imp[c, t])
                    theavy = sorted(((median(v), k) for k, v in top[c, t].items()), reverse=True)[:5]
                    print(f"   against {t}: wall {1000 * tw:.0f} ms (CPU {1000 * tu:.0f} ms, "
                          f"imports {1000 * ti:.0f} ms: "
                          + ", ".join(f"{k} {1000 * s:.0f}" for s, k in theavy)
                          + f"); this tree x{tw / w:.2f} wall, x{tu / u:.2f} CPU, x{ti / i:.2f} imports", flush=True)
                    print(f"   against, imported: {what[c, t]}", flush=True)
    finally:
        server.terminate()
        server.wait(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
