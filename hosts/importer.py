"""Import another tool's released results as run directories of ours (``econarena import gamabench``).

Why: a published leaderboard is only comparable with our runs if both are scored by the same code. Each
reference result file becomes one run, read by the game's own ``from_reference`` into its round log and
scored by the game's own ``score``; the run directories then feed ``summary``, ``report`` and the
GAMA-Bench score table exactly like runs played here.

Which game reads which folder is declared by the games (``GameInfo.reference``: folder under
``raw_results/`` and the Params it implies); nothing here names a game. File names follow the reference:
``<model>_<stem>_<tag>.json`` where ``<stem>`` is a component of the folder (``sealed_bid_auction`` for
``sealed_bid_auction/first_price``) and ``<model>_`` may be absent (then ``--unnamed-model``). Tags:

- ``v1_<n>``: a default run; label ``<model>``, session ``n`` (the file's run number);
- ``v<k>_<n>``: run ``n`` of prompt template k; label ``<model>[v<k>]``;
- anything else (``v1``, ``v1_t3``, ``v1_cot1``, ``v1_role2``, ``v1_r4``, ``v1_savept1_3``, ...): a
  robustness variant; its own label ``<model>[<tag>]``, session 0, never mixed into the default scores.

One run directory per (folder, label), named ``<folder>--<label>`` (characters other than letters, digits,
``.``, ``_`` and ``-`` become ``_``). The reference re-asked until an answer parsed, so every imported
reply is valid; decisions come from the stored chats where present and are marked ``imported``. A seat's
recorded action is the mean of its numbers over the rounds (else its last reply), its payoff the one
``from_reference`` gives (none when the file has none), and the winners the seats with the highest payoff,
as for runs of K rounds played here.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..games import GAMES
from ..games.base import Game, ImportedRun, Outcome
from ..rundir import DECISIONS, MANIFEST, RUNS, RunDirectory, now_iso

SOURCE = "GAMA-Bench raw_results"
_REMOVE_ON_REIMPORT = (RUNS, DECISIONS, "summary.json", "summary.csv")


class ImportFailed(Exception):
    """The import cannot start (bad RAW_DIR, an output directory holding runs of our own)."""


@dataclass(frozen=True)
class Folder:
    """One declared reference folder: which game reads it, with which Params overrides."""

    parts: tuple[str, ...]
    game: Game
    overrides: Mapping[str, Any]

    @property
    def path(self) -> str:
        return "/".join(self.parts)


@dataclass
class ImportResult:
    dirs: list[Path] = field(default_factory=list)
    runs: int = 0
    warnings: list[str] = field(default_factory=list)  # one line each, naming the file or folder
    skipped: dict[str, int] = field(default_factory=dict)  # game -> files its from_reference cannot read yet


@dataclass
class _Run:
    session: int
    source: Path
    record: dict[str, Any]
    decisions: list[dict[str, Any]]


def declared_folders(games: Mapping[str, Game] | None = None) -> list[Folder]:
    """Every (folder, game, overrides) the registered games declare, longest folder first."""
    out = []
    for game in (games or GAMES).values():
        for folder, overrides in game.info.reference:
            out.append(Folder(tuple(p for p in folder.split("/") if p), game, dict(overrides)))
    return sorted(out, key=lambda f: -len(f.parts))


def parse_file_name(name: str, folder: Folder, unnamed: str) -> tuple[str, str, int] | None:
    """(model, label, session) from a reference file name, or None when it does not follow the pattern."""
    for stem in reversed(folder.parts):
        m = re.fullmatch(rf"(?:(?P<model>.+?)_)?{re.escape(stem)}_(?P<tag>v\d+(?:_.+)?)\.json", name)
        if m is None:
            continue
        model = m.group("model") or unnamed
        tag = m.group("tag")
        if d := re.fullmatch(r"v1_(\d+)", tag):
            return model, model, int(d.group(1))
        if d := re.fullmatch(r"(v\d+)_(\d+)", tag):
            return model, f"{model}[{d.group(1)}]", int(d.group(2))
        return model, f"{model}[{tag}]", 0
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"


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
                          runs_incomplete=0, elapsed_s=0.0, imported_from=str(raw), source=source)


def plan_dirs(groups: Mapping[Any, Any], out: Path, name_of: Any) -> dict[Any, Path]:
    """One run directory per group, named by ``name_of(key)`` (made a safe, unique file name), checked
    before anything is written: an existing directory of runs played here is never mixed with imports."""
    names: dict[Any, Path] = {}
    used: set[str] = set()
    for key in sorted(groups):
        name = _slug(name_of(key))
        base, i = name, 2
        while name in used:
            name, i = f"{base}-{i}", i + 1
        used.add(name)
        names[key] = out / name
    for d in names.values():
        manifest = d / MANIFEST
        if manifest.exists():
            try:
                old = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                old = {}
            if not isinstance(old, dict) or "imported_from" not in old:
                raise ImportFailed(f"{d} holds runs that were not imported; choose another --out")
    return names


def _folder_of(path: Path, folders: Sequence[Folder]) -> Folder | None:
    parts = path.resolve().parent.parts
    for f in folders:  # longest first: sealed_bid_auction/first_price before any shorter match
        if parts[-len(f.parts):] == f.parts:
            return f
    return None


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


def _decisions(game: Game, imp: ImportedRun, base: dict[str, Any], label: str, model: str) -> list[dict[str, Any]]:
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
                "player": seat, "label": label, "agent": "imported", "model": model, "template": SOURCE,
                "decision_index": j, "attempt": 0, "messages": new, "messages_from": offset,
                "response": text, "action": action.get(key), "reply": action, "valid": True,
                "violation": None, "detail": None, "extras": None, "latency_s": None, "tokens_in": None,
                "tokens_out": None, "cached": False, "error": None, "imported": True,
            })
    return out


def _run_record(game: Game, folder: Folder, imp: ImportedRun, label: str, model: str, session: int,
                source: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run record (the Host's shape) and decisions of one imported file; raises ValueError if unusable."""
    if imp.n_players < 1 or not imp.round_log:
        raise ValueError("no players or no rounds")
    params = game.Params.model_validate({**imp.params, **folder.overrides})
    setup = game.setup(params, imp.n_players, np.random.default_rng(0))
    n = imp.n_players
    actions = [game.summary_action([(r["actions"][i] or {}).get(game.action_key) if i < len(r["actions"]) else None
                                for r in imp.round_log]) for i in range(n)]
    payoffs = list(imp.payoffs) if imp.payoffs is not None and len(imp.payoffs) == n else [None] * n
    ne = game.equilibrium(setup)
    dev: list[float | None] = [None] * n
    ratio: list[float | None] = [None] * n
    if ne is not None:
        out = Outcome(tuple(actions), (True,) * n, tuple(p if p is not None else math.nan for p in payoffs), (),
                      False)
        dev = [game.deviation(setup, out, ne, i) if actions[i] is not None else None for i in range(n)]
        ratio = [p / q if p is not None and q else None for p, q in zip(payoffs, ne.payoffs)]
    base = {"lineup": "melee", "environment": "melee", "session": session, "run": 0, "labels": [label] * n,
            "agents": ["imported"] * n, "models": [model] * n, "params": setup.to_dict(),
            "private_values": setup.values.get("private_value")}
    known = [p for p in payoffs if p is not None]
    winners = [i for i, p in enumerate(payoffs) if p == max(known)] if known and len(known) == n else []
    record = {**base, "complete": True, "rounds": len(imp.round_log), "actions": actions, "valid": [True] * n,
              "first_valid": [True] * n, "payoffs": payoffs, "winners": winners, "void": False,
              "ne_actions": list(ne.actions) if ne is not None else None,
              "ne_payoffs": list(ne.payoffs) if ne is not None else None, "payoff_ratio": ratio,
              "deviation": dev, "extra": {}, "round_log": imp.round_log,
              "score": game.score(setup, imp.round_log), "metrics": game.metrics(setup, imp.round_log),
              "imported": {"source": SOURCE, "file": source, "folder": folder.path}}
    json.dumps(record, allow_nan=False)  # a value the JSONL could not hold is this file's problem, not a crash
    return record, _decisions(game, imp, base, label, model)


