"""The one lock a process holds on a folder it writes (a run directory, an import's ``--out``).

filelock takes an exclusive ``flock`` on a file in the folder, without waiting: the lock belongs to the open
file, so the kernel drops it when the process dies, however it dies, and a killed writer never leaves a stale
lock. The file keeps its path on release and holds one line naming the holder, so whoever is refused can say
who holds it.
"""

from __future__ import annotations

import os
from pathlib import Path

from filelock import FileLock, Timeout

HOLDER_BYTES = 200  # the most of a holder's line that is read back: a line we wrote, or a file's start


class LockBusy(Exception):
    """Another live process holds the lock; ``holder`` is the line it wrote ("" when it wrote none yet)."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(f"{path} is held by {holder or 'another process'}")
        self.path, self.holder = path, holder


def _holder_line(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            return fh.read(HOLDER_BYTES).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def take(path: Path, holder: str) -> FileLock:
    """Hold the lock at ``path`` (created if need be) and write ``holder`` into it; :class:`LockBusy` when a
    live process holds it. Release with ``.release()`` on the returned lock."""

    def write_holder(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (holder.rstrip("\n") + "\n").encode("utf-8"))

    lock = FileLock(path, timeout=0, thread_local=False, preserve_lock_file=True, on_acquired=write_holder)
    try:
        lock.acquire()
    except Timeout:
        raise LockBusy(path, _holder_line(path)) from None
    return lock


def holder_of(path: Path) -> str | None:
    """The line of the live process holding the lock at ``path``, or None when none does. Reads only: the
    file is opened read-only and never created or changed (a merge must not touch a shard's files)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: the lock is filelock's own kind, not probed here
        return None
    try:
        fh = path.open("rb")
    except OSError:
        return None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return fh.read(HOLDER_BYTES).decode("utf-8", "replace").strip() or "a live process"
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return None


def lock_descriptor(fd: int, *, shared: bool = False) -> bool:
    """Take a lock on an open descriptor without waiting: True when taken, False when another process holds
    it (or the system has no ``flock``). For a lock handed to a child process with its descriptor (the columnar
    follower), which a lock object of one process cannot be."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return False
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError:
        return False
    return True
