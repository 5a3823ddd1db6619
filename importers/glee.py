"""Import GLEE's released games as run directories (``econarena import glee``).

Why: GLEE (Shapira et al.) released every game it played, models against models and people against a
model, in its repository's ``Data/`` folder. Read into our run directories they feed ``econarena analyze
glee`` and the report exactly like runs played here, and the human games let a model's play stand beside
people's.

Source layout (any part of it): ``Data/{llm_vs_llm,human_vs_llm}/<family>/<c>/<c>/<c>/<GAME_ID>/`` with
``config.json`` (players, ``game_type``, ``game_args``), ``game.csv`` (one row per move) and, for model
players, ``log_player_1.csv`` / ``log_player_2.csv`` (prompt, response). Every folder holding a
``config.json`` or a ``game.csv`` is one item (folders named ``.partial`` and hidden ones are not games);
the game whose ``glee_game_type`` is the config's ``game_type`` reads it (``from_reference``, pure; nothing
here names a game).

The outcome of record is GLEE's own reading of ``game.csv`` (the last row's decision, the accepted offer in
the row before it, the rounds played); the replay of the rows through our rules is the check beside it,
counted and listed. Refused, with the reason: a folder without config.json or game.csv, files that cannot
be read, a game_type no game reads, a game whose last row is a proposal nobody answered (``incomplete``), a
second folder of a game id already found (``duplicate``: a copy of the tree inside the tree).

Players: a person (``player_<i>_type = "otree"``) is labelled ``human``; the model that played people
(``otree_LLM``) is ``gemini-1.5-flash``, as GLEE's analysis maps it; a model name loses its provider prefix
(``vertex_ai/gemini-1.5-pro`` -> ``gemini-1.5-pro``, GLEE's ``load_data``). The raw names stay in the
records' ``models``. One run directory per (game, Alice's label, Bob's label); runs in path order.
Parameters are the games' Params (GLEE's "infinite" horizons 25, 30 and 99 all become the family's
infinite level; the raw value is kept in the record).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..formats.files import RELEASED_BYTES, open_regular, read_text
from ..formats.reading import READ_ERRORS
from ..games import GAMES
from ..games.base import Game, ImportedRun, Setup
from ..games.glee.common import reader_for
from ..games.text import storable
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

NAME = "glee"
DESCRIPTION = "GLEE's released games (eilamshapira/GLEE, Data/llm_vs_llm and Data/human_vs_llm)"
ITEMS = "GLEE games (folders with config.json and game.csv)"
OPTIONS: tuple[str, ...] = ()
SOURCE = "GLEE Data"
CHECK_NOTE = ("recorded: GLEE's reading of game.csv (the last decision, the offer before it, the rounds); "
              "replayed: the rows through our rules; agree: the same deal, round and split (persuasion: the same "
              "purchases by quality)")
CONFIG, GAME_CSV = "config.json", "game.csv"
HUMAN = "human"
HUMAN_OPPONENT = "gemini-1.5-flash"  # GLEE's analysis: the otree_LLM player is gemini-1.5-flash


@dataclass
class _Run:
    source: str
    record: dict[str, Any]
    decisions: list[dict[str, Any]]


def label_of(config: Mapping[str, Any], seat: int) -> tuple[str, str]:
    """(label, raw model name) of a seat: ``human`` for a person, GLEE's normalised name for a model."""
    kind = str(config.get(f"player_{seat + 1}_type", ""))
    args = config.get(f"player_{seat + 1}_args")
    model = str(args.get("model_name", "")) if isinstance(args, Mapping) else ""
    if kind == "otree":
        return HUMAN, model or "otree"
    if kind == "otree_LLM":
        return HUMAN_OPPONENT, model or "otree_LLM"
    if not model:
        raise ValueError(f"config.json: player_{seat + 1}_args has no model_name")
    return (model.split("/", 1)[1] if "/" in model else model), model