def _why(exc: BaseException) -> str:
    """An exception as a short single line: a bad parameter names its key and what was expected."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ())) or "value"
        return f"parameter {where}: {first.get('msg')}"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__


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
    return (f"# Imported by `econarena import {tool}`: a record of where these runs came from, not an "
            "experiment to run.\n" + tomli_w.dumps(doc))


def _config_text(name: str, folder: Folder, label: str, n: int, sessions: int, params: Mapping[str, Any],
                 raw_dir: Path) -> str:
    return imported_config("gamabench", name, folder.game, [{"agent": "imported", "label": label, "count": n}],
                           sessions, params, f"{SOURCE} from {raw_dir}, folder {folder.path}, label {label}")


def import_reference(raw_dir: str | Path, out: str | Path, *, unnamed: str = "unnamed",
                     games: Mapping[str, Game] | None = None) -> ImportResult:
    """Read every result file under ``raw_dir`` into run directories under ``out`` (see the module doc)."""
    raw, out = Path(raw_dir), Path(out)
    if not raw.is_dir():
        raise ImportFailed(f"{raw}: not a directory (expected a GAMA-Bench raw_results/ folder or part of one)")
    folders = declared_folders(games)
    result = ImportResult()
    groups: dict[tuple[str, str], list[_Run]] = {}
    meta: dict[tuple[str, str], tuple[Folder, str]] = {}
    unclaimed: dict[Path, int] = {}
    unreadable: dict[str, Folder] = {}
    for path in sorted(p for p in raw.rglob("*") if p.is_file() and not p.name.startswith(".")):
        rel = path.relative_to(raw).as_posix()
        folder = _folder_of(path, folders)
        if folder is None:
            if path.suffix == ".json":  # notes and READMEs beside the results are not results
                unclaimed[path.parent] = unclaimed.get(path.parent, 0) + 1
            continue
        if path.suffix != ".json":
            result.warnings.append(f"{path}: not a .json result file; skipped")
            continue
        parsed = parse_file_name(path.name, folder, unnamed)
        if parsed is None:
            result.warnings.append(f"{path}: the name does not read as [<model>_]{folder.parts[-1]}_v<N>[_...].json "
                                   "(or with another folder component as the game's name); skipped")
            continue
        model, label, session = parsed
        if folder.game.name in unreadable:
            result.skipped[folder.game.name] += 1
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            result.warnings.append(f"{path}: not readable JSON ({_why(exc)}); skipped")
            continue
        if not isinstance(data, dict):
            result.warnings.append(f"{path}: expected a JSON object with meta, round_records and player_data; "
                                   "skipped")
            continue
        try:
            imp = folder.game.from_reference(data)
        except NotImplementedError:
            unreadable[folder.game.name] = folder
            result.skipped[folder.game.name] = result.skipped.get(folder.game.name, 0) + 1
            continue
        except Exception as exc:  # hostile or truncated files: one line, never a traceback
            result.warnings.append(f"{path}: not a readable {folder.game.name} result ({_why(exc)}); skipped")
            continue
        try:
            record, decisions = _run_record(folder.game, folder, imp, label, model, session, rel)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError) as exc:
            result.warnings.append(f"{path}: cannot score this {folder.game.name} result ({_why(exc)}); skipped")
            continue
        key = (folder.path, label)
        runs = groups.setdefault(key, [])
        clash = next((r for r in runs if r.session == session), None)
        if clash is not None:
            result.warnings.append(f"{path}: run {session} of {label} in {folder.path} was already read from "
                                   f"{clash.source.name}; skipped")
            continue
        meta[key] = (folder, model)
        runs.append(_Run(session, path, record, decisions))
    for parent, count in sorted(unclaimed.items()):
        result.warnings.append(f"{parent}: no registered game reads this folder; {count} file(s) skipped")
    _write(groups, meta, raw, out, result)
    return result


def _write(groups: dict[tuple[str, str], list[_Run]], meta: dict[tuple[str, str], tuple[Folder, str]], raw: Path,
           out: Path, result: ImportResult) -> None:
    names = plan_dirs(groups, out, lambda key: f"{key[0].replace('/', '-')}--{key[1]}")
    for key, runs in sorted(groups.items()):
        d = names[key]
        folder, _model = meta[key]
        runs.sort(key=lambda r: r.session)
        first = runs[0].record
        write_imported(d, _config_text(d.name, folder, key[1], len(first["labels"]), len(runs), first["params"], raw),
                       [(r.decisions, r.record) for r in runs], raw, SOURCE)
        result.dirs.append(d)
        result.runs += len(runs)
