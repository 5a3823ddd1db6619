"""The run directory: append-only JSONL records written as things happen, a manifest, and resume.

Every decision and every finished run is one JSON line, flushed at once, so a process killed at any moment
loses at most a line being written. Resume reads the files back: complete runs are kept; decisions of runs
that never completed (killed, or stopped by an exhausted API call) move to ``*.discarded.jsonl`` so nothing
is lost and nothing is counted twice.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from econarena import SCHEMA_VERSION, __version__

DECISIONS = "decisions.jsonl"
RUNS = "runs.jsonl"
MANIFEST = "manifest.json"
CONFIG = "config.toml"
FLUSH_S = 0.25  # decisions of an unfinished run are redone on resume (LLM replies come from the cache)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_jsonl(path: Path, *, warn: bool = False) -> list[dict[str, Any]]:
    """Read records, skipping a torn last line left by a killed process.

    A corrupt line elsewhere (edited by hand, a full disk) is skipped too; with ``warn`` it is reported
    on stderr with its line number, so data never vanishes silently.
    """
    if not path.exists():
        return []
    out = []
    bad = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                break  # torn write: the process died mid-line
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    bad.append(number)
    if bad and warn:
        shown = ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "")
        print(f"econarena: warning: {path}: skipped {len(bad)} unreadable line(s): {shown}", file=sys.stderr)
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


class RunDirectory:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._dec: TextIO | None = None
        self._runs: TextIO | None = None
        self._last_flush = 0.0
        self.manifest: dict[str, Any] = {}

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
        """Keep complete runs and their decisions; move everything else aside."""
        runs = read_jsonl(self.path / RUNS, warn=True)
        decisions = read_jsonl(self.path / DECISIONS, warn=True)
        complete = complete_runs(runs)
        keep_runs = list(complete.values())
        drop_runs = [r for r in runs if run_key(r) not in complete or complete[run_key(r)] is not r]
        keep_dec, drop_dec = [], []
        for d in decisions:
            (keep_dec if run_key(d) in complete else drop_dec).append(d)
        state = ResumeState(runs=complete)
        for d in keep_dec:
            state.decisions_per_seat[(d.get("lineup", "melee"), int(d["session"]), int(d["player"]))] += 1
        for name, keep, drop in ((RUNS, keep_runs, drop_runs), (DECISIONS, keep_dec, drop_dec)):
            if drop:
                with (self.path / name.replace(".jsonl", ".discarded.jsonl")).open("a", encoding="utf-8") as fh:
                    fh.writelines(json.dumps(r) + "\n" for r in drop)
            write_atomic(self.path / name, "".join(json.dumps(r) + "\n" for r in keep))
        return state

    def decision(self, rec: dict[str, Any]) -> None:
        """Buffered; flushed at least every FLUSH_S and always before the run record that needs it."""
        assert self._dec is not None
        self._dec.write(json.dumps(rec) + "\n")
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

    def close(self) -> None:
        for fh in (self._dec, self._runs):
            if fh is not None:
                fh.close()
        self._dec = self._runs = None
