"""Import NegotiationArena's released game logs as run directories (``econarena import negotiationarena``).

Why: the paper's tables (win rates, payoffs, anchoring) are only comparable with runs played here if both
are computed by the same code, and only trustworthy if each imported game is the game the study played.
Every ``game_state.json`` under LOG_DIR is one item; the scenario whose ``log_class`` matches the log's
``class`` reads it (``from_reference``, pure; nothing here names a scenario).

The outcome of record is what the log itself records: the END entry's ``summary`` (final - initial
holdings, the last answer), as the authors' engine executed it and as their figures use it. The moves
are replayed through our rules as a separate check: a game our rules end differently is still imported
with its recorded outcome, and counted and listed with its cause (games/negotiationarena/logs.py). A log
without an END summary (the game never finished; the authors' loader skips those too), a log that is not
JSON, or of a class no scenario reads is refused with its reason, and so is a second copy of a log already
found (``duplicate``); nothing is skipped silently.

One run directory per (scenario, RED model, BLUE model), named ``<scenario>--<red>--vs--<blue>`` (other
characters than letters, digits, ``.``, ``_`` and ``-`` become ``_``); seat 0 is RED, labelled with its
model as the log names it. Sessions count the pair's logs in path order. Decisions come from the stored
conversations and are marked ``imported``. Per-run metrics: the replay's (first offer and response,
proposals) with ``payoff``, ``win``, ``agreement`` and ``final_price`` from the record; ``metrics="paper"``
scores the ultimatum's payoffs as the authors' notebook does (RED's payoff 0 when it equals the total).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..formats.files import RELEASED_BYTES, read_text
from ..formats.reading import READ_ERRORS
from ..games import GAMES
from ..games.base import Game, ImportedRun
from ..games.negotiationarena.common import log_models, reader_for
from .common import (
    ImportFailed,
    ImportResult,
    category_of,
    check_out,
    imported_config,
    not_a_file,
    plan_dirs,
    refuser,
    released_json,
    remove_stale,
    run_record,
    walk,
    why,
    write_imported,
)

NAME = "negotiationarena"
DESCRIPTION = "NegotiationArena game_state.json logs (vinid/NegotiationArena, branch paper_experiment_code)"
ITEMS = "NegotiationArena game logs (game_state.json)"
OPTIONS = ("metrics",)
SOURCE = "NegotiationArena game_state.json"
LOG_NAME = "game_state.json"
CHECK_NOTE = ("recorded: the log's END summary (final - initial holdings); replayed: the moves through our rules "
              "and parser; agree: the same payoffs and the same deal/no deal")


@dataclass
class _Run:
    source: str
    record: dict[str, Any]
    decisions: list[dict[str, Any]]


def na_record(game: Game, imp: ImportedRun, models: list[str], session: int, source: str,
              metrics: str = "correct") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run record and decisions of one log: the outcome as recorded, the replay's other metrics."""
    rec = imp.recorded
    if rec is None:
        raise ValueError("the log records no outcome (no END summary)")
    params = game.Params.model_validate({**imp.params, "metrics": metrics})
    setup = game.setup(params, 2, np.random.default_rng(0))
    m = game.metrics(setup, imp.round_log)
    pay = [float(x) for x in rec["payoff_paper" if metrics == "paper" else "payoff"]]
    m.update({"payoff": pay, "win": [pay[0] > pay[1], pay[0] < pay[1]], "agreement": rec["agreement"],
              "final_price": rec["final_price"]})
    return run_record(game, setup, imp, models, models, session, SOURCE, source, payoffs=rec["payoff"],
                      metrics=m, void=not rec["agreement"],
                      imported={"replay_payoffs": imp.payoffs, "final_response": rec["final_response"]})


def _config_text(name: str, game: Game, models: list[str], sessions: int, params: Mapping[str, Any],
                 log_dir: Path) -> str:
    return imported_config("negotiationarena", name, game, [{"agent": "imported", "label": m} for m in models],
                           sessions, params, f"{SOURCE} from {log_dir}: {models[0]} (RED) vs {models[1]} (BLUE)")


