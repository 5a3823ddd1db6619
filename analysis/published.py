"""Published numbers as data: the tables of other studies that our imported (or replayed) results are set
beside in the report, so a reader sees at once whether they agree.

Every file in ``analysis/published/`` is one published table in TOML (its header comment says where it
comes from), read the same way:

- ``source``, ``table`` (text, required) and ``url`` (optional): where the numbers are printed;
- ``coordinates``: the keys that place a cell, e.g. ``["model", "game"]`` or ``["scenario", "pair", "metric"]``;
- ``cells``: a list of tables, each with every coordinate (text), ``value`` (a finite number) and an
  optional ``note`` (text) about that one number;
- ``[aliases]`` (optional): a coordinate value as the study writes it -> the names our runs give it
  (GAMA-Bench's ``GPT-4o-0806`` is our imported label ``gpt-4o``).

Why data, not prose: a number copied into a sentence cannot be checked or compared by code; here each
one is a fact with its source, and a test reads them back.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FOLDER = Path(__file__).with_name("published")


class PublishedError(ValueError):
    """A published-data file that does not follow the format (names the file and the key)."""


@dataclass(frozen=True)
class Cell:
    at: Mapping[str, str]  # coordinate -> value
    value: float
    note: str | None = None


@dataclass
class Published:
    """One published table."""

    name: str  # the file's stem
    source: str
    table: str
    coordinates: tuple[str, ...]
    cells: list[Cell]
    url: str | None = None
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def names_of(self, published: str) -> tuple[str, ...]:
        """Every name our runs may give a published coordinate value (itself included)."""
        return (published, *self.aliases.get(published, ()))

    def lookup(self, **at: str) -> Cell | None:
        """The cell at these coordinates, each given as the study writes it or by one of its aliases."""
        for c in self.cells:
            if all(ours in self.names_of(c.at[k]) or ours.casefold() == c.at[k].casefold() for k, ours in at.items()):
                return c
        return None

    def published_name(self, key: str, ours: str) -> str | None:
        """The study's name of a coordinate value that our runs call ``ours`` (None: not in the table)."""
        for c in self.cells:
            v = c.at.get(key)
            if v is not None and (ours in self.names_of(v) or ours.casefold() == v.casefold()):
                return v
        return None


def _text(path: Path, where: str, x: Any) -> str:
    if not isinstance(x, str) or not x.strip():
        raise PublishedError(f"{path}: {where}: expected non-empty text, got {x!r}")
    return x


def parse(path: Path, data: Mapping[str, Any]) -> Published:
    """Check one file's contents; every error names the file and the key."""
    unknown = set(data) - {"source", "table", "url", "coordinates", "cells", "aliases"}
    if unknown:
        raise PublishedError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    source = _text(path, "source", data.get("source"))
    table = _text(path, "table", data.get("table"))
    url = data.get("url")
    if url is not None:
        _text(path, "url", url)
    coords = data.get("coordinates")
    if not isinstance(coords, list) or not coords or not all(isinstance(c, str) and c for c in coords):
        raise PublishedError(f"{path}: coordinates: expected a list of key names, got {coords!r}")
    if {"value", "note"} & set(coords):
        raise PublishedError(f"{path}: coordinates: 'value' and 'note' are not coordinates")
    raw = data.get("cells")
    if not isinstance(raw, list) or not raw:
        raise PublishedError(f"{path}: cells: expected a non-empty list of tables")
    cells, seen = [], set()
    for i, c in enumerate(raw):
        where = f"cells[{i}]"
        if not isinstance(c, dict):
            raise PublishedError(f"{path}: {where}: expected a table, got {c!r}")
        extra = set(c) - {*coords, "value", "note"}
        if extra:
            raise PublishedError(f"{path}: {where}: unknown key(s) {', '.join(sorted(extra))}")
        at = {k: _text(path, f"{where}.{k}", c.get(k)) for k in coords}
        v = c.get("value")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise PublishedError(f"{path}: {where}.value: expected a finite number, got {v!r}")
        note = c.get("note")
        if note is not None:
            _text(path, f"{where}.note", note)
        key = tuple(at[k] for k in coords)
        if key in seen:
            raise PublishedError(f"{path}: {where}: a second cell at {dict(at)}")
        seen.add(key)
        cells.append(Cell(at, float(v), note))
    aliases = data.get("aliases", {})
    if not isinstance(aliases, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) and x for x in v) for v in aliases.values()):
        raise PublishedError(f"{path}: aliases: expected a table of lists of names")
    return Published(path.stem, source, table, tuple(coords), cells, url,
                     {k: tuple(v) for k, v in aliases.items()})


def read(path: str | Path) -> Published:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PublishedError(f"{path}: cannot read ({exc})") from None
    return parse(path, data)


def available(folder: Path = FOLDER) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.toml"))


def load(name: str, folder: Path = FOLDER) -> Published | None:
    """The published table ``name`` (a file stem in ``analysis/published/``), or None when absent."""
    path = folder / f"{name}.toml"
    return read(path) if path.is_file() else None


def load_all(folder: Path = FOLDER, names: Iterable[str] | None = None) -> dict[str, Published]:
    return {n: t for n in (names or available(folder)) if (t := load(n, folder)) is not None}
