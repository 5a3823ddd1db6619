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

import dataclasses
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..formats.files import RELEASED_BYTES, read_text
from ..formats.reading import READ_ERRORS
from ..games import GAMES
from ..games.base import Game, ImportedRun, Outcome
from .common import (
    ImportFailed,
    ImportResult,
    category_of,
    check_out,
    decisions_of,
    imported_config,
    not_a_file,
    plan_dirs,
    refuser,
    released_json,
    remove_stale,
    vetted,
    walk,
    why,
    write_imported,
)

NAME = "gamabench"
DESCRIPTION = "GAMA-Bench raw_results/ (CUHK-ARISE/GAMABench): one JSON file per run"
ITEMS = "GAMA-Bench result files"
OPTIONS = ("unnamed",)
SOURCE = "GAMA-Bench raw_results"
CHECK_NOTE = ("recorded: the per-round totals the reference wrote in round_records (mean and target, attendance, "
              "bill, pot, total bid, whether a plan passed); replayed: the same from our rules; the sealed-bid "
              "auction and battle royale take the recorded winners and hits as they are, so they are not checked")


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


def _folder_of(path: Path, folders: Sequence[Folder]) -> Folder | None:
    parts = Path(os.path.abspath(path)).parent.parts  # the folder as named here: a link keeps its name
    for f in folders:  # longest first: sealed_bid_auction/first_price before any shorter match
        if parts[-len(f.parts):] == f.parts:
            return f
    return None


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
              "imported": {"source": SOURCE, "file": source, "folder": folder.path,
                           "check": dataclasses.asdict(imp.check) if imp.check is not None else None}}
    return vetted(record, decisions_of(game, imp, base, label, model, SOURCE), [label, model])


def _config_text(name: str, folder: Folder, label: str, n: int, sessions: int, params: Mapping[str, Any],
                 raw_dir: Path) -> str:
    return imported_config("gamabench", name, folder.game, [{"agent": "imported", "label": label, "count": n}],
                           sessions, params, f"{SOURCE} from {raw_dir}, folder {folder.path}, label {label}")


def import_dir(src: str | Path, out: str | Path, *, unnamed: str = "unnamed",
               games: Mapping[str, Game] | None = None) -> ImportResult:
    """Read every result file under ``src`` into run directories under ``out`` (see the module doc)."""
    raw, out = Path(src), Path(out)
    if not raw.is_dir():
        raise ImportFailed(f"{raw}: not a directory (expected a GAMA-Bench raw_results/ folder or part of one)")
    folders = declared_folders(games)
    if not unnamed.strip():
        raise ImportFailed("--unnamed-model must not be empty")
    check_out(raw, out, SOURCE)
    result = ImportResult(NAME, check_note=CHECK_NOTE)
    groups: dict[tuple[str, str], list[_Run]] = {}
    meta: dict[tuple[str, str], tuple[Folder, str]] = {}
    unreadable: dict[str, Folder] = {}
    walked = walk(raw, refuser(result))
    for path in sorted(root / name for root, _dirs, files in walked for name in files if not name.startswith(".")):
        rel = path.relative_to(raw).as_posix()
        folder = _folder_of(path, folders)
        if folder is None:
            if path.suffix == ".json":  # READMEs beside the results are not items; a JSON file might be one
                result.refuse(rel, "unknown_folder", f"no registered game reads the folder {path.parent.name!r}")
            continue
        if (problem := not_a_file(path, raw)) is not None:
            result.refuse(rel, "unreadable", problem)
            continue
        if path.suffix != ".json":
            result.refuse(rel, "unreadable", "not a .json result file")
            continue
        parsed = parse_file_name(path.name, folder, unnamed)
        if parsed is None:
            result.refuse(rel, "unknown_format", f"the name does not read as [<model>_]{folder.parts[-1]}_v<N>[_...]"
                          ".json (or with another folder component as the game's name)")
            continue
        model, label, session = parsed
        if folder.game.name in unreadable:
            result.refuse(rel, "not_implemented", f"reading reference results is not implemented for "
                                                  f"{folder.game.name} yet")
            continue
        try:
            data = released_json(read_text(path, RELEASED_BYTES))
        except READ_ERRORS as exc:
            result.refuse(rel, "unreadable", f"not readable JSON ({why(exc)})")
            continue
        if not isinstance(data, dict):
            result.refuse(rel, "unreadable", "expected a JSON object with meta, round_records and player_data")
            continue
        try:
            imp = folder.game.from_reference(data)
        except NotImplementedError:
            unreadable[folder.game.name] = folder
            result.refuse(rel, "not_implemented", f"reading reference results is not implemented for "
                                                  f"{folder.game.name} yet")
            continue
        except Exception as exc:  # hostile or truncated files: one line, never a traceback
            result.refuse(rel, category_of(exc), f"not a readable {folder.game.name} result ({why(exc)})")
            continue
        try:
            record, decisions = _run_record(folder.game, folder, imp, label, model, session, rel)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError, OverflowError) as exc:
            result.refuse(rel, category_of(exc), f"cannot score this {folder.game.name} result ({why(exc)})")
            continue
        key = (folder.path, label)
        runs = groups.setdefault(key, [])
        clash = next((r for r in runs if r.session == session), None)
        if clash is not None:
            result.refuse(rel, "duplicate", f"run {session} of {label} in {folder.path} was already read from "
                                            f"{clash.source.relative_to(raw).as_posix()}")
            continue
        meta[key] = (folder, model)
        runs.append(_Run(session, path, record, decisions))
        result.found += 1
        result.imported[folder.game.name] += 1
        result.count_check(rel, folder.game.name, imp.check)
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
    if result.dirs:  # an import that wrote nothing failed: it removes nothing either
        result.warnings += remove_stale(out, result.dirs, raw, SOURCE)


import_reference = import_dir  # the name earlier versions exported
