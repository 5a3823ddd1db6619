"""Run directories read once per command: one pass over each log, every part of the analysis fed from it.

Why: a report used to load every directory into pandas frames, then each family read the same
``runs.jsonl`` again and built its own lists, so a study's memory and time grew with its games several
times over (57,600 games: 3 GB and 100 s). Here ``scan`` reads each directory's ``runs.jsonl`` and then
its ``decisions.jsonl`` a line at a time (``rundir.iter_records``: the shape checks and the refusal of
NaN/Infinity with the file and line) and hands every record to the *consumers* that asked for it: the
columnar tables (``analysis/store.py``), each family's collector, the conversations' sample. A consumer
keeps what it needs in compact form; nothing holds a directory's records.

Runs are identified by their experiment and ``(lineup, session, run)``. The experiment is the resolved
``config.toml`` (what ``merge`` compares): a folder that holds the shards of a study and their merge (the
README's own layout) reaches the same run twice; it is counted once and a warning says so, and the first
record read wins (as ``complete_runs`` has always done within a directory). A shard read without its
siblings is marked as part of an experiment, never presented as the whole.

Consumers see, per directory, ``begin(d)`` (return False to skip the directory), ``run(d, number, rec)``
for each run record kept (complete or not, in file order), ``decision(d, rec)`` for each decision of a kept
complete run when ``wants_decisions``, and ``end(d)``.

A finished directory read whole and alone is read from its columnar copy when one is there
(``analysis/columnar.py``): a consumer with a ``copy_name`` (and ``copy_version``) offers ``save(d, copy)``,
called before ``end(d)`` when the directory was read from its logs, and ``restore(d, copy)``, called
instead of ``run``, ``decision`` and ``end``. The copy is used only when every consumer that took the
directory has its part there; else the logs are read, and the missing parts written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeGuard

import orjson

from ..formats.files import CONFIG_BYTES, MANIFEST_BYTES, read_text
from ..formats.rundir import CONFIG, DECISIONS, MANIFEST, RUNS, LogError, iter_records
from ..games import GAMES
from ..games.base import Game
from ..games.text import name_problem, storable
from . import columnar

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class Dir:
    """One run directory as the scan meets it."""

    index: int
    path: Path
    config: dict[str, Any]
    manifest: dict[str, Any]
    identity: str  # the experiment: its resolved config, canonical
    part: str = ""  # "shard K of N" when read without the rest of its experiment
    kept: set[tuple[str, int, int]] = field(default_factory=set, repr=False)  # complete runs counted here
    duplicates: int = 0
    differs: str = ""  # runs recorded twice with different records: the warning that says so

    @property
    def exp(self) -> dict[str, Any]:
        e = self.config.get("experiment")
        return e if isinstance(e, dict) else {}

    @property
    def name(self) -> str:
        return str(self.path)

    @property
    def game_name(self) -> str:
        g = self.exp.get("game")
        return g if isinstance(g, str) else ""

    @property
    def game(self) -> Game | None:
        return GAMES.get(self.game_name)

    @property
    def family(self) -> str:
        g = self.game
        return g.info.family if g is not None else ""


class Consumer(Protocol):
    wants_decisions: bool

    def begin(self, d: Dir) -> bool: ...

    def run(self, d: Dir, number: int, rec: dict[str, Any]) -> None: ...

    def decision(self, d: Dir, rec: dict[str, Any]) -> None: ...

    def end(self, d: Dir) -> None: ...


class Copying(Consumer, Protocol):
    """A consumer that keeps its part of a directory in the columnar copy, so a later read restores it."""

    @property
    def copy_name(self) -> str: ...

    @property
    def copy_version(self) -> str: ...

    def save(self, d: Dir, copy: columnar.Copy) -> None: ...

    def restore(self, d: Dir, copy: columnar.Copy) -> None: ...


def _all_copying(active: list[Consumer]) -> TypeGuard[list[Copying]]:
    """Whether every consumer keeps a copy (one that cannot means the logs are read and nothing written)."""
    return all(getattr(c, "copy_name", None) for c in active)


class Base:
    """A consumer that takes nothing; subclasses override what they need."""

    wants_decisions = False

    def begin(self, d: Dir) -> bool:
        return True

    def run(self, d: Dir, number: int, rec: dict[str, Any]) -> None:
        pass

    def decision(self, d: Dir, rec: dict[str, Any]) -> None:
        pass

    def end(self, d: Dir) -> None:
        pass


def key_of(rec: dict[str, Any]) -> tuple[str, int, int]:
    # one string object per lineup, however many runs a directory's key set holds
    return (sys.intern(rec.get("lineup", "melee")), rec["session"], rec["run"])


def read_dirs(paths: Sequence[Path]) -> list[Dir]:
    """Each directory's config and manifest, its experiment's identity and, for a shard read without the
    rest of its experiment, what part it is."""
    dirs = []
    for i, p in enumerate(paths):
        # the settings every row is labelled with: a config.toml that cannot be read is an error, never
        # an experiment of no game in the default environment (numbers under the wrong settings)
        try:
            cfg = tomllib.loads(read_text(p / CONFIG, CONFIG_BYTES))
        except OSError:  # no config.toml (a directory of something else, an import's side file): no settings
            cfg = {}
        except UnicodeDecodeError as exc:
            raise LogError(f"{p / CONFIG}: not UTF-8 text (byte {exc.start}); a run directory's config.toml is "
                           "the experiment as `econarena run` resolved it") from None
        except tomllib.TOMLDecodeError as exc:
            raise LogError(f"{p / CONFIG}: not TOML ({exc}); a run directory's config.toml is the experiment "
                           "as `econarena run` resolved it") from None
        if cfg and (problem := config_problem(cfg)) is not None:
            raise LogError(f"{p / CONFIG}: {problem}; a run directory's config.toml is the experiment as `econarena "
                           "run` resolved it (edited by hand?)")
        try:
            manifest = json.loads(read_text(p / MANIFEST, MANIFEST_BYTES))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            manifest = {}
        manifest = manifest if isinstance(manifest, dict) else {}
        dirs.append(Dir(i, p, cfg, manifest, json.dumps(cfg, sort_keys=True, default=str)))
    by_exp: dict[str, list[Dir]] = {}
    for d in dirs:
        by_exp.setdefault(d.identity, []).append(d)
    for group in by_exp.values():
        shards = [(d, _shard(d)) for d in group]
        whole = [d for d, s in shards if s is None]
        present = {s[0] for _, s in shards if s is not None}
        for d, s in shards:
            # the length first: N may be 10**20 (a valid --shard), never build range(1, N + 1) for it
            if s is not None and not whole and (len(present) != s[1] or present != set(range(1, s[1] + 1))):
                d.part = f"shard {s[0]} of {s[1]}"
    return dirs


# What the analysis reads of a run directory's config.toml, with the types `econarena run` writes (the
# experiment's settings label every row): a hand-edited `game = 5` or `name = ["x"]` stopped report and
# compare with a traceback. Keys not listed are not read here.
_EXPERIMENT_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,), "game": (str,), "environment": (str,), "history": (str,), "prompt": (str,),
    "description": (str,), "group": (str,), "models": (str,), "players_per_game": (int,), "sessions": (int,),
    "runs": (int,), "seed": (int,), "max_history": (int,), "reask": (int,), "shuffle_seats": (bool,)}
_TYPE_WORDS = {str: "a string", int: "an integer", bool: "true or false"}


def config_problem(cfg: dict[str, Any]) -> str | None:
    """Why a run directory's config data is not what `econarena run` writes (a table or key of the wrong
    type), naming the key; None when every key the analysis reads has its type."""
    for table in ("experiment", "game", "llm", "prompts", "grid", "steer", "judge"):
        if table in cfg and not isinstance(cfg[table], dict):
            return f"'{table}' must be a table (got {json.dumps(cfg[table], default=str)[:40]})"
    for key, types in _EXPERIMENT_TYPES.items():
        v = cfg.get("experiment", {}).get(key)
        if v is not None and (type(v) not in types or (type(v) is int and not 0 <= v < 2**63)):
            return (f"'experiment.{key}' must be {_TYPE_WORDS[types[0]]}"
                    f"{' >= 0' if types[0] is int else ''} (got {json.dumps(v, default=str)[:40]})")
    players = cfg.get("players", [])
    if not isinstance(players, list) or not all(isinstance(p, dict) for p in players):
        return "'players' must be a list of player tables"
    for i, p in enumerate(players):
        for key in ("agent", "label", "model"):
            if key in p and not isinstance(p[key], str):
                return f"'players[{i}].{key}' must be a string (got {json.dumps(p[key], default=str)[:40]})"
    return None


def _shard(d: Dir) -> tuple[int, int] | None:
    """The directory's shard (K, N) from its manifest; a shard that no --shard K/N could write (5 of 2, 0 of
    3, "1") is refused naming the file: read as a whole experiment, its numbers would pose as all of it."""
    s = d.manifest.get("shard")
    if s is None:
        return None
    k, n = (s.get("index"), s.get("count")) if isinstance(s, dict) else (None, None)
    if not (type(k) is int and type(n) is int and 1 <= k <= n):
        raise LogError(f"{d.path / MANIFEST}: 'shard' is {json.dumps(s, default=str)[:60]}: expected "
                       "{\"index\": K, \"count\": N} with 1 <= K <= N, as run --shard K/N writes it")
    return k, n


class Names(set[str | None]):
    """The labels and model names met so far that pass the one name rule (games/text.py): a directory holds a
    few, so each line costs one set lookup. A name that fails it stops the command (exit 2) naming the file,
    the line and the key: a hand-edited ESC or U+009B in a label reached the terminal as an escape sequence."""

    def check(self, path: Path, line: int | str, key: str, name: Any) -> None:
        """Raise LogError naming ``path``, the line (or ``record N``) and ``key`` unless ``name`` is a name."""
        where = f"line {line}" if isinstance(line, int) else line
        if not isinstance(name, str):
            raise LogError(f"{path}: {where}: '{key}' must be a string (got {json.dumps(name, default=str)[:40]})")
        # a lone surrogate of an old log is shown as its escape (the label's own check refuses it apart)
        if (problem := name_problem(storable(name))) is not None:
            raise LogError(f"{path}: {where}: '{key}' {name[:60]!r} {problem}")
        self.add(name)


@dataclass
class Scan:
    """The directories read and what the reading found: duplicates counted once, parts of experiments."""

    dirs: list[Dir]
    warnings: list[str] = field(default_factory=list)


def _digest(rec: dict[str, Any]) -> bytes:
    """A run record's identity as data: the same bytes for the same record, whatever its keys' order."""
    try:
        data = orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits, a lone surrogate: the standard library writes it
        data = json.dumps(rec, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()


def _difference(a: Any, b: Any, where: str = "") -> str:
    """The first key path where two records differ (``payoffs[1]``), with both values, shortened."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            if k not in a or k not in b or a[k] != b[k]:
                return _difference(a.get(k), b.get(k), f"{where}.{k}" if where else str(k))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _difference(x, y, f"{where}[{i}]")
    here, there = json.dumps(b, default=str)[:40], json.dumps(a, default=str)[:40]
    return f"'{where or '(the record)'}' is {here} here, {there} there"


