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

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .frames import (  # noqa: F401 - the loader's public names, as they always were
    _GROUP_IN_NAME,
    GROUPS,
    SETTING_COLUMNS,
    Frames,
    expand_run_dirs,
    experiment_row,
    is_run_dir,
)


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
