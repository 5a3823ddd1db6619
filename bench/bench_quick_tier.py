"""The README's example, timed: ``econarena bench hf --tier quick`` with the bundled SmolLM2 on this machine's CPU.

One whole command in a subprocess, from nothing (a fresh output folder, no response cache) to bench.json and the
scorecard, the converted model taken from the user cache as any second use does. Goal: under 5 minutes on the
2-core reference machine. Prints the wall time, the model's decisions and their rate, and the overall score.
The machine is shared: the load average is printed beside the figure (the time scales with it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from figures import load_average, show  # noqa: E402


def main() -> int:
    exe = str(Path(sys.executable).with_name("econarena"))
    with tempfile.TemporaryDirectory() as tmp:
        before = load_average()
        t0 = time.perf_counter()
        proc = subprocess.run([exe, "bench", "hf", "--tier", "quick", "--out", tmp, "--no-cache", "--quiet"],
                              capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
            print(f"econarena bench hf --tier quick failed with exit code {proc.returncode}")
            return 1
        result = json.loads((Path(tmp) / "hf" / "bench.json").read_text(encoding="utf-8"))
    print(f"({before} before, {load_average()} after)")
    show("bench_quick_tier_s", wall, "s", "econarena bench hf --tier quick, the whole command (goal < 300 s)",
         higher_is_better=False)
    show("bench_quick_tier_decisions_per_s", result["decisions"] / wall, "decisions/s",
         f"  the model's {result['decisions']} decisions ({result['tokens_in']:,} tokens in, {result['tokens_out']:,} "
         "out) per second of the command", digits=2)
    o = result["overall"]
    print(f"  overall {o['score']:.1f} [{o['low']:.1f}, {o['high']:.1f}] (SmolLM2-135M, quick tier)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
