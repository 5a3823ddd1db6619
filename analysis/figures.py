"""The report's figures (the paper's Figures 1-6 and Tables 1-2, plus win rates), drawn with matplotlib/Agg.

Each ``figure_*`` function takes the loaded frames and returns a :class:`Figure` (PNG + SVG written to
``out``) or raises :class:`Skip` with a sentence for the report when its data are absent. Readability
rules applied everywhere: axes say what and in which unit, a legend names every colour, long labels are
wrapped and rotated, bars carry 95% session-bootstrap intervals. The run directories a figure came from
are kept in ``Figure.sources`` and said in the report's HTML (briefly, with the full list under
Provenance), not drawn into the image.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, MaxNLocator

from ..formats.rundir import BASELINE_AGENTS
from ..games import GAMES
from ..games.base import GameInfo
from .cells import cell_rank, shown_cell
from .load import Frames
from .stats import N_BOOT, bootstrap_mean
from .tables import estimate, running_mean


def _declared(game: str) -> GameInfo | None:
    """What the game declares about itself (titles, axes); None for a game this install does not know."""
    found = GAMES.get(game)
    return found.info if found is not None else None
GROUP_COLORS = {"L": "#9ecae1", "M": "#4292c6", "H": "#08306b", "?": "#bbbbbb"}
CHECKPOINTS = (20, 60, 100)
DPI = 130


class Skip(Exception):
    """The figure's data are absent; the message is shown in the report instead."""


@dataclass
class Figure:
    key: str
    title: str
    caption: str
    png: Path
    svg: Path
    sources: list[str]
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


STYLE = {
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 9,
    "axes.grid": True, "grid.alpha": 0.3, "axes.axisbelow": True, "axes.spines.top": False,
    "axes.spines.right": False, "svg.fonttype": "none", "figure.dpi": DPI,
    # labels are model names from configs and other people's files: "$\\frac{" is a name, not TeX to
    # typeset (matplotlib's mathtext raised on it and the whole report stopped with a traceback)
    "text.parse_math": False,
}


# Labels may be CJK or emoji; DejaVu Sans has neither. matplotlib falls back through a list of families
# glyph by glyph, so any of these that is installed fills the gaps (none is shipped: the CJK fonts alone
# are tens of MB). missing_glyphs() says which labels would still show boxes, and the report says so.
FALLBACK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK KR", "Source Han Sans", "WenQuanYi Zen Hei",
                  "WenQuanYi Micro Hei", "Droid Sans Fallback", "Noto Emoji", "Symbola", "Segoe UI Emoji",
                  "Apple Color Emoji")


def font_families() -> list[str]:
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    return ["DejaVu Sans", *(f for f in FALLBACK_FONTS if f in installed)]


def missing_glyphs(texts: Sequence[str]) -> dict[str, str]:
    """Text -> the characters in it that no font of :func:`font_families` can draw (shown as boxes)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    chars: set[int] = set()
    for fam in font_families():
        try:
            path = font_manager.findfont(font_manager.FontProperties(family=fam), fallback_to_default=False)
            chars |= set(FT2Font(path).get_charmap())
        except (ValueError, RuntimeError, OSError):
            continue
    out = {}
    for t in texts:
        bad = "".join(sorted({c for c in str(t) if not c.isspace() and ord(c) not in chars}))
        if bad:
            out[str(t)] = bad
    return out


def style() -> AbstractContextManager[None]:
    """The report's look, applied around drawing only (no global matplotlib state is changed)."""
    rc: dict[Any, Any] = {**STYLE, "font.family": font_families()}  # the stubs key rc by a Literal of names
    return matplotlib.rc_context(rc)


def _subplots(nrows: int, ncols: int, figsize: tuple[float, float]) -> tuple[MplFigure, np.ndarray]:
    """A figure on the Agg canvas, outside pyplot: no GUI backend, no global figure registry."""
    fig = MplFigure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def game_title(game: str) -> str:
    info = _declared(game)
    return info.title if info is not None else game.replace("_", " ")


def setting_name(row: pd.Series | dict) -> str:
    """A directory's legend entry: its experiment name and what sets it apart."""
    bits = []
    if row["history"] != "none":
        bits.append(f"history: {row['history']}")
    if row["prompt"] != "default":
        bits.append(row["prompt"].upper() if row["prompt"] == "cot" else row["prompt"])
    return f"{row['experiment']}" + (f" ({', '.join(bits)})" if bits else "")


LABEL_MAX = 48  # characters of a label drawn into a figure; the report's tables carry the whole name


def short(label: object, limit: int = LABEL_MAX) -> str:
    """A label cut to ``limit`` characters with an ellipsis: a 200-character model name as a tick or legend
    entry squeezed the axes to nothing."""
    text = str(label)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _wrap(label: str, width: int = 14) -> str:
    text = short(label)
    return "\n".join(textwrap.wrap(text, width)) or text


def _xticks(ax: Axes, labels: Sequence[str], pos: Sequence[float]) -> None:
    """Wrapped tick labels, rotated only when they would really overlap (measured, not guessed)."""
    wrapped = [_wrap(x) for x in labels]
    ax.set_xticks(list(pos))
    ax.set_xticklabels(wrapped, rotation=0, ha="center")
    if len(wrapped) > 1 and _labels_overlap(ax):
        ax.set_xticklabels(wrapped, rotation=30, ha="right", rotation_mode="anchor")


