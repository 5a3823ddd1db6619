"""A columnar copy of each finished run directory, so a second read of its logs needs no JSON and no
per-record Python: what each reader of the scan (``analysis/scan.py``) kept of the directory, as Parquet.

Why: a report spends most of its reading time turning JSON lines into the rows and columns its readers
keep (57,600 GLEE games: 8 of 18 s). What they keep of one directory depends on that directory alone (its
logs, its config.toml and manifest), so it is written once, the first time a finished directory is read,
and read back with Arrow and DuckDB afterwards (``INSERT ... FROM read_parquet``, numpy on the columns).

Never a second source of truth: the copy is keyed on each source file's size, modification time, inode,
device and status-change time (ctime, which no user tool sets back: a same-size edit with ``touch -r``
restoring the mtime still changes it) and a digest of its first and last 64 KB (runs.jsonl,
decisions.jsonl, config.toml, manifest.json), on this module's format and on each reader's own version;
any change and it is read from the logs again (and the copy rewritten). A copy folder is used only when it
is a real folder (no link), owned by this user and writable by no one else, its meta.json and files no
links and this user's: a copy planted there by anyone else is read as absent, and the logs are read.

Only finished directories get a copy (manifest status ``complete``), only when a directory is read whole
and alone (no run shared with another directory of the inputs), and never when the reading warned (an
unreadable line: the warning must show again). Copies live outside the run directory, under
``$ECONARENA_COLUMNS`` (``off``: none), else ``$ECONARENA_CACHE_DIR/columns``, else the user cache
directory: a run directory is never written by a reader, and may be read-only.

Layout: ``<root>/<digest of the directory's resolved path>/meta.json`` (the source key and, per reader,
its version, small facts and each of its files' size and digest) beside one Parquet file per table a reader
saved (``<reader>.<table>.parquet``). A part whose file is missing, of another size or digest (a damaged
disk, a hand edit, a file half copied) is absent: the logs are read again and the part rewritten, as they
are when the logs change; checking the digests of 587,400 games' copies takes about 0.1 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from ..formats.files import FileRefused, open_regular
from ..formats.locks import lock_descriptor
from ..formats.rundir import CONFIG, DECISIONS, MANIFEST, RUNS, write_atomic

FORMAT = 3  # bump when the layout changes: every older copy is then read as absent (3: inode, device, ctime)
EDGE = 64 * 1024  # bytes of each end of a log in its digest
META = "meta.json"


def root() -> Path | None:
    """Where copies live; None when turned off (``ECONARENA_COLUMNS=off``)."""
    env = os.environ.get("ECONARENA_COLUMNS", "").strip()
    if env.lower() in ("off", "0", "no", "false"):
        return None
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("ECONARENA_CACHE_DIR", "").strip()
    if cache:
        return Path(cache).expanduser() / "columns"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("econarena")) / "columns"


def file_digest(path: Path) -> list[Any] | None:
    """(size, blake2b of the whole file) of a copy's file; None when it is absent or no regular file."""
    h = hashlib.blake2b(digest_size=16)
    try:
        with open_regular(path) as fh:
            size = 0
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
    except (OSError, FileRefused):
        return None
    return [size, h.hexdigest()]


def _file_key(path: Path) -> list[Any] | None:
    """(size, mtime, ctime in ns, inode, device, digest of the first and last EDGE bytes) of a file; None when
    it is absent."""
    try:
        with open_regular(path) as fh:  # a FIFO or a device in a log's place: no key (the read refuses it)
            st = os.fstat(fh.fileno())
            head = fh.read(EDGE)
            if st.st_size > 2 * EDGE:
                fh.seek(st.st_size - EDGE)
            tail = fh.read(EDGE) if st.st_size > EDGE else b""
    except (OSError, FileRefused):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev,
            hashlib.blake2b(head + b"|" + tail, digest_size=16).hexdigest()]


