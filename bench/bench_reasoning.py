"""What keeping reasoning apart from the answer costs, against the CPU of one LLM call.

Every reply of every provider now goes through ``agents/reasoning.py`` (a reply may hide a draft move in
``<think>``), so its cost is paid on every call. Measured here:

1. the Host's CPU per LLM decision (as ``bench_llm_cost.py`` measures it: a beauty contest of
   ``agent = "openai"`` players against an instant fake server in its own process, no response cache), which
   includes the split of each reply;
2. the split alone, per reply, for the forms replies arrive in: a plain JSON answer (the common case), a
   message with ``reasoning_content`` and usage details, and an answer after a 2,000-character ``<think>``.

The ratio (split / Host CPU per decision) is the overhead; the goal is under 5%.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_concurrency import start_server  # noqa: E402
from bench_llm_cost import host_once  # noqa: E402
from figures import load_average, median, show  # noqa: E402

THOUGHT = ("Let me think about what the others will choose. If everyone picks 50, two thirds is 33. " * 22)[:2000]
CASES = {
    "plain": ({"role": "assistant", "content": '{"answer": 33}'}, {"completion_tokens": 7}),
    "reasoning_content": ({"role": "assistant", "content": '{"answer": 22}', "reasoning_content": THOUGHT},
                          {"completion_tokens": 500, "completion_tokens_details": {"reasoning_tokens": 480}}),
    "inline_think": ({"role": "assistant", "content": f'<think>{THOUGHT}</think>\n{{"answer": 22}}'},
                     {"completion_tokens": 500}),
}


def split_us(message: dict, usage: dict, n: int) -> float:
    """Microseconds per ``split_message`` call (best of five batches of ``n``)."""
    from econarena.agents.reasoning import split_message

    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            split_message(message, usage)
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--decisions", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=20000, help="split calls per timing batch")
    args = ap.parse_args()
    os.environ["FAKE_KEY"] = "sk-bench-not-a-real-key"
    print(f"(instant fake server in its own process; medians of {args.repeat}; {load_average()})")
    server, port = start_server(0.0)
    try:
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            host_once(port, 200, tmp)  # warm-up: SDK import, first connections
            host = median([host_once(port, args.decisions, tmp)[1] for _ in range(args.repeat)]) * 1e6
    finally:
        server.terminate()
    show("reasoning_host_us", host, "us", "   Host CPU per LLM decision (the split included)",
         higher_is_better=False, digits=0)
    for name, (message, usage) in CASES.items():
        us = split_us(message, usage, args.calls)
        show(f"reasoning_split_{name}_us", us, "us", f"   split of one reply, {name}", higher_is_better=False,
             digits=2)
        show(f"reasoning_overhead_{name}_pct", 100 * us / host, "%", f"   overhead per call, {name}",
             higher_is_better=False, digits=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