def _labels_overlap(ax: Axes) -> bool:
    renderer = cast(FigureCanvasAgg, ax.figure.canvas).get_renderer()  # every figure here is on Agg
    boxes = sorted((t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()),
                   key=lambda b: b.x0)
    gap = 4.0  # pixels of air between neighbours
    return any(a.x1 + gap > b.x0 for a, b in zip(boxes, boxes[1:]))


def _palette(n: int) -> list:
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def sources_text(sources: Sequence[str]) -> str:
    """The run directories, shortened to ``parent/{a, b}`` when they share a parent folder."""
    paths = [Path(s) for s in sources]
    parents = {str(p.parent) for p in paths}
    if len(paths) > 1 and len(parents) == 1:
        return f"{parents.pop()}/{{{', '.join(p.name for p in paths)}}}"
    return ", ".join(map(str, sources))


def _has_categories(fig: MplFigure) -> bool:
    """Whether some axis has text categories: ticks at fixed places (set_xticks)."""
    return any(isinstance(ax.xaxis.get_major_locator(), FixedLocator) for ax in fig.axes)


def _rotate_crowded_ticks(fig: MplFigure) -> bool:
    """After the final layout (legends shrink the axes), rotate x labels that now overlap. Only axes with
    text categories can overlap, and measuring needs the layout: skipped for plots without them. Returns
    whether any axis was rotated."""
    # text categories: ticks at fixed places (set_xticks). Not the formatter's class: matplotlib 3.11 labels
    # them with a FuncFormatter, so testing for FixedFormatter skipped every figure and labels collided
    if not _has_categories(fig):
        return False
    # the final layout alone, not a full draw: a label's box needs the axes' places, not rendered pixels.
    # A draw would also fit fixed-aspect axes (heatmaps) into their boxes, and the next layout starts from
    # there: done here too, so the figure comes out as it did after a draw.
    _lay_out(fig)
    renderer = cast(FigureCanvasAgg, fig.canvas).get_renderer()
    for ax in fig.axes:
        if ax.get_visible():
            locator = ax.get_axes_locator()
            ax.apply_aspect(None if locator is None else locator(ax, renderer))
    rotated = False
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        if len(labels) > 1 and labels[0].get_rotation() == 0 and _labels_overlap(ax):
            ax.set_xticks(ax.get_xticks(), [t.get_text() for t in ax.get_xticklabels()], rotation=30,
                          ha="right", rotation_mode="anchor")
            rotated = True
    return rotated


def _fixed_aspect(fig: MplFigure) -> bool:
    """Whether some axes keeps an aspect (heatmaps, colour bars): fitting it moves the axes, so the layout
    that follows differs from the one before."""
    return any(ax.get_aspect() != "auto" or ax.get_box_aspect() is not None for ax in fig.axes)


def _lay_out(fig: MplFigure) -> None:
    """Run the figure's layout engine (constrained layout) once, without drawing anything."""
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)


def _save(fig: MplFigure, out: Path, key: str, sources: Sequence[str]) -> tuple[Path, Path]:
    """PNG (palette-quantised: a quarter of the bytes, which the report embeds) and SVG. The run directories
    a figure came from (``sources``) are said in the report's HTML, never drawn into the image: a list of a
    hundred directory names is not a caption."""
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        for t in legend.get_texts() if legend is not None else ():
            t.set_text(short(t.get_text()))
    fig.set_dpi(DPI)
    laid_out = _has_categories(fig)  # measuring the ticks lays the figure out
    rotated = _rotate_crowded_ticks(fig)
    # Lay the figure out and measure its tight box once, then freeze that layout for both files: each
    # ``bbox_inches="tight"`` save would lay it out, measure every text and draw it again, and text layout
    # is most of a report's build time (a quarter less CPU per report this way; the PNG is byte-identical).
    # Laid out for the ticks, none turned and no axes fitted to an aspect since: that layout is final.
    if rotated or not laid_out or _fixed_aspect(fig):
        _lay_out(fig)
    box = fig.get_tightbbox(cast(FigureCanvasAgg, fig.canvas).get_renderer()).padded(0.1)
    # No engine at all, not set_layout_engine("none"): savefig runs a whole text-measuring dry draw
    # before each file for any engine, even the placeholder that "none" leaves, which lays out nothing.
    vars(fig)["_layout_engine"] = None
    out.mkdir(parents=True, exist_ok=True)
    png, svg = out / f"{key}.png", out / f"{key}.svg"
    buf = io.BytesIO()
    # compressed once, after quantising: the first encoding only carries the pixels across
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches=box, metadata={"Software": None},
                pil_kwargs={"compress_level": 1})
    png.write_bytes(_quantised(buf.getvalue()))
    fig.savefig(svg, bbox_inches=box, metadata={"Date": None})
    return png, svg


