"""What a loaded study is made of, apart from reading it: the setting columns, the ``Frames`` of pandas
tables, run directories found in folders, and an experiment's row (settings, configuration group, counts).
``analysis/load.py`` documents the columns; the store (``analysis/store.py``) and the loader share these.
"""

from __future__ import annotations

import glob
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..formats.rundir import CONFIG, RUNS
from ..games import GAMES
from ..games.base import GameInfo

SETTING_COLUMNS = ["run_dir", "experiment", "game", "environment", "history", "prompt", "group"]
GROUPS = ("L", "M", "H")
_GROUP_IN_NAME = re.compile(r"(?:^|[-_.])([LMH])(?:$|[-_.])")


@dataclass
class Frames:
    """The loaded run directories; ``experiments`` has one row per directory."""

    players: pd.DataFrame
    runs: pd.DataFrame
    decisions: pd.DataFrame
    experiments: pd.DataFrame
    dirs: list[str] = field(default_factory=list)
    factors: dict[str, list[Any]] = field(default_factory=dict)  # run_dir -> its [grid] factors (cells.Factor)

    def subset(self, **where: Any) -> Frames:
        """Frames restricted to rows whose setting columns match (a value or a list of values)."""

        def keep(df: pd.DataFrame) -> pd.DataFrame:
            mask = pd.Series(True, index=df.index)
            for col, val in where.items():
                vals = list(val) if isinstance(val, (list, tuple, set)) else [val]
                mask &= df[col].isin(vals)
            return df[mask]

        exps = keep(self.experiments)
        return Frames(keep(self.players), keep(self.runs), keep(self.decisions), exps,
                      [d for d in self.dirs if d in set(exps["run_dir"])], self.factors)


def is_run_dir(path: Path) -> bool:
    return (path / RUNS).is_file() and (path / CONFIG).is_file()


def expand_run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories named directly, or found one level below a folder of them (``runs/paper``), or
    matched by a glob the shell did not expand (``'runs/exp/shard-*'`` quoted, as a cluster's job script
    may pass the shards where they lie)."""
    out: list[Path] = []
    named: list[Path] = []
    for arg in paths:
        p = Path(arg)
        if not p.exists() and any(ch in str(arg) for ch in "*?["):
            named += sorted(Path(m) for m in glob.glob(str(arg)))
        else:
            named.append(p)
    for p in named:
        if is_run_dir(p):
            out.append(p)
        elif p.is_dir():
            out += sorted(c for c in p.iterdir() if c.is_dir() and is_run_dir(c))
    seen: set[Path] = set()
    return [p for p in out if not (p.resolve() in seen or seen.add(p.resolve()))]  # type: ignore[func-returns-value]  # add: None


def _info(game: str) -> GameInfo | None:
    found = GAMES.get(game)
    return found.info if found is not None else None


def _scale_group(game: str, scale: float | None) -> str | None:
    """Stake group by the size of the game's numbers (its declared ``stakes_key``)."""
    if scale is None or math.isnan(scale):
        return None
    info = _info(game)
    if info is not None and info.stakes_inclusive:
        return "L" if scale <= 100 else "M" if scale <= 1000 else "H"
    return "L" if scale < 100 else "M" if scale < 1000 else "H"


def experiment_row(d: Any, scale: float, complete: int, incomplete: int) -> dict[str, Any]:
    """The ``experiments`` row of a scanned directory (``analysis/scan.py``'s ``Dir``): its settings, its
    configuration group, its run counts, and ``part`` ("shard K of N" when read without its siblings)."""
    exp, path = d.exp, d.path
    game = exp.get("game", "")
    group, source = exp.get("group"), "config"
    if group not in GROUPS:
        m = _GROUP_IN_NAME.search(exp.get("name", path.name))
        group, source = (m.group(1), "name") if m else (_scale_group(game, scale), "scale")
    return {
        "run_dir": str(path),
        "experiment": exp.get("name", path.name),
        "game": game,
        "environment": exp.get("environment", "melee"),
        "history": exp.get("history", "none"),
        "prompt": exp.get("prompt", "default"),
        "group": group or "?",
        "group_source": source if group else "none",
        "scale": scale,
        "sessions": int(exp.get("sessions", 0)),
        "runs_per_session": int(exp.get("runs", 1)),
        "max_history": int(exp.get("max_history", 0)),
        "players_per_game": int(exp.get("players_per_game", 0)),
        "seed": exp.get("seed"),
        "status": d.manifest.get("status", "unknown"),
        "runs_complete": complete,
        "runs_incomplete": incomplete,
        "description": exp.get("description", ""),
        "part": d.part,
        "duplicates": d.duplicates,
    }
