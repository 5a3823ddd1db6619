"""The columnar copy of a run directory written while the run plays, so the first report reads no JSON.

Why: a report's first read of a finished directory parsed every log line and fed it to the scan's readers
(57,600 GLEE games: about 8 of 18 s), then wrote the copy (``analysis/columnar.py``) that made every later
report fast. Here a process of its own follows the logs as ``econarena run`` appends them, feeds each new
record to the same readers the report uses (``report.report_collectors`` and the store) and, once the run
ends with its manifest ``complete``, writes their parts into the directory's copy, under the same source
key the report checks. The run itself does none of this work (it only starts this process), and a report
started meanwhile waits for the copy (``columnar.wait_for_follower``) instead of parsing the logs.

Never a second source of truth. The copy is written only when what was followed is the logs whole: the
same files (inode) from their first byte to their last, every line a record (no torn, unreadable or
refused line), no run recorded twice, every complete run with its decisions, the manifest ``complete``,
and nothing said on stderr while reading (a reader's warning must show on every read). Anything else and
no copy is written: the first report reads the logs and writes it, as before. A resume rewrites the logs
before it appends (new files): the follower starts over on the new files. A run killed by any signal
closes the pipe this process waits on: the manifest is then not ``complete`` and nothing is written.

Records are fed in the order the scan feeds them where it matters: each run record when it is read (the
scan's first pass, in file order), each decision in file order once its run's record is read (the scan's
second pass keeps only decisions of complete runs; a decision whose run has no record yet waits). The
readers keep separate tables for runs and decisions, so the copy's rows are those the scan writes
(tests/test_follow.py compares the report from this copy with the report from the logs).

Run as ``python -m econarena.analysis.follow RUN_DIR LOCK_FD`` by ``cli_run.start_follower``, its standard
input a pipe from the run (closed when the run ends, however it ends), ``LOCK_FD`` the lock it holds while
it works.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..formats.files import open_regular
from ..formats.rundir import DECISIONS, MANIFEST, RUNS, record_of

POLL_S = 0.2  # how often the logs are read while the run plays
MAX_WAITING = 500_000  # decisions waiting for their run's record: more and the copy is given up (memory)


class GiveUp(Exception):
    """The logs are not what a copy may stand for (see the module doc): no copy is written."""


class Restart(Exception):
    """A log was replaced (a resume rewrote it): follow the new files from their start."""


class Tail:
    """One log followed as it grows: complete lines only, the file kept open (its inode fixed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: IO[bytes] | None = None
        self.rest = b""
        self.read = 0  # bytes consumed, complete lines only
        self.number = 0  # the last line's number, as iter_records counts (blank lines included)

    def lines(self) -> list[tuple[int, bytes]]:
        """The complete lines appended since the last call, numbered."""
        if self.fh is None:
            try:
                self.fh = open_regular(self.path)
            except FileNotFoundError:
                return []
            self.inode = os.fstat(self.fh.fileno()).st_ino
        try:
            if os.stat(self.path).st_ino != self.inode:
                raise Restart
        except FileNotFoundError:
            raise Restart from None
        data = self.fh.read()
        if not data:
            return []
        data, self.rest = self.rest + data, b""
        end = data.rfind(b"\n") + 1
        data, self.rest = data[:end], data[end:]
        self.read += end
        out = []
        for line in data[:-1].split(b"\n"):  # lines end at b"\n" alone, as a file's lines do for iter_records
            self.number += 1
            if line and not line.isspace():
                out.append((self.number, line + b"\n"))
        return out

    def whole(self) -> bool:
        """Whether every byte of the file now at the path was read, as complete lines."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self.fh is None
        return self.fh is not None and st.st_ino == self.inode and st.st_size == self.read and not self.rest

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


class Follower:
    """The report's readers fed from one run directory as it grows; ``finish`` writes their copy."""

    def __init__(self, run_dir: Path) -> None:
        from .report import report_collectors
        from .scan import Names, read_dirs
        from .store import Store

        self.run_dir = run_dir
        self.d = read_dirs([run_dir])[0]
        self.store = Store(False, copy_only=True)
        self.active = [c for c in [self.store, *report_collectors().values()] if c.begin(self.d)]
        if not all(getattr(c, "copy_name", None) for c in self.active):
            self.store.close()
            raise GiveUp("a reader that keeps no copy")
        self.readers = [c for c in self.active if c.wants_decisions]
        self.runs, self.decisions = Tail(run_dir / RUNS), Tail(run_dir / DECISIONS)
        self.names = Names()
        self.names.add(None)
        self.waiting: deque[tuple[tuple[str, int, int], dict[str, Any]]] = deque()
        self.expected = self.got = 0

    def step(self) -> None:
        """Read what was appended since the last step and feed it."""
        from .scan import key_of

        d, kept = self.d, self.d.kept
        for number, line in self.runs.lines():
            rec = record_of(line, "runs")
            if rec is None:
                raise GiveUp(f"{RUNS}: line {number}")
            self._names(RUNS, number, rec.get("labels"), "labels")
            if rec.get("complete", True):
                key = key_of(rec)
                if key in kept:
                    raise GiveUp(f"run {key} recorded twice")
                kept.add(key)
                per_seat = rec.get("decisions")
                if type(per_seat) is list:
                    with contextlib.suppress(TypeError):
                        self.expected += int(sum(per_seat))
            for c in self.active:
                c.run(d, number, rec)
        for number, line in self.decisions.lines():
            rec = record_of(line, "decisions")
            if rec is None:
                raise GiveUp(f"{DECISIONS}: line {number}")
            self._names(DECISIONS, number, [rec["label"]], "label")
            if rec.get("model") is not None:
                self._names(DECISIONS, number, [rec.get("model")], "model")
            self.waiting.append(((rec.get("lineup", "melee"), rec["session"], rec["run"]), rec))
        self._feed(final=False)
        if len(self.waiting) > MAX_WAITING:
            raise GiveUp("too many decisions wait for their run's record")

    def _names(self, log: str, number: int, names: Any, key: str) -> None:
        from ..formats.rundir import LogError

        if isinstance(names, list) and self.names.issuperset(names):
            return
        try:
            for i, name in enumerate(names if isinstance(names, list) else [names]):
                self.names.check(self.run_dir / log, number, f"{key}[{i}]" if key == "labels" else key, name)
        except (LogError, TypeError):
            raise GiveUp(f"{log}: line {number}: a name the report refuses") from None

    def _feed(self, final: bool) -> None:
        """Decisions in file order, each once its run is known complete; at the end, those of runs never
        recorded complete are left out, as the scan leaves them."""
        kept, waiting, d = self.d.kept, self.waiting, self.d
        while waiting:
            key, rec = waiting[0]
            if key not in kept:
                if not final:
                    return
                waiting.popleft()
                continue
            waiting.popleft()
            self.got += 1
            for c in self.readers:
                c.decision(d, rec)

    def finish(self) -> bool:
        """After the run: the copy written when the logs were followed whole (see the module doc)."""
        from . import columnar
        from .scan import SCAN_PART, SCAN_VERSION, _keys_table, read_dirs

        self.step()
        self._feed(final=True)
        final = read_dirs([self.run_dir])[0]
        if final.manifest.get("status") != "complete" or final.identity != self.d.identity:
            return False
        if not (self.runs.whole() and self.decisions.whole()) or self.got < self.expected:
            return False
        copy = columnar.open_copy(self.run_dir, final.manifest)
        if copy is None or not copy.writable:
            return False
        d = self.d
        d.manifest = final.manifest
        for c in self.active:
            if not copy.has(c.copy_name, c.copy_version):
                c.save(d, copy)
        copy.put(SCAN_PART, SCAN_VERSION, {"keys": _keys_table(d.kept)}, {"inside": 0, "differs": ""})
        for c in self.active:
            c.end(d)
        self.store.finish()  # writes the store's part, once its decision counts are in
        return copy.writable

    def close(self) -> None:
        self.runs.close()
        self.decisions.close()
        self.store.close()


def follow(run_dir: Path, ended: Callable[[float | None], bool]) -> bool:
    """Follow ``run_dir`` until ``ended(timeout)`` says the run is over; True when the copy was written.
    ``ended`` waits up to ``timeout`` seconds for the end (None: until it comes)."""
    from .scan import _Watch

    with _Watch() as watch:
        while True:
            try:
                follower = _start(run_dir, ended)
                if follower is None:
                    return False
                try:
                    while not ended(POLL_S):
                        follower.step()
                    written = follower.finish()
                finally:
                    follower.close()
                return written and not watch.said
            except Restart:
                continue
            except GiveUp:
                ended(None)  # wait for the end: nothing more to do
                return False


def _start(run_dir: Path, ended: Callable[[float | None], bool]) -> Follower | None:
    """The follower, once the run wrote its config and manifest; None when the run ended first."""
    from ..formats.rundir import CONFIG

    while not ((run_dir / CONFIG).exists() and (run_dir / MANIFEST).exists()):
        if ended(POLL_S):
            return None
    return Follower(run_dir)


def _pipe_closed(fd: int) -> Callable[[float | None], bool]:
    """``ended(timeout)`` for a pipe the run holds open while it plays: True once it is closed."""
    def ended(timeout: float | None) -> bool:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return False
        return os.read(fd, 4096) == b"" or ended(0)
    return ended


def main(argv: list[str]) -> int:
    run_dir, _lock = Path(argv[0]), int(argv[1])  # the lock is held by holding the descriptor open
    with contextlib.suppress(OSError, AttributeError):  # the run comes first where cores are short
        os.nice(10)
    from .memory import system_allocator_for_arrow

    system_allocator_for_arrow()  # as the analysis commands: its peak 386 -> 358 MB at 57,600 GLEE games
    try:
        follow(run_dir, _pipe_closed(sys.stdin.fileno()))
    except Exception:  # noqa: BLE001 - a copy is never worth an error: the first report reads the logs
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
