"""Per family, the distributions of the games' own per-run metrics by player (the report's box plots).

Games record their own metrics with each run (``metrics`` in ``runs.jsonl``): a per-seat list (one value
per seat, e.g. GLEE's ``self_gain`` or NegotiationArena's ``payoff``) belongs to the label in that seat; a
scalar (efficiency, fairness) belongs to the table, shown under the ordered pair of labels ("A vs B").
Booleans and text are not plotted. Games of the EconArena family have no such metrics.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..formats.numbers import finite
from ..games import GAMES
from .scan import Base, Dir

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

MAX_PANELS = 12
MAX_GROUPS = 12


@dataclass(frozen=True)
class Value:
    game: str
    metric: str
    group: str  # a label (per-seat metrics) or "A vs B" (the table's metrics)
    value: float




Panels = dict[tuple[str, str], dict[str, array]]  # (game, metric) -> player or pair -> values


class Collector(Base):
    """The scan's consumer: per family, each (game, metric) panel's values by label or pair, as arrays of
    floats filled while the logs stream (8 bytes a value, never a record)."""

    def __init__(self) -> None:
        self.out: dict[str, Panels] = {}

    def begin(self, d: Dir) -> bool:
        game = d.game_name if d.game_name in GAMES else None
        if game is None or GAMES[game].info.family in ("econarena", "gamabench"):
            return False
        self.game = game
        self.panels = self.out.setdefault(GAMES[game].info.family, {})
        self._mark = {(key, group): len(xs) for key, groups in self.panels.items() for group, xs in groups.items()}
        return True

    # ------------------------------------------------------ the columnar copy (analysis/columnar.py)

    copy_name, copy_version = "distributions", "1"

    def save(self, d: Dir, copy: Any) -> None:
        """The values this directory added, panel by panel and group by group in the order they were met."""
        import pyarrow as pa

        entries, parts = [], []
        for key, groups in self.panels.items():
            for group, xs in groups.items():
                start = self._mark.get((key, group), 0)
                if len(xs) > start:
                    entries.append([key[1], group, len(xs) - start])
                    parts.append(np.frombuffer(xs, dtype=float)[start:])
        values = np.concatenate(parts) if parts else np.zeros(0)
        copy.put(self.copy_name, self.copy_version, {"values": pa.table({"value": pa.array(values)})},
                 {"entries": entries})

    def restore(self, d: Dir, copy: Any) -> None:
        values = copy.table(self.copy_name, "values").column("value").to_numpy()
        at = 0
        for metric, group, n in copy.info(self.copy_name)["entries"]:
            self.panels.setdefault((self.game, metric), {}).setdefault(group, array("d")).frombytes(
                values[at:at + n].tobytes())
            at += n

    def run(self, d: Dir, number: int, rec: dict[str, Any]) -> None:
        if not rec.get("complete", True):
            return
        metrics, labels = rec.get("metrics"), rec.get("labels") or []
        if not isinstance(metrics, dict) or not labels:
            return
        pair = None
        for name, v in metrics.items():
            if isinstance(v, list) and len(v) == len(labels):
                for label, x in zip(labels, v):
                    if (n := finite(x)) is not None:
                        self._add(f"{name} (seat's own)", str(label), n)
            elif (n := finite(v)) is not None:
                pair = pair or " vs ".join(str(x) for x in labels)
                self._add(name, pair, n)

    def _add(self, metric: str, group: str, value: float) -> None:
        self.panels.setdefault((self.game, metric), {}).setdefault(group, array("d")).append(value)

    def result(self) -> dict[str, Panels]:
        return {family: panels for family, panels in self.out.items() if panels}


def collect(run_dirs: Sequence[str | Path]) -> dict[str, list[Value]]:
    """Family -> every numeric metric value of its complete runs (rule-break runs included: the games'
    metrics say themselves how a broken reply counts)."""
    from .scan import scan

    c = Collector()
    scan([Path(d) for d in run_dirs], [c])
    return {family: [Value(game, metric, group, x) for (game, metric), groups in panels.items()
                     for group, xs in groups.items() for x in xs] for family, panels in c.result().items()}


def _panels(values: Sequence[Value] | Panels) -> Panels:
    if isinstance(values, dict):
        return values
    panels: Panels = {}
    for v in values:
        panels.setdefault((v.game, v.metric), {}).setdefault(v.group, array("d")).append(v.value)
    return panels


def figure(family: str, values: Sequence[Value] | Panels, figdir: Path, F: Any) -> Any:
    """Box plots: one panel per (game, metric), one box per label or pair (the most frequent first)."""
    panels = _panels(values)
    keys = sorted(panels)[:MAX_PANELS]
    if not keys:
        raise F.Skip(f"no numeric per-run metrics in the {family} runs")
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = F._subplots(rows, cols, (4.4 * cols, 3.2 * rows))
    for ax, key in zip(axes.flat, keys):
        groups = sorted(panels[key].items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_GROUPS]
        ax.boxplot([np.frombuffer(g, dtype=float) for _, g in groups], showmeans=True)
        ax.set_xticks(range(1, len(groups) + 1), [F._wrap(name, 18) for name, _ in groups])
        ax.set_title(f"{GAMES[key[0]].info.title}: {key[1]}", fontsize=9)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    key_name = f"{family}_metrics"
    sources = sorted({game for game, _ in panels})
    png, svg = F._save(fig, figdir, key_name, sources)
    return F.Figure(key_name, f"{family}: the games' metrics by player",
                    "Each panel: the distribution over runs of one metric the game records (boxes: quartiles; "
                    "line: median; triangle: mean). Per-seat metrics (marked \"seat's own\") by the label in "
                    "that seat; the table's metrics (efficiency, fairness, ...) by ordered pair, first player "
                    "first.", png, svg, sources)


def report_sections(run_dirs: Sequence[str | Path], figdir: Path,
                    collected: Collector | None = None) -> list[tuple[str, Any, str | None]]:
    """(family, figure or None, why not) for every family with such runs; ``collected``: the report's scan
    already gathered them."""
    from . import figures as F

    if collected is None:
        from .scan import scan

        collected = Collector()
        scan([Path(d) for d in run_dirs], [collected])
    out: list[tuple[str, Any, str | None]] = []
    for family, values in sorted(collected.result().items()):
        try:
            out.append((family, figure(family, values, figdir, F), None))
        except F.Skip as exc:
            out.append((family, None, str(exc)))
    return out