def _own(path: Path, folder: bool) -> bool | None:
    """Whether ``path`` is this user's own, not a link (a folder: a real one that no one else may write);
    None when it does not exist."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
        return False
    if not folder:
        return stat.S_ISREG(st.st_mode)
    # (Windows reports every folder as writable by all: there the owner's ACL decides, not these bits)
    return stat.S_ISDIR(st.st_mode) and (os.name == "nt" or not st.st_mode & 0o022)


def source_key(run_dir: Path) -> dict[str, Any]:
    return {"format": FORMAT, "path": str(run_dir.resolve()),
            **{name: _file_key(run_dir / name) for name in (RUNS, DECISIONS, CONFIG, MANIFEST)}}


class Copy:
    """The copy of one directory: which readers it holds (``has``), their tables and facts (``table``,
    ``info``), and the writing of a reader's part (``put``). A part written under another source key
    (the logs changed since) is never read: the first ``put`` under the new key clears the folder."""

    def __init__(self, run_dir: Path, folder: Path, finished: bool) -> None:
        self.run_dir, self.folder, self.finished = run_dir, folder, finished
        self.key = source_key(run_dir)
        self.meta: dict[str, Any] = {}
        self.grouped = False  # a shard's copy among its experiment's others (the scan reads it as one of them)
        self._checked: dict[str, bool] = {}  # part -> whether its files are whole (digests checked once)
        meta = self._meta()
        if isinstance(meta, dict) and meta.get("source") == self.key and isinstance(meta.get("parts"), dict):
            self.meta = meta

    def _meta(self) -> Any:
        """The folder's meta.json, when the folder and the file are this user's own and no links; else None."""
        if not (_own(self.folder, True) and _own(self.folder / META, False)):
            return None
        try:
            return json.loads((self.folder / META).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _reload(self) -> None:
        """The parts another process wrote meanwhile (a report beside an ``analyze``), kept when writing."""
        meta = self._meta()
        if isinstance(meta, dict) and meta.get("source") == self.key and isinstance(meta.get("parts"), dict):
            meta["parts"].update(self.meta.get("parts", {}))
            self.meta = meta

    def has(self, name: str, version: str) -> bool:
        """Whether the copy holds this reader's part at this version, every file of it whole."""
        part = self.meta.get("parts", {}).get(name)
        if not (isinstance(part, dict) and part.get("version") == version and isinstance(part.get("files"), dict)):
            return False
        if name not in self._checked:
            self._checked[name] = all(_own(self.path(name, table), False)
                                      and file_digest(self.path(name, table)) == want
                                      for table, want in part["files"].items())
        return self._checked[name]

    def unchanged(self, name: str, table: str, path: Path) -> bool:
        """Whether ``path`` (a snapshot of a table's file) holds the file the part recorded."""
        part = self.meta.get("parts", {}).get(name, {})
        return file_digest(path) == part.get("files", {}).get(table)

    def info(self, name: str) -> dict[str, Any]:
        return self.meta["parts"][name]["info"]

    def path(self, name: str, table: str) -> Path:
        return self.folder / f"{name}.{table}.parquet"

    def table(self, name: str, table: str) -> Any:
        import pyarrow.parquet as pq

        return pq.read_table(self.path(name, table))

    @property
    def writable(self) -> bool:
        """Whether a part may be written: a finished directory whose logs have not changed since it was
        opened (a run still appending, a resume meanwhile: nothing is written)."""
        return self.finished and source_key(self.run_dir) == self.key

    def put(self, name: str, version: str, tables: dict[str, Any], info: dict[str, Any]) -> None:
        """Write a reader's part: ``tables`` maps a table name to an Arrow table, or to a function that writes
        the file at the path it is given (the store's engine writes its own). Failures leave no part."""
        import pyarrow.parquet as pq

        if not self.writable:
            return
        try:
            self._reload()
            if self.meta.get("source") != self.key or not _own(self.folder, True):
                if self.folder.is_symlink():  # a link in a copy's place: removed, never written through
                    self.folder.unlink()
                shutil.rmtree(self.folder, ignore_errors=True)
                self.meta = {"source": self.key, "parts": {}}
            self.folder.parent.mkdir(parents=True, exist_ok=True)
            self.folder.mkdir(mode=0o700, exist_ok=True)
            if not _own(self.folder, True):  # another user's folder that could not be removed: no copy
                return
            files = {}
            for table, value in tables.items():
                target = self.path(name, table)
                tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
                if callable(value):
                    value(tmp)
                else:
                    pq.write_table(value, tmp)
                files[table] = file_digest(tmp)
                os.replace(tmp, target)
            self.meta["parts"][name] = {"version": version, "info": info, "files": files}
            self._checked[name] = True
            write_atomic(self.folder / META, json.dumps(self.meta))
        except Exception as exc:  # noqa: BLE001 - a full disk, a read-only cache, the engine's own I/O error: a
            self.meta.get("parts", {}).pop(name, None)  # copy must never fail a read; the logs are read next time
            for tmp in self.folder.glob(f"{name}.*.{os.getpid()}.tmp"):
                tmp.unlink(missing_ok=True)
            if engine_interrupted(exc):  # but Ctrl-C while the engine wrote it still stops the command
                raise KeyboardInterrupt from exc


