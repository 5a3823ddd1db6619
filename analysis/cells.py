"""A ``[grid]`` cell as part of a row's identity: which cell a table belongs to, and its factors' levels.

Why here: the Host names each table of a grid cell ``<lineup> [<cell>]`` (``melee [ratio=0.5]``) and the
summary (``tally.cell_suffix``) splits its labels by that suffix; every other table must split the same way,
or a number pools cells in silence. This module reads that one identity back from the lineup's name and the
directory's resolved ``[grid]`` (the factors, their declared levels), so the analysis needs nothing of the
hosts. A cell's text is its label as the Host wrote it: ``ratio=0.5,temperature=1``; ``""`` without a grid.
The pure rules (factors, their natural order, a baseline's label) are ``formats/gridcells.py``'s, which the
summary reads too; they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..formats.gridcells import (
    BASELINE_AGENTS,
    EFFORTS,
    Factor,
    cell_rank,
    factors,
    levels,
    llm_only,
    record_factors,
    shown_cell,
)

__all__ = ["BASELINE_AGENTS", "EFFORTS", "Factor", "cell_of", "cell_rank", "column_names",
           "factor_columns", "factors", "grid_of", "levels", "llm_only", "record_factors", "shown_cell",
           "study_factors"]


def cell_of(lineup: Any, grid: bool) -> str:
    """The cell of a table (its name's `` [...]`` suffix, as the summary reads it), ``""`` outside a grid."""
    text = str(lineup)
    if not grid or " [" not in text or not text.endswith("]"):
        return ""
    return text[text.index(" [") + 2:-1]


def column_names(found: Sequence[Factor], taken: Sequence[str]) -> dict[str, str]:
    """A table's column name per factor key: the key itself, or ``section.key`` where the key is already
    a column (``prompt`` varied by ``[grid.experiment]`` beside the setting column ``prompt``)."""
    out: dict[str, str] = {}
    for f in found:
        out.setdefault(f.key, f"{f.section}.{f.key}" if f.key in taken else f.key)
    return out


def grid_of(d: Any) -> bool:
    """Whether a scanned directory (``analysis/scan.py``'s ``Dir``) played a ``[grid]``."""
    config = getattr(d, "config", None)
    return bool(factors(config)) if isinstance(config, Mapping) else False


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
