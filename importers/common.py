"""What every importer shares: the accounting of an import, writing run directories, run and decision
records, config.toml of imported runs.

The interface every source module follows (importers/registry.py lists them): ``NAME`` (the
``econarena import`` source), ``DESCRIPTION`` (one line), ``ITEMS`` (what one item of the source is, for
messages), ``OPTIONS`` (the keyword options it takes) and ``import_dir(src, out, **options) ->
ImportResult``, which reads a released directory, writes our run directories under ``out`` and accounts
for every item of the source: imported, or refused with a reason. Where the source records an outcome
apart from the moves, that record is the outcome of the imported run and the game's replay of the moves
through our rules is a separate check (``ReplayCheck``), counted and listed here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..formats.csvcells import csv_text
from ..formats.files import inside, is_regular, read_text
from ..formats.rundir import CONFIG, DECISIONS, LOCK, MANIFEST, RUNS, RunDirectory, now_iso, write_atomic
from ..games.base import MAX_GAME_NUMBER, ForeignValue, Game, ImportedRun, ReplayCheck, Setup
from ..games.text import name_problem, storable

_REMOVE_ON_REIMPORT = (RUNS, DECISIONS, "summary.json", "summary.csv")


class ImportFailed(Exception):
    """The import cannot start (bad RAW_DIR, an output directory holding runs of our own)."""


REPORT_JSON = "import_report.json"
DISAGREEMENTS_CSV = "import_disagreements.csv"
REFUSED_CSV = "import_refused.csv"


@dataclass(frozen=True)
class Refusal:
    """A source item (a file or game folder) that did not become a run, and why."""

    item: str  # relative to the source directory
    category: str  # short code: unreadable, unknown_format, unended, incomplete, not_implemented, duplicate, ...
    reason: str  # one line naming the file, key or value


@dataclass(frozen=True)
class Disagreement:
    """An imported run whose replay through our rules does not reach the outcome its source records."""

    item: str
    game: str
    kind: str  # parser difference, rule difference, malformed move, metric definition, ...
    causes: tuple[str, ...]
    recorded: Any
    replayed: Any
    detail: str


@dataclass
class ImportResult:
    """What an import did with every item of the source: imported (with the replay check's verdict) or
    refused with a reason. ``found == runs + len(refused)`` always holds."""

    source: str = ""
    dirs: list[Path] = field(default_factory=list)
    runs: int = 0
    found: int = 0
    imported: Counter[str] = field(default_factory=Counter)  # game -> runs
    refused: list[Refusal] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)  # game -> runs replayed against a record
    agreed: Counter[str] = field(default_factory=Counter)
    disagreements: list[Disagreement] = field(default_factory=list)
    causes: Counter[tuple[str, str]] = field(default_factory=Counter)  # (game, cause) -> runs, agreeing or not
    warnings: list[str] = field(default_factory=list)  # notes that are not about one item (one line each)
    check_note: str = ""  # what the replay check compares, for this source

    def refuse(self, item: str, category: str, reason: str) -> None:
        self.found += 1  # a path or a reason may hold what is not text (a file name's undecodable bytes)
        self.refused.append(Refusal(storable(item), category, storable(reason)))

    def count_check(self, item: str, game: str, check: ReplayCheck | None) -> None:
        """Count one imported run's replay check (None: nothing in the source to compare with)."""
        if check is None:
            return
        self.checked[game] += 1
        for c in check.causes:
            self.causes[(game, c)] += 1
        if check.agree:
            self.agreed[game] += 1
        else:
            self.disagreements.append(Disagreement(storable(item), game, check.kind, tuple(check.causes),
                                                   check.recorded, check.replayed, storable(check.detail)))

    def lines(self) -> list[str]:
        """The accounting as printable lines: every item found is imported or refused, with the replay check."""
        out = [f"{self.source}: {self.found} item(s) found: {self.runs} imported, {len(self.refused)} refused"]
        for game, n in sorted(self.imported.items()):
            out.append(f"  {game}: {n} imported")
        for cat, n in sorted(Counter(r.category for r in self.refused).items()):
            out.append(f"  refused ({cat}): {n}")
        checked = sum(self.checked.values())
        agreed = sum(self.agreed.values())
        if checked:
            out.append(f"replay check: {agreed} of {checked} checked run(s) reach the recorded outcome under our rules"
                       + (f"; {self.runs - checked} not checked" if self.runs > checked else ""))
            for game in sorted(self.checked):
                off = self.checked[game] - self.agreed[game]
                kinds = Counter(d.kind for d in self.disagreements if d.game == game)
                why = "; ".join(f"{k}: {n}" for k, n in sorted(kinds.items()))
                out.append(f"  {game}: {self.agreed[game]} of {self.checked[game]} agree"
                           + (f", {off} disagree ({why})" if off else ""))
            if self.causes:
                out.append("  causes met (in agreeing runs too): " + "; ".join(
                    f"{g}/{c}: {n}" for (g, c), n in sorted(self.causes.items())))
        elif self.runs:
            out.append("replay check: the source records nothing apart from the moves to compare with")
        if self.check_note:
            out.append(f"  ({self.check_note})")
        return out

    def to_dict(self) -> dict[str, Any]:
        """The accounting as JSON-ready data; a path that is not text (undecodable bytes) as its escape."""
        return _storable({"source": self.source, "found": self.found, "imported": self.runs,
                "imported_by_game": dict(sorted(self.imported.items())), "refused": len(self.refused),
                "refused_by_category": dict(sorted(Counter(r.category for r in self.refused).items())),
                "replay_check": {"note": self.check_note, "checked": sum(self.checked.values()),
                                 "agree": sum(self.agreed.values()),
                                 "by_game": {g: {"checked": n, "agree": self.agreed[g]}
                                             for g, n in sorted(self.checked.items())},
                                 "causes": [{"game": g, "cause": c, "runs": n}
                                            for (g, c), n in sorted(self.causes.items())]},
                "disagreements": [asdict(d) for d in self.disagreements],
                "refusals": [asdict(r) for r in self.refused], "warnings": list(self.warnings),
                "run_dirs": [str(d) for d in self.dirs]})


def write_import_report(result: ImportResult, out: Path) -> list[Path]:
    """``import_report.json`` (the whole accounting), ``import_disagreements.csv`` and ``import_refused.csv``
    in ``out``: a reader can judge both harnesses without rerunning the import."""
    out.mkdir(parents=True, exist_ok=True)
    report = out / REPORT_JSON
    report.write_text(json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    dis = out / DISAGREEMENTS_CSV
    write_atomic(dis, csv_text(["item", "game", "kind", "causes", "recorded", "replayed", "detail"], (
        [d.item, d.game, d.kind, " ".join(d.causes), json.dumps(d.recorded, ensure_ascii=False),
         json.dumps(d.replayed, ensure_ascii=False), d.detail] for d in result.disagreements)))
    ref = out / REFUSED_CSV
    write_atomic(ref, csv_text(["item", "category", "reason"],
                               ([r.item, r.category, r.reason] for r in result.refused)))
    return [report, dis, ref]


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]  # add: None
        raise ValueError(f"the key {storable(twice)[:60]!r} is written twice in one object: no JSON writer does "
                         "that, and which value was meant is unknown")
    return obj


_RELEASED = json.JSONDecoder(object_pairs_hook=_one_value_per_key)


def released_json(text: str) -> Any:
    """A released JSON file's data. Another tool's files were written by a JSON writer, which never writes a key
    twice; a file that does was edited, and Python's reader would keep the last value in silence (a second
    ``records`` list scored instead of the first, a second ``class`` read the game as another scenario): a
    ValueError naming the key, so the item is refused as unreadable."""
    return _RELEASED.decode(text)


def walk(src: Path, refuse: Callable[[str, str], None] | None = None
         ) -> Iterator[tuple[Path, list[str], list[str]]]:
    """``os.walk`` of ``src`` that follows links to folders inside it, each real folder once, never a link to
    a folder above (a loop) nor one out of ``src`` or into /proc, /sys or /dev: a released archive's link to
    ``/proc`` imported other processes' folders as runs. Such a link is given to ``refuse`` (its path relative
    to ``src``, and why), never followed. Folders are visited in name order; ``dirs`` may be pruned."""
    seen: set[str] = set()
    for root, dirs, files in os.walk(src, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        keep = []
        for d in sorted(dirs):
            target = os.path.realpath(os.path.join(root, d))
            if _above(target, real):
                continue
            if not inside(target, src):
                if refuse is not None:
                    refuse(os.path.relpath(os.path.join(root, d), src), storable(
                        f"a link to {target}, out of the source folder (or into /proc, /sys, /dev): not followed"))
                continue
            keep.append(d)
        dirs[:] = keep
        yield Path(root), dirs, sorted(files)


def not_a_file(path: Path, src: Path | None = None) -> str | None:
    """Why a name a folder lists cannot be read as a file (a link to nothing, a pipe, a socket, a device), or
    None for a regular file. Such an item is refused with this reason, never skipped: a log behind a link to a
    disk that is not mounted is an item of the source all the same (and a pipe would block the import). With
    ``src``, a link out of it (or into /proc, /sys, /dev) is refused too: an archive is read as it is."""
    if src is not None and path.exists() and not inside(path, src):
        return storable(f"a link to {os.path.realpath(path)}, out of the source folder (or into /proc, /sys, "
                        "/dev): not followed")
    if is_regular(path):
        return None
    if path.is_symlink() and not path.exists():
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return storable(f"a link to {target}, which does not exist")
    return "not a regular file (a pipe, a socket or a device)"


def _above(target: str, here: str) -> bool:
    """Whether folder ``target`` is ``here`` or one of the folders that hold it."""
    return here == target or here.startswith(target.rstrip(os.sep) + os.sep)


def slug(text: str) -> str:
    """A safe file name for ``text``; a long one is cut and made unique by a digest of the whole (a file
    system takes 255 bytes, and two model names of 120 characters made the import stop)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"
    if len(name) > SLUG_MAX:
        name = f"{name[:SLUG_MAX - 13]}--{hashlib.sha256(text.encode()).hexdigest()[:11]}"
    return name


SLUG_MAX = 120


def write_imported(d: Path, config_text: str, runs: Sequence[tuple[list[dict[str, Any]], dict[str, Any]]],
                   raw: Path, source: str) -> None:
    """Write one run directory of imported runs ((decisions, run record) each), replacing an earlier
    import's files; the manifest says where they came from."""
    if d.exists():
        for fname in _REMOVE_ON_REIMPORT:
            (d / fname).unlink(missing_ok=True)
        shutil.rmtree(d / "report", ignore_errors=True)
    rundir = RunDirectory(d)
    rundir.start(config_text, 0, d.name, False)
    try:
        for decisions, record in runs:
            for dec in decisions:
                rundir.decision(dec)
            rundir.run(record)
    finally:
        rundir.close()
    rundir.write_manifest(status="complete", ended_at=now_iso(), runs_total=len(runs), runs_complete=len(runs),
                          runs_incomplete=0, elapsed_s=0.0, imported_from=storable(os.path.abspath(raw)), source=source)


def check_out(raw: Path, out: Path, source: str) -> None:
    """Refuse an ``--out`` that would lose or mix results, before anything is read or written: one inside the
    source (the next import would read its own output), a run directory, or a folder that holds another
    import's results (another source, or the same kind from another folder): importing there replaced
    that import's run directories without a word (NegotiationArena: 2 runs became 1).

    Importing the same folder again into the same ``--out`` is allowed and replaces that earlier import as
    a whole (what a researcher expects after a new version of the importer: the result equals a fresh
    import; see :func:`remove_stale`)."""
    here, there = _where(raw), _where(out)  # a link to the source is the source
    if _above(here, there):
        raise ImportFailed(f"--out {out} lies inside RAW_DIR {raw}: the next import would read its own output; "
                           "choose a directory outside it")
    if (out / MANIFEST).exists():  # --out a run directory itself: the imports would nest inside its runs
        raise ImportFailed(f"--out {out} is a run directory; import into a directory of its own (its run "
                           "directories are made inside it)")
    for d in sorted(p for p in out.iterdir() if p.is_dir()) if out.is_dir() else []:
        old = _manifest(d)
        if old is None or "imported_from" not in old:
            continue
        same = old.get("source") == source and _where(old["imported_from"]) == here
        if not same:
            raise ImportFailed(
                f"--out {out} holds the import of {old.get('imported_from')} ({old.get('source')}), e.g. {d.name}; "
                f"importing {raw} there would replace or mix its run directories. Import into another --out "
                "(report and analyze take several directories), or remove that import first")


def _where(path: Any) -> str:
    """A folder as the manifests record it: the real path, undecodable bytes as their escapes."""
    return storable(os.path.realpath(str(path)))


def _manifest(d: Path) -> dict[str, Any] | None:
    """A directory's manifest.json as a dict; None when it has none; {} when it cannot be read."""
    manifest = d / MANIFEST
    if not manifest.exists():
        return None
    try:
        old = json.loads(read_text(manifest, 2**20))
    except (OSError, ValueError, RecursionError):
        return {}
    return old if isinstance(old, dict) else {}


def remove_stale(out: Path, written: Sequence[Path], raw: Path, source: str) -> list[str]:
    """Remove the run directories an earlier import of the same folder made and this one did not write (a
    log that is gone, a group now refused): a re-import equals a fresh one, and nothing stale is counted.
    Only the files an import writes are removed (never through a link): anything else a user put there is
    kept, in a folder that is no run directory any more. Returns one warning line per directory."""
    keep = {_where(d) for d in written}
    here = _where(raw)
    gone = []
    for d in sorted(p for p in out.iterdir() if p.is_dir() and not p.is_symlink()) if out.is_dir() else []:
        old = _manifest(d)
        if not (old and old.get("source") == source and "imported_from" in old
                and _where(old["imported_from"]) == here and _where(d) not in keep):
            continue
        for name in (MANIFEST, *_REMOVE_ON_REIMPORT, CONFIG, LOCK):  # the manifest first: no longer a run dir
            (d / name).unlink(missing_ok=True)
        if (d / "report").is_dir() and not (d / "report").is_symlink():
            shutil.rmtree(d / "report")
        left = sorted(p.name for p in d.iterdir())
        if not left:
            d.rmdir()
        gone.append(storable(f"{d.name}: removed, a run directory of the earlier import of {raw} that this import "
                             "no longer makes" + (f" (kept what an import does not write: {', '.join(left[:5])})"
                                                  if left else "")))
    return gone


def plan_dirs(groups: Mapping[Any, Any], out: Path, name_of: Any) -> dict[Any, Path]:
    """One run directory per group, named by ``name_of(key)`` (made a safe, unique file name), checked
    before anything is written: an existing directory of runs played here is never mixed with imports."""
    names: dict[Any, Path] = {}
    used: set[str] = set()
    for key in sorted(groups):
        name = slug(name_of(key))
        base, i = name, 2
        while name in used:
            name, i = f"{base}-{i}", i + 1
        used.add(name)
        names[key] = out / name
    for d in names.values():
        old = _manifest(d)
        if old is not None and "imported_from" not in old:
            raise ImportFailed(f"{d} holds runs that were not imported; choose another --out")
    return names


def _message(m: Any) -> dict[str, str] | None:
    """A stored chat message as {role, content}; Gemini's {"role", "parts"} and role "model" included."""
    if not isinstance(m, Mapping):
        return None
    role = {"model": "assistant"}.get(str(m.get("role")), str(m.get("role")))
    content = m.get("content")
    if content is None and isinstance(m.get("parts"), list):
        content = "".join(p if isinstance(p, str) else str(p.get("text", "")) if isinstance(p, Mapping) else ""
                          for p in m["parts"])
    return {"role": role, "content": content if isinstance(content, str) else json.dumps(content)}


def decisions_of(game: Game, imp: ImportedRun, base: dict[str, Any], label: str, model: str,
                 source: str) -> list[dict[str, Any]]:
    """One decision record per seat and round it acted in; messages and reply text from its stored chat.

    As in a Host conversation, a record carries only the messages new since the seat's previous reply
    (``messages_from`` says where they start); the chat's i-th assistant turn is the seat's i-th action.
    """
    out = []
    key = game.action_key
    for seat in range(imp.n_players):
        chat = imp.messages[seat] if imp.messages is not None and seat < len(imp.messages) else []
        msgs = [x for x in map(_message, chat) if x is not None]
        turns: list[tuple[int, list[dict[str, str]], str | None]] = []
        start = 0
        for i, m in enumerate(msgs):
            if m["role"] == "assistant":
                turns.append((start, msgs[start:i], m["content"]))
                start = i + 1
        acted = [r for r in imp.round_log if seat < len(r["actions"]) and r["actions"][seat] is not None]
        for j, r in enumerate(acted):
            offset, new, text = turns[j] if j < len(turns) else (0, [], None)
            action = r["actions"][seat]
            out.append({
                "lineup": base["lineup"], "session": base["session"], "run": base["run"], "round": r["round"],
                "player": seat, "label": label, "agent": "imported", "model": model, "template": source,
                "decision_index": j, "attempt": 0, "messages": new, "messages_from": offset,
                "response": text, "action": action.get(key), "reply": action, "valid": True,
                "violation": None, "detail": None, "extras": None, "latency_s": None, "tokens_in": None,
                "tokens_out": None, "cached": False, "error": None, "imported": True,
            })
    return out


def run_record(game: Game, setup: Setup, imp: ImportedRun, labels: Sequence[str], models: Sequence[str],
               session: int, source: str, file: str, *, payoffs: Sequence[float | None],
               metrics: Mapping[str, Any], void: bool, winners: Sequence[int] | None = None,
               imported: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run record (the Host's shape) and the decisions of one imported game of sequential moves: the
    outcome (``payoffs``, ``metrics``, ``void``) as the importer decided it, the moves from ``imp``; the
    replay check and anything else the source adds go under ``imported``. Raises ValueError when the record
    could not be written as JSON (a value the file could not hold is the item's problem, not a crash)."""
    n = len(labels)
    last: list[Any] = [None] * n
    for r in imp.round_log:
        for i, a in enumerate(r["actions"]):
            if a is not None and i < n:
                last[i] = a.get(game.action_key)
    base = {"lineup": "imported", "environment": "melee", "session": session, "run": 0, "labels": list(labels),
            "agents": ["imported"] * n, "models": list(models), "params": setup.to_dict(), "private_values": None}
    known = [p for p in payoffs if p is not None]
    if winners is None:  # the best payoff wins, nobody on a tie
        winners = ([i for i, p in enumerate(payoffs) if p == max(known)]
                   if len(known) == n and len(set(known)) > 1 else [])
    check = asdict(imp.check) if imp.check is not None else None
    record = {**base, "complete": True, "rounds": len(imp.round_log), "actions": last, "valid": [True] * n,
              "first_valid": [True] * n, "payoffs": list(payoffs), "winners": list(winners), "void": void,
              "ne_actions": None, "ne_payoffs": None, "payoff_ratio": [None] * n, "deviation": [None] * n,
              "extra": {}, "round_log": imp.round_log, "score": None, "metrics": dict(metrics),
              "imported": {"source": source, "file": file, "recorded": imp.recorded, "check": check,
                           **(imported or {})}}
    decisions = decisions_of(game, imp, base, labels[0], models[0], source)
    for d in decisions:
        d["label"], d["model"] = labels[d["player"]], models[d["player"]]
    return vetted(record, decisions, [*labels, *models])


def vetted(record: dict[str, Any], decisions: list[dict[str, Any]], names: Sequence[str]
           ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The last gate of an imported run before it is written, for every importer: the names (labels,
    models) are text, since they go into config.toml, directory names and CSVs (:class:`ForeignValue`
    ``bad_text`` otherwise); every number of the record is finite and within MAX_GAME_NUMBER, as the game's
    own parameters and payoffs are (``bad_number``, naming where: 1e308 overflowed the summary's sums and a
    report's correlations); any other string that is not text (a lone surrogate in a stored chat) is kept
    with its escape (games/text.py ``storable``), as a raw reply is."""
    for name in names:
        if (problem := name_problem(name)) is not None:
            raise ForeignValue("bad_text", f"the player name {storable(name)[:60]!r} {problem}")
    if (where := _oversized(record, "")) is not None:
        raise ForeignValue("bad_number", f"{where[0].lstrip('.')}: {where[1]!r} is not a finite number within "
                                         f"{MAX_GAME_NUMBER:.0e}"[:240])
    json.dumps(record, allow_nan=False)
    return _storable(record), _storable(decisions)


def _oversized(value: Any, path: str) -> tuple[str, Any] | None:
    """(where, value) of the first number that is not finite or is beyond MAX_GAME_NUMBER; None if none."""
    if isinstance(value, float):
        return None if math.isfinite(value) and abs(value) <= MAX_GAME_NUMBER else (path, value)
    if isinstance(value, int) and not isinstance(value, bool):
        return None if abs(value) <= MAX_GAME_NUMBER else (path, value)
    if isinstance(value, Mapping):
        items: Any = ((f"{path}.{k}", v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for where, v in items:
        if (hit := _oversized(v, where)) is not None:
            return hit
    return None


def _storable(value: Any) -> Any:
    """``value`` with every string (and key) made storable (games/text.py); numbers and the rest as they are."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, Mapping):
        return {storable(k) if isinstance(k, str) else k: _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_storable(v) for v in value)
    return value


def why(exc: BaseException) -> str:
    """An exception as a short single line: a bad parameter names its key and what was expected."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ())) or "value"
        return storable(f"parameter {where}: {first.get('msg')}")
    text = storable(" ".join(str(exc).split()))
    if isinstance(exc, ForeignValue):
        return text[:240]
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__


def category_of(exc: BaseException, default: str = "unreadable") -> str:
    """The refusal category of an item whose reading raised ``exc``: a value the game's own rules refuse
    (:class:`ForeignValue`, the Params model's ValidationError) has its own; anything else is ``default``."""
    if isinstance(exc, ForeignValue):
        return exc.category
    if isinstance(exc, ValidationError):
        return "bad_parameter"
    return default


def _plain(v: Any) -> Any:
    """TOML data: Nones dropped (TOML has no null), tuples as lists."""
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v if x is not None]
    return v


def imported_config(tool: str, name: str, game: Game, players: list[dict[str, Any]], sessions: int,
                    params: Mapping[str, Any], description: str) -> str:
    """config.toml of an imported run directory, written by tomli-w like every config.toml: model names
    and paths taken from other people's files may hold any character (an emoji, a newline)."""
    import tomli_w

    n = sum(int(p.get("count", 1)) for p in players)
    doc = {"experiment": {"name": name, "game": game.name, "environment": "melee", "players_per_game": n,
                          "sessions": sessions, "runs": 1, "seed": 0, "description": description},
           "game": _plain(params), "players": players}
    # a path may hold undecodable bytes: each string's escape is written as text (a backslash, which TOML
    # escapes), never as a TOML escape of a surrogate, which no TOML reader takes back
    return (f"# Imported by `econarena import {tool}`: a record of where these runs came from, not an "
            "experiment to run.\n" + tomli_w.dumps(_storable(doc)))


def refuser(result: ImportResult) -> Callable[[str, str], None]:
    """What :func:`walk` calls for a link it does not follow: the link is an item of the source, refused."""
    return lambda item, reason: result.refuse(item, "unreadable", reason)


IMPORT_LOCK = ".import.lock"


@contextlib.contextmanager
def hold_import(out: Path) -> Iterator[None]:
    """Hold ``out`` for one import from its first check to its last file: a second import into the same
    ``--out`` at the same time is refused (:class:`ImportFailed` naming the holder), never interleaved (both
    succeeded and left ``--out`` mixed); the kernel drops the lock when the process dies."""
    from ..formats.locks import LockBusy, take

    made, lock = not out.exists(), out / IMPORT_LOCK
    new_lock = not lock.exists()
    if (out / MANIFEST).exists():  # a run directory: refused by check_out, and never written into
        yield
        return
    out.mkdir(parents=True, exist_ok=True)
    held = None
    try:
        try:
            held = take(lock, f"import by PID {os.getpid()}, since {now_iso()}")
        except LockBusy as busy:
            holder = storable(busy.holder) or "another process"
            raise ImportFailed(f"--out {storable(str(out))} is being written by another import ({holder}); wait "
                               "for it to end or import into another --out") from None
        yield
    finally:
        if held is not None:
            held.release()
        if new_lock and not (out / REPORT_JSON).exists():  # a refused import leaves nothing behind
            lock.unlink(missing_ok=True)
            if made and not any(out.iterdir()):
                out.rmdir()