def engine_interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB's answer to a SIGINT during a query: it catches the KeyboardInterrupt that
    Python's handler raised and raises ``RuntimeError('Query interrupted')`` (or its InterruptException for
    ``interrupt()``), which would otherwise end the command with a traceback and 1 instead of 130."""
    if type(exc).__name__ == "InterruptException" and type(exc).__module__.lstrip("_").startswith("duckdb"):
        return True
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"


def _digest_of(run_dir: Path) -> str:
    return hashlib.blake2b(str(run_dir.resolve()).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


def open_copy(run_dir: Path, manifest: dict[str, Any]) -> Copy | None:
    """The directory's copy (existing or to be written), or None when copies are off."""
    base = root()
    if base is None:
        return None
    return Copy(run_dir, base / _digest_of(run_dir), manifest.get("status") == "complete")


# The copy written as the run plays (analysis/follow.py): the follower holds an exclusive lock on
# ``<root>/<digest>.follow`` from before the run starts until its copy is written, so a report of the finished
# directory waits for that copy instead of parsing the logs and writing it a second time.
FOLLOW_WAIT_S = 600.0  # a follower that takes longer: the report reads the logs


def follower_lock(run_dir: Path) -> int | None:
    """An open descriptor of the directory's follower lock, locked exclusively (for the process that follows
    the run); None when copies are off, the cache is not writable or not this user's own, or not POSIX."""
    base = root()
    if base is None or os.name != "posix":  # not POSIX: no follower, copies are written on the first read
        return None
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _own(base, True):
            return None
        path = base / f"{_digest_of(run_dir)}.follow"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return None
    if not _own(path, False) or not lock_descriptor(fd):  # another run's follower still writing: none here
        os.close(fd)
        return None
    if fd < 3:  # stdin/stdout/stderr closed: 0-2 become the child's own streams, the lock closed there
        import fcntl

        try:
            high = fcntl.fcntl(fd, fcntl.F_DUPFD, 3)  # the same open file: the lock goes with it
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = high
    return fd


def wait_for_follower(run_dir: Path, timeout: float = FOLLOW_WAIT_S) -> None:
    """Wait while a follower of ``run_dir`` still writes its copy (it holds the lock); at most ``timeout``."""
    import time

    base = root()
    if base is None:
        return
    path = base / f"{_digest_of(run_dir)}.follow"
    if not (_own(base, True) and _own(path, False)):  # a follower of ours never locks there: a lock made by
        return  # someone else must not hold the report up
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        deadline = time.monotonic() + timeout
        while True:
            if lock_descriptor(fd, shared=True) or time.monotonic() > deadline:
                return
            time.sleep(0.05)
    finally:
        os.close(fd)