def _first_difference(d: Dir, shared: dict[tuple[str, int, int], tuple[int, bytes]], dirs: Sequence[Dir]
                      ) -> str | None:
    """How the first complete run that ``d`` shares with an earlier directory of its experiment differs from
    the record read there, or None when every shared run is the same record (a copy: a merge, a directory
    named twice). Read only for experiments met in several directories."""
    for _, rec in iter_records(d.path / RUNS, "runs"):
        if not rec.get("complete", True):
            continue
        key = key_of(rec)
        met = shared.get(key)
        if met is None or met[1] == _digest(rec):
            continue
        there = dirs[met[0]].path
        first = next((r for _, r in iter_records(there / RUNS, "runs")
                      if r.get("complete", True) and key_of(r) == key), {})
        return (f"run {key[1]}/{key[2]} ({key[0]}) differs from the one read from {there}: "
                f"{_difference(first, rec)}")
    return None


def differing_twice(path: Path, dups: dict[tuple[str, int, int], tuple[int, dict[str, Any]]]) -> str | None:
    """How many runs of one log are recorded twice with different records, and the first difference; None
    when every second record equals its first (a line written twice). The log is read again only here,
    when a run was met twice: a contradiction is said, never counted once in silence."""
    firsts: dict[tuple[str, int, int], tuple[int, dict[str, Any]]] = {}
    for number, rec in iter_records(path, "runs"):
        if rec.get("complete", True) and (key := key_of(rec)) in dups and key not in firsts:
            firsts[key] = (number, rec)
    differing = [(key, firsts[key], second) for key, second in dups.items()
                 if key in firsts and _digest(firsts[key][1]) != _digest(second[1])]
    if not differing:
        return None
    key, (a, first), (b, second) = differing[0]
    return (f"{path}: {len(differing)} run(s) recorded twice with different records, e.g. run {key[1]}/{key[2]} "
            f"({key[0]}) at line {b}: {_difference(first, second)} (line {a}); the first record is counted, the "
            "other is not (which one is right, the log does not say)")