def _read_csv(path: Path) -> list[dict[str, str]]:
    """Rows as {column: text}; quoted newlines kept; empty cells beyond the header are dropped.

    A column named twice, or a row with text beyond the header's columns, is a ValueError naming the file:
    GLEE's reader (pandas) reads the first of two ``decision`` columns where a dict keeps the last, and
    refuses a row longer than its header, so either file would be read as another game than GLEE read."""
    with io.TextIOWrapper(open_regular(path), encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            return []
        names = list(reader.fieldnames)
        if len(set(names)) < len(names):
            twice = next(n for i, n in enumerate(names) if n in names[:i])
            raise ValueError(f"{path.name}: the column {storable(twice)[:40]!r} is named twice in the header")
        rows = []
        for row in reader:
            beyond = row.pop(None, None)
            if beyond and any(str(x).strip() for x in beyond):
                raise ValueError(f"{path.name} line {reader.line_num}: {len(beyond)} cell(s) beyond the header's "
                                 f"{len(names)} columns (an unquoted comma?)")
            rows.append({k: ("" if v is None else v) for k, v in row.items()})
        return rows


def _chat(path: Path) -> list[dict[str, str]] | None:
    """A model seat's ``log_player_<i>.csv`` as a chat: its prompts (user) and replies (assistant)."""
    if not path.is_file():
        return None
    out: list[dict[str, str]] = []
    for row in _read_csv(path):
        out += [{"role": "user", "content": row.get("prompt", "")},
                {"role": "assistant", "content": row.get("response", "")}]
    return out


def game_folders(src: Path, refuse: Callable[[str, str], None] | None = None) -> list[Path]:
    """Every folder under ``src`` (itself included) that holds config.json or game.csv, in path order."""
    found = []
    for root, dirs, files in walk(src, refuse):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # .partial: unfinished games, not released
        if CONFIG in files or GAME_CSV in files:
            found.append(root)
    return sorted(found)


def _human(folder: Path, config: Mapping[str, Any]) -> bool:
    """A person played one seat: the folder lies under ``human_vs_llm`` or a player is ``otree``."""
    return "human_vs_llm" in folder.resolve().parts or any(
        str(config.get(f"player_{i}_type", "")) == "otree" for i in (1, 2))


def glee_record(game: Game, imp: ImportedRun, labels: list[str], models: list[str], session: int, rel: str,
                extra: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rec = imp.recorded or {}
    setup = game.setup(game.Params.model_validate(imp.params), 2, np.random.default_rng(0))
    setup = Setup(2, {**setup.to_dict(), **rec.get("setup", {})})
    metrics = {**game.metrics(setup, imp.round_log), **rec.get("metrics", {})}
    return run_record(game, setup, imp, labels, models, session, SOURCE, rel, payoffs=rec["payoff"],
                      metrics=metrics, void=not rec.get("agreement", False), winners=rec.get("winners"),
                      imported={**extra, "metrics_code": rec.get("metrics_code"),
                                "max_rounds_raw": rec.get("max_rounds_raw"), "replay_payoffs": imp.payoffs})


def _config(folder: Path) -> dict[str, Any]:
    config = released_json(read_text(folder / CONFIG, RELEASED_BYTES, "utf-8-sig"))
    if not isinstance(config, dict):
        raise ValueError("config.json: expected a JSON object")
    return config


def import_dir(src: str | Path, out: str | Path, *, games: Mapping[str, Game] | None = None) -> ImportResult:
    """Read every GLEE game folder under ``src`` into run directories under ``out`` (see the module doc).

    Two passes, so memory holds one run directory's games at a time (the release has ~80,000): the first
    reads only the configs (who played which game), the second reads, checks and writes group by group."""
    raw, out = Path(src), Path(out)
    if not raw.is_dir():
        raise ImportFailed(f"{raw}: not a directory (expected GLEE's Data/ folder or part of it)")
    games = games or GAMES
    check_out(raw, out, SOURCE)
    result = ImportResult(NAME, check_note=CHECK_NOTE)
    plan: dict[tuple[str, str, str], list[tuple[Path, str]]] = {}
    readers: dict[tuple[str, str, str], Game] = {}
    families = {getattr(g, "glee_game_type", None) for g in games.values()} - {None}
    ids: dict[str, str] = {}  # game id -> where it was found first: a second copy is not a second game
    for folder in game_folders(raw, refuser(result)):
        rel = folder.relative_to(raw).as_posix() if folder != raw else folder.name
        if (first := ids.setdefault(folder.name, rel)) != rel:
            result.refuse(rel, "duplicate", f"game id {folder.name} is also at {first}: one game, imported once")
            continue
        missing = [f for f in (CONFIG, GAME_CSV) if not (folder / f).is_file()]
        if missing:
            result.refuse(rel, "missing_file", f"no {' and no '.join(missing)} in the game folder")
            continue
        if (problem := next(filter(None, (not_a_file(folder / f, raw) for f in (CONFIG, GAME_CSV))), None)):
            result.refuse(rel, "unreadable", problem)
            continue
        try:
            config = _config(folder)
        except READ_ERRORS as exc:
            result.refuse(rel, "unreadable", f"config.json is not readable ({why(exc)})")
            continue
        game = reader_for(config, games)
        if game is None:
            result.refuse(rel, "unknown_format", f"config.json: no registered game reads game_type "
                                                 f"{str(config.get('game_type'))[:40]!r}")
            continue
        if (families - {config.get("game_type")}) & set(folder.relative_to(raw).parts if folder != raw else ()):
            result.warnings.append(storable(f"{rel}: the folder says another family than config.json's game_type "
                                            f"{config.get('game_type')!r}; read as the config says"))
        try:
            labels = [label_of(config, i)[0] for i in (0, 1)]
        except ValueError as exc:
            result.refuse(rel, "unreadable", why(exc))
            continue
        key = (game.name, labels[0], labels[1])
        plan.setdefault(key, []).append((folder, rel))
        readers[key] = game
    names = plan_dirs(plan, out, lambda key: f"{key[0]}--{key[1]}--vs--{key[2]}")
    for key, items in sorted(plan.items()):
        runs = [run for run in (_one(readers[key], folder, rel, result) for folder, rel in items) if run]
        for i, run in enumerate(runs):  # sessions count the group's imported games in path order
            run.record["session"] = i
            for dec in run.decisions:
                dec["session"] = i
        if not runs:
            continue
        d = names[key]
        players = [{"agent": "imported", "label": lab} for lab in key[1:]]
        config_text = imported_config(NAME, d.name, readers[key], players, len(runs), runs[0].record["params"],
                                      f"{SOURCE} from {raw}: {key[1]} (Alice) vs {key[2]} (Bob); the parameters "
                                      "vary by run (each run's params)")
        write_imported(d, config_text, [(r.decisions, r.record) for r in runs], raw, SOURCE)
        result.dirs.append(d)
        result.runs += len(runs)
    if result.dirs:  # an import that wrote nothing failed: it removes nothing either
        result.warnings += remove_stale(out, result.dirs, raw, SOURCE)
    result.refused.sort(key=lambda r: r.item)
    result.disagreements.sort(key=lambda d: d.item)
    return result


def _one(game: Game, folder: Path, rel: str, result: ImportResult) -> _Run | None:
    """One game folder read, checked and recorded; None (and a refusal) when it cannot be."""
    try:
        config = _config(folder)
        human = _human(folder, config)
        rows = _read_csv(folder / GAME_CSV)
        labels_models = [label_of(config, i) for i in (0, 1)]
        chats = [None if lab == HUMAN else _chat(folder / f"log_player_{i + 1}.csv")
                 for i, (lab, _m) in enumerate(labels_models)]
        imp = game.from_reference({"config": config, "rows": rows, "human": human,
                                   "messages": chats if any(c is not None for c in chats) else None})
    except Exception as exc:  # hostile or truncated files: one line, never a traceback
        result.refuse(rel, category_of(exc), f"not a readable {game.name} game ({why(exc)})")
        return None
    if not (imp.recorded or {}).get("finished"):
        result.refuse(rel, "incomplete", "the last row of game.csv is a move nobody answered: the game did not "
                                         "finish")
        return None
    labels = [lm[0] for lm in labels_models]
    models = [lm[1] for lm in labels_models]
    extra: dict[str, Any] = {"game_id": folder.name, "kind": HUMAN if human else "llm",
             "human_seats": [i for i, lab in enumerate(labels) if lab == HUMAN],
             **{k: config[k] for k in ("experiment_name", "name", "date", "commit") if k in config}}
    try:
        record, decisions = glee_record(game, imp, labels, models, 0, rel, extra)
    except Exception as exc:
        result.refuse(rel, category_of(exc), f"cannot record this {game.name} game ({why(exc)})")
        return None
    result.found += 1
    result.imported[game.name] += 1
    result.count_check(rel, game.name, imp.check)
    return _Run(rel, record, decisions)