def _quantised(data: bytes) -> bytes:
    """A chart has few colours: 256 palette entries keep it exact to the eye at a third of the size."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - matplotlib depends on Pillow
        return data
    with Image.open(io.BytesIO(data)) as im:
        small = im.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        out = io.BytesIO()
        small.save(out, format="PNG")
    return out.getvalue() if out.tell() < len(data) else data


def _dirs(df: pd.DataFrame) -> list[str]:
    return sorted(set(df["run_dir"]))


def _estimates(df: pd.DataFrame, by: Sequence[str], metric: str, n_boot: int, seed: int) -> pd.DataFrame:
    rows = []
    for key, part in df.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        e = estimate(part, metric, n_boot=n_boot, seed=seed)
        rows.append({**dict(zip(by, key)), "value": e.value, "low": e.low, "high": e.high, "n": e.n,
                     "sessions": e.sessions})
    return pd.DataFrame(rows, columns=[*by, "value", "low", "high", "n", "sessions"])


def _grouped_bars(ax: Axes, est: pd.DataFrame, xs: list[str], hues: list[str], colors: dict[str, object],
                  x: str = "label", hue: str = "hue") -> None:
    width = 0.8 / max(len(hues), 1)
    for j, h in enumerate(hues):
        part = est[est[hue] == h].set_index(x)
        pos: list[float] = []
        vals: list[float] = []
        err: list[list[float]] = [[], []]
        for i, lab in enumerate(xs):
            if lab not in part.index or math.isnan(part.loc[lab, "value"]):
                continue
            r = part.loc[lab]
            pos.append(i - 0.4 + width * (j + 0.5))
            vals.append(r["value"])
            lo = r["value"] - r["low"] if not math.isnan(r["low"]) else 0.0
            hi = r["high"] - r["value"] if not math.isnan(r["high"]) else 0.0
            err[0].append(max(lo, 0.0))
            err[1].append(max(hi, 0.0))
        # the edge in the bar's own colour keeps a bar of height 0 visible (0 is data, a gap is not)
        ax.bar(pos, vals, width * 0.92, color=colors[h], edgecolor=colors[h], linewidth=1.2, label=h, yerr=err,
               capsize=2.5, error_kw={"elinewidth": 0.9, "ecolor": "#333333"})
    _xticks(ax, xs, range(len(xs)))
    ax.set_xlim(-0.6, len(xs) - 0.4)


def _fig_size(n_x: int, n_hue: int, n_rows: int) -> tuple[float, float]:
    w = min(16.0, max(6.5, n_x * (0.45 + 0.22 * n_hue) + 2.5))
    return w, 3.4 * n_rows + 0.6


def _players(frames: Frames) -> pd.DataFrame:
    """The players' rows (opponents of the rational environment left out), a [grid] cell in the label as the
    summary names it (``level_k [ratio=0.5]``): every figure then shows a bar, a line or a legend entry per
    cell. A baseline's label leaves out the ``[grid.llm]`` factors, which do not change how it plays, and
    only its copy in the first such cell (natural order) is drawn, so no figure pools or repeats it."""
    df = frames.players[frames.players["role"] != "opponent"]
    if "cell" not in df.columns or df.empty or not (df["cell"].fillna("") != "").any():
        return df
    agent = df["agent"] if "agent" in df.columns else pd.Series("", index=df.index)
    keys = df.groupby([df["run_dir"], df["label"], agent.fillna(""), df["cell"].fillna("")], sort=False).indices
    names = np.empty(len(df), dtype=object)
    keep = np.ones(len(df), dtype=bool)
    first: dict[tuple[str, str], tuple[Any, ...]] = {}
    for (run_dir, label, who, cell), idx in keys.items():
        found = frames.factors.get(str(run_dir), [])
        baseline = who in BASELINE_AGENTS
        shown = shown_cell(str(cell), found, baseline) if found else str(cell)
        names[idx] = f"{label} [{shown}]" if shown else str(label)
        if baseline and shown != cell:  # copies across [grid.llm] cells: the first in natural order speaks
            rank = cell_rank(str(cell), found)
            key = (str(run_dir), str(names[idx[0]]))
            if key not in first or rank < first[key]:
                first[key] = rank
    if first:
        for (run_dir, _label, _who, cell), idx in keys.items():
            found = frames.factors.get(str(run_dir), [])
            key = (str(run_dir), str(names[idx[0]]))
            if key in first and cell_rank(str(cell), found) != first[key]:
                keep[idx] = False
    return df.assign(label=names)[keep]


def _explicit(frames: Frames) -> set[str]:
    e = frames.experiments
    return set(e.loc[e["group_source"].isin(["config", "name"]), "run_dir"])


def _legend_right(fig: MplFigure, handles: list, title: str) -> None:
    fig.legend(handles=handles, title=title, loc="upper left", bbox_to_anchor=(1.0, 0.98), frameon=False)


def _legend_axis(ax: Axes, handles: Sequence[Artist], title: str) -> None:
    ax.legend(handles=handles, title=title, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)


# --------------------------------------------------------------------------------------------- figures

def figure_melee_payoff(frames: Frames, out: Path, n_boot: int = N_BOOT, seed: int = 0) -> Figure:
    """Figure 1a/2a/6: mean payoff (as a multiple of the NE payoff) per label in the melee environment."""
    df = _players(frames)
    df = df[df["environment"] == "melee"]
    explicit = _explicit(frames)
    parts = []
    for _game, g in df.groupby("game", sort=True):
        plain = g[~g["run_dir"].isin(explicit)]
        parts.append(plain if not plain.empty else g)
    if not parts:
        raise Skip("no melee experiments among these run directories.")
    df = pd.concat(parts)
    exps = frames.experiments.set_index("run_dir")
    df = df.assign(hue=[setting_name(exps.loc[d]) for d in df["run_dir"]])
    games = sorted(df["game"].unique())
    n_hue = max(df[df["game"] == g]["hue"].nunique() for g in games)
    n_x = max(df[df["game"] == g]["label"].nunique() for g in games)
    fig, axes = _subplots(len(games), 1, _fig_size(n_x, n_hue, len(games)))
    for ax, game in zip(axes[:, 0], games):
        g = df[df["game"] == game]
        est = _estimates(g, ["label", "hue"], "payoff_ratio", n_boot, seed)
        xs = list(est.groupby("label")["value"].mean().sort_values(ascending=False).index)
        hues = sorted(g["hue"].unique())
        colors = dict(zip(hues, _palette(len(hues))))
        _grouped_bars(ax, est, xs, hues, colors)
        ax.axhline(1.0, color="black", lw=1, ls="--")
        ax.set_title(f"{game_title(game)}: melee (players against each other)")
        ax.set_ylabel("mean payoff / mean NE payoff")
        ax.set_xlabel("player (label)")
        ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
        handles: list[Artist] = [Patch(color=colors[h], label=h) for h in hues]
        handles.append(Line2D([], [], color="black", ls="--", label="NE payoff (ratio 1)"))
        _legend_axis(ax, handles, "experiment")
    sources = _dirs(df)
    png, svg = _save(fig, out, "fig1_melee_payoff", sources)
    return Figure("fig1_melee_payoff", "Mean payoff per player in the melee environment",
                  "Bars: mean payoff divided by the mean Nash-equilibrium payoff over complete runs (1 = the "
                  "equilibrium payoff; beauty contest: prize / n; auctions: final assets over NE final assets), "
                  "with 95% bootstrap intervals over sessions. One colour per experiment (paper Figures 1a, 2a "
                  "and, with history, 6).", png, svg, sources)


def _violin(ax: Axes, data: np.ndarray, pos: float, width: float, color: object) -> None:
    data = data[~np.isnan(data)]
    if data.size == 0:
        return
    if data.size >= 2 and np.ptp(data) > 1e-12:
        parts = ax.violinplot([data], positions=[pos], widths=width, showextrema=False)
        bodies: Any = parts["bodies"]  # a list of PolyCollection (the stubs say one Collection)
        for body in bodies:
            body.set_facecolor(color)
            body.set_edgecolor("#333333")
            body.set_alpha(0.75)
    else:  # every value the same: a KDE is undefined, draw the point mass as a bar
        ax.hlines(data[0], pos - width / 2, pos + width / 2, color=color, lw=3)


def figure_rational_deviation(frames: Frames, out: Path, n_boot: int = N_BOOT, seed: int = 0) -> Figure:
    """Figure 1b/2b/4: distribution of the deviation from NE per label, rational environment."""
    df = _players(frames)
    df = df[(df["environment"] == "rational") & df["deviation"].notna()]
    if df.empty:
        raise Skip("no rational-environment experiments (a player against equilibrium agents) with valid "
                   "replies among these run directories.")
    exps = frames.experiments.set_index("run_dir")
    df = df.assign(hue=[setting_name(exps.loc[d]) for d in df["run_dir"]])
    games = sorted(df["game"].unique())
    n_hue = max(df[df["game"] == g]["hue"].nunique() for g in games)
    n_x = max(df[df["game"] == g]["label"].nunique() for g in games)
    fig, axes = _subplots(len(games), 1, _fig_size(n_x, n_hue, len(games)))
    for ax, game in zip(axes[:, 0], games):
        g = df[df["game"] == game]
        xs = list(g.groupby("label")["deviation"].mean().sort_values().index)
        hues = sorted(g["hue"].unique())
        colors = dict(zip(hues, _palette(len(hues))))
        width = 0.8 / len(hues)
        for i, lab in enumerate(xs):
            for j, h in enumerate(hues):
                part = g[(g["label"] == lab) & (g["hue"] == h)]
                if part.empty:
                    continue
                pos = i - 0.4 + width * (j + 0.5)
                _violin(ax, part["deviation"].to_numpy(dtype=float), pos, width * 0.9, colors[h])
                e = bootstrap_mean(part["deviation"], part["cluster"], n_boot=n_boot, seed=seed)
                yerr = None if math.isnan(e.low) else [[e.value - e.low], [e.high - e.value]]
                ax.errorbar([pos], [e.value], yerr=yerr, fmt="o", color="black", ms=3.5, capsize=2, lw=0.9)
        _xticks(ax, xs, range(len(xs)))
        ax.set_xlim(-0.6, len(xs) - 0.4)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{game_title(game)}: rational environment (one player against equilibrium agents)")
        note = (_declared(game) or GameInfo("")).deviation_note
        ax.set_ylabel("deviation from NE" + (f" ({note})" if note else ""))
        ax.set_xlabel("player (label)")
        handles: list[Artist] = [Patch(color=colors[h], alpha=0.75, label=h) for h in hues]
        handles.append(Line2D([], [], color="black", marker="o", ls="", ms=4, label="mean with 95% CI"))
        _legend_axis(ax, handles, "experiment")
    sources = _dirs(df)
    png, svg = _save(fig, out, "fig2_rational_deviation", sources)
    return Figure("fig2_rational_deviation", "Deviation from equilibrium in the rational environment",
                  "Violins: distribution over player-runs of the deviation from the Nash equilibrium (0 = "
                  "equilibrium play; auctions |final asset / NE asset - 1|, beauty contest |choice| / upper "
                  "bound; invalid replies have no deviation and are left out). Dots: mean with 95% session-"
                  "bootstrap interval. Paper Figures 1b, 2b and, with history, 4.", png, svg, sources)


def figure_groups(frames: Frames, out: Path, n_boot: int = N_BOOT, seed: int = 0) -> Figure:
    """Figure 3: payoff per label by configuration group L/M/H (melee)."""
    df = _players(frames)
    df = df[df["environment"] == "melee"]
    explicit = _explicit(frames)
    exps = frames.experiments.set_index("run_dir")
    parts = []
    for _game, g in df.groupby("game", sort=True):
        ex = g[g["run_dir"].isin(explicit)]
        g = ex if ex["group"].nunique() >= 2 else g
        if g["group"].nunique() >= 2:
            parts.append(g)
    if not parts:
        raise Skip("needs melee experiments of one game in at least two configuration groups (L/M/H: the "
                   "beauty contest's upper bound or the auctions' assets); there is at most one group per game.")
    df = pd.concat(parts)
    games = sorted(df["game"].unique())
    n_x = max(df[df["game"] == g]["label"].nunique() for g in games)
    fig, axes = _subplots(len(games), 1, _fig_size(n_x, 3, len(games)))
    for ax, game in zip(axes[:, 0], games):
        g = df[df["game"] == game]
        est = _estimates(g, ["label", "group"], "payoff_ratio", n_boot, seed)
        xs = list(est.groupby("label")["value"].mean().sort_values(ascending=False).index)
        groups = [x for x in ("L", "M", "H", "?") if x in set(g["group"])]
        names = {}
        for grp in groups:
            scales = exps.loc[sorted(set(g.loc[g["group"] == grp, "run_dir"])), "scale"]
            what = ((_declared(game) or GameInfo("")).stakes_key or "stakes").replace("_", " ")
            names[grp] = f"{grp} ({what} ~ {np.nanmedian(scales.to_numpy(dtype=float)):,.0f})"
        est = est.assign(hue=est["group"].map(names))
        _grouped_bars(ax, est, xs, [names[x] for x in groups], {names[x]: GROUP_COLORS[x] for x in groups})
        ax.axhline(1.0, color="black", lw=1, ls="--")
        ax.set_title(f"{game_title(game)}: payoff by configuration group (melee)")
        ax.set_ylabel("mean payoff / mean NE payoff")
        ax.set_xlabel("player (label)")
        ax.legend(title="group (median scale)", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    sources = _dirs(df)
    png, svg = _save(fig, out, "fig3_groups", sources)
    return Figure("fig3_groups", "Payoff by configuration group",
                  "Mean payoff over mean NE payoff per player and configuration group (L/M/H: beauty-contest "
                  "upper bound in [10,100) / [100,1000) / [1000,10000); auction assets 100 / 1000 / 10000 with "
                  "values ~ N(50,10) / N(500,100) / N(5000,1000)), 95% session-bootstrap intervals; dashed "
                  "line: the NE payoff. Paper Figure 3.", png, svg, sources)


def figure_action_paths(frames: Frames, out: Path, n_boot: int = N_BOOT, seed: int = 0) -> Figure:
    """Figure 5: mean normalised action per run index of a session, per label, with the NE line."""
    df = _players(frames)
    multi = frames.experiments[frames.experiments["runs_per_session"] > 1]["run_dir"]
    df = df[df["run_dir"].isin(multi) & df["action_norm"].notna()]
    if df.empty or df["run"].max() < 1:
        raise Skip("no experiment with several runs per session (history), so there are no action paths.")
    exps = frames.experiments.set_index("run_dir")
    dirs = sorted(df["run_dir"].unique(), key=lambda d: (exps.loc[d, "game"], exps.loc[d, "experiment"]))
    labels = sorted(df["label"].unique())
    colors = dict(zip(labels, _palette(len(labels))))
    ncol = 2 if len(dirs) > 1 else 1
    nrow = math.ceil(len(dirs) / ncol)
    fig, axes = _subplots(nrow, ncol, (4.7 * ncol + 2.0, 3.3 * nrow + 0.4))
    for ax in axes.flat[len(dirs):]:
        ax.set_visible(False)
    for ax, d in zip(axes.flat, dirs):
        g = df[df["run_dir"] == d]
        game = exps.loc[d, "game"]
        runs = sorted(g["run"].unique())
        for lab in sorted(g["label"].unique()):
            part = g[g["label"] == lab]
            ests = [bootstrap_mean(part.loc[part["run"] == r, "action_norm"], part.loc[part["run"] == r, "cluster"],
                                   n_boot=n_boot, seed=seed) for r in runs]
            x = np.array(runs) + 1
            y = np.array([e.value for e in ests])
            ax.plot(x, y, marker="o", ms=3.5, color=colors[lab], label=lab)
            lo, hi = np.array([e.low for e in ests]), np.array([e.high for e in ests])
            if not np.all(np.isnan(lo)):
                ax.fill_between(x, lo, hi, color=colors[lab], alpha=0.12, lw=0)
        ne = g.groupby("run")["ne_action_norm"].mean()
        ax.plot(np.array(ne.index) + 1, ne.to_numpy(), color="black", ls="--", lw=1.2, zorder=1,
                label=(_declared(game) or GameInfo("")).equilibrium_note or "NE")
        ax.set_xticks(np.array(runs) + 1)
        ax.set_xlabel("run within the session")
        ax.set_ylabel((_declared(game) or GameInfo("")).action_axis or "action (normalised)")
        e = exps.loc[d]
        ax.set_title(f"{game_title(game)}, {e['environment']}\n{_wrap(setting_name(e), 60)}")
    handles = [Line2D([], [], color=colors[lab], marker="o", ms=4, label=lab) for lab in labels]
    handles.append(Line2D([], [], color="black", ls="--", label="Nash equilibrium"))
    _legend_right(fig, handles, "player (mean, 95% CI band)")
    sources = [str(d) for d in dirs]
    png, svg = _save(fig, out, "fig4_action_paths", sources)
    return Figure("fig4_action_paths", "Action paths over the runs of a session",
                  "Mean action per run index across sessions, normalised so that sessions with different draws "
                  "are comparable (beauty contest: choice / upper bound, NE 0; auctions: bid or drop-out price / "
                  "private value, NE about 1), with 95% session-bootstrap bands; dashed: the equilibrium action. "
                  "Paper Figure 5.", png, svg, sources)


def rule_break_table(frames: Frames, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Table 2: % of player-runs with a rule break, by label x game x history given.

    Player-runs decoded under a schema (``structured``) are listed apart as ``label [format]`` or
    ``label [strict]``: their parse and schema errors were prevented, not avoided, so pooling them with
    free replies would flatter the label.
    """
    df = _players(frames).assign(history_given=lambda d: np.where(d["history"] == "none", "no", "yes"))
    return _estimates(_structured_apart(df), ["label", "game", "history_given"], "rule_break_rate_pct", n_boot,
                      seed)