def scan(paths: Sequence[str | Path], consumers: Iterable[Consumer]) -> Scan:
    """Read each directory once, feeding ``consumers`` (see the module doc)."""
    consumers = list(consumers)
    dirs = read_dirs([Path(p) for p in paths])
    counts: dict[str, int] = {}
    for d in dirs:
        counts[d.identity] = counts.get(d.identity, 0) + 1
    # runs of experiments met in several directories: where each was read first, and its record's digest
    seen: dict[str, dict[tuple[str, int, int], tuple[int, bytes]]] = {}
    names = Names()
    names.add(None)  # a decision without a model (a baseline)
    result = Scan(dirs)
    copies = _copies(dirs, counts)
    for d in dirs:
        active = [c for c in consumers if c.begin(d)]
        keeping = active if _all_copying(active) else None
        copy = copies.get(d.index) if keeping is not None else None
        if copy is not None and keeping is not None and copy.has(SCAN_PART, SCAN_VERSION) and all(
                copy.has(c.copy_name, c.copy_version) for c in keeping):
            _restore(d, copy, keeping, result)
            continue
        with _Watch() as watch:
            # a shard of a group whose copies showed no shared run reads as if alone
            alone = d.index in copies and not copies[d.index].grouped
            others, whole = _read(d, dirs, active, {**counts, d.identity: 1} if alone else counts, seen, names,
                                  result)
        # a copy holds what this directory gives alone: none for one that shared runs with another read
        # before it (its part depends on that one), and none for one whose decisions are missing (the warning
        # must show on every read)
        if copy is not None and keeping is not None and not watch.said and not others and whole and copy.writable:
            for k in keeping:
                if not copy.has(k.copy_name, k.copy_version):
                    k.save(d, copy)
            copy.put(SCAN_PART, SCAN_VERSION, {"keys": _keys_table(d.kept)},
                     {"inside": d.duplicates, "differs": d.differs})
        for c in active:
            c.end(d)
        d.kept = set()  # what the directory's decisions needed; nothing after it does
    return result


