"""The cluster guide (docs/scale.md), run: the Slurm scripts of docs/examples/slurm/ executed as a scheduler would run
them (no Slurm here: each script's body with the variables Slurm sets, and stand-ins for sbatch, srun and
scontrol that run the step here), on a tiny experiment; and the files the guide names exist."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from timing import budget

REPO = Path(__file__).resolve().parent.parent
SLURM = REPO / "docs" / "examples" / "slurm"

# sbatch stand-in: prints a job id as `sbatch --parsable` does, and records its arguments
SBATCH = """#!/bin/bash
n=$(($(wc -l < "$SBATCH_LOG" 2>/dev/null || echo 0) + 101))
echo "$*" >> "$SBATCH_LOG"
echo "$n;cluster0"
"""
# srun stand-in for a one-machine "allocation": srun's own options dropped, the step's command run here
SRUN = """#!/bin/bash
while [ $# -gt 0 ]; do
  case "$1" in
    -w|--nodelist|-N|-n) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
exec "$@"
"""
SCONTROL = """#!/bin/bash
[ "$1 $2" = "show hostnames" ] && echo node1
"""


def stand_ins(tmp_path: Path) -> dict[str, str]:
    """PATH with sbatch, srun and scontrol stand-ins first, then this virtualenv (econarena, ray)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("sbatch", SBATCH), ("srun", SRUN), ("scontrol", SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RAY_ADDRESS"))}
    env["PATH"] = f"{bin_dir}:{Path(sys.executable).parent}:{env['PATH']}"
    env["SBATCH_LOG"] = str(tmp_path / "sbatch.log")
    return env


def tiny(arena: Any, tmp_path: Path) -> Path:
    doc = arena.experiment_dict("beauty_contest", [{"agent": "rational"}, {"agent": "random", "count": 2}],
                                sessions=7, runs=2, seed=4, history="full")
    toml = tmp_path / "tiny.toml"
    toml.write_text(arena.to_toml(doc))
    return toml


def script(path: Path, env: dict[str, str], cwd: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(path)], env=env, cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=budget(120), **kw)


def test_the_slurm_array_scripts_shard_requeue_and_merge(tmp_path: Path, arena: Any) -> None:
    """submit.sh queues the array and a merge job that waits for it (afterok on the array's id); each
    array task's body, with Slurm's array variables, plays its shard; a requeued task (run again) resumes
    and plays nothing twice; the merge job's body joins the shards into one run of every session."""
    env = stand_ins(tmp_path)
    toml = tiny(arena, tmp_path)
    out = tmp_path / "runs" / "tiny"
    env.update(EXP=str(toml), OUT=str(out), N="3")
    r = script(SLURM / "submit.sh", env, tmp_path)
    assert r.returncode == 0, r.stderr
    array, merge = (tmp_path / "sbatch.log").read_text().splitlines()
    assert array.startswith("--parsable --array=1-3 ") and array.endswith("shards.sbatch")
    assert "--dependency=afterok:101 " in merge and "N=3" in merge and merge.endswith("merge.sbatch"), merge
    assert "shards: job 101 (array 1-3); merge: job 102" in r.stdout
    for k in (1, 2, 3, 2):  # task 2 requeued: it resumes its complete shard
        task = {**env, "SLURM_ARRAY_TASK_ID": str(k), "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_JOB_ID": "101"}
        r = script(SLURM / "shards.sbatch", task, tmp_path)
        assert r.returncode == 0, r.stderr
        assert json.loads((out / f"shard-{k}" / "manifest.json").read_text())["shard"] == {"index": k, "count": 3}
    assert len(arena.read_jsonl(out / "shard-2" / "runs.jsonl")) == 2 * 2  # sessions 1 and 4 of 7, once each
    r = script(SLURM / "merge.sbatch", env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "merged 3 shard(s): 14 runs" in r.stdout  # equal to an unsharded run: tests/test_shards.py
    runs = arena.read_jsonl(out / "all" / "runs.jsonl")
    assert sorted((x["session"], x["run"]) for x in runs) == [(s, k) for s in range(7) for k in range(2)]
    r = script(SLURM / "shards.sbatch", {**env, "SLURM_ARRAY_TASK_ID": "1"}, tmp_path)  # not an array job
    assert r.returncode != 0 and "run as a Slurm job array" in r.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def holders(root: Path) -> list[int]:
    """Processes with a file open under ``root`` (what a Ray node started there keeps open: its logs)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                if os.readlink(f"/proc/{entry}/fd/{fd}").startswith(str(root)):
                    found.append(int(entry))
                    break
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the node's processes in /proc")
def test_ray_inside_a_slurm_allocation(tmp_path: Path, arena: Any) -> None:
    """ray-cluster.sbatch on a one-node allocation: the Ray head started as a job step, econarena driving
    it with --ray, and every Ray process gone when the script ends (its steps are stopped on exit)."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'econarena[ray]' (make install)")
    env = stand_ins(tmp_path)
    temp = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))  # short: Ray's socket paths have a limit
    port = free_port()
    # ports Ray would take at fixed defaults, taken by another Ray instance of this machine maybe
    extra = " ".join(f"--{name} {free_port()}" for name in (
        "node-manager-port", "object-manager-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
        "runtime-env-agent-port", "metrics-export-port"))
    out = tmp_path / "out"
    env.update(EXP=str(tiny(arena, tmp_path)), OUT=str(out), SLURM_JOB_NODELIST="node1", SLURM_JOB_ID="42",
               SLURM_CPUS_PER_TASK="1", RAY_PORT=str(port), RAY_TEMP_DIR=str(temp / "t"), RAY_START_ARGS=extra)
    proc = subprocess.Popen(["bash", str(SLURM / "ray-cluster.sbatch")], env=env, cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=budget(180))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        left = holders(temp)
        for pid in left:  # whatever the script left, stopped here (it is ours): then reported
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 0, stderr[-3000:]
    assert "t: complete, 14/14 runs" in stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert re.fullmatch(rf"[\d.]+:{port}", manifest["engine"]["address"]) and manifest["engine"]["workers"] == 1
    assert not left, f"Ray processes left running: {left}"
    shutil.rmtree(temp, ignore_errors=True)


def test_the_files_the_cluster_guide_names_exist() -> None:
    """It named configs/paper/gama.toml, which never existed."""
    guide = (REPO / "docs" / "scale.md").read_text()
    named = set(re.findall(r"(?:configs|docs/examples)/[\w./-]+\.(?:toml|sbatch|sh)", guide))
    assert {"docs/examples/slurm/shards.sbatch", "docs/examples/slurm/merge.sbatch", "docs/examples/slurm/submit.sh",
            "docs/examples/slurm/ray-cluster.sbatch"} <= named
    assert [n for n in sorted(named) if not (REPO / n).is_file()] == []
