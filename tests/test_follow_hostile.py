"""The follower of a run (analysis/follow.py) started the way hostile shells start commands: with standard
input closed, the lock a report waits on must still be held by the follower while it follows."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

STARTER = """
import sys, time
from pathlib import Path
from econarena.cli.common import start_follower
p = start_follower(Path(sys.argv[1]))
print(p.pid if p is not None else 0, flush=True)
time.sleep(60)
"""


def _locked(path: Path) -> bool:
    """Whether another process holds ``path``'s exclusive flock."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_a_run_with_stdin_closed_hands_its_follower_the_lock(tmp_path: Path) -> None:
    from econarena.analysis import columnar

    env = {**os.environ, "ECONARENA_COLUMNS": str(tmp_path / "columns"), "ECONARENA_FOLLOW": "on"}
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path / "run")], env=env,
                               stdout=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(0))
    try:
        assert starter.stdout is not None
        pid = int(starter.stdout.readline())
        assert pid > 0
        lock = tmp_path / "columns" / f"{columnar._digest_of(tmp_path / 'run')}.follow"
        assert _locked(lock), "the follower does not hold the lock: a report would not wait for its copy"
    finally:
        starter.kill()
        starter.wait()
    deadline = time.monotonic() + 30  # the starter held the pipe: its death ends the follower
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid), "the follower outlived the process that started it"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