SCAN_PART, SCAN_VERSION = "scan", "3"  # 3: runs recorded twice differently


def _copies(dirs: list[Dir], counts: dict[str, int]) -> dict[int, columnar.Copy]:
    """The copies the scan may use or write, by directory index. A directory alone in its experiment has
    one. The shards of one experiment (several directories with one identity) may each use theirs only
    when every one of them has its scan part and no run is in two of them (checked on the kept runs'
    keys); then no run can be met twice, and each shard reads as if alone. Otherwise the group is read
    from its logs with the usual check, and a shard that shared no run with one read before it gets its
    copy written."""
    out: dict[int, columnar.Copy] = {}
    groups: dict[str, list[Dir]] = {}
    for d in dirs:
        if d.manifest.get("status") == "complete":  # a run just ended: its follower may still write its copy
            columnar.wait_for_follower(d.path)
        copy = columnar.open_copy(d.path, d.manifest)
        if copy is None:
            return {}
        out[d.index] = copy
        if counts[d.identity] > 1:
            groups.setdefault(d.identity, []).append(d)
    for group in groups.values():
        found = [out[d.index] for d in group]
        if not all(c.has(SCAN_PART, SCAN_VERSION) for c in found) or _overlap(found):
            for d in group:  # read from the logs with the check; copies written where no run was shared
                out[d.index].meta = {}
                out[d.index].grouped = True
    return out


