"""The run directory: append-only JSONL records written as things happen, a manifest, and resume.

Every decision and every finished run is one JSON line, flushed at once, so a process killed at any moment
loses at most a line being written. Resume reads the files back: complete runs are kept; decisions of runs
that never completed (killed, or stopped by an exhausted API call) move to ``*.discarded.jsonl`` so nothing
is lost and nothing is counted twice.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from . import SCHEMA_VERSION, __version__

DECISIONS = "decisions.jsonl"
RUNS = "runs.jsonl"
# `agents` values in run records that call no model API (the Host's baselines, and imported runs)
BASELINE_AGENTS = frozenset({"rational", "random", "scripted", "level_k", "policy", "human", "imported"})
MANIFEST = "manifest.json"
JUDGE_LOG = "judge.jsonl"  # the judge model's calls (games with judged payoffs), apart from player decisions
STEERING = "steering.jsonl"  # one record per steered game: action values and CFR metrics
CONFIG = "config.toml"
FLUSH_S = 0.25  # decisions of an unfinished run are redone on resume (LLM replies come from the cache)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class LogError(ValueError):
    """A log line that parses as JSON but is not a record of the kind the file holds (edited by hand)."""


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def record_problem(rec: Any, kind: str) -> str | None:
    """Why ``rec`` is not a well-formed ``kind`` ("runs" or "decisions") record, or None.

    Only what the readers index on is checked, so an older or newer field set still reads.
    """
    if not isinstance(rec, dict):
        return f"expected a JSON object, got {type(rec).__name__}"
    if not isinstance(rec.get("lineup", "melee"), str):
        return "'lineup' must be a string"
    for key in ("session", "run") + (("player",) if kind == "decisions" else ()):
        if not _is_int(rec.get(key)):
            return f"'{key}' must be an integer >= 0 (got {json.dumps(rec.get(key))[:40]})"
    if kind == "decisions":
        return None if isinstance(rec.get("label"), str) else "'label' must be a string"
    labels = rec.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        return "'labels' must be a non-empty list of strings"
    if rec.get("complete", True):
        for key in ("payoffs", "ne_payoffs", "valid", "deviation"):
            if key == "ne_payoffs" and rec.get(key) is None:
                continue  # a game without a declared equilibrium
            if not isinstance(rec.get(key), list) or len(rec[key]) != len(labels):
                return f"'{key}' must be a list with one entry per label"
        if not isinstance(rec.get("winners"), list) or not all(_is_int(w) for w in rec["winners"]):
            return "'winners' must be a list of seat numbers"
        for key in ("payoffs", "ne_payoffs"):  # None: unknown (imported) or no equilibrium
            if not all(x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))
                       for x in rec.get(key) or ()):
                return f"'{key}' must hold numbers"
    return None


@dataclass
class BadLine:
    """A line that could not be used: kept verbatim so resume can move it aside instead of losing it."""

    number: int
    text: str
    why: str

    def to_record(self) -> dict[str, Any]:
        return {"unreadable_line": self.number, "why": self.why, "text": self.text}


def scan_jsonl(path: Path, kind: str | None = None) -> tuple[list[dict[str, Any]], list[BadLine]]:
    """Records and unusable lines (not JSON, torn by a kill, or with ``kind`` the wrong shape)."""
    if not path.exists():
        return [], []
    out: list[dict[str, Any]] = []
    bad: list[BadLine] = []
    with path.open(encoding="utf-8", errors="surrogateescape") as fh:
        for number, line in enumerate(fh, 1):
            text = line.rstrip("\n")
            if not line.endswith("\n"):
                if text.strip():
                    bad.append(BadLine(number, text, "torn last line (the process died mid-write)"))
                break
            if not text.strip():
                continue
            try:
                rec = json.loads(text)
            except (ValueError, RecursionError):
                bad.append(BadLine(number, text, "not JSON"))
                continue
            problem = record_problem(rec, kind) if kind else None
            if problem:
                bad.append(BadLine(number, text, problem))
            else:
                out.append(rec)
    return out, bad


def read_jsonl(path: Path, *, warn: bool = False, kind: str | None = None,
               strict: bool = False) -> list[dict[str, Any]]:
    """Read records, skipping a torn last line left by a killed process.

    A line that is not JSON (edited by hand, a full disk) is skipped too; with ``warn`` it is reported
    on stderr with its line number, so data never vanishes silently. With ``kind`` each record's shape is
    checked: ``strict`` raises :class:`LogError` on a wrong-shape line (the analysis must not guess),
    otherwise it is skipped like an unreadable one.
    """
    out, bad = scan_jsonl(path, kind)
    torn = [b for b in bad if b.why.startswith("torn")]
    shape = [b for b in bad if b.why != "not JSON" and b not in torn]
    if shape and strict:
        b = shape[0]
        raise LogError(f"{path}: line {b.number}: not a {kind} record: {b.why}; fix or delete the line "
                       "(run --resume moves such lines to a .discarded.jsonl file)")
    skipped = [b.number for b in bad if b not in torn]
    if skipped and warn:
        shown = ", ".join(map(str, skipped[:10])) + (" ..." if len(skipped) > 10 else "")
        print(f"econarena: warning: {path}: skipped {len(skipped)} unreadable line(s): {shown}", file=sys.stderr)
    return out


def run_key(rec: dict[str, Any]) -> tuple[str, int, int]:
    return (rec.get("lineup", "melee"), int(rec["session"]), int(rec["run"]))


def complete_runs(runs: list[dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, Any]]:
    """The complete runs by (lineup, session, run); the first record of a run wins, so none counts twice."""
    out: dict[tuple[str, int, int], dict[str, Any]] = {}
    for r in runs:
        if r.get("complete", True):
            out.setdefault(run_key(r), r)
    return out


@dataclass
class ResumeState:
    """What earlier attempts finished: complete runs and the decisions that belong to them."""

    runs: dict[tuple[str, int, int], dict[str, Any]] = field(default_factory=dict)
    decisions_per_seat: dict[tuple[str, int, int], int] = field(default_factory=lambda: defaultdict(int))
    _by_session: dict[tuple[str, int], list[dict[str, Any]]] | None = field(default=None, repr=False)

    def session_runs(self, lineup: str, session: int) -> list[dict[str, Any]]:
        """A session's complete runs in run order (indexed once: resuming 10k sessions stays linear)."""
        if self._by_session is None:
            self._by_session = defaultdict(list)
            for (lu, sess, _), r in sorted(self.runs.items(), key=lambda kv: kv[0][2]):
                self._by_session[(lu, sess)].append(r)
        return list(self._by_session.get((lineup, session), ()))


