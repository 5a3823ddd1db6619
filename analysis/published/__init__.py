"""Published numbers as data: one TOML file per paper figure or table, each with its source and a header
that documents its format (``gamabench_leaderboard.toml``, ``negotiationarena_figure3.toml``). Importers print
them beside what the released logs give; the report sets them beside our scores. Reading only.

Two readings: :func:`load` gives a file's TOML as it is; :func:`table` checks it and gives a
:class:`Published` whose cells are placed by their coordinates, for any file that follows the format:

- where the numbers come from: ``source`` and ``table`` as text (``url`` optional), or ``[source]`` with
  ``paper`` and ``figure``;
- ``cells`` (or ``[[cell]]``): one table per published number: its coordinates (text: ``model`` and
  ``game``; ``scenario``, ``p1``, ``p2`` and ``metric`` ...), ``value`` (a finite number) and optional
  attributes: ``note`` (what a reader should know about that number), ``decimals`` (as printed: ours agrees
  when it rounds to the value), ``formula`` and ``correct`` (the value by the correct formula, where the
  study's differs);
- ``coordinates`` (optional): the coordinate keys; by default every text key of the first cell but the
  attributes;
- ``[aliases]`` (optional): a coordinate value as the study writes it -> the names our runs give it.

Why data, not prose: a number copied into a sentence cannot be checked or compared by code; here each one
is a fact with its source, and tests read them back.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...formats.reading import read_errors_as

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DIR = Path(__file__).resolve().parent
ATTRIBUTES = ("value", "note", "decimals", "formula", "correct")


def names() -> list[str]:
    """The published data files here, by name (the file name without .toml)."""
    return sorted(p.stem for p in DIR.glob("*.toml"))


def load(name: str) -> dict[str, Any]:
    """One published data file, parsed; ValueError naming the file when it is absent or not TOML."""
    path = DIR / f"{name}.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: no such published data ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None


class PublishedError(ValueError):
    """A published-data file that does not follow the format (names the file and the key)."""


@dataclass(frozen=True)
class Cell:
    at: Mapping[str, str]  # coordinate -> value
    value: float
    note: str | None = None
    more: Mapping[str, Any] = field(default_factory=dict)  # decimals, formula, correct (see the module doc)

    @property
    def tolerance(self) -> float | None:
        """Half a unit of the last printed decimal: ours agrees when it rounds to the published number."""
        d = self.more.get("decimals")
        return None if d is None else 0.5 * 10 ** -int(d) + 1e-9


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


def _number(path: Path, where: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise PublishedError(f"{path}: {where}: expected a finite number, got {v!r}")
    return float(v)


def parse(path: Path, data: Mapping[str, Any]) -> Published:
    """Check one file's contents; every error names the file and the key. Two spellings are read: ``source``
    as text with ``table`` beside it, or as a table (``paper``, ``figure``, ...); the cells as ``cells`` or
    ``[[cell]]``; ``coordinates`` given, or every text key of the first cell but the attributes."""
    unknown = set(data) - {"source", "table", "url", "coordinates", "cells", "cell", "aliases", "count"}
    if unknown:
        raise PublishedError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    src = data.get("source")
    if isinstance(src, dict):
        source = _text(path, "source.paper", src.get("paper"))
        table = _text(path, "source.figure", src.get("figure") or data.get("table"))
    else:
        source = _text(path, "source", src)
        table = _text(path, "table", data.get("table"))
    url = data.get("url")
    if url is not None:
        _text(path, "url", url)
    key = "cells" if "cells" in data else "cell"
    raw = data.get(key)
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], dict):
        raise PublishedError(f"{path}: cells: expected a non-empty list of tables")
    coords = data.get("coordinates", [k for k, v in raw[0].items() if k not in ATTRIBUTES and isinstance(v, str)])
    if not isinstance(coords, list) or not coords or not all(isinstance(c, str) and c for c in coords):
        raise PublishedError(f"{path}: coordinates: expected a list of key names, got {coords!r}")
    if set(ATTRIBUTES) & set(coords):
        raise PublishedError(f"{path}: coordinates: {', '.join(ATTRIBUTES)} are not coordinates")
    cells, seen = [], set()
    for i, c in enumerate(raw):
        where = f"{key}[{i}]"
        if not isinstance(c, dict):
            raise PublishedError(f"{path}: {where}: expected a table, got {c!r}")
        extra = set(c) - {*coords, *ATTRIBUTES}
        if extra:
            raise PublishedError(f"{path}: {where}: unknown key(s) {', '.join(sorted(extra))}")
        at = {k: _text(path, f"{where}.{k}", c.get(k)) for k in coords}
        v = _number(path, f"{where}.value", c.get("value"))
        note = c.get("note")
        if note is not None:
            _text(path, f"{where}.note", note)
        more: dict[str, Any] = {}
        if "decimals" in c:
            d = c["decimals"]
            if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= 12:
                raise PublishedError(f"{path}: {where}.decimals: expected a whole number from 0 to 12, got {d!r}")
            more["decimals"] = d
        if "correct" in c:
            more["correct"] = _number(path, f"{where}.correct", c["correct"])
        if "formula" in c:
            more["formula"] = _text(path, f"{where}.formula", c["formula"])
        place = tuple(at[k] for k in coords)
        if place in seen:
            raise PublishedError(f"{path}: {where}: a second cell at {dict(at)}")
        seen.add(place)
        cells.append(Cell(at, v, note, more))
    aliases = data.get("aliases", {})
    if not isinstance(aliases, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) and x for x in v) for v in aliases.values()):
        raise PublishedError(f"{path}: aliases: expected a table of lists of names")
    return Published(path.stem, source, table, tuple(coords), cells, url,
                     {k: tuple(v) for k, v in aliases.items()})


def read(path: str | Path) -> Published:
    path = Path(path)
    with read_errors_as(PublishedError, f"{path}: cannot read"):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    return parse(path, data)


def table(name: str, folder: Path = DIR) -> Published | None:
    """The published table ``name`` (a file stem in ``folder``), checked; None when there is no such file."""
    path = folder / f"{name}.toml"
    return read(path) if path.is_file() else None
