"""Run directories -> tidy pandas frames, the one input every table, figure and comparison reads.

Why frames: the metrics of ``analysis/metrics.py`` are per label for one directory; a paper needs the same
quantities sliced by game, environment, history, prompt and configuration group across many directories,
with the session as the resampling unit. Three frames carry that:

- ``players``: one row per player and complete run (the unit every metric averages over). ``payoff`` is
  the scored payoff (0 for a player-run with a rule break, in every game; ``game_payoff`` is the game's own
  figure), and ``deviation`` and ``action`` are NaN for such a player-run: a player that never answers
  validly must not look rational in any table or figure (see ``analysis/metrics.py``);
- ``runs``: one row per run (complete or not), with the drawn parameters;
- ``decisions``: one row per decision (reply, violation kind, tokens, latency).

Every row carries the directory's setting columns: ``run_dir, experiment, game, environment, history,
prompt, group`` plus ``cluster`` (``run_dir|lineup|session``), the unit the bootstrap resamples, and
``stratum`` (``run_dir|lineup``), within which it resamples.

Configuration group (L/M/H, the paper's Figure 3): an ``[experiment] group`` key when the config has one;
else a ``L``/``M``/``H`` token in the experiment name (``bc-groups-M``); else the game's scale, the median
over sessions of the drawn beauty-contest upper bound (< 100 L, < 1000 M, else H, after the paper's
[10,100) / [100,1000) / [1000,10000)) or of the auction assets (<= 100 L, <= 1000 M, else H, after the
paper's A = 100 / 1000 / 10000). ``group_source`` says which rule decided.

Roles: in the ``rational`` environment the hard-coded equilibrium opponents are ``role = "opponent"``;
the player under test (the lineup's own label) and everyone elsewhere are ``"player"``. Per-label tables
leave opponents out: they play the equilibrium by construction.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..games import GAMES
from ..games.base import GameInfo
from ..rundir import CONFIG, RUNS

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
                      [d for d in self.dirs if d in set(exps["run_dir"])])


def is_run_dir(path: Path) -> bool:
    return (path / RUNS).is_file() and (path / CONFIG).is_file()


def expand_run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories named directly, or found one level below a folder of them (``runs/paper``)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if is_run_dir(p):
            out.append(p)
        elif p.is_dir():
            out += sorted(c for c in p.iterdir() if c.is_dir() and is_run_dir(c))
    seen: set[Path] = set()
    return [p for p in out if not (p.resolve() in seen or seen.add(p.resolve()))]  # type: ignore[func-returns-value]


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


def study(run_dirs: str | Path | Sequence[str | Path], *, messages: bool = False,
          consumers: Sequence[Any] = ()) -> tuple[Any, Any]:
    """Scan the run directories once into the columnar store (``analysis/store.py``), feeding ``consumers``
    on the way: (store, scan). The caller closes the store."""
    from .scan import scan
    from .store import Store

    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    dirs = expand_run_dirs(run_dirs)
    if not dirs:
        raise FileNotFoundError(f"no run directories (with runs.jsonl and config.toml) in: "
                                f"{', '.join(map(str, run_dirs))}")
    store = Store(messages)
    try:
        found = scan(dirs, [store, *consumers])
        store.finish()
    except BaseException:
        store.close()
        raise
    return store, found


def load(run_dirs: str | Path | Sequence[str | Path], *, messages: bool = False) -> Frames:
    """Load one or many run directories (or folders of them) into tidy frames.

    ``messages=True`` keeps the prompt messages in ``decisions`` (as JSON text); they are large, so off by
    default. Only complete runs enter ``players`` and ``decisions``; ``runs`` keeps every run with its
    ``complete`` flag. A run met twice (a shard beside its merge) counts once, with a warning on stderr.
    The frames hold the whole study in memory: the report does not use them for the families' data
    (``analysis/store.py`` answers by aggregate).
    """
    store, found = study(run_dirs, messages=messages)
    try:
        for w in found.warnings:
            print(f"econarena: warning: {w}", file=sys.stderr)
        return store.frames()
    finally:
        store.close()


def export(frames: Frames, out: str | Path) -> list[Path]:
    """Write ``decisions.parquet``, ``runs.parquet`` (one row per run) and ``players.parquet`` (one row per
    player and complete run: the tidy table most analyses start from)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in (("decisions.parquet", frames.decisions), ("runs.parquet", frames.runs),
                     ("players.parquet", frames.players)):
        df.to_parquet(out / name, index=False)
        written.append(out / name)
    return written
