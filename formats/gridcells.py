"""A ``[grid]`` cell's factors and their natural order, read the same by the summary and by the analysis.

Why here: the summary (``tally.py``, fed by the run directory as it writes) and the report (``analysis/``)
must list a grid's cells alike (numbers by value, reasoning efforts least first, anything else as
declared) and must name a baseline's row alike (a ``[grid.llm]`` factor changes the LLM seats only, so a
baseline's label leaves it out). formats may not read analysis, so the pure rules live here and
``analysis/cells.py`` re-exports them. A cell's text is its label as the Host writes it (hosts/grid.py):
``ratio=0.5,temperature=1``; ``""`` without a grid. This module imports nothing else of ours.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# reasoning efforts, least first: the names the providers accept (agents/providers: none ... high; "none" is
# thinking off, so below "minimal"), then the larger ones some APIs add
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
# `agents` values in run records that call no model API (the Host's baselines, and imported runs): a
# [grid.llm] factor never changes how they play
BASELINE_AGENTS = frozenset({"rational", "random", "scripted", "level_k", "policy", "human", "imported"})
_MASKED = re.compile(r"^cell \d+: ")  # a cell whose masked base_url reads like another's (hosts/experiment.py)


def cell_level(v: Any) -> str:
    """A grid factor's level as a cell's name writes it (``ratio=0.5,temperature=1``): whole floats without
    ``.0``, tables without spaces. The Host names cells by it and the analysis reads levels back by it, so
    the two cannot drift apart."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    if isinstance(v, (dict, list)):
        return repr(v).replace(" ", "")
    return str(v)


@dataclass(frozen=True)
class Factor:
    """One ``[grid]`` key: its section (game, experiment, llm), its name and its levels as declared."""

    section: str
    key: str
    levels: tuple[str, ...]  # shown text, declared order

    @property
    def ordered(self) -> bool:
        """Levels with a natural order (numbers, reasoning efforts): a trend across them means something."""
        return len(self.levels) > 2 and all(_number(v) is not None for v in self.levels) or (
            len(self.levels) > 2 and all(v in EFFORTS for v in self.levels))

    def rank(self, level: str) -> float:
        """A level's position on the factor's scale: the number itself, an effort's rank, else its place."""
        return _rank(self, level)

    def natural(self) -> list[str]:
        """The levels in their natural order: numeric, effort, else as declared."""
        return sorted(self.levels, key=lambda v: (self.rank(v), self.levels.index(v)))

    @property
    def numeric(self) -> bool:
        """Every level a number (a ratio, a temperature, a token budget)."""
        return all(_number(v) is not None for v in self.levels)

    def positions(self) -> dict[str, float]:
        """Where each level sits on the axis a trend is fitted along (only for :attr:`ordered` factors):
        a number at its value (the design's own spacing); an effort at its step among the grid's levels
        (0, 1, 2, ... from the lowest), since efforts have an order but no distance."""
        order = self.natural()
        if self.numeric:
            return {v: float(v) for v in order}
        return {v: float(i) for i, v in enumerate(order)}


@lru_cache(maxsize=65_536)
def _rank(factor: Factor, level: str) -> float:
    """:meth:`Factor.rank`, memoized: sort keys ask it for the same few levels again and again."""
    x = _number(level)
    if x is not None and all(_number(v) is not None for v in factor.levels):
        return x
    if all(v in EFFORTS for v in factor.levels) and level in EFFORTS:
        return float(EFFORTS.index(level))
    return float(factor.levels.index(level)) if level in factor.levels else math.inf


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def factors(config: Mapping[str, Any]) -> list[Factor]:
    """The grid's factors in the Host's axis order (the first varies slowest); none without a grid."""
    grid = config.get("grid")
    out = []
    if isinstance(grid, Mapping):
        for section, table in grid.items():
            if isinstance(table, Mapping):
                for key, values in table.items():
                    if isinstance(values, list):
                        out.append(Factor(str(section), str(key), tuple(cell_level(v) for v in values)))
    return out


def record_factors(cell: Any) -> list[Factor]:
    """The factors a run record's ``cell`` names (``{"game.ratio": 0.5, "llm.temperature": 1}``, in axis
    order), without their declared levels (a record holds its own only); none for anything else."""
    if not isinstance(cell, Mapping):
        return []
    out = []
    for path in cell:
        if not isinstance(path, str) or "." not in path:
            return []
        section, key = path.split(".", 1)
        out.append(Factor(section, key, ()))
    return out


def levels(cell: str, found: Sequence[Factor]) -> dict[str, str]:
    """Each factor's level in a cell's text (``ratio=0.5,temperature=1``), by the factors' keys in order;
    a factor the text does not hold (another directory's grid) is left out."""
    text = _MASKED.sub("", cell)
    out: dict[str, str] = {}
    for i, f in enumerate(found):
        head = f"{f.key}="
        if not text.startswith(head):
            return out
        text = text[len(head):]
        if i + 1 < len(found):
            nxt = f",{found[i + 1].key}="
            cut = text.find(nxt)
            if cut < 0:
                return out
            out[f.key], text = text[:cut], text[cut + 1:]
        else:
            out[f.key] = text
    return out


def llm_only(found: Sequence[Factor]) -> set[str]:
    """The keys varied only by ``[grid.llm]``: they change the LLM seats, never a baseline's play."""
    llm = {f.key for f in found if f.section == "llm"}
    return llm - {f.key for f in found if f.section != "llm"}


def shown_cell(cell: str, found: Sequence[Factor], baseline: bool) -> str:
    """The cell as a label shows it: a baseline's label leaves out the ``[grid.llm]`` factors (they do not
    change how it plays), so its copies across those cells read alike; ``""`` when nothing is left."""
    if not cell or not baseline:
        return cell
    drop = llm_only(found)
    if not drop:
        return cell
    got = levels(cell, found)
    if len(got) != len(found):
        return cell
    return ",".join(f"{f.key}={got[f.key]}" for f in found if f.key not in drop)


def cell_rank(cell: str, found: Sequence[Factor]) -> tuple[Any, ...]:
    """A sort key putting cells in their factors' natural order (numbers, efforts, else declared). A
    baseline's cell without its ``[grid.llm]`` factors (:func:`shown_cell`) ranks by the factors it keeps,
    right after the cells it pools. Memoized: tables sort the same few hundred cells row after row."""
    return _cell_rank(cell, tuple(found))


@lru_cache(maxsize=65_536)
def _cell_rank(cell: str, found: tuple[Factor, ...]) -> tuple[Any, ...]:
    got = levels(cell, found)
    if len(got) < len(found) and (drop := llm_only(found)):
        kept = levels(cell, [f for f in found if f.key not in drop])
        if len(kept) == len(found) - len(drop):
            got = kept
    return (*(f.rank(got[f.key]) if f.key in got else math.inf for f in found), cell)
