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


def test_a_report_never_waits_on_a_lock_in_a_folder_others_may_write(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A copies folder that others may write (or own) is never used for copies; a lock file there, held by
    whoever made it, must not hold a report up for the follower's whole wait either."""
    from econarena.analysis import columnar

    base, run = tmp_path / "columns", tmp_path / "run"
    base.mkdir()
    base.chmod(0o777)  # anyone may put a lock file here and hold it
    monkeypatch.setenv("ECONARENA_COLUMNS", str(base))
    lock = base / f"{columnar._digest_of(run)}.follow"
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,sys,time\n"
                               "f=open(sys.argv[1],'w'); fcntl.flock(f, fcntl.LOCK_EX); print(1, flush=True)\n"
                               "time.sleep(60)", str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "1"
        assert _locked(lock)
        assert columnar.follower_lock(run) is None  # no follower of ours would lock here
        start = time.monotonic()
        columnar.wait_for_follower(run, timeout=5)
        assert time.monotonic() - start < 1, "the report waited on a lock in a folder that is not its own"
    finally:
        holder.kill()
        holder.wait()