def _structured_apart(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of constrained replies get their mode in the label (``S [format]``)."""
    if "structured" not in df.columns:
        return df
    labels = [lab if not isinstance(m, str) or m == "off" else f"{lab} [{m}]"
              for lab, m in zip(df["label"], df["structured"])]
    return df.assign(label=labels)


def figure_rule_breaking(frames: Frames, out: Path, n_boot: int = N_BOOT, seed: int = 0) -> Figure:
    """Table 2 as a heat map, plus the table with intervals and the per-kind decision counts."""
    est = rule_break_table(frames, n_boot, seed)
    if est.empty:
        raise Skip("no complete runs.")
    if (est["value"] == 0).all():  # a heat map and two tables of zeros would say "nothing" three times
        labels = sorted(est["label"].unique())
        raise Skip(f"no player broke a rule: every player-run of {', '.join(short(x) for x in labels[:8])}"
                   f"{' ...' if len(labels) > 8 else ''} gave only valid replies, so there is nothing to draw.")
    est = est.assign(column=[f"{game_title(g)}\nhistory: {h}" for g, h in zip(est["game"], est["history_given"])])
    cols = sorted(est["column"].unique())
    labels = sorted(est["label"].unique())
    grid = est.pivot_table(index="label", columns="column", values="value").reindex(index=labels, columns=cols)
    names = max(len(short(x)) for x in labels)  # the y labels take their width from the figure's
    fig, axes = _subplots(1, 1, (max(5.5, 1.55 * len(cols) + 3.0 + 0.09 * max(0, names - 20)),
                                 max(2.6, 0.42 * len(labels) + 1.6)))
    ax = axes[0, 0]
    im = ax.imshow(grid.to_numpy(dtype=float), cmap="Reds", vmin=0, vmax=100, aspect="auto")
    for i in range(len(labels)):
        for j in range(len(cols)):
            v = grid.iat[i, j]
            if not (isinstance(v, float) and math.isnan(v)):
                ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=9,
                        color="white" if v > 55 else "black")
            else:
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=8, color="#999999")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels([short(x) for x in labels])
    ax.grid(False)
    ax.set_xlabel("game and whether history was given")
    ax.set_ylabel("player (label)")
    ax.set_title("Rule breaking (% of player-runs with an invalid reply)")
    fig.colorbar(im, ax=ax, label="% of player-runs", shrink=0.9)
    sources = _dirs(frames.players)
    png, svg = _save(fig, out, "fig5_rule_breaking", sources)
    table = est.assign(cell=[_cell(r) for _, r in est.iterrows()]).pivot_table(
        index="label", columns="column", values="cell", aggfunc="first").reindex(index=labels, columns=cols)
    table.columns = [c.replace("\n", ", ") for c in table.columns]
    kinds = _structured_apart(frames.decisions[frames.decisions["role"] != "opponent"])
    kinds = (kinds.assign(kind=kinds["violation"].fillna("none"))
             .pivot_table(index="label", columns="kind", values="run", aggfunc="count", fill_value=0))
    kinds = kinds.reindex(columns=[c for c in ("none", "parse_error", "schema_error", "rule_violation")
                                   if c in kinds.columns]).rename(columns={"none": "valid decisions"})
    kinds.columns.name = None
    return Figure("fig5_rule_breaking", "Rule breaking by player, game and history",
                  "Share of player-runs (all environments pooled, equilibrium opponents left out) in which the "
                  "player gave at least one invalid reply: no parsable JSON, a wrong type, or an action against "
                  "the rules (a number outside the range, a bid above the assets). Paper Table 2.", png, svg,
                  sources, tables=[("Rule breaking, % of player-runs [95% CI]", table),
                                   ("Decisions by kind of violation", kinds)])


def _cell(r: pd.Series, digits: int = 1) -> str:
    if math.isnan(r["value"]):
        return "-"
    s = f"{r['value']:.{digits}f}"
    if not math.isnan(r["low"]):
        s += f" [{r['low']:.{digits}f}, {r['high']:.{digits}f}]"
    return s


def figure_sessions(frames: Frames, out: Path, n_boot: int = N_BOOT, seed: int = 0) -> Figure:
    """Table 1: average payoff after the first 20 / 60 / 100 sessions (melee), and the running mean."""
    df = _players(frames)
    df = df[df["environment"] == "melee"]
    counts = df.groupby("run_dir")["session"].nunique()
    dirs = sorted(counts[counts >= CHECKPOINTS[0]].index)
    if not dirs:
        most = int(counts.max()) if len(counts) else 0
        raise Skip(f"Table 1 (payoff after the first 20 / 60 / 100 sessions) needs a melee experiment with at "
                   f"least {CHECKPOINTS[0]} complete sessions; the largest here has {most}. Set sessions = 100 "
                   f"in its [experiment] table, or run the paper's suite with 'econarena suite configs/paper "
                   f"--sessions paper' (paper: the senior environment, 100 sessions).")
    exps = frames.experiments.set_index("run_dir")
    labels = sorted(df[df["run_dir"].isin(dirs)]["label"].unique())
    colors = dict(zip(labels, _palette(len(labels))))
    fig, axes = _subplots(len(dirs), 1, (8.5, 3.2 * len(dirs) + 0.4))
    rows = []
    for ax, d in zip(axes[:, 0], dirs):
        g = df[df["run_dir"] == d]
        sessions = sorted(g["session"].unique())
        for k in [c for c in CHECKPOINTS if c <= len(sessions)]:
            first = g[g["session"].isin(sessions[:k])]
            for lab, part in first.groupby("label"):
                e = estimate(part, "payoff_ratio", n_boot=n_boot, seed=seed)
                rows.append({"experiment": exps.loc[d, "experiment"], "game": game_title(exps.loc[d, "game"]),
                             "label": lab, "sessions": k, "value": e.value, "low": e.low, "high": e.high})
            ax.axvline(k, color="#888888", lw=0.8, ls=":")
        rm = running_mean(g, "payoff_ratio")
        for lab, part in rm.groupby("label"):
            ax.plot(part["sessions"], part["value"], color=colors[lab], lw=1.4, label=lab)
        ax.axhline(1.0, color="black", lw=1, ls="--")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("number of sessions averaged (first k)")
        ax.set_ylabel("mean payoff / mean NE payoff")
        e = exps.loc[d]
        ax.set_title(f"{game_title(e['game'])}: {setting_name(e)}")
    handles = [Line2D([], [], color=colors[lab], label=lab) for lab in labels]
    handles += [Line2D([], [], color="black", ls="--", label="NE payoff"),
                Line2D([], [], color="#888888", ls=":", label="20 / 60 / 100 sessions")]
    _legend_right(fig, handles, "player")
    png, svg = _save(fig, out, "fig6_sessions", dirs)
    est = pd.DataFrame(rows)
    table = est.assign(cell=[_cell(r, 3) for _, r in est.iterrows()],
                       after=[f"after {k} sessions" for k in est["sessions"]]).pivot_table(
        index=["game", "experiment", "label"], columns="after", values="cell", aggfunc="first")
    table = table.reindex(columns=[f"after {k} sessions" for k in CHECKPOINTS
                                   if f"after {k} sessions" in table.columns])
    return Figure("fig6_sessions", "Average payoff after the first 20 / 60 / 100 sessions",
                  "Running mean payoff (over mean NE payoff) as sessions accumulate, in melee experiments with "
                  "at least 20 sessions; the table gives the value after the first 20, 60 and 100 sessions "
                  "with 95% session-bootstrap intervals; k counts complete sessions in session order (a session "
                  "left incomplete by API errors is skipped, not counted). Paper Table 1 (senior environment).",
                  png, svg, dirs,
                  tables=[("Mean payoff / NE payoff after the first k sessions [95% CI]", table)])


def figure_win_rates(frames: Frames, out: Path, n_boot: int = N_BOOT, seed: int = 0) -> Figure:
    """Win rates per label and environment, with the equal-share reference 1/n."""
    df = _players(frames)
    if df.empty:
        raise Skip("no complete runs.")
    games = sorted(df["game"].unique())
    envs = sorted(df["environment"].unique())
    colors = dict(zip(envs, _palette(len(envs))))
    n_x = max(df[df["game"] == g]["label"].nunique() for g in games)
    fig, axes = _subplots(len(games), 1, _fig_size(n_x, len(envs), len(games)))
    for ax, game in zip(axes[:, 0], games):
        g = df[df["game"] == game].rename(columns={"environment": "hue"})
        est = _estimates(g, ["label", "hue"], "win_rate", n_boot, seed)
        xs = list(est.groupby("label")["value"].mean().sort_values(ascending=False).index)
        _grouped_bars(ax, est, xs, [e for e in envs if e in set(g["hue"])], colors)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{game_title(game)}: win rate")
        ax.set_ylabel("share of player-runs won")
        ax.set_xlabel("player (label)")
    handles = [Patch(color=colors[e], label=e) for e in envs]
    _legend_right(fig, handles, "environment")
    sources = _dirs(df)
    png, svg = _save(fig, out, "fig7_win_rates", sources)
    return Figure("fig7_win_rates", "Win rates",
                  "Share of player-runs the player won (a shared beauty-contest prize counts as a win; auctions: "
                  "the player bought the item), pooled over experiments per environment, 95% session-bootstrap "
                  "intervals; equilibrium opponents are left out.", png, svg, sources)


FIGURES = (figure_melee_payoff, figure_rational_deviation, figure_groups, figure_action_paths,
           figure_rule_breaking, figure_sessions, figure_win_rates)
FIGURE_TITLES = {
    "figure_melee_payoff": "Mean payoff per player in the melee environment",
    "figure_rational_deviation": "Deviation from equilibrium in the rational environment",
    "figure_groups": "Payoff by configuration group",
    "figure_action_paths": "Action paths over the runs of a session",
    "figure_rule_breaking": "Rule breaking by player, game and history",
    "figure_sessions": "Average payoff after the first 20 / 60 / 100 sessions",
    "figure_win_rates": "Win rates",
}


# ------------------------------------------------------------------------------------ steering

def _steer_name(key: tuple[str, str, str], keys: Sequence[tuple[str, str, str]]) -> str:
    """A steering group's legend entry: the action space, plus experiment / lineup only where they differ."""
    exp, lineup, space = key
    bits = [exp] if len({k[0] for k in keys}) > 1 else []
    bits += [lineup] if len({k[1] for k in keys}) > 1 else []
    return space + (f" ({', '.join(bits)})" if bits else "")


def figure_steering_curves(curves: pd.DataFrame, report_iterations: dict[tuple[str, str, str], list[int]],
                           sources: Sequence[str], out: Path) -> Figure:
    """NashConv and CFR gain over CFR iterations per action space: the mean over games with a band of
    ± one sd (ddof = 1), and a dotted vertical line at the report iteration."""
    if curves.empty:
        raise Skip("no steering game logged an iteration.")
    keys = sorted({(r.experiment, r.lineup, r.space) for r in curves.itertuples()})
    colors = dict(zip(keys, _palette(len(keys))))
    fig, axes = _subplots(1, 2, (11.0, 3.8))
    for ax, metric, title in ((axes[0, 0], "nash_conv", "NashConv"), (axes[0, 1], "cfr_gain", "CFR gain")):
        for key in keys:
            part = curves[(curves["experiment"] == key[0]) & (curves["lineup"] == key[1])
                          & (curves["space"] == key[2])].sort_values("iteration")
            x = part["iteration"].to_numpy(float)
            m = part[f"{metric}_mean"].to_numpy(float)
            sd = np.nan_to_num(part[f"{metric}_sd"].to_numpy(float))
            ax.plot(x, m, color=colors[key], marker="o", ms=2.5, lw=1.4, label=_steer_name(key, keys))
            ax.fill_between(x, m - sd, m + sd, color=colors[key], alpha=0.18, linewidth=0)
            for it in report_iterations.get(key, []):
                ax.axvline(it, color=colors[key], ls=":", lw=1.1)
        ax.axhline(0, color="#888888", lw=0.7)
        ax.set_title(title)
        ax.set_xlabel("CFR iteration")
        ax.set_ylabel(f"{title} (payoff units)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles = [Line2D([], [], color=colors[k], marker="o", ms=3, label=_steer_name(k, keys)) for k in keys]
    handles.append(Line2D([], [], color="#333333", ls=":", label="report iteration"))
    _legend_right(fig, handles, "action space")
    png, svg = _save(fig, out, "steer_curves", sources)
    its = sorted({i for v in report_iterations.values() for i in v})
    return Figure("steer_curves", "Steering: NashConv and CFR gain over CFR iterations",
                  "Mean over games per action space at each logged iteration; the band is ± one standard deviation "
                  "over games (ddof = 1). NashConv: the steered player's best action value minus the value of the "
                  "average strategy; CFR gain: the average strategy's value minus that of the baseline action. "
                  f"Dotted line: the report iteration ({', '.join(map(str, its))}).", png, svg, list(sources))


def figure_steering_strategies(strategies: pd.DataFrame,
                               report_iterations: dict[tuple[str, str, str], list[int]],
                               sources: Sequence[str], out: Path) -> Figure:
    """Per action space, horizontal bars: the mean final probability of every action label (25 offers stay
    readable one per line), whiskers ± one sd, the baseline in grey and the uniform start dashed."""
    del report_iterations  # the final strategy is the last logged one, not the report iteration's
    if strategies.empty:
        raise Skip("no steering game logged a strategy.")
    keys = list(dict.fromkeys((r.experiment, r.lineup, r.space) for r in strategies.itertuples()))
    sizes = [int(((strategies["experiment"] == k[0]) & (strategies["lineup"] == k[1])
                  & (strategies["space"] == k[2])).sum()) for k in keys]
    height = sum(0.24 * n + 1.1 for n in sizes) + 0.6
    fig = MplFigure(figsize=(8.5, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(keys), 1, squeeze=False, gridspec_kw={"height_ratios": [n + 4 for n in sizes]})
    colors = dict(zip(keys, _palette(len(keys))))
    for ax, key, n in zip(axes[:, 0], keys, sizes):
        part = strategies[(strategies["experiment"] == key[0]) & (strategies["lineup"] == key[1])
                          & (strategies["space"] == key[2])]
        y = np.arange(n)[::-1]
        m = part["mean"].to_numpy(float)
        sd = np.nan_to_num(part["sd"].to_numpy(float))
        bar_colors = ["#bbbbbb" if b else colors[key] for b in part["baseline"]]
        ax.barh(y, m, 0.7, xerr=sd, color=bar_colors, edgecolor=bar_colors, capsize=2,
                error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
        ax.axvline(1 / n, color="#555555", ls="--", lw=0.9)
        ax.set_yticks(y, [textwrap.shorten(str(a), 40, placeholder="...") for a in part["action"]])
        ax.set_xlim(0, min(1.02, max(float(np.max(m + sd)), 1.5 / n) * 1.1 + 0.01))  # small shares stay visible
        ax.grid(axis="y", visible=False)
        games = int(part["games"].max())
        ax.set_title(f"{_steer_name(key, keys)}: mean strategy at the last logged iteration "
                     f"({part['final_iteration'].iloc[0]}) over {games} game{'s' if games > 1 else ''}")
        ax.set_xlabel("probability of the action")
    handles = [Patch(color="#bbbbbb", label="baseline (no instruction)"),
               Line2D([], [], color="#555555", ls="--", label="uniform start 1 / |A|")]
    _legend_right(fig, handles, "")
    png, svg = _save(fig, out, "steer_strategies", sources)
    return Figure("steer_strategies", "Steering: final mixed strategies",
                  "Mean over games of the average strategy CFR reached at its last logged iteration, per action "
                  "label; whiskers ± one standard deviation over games (ddof = 1). Grey: the baseline action "
                  "(no instruction); dashed: the uniform strategy CFR starts from. Numbers in "
                  "steering_strategies.csv.", png, svg, list(sources))
