"""Per family, the distributions of the games' own per-run metrics by player (the report's box plots).

Games record their own metrics with each run (``metrics`` in ``runs.jsonl``): a per-seat list (one value
per seat, e.g. GLEE's ``self_gain`` or NegotiationArena's ``payoff``) belongs to the label in that seat; a
scalar (efficiency, fairness) belongs to the table, shown under the ordered pair of labels ("A vs B").
Booleans and text are not plotted. Games of the EconArena family have no such metrics.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..games import GAMES
from ..rundir import RUNS, complete_runs, game_name, read_jsonl

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


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def _game_of(run_dir: Path) -> str | None:
    name = game_name(run_dir)
    return name if name in GAMES else None


def collect(run_dirs: Sequence[str | Path]) -> dict[str, list[Value]]:
    """Family -> every numeric metric value of its complete runs (rule-break runs included: the games'
    metrics say themselves how a broken reply counts)."""
    out: dict[str, list[Value]] = defaultdict(list)
    for d in map(Path, run_dirs):
        game = _game_of(d)
        if game is None or GAMES[game].info.family in ("econarena", "gamabench"):
            continue
        family = GAMES[game].info.family
        for rec in complete_runs(read_jsonl(d / RUNS)).values():
            metrics, labels = rec.get("metrics"), rec.get("labels") or []
            if not isinstance(metrics, dict) or not labels:
                continue
            pair = " vs ".join(str(x) for x in labels)
            for name, v in metrics.items():
                if isinstance(v, list) and len(v) == len(labels):
                    for label, x in zip(labels, v):
                        if (n := _number(x)) is not None:
                            out[family].append(Value(game, f"{name} (seat's own)", str(label), n))
                elif (n := _number(v)) is not None:
                    out[family].append(Value(game, name, pair, n))
    return dict(out)


def figure(family: str, values: Sequence[Value], figdir: Path, F: Any) -> Any:
    """Box plots: one panel per (game, metric), one box per label or pair (the most frequent first)."""
    panels: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for v in values:
        panels[(v.game, v.metric)][v.group].append(v.value)
    keys = sorted(panels)[:MAX_PANELS]
    if not keys:
        raise F.Skip(f"no numeric per-run metrics in the {family} runs")
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = F._subplots(rows, cols, (4.4 * cols, 3.2 * rows))
    for ax, key in zip(axes.flat, keys):
        groups = sorted(panels[key].items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_GROUPS]
        ax.boxplot([g for _, g in groups], showmeans=True)
        ax.set_xticks(range(1, len(groups) + 1), [F._wrap(name, 18) for name, _ in groups])
        ax.set_title(f"{GAMES[key[0]].info.title}: {key[1]}", fontsize=9)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    key_name = f"{family}_metrics"
    sources = sorted({v.game for v in values})
    png, svg = F._save(fig, figdir, key_name, sources)
    return F.Figure(key_name, f"{family}: the games' metrics by player",
                    "Each panel: the distribution over runs of one metric the game records (boxes: quartiles; "
                    "line: median; triangle: mean). Per-seat metrics (marked \"seat's own\") by the label in "
                    "that seat; the table's metrics (efficiency, fairness, ...) by ordered pair, first player "
                    "first.", png, svg, sources)


def report_sections(run_dirs: Sequence[str | Path], figdir: Path) -> list[tuple[str, Any, str | None]]:
    """(family, figure or None, why not) for every family with such runs."""
    from . import figures as F

    out = []
    for family, values in sorted(collect(run_dirs).items()):
        try:
            out.append((family, figure(family, values, figdir, F), None))
        except F.Skip as exc:
            out.append((family, None, str(exc)))
    return out
