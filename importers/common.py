"""What every importer shares: the result of an import, writing run directories, decision records from
stored chats, config.toml of imported runs. Each source has its own module beside this one (see
``importers/__init__.py`` for the interface)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..games.base import Game, ImportedRun
from ..rundir import DECISIONS, MANIFEST, RUNS, RunDirectory, now_iso

_REMOVE_ON_REIMPORT = (RUNS, DECISIONS, "summary.json", "summary.csv")


class ImportFailed(Exception):
    """The import cannot start (bad RAW_DIR, an output directory holding runs of our own)."""


@dataclass
class ImportResult:
    dirs: list[Path] = field(default_factory=list)
    runs: int = 0
    warnings: list[str] = field(default_factory=list)  # one line each, naming the file or folder
    skipped: dict[str, int] = field(default_factory=dict)  # game -> files its from_reference cannot read yet


def slug(text: str) -> str:
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
        name = slug(name_of(key))
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


def why(exc: BaseException) -> str:
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