def import_dir(src: str | Path, out: str | Path, *, metrics: str = "correct",
               games: Mapping[str, Game] | None = None) -> ImportResult:
    """Read every ``game_state.json`` under ``src`` into run directories under ``out``."""
    raw, out = Path(src), Path(out)
    if not raw.is_dir():
        raise ImportFailed(f"{raw}: not a directory (expected a folder of NegotiationArena game logs)")
    if metrics not in ("correct", "paper"):
        raise ImportFailed(f"metrics: expected correct or paper, got {metrics!r}")
    games = games or GAMES
    check_out(raw, out, SOURCE)
    result = ImportResult(NAME, check_note=CHECK_NOTE)
    groups: dict[tuple[str, str, str], list[_Run]] = {}
    readers: dict[tuple[str, str, str], Game] = {}
    seen: dict[str, str] = {}  # the file's digest -> where it was found first: a copy is not a second game
    for path in sorted(root / LOG_NAME for root, _dirs, files in walk(raw, refuser(result)) if LOG_NAME in files):
        rel = path.relative_to(raw).as_posix()
        if (problem := not_a_file(path, raw)) is not None:
            result.refuse(rel, "unreadable", problem)
            continue
        try:
            text = read_text(path, RELEASED_BYTES)
            if (first := seen.setdefault(hashlib.sha256(text.encode()).hexdigest(), rel)) != rel:
                result.refuse(rel, "duplicate", f"the same log as {first}: one game, imported once")
                continue
            data = released_json(text)
        except READ_ERRORS as exc:
            result.refuse(rel, "unreadable", f"not readable JSON ({why(exc)})")
            continue
        if not isinstance(data, dict):
            result.refuse(rel, "unreadable", "expected a JSON object with class, players and game_state")
            continue
        game = reader_for(data, games)
        if game is None:
            result.refuse(rel, "unknown_format",
                          f"no registered game reads logs of class {str(data.get('class'))[:60]!r}")
            continue
        try:
            imp = game.from_reference(data)
            models = log_models(data)
            if len(models) != 2:
                raise ValueError("expected two players")
        except Exception as exc:  # hostile or truncated logs: one line, never a traceback
            result.refuse(rel, category_of(exc), f"not a readable {game.name} log ({why(exc)})")
            continue
        if imp.recorded is None:
            result.refuse(rel, "unended", "no END entry with a summary: the game did not finish, so the log records "
                                          "no outcome (the authors' loader skips such logs too)")
            continue
        key = (game.name, models[0], models[1])
        try:
            record, decisions = na_record(game, imp, models, len(groups.get(key, [])), rel, metrics)
        except Exception as exc:
            result.refuse(rel, category_of(exc), f"cannot record this {game.name} log ({why(exc)})")
            continue
        result.found += 1
        result.imported[game.name] += 1
        result.count_check(rel, game.name, imp.check)
        groups.setdefault(key, []).append(_Run(rel, record, decisions))
        readers[key] = game
    _write(groups, readers, raw, out, result)
    return result


import_negotiationarena = import_dir  # the name earlier versions exported


def _write(groups: dict[tuple[str, str, str], list[_Run]], readers: dict[tuple[str, str, str], Game], raw: Path,
           out: Path, result: ImportResult) -> None:
    names = plan_dirs(groups, out, lambda key: f"{key[0]}--{key[1]}--vs--{key[2]}")
    for key, runs in sorted(groups.items()):
        d = names[key]
        config = _config_text(d.name, readers[key], [key[1], key[2]], len(runs), runs[0].record["params"], raw)
        write_imported(d, config, [(r.decisions, r.record) for r in runs], raw, SOURCE)
        result.dirs.append(d)
        result.runs += len(runs)
    if result.dirs:  # an import that wrote nothing failed: it removes nothing either
        result.warnings += remove_stale(out, result.dirs, raw, SOURCE)
