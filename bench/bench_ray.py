"""Scale-out: the same experiments on the local engine and on a local Ray instance with 1 and 2 session
workers; prints runs/s and decisions/s for each and the ratios.

1. Baselines only (no model): a GAMA-Bench guessing game of 10 players x 20 rounds, 24 sessions of 2 runs
   (9,600 decisions). CPU-bound: the goal on the 2-core reference machine is >= 1.6x with 2 workers over
   1 (the driver, the ledger and Ray's own processes share those 2 cores with the workers).
2. One LLM seat per table against a fake OpenAI-compatible server with 100 ms latency (in its own
   process), 2 workers against 1 at the same per-worker concurrency: I/O-bound, so two workers keep
   twice the calls in flight.

Ray's start and the workers' start (seconds) are not timed: each engine plays a small warm-up experiment
first, then the timed one. Every timed run is checked complete.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SESSIONS = 64
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))


def baseline_doc(sessions: int) -> dict[str, Any]:
    return {"experiment": {"name": "bench-ray", "game": "guessing_game", "sessions": sessions, "runs": 2,
                           "seed": 1},
            "game": {"rounds": 20},
            "players": [{"agent": "rational", "count": 4}, {"agent": "random", "count": 6}]}


def llm_doc(port: int, sessions: int) -> dict[str, Any]:
    return {"experiment": {"name": "bench-ray-llm", "game": "beauty_contest", "sessions": sessions, "runs": 1,
                           "seed": 1},
            "players": [{"agent": "openai", "model": "fake", "base_url": f"http://127.0.0.1:{port}/v1",
                         "max_connections": 256, "timeout_s": 30}, {"agent": "rational", "count": 4}]}


def play(doc: dict[str, Any], out: Path, engine: Any, concurrency: int) -> tuple[Any, float, float]:
    from econarena.agents.llm import RuntimeOptions
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    exp = parse_experiment(doc, "bench.toml")
    shutil.rmtree(out, ignore_errors=True)
    options = HostOptions(concurrency=concurrency, quiet=True, engine=engine, runtime=RuntimeOptions(cache=False))
    t, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(Host(exp, out, options).run())
    elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    if result.status != "complete":
        raise SystemExit(f"{out}: {result.status}; a benchmark of failures measures nothing")
    return result, elapsed, cpu


def engine_for(workers: int, tmp: Path, warm: dict[str, Any]) -> Any:
    from econarena.hosts.ray_engine import RayEngine

    engine = RayEngine(workers=workers)
    play(warm, tmp / f"warm-{workers}", engine, 4)  # starts the workers, loads the code
    return engine


def line(name: str, result: Any, elapsed: float, cpu: float = 0.0) -> str:
    return (f"  {name:<22} {result.runs_done / elapsed:8.1f} runs/s {result.decisions / elapsed:9.0f} decisions/s "
            f"({elapsed:.2f} s)")


def _spin(n: int) -> None:
    x = 0
    for i in range(n):
        x += i


def machine_ceiling(n: int = 20_000_000) -> float:
    """What 2 processes over 1 can give on this machine right now: a pure-Python loop run alone, then in
    two processes at once. On an idle 2-core machine about 2x; other jobs on the cores lower it, and no
    engine can scale past it, so the Ray ratios are read against it."""
    import multiprocessing as mp

    t = time.perf_counter()
    _spin(n)
    one = time.perf_counter() - t
    procs = [mp.Process(target=_spin, args=(n,)) for _ in range(2)]
    t = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return 2 * one / (time.perf_counter() - t)


def main() -> int:
    import ray
    from bench_concurrency import start_server

    ceiling = machine_ceiling()
    print(f"this machine now: two plain processes in parallel give {ceiling:.2f}x over one (idle 2 cores: ~2x)")
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    server, port = start_server(0.1)
    try:
        base, warm = baseline_doc(SESSIONS), baseline_doc(2)
        print(f"baselines only: guessing game, 10 players x 20 rounds, {SESSIONS} sessions x 2 runs")
        local = play(base, tmp / "local", None, 16)
        print(line("local engine", *local))
        timed = {}
        for workers in (1, 2):
            engine = engine_for(workers, tmp, warm)
            try:
                ledger0 = ray.get(engine.ledger.cpu_s.remote())
                busy0 = ray.get([w.cpu_s.remote() for w in engine.workers])
                timed[workers] = play(base, tmp / f"ray-{workers}", engine, 16)
                ledger = ray.get(engine.ledger.cpu_s.remote()) - ledger0
                busy = [b - b0 for b, b0 in zip(ray.get([w.cpu_s.remote() for w in engine.workers]), busy0)]
            finally:
                engine.close()
            print(line(f"Ray, {workers} worker(s)", *timed[workers]))
            result, _, driver = timed[workers]
            print(f"    driver CPU {driver / result.runs_done * 1e3:.2f} ms per run (a ceiling of "
                  f"{result.runs_done / driver:.0f} runs/s, {result.decisions / driver:.0f} decisions/s); ledger CPU "
                  f"{ledger / result.runs_done * 1e3:.2f} ms per run (ceiling "
                  f"{result.runs_done / max(ledger, 1e-9):.0f} runs/s); workers busy "
                  f"{', '.join(f'{b / timed[workers][1]:.0%}' for b in busy)} of the time")
        print(f"  ratio: 2 workers / 1 worker = {timed[1][1] / timed[2][1]:.2f}x (goal >= 1.6x; this machine's "
              f"ceiling now {ceiling:.2f}x); Ray 1 worker / local = {local[1] / timed[1][1]:.2f}x")

        print("one LLM seat per table, fake server with 100 ms latency, 160 sessions, concurrency 16 per worker")
        llm, warm_llm = llm_doc(port, 160), llm_doc(port, 4)
        llm_timed = {}
        for workers in (1, 2):
            engine = engine_for(workers, tmp, warm_llm)
            try:
                services0 = ray.get(engine.services.cpu_s.remote())
                llm_timed[workers] = play(llm, tmp / f"llm-{workers}", engine, 16)
                services = ray.get(engine.services.cpu_s.remote()) - services0
            finally:
                engine.close()
            print(line(f"Ray, {workers} worker(s)", *llm_timed[workers]))
            calls = llm_timed[workers][0].runs_done  # one LLM call per run
            print(f"    services actor (cluster-wide limits) CPU {services / calls * 1e3:.2f} ms per request (ceiling "
                  f"of {calls / max(services, 1e-9):.0f} requests/s)")
        print(f"  ratio: 2 workers / 1 worker = {llm_timed[1][1] / llm_timed[2][1]:.2f}x (ideal 2x: twice the calls "
              "in flight)")
    finally:
        server.kill()
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
