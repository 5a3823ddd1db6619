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
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..files import CONFIG_BYTES, MANIFEST_BYTES, read_text
from ..games import GAMES
from ..games.base import Game
from ..games.text import name_problem
from ..rundir import CONFIG, DECISIONS, MANIFEST, RUNS, LogError, iter_records

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


def _shard(d: Dir) -> tuple[int, int] | None:
    s = d.manifest.get("shard")
    if isinstance(s, dict) and isinstance(s.get("index"), int) and isinstance(s.get("count"), int):
        return s["index"], s["count"]
    return None


class Names(set):  # type: ignore[type-arg]
    """The labels and model names met so far that pass the one name rule (games/text.py): a directory holds a
    few, so each line costs one set lookup. A name that fails it stops the command (exit 2) naming the file,
    the line and the key: a hand-edited ESC or U+009B in a label reached the terminal as an escape sequence."""

    def check(self, path: Path, line: int | str, key: str, name: Any) -> None:
        """Raise LogError naming ``path``, the line (or ``record N``) and ``key`` unless ``name`` is a name."""
        where = f"line {line}" if isinstance(line, int) else line
        if not isinstance(name, str):
            raise LogError(f"{path}: {where}: '{key}' must be a string (got {json.dumps(name, default=str)[:40]})")
        if (problem := name_problem(name)) is not None:
            raise LogError(f"{path}: {where}: '{key}' {name[:60]!r} {problem}")
        self.add(name)


@dataclass
class Scan:
    """The directories read and what the reading found: duplicates counted once, parts of experiments."""

    dirs: list[Dir]
    warnings: list[str] = field(default_factory=list)


def scan(paths: Sequence[str | Path], consumers: Iterable[Consumer]) -> Scan:
    """Read each directory once, feeding ``consumers`` (see the module doc)."""
    consumers = list(consumers)
    dirs = read_dirs([Path(p) for p in paths])
    counts: dict[str, int] = {}
    for d in dirs:
        counts[d.identity] = counts.get(d.identity, 0) + 1
    seen: dict[str, dict[tuple[str, int, int], int]] = {}  # runs of experiments met in several directories
    names = Names()
    result = Scan(dirs)
    for d in dirs:
        active = [c for c in consumers if c.begin(d)]
        shared = seen.setdefault(d.identity, {}) if counts[d.identity] > 1 else None
        inside = 0
        first_dup: dict[int, int] = {}
        for number, rec in iter_records(d.path / RUNS, "runs"):
            for i, label in enumerate(rec["labels"]):
                if label not in names:
                    names.check(d.path / RUNS, number, f"labels[{i}]", label)
            if rec.get("complete", True):
                key = key_of(rec)
                if key in d.kept:
                    inside += 1
                    continue
                if shared is not None:
                    where = shared.get(key)
                    if where is not None:
                        first_dup[where] = first_dup.get(where, 0) + 1
                        continue
                    shared[key] = d.index
                d.kept.add(key)
            for c in active:
                c.run(d, number, rec)
        d.duplicates = inside + sum(first_dup.values())
        if inside:
            result.warnings.append(f"{d.path / RUNS}: {inside} run(s) recorded twice; each is counted once (the "
                                   "first record)")
        for where, n in first_dup.items():
            result.warnings.append(f"{d.path}: {n} run(s) already read from {dirs[where].path} (the same "
                                   "experiment: a shard beside its merge?); each is counted once")
        if d.part:
            result.warnings.append(f"{d.path} is {d.part} of experiment '{d.exp.get('name', d.path.name)}': "
                                   "the other shards are not among the inputs, so its numbers cover part of it")
        readers = [c for c in active if c.wants_decisions]
        if readers:
            kept = d.kept
            for number, rec in iter_records(d.path / DECISIONS, "decisions"):
                if rec["label"] not in names:
                    names.check(d.path / DECISIONS, number, "label", rec["label"])
                model = rec.get("model")
                if model is not None and (type(model) is not str or model not in names):
                    names.check(d.path / DECISIONS, number, "model", model)
                if (rec.get("lineup", "melee"), rec["session"], rec["run"]) in kept:
                    for c in readers:
                        c.decision(d, rec)
        for c in active:
            c.end(d)
        d.kept = set()  # what the directory's decisions needed; nothing after it does
    return result
