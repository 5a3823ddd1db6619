"""The run directory: append-only JSONL records written as things happen, a manifest, and resume.

Every decision and every finished run is one JSON line, flushed at once, so a process killed at any moment
loses at most a line being written. Resume reads the files back: complete runs are kept; decisions of runs
that never completed (killed, or stopped by an exhausted API call) move to ``*.discarded.jsonl`` so nothing
is lost and nothing is counted twice.

Lines are encoded and parsed with orjson, several times faster than the standard library (a 40,000-decision
experiment made 128,000 ``json.dumps`` calls). The content is what ``json.dumps`` wrote, in compact form:
the same keys in the same order and the same numbers (both write the shortest repr of a float, ``1e-07``
as ``1e-7``). What orjson cannot write the standard library does (integers beyond 64 bits, non-string
keys, lone surrogates), and what orjson would read differently the standard library reads (integers of 19
or more digits, the ``NaN``/``Infinity`` tokens of older logs). One difference remains: a non-finite float
in a record is written as ``null`` (valid JSON) where ``json.dumps`` wrote the invalid token ``NaN``; the
games produce none (the conformance tests check every record for strict JSON) and the analysis reads both
as a missing number. Text beyond ASCII is written as UTF-8 (json.dumps escaped it), except U+0085, U+2028
and U+2029, kept as escapes so that every record is one line even for readers that split on them.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import socket
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]  # private, unstubbed
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from .. import SCHEMA_VERSION, __version__
from .files import CONFIG_BYTES, MANIFEST_BYTES, FileRefused, open_regular, read_bytes, read_text
from .gridcells import BASELINE_AGENTS as BASELINE_AGENTS  # defined beside the rule that reads it (the summary's)
from .tally import Tally

if TYPE_CHECKING:
    from filelock import FileLock

DECISIONS = "decisions.jsonl"
RUNS = "runs.jsonl"
MANIFEST = "manifest.json"
JUDGE_LOG = "judge.jsonl"  # the judge model's calls (games with judged payoffs), apart from player decisions
STEERING = "steering.jsonl"  # one record per steered game: action values and CFR metrics
CONFIG = "config.toml"
FLUSH_S = 0.25  # decisions of an unfinished run are redone on resume (LLM replies come from the cache)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write through ``<name>.<pid>-<thread>.tmp`` and a rename: a reader sees the old file or the new, never
    half of one. The .tmp is removed when the write fails (text that is not UTF-8, a full disk), never left
    behind. The pid keeps two processes writing one file apart (two benches into one --out both write the
    baselines' files): with one shared .tmp name, one renamed the other's half-written file into place and
    the other failed."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_native_id()}.tmp")
    try:
        if isinstance(text, bytes):
            tmp.write_bytes(text)
        else:
            tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


_JSON_DEFAULT = json.JSONEncoder().default  # raises json.dumps's own TypeError for what it cannot write


def json_text(obj: Any) -> str:
    """``json.dumps(obj)`` exactly, without the layers it goes through on every call, for text that must
    read as json.dumps wrote it (a baseline's reply, an action column): the C encoder where CPython has it."""
    if c_make_encoder is None:  # pragma: no cover - an interpreter without the _json accelerator
        return json.dumps(obj)
    return "".join(c_make_encoder({}, _JSON_DEFAULT, encode_basestring_ascii, None, ": ", ", ", False, False,
                                  True)(obj, 0))


# JSON lets U+0085, U+2028 and U+2029 stand unescaped inside strings, but Python's str.splitlines(), and
# other readers that split on Unicode line breaks, cut a line there: a model's reply holding one would read
# as two broken records. Written as \u escapes, every record is one line for every reader. In UTF-8 these
# byte sequences can only be those characters (0xC2 and 0xE2 are lead bytes, never inside another).
_BREAKS = ((b"\xc2\x85", b"\\u0085"), (b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def dumps_line(rec: Any) -> bytes:
    """One record as one JSON line (UTF-8, newline included); see the module docstring for the encoding."""
    try:
        data = orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError: an int beyond 64 bits, a non-str key, a surrogate, too deep
        return _dumps_stdlib(rec).encode("utf-8")  # ASCII: json.dumps escapes every non-ASCII character
    if not data.isascii():  # most lines are: one fast pass instead of three searches (~1.5 us per KB each)
        for raw, escaped in _BREAKS:
            if raw in data:
                data = data.replace(raw, escaped)
    return data


def set_aside(path: Path, keep: list[dict[str, Any]], aside: list[dict[str, Any]]) -> None:
    """Append ``aside`` to the log's ``*.discarded.jsonl`` (synced first), then rewrite the log with ``keep``:
    nothing read is lost, and a crash between the two leaves a line in both files, never in neither."""
    if aside:
        with path.with_name(path.name.replace(".jsonl", ".discarded.jsonl")).open("ab") as fh:
            fh.writelines(dumps_line(r) for r in aside)
            fh.flush()
            os.fsync(fh.fileno())
    write_atomic(path, b"".join(dumps_line(r) for r in keep))


def _dumps_stdlib(rec: Any) -> str:
    """One JSON line, always: a reply's extras that cannot be written (too deep) become their repr."""
    try:
        return json.dumps(rec) + "\n"
    except (ValueError, TypeError, RecursionError):
        if not isinstance(rec, dict):
            raise
        safe = {**rec, "extras": repr(rec.get("extras"))[:2000]}
        return json.dumps(safe, default=repr) + "\n"


# orjson reads an integer beyond 64 bits as a float: a line with 19 digits in a row goes to json instead.
# Digits become "0" and all else " ", then one substring search: ten times faster than a regex.
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_NUMBER = b"0" * 19


def loads_line(line: bytes) -> Any:
    """One JSON line as the standard library reads it (orjson where that gives the same value); raises
    ValueError (or RecursionError) when the line is not JSON."""
    return _loads(line)[0]


def _loads(line: bytes) -> tuple[Any, bool]:
    """:func:`loads_line`, and whether the standard library read it (only such a line can hold NaN or an
    infinite number: orjson refuses those tokens and overflowing numbers)."""
    if _LONG_NUMBER not in line.translate(_DIGITS):
        try:
            return orjson.loads(line), False
        except orjson.JSONDecodeError:
            pass  # NaN/Infinity tokens, 1e999, lone surrogates, deep nesting, bad UTF-8: the stdlib decides
    return json.loads(line.decode("utf-8", "surrogateescape")), True


class LogError(ValueError):
    """A log line that parses as JSON but is not a record of the kind the file holds (edited by hand)."""


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


_NUMBER = frozenset((int, float, type(None)))  # a number or null (JSON true/false is no number here)


def record_problem(rec: Any, kind: str) -> str | None:
    """Why ``rec`` is not a well-formed ``kind`` ("runs" or "decisions") record, or None.

    Only what the readers index on is checked, so an older or newer field set still reads.
    """
    if kind == "decisions" and type(rec) is dict:  # the common case, checked in one expression per line
        s, r, p = rec.get("session"), rec.get("run"), rec.get("player")
        ti, to, lat = rec.get("tokens_in"), rec.get("tokens_out"), rec.get("latency_s")
        if (type(s) is int and s >= 0 and type(r) is int and r >= 0 and type(p) is int and p >= 0
                and type(rec.get("label")) is str and type(rec.get("lineup", "melee")) is str
                and (ti is None or (type(ti) in _NUMBER and -RECORD_MAX <= ti <= RECORD_MAX))
                and (to is None or (type(to) in _NUMBER and -RECORD_MAX <= to <= RECORD_MAX))
                and (lat is None or (type(lat) in _NUMBER and -RECORD_MAX <= lat <= RECORD_MAX))):
            return None
    if not isinstance(rec, dict):
        return f"expected a JSON object, got {type(rec).__name__}"
    if not isinstance(rec.get("lineup", "melee"), str):
        return "'lineup' must be a string"
    for key in ("session", "run") + (("player",) if kind == "decisions" else ()):
        if not _is_int(rec.get(key)):
            return f"'{key}' must be an integer >= 0 (got {json.dumps(rec.get(key))[:40]})"
    if kind == "decisions":
        if not isinstance(rec.get("label"), str):
            return "'label' must be a string"
        for key in ("tokens_in", "tokens_out", "latency_s"):  # summed by summary and report alike
            if type(rec.get(key)) not in _NUMBER:
                return f"'{key}' must be a number or null (got {json.dumps(rec.get(key))[:40]})"
        return _big_problem(rec)
    labels = rec.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        return "'labels' must be a non-empty list of strings"
    params = rec.get("params")
    if params is not None and type(params) is not dict:  # the game's parameters, read by name by the analysis
        return f"'params' must be a JSON object of the game's parameters or null (got {type(params).__name__})"
    if rec.get("complete", True):
        for key in ("payoffs", "ne_payoffs", "valid", "deviation"):
            if key == "ne_payoffs" and rec.get(key) is None:
                continue  # a game without a declared equilibrium
            if not isinstance(rec.get(key), list) or len(rec[key]) != len(labels):
                return f"'{key}' must be a list with one entry per label"
        if not isinstance(rec.get("winners"), list) or not all(_is_int(w) for w in rec["winners"]):
            return "'winners' must be a list of seat numbers"
        for key in ("payoffs", "ne_payoffs", "deviation"):  # None: unknown (imported), no equilibrium, no
            if not all(type(x) in _NUMBER for x in rec.get(key) or ()):  # valid move
                return f"'{key}' must hold numbers"
        ratio, score = rec.get("payoff_ratio"), rec.get("score")
        try:  # the summed numbers' extremes, in C: comparisons only (no abs call per number)
            values = [*(rec.get("payoffs") or ()), *(rec.get("ne_payoffs") or ()), *(rec.get("deviation") or ()),
                      *(ratio if type(ratio) is list else ()), *(() if score is None else (score,))]
            big = bool(values) and (max(values) > RECORD_MAX or min(values) < -RECORD_MAX)
        except TypeError:  # a None among them (no equilibrium, no valid move): the slow pass looks
            big = True
        if big and (problem := _big_problem(rec)) is not None:
            return problem  # (NaN and Infinity are refused in their own words by _slow_problem)
        if not all(type(x) is bool for x in rec["valid"]):
            return "'valid' must hold true or false"
        if type(rec.get("score")) not in _NUMBER:
            return f"'score' must be a number or null (got {json.dumps(rec.get('score'))[:40]})"
        metrics = rec.get("metrics")
        return None if metrics is None or (type(metrics) is dict and not metrics) else _metrics_problem(metrics)
    return None


# The largest number a record may hold. Games bound their numbers at 10**12, but a metric derived from two of them
# (GLEE's fairness of a 9e11 price: -3.2e16) legitimately goes beyond; 1e100 leaves such products (and their
# squares, in variances) far from where sums and means of a study's records overflow (payoffs of 1e308 crashed
# summary and wrote inf into metrics.csv). NaN and Infinity are refused apart (_slow_problem), with their own words.
RECORD_MAX = 1e100


def _beyond(x: Any, key: str) -> str | None:
    if type(x) in (int, float) and abs(x) > RECORD_MAX and math.isfinite(x):
        return f"'{key}' is {str(x)[:40]}, beyond the {RECORD_MAX:.0e} no game writes (sums of it overflow)"
    return None


def _big_problem(rec: dict[str, Any]) -> str | None:
    """The first summed number of a record beyond RECORD_MAX, named (called when a cheap pass found one)."""
    for key in ("payoffs", "ne_payoffs", "deviation", "payoff_ratio"):
        values = rec.get(key)
        for i, x in enumerate(values if type(values) is list else ()):
            if (problem := _beyond(x, f"{key}[{i}]")) is not None:
                return problem
    for key in ("score", "tokens_in", "tokens_out", "latency_s"):
        if (problem := _beyond(rec.get(key), key)) is not None:
            return problem
    metrics = rec.get("metrics")
    for name, v in metrics.items() if type(metrics) is dict else ():
        for j, x in enumerate(v if type(v) is list else (v,)):
            if (problem := _beyond(x, f"metrics.{name}" + (f"[{j}]" if type(v) is list else ""))) is not None:
                return problem
    return None


def _reads_as_number(s: str) -> bool:
    if not s or len(s) > 64 or not (s[0] in "0123456789+-.nNiI " or s[-1].isdigit()):
        return False  # words: no float() attempt (and no exception) for "accept"
    try:
        float(s)
    except ValueError:
        return False
    return True


def _metrics_problem(metrics: Any) -> str | None:
    """A run's game metrics: numbers, true/false, null or words (NegotiationArena's ``ended``), or lists of
    them (one per seat). A number written as text (``"0.5"``, ``"NaN"``, ``"1e308"``) was left out of every
    table in silence where a NaN was refused: refused like it."""
    if metrics is None:
        return None
    if type(metrics) is not dict:
        return f"'metrics' must be an object (got {json.dumps(metrics, default=str)[:40]})"
    for name, v in metrics.items():
        for j, x in enumerate(v if type(v) is list else (v,)):
            where = f"metrics.{name}" + (f"[{j}]" if type(v) is list else "")
            if x is None or type(x) is bool:
                continue
            if type(x) is str:
                if _reads_as_number(x):
                    return (f"'{where}' is a number written as text ({json.dumps(x)[:40]}): write the number, or "
                            "null for none")
                continue
            if type(x) not in (int, float):
                return f"'{where}' must be a number, true/false, null or text (got {json.dumps(x, default=str)[:40]})"
            if (problem := _beyond(x, where)) is not None:
                return problem
    return None


_INT64 = 2**63  # the tables' integers: session, run and seat numbers beyond them cannot be held


def _slow_problem(x: dict[str, Any]) -> str | None:
    """What only a line the standard library had to read can hold (orjson reads the rest, and refuses all of
    these): NaN or Infinity, an integer of 19 digits or more as a session, run or seat number, and text that is
    no UTF-8 (a lone surrogate, or bytes that are not UTF-8) in a label or table name, which a report's
    tables and files cannot hold."""
    where = _nonfinite(x)
    if where:
        return f"'{where}' is not a finite number (NaN or Infinity)"
    for key in ("session", "run", "player"):
        v = x.get(key)
        if type(v) is int and v >= _INT64:
            return f"'{key}' is too large ({str(v)[:40]}; at most 2**63 - 1)"
    labels = x.get("labels")
    texts = [("lineup", x.get("lineup")), ("label", x.get("label")),
             *((f"labels[{i}]", t) for i, t in enumerate(labels if isinstance(labels, list) else ()))]
    for key, t in texts:
        if isinstance(t, str) and not t.isascii():
            try:
                t.encode("utf-8")
            except UnicodeEncodeError:
                return f"'{key}' is not UTF-8 text (a lone surrogate, or bytes that are no UTF-8): {t[:60]!r}"
    return None


@dataclass
class BadLine:
    """A line that could not be used: kept verbatim so resume can move it aside instead of losing it."""

    number: int
    text: str
    why: str

    def to_record(self) -> dict[str, Any]:
        return {"unreadable_line": self.number, "why": self.why, "text": self.text}


def _text(line: bytes) -> str:
    return line.decode("utf-8", "surrogateescape")


def _parse(path: Path, data: bytes | None = None) -> Iterator[tuple[int, bytes, dict[str, Any] | BadLine]]:
    """Each line of a log (of ``data`` when given, the file's bytes): (line number, the line, its record or
    a BadLine for a line that is not JSON or torn by a kill)."""
    for number, line, rec, _ in _parse_flagged(path, data):
        yield number, line, rec


def _parse_flagged(path: Path, data: bytes | None = None
                   ) -> Iterator[tuple[int, bytes, dict[str, Any] | BadLine, bool]]:
    """:func:`_parse`, each line with whether the standard library had to read it."""
    if data is None and not path.exists():
        return
    with (open_regular(path) if data is None else io.BytesIO(data)) as fh:
        for number, line in enumerate(fh, 1):
            if not line.endswith(b"\n"):
                if line.strip():
                    torn = BadLine(number, _text(line), "torn last line (the process died mid-write)")
                    yield number, line, torn, False
                return
            if line.isspace():
                continue
            try:
                rec, slow = _loads(line)
            except (ValueError, RecursionError):
                yield number, line, BadLine(number, _text(line.rstrip(b"\r\n")), "not JSON"), False
                continue
            yield number, line, rec, slow


def _scan(path: Path, kind: str | None) -> Iterator[dict[str, Any] | BadLine]:
    """Each line as its record, or as a BadLine (not JSON, torn, with ``kind`` the wrong shape), verbatim."""
    for number, line, x in _parse(path):
        problem = record_problem(x, kind) if kind and not isinstance(x, BadLine) else None
        yield BadLine(number, _text(line.rstrip(b"\r\n")), problem) if problem else x


def scan_jsonl(path: Path, kind: str | None = None) -> tuple[list[dict[str, Any]], list[BadLine]]:
    """Records and unusable lines (not JSON, torn by a kill, or with ``kind`` the wrong shape)."""
    out: list[dict[str, Any]] = []
    bad: list[BadLine] = []
    for x in _scan(path, kind):
        if isinstance(x, BadLine):
            bad.append(x)
        else:
            out.append(x)
    return out, bad


class _RunLogCache:
    """Parsed ``runs.jsonl`` files of this process, so that a report, which reads each run log in several
    sections, parses it once. An entry is used only while the file holds the very same bytes (compared by
    digest: reading and hashing a file costs a fraction of parsing it), and the cache holds at most
    ``budget`` bytes of files, the least recently read going first. Records are shared between readers:
    they must not be changed."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.entries: dict[str, tuple[int, bytes, list[tuple[int, Any, bool]]]] = {}  # insertion order = LRU

    def lines(self, path: Path) -> Iterator[tuple[int, Any, bool]] | list[tuple[int, Any, bool]]:
        try:
            size = path.stat().st_size if path.name == RUNS else -1
        except OSError:
            size = -1
        if not 0 <= size <= self.budget:
            return ((n, x, slow) for n, _, x, slow in _parse_flagged(path))
        try:
            data = read_bytes(path, self.budget)
        except OSError:
            return ((n, x, slow) for n, _, x, slow in _parse_flagged(path))
        key, digest = str(path.resolve()), hashlib.blake2b(data, digest_size=16).digest()
        hit = self.entries.pop(key, None)
        if hit is None or hit[1] != digest:
            hit = (len(data), digest, [(n, x, slow) for n, _, x, slow in _parse_flagged(path, data)])
            while self.entries and sum(e[0] for e in self.entries.values()) + len(data) > self.budget:
                del self.entries[next(iter(self.entries))]
        self.entries[key] = hit
        return hit[2]


_RUN_LOGS = _RunLogCache(64 * 2**20)


def iter_jsonl(path: Path, *, warn: bool = False, kind: str | None = None,
               strict: bool = False) -> Iterator[dict[str, Any]]:
    """The records of :func:`read_jsonl` one at a time, so a reader that folds them (the summary) holds one
    line in memory, not the whole log. ``runs.jsonl`` is parsed once per process while it is unchanged."""
    skipped: list[int] = []
    for number, x, slow in _RUN_LOGS.lines(path):
        if not isinstance(x, BadLine):
            problem = record_problem(x, kind) if kind else None
            if problem is None and strict and slow:
                problem = _slow_problem(x)
            if problem is None:
                yield x
                continue
            x = BadLine(number, "", problem)
        if x.why.startswith("torn"):
            continue
        if strict and x.why != "not JSON":
            raise LogError(f"{path}: line {x.number}: not a {kind} record: {x.why}; fix or delete the line "
                           "(run --resume moves such lines to a .discarded.jsonl file)")
        skipped.append(x.number)
    if skipped and warn:
        shown = ", ".join(map(str, skipped[:10])) + (" ..." if len(skipped) > 10 else "")
        print(f"econarena: warning: {path}: skipped {len(skipped)} unreadable line(s): {shown}", file=sys.stderr)


def _nonfinite(x: Any, where: str = "") -> str | None:
    """The path of the first NaN or infinite number in ``x`` (``payoffs[1]``, ``metrics.efficiency``)."""
    if isinstance(x, float):
        return None if math.isfinite(x) else where or "(the record)"
    if isinstance(x, dict):
        for k, v in x.items():
            found = _nonfinite(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    elif isinstance(x, list):
        for i, v in enumerate(x):
            found = _nonfinite(v, f"{where}[{i}]")
            if found:
                return found
    return None


def iter_records(path: Path, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of each usable line, one line in memory at a time (never cached: a reader
    that streams a study must not hold its log), as the analysis reads: a torn last line is skipped, a
    line that is not JSON is skipped and reported on stderr with its number, and a record of the wrong
    shape, or holding NaN or Infinity (which econarena never writes: a non-finite number is written as
    null), raises :class:`LogError` naming the file, the line and the key, never averaged in silence."""
    skipped: list[int] = []
    for number, _line, x, slow in _parse_flagged(path):
        if isinstance(x, BadLine):
            if not x.why.startswith("torn"):
                skipped.append(number)
            continue
        problem = record_problem(x, kind)
        if problem is None and slow:
            problem = _slow_problem(x)
        if problem is not None:
            raise LogError(f"{path}: line {number}: not a {kind} record: {problem}; fix or delete the line "
                           "(run --resume moves such lines to a .discarded.jsonl file)")
        yield number, x
    if skipped:
        shown = ", ".join(map(str, skipped[:10])) + (" ..." if len(skipped) > 10 else "")
        print(f"econarena: warning: {path}: skipped {len(skipped)} unreadable line(s): {shown}", file=sys.stderr)


def record_of(line: bytes, kind: str) -> dict[str, Any] | None:
    """One complete line of a log as :func:`iter_records` reads it: its record, or None for a line it would
    skip or refuse (not JSON, the wrong shape, NaN). For readers that follow a log as it grows (the
    columnar copy written as a run plays, ``analysis/follow.py``): None makes them give up, never guess."""
    try:
        rec, slow = _loads(line)
    except (ValueError, RecursionError):
        return None
    problem = record_problem(rec, kind)
    if problem is None and slow:
        problem = _slow_problem(rec)
    return None if problem is not None else rec


def read_jsonl(path: Path, *, warn: bool = False, kind: str | None = None,
               strict: bool = False) -> list[dict[str, Any]]:
    """Read records, skipping a torn last line left by a killed process.

    A line that is not JSON (edited by hand, a full disk) is skipped too; with ``warn`` it is reported
    on stderr with its line number, so data never vanishes silently. With ``kind`` each record's shape is
    checked: ``strict`` raises :class:`LogError` on a wrong-shape line (the analysis must not guess),
    otherwise it is skipped like an unreadable one.
    """
    return list(iter_jsonl(path, warn=warn, kind=kind, strict=strict))


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
    """The files of one run directory, written by one process at a time.

    ``tally`` counts every record this object writes, plus those a resume kept, so that the summary of the
    directory is ready when the run ends (see ``tally.py``); None when the directory held records that
    were neither kept by a resume nor written here (a summary must then read the files).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._dec: IO[bytes] | None = None
        self._runs: IO[bytes] | None = None
        self._last_flush = 0.0
        self._lock: FileLock | None = None
        self._extra: dict[str, IO[bytes]] = {}
        self.manifest: dict[str, Any] = {}
        self.tally: Tally | None = None

    def lock(self) -> None:
        """Hold an exclusive lock on the directory while this process writes it (formats/locks.py: the kernel
        drops it when the process dies); the file names the holder, for the error message."""
        from .locks import LockBusy, take

        self.path.mkdir(parents=True, exist_ok=True)
        try:
            self._lock = take(self.path / LOCK, f"PID {os.getpid()} on {socket.gethostname()}, since {now_iso()}")
        except LockBusy as busy:
            raise RunDirectoryBusy(f"{self.path} is in use by another econarena process "
                                   f"({busy.holder or 'unknown process'}); wait for it to finish or stop it, "
                                   "or use another --out") from None

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def start(self, config_text: str, seed: int, experiment: str, resume: bool) -> ResumeState:
        self.path.mkdir(parents=True, exist_ok=True)
        state = ResumeState()
        old = self.read_manifest() if resume else {}
        self.tally = Tally(trusted=True)  # this process writes every record it counts
        if resume:
            state = self._clean_for_resume()
        elif any((self.path / name).exists() and (self.path / name).stat().st_size for name in (RUNS, DECISIONS)):
            self.tally = None  # records of an earlier process, never read here: the summary reads the files
        if old:
            old.pop("stopped", None)  # why the last process left sessions unplayed: this one plays them
            self.manifest = {**old, "status": "running", "resumed_at": now_iso(),
                             "resumes": int(old.get("resumes", 0)) + 1}
        else:  # a new directory (--resume on one that never started begins a normal run)
            self.manifest = {"schema_version": SCHEMA_VERSION, "econarena_version": __version__,
                             "experiment": experiment, "seed": seed, "started_at": now_iso(),
                             "status": "running"}
        write_atomic(self.path / CONFIG, config_text)
        self.write_manifest()
        self._dec = (self.path / DECISIONS).open("ab")
        self._runs = (self.path / RUNS).open("ab")
        return state

    def read_manifest(self) -> dict[str, Any]:
        try:
            return json.loads(read_text(self.path / MANIFEST, MANIFEST_BYTES))
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
        # a run is complete with its decisions: one whose record counts more decisions than the log holds
        # (decisions.jsonl emptied, deleted, cut) is played again, never kept as complete without them. Lines
        # that could not be read (moved aside verbatim, below) may be those decisions: while they account for
        # every one missing, the runs are kept as before
        logged: dict[tuple[str, int, int], int] = defaultdict(int)
        for d in decisions:
            logged[run_key(d)] += 1
        short = {k: sum(r["decisions"]) - logged.get(k, 0) for k, r in complete.items()
                 if isinstance(r.get("decisions"), list) and all(_is_int(n) for n in r["decisions"])}
        lost = [k for k, n in short.items() if n > 0]
        if sum(short[k] for k in lost) <= len([b for b in bad_dec if not b.why.startswith("torn")]):
            lost = []
        if lost:
            print(f"econarena: warning: {self.path / DECISIONS}: {len(lost)} complete run(s) lack their decisions "
                  "(the file was emptied, deleted or cut): they are played again", file=sys.stderr)
            for k in lost:
                del complete[k]
        keys = runnable_prefix(complete)
        complete = {k: r for k, r in complete.items() if k in keys}
        keep_runs = [r for r in runs if complete.get(run_key(r)) is r]  # file order: a no-op resume rewrites nothing
        drop_runs = [r for r in runs if complete.get(run_key(r)) is not r]
        keep_dec: list[dict[str, Any]] = []
        drop_dec: list[dict[str, Any]] = []
        for d in decisions:
            (keep_dec if run_key(d) in complete else drop_dec).append(d)
        if self.tally is not None:  # what is kept is what the summary will count, with what this run adds
            for d in keep_dec:
                self.tally.decision(d)
            for r in keep_runs:
                self.tally.run(r)
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
                    bad_judge.append(BadLine(0, _text(dumps_line(j).rstrip(b"\n")), "not a judge call of a run"))
                else:
                    (keep_j if run_key(j) in complete else drop_j).append(j)
            logs.append((JUDGE_LOG, keep_j, drop_j, bad_judge))
        for name, keep, drop, bad in logs:
            set_aside(self.path / name, keep, [*drop, *(b.to_record() for b in bad)])
        return state

    def decision(self, rec: dict[str, Any]) -> None:
        """Buffered; flushed at least every FLUSH_S and always before the run record that needs it."""
        assert self._dec is not None
        self._dec.write(dumps_line(rec))
        if self.tally is not None:
            self.tally.decision(rec)
        now = time.monotonic()
        if now - self._last_flush > FLUSH_S:
            self._dec.flush()
            self._last_flush = now

    def run(self, rec: dict[str, Any]) -> None:
        """A run record is written only after its decisions reached the OS, so a kill never orphans it."""
        assert self._runs is not None and self._dec is not None
        self._dec.flush()
        self._runs.write(dumps_line(rec))
        self._runs.flush()
        if self.tally is not None:
            self.tally.run(rec)

    def append(self, name: str, rec: dict[str, Any]) -> None:
        """One line of another log of the directory (``judge.jsonl``, ``steering.jsonl``), flushed at once."""
        fh = self._extra.get(name)
        if fh is None:
            fh = self._extra[name] = (self.path / name).open("ab")
        fh.write(dumps_line(rec))
        fh.flush()

    def lines(self, decisions: bytes, appends: list[tuple[str, bytes]], run: bytes | None) -> None:
        """Records already encoded as JSON lines (by :func:`encode_record`, in a Ray worker): a run's
        decisions, its lines of other logs, then its record, in the order and with the flushes that
        :meth:`decision`, :meth:`append` and :meth:`run` give them. This process never sees them as
        records, so the summary is read back from the files (``tally`` becomes None)."""
        assert self._runs is not None and self._dec is not None
        self.tally = None
        if decisions:
            self._dec.write(decisions)
        for name, text in appends:
            fh = self._extra.get(name)
            if fh is None:
                fh = self._extra[name] = (self.path / name).open("ab")
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


def encode_run(rec: dict[str, Any]) -> bytes:
    """A run record's line, exactly as :meth:`RunDirectory.run` writes it (a Ray worker encodes its own)."""
    return dumps_line(rec)


def encode_record(rec: dict[str, Any]) -> bytes:
    """A decision's (or another log's) line, exactly as :meth:`RunDirectory.decision` writes it."""
    return dumps_line(rec)


def game_name(run_dir: str | Path) -> str | None:
    """The game a run directory played, from its config.toml; None when unreadable."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        cfg = tomllib.loads(read_text(Path(run_dir) / CONFIG, CONFIG_BYTES))
    except FileRefused:
        raise
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    exp = cfg.get("experiment")
    name = exp.get("game") if isinstance(exp, dict) else None
    return name if isinstance(name, str) else None
