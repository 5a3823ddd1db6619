"""Slower checks of the summary's numbers, kept out of the suite (minutes, real processes): each compares
the summary.json that a command wrote with one recomputed from the logs by tests/test_summary_property.py's
independent code, and with the same experiment played plainly.

    .venv/bin/python tests/summary_stress.py [--only kill|shards|ray|direct] [--n N]

- kill:   `econarena run` SIGKILLed at random moments up to three times, then --resume: the summary equals the
          recomputed one and the uninterrupted run's.
- shards: `run --shard K/N` for every K (shard 1 killed once and resumed), `econarena merge`: the merged
          summary equals the recomputed one and the unsharded run's; each shard's summary its own logs'.
- ray:    the same experiment on a local Ray instance (2 CPUs) and in-process: equal summaries.
- direct: baselines asked directly (no prompt, Host._decide_direct) and through the text round trip: equal
          runs, decisions (but messages and latency) and summaries.
Prints one line per experiment and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from conftest import to_toml  # noqa: E402
from test_summary_property import random_experiment, recompute  # noqa: E402

from econarena.agents.llm import RuntimeOptions  # noqa: E402
from econarena.analysis.metrics import write_summary  # noqa: E402
from econarena.games import GAMES  # noqa: E402
from econarena.hosts.config import parse_experiment  # noqa: E402
from econarena.hosts.host import Host, HostOptions  # noqa: E402

CLI = [sys.executable, "-m", "econarena.cli"]
VOLATILE = ("mean_latency_s",)


def differences(summary: dict[str, Any], other: dict[str, Any], skip: tuple[str, ...] = VOLATILE) -> list[str]:
    """What differs between two summaries' runs and labels (``skip``: keys that may)."""
    out = [k for k in ("runs_complete", "runs_incomplete") if summary[k] != other[k]]
    if set(summary["labels"]) != set(other["labels"]):
        return out + [f"labels {sorted(summary['labels'])} vs {sorted(other['labels'])}"]
    for name, v in other["labels"].items():
        out += [f"{name}.{k}: {summary['labels'][name][k]!r} vs {x!r}" for k, x in v.items()
                if k not in skip and summary["labels"][name][k] != x]
    return out


def against_logs(out: Path, game: str) -> list[str]:
    summary = json.loads((out / "summary.json").read_text())
    return differences(summary, recompute(out, GAMES[game].info.score), ())


def cli(*args: str) -> None:
    subprocess.run([*CLI, *args, "--quiet"], check=True, capture_output=True, text=True)


def killed(cmd: list[str], rng: random.Random, within: float) -> None:
    proc = subprocess.Popen([*CLI, *cmd, "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0.4, max(0.5, within)))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def check_kill(seed: int, base: Path, rng: random.Random) -> list[str]:
    doc = random_experiment(seed)
    doc["experiment"]["sessions"] = 300
    cfg = base / "e.toml"
    cfg.write_text(to_toml(doc))
    t0 = time.monotonic()
    cli("run", str(cfg), "--out", str(base / "ref"))
    took = time.monotonic() - t0
    out = base / "killed"
    for attempt in range(3):
        killed(["run", str(cfg), "--out", str(out)] + (["--resume"] if attempt else []), rng, 0.9 * took)
    cli("run", str(cfg), "--out", str(out), "--resume")
    ref = json.loads((base / "ref" / "summary.json").read_text())
    return against_logs(out, doc["experiment"]["game"]) + differences(json.loads((out / "summary.json").read_text()),
                                                                        ref)


def check_shards(seed: int, base: Path, rng: random.Random) -> list[str]:
    doc = random_experiment(seed)
    doc["experiment"]["sessions"] = rng.randint(60, 200)
    cfg = base / "e.toml"
    cfg.write_text(to_toml(doc))
    cli("run", str(cfg), "--out", str(base / "ref"))
    n = rng.randint(2, 4)
    dirs = [str(base / f"shard{k}") for k in range(1, n + 1)]
    for k, d in enumerate(dirs, 1):
        cmd = ["run", str(cfg), "--out", d, "--shard", f"{k}/{n}"]
        if k == 1:
            killed(cmd, rng, 1.0)
            cmd.append("--resume")
        cli(*cmd)
    cli("merge", "--out", str(base / "merged"), *dirs)
    game = doc["experiment"]["game"]
    ref = json.loads((base / "ref" / "summary.json").read_text())
    problems = against_logs(base / "merged", game)
    problems += differences(json.loads((base / "merged" / "summary.json").read_text()), ref)
    for d in dirs:
        problems += against_logs(Path(d), game)
    return problems


class TextHost(Host):
    """Every seat through the prompt and text round trip, baselines included (the path of text replies)."""

    @functools.cached_property
    def _direct_entries(self) -> list[list[bool]]:
        return [[False] * len(row) for row in self.agents]


def play(doc: dict[str, Any], out: Path, host_class: type[Host] = Host, engine: Any = None) -> dict[str, Any]:
    host = host_class(parse_experiment(doc, "s.toml"), out, HostOptions(
        concurrency=4, quiet=True, engine=engine, runtime=RuntimeOptions(cache=False)))
    asyncio.run(host.run())
    return write_summary(out, host.dir.tally)


def records(out: Path) -> tuple[list[Any], list[Any]]:
    runs = sorted((json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()),
                  key=lambda r: (r["lineup"], r["session"], r["run"]))
    decisions = sorted(({k: v for k, v in json.loads(x).items() if k not in ("messages", "messages_from", "latency_s")}
                        for x in (out / "decisions.jsonl").read_text().splitlines()),
                       key=lambda d: (d["lineup"], d["session"], d["run"], d["round"], d["player"], d["attempt"]))
    return runs, decisions


def check_direct(seed: int, base: Path, rng: random.Random) -> list[str]:
    doc = random_experiment(seed)
    direct, text = play(doc, base / "direct"), play(doc, base / "text", TextHost)
    problems = differences(direct, text)
    (runs_d, dec_d), (runs_t, dec_t) = records(base / "direct"), records(base / "text")
    problems += ["runs differ"] * (runs_d != runs_t) + ["decisions differ"] * (dec_d != dec_t)
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("kill", "shards", "ray", "direct"))
    ap.add_argument("--n", type=int, default=8, help="experiments per check (default 8)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    checks: dict[str, Any] = {"kill": check_kill, "shards": check_shards, "direct": check_direct}
    engine = None
    if args.only in (None, "ray"):
        import logging

        import ray

        from econarena.hosts.ray_engine import RayEngine

        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
        engine = RayEngine(workers=2, cpus_per_worker=0.25)

        def check_ray(seed: int, base: Path, rng: random.Random) -> list[str]:
            doc = random_experiment(seed)
            on_ray, local = play(doc, base / "ray", engine=engine), play(doc, base / "local")
            return against_logs(base / "ray", doc["experiment"]["game"]) + differences(on_ray, local)

        checks["ray"] = check_ray
    failed = 0
    try:
        for name, check in checks.items():
            if args.only and name != args.only:
                continue
            for i in range(args.n):
                seed = args.seed * 1000 + i
                base = Path(tempfile.mkdtemp(prefix=f"stress-{name}-"))
                try:
                    problems = check(seed, base, rng)
                finally:
                    shutil.rmtree(base, ignore_errors=True)
                game = random_experiment(seed)["experiment"]["game"]
                print(f"{name} seed {seed} ({game}): {'OK' if not problems else 'DIFFERENT'}", flush=True)
                for p in problems[:10]:
                    print("   ", p)
                failed += bool(problems)
    finally:
        if engine is not None:
            engine.close()
    print(f"{failed} experiment(s) differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