def _overlap(found: list[columnar.Copy]) -> bool:
    """Whether a run (lineup, session, run) is kept in two of these directories' copies."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    tables = [c.table(SCAN_PART, "keys") for c in found]
    t = pa.concat_tables(tables)
    if not len(t):
        return False
    lineup = pc.dictionary_encode(t.column("lineup")).combine_chunks().indices.to_numpy(zero_copy_only=False)
    keys = np.stack([lineup.astype(np.int64), t.column("session").to_numpy(), t.column("run").to_numpy()], axis=1)
    return len(np.unique(keys, axis=0)) != len(keys)


def _keys_table(kept: set[tuple[str, int, int]]) -> Any:
    import pyarrow as pa

    lineups, sessions, runs = zip(*kept) if kept else ((), (), ())
    return pa.table({"lineup": pa.array(lineups, pa.string()), "session": pa.array(sessions, pa.int64()),
                     "run": pa.array(runs, pa.int64())})


class _Watch:
    """Whether anything was written to stderr while a directory was read (an unreadable line's warning):
    such a directory gets no copy, so the warning shows on every read."""

    def __enter__(self) -> _Watch:
        self.said, self.real = False, sys.stderr
        sys.stderr = self
        return self

    def write(self, text: str) -> int:
        self.said = self.said or bool(text)
        return self.real.write(text)

    def flush(self) -> None:
        self.real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __exit__(self, *exc: object) -> None:
        sys.stderr = self.real


def _restore(d: Dir, copy: columnar.Copy, active: list[Copying], result: Scan) -> None:
    """A directory from its copy: what the reading found, then each consumer's part."""
    inside = int(copy.info(SCAN_PART)["inside"])
    d.duplicates = inside
    if inside:
        result.warnings.append(f"{d.path / RUNS}: {inside} run(s) recorded twice; each is counted once (the "
                               "first record)")
    if differs := str(copy.info(SCAN_PART).get("differs") or ""):
        d.differs = differs
        result.warnings.append(differs)
    if d.part:
        result.warnings.append(f"{d.path} is {d.part} of experiment '{d.exp.get('name', d.path.name)}': "
                               "the other shards are not among the inputs, so its numbers cover part of it")
    for c in active:
        c.restore(d, copy)


def _read(d: Dir, dirs: list[Dir], active: list[Any], counts: dict[str, int],
          seen: dict[str, dict[tuple[str, int, int], tuple[int, bytes]]], names: Names,
          result: Scan) -> tuple[int, bool]:
    """A directory from its logs: each run and decision to the consumers that took it. Returns how many of
    its runs another directory read before it already held, and whether its decisions were all there."""
    shared = seen.setdefault(d.identity, {}) if counts[d.identity] > 1 else None
    inside = expected = 0
    first_dup: dict[int, int] = {}
    dups: dict[tuple[str, int, int], tuple[int, dict[str, Any]]] = {}  # a run met again: its second record
    if shared and (differs := _first_difference(d, shared, dirs)) is not None:
        # a second sample of the experiment (played again, --no-cache, another machine), not a copy: all
        # its runs count, as runs of their own directory
        result.warnings.append(f"{d.path}: {differs}; it is a second sample of the same experiment, not a "
                               "copy: its runs are counted as runs of their own")
        shared = None
    for number, rec in iter_records(d.path / RUNS, "runs"):
        if not names.issuperset(rec["labels"]):  # one C call for the common run: its labels were met
            for i, label in enumerate(rec["labels"]):
                names.check(d.path / RUNS, number, f"labels[{i}]", label)
        if rec.get("complete", True):
            key = key_of(rec)
            if key in d.kept:
                inside += 1
                dups.setdefault(key, (number, rec))  # compared with the first record after the loop
                continue
            if shared is not None:
                met = shared.get(key)
                if met is not None:
                    first_dup[met[0]] = first_dup.get(met[0], 0) + 1
                    continue
                shared[key] = (d.index, _digest(rec))
            d.kept.add(key)
            per_seat = rec.get("decisions")
            if type(per_seat) is list:
                with contextlib.suppress(TypeError):
                    expected += int(sum(per_seat))
        for c in active:
            c.run(d, number, rec)
    d.duplicates = inside + sum(first_dup.values())
    if inside:
        result.warnings.append(f"{d.path / RUNS}: {inside} run(s) recorded twice; each is counted once (the "
                               "first record)")
        if (differs := differing_twice(d.path / RUNS, dups)) is not None:
            d.differs = differs
            result.warnings.append(differs)
    for where, n in first_dup.items():
        result.warnings.append(f"{d.path}: {n} run(s) already read from {dirs[where].path}, record for "
                               "record the same (a shard beside its merge?); each is counted once")
    if d.part:
        result.warnings.append(f"{d.path} is {d.part} of experiment '{d.exp.get('name', d.path.name)}': "
                               "the other shards are not among the inputs, so its numbers cover part of it")
    readers = [c for c in active if c.wants_decisions]
    got = 0
    if readers:
        kept = d.kept
        for number, rec in iter_records(d.path / DECISIONS, "decisions"):
            try:  # one expression for the common line: its label and model (None is in names) were met
                known = rec["label"] in names and rec.get("model") in names
            except TypeError:  # a model that is no string (a list)
                known = False
            if not known:
                names.check(d.path / DECISIONS, number, "label", rec["label"])
                if rec.get("model") is not None:
                    names.check(d.path / DECISIONS, number, "model", rec.get("model"))
            if (rec.get("lineup", "melee"), rec["session"], rec["run"]) in kept:
                got += 1
                for c in readers:
                    c.decision(d, rec)
        if got < expected:  # emptied, deleted or cut: the cost and decision tables would miss them in silence
            result.warnings.append(f"{d.path / DECISIONS}: holds {got} of the {expected} decisions its complete "
                                   "runs record (emptied, deleted or cut?): the cost, token and decision tables "
                                   "miss the rest; `run --resume` plays those runs again")
    return sum(first_dup.values()), not readers or got >= expected
