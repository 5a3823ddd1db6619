"""`make bench`: run every benchmark in turn and print its figures (each script prints its own ratio)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
BENCHES = ["bench_host.py", "bench_gama.py", "bench_report.py", "bench_concurrency.py", "bench_steering.py",
           "bench_hf.py", "bench_ray.py"]


def main() -> int:
    failed = 0
    for name in BENCHES:
        path = HERE / name
        print(f"== {name}", flush=True)
        if not path.exists():
            print("   (missing)")
            failed += 1
            continue
        failed += subprocess.call([sys.executable, str(path)]) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
