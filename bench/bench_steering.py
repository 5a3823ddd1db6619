"""Steering: branches played concurrently vs one at a time, and the cost of OpenSpiel's CFR per game.

1. A fruit-trade steering experiment (tones: 4 actions x 2 samples = 8 branches per game, 16 games) whose
   steered player is ``agent = "openai"`` against a local fake server with 100 ms latency, in its own
   process; the opener is the rational baseline. Played at ``--concurrency 1`` and ``--concurrency 32``
   through the real SteerHost; prints LLM decisions/s for each and their ratio. (The server's canned
   reply is not a valid fruit-trade answer, so each branch is one LLM call and a recorded rule break:
   the benchmark measures the orchestration, not the model.)
2. ``games.steering.solve`` (OpenSpiel's CFRSolver + nash_conv + expected_returns) on 25 offers x 2
   samples for 100 iterations with metrics every 5: milliseconds per game.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
from bench_concurrency import start_server, timed_run  # noqa: E402
from figures import show  # noqa: E402

GAMES = 16


def experiment(port: int) -> dict:
    return {"experiment": {"name": "bench-steering", "game": "fruit_trade", "sessions": GAMES, "seed": 1},
            "players": [{"agent": "rational", "label": "opener"},
                        {"agent": "openai", "label": "steered", "model": "fake-model",
                         "base_url": f"http://127.0.0.1:{port}/v1", "api_key_env": "FAKE_KEY",
                         "max_connections": 64}],
            "steer": {"actions": "tones", "samples": 2, "iterations": 100, "every": 5, "report_at": 20}}


def play(port: int, concurrency: int, tmp: Path) -> tuple[int, float]:
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.steer import SteerHost

    out = tmp / f"steer-{concurrency}-{time.monotonic_ns()}"
    _, elapsed = timed_run(parse_experiment(experiment(port), "bench_steering.toml"), out, concurrency, SteerHost)
    llm = sum(1 for line in (out / "decisions.jsonl").read_text().splitlines() if '"steered"' in line)
    return llm, elapsed


def cfr_cost() -> float:
    import numpy as np

    from econarena.games.steering.cfr import solve

    values = np.random.default_rng(0).integers(-8, 9, size=(25, 2, 2)).astype(float)
    solve(values, 1, 24, 5, 5)  # warm-up: OpenSpiel import and game registration
    start = time.perf_counter()
    reps = 20
    for _ in range(reps):
        solve(values, 1, 24, 100, 5)
    return (time.perf_counter() - start) / reps * 1000


def main() -> int:
    os.environ["FAKE_KEY"] = "sk-bench-not-a-real-key"
    server, port = start_server(0.1)
    try:
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            play(port, 8, tmp)  # warm-up: SDK import, first connections
            rates = {}
            for c in (1, 32):
                n, secs = play(port, c, tmp)
                rates[c] = n / secs
                print(f"steering, concurrency {c:>2}: {n} LLM decisions ({GAMES} games x 8 branches) in "
                      f"{secs:6.2f}s = {rates[c]:6.1f} decisions/s (server latency 100 ms)", flush=True)
            show("steering_concurrency", rates[32] / rates[1], "x", "steering branches, concurrency 32 vs 1",
                 digits=1)
    finally:
        server.terminate()
        server.wait(5)
    show("steering_cfr_ms", cfr_cost(), "ms per game", "OpenSpiel CFR, 25 offers x 2 samples, 100 iterations, "
         "metrics every 5", higher_is_better=False, digits=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
