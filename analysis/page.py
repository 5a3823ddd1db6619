"""What the report's parts share: the context every family reads, the scorecard and section it returns, and
the small HTML helpers that render them.

Why a uniform shape: the report leads with one scorecard per family present (the answer), then the
figures, then detail, then provenance. A family module gives ``scorecard(ctx) -> Card | None`` and
``section(ctx) -> Section | None``; the report only orders and places them, so a new family adds its own
module and nothing else. Families may memoise what both functions read (``ctx.memo``) so run directories
are read once.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .stats import Estimate


@dataclass
class Context:
    """What every family's scorecard and section may read."""

    run_dirs: list[Path]
    figdir: Path
    out: Path
    n_boot: int
    seed: int
    frames: Any = None  # the loaded Frames (pandas) of every directory
    core: Any = None  # the Frames of the experiments no family module analyses (the paper's figures)
    _memo: dict[str, Any] = field(default_factory=dict)

    def provide(self, key: str, value: Any) -> None:
        """What the report's one scan already gathered for ``key`` (a family's collector)."""
        self._memo[key] = value

    def memo(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def forget(self) -> None:
        """Drop what was memoised (and the collectors provided), once every scorecard and section is drawn."""
        self._memo.clear()


@dataclass
class Card:
    """A family's answer, shown first: one or more compact tables, sorted by the headline number."""

    family: str
    title: str
    body: str  # HTML
    intro: str = ""  # one or two sentences of HTML: what the numbers are
    weight: int = 0  # run directories summarised: the card that covers most of the data leads
    compared: str = ""  # a one-line verdict against published numbers, if any

    @property
    def anchor(self) -> str:
        return f"card-{self.family}"


@dataclass
class Section:
    """A family's figures (shown with every other figure) and its detail (tables, notes, files)."""

    family: str
    title: str
    figures: list[Any] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    detail: str = ""  # HTML
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def esc(x: Any) -> str:
    return html.escape(str(x))


def table_html(df: Any, index: bool = True) -> str:
    """A pandas frame as a plain table (the index as ordinary columns: one header row)."""
    if df is None or df.empty:
        return "<p class='meta'>(empty)</p>"
    if index:
        df = df.reset_index()
    df = df.copy()
    df.columns = [str(c) for c in df.columns]  # a named column index (a pivot's) would add an empty column
    return "<div class='tablewrap'>" + df.to_html(index=False, na_rep="-", border=0, escape=True) + "</div>"


def grid(head: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "", numeric_from: int = 1) -> str:
    """A scorecard table: ``head`` is text, ``rows`` are HTML cells; columns from ``numeric_from`` on are
    right-aligned numbers."""
    cls = ["" if i < numeric_from else " class='n'" for i in range(len(head))]
    parts = ["<table class='card'>"]
    if caption:
        parts.append(f"<caption>{caption}</caption>")
    parts.append("<thead><tr>" + "".join(f"<th{c}>{esc(h)}</th>" for h, c in zip(head, cls)) + "</tr></thead><tbody>")
    for r in rows:
        parts.append("<tr>" + "".join(f"<td{c}>{x}</td>" for x, c in zip(r, cls)) + "</tr>")
    return "".join(parts) + "</tbody></table>"


def number(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def estimate_cell(e: Estimate, digits: int = 2, scale: float = 1.0) -> str:
    """A value with its 95% interval underneath, small."""
    if e.n == 0 or math.isnan(e.value):
        return "<span class='na'>-</span>"
    text = f"<b>{e.value * scale:.{digits}f}</b>"
    if not math.isnan(e.low):
        text += f"<small>[{e.low * scale:.{digits}f}, {e.high * scale:.{digits}f}]</small>"
    return text


def spread_cell(value: float | None, spread: float | None, digits: int = 1, sign: str = "±") -> str:
    if value is None or math.isnan(value):
        return "<span class='na'>-</span>"
    text = f"<b>{value:.{digits}f}</b>"
    if spread is not None and not math.isnan(spread):
        text += f"<small>{sign} {spread:.{digits}f}</small>"
    return text


@dataclass
class Agreement:
    """How our cells compare with the published ones: counts and the largest gap."""

    compared: int = 0
    agree: int = 0
    worst: tuple[float, str] = (0.0, "")

    def add(self, ours: float, published: float, tolerance: float, where: str) -> bool:
        self.compared += 1
        gap = ours - published
        ok = abs(gap) <= tolerance
        self.agree += ok
        if abs(gap) > abs(self.worst[0]):
            self.worst = (gap, where)
        return ok

    def verdict(self, digits: int = 1) -> str:
        if not self.compared:
            return ""
        if self.agree == self.compared:
            return f"all {self.compared} published cells agree (within the published rounding)"
        gap, where = self.worst
        return (f"{self.agree} of {self.compared} published cells agree; largest gap {gap:+.{digits}f} "
                f"({where})")


def published_mark(ours: float | None, published: float | None, tolerance: float, digits: int = 1,
                   note: str | None = None, agreement: Agreement | None = None, where: str = "",
                   label: str = "pub") -> str:
    """The published value under ours: a check mark when they agree within ``tolerance``, else the gap."""
    if published is None:
        return ""
    title = f" title='{esc(note)}'" if note else ""
    star = "*" if note else ""
    if ours is None or math.isnan(ours):
        return f"<span class='pub'{title}>{esc(label)} {published:.{digits}f}{star}</span>"
    ok = agreement.add(ours, published, tolerance, where) if agreement is not None else \
        abs(ours - published) <= tolerance
    if ok:
        return f"<span class='pub ok'{title}>{esc(label)} {published:.{digits}f} &#10003;{star}</span>"
    return (f"<span class='pub off'{title}>{esc(label)} {published:.{digits}f} "
            f"({ours - published:+.{digits}f}){star}</span>")


def sources_html(sources: Sequence[str], limit: int = 3) -> str:
    """Which run directories a figure came from, briefly: the names when few, else how many and where."""
    paths = [Path(s) for s in sources]
    if not paths:
        return ""
    if len(paths) <= limit:
        return "Data: " + ", ".join(esc(p.name) for p in paths) + "."
    parents = sorted({str(p.parent) for p in paths})
    where = esc(parents[0]) if len(parents) == 1 else f"{len(parents)} folders"
    return f"Data: {len(paths)} run directories in {where} (listed under <a href='#provenance'>Provenance</a>)."
