"""A ``[grid]`` cell as part of a row's identity: which cell a table belongs to, and its factors' levels.

Why here: the Host names each table of a grid cell ``<lineup> [<cell>]`` (``melee [ratio=0.5]``) and the
summary (``tally.cell_suffix``) splits its labels by that suffix; every other table must split the same way,
or a number pools cells in silence. This module reads that one identity back from the lineup's name and the
directory's resolved ``[grid]`` (the factors, their declared levels), so the analysis needs nothing of the
hosts. A cell's text is its label as the Host wrote it: ``ratio=0.5,temperature=1``; ``""`` without a grid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..formats.tally import cell_level

EFFORTS = ("minimal", "none", "low", "medium", "high", "xhigh", "max")  # reasoning efforts, least first
_MASKED = re.compile(r"^cell \d+: ")  # a cell whose masked base_url reads like another's (hosts/experiment.py)


def cell_of(lineup: Any, grid: bool) -> str:
    """The cell of a table (its name's `` [...]`` suffix, as the summary reads it), ``""`` outside a grid."""
    text = str(lineup)
    if not grid or " [" not in text or not text.endswith("]"):
        return ""
    return text[text.index(" [") + 2:-1]


def cell_sql(grid_flag: str) -> str:
    """:func:`cell_of` in SQL over a ``lineup`` column; ``grid_flag`` is a boolean expression per row."""
    at = "strpos(lineup, ' [')"
    return (f"CASE WHEN {grid_flag} AND {at} > 0 AND suffix(lineup, ']') "
            f"THEN substr(lineup, {at} + 2, length(lineup) - {at} - 2) ELSE '' END")


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
        x = _number(level)
        if x is not None and all(_number(v) is not None for v in self.levels):
            return x
        if all(v in EFFORTS for v in self.levels) and level in EFFORTS:
            return float(EFFORTS.index(level))
        return float(self.levels.index(level)) if level in self.levels else math.inf

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


def column_names(found: Sequence[Factor], taken: Sequence[str]) -> dict[str, str]:
    """A table's column name per factor key: the key itself, or ``section.key`` where the key is already
    a column (``prompt`` varied by ``[grid.experiment]`` beside the setting column ``prompt``)."""
    out: dict[str, str] = {}
    for f in found:
        out.setdefault(f.key, f"{f.section}.{f.key}" if f.key in taken else f.key)
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


def grid_of(d: Any) -> bool:
    """Whether a scanned directory (``analysis/scan.py``'s ``Dir``) played a ``[grid]``."""
    config = getattr(d, "config", None)
    return bool(factors(config)) if isinstance(config, Mapping) else False


def cell_rank(cell: str, found: Sequence[Factor]) -> tuple[Any, ...]:
    """A sort key putting cells in their factors' natural order (numbers, efforts, else declared)."""
    got = levels(cell, found)
    return (*(f.rank(got[f.key]) if f.key in got else math.inf for f in found), cell)


def factor_columns(table: Any, configs: Mapping[str, Mapping[str, Any]]) -> Any:
    """``table`` (a frame with ``run_dir`` and ``cell``) with one column per grid factor of the study, named
    by its key (:func:`column_names`), holding the row's level: ``""`` where its directory has no such factor.
    Inserted after ``cell``; a study without a grid gets none."""
    per_dir = {d: factors(c) for d, c in configs.items()}
    names: dict[str, str] = {}
    for found in per_dir.values():
        for key, name in column_names(found, list(table.columns)).items():
            names.setdefault(key, name)
    if not names or table.empty and not len(table.columns):
        return table
    out = table.copy()
    at = int(out.columns.get_loc("cell")) + 1
    memo: dict[tuple[str, str], dict[str, str]] = {}

    def level_of(run_dir: str, cell: str) -> dict[str, str]:
        key = (run_dir, cell)
        if key not in memo:
            memo[key] = levels(cell, per_dir.get(run_dir, []))
        return memo[key]

    pairs = list(zip(out["run_dir"].astype(str), out["cell"].fillna("").astype(str)))
    for k, (key, name) in enumerate(names.items()):
        out.insert(at + k, name, [level_of(d, c).get(key, "") for d, c in pairs])
    return out


def study_factors(store: Any) -> list[Factor]:
    """Every factor of a study's grids (a store or anything with ``dirs``), first met first, by key."""
    out: dict[str, Factor] = {}
    for d in getattr(store, "dirs", []) or []:
        for f in factors(getattr(d, "config", {}) or {}):
            out.setdefault(f.key, f)
    return list(out.values())
