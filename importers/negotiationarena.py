"""Import NegotiationArena's released game logs as run directories (``econarena import negotiationarena``).

Why: the paper's tables (win rates, payoffs, anchoring) are only comparable with runs played here if both
are computed by the same code. Every ``game_state.json`` under LOG_DIR becomes one run: the scenario whose
``log_class`` matches the log's ``class`` replays it through its own rules (``from_reference``, pure), so
payoffs and metrics are the game's own. Which scenario reads which class is declared by the games; nothing
here names one.

One run directory per (scenario, RED model, BLUE model), named ``<scenario>--<red>--vs--<blue>`` (other
characters than letters, digits, ``.``, ``_`` and ``-`` become ``_``); seat 0 is RED, labelled with its
model as the log names it. Sessions count the pair's logs in path order. The released logs hold only games
that parsed (broken ones were moved aside by the authors), so every imported reply is valid; decisions come
from the stored conversations and are marked ``imported``. A log that cannot be read or replayed is a
warning naming the file, never a crash.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..games import GAMES
from ..games.base import Game, ImportedRun
from ..games.negotiationarena.common import log_models, reader_for
from .common import ImportFailed, decisions_of, imported_config, plan_dirs, why, write_imported

SOURCE = "NegotiationArena game_state.json"
LOG_NAME = "game_state.json"


@dataclass
class NAImportResult:
    dirs: list[Path] = field(default_factory=list)
    runs: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Run:
    source: str
    record: dict[str, Any]
    decisions: list[dict[str, Any]]


def run_record(game: Game, imp: ImportedRun, models: list[str], session: int, source: str,
               metrics: str = "correct") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run record (the Host's shape) and the decisions of one replayed log."""
    params = game.Params.model_validate({**imp.params, "metrics": metrics})
    setup = game.setup(params, 2, np.random.default_rng(0))
    pay = [float(p) for p in imp.payoffs] if imp.payoffs is not None else [0.0, 0.0]
    last: list[Any] = [None, None]
    for r in imp.round_log:
        for i, a in enumerate(r["actions"]):
            if a is not None:
                last[i] = a.get(game.action_key)
    m = game.metrics(setup, imp.round_log)
    base = {"lineup": "imported", "environment": "melee", "session": session, "run": 0, "labels": list(models),
            "agents": ["imported"] * 2, "models": list(models), "params": setup.to_dict(), "private_values": None}
    winners = [i for i in (0, 1) if pay[i] == max(pay)] if pay[0] != pay[1] else []
    record = {**base, "complete": True, "rounds": len(imp.round_log), "actions": last, "valid": [True, True],
              "first_valid": [True, True], "payoffs": pay, "winners": winners, "void": not m.get("agreement"),
              "ne_actions": None, "ne_payoffs": None, "payoff_ratio": [None, None], "deviation": [None, None],
              "extra": {"ended": m.get("ended"), "price": m.get("final_price")}, "round_log": imp.round_log,
              "score": None, "metrics": m, "imported": {"source": SOURCE, "file": source}}
    json.dumps(record, allow_nan=False)
    decisions = decisions_of(game, imp, base, models[0], models[0], SOURCE)
    for d in decisions:
        d["label"] = d["model"] = models[d["player"]]
        d["template"] = SOURCE
    return record, decisions


def _config_text(name: str, game: Game, models: list[str], sessions: int, params: Mapping[str, Any],
                 log_dir: Path) -> str:
    return imported_config("negotiationarena", name, game, [{"agent": "imported", "label": m} for m in models],
                           sessions, params, f"{SOURCE} from {log_dir}: {models[0]} (RED) vs {models[1]} (BLUE)")


def import_negotiationarena(log_dir: str | Path, out: str | Path, *, metrics: str = "correct",
                            games: Mapping[str, Game] | None = None) -> NAImportResult:
    """Read every ``game_state.json`` under ``log_dir`` into run directories under ``out``."""
    raw, out = Path(log_dir), Path(out)
    if not raw.is_dir():
        raise ImportFailed(f"{raw}: not a directory (expected a folder of NegotiationArena game logs)")
    games = games or GAMES
    result = NAImportResult()
    groups: dict[tuple[str, str, str], list[_Run]] = {}
    readers: dict[tuple[str, str, str], Game] = {}
    for path in sorted(raw.rglob(LOG_NAME)):
        if not path.is_file():
            continue
        rel = path.relative_to(raw).as_posix()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            result.warnings.append(f"{path}: not readable JSON ({why(exc)}); skipped")
            continue
        if not isinstance(data, dict):
            result.warnings.append(f"{path}: expected a JSON object with class, players and game_state; skipped")
            continue
        game = reader_for(data, games)
        if game is None:
            result.warnings.append(f"{path}: no registered game reads logs of class {str(data.get('class'))[:60]!r}; "
                                   "skipped")
            continue
        try:
            imp = game.from_reference(data)
            models = log_models(data)
            if len(models) != 2:
                raise ValueError("expected two players")
            key = (game.name, models[0], models[1])
            session = len(groups.get(key, []))
            record, decisions = run_record(game, imp, models, session, rel, metrics)
        except Exception as exc:  # hostile or truncated logs: one line, never a traceback
            result.warnings.append(f"{path}: not a readable {game.name} log ({why(exc)}); skipped")
            continue
        groups.setdefault(key, []).append(_Run(rel, record, decisions))
        readers[key] = game
    _write(groups, readers, raw, out, result)
    return result


def _write(groups: dict[tuple[str, str, str], list[_Run]], readers: dict[tuple[str, str, str], Game], raw: Path,
           out: Path, result: NAImportResult) -> None:
    names = plan_dirs(groups, out, lambda key: f"{key[0]}--{key[1]}--vs--{key[2]}")
    for key, runs in sorted(groups.items()):
        d = names[key]
        config = _config_text(d.name, readers[key], [key[1], key[2]], len(runs), runs[0].record["params"], raw)
        write_imported(d, config, [(r.decisions, r.record) for r in runs], raw, SOURCE)
        result.dirs.append(d)
        result.runs += len(runs)
