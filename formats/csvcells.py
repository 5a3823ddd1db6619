"""Every CSV the project writes, through one writer with one cell rule: text cannot run as a formula.

Why: model names, labels, game ids and messages come from configs and from other people's released files.
A spreadsheet (Excel, LibreOffice, Google Sheets) runs a cell that begins with ``=``, ``+``, ``-`` or ``@``
as a formula (``=HYPERLINK(...)`` sends a click anywhere), and a leading tab or carriage return hides one.
Such a text cell is written with a leading apostrophe (the usual rule; a spreadsheet shows it as text).
Numbers stay numbers: a float or int is never touched, nor is text that is a plain decimal number
(``-3.5``, ``+2``, ``1e-3``), which a spreadsheet reads as the number it is. JSON, JSONL and Parquet keep
every value as it is; this is only about CSV.

This module imports nothing of ours, so every layer that writes a CSV (importers, analysis, the CLI) uses it.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

FORMULA_START = frozenset("=+-@\t\r")  # OWASP's list of characters a spreadsheet may start a formula with
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """``value`` as a CSV cell that a spreadsheet shows and never runs: text starting a formula gets a
    leading apostrophe; numbers, numeric text and every other value are returned unchanged."""
    if isinstance(value, str) and value and value[0] in FORMULA_START and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


class _Lines:
    """A file for csv.writer that ends each row with ``\n``: the writer runs with ``\r\n`` so that it quotes
    every cell holding a carriage return (with ``\n`` alone it wrote a bare CR, which spreadsheets and
    readers take for a line break: the rest of the cell became a row of its own, formula and all)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, line: str) -> None:  # the csv module writes one whole row per call
        self.parts.append(line[:-2] + "\n" if line.endswith("\r\n") else line)


def csv_text(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A CSV file's text (``\n`` line ends, the csv module's quoting) with every cell made safe."""
    out = _Lines()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow([safe_cell(c) for c in header])
    for row in rows:
        w.writerow([safe_cell(c) for c in row])
    return "".join(out.parts)


def frame_csv(df: Any, path: str | Path | None = None) -> str:
    """A pandas DataFrame as CSV (no index) with every cell and column name made safe; written to ``path``
    when given. pandas writes the numbers (as it always did); its rows then pass :func:`csv_text`."""
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # a long text cell is not an error here
    rows = list(csv.reader(io.StringIO(df.to_csv(index=False, lineterminator="\r\n"), newline="")))
    text = csv_text(rows[0] if rows else [], rows[1:])
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
