"""``[grid]``: lists of values for ``[game]``, ``[experiment]`` or ``[llm]`` keys, expanded into cells.

```toml
[grid.game]
ratio = [0.5, 0.6667, 1.5]
[grid.llm]
temperature = [0.0, 1.0]
```

gives 3 x 2 = 6 cells. Each cell is the file with those values set; every table of the experiment is played
once per cell, and the cell's values are recorded with each run (``cell``). Cells are produced lazily in a
fixed order (the first key varies slowest), so a grid of a thousand cells costs nothing until it is played.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..formats.gridcells import cell_level

GRID_SECTIONS = ("game", "experiment", "llm")
# one value per file: they name the run, choose the game and seed everything (and bound its paid calls)
FIXED_EXPERIMENT_KEYS = frozenset({"name", "game", "seed", "models", "description", "group", "environment",
                                   "players_per_game", "max_llm_calls"})
MAX_CELLS = 100_000


@dataclass(frozen=True)
class Axis:
    section: str  # game | experiment | llm
    key: str
    values: tuple[Any, ...]

    @property
    def path(self) -> str:
        return f"{self.section}.{self.key}"


@dataclass(frozen=True)
class Cell:
    index: int
    values: tuple[tuple[str, Any], ...]  # ((section.key, value), ...) in axis order

    @property
    def label(self) -> str:
        """A short, stable name: ``ratio=0.5,temperature=1``; a base_url with its credentials masked (the name
        reaches error messages and, as the table's name, every record)."""
        from ..agents.calls import public_urls

        return ",".join(f"{path.split('.', 1)[1]}="
                        f"{cell_level(public_urls(v) if path.endswith('.base_url') else v)}"
                        for path, v in self.values)

    def section(self, name: str) -> dict[str, Any]:
        """The cell's values for one table (``game``, ``experiment`` or ``llm``)."""
        return {path.split(".", 1)[1]: v for path, v in self.values if path.split(".", 1)[0] == name}

    def to_dict(self) -> dict[str, Any]:
        return dict(self.values)


class GridError(ValueError):
    """A malformed ``[grid]`` table; the message names the key and what was expected."""


def parse_grid(raw: Any) -> tuple[Axis, ...]:
    """Validate the table's shape (each key a non-empty list); the values themselves are checked later by
    the tables they go to, once per cell."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise GridError("[grid] must be a table of tables: [grid.game], [grid.experiment], [grid.llm]")
    axes = []
    for section, table in raw.items():
        if section not in GRID_SECTIONS:
            raise GridError(f"unknown table 'grid.{section}' (expected {', '.join(GRID_SECTIONS)})")
        if not isinstance(table, dict):
            raise GridError(f"'grid.{section}' must be a table of key = [values]")
        for key, values in table.items():
            if section == "experiment" and key in FIXED_EXPERIMENT_KEYS:
                raise GridError(f"'grid.experiment.{key}' cannot vary within one file "
                                f"(fixed per file: {', '.join(sorted(FIXED_EXPERIMENT_KEYS))})")
            if not isinstance(values, list) or not values:
                raise GridError(f"'grid.{section}.{key}': expected a non-empty list of values")
            shown = [repr(v) for v in values]
            if len(set(shown)) != len(shown):
                raise GridError(f"'grid.{section}.{key}': values repeat ({', '.join(shown)})")
            axes.append(Axis(section, key, tuple(values)))
    n = count_cells(axes)
    if n > MAX_CELLS:
        raise GridError(f"[grid] expands to {n:,} cells; at most {MAX_CELLS:,} are allowed in one file")
    return tuple(axes)


def count_cells(axes: tuple[Axis, ...] | list[Axis]) -> int:
    return math.prod(len(a.values) for a in axes) if axes else 1


def iter_cells(axes: tuple[Axis, ...]) -> Iterator[Cell]:
    """Every cell, lazily; with no axes a single empty cell (the file as written)."""
    for i, combo in enumerate(itertools.product(*(a.values for a in axes))):
        yield Cell(i, tuple((a.path, v) for a, v in zip(axes, combo)))