def runnable_prefix(complete: dict[tuple[str, int, int], dict[str, Any]]) -> set[tuple[str, int, int]]:
    """The complete runs a resume may keep: per session only runs 0..k-1 without a gap.

    A run after a missing one was played with that run in its history and after its decisions; replaying
    the missing run alone would give it another history and other decision indices, so the later runs are
    replayed too (an LLM's replies come back from the cache: same coordinates, same sample).
    """
    by_session: dict[tuple[str, int], set[int]] = defaultdict(set)
    for lu, sess, run in complete:
        by_session[(lu, sess)].add(run)
    keep = set()
    for (lu, sess), runs in by_session.items():
        k = 0
        while k in runs:
            keep.add((lu, sess, k))
            k += 1
    return keep


class RunDirectoryBusy(Exception):
    """Another live process holds the run directory's lock."""


LOCK = ".lock"


class RunDirectory:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._dec: TextIO | None = None
        self._runs: TextIO | None = None
        self._last_flush = 0.0
        self._lock: TextIO | None = None
        self._extra: dict[str, TextIO] = {}
        self.manifest: dict[str, Any] = {}

    def lock(self) -> None:
        """Hold an exclusive lock on the directory while this process writes it.

        ``flock`` belongs to the open file: the kernel drops it when the process dies, however it dies, so
        a killed run never leaves a stale lock. The file also names the holder, for the error message.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        fh = (self.path / LOCK).open("a+", encoding="utf-8")
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, as before
            self._lock = fh
            return
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown process"
            fh.close()
            raise RunDirectoryBusy(f"{self.path} is in use by another econarena process ({holder}); wait for "
                                   "it to finish or stop it, or use another --out") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"PID {os.getpid()} on {socket.gethostname()}, since {now_iso()}\n")
        fh.flush()
        self._lock = fh

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing the file releases the flock
            self._lock = None

    def start(self, config_text: str, seed: int, experiment: str, resume: bool) -> ResumeState:
        self.path.mkdir(parents=True, exist_ok=True)
        state = ResumeState()
        old = self.read_manifest() if resume else {}
        if resume:
            state = self._clean_for_resume()
        if old:
            self.manifest = {**old, "status": "running", "resumed_at": now_iso(),
                             "resumes": int(old.get("resumes", 0)) + 1}
        else:  # a new directory (--resume on one that never started begins a normal run)
            self.manifest = {"schema_version": SCHEMA_VERSION, "econarena_version": __version__,
                             "experiment": experiment, "seed": seed, "started_at": now_iso(),
                             "status": "running"}
        write_atomic(self.path / CONFIG, config_text)
        self.write_manifest()
        self._dec = (self.path / DECISIONS).open("a", encoding="utf-8")
        self._runs = (self.path / RUNS).open("a", encoding="utf-8")
        return state

    def read_manifest(self) -> dict[str, Any]:
        try:
            return json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def write_manifest(self, **updates: Any) -> None:
        self.manifest.update(updates)
        write_atomic(self.path / MANIFEST, json.dumps(self.manifest, indent=2) + "\n")

    def _clean_for_resume(self) -> ResumeState:
        """Keep each session's complete runs up to the first gap, and their decisions; move the rest aside.

        Lines that cannot be read (not JSON, torn, wrong shape) go to the ``*.discarded.jsonl`` files
        verbatim, so nothing is lost and the replayed runs get the coordinates, decision indices and
        history an uninterrupted run gave them.
        """
        runs, bad_runs = scan_jsonl(self.path / RUNS, "runs")
        decisions, bad_dec = scan_jsonl(self.path / DECISIONS, "decisions")
        for name, bad in ((RUNS, bad_runs), (DECISIONS, bad_dec)):
            shown = [b.number for b in bad if not b.why.startswith("torn")]
            if shown:
                print(f"econarena: warning: {self.path / name}: {len(shown)} unreadable line(s) "
                      f"({', '.join(map(str, shown[:10]))}{' ...' if len(shown) > 10 else ''}) moved to "
                      f"{name.replace('.jsonl', '.discarded.jsonl')}", file=sys.stderr)
        complete = complete_runs(runs)
        keys = runnable_prefix(complete)
        complete = {k: r for k, r in complete.items() if k in keys}
        keep_runs = [r for r in runs if complete.get(run_key(r)) is r]  # file order: a no-op resume rewrites nothing
        drop_runs = [r for r in runs if complete.get(run_key(r)) is not r]
        keep_dec, drop_dec = [], []
        for d in decisions:
            (keep_dec if run_key(d) in complete else drop_dec).append(d)
        state = ResumeState(runs=complete)
        if all(isinstance(r.get("decisions"), list) for r in keep_runs):
            for r in keep_runs:  # exact even when a decision line of a kept run was unreadable
                for seat, n in enumerate(r["decisions"]):
                    state.decisions_per_seat[(r.get("lineup", "melee"), int(r["session"]), seat)] += int(n)
        else:  # logs written before runs recorded their decision counts
            for d in keep_dec:
                state.decisions_per_seat[(d.get("lineup", "melee"), int(d["session"]), int(d["player"]))] += 1
        logs = [(RUNS, keep_runs, drop_runs, bad_runs), (DECISIONS, keep_dec, drop_dec, bad_dec)]
        if (self.path / JUDGE_LOG).exists():  # a judge's calls belong to runs too: a replayed run calls it again
            judged, bad_judge = scan_jsonl(self.path / JUDGE_LOG)
            keep_j: list[dict[str, Any]] = []
            drop_j: list[dict[str, Any]] = []
            for j in judged:
                if not (isinstance(j, dict) and _is_int(j.get("session")) and _is_int(j.get("run"))):
                    bad_judge.append(BadLine(0, json.dumps(j), "not a judge call of a run"))
                else:
                    (keep_j if run_key(j) in complete else drop_j).append(j)
            logs.append((JUDGE_LOG, keep_j, drop_j, bad_judge))
        for name, keep, drop, bad in logs:
            lines = [json.dumps(r) + "\n" for r in drop] + [json.dumps(b.to_record()) + "\n" for b in bad]
            if lines:
                with (self.path / name.replace(".jsonl", ".discarded.jsonl")).open("a", encoding="utf-8") as fh:
                    fh.writelines(lines)
                    fh.flush()
                    os.fsync(fh.fileno())
            write_atomic(self.path / name, "".join(json.dumps(r) + "\n" for r in keep))
        return state

    def decision(self, rec: dict[str, Any]) -> None:
        """Buffered; flushed at least every FLUSH_S and always before the run record that needs it."""
        assert self._dec is not None
        self._dec.write(_dumps_record(rec))
        now = time.monotonic()
        if now - self._last_flush > FLUSH_S:
            self._dec.flush()
            self._last_flush = now

    def run(self, rec: dict[str, Any]) -> None:
        """A run record is written only after its decisions reached the OS, so a kill never orphans it."""
        assert self._runs is not None and self._dec is not None
        self._dec.flush()
        self._runs.write(json.dumps(rec) + "\n")
        self._runs.flush()

    def append(self, name: str, rec: dict[str, Any]) -> None:
        """One line of another log of the directory (``judge.jsonl``, ``steering.jsonl``), flushed at once."""
        fh = self._extra.get(name)
        if fh is None:
            fh = self._extra[name] = (self.path / name).open("a", encoding="utf-8")
        fh.write(_dumps_record(rec))
        fh.flush()

    def lines(self, decisions: str, appends: list[tuple[str, str]], run: str | None) -> None:
        """Records already encoded as JSON lines (by :func:`encode_record`, in a Ray worker): a run's
        decisions, its lines of other logs, then its record, in the order and with the flushes that
        :meth:`decision`, :meth:`append` and :meth:`run` give them."""
        assert self._runs is not None and self._dec is not None
        if decisions:
            self._dec.write(decisions)
        for name, text in appends:
            fh = self._extra.get(name)
            if fh is None:
                fh = self._extra[name] = (self.path / name).open("a", encoding="utf-8")
            fh.write(text)
            fh.flush()
        if run is not None:
            self._dec.flush()
            self._runs.write(run)
            self._runs.flush()
        elif decisions and time.monotonic() - self._last_flush > FLUSH_S:
            self._dec.flush()
            self._last_flush = time.monotonic()

    def close(self) -> None:
        try:
            for fh in (self._dec, self._runs, *self._extra.values()):
                if fh is not None:
                    fh.close()
        finally:
            self._dec = self._runs = None
            self._extra = {}


def encode_run(rec: dict[str, Any]) -> str:
    """A run record's line, exactly as :meth:`RunDirectory.run` writes it."""
    return json.dumps(rec) + "\n"


def encode_record(rec: dict[str, Any]) -> str:
    """A decision's (or another log's) line, exactly as :meth:`RunDirectory.decision` writes it."""
    return _dumps_record(rec)


def _dumps_record(rec: dict[str, Any]) -> str:
    """One JSON line, always: a reply's extras that cannot be written (too deep) become their repr."""
    try:
        return json.dumps(rec) + "\n"
    except (ValueError, TypeError, RecursionError):
        safe = {**rec, "extras": repr(rec.get("extras"))[:2000]}
        return json.dumps(safe, default=repr) + "\n"


def game_name(run_dir: str | Path) -> str | None:
    """The game a run directory played, from its config.toml; None when unreadable."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        cfg = tomllib.loads((Path(run_dir) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    exp = cfg.get("experiment")
    name = exp.get("game") if isinstance(exp, dict) else None
    return name if isinstance(name, str) else None
