"""Published numbers as data: one TOML file per paper figure or table, each with its source and a header
that documents its format (e.g. ``negotiationarena_figure3.toml``). Importers print them beside what the
released logs give; reports can score reproductions against them. Reading only; nothing here computes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DIR = Path(__file__).resolve().parent


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
