"""``econarena report``: run directories -> one self-contained ``report.html`` plus figures and exports.

The page leads with the answer: one scorecard per family present (each family module's ``scorecard``),
sorted by its headline number and set beside the published values where a study published them
(``analysis/published/``); then every figure; then the conversations of the games that talk; then the
detail (each family module's ``section``, comparisons, tokens and cost, every metric); and last the
provenance (directories, experiments, versions), folded away.

Why self-contained: a report is mailed, archived and opened on planes; every figure is embedded as a
base64 PNG (the PNG and SVG files also sit beside the HTML for papers and slides), the CSS is inline and
nothing is fetched. A figure whose data are absent is replaced by a note saying what it would need.

Written to ``out``: ``report.html``, ``figures/*.png|svg``, ``metrics.csv`` (every metric per setting and
label with its 95% interval), ``decisions.parquet``, ``runs.parquet`` and ``players.parquet``; sections
add their own (``gamabench_scores.csv``, ``glee_*.csv``, ``steering.csv``, ``steering_strategies.csv``).
"""

from __future__ import annotations

import base64
import functools
import math
import platform
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from .. import __version__
from ..formats.csvcells import frame_csv
from ..formats.prices import cost_usd, load_prices, price_of  # noqa: F401 - load_prices: the report API
from ..formats.registry import Registry
from ..formats.rundir import BASELINE_AGENTS, write_atomic
from ..games import GAMES
from ..games.text import storable
from . import distributions
from . import figures as F
from .cells import cell_rank, factor_columns, factors
from .compare import compare, compare_by, setting_pairs, trend_axis, trend_by
from .findings import findings_html
from .load import SETTING_COLUMNS, Frames, study
from .memory import release
from .page import Card, Context, Section, esc, sources_html, table_html
from .ratings import report_section as ratings_section
from .reasoning import reasoning_section
from .stats import N_BOOT
from .tables import METRICS, dominant_value, metric_table, wide
from .transcripts import Collector as TalkCollector
from .transcripts import conversations_section

LOCAL_AGENTS = set(BASELINE_AGENTS) | {"hf"}
EXPORT_BESIDE = 2_000_000  # decisions from which the exports run beside the figures (about 3 s of exporting)


@runtime_checkable
class ReportSection(Protocol):
    """A family's part of the report (``analysis/families/<family>.py``): the family it reads and its
    scorecard; it may also give ``section(ctx)`` (its part of the page) and ``collector()`` (what it keeps
    of each record while the scan reads the logs)."""

    FAMILY: str

    def scorecard(self, ctx: Any) -> Any: ...


# The family sections in report order (which also breaks ties between cards that summarise as many run
# directories), each imported when a report is built. The first one's card covers the experiments no other
# section claims, and it gives no section of its own.
SECTIONS: Registry[ModuleType] = Registry("report section", {
    "econarena": ".families.econarena", "gamabench": ".families.gamabench",
    "negotiationarena": ".families.negotiationarena", "glee": ".families.glee", "steering": ".families.steering",
}, package=__package__, kind=ReportSection)
REST = "econarena"  # the section whose card takes the experiments the others do not claim


def _sections() -> list[tuple[str, ModuleType]]:
    return list(SECTIONS.items())


@dataclass
class Report:
    out: Path
    html: Path
    figures: list[F.Figure] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def figure_number(fig: F.Figure) -> int:
    """The number in the file name (``fig4_action_paths`` is Figure 4), so the report and the PNGs agree
    even when an earlier figure is skipped."""
    return int(fig.key.split("_", 1)[0].removeprefix("fig"))


def _usage_of_part(part: pd.DataFrame) -> dict[str, Any]:
    """One label and agent's decisions summed as the usage table shows them."""
    known = part["tokens_in"].notna() | part["tokens_out"].notna()
    return {"models": sorted({str(m) for m in part["model"].dropna()}), "decisions": len(part),
            "tokens_in": part["tokens_in"].sum(min_count=1), "tokens_out": part["tokens_out"].sum(min_count=1),
            "known": bool(known.any()), "tokens_out_mean": part["tokens_out"].mean(),
            "latency_mean": part["latency_s"].mean(), "cached_mean": part["cached"].mean(),
            "errors": int(part["error"].notna().sum())}


def _usage_of_store(store: Any) -> list[tuple[tuple[Any, Any], dict[str, Any]]]:
    """The same from the engine for every label and agent, without the decisions in memory: one grouped pass
    (token counts are whole numbers, their sums exact in any order), then each one's latencies in log order
    for the mean, added as pandas' mean adds them."""
    found = store.con.execute("""SELECT label, agent, list(DISTINCT model) FILTER (WHERE model IS NOT NULL),
        count(*), sum(tokens_in), sum(tokens_out), count(tokens_out),
        count(*) FILTER (WHERE tokens_in IS NOT NULL OR tokens_out IS NOT NULL), count(*) FILTER (WHERE cached),
        count(error) FROM decisions WHERE role <> 'opponent' GROUP BY label, agent""").fetchall()
    found.sort(key=lambda k: (k[0], k[1] is None, k[1] or ""))
    out = []
    for label, agent, models, n, tin, tout, n_out, known, cached, errors in found:
        latency = store.con.sql("SELECT latency_s FROM decisions WHERE role <> 'opponent' AND label IS NOT "
                                "DISTINCT FROM ? AND agent IS NOT DISTINCT FROM ?", params=[label, agent]
                                ).fetchnumpy()["latency_s"]
        latency = np.ma.filled(np.ma.asarray(latency, dtype=float), np.nan)
        have = ~np.isnan(latency)
        out.append(((label, agent), {
            "models": sorted({str(m) for m in models or ()}), "decisions": int(n),
            "tokens_in": math.nan if tin is None else float(tin),
            "tokens_out": math.nan if tout is None else float(tout),
            "known": bool(known), "tokens_out_mean": float(tout) / n_out if n_out else math.nan,
            "latency_mean": float(np.where(have, latency, 0.0).sum()) / int(have.sum()) if have.any() else math.nan,
            "cached_mean": int(cached) / int(n) if n else math.nan, "errors": int(errors)}))
    return out


def usage_table(frames: Any, prices: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """Tokens, latency and cost per label (the decisions of opponents left out). ``frames``: the loaded
    :class:`Frames`, or the columnar store, summed by the engine (``_usage_of_store``)."""
    from .store import Store

    prices = prices or {}
    if isinstance(frames, Store):
        parts: Any = _usage_of_store(frames)
    else:
        d = frames.decisions[frames.decisions["role"] != "opponent"]
        parts = ((k, _usage_of_part(part)) for k, part in d.groupby(["label", "agent"], sort=True, dropna=False))
    rows = []
    for (label, agent), u in parts:
        models, tin, tout = u["models"], u["tokens_in"], u["tokens_out"]
        price = price_of(prices, str(label), models)
        if agent in LOCAL_AGENTS:
            cost = "0 (local)"
        elif price is not None and u["known"]:
            cost = f"{cost_usd(price, 0 if math.isnan(tin) else tin, 0 if math.isnan(tout) else tout):.4f}"
        else:
            cost = "-"
        rows.append({
            "label": label, "agent": agent, "model": ", ".join(models) or "-", "decisions": u["decisions"],
            "tokens in": "-" if math.isnan(tin) else f"{int(tin):,}",
            "tokens out": "-" if math.isnan(tout) else f"{int(tout):,}",
            "tokens out / decision": "-" if not u["known"] else f"{u['tokens_out_mean']:.1f}",
            "mean latency (s)": f"{u['latency_mean']:.3f}",
            "cached %": f"{100 * u['cached_mean']:.1f}",
            "API errors": u["errors"],
            "cost (USD)": cost,
        })
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ HTML

CSS = """
body{font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1180px;
padding:1rem 1.4rem 4rem;color:#1b1b1b;line-height:1.4}
h1{font-size:1.5rem;margin:.2rem 0} h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.meta{color:#555;font-size:.85rem;margin:.2rem 0} figure{margin:1.2rem 0 2rem} figure img{max-width:100%;height:auto;
border:1px solid #eee} figcaption{font-size:.9rem;color:#333;max-width:980px}
figcaption .src{display:block;color:#666;font-size:.8rem;margin-top:.3rem}
table{border-collapse:collapse;font-size:.82rem;margin:.6rem 0 1rem} th,td{border:1px solid #ddd;
padding:.25rem .5rem;text-align:left;vertical-align:top} th{background:#f4f6f8}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.4rem .8rem;margin:.6rem 0;font-size:.9rem}
details{margin:.5rem 0} summary{cursor:pointer;font-weight:600} .tablewrap{overflow-x:auto}
nav{font-size:.85rem} nav a{margin-right:.8rem} code{background:#f4f4f4;padding:0 .2rem}
.scorecard{border:1px solid #c9d3dd;border-radius:6px;padding:.3rem .9rem .5rem;margin:.8rem 0;background:#fbfcfd}
.scorecard h2{margin:.3rem 0;border:0;font-size:1.15rem} .scorecard .intro{font-size:.8rem;color:#444;margin:.2rem 0}
.scorecard .verdict{font-size:.85rem;margin:.3rem 0;font-weight:600}
table.card{font-size:.8rem;margin:.4rem 1rem .6rem 0}
table.card caption{text-align:left;font-weight:600;padding:.2rem 0}
table.card th{font-weight:600;font-size:.75rem;vertical-align:bottom} table.card td{white-space:nowrap}
table.card .n{text-align:right} table.card small{color:#555;font-size:.72rem;margin-left:.25rem}
table.card td>small:first-of-type{margin-left:.3rem} table.card .sub{display:block;color:#555;font-size:.72rem}
table.card .pub{display:block;font-size:.72rem;color:#555} .pub.ok{color:#1a7f37} .pub.off{color:#b35900}
table.card .tag{color:#6b46c1} .na{color:#999} .cards{display:flex;flex-wrap:wrap;align-items:flex-start}
.said{white-space:normal;display:block;max-width:420px}
body{overflow-wrap:anywhere}
table.card td:not(.n),table.card th:not(.n){white-space:normal;min-width:5rem;max-width:18rem}
"""

# Marks the page once every image has decoded, and where the first scorecard sits on screen: the browser
# test reads both from the DOM.
ONLOAD = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var b = document.body;
  b.setAttribute('data-images-total', String(imgs.length));
  b.setAttribute('data-images-loaded', String(ok));
  b.setAttribute('data-viewport', window.innerWidth + 'x' + window.innerHeight);
  b.setAttribute('data-scroll-width', String(document.documentElement.scrollWidth));
  var card = document.querySelector('.scorecard table');
  if (card) {
    var r = card.getBoundingClientRect();
    b.setAttribute('data-scorecard-box', [r.left, r.top, r.right, r.bottom].map(Math.round).join(','));
  }
});
"""


def _esc(x: Any) -> str:
    return esc(x)


def _table_html(df: pd.DataFrame, index: bool = True) -> str:
    return table_html(df, index)


def _figure_html(n: int, fig: F.Figure, out: Path) -> str:
    data = base64.b64encode(fig.png.read_bytes()).decode("ascii")
    rel_png, rel_svg = fig.png.relative_to(out).as_posix(), fig.svg.relative_to(out).as_posix()
    parts = [f"<figure id='{fig.key}'>",
             f"<img src='data:image/png;base64,{data}' alt='{_esc(fig.title)}' data-figure='{fig.key}'>",
             f"<figcaption><b>Figure {n}. {_esc(fig.title)}.</b> {_esc(fig.caption)} "
             f"Files: <a href='{_esc(rel_png)}'>PNG</a>, <a href='{_esc(rel_svg)}'>SVG</a>."
             f"<span class='src'>{sources_html(fig.sources)}</span></figcaption>"]
    for title, table in fig.tables:
        parts.append(f"<h3>{_esc(title)}</h3>{_table_html(table)}")
    parts.append("</figure>")
    return "\n".join(parts)


def _experiments_html(exps: pd.DataFrame) -> str:
    cols = ["experiment", "game", "environment", "history", "prompt", "group", "group_source", "sessions",
            "runs_per_session", "runs_complete", "runs_incomplete", "status", "run_dir"]
    if "part" in exps and (exps["part"] != "").any():  # a shard read without its siblings says so
        cols.insert(cols.index("status"), "part")
    return _table_html(exps[cols].rename(columns={"group_source": "group from",
                                                  "runs_per_session": "runs/session"}), index=False)


def _cell_comparisons_html(store: Any, frames: Frames, n_boot: int, seed: int) -> str:
    """Every factor of every grid: its levels against the first, per player, paired on the session (the
    cells of one grid share their sessions), with the number of comparisons each table holds."""
    out = []
    configs = {d.name: d.config for d in store.dirs}
    for run_dir in frames.experiments["run_dir"]:
        found = factors(configs.get(str(run_dir), {}))
        if not found:
            continue
        part = frames.subset(run_dir=run_dir)
        game = str(part.experiments["game"].iloc[0])
        metrics = ("payoff_ratio", "mean_deviation", *(("bid_deviation",) if dominant_value(game) else ()),
                   "rule_break_rate_pct")
        name = str(part.experiments["experiment"].iloc[0])
        for f in found:
            if len(f.levels) < 2:
                continue
            t = compare_by(part, found, f.key, metrics, n_boot=n_boot, seed=seed)
            if t.empty:
                continue
            rows: dict[tuple[str, str], dict[str, str]] = {}
            for _, r in t.iterrows():
                m = METRICS[r["metric"]].title
                d = r["diff"]
                star = "*" if not math.isnan(d.low) and (d.low > 0 or d.high < 0) else ""
                row = rows.setdefault((f"{f.key}={r['level']}", str(r["player"])), {})
                row[f"{m}: A"] = r["a"].fmt(3, ci=False)
                row[f"{m}: B"] = r["b"].fmt(3, ci=False)
                row[f"{m}: A - B"] = d.fmt(3) + star
            trends = trend_by(part, found, f.key, metrics, n_boot=n_boot, seed=seed)
            n, k = len(t), len(trends)
            counted = f"{n} comparison{'s' if n != 1 else ''}" + (f" and {k} trend{'s' if k != 1 else ''}" if k else "")
            out.append(f"<details open><summary>{_esc(F.game_title(game))}: {_esc(name)} &mdash; {_esc(f.key)}, "
                       f"each level (A) against {_esc(f.key)}={_esc(t['reference'].iloc[0])} (B), paired on the "
                       f"session; {counted}</summary>"
                       f"{_table_html(pd.DataFrame(rows).T.rename_axis(['level', 'player']))}"
                       f"{_trends_html(trends, trend_axis(f))}</details>")
    if not out:
        return ""
    return ("<p>Each grid factor: every level against the first (natural order), per player and the rest of its "
            "cell, with 95% intervals bootstrapped over the sessions the cells share (paired); a factor with "
            "ordered levels (numbers, efforts; three or more) also gives the trend across them. <b>*</b>: the "
            "interval excludes 0; weigh it against the number of comparisons and trends each table holds.</p>"
            + "\n".join(out))


def _trends_html(trends: pd.DataFrame, axis: str) -> str:
    """An ordered factor's trends (``compare.trend_by``): one row per player, a column per metric."""
    if trends.empty:
        return ""
    rows: dict[str, dict[str, str]] = {}
    for _, r in trends.iterrows():
        e = r["trend"]
        star = "*" if not math.isnan(e.low) and (e.low > 0 or e.high < 0) else ""
        row = rows.setdefault(str(r["player"]), {"levels": f"{r['first']}..{r['last']} ({r['levels']})"})
        row[f"{METRICS[r['metric']].title}: trend"] = e.fmt(3) + star
    return (f"<p class='meta'>Trend across {_esc(axis)}: the least-squares line of each metric on the level, read "
            "as the change it makes from the first level to the last, with a 95% interval bootstrapped over the "
            "sessions all levels share (paired).</p>"
            f"{_table_html(pd.DataFrame(rows).T.rename_axis('player'))}")


def _comparisons_html(frames: Frames, n_boot: int, seed: int, cells: str = "") -> str:
    pairs = setting_pairs(frames)
    if not pairs:
        if cells:
            return cells
        return ("<p class='meta'>No pair of experiments differs in exactly one of environment, history or prompt "
                "(same game, group and players), so there is nothing to compare here. Use <code>econarena "
                "compare DIR_A DIR_B</code> for any two directories.</p>")
    exps = frames.experiments.set_index("run_dir")
    out = ["<p>Each table: A, B and A - B per player with 95% session-bootstrap intervals (paired on sessions "
           "when both experiments drew the same sessions). <b>*</b>: the interval of the difference excludes 0."
           "</p>"]
    for a, b, what in pairs:
        fa, fb = frames.subset(run_dir=a), frames.subset(run_dir=b)
        t = compare(fa, fb, ("payoff_ratio", "mean_deviation", "rule_break_rate_pct"), n_boot=n_boot, seed=seed)
        rows: dict[str, dict[str, str]] = {}
        for _, r in t.iterrows():
            m = METRICS[r["metric"]].title
            d = r["diff"]
            star = "*" if not math.isnan(d.low) and (d.low > 0 or d.high < 0) else ""
            rows.setdefault(r["label"], {})
            rows[r["label"]][f"{m}: A"] = r["a"].fmt(3, ci=False)
            rows[r["label"]][f"{m}: B"] = r["b"].fmt(3, ci=False)
            rows[r["label"]][f"{m}: A - B"] = d.fmt(3) + star
        name_a, name_b = exps.loc[a, "experiment"], exps.loc[b, "experiment"]
        game = F.game_title(exps.loc[a, "game"])
        paired = " (paired)" if bool(t["paired"].iloc[0]) else ""
        out.append(f"<details open><summary>{_esc(game)}: A = {_esc(name_a)} vs B = {_esc(name_b)} "
                   f"&mdash; {_esc(what)}{paired}</summary>{_table_html(pd.DataFrame(rows).T)}</details>")
    return "\n".join(out) + cells


def _baselines(store: Any) -> set[tuple[str, str]]:
    """(run_dir, label) of the baseline players (strategies, scripts, people): a [grid.llm] factor never
    changes how they play, so their labels leave it out (``cells.shown_cell``)."""
    names = [d.name for d in store.dirs]
    found = store.con.execute("SELECT DISTINCT dir, label, agent FROM players WHERE label IS NOT NULL").fetchall()
    return {(names[int(d)], str(label)) for d, label, agent in found if agent in BASELINE_AGENTS}


def _findings_rows(store: Any, table: pd.DataFrame) -> list[dict[str, Any]]:
    """The metric table's rows for the findings, cells in their factors' natural order: each cell is a
    setting of its own (players ranked within it), and a baseline is flagged, so that the findings set the
    cells of an LLM player side by side but never a baseline's copies (a fixed rule, whatever the cell)."""
    rows = table.to_dict("records")
    if "cell" not in table.columns or not (table["cell"].fillna("") != "").any():
        return rows
    base = _baselines(store)
    found = {d.name: factors(d.config) for d in store.dirs}
    for r in rows:
        r["baseline"] = (str(r["run_dir"]), str(r["label"])) in base
    place = {d: i for i, d in enumerate(dict.fromkeys(str(r["run_dir"]) for r in rows))}
    return sorted(rows, key=lambda r: (place[str(r["run_dir"])],
                                       cell_rank(str(r.get("cell") or ""), found.get(str(r["run_dir"]), []))))


def _summary_html(table: pd.DataFrame) -> str:
    parts = []
    for (exp, game), part in table.groupby(["experiment", "game"], sort=True):
        if "cell" in part.columns and (part["cell"].fillna("") != "").any():  # a grid: a row per label and cell
            order = list(dict.fromkeys(zip(part["label"], part["cell"])))
            w = wide(part, ["label", "cell"]).reindex(order)
        else:
            w = wide(part, ["label"])
        w.columns = [f"{METRICS[c].title} ({METRICS[c].unit})" for c in w.columns]
        parts.append(f"<details><summary>{_esc(exp)} ({_esc(F.game_title(game))})</summary>{_table_html(w)}"
                     "</details>")
    return "\n".join(parts)


DEFINITIONS = """
<ul>
<li><b>Payoff ratio</b>: mean payoff / mean Nash-equilibrium payoff over complete runs (beauty contest: NE payoff
= prize / n; auctions: a payoff is the final assets, remaining assets plus the value of an item won). A player-run
with a rule break scores 0, in every game, so a player that never answers validly has ratio 0.</li>
<li><b>Deviation from NE</b>: auctions |final asset / NE asset - 1|; beauty contest |choice - 0| / upper bound
(the paper's ratio is undefined when the NE action is 0). A player-run with a rule break has no deviation (and
no action in the action paths); a player with no valid run has none at all.</li>
<li><b>Win rate</b>: share of player-runs won (a shared beauty-contest prize counts).</li>
<li><b>Rule breaking</b>: % of player-runs with at least one invalid reply (parse error, schema error or rule
violation); per-decision shares are in <code>metrics.csv</code>.</li>
<li><b>Intervals</b>: 95% percentile bootstrap, resampling sessions (the independent unit) within each run
directory and table, seeded; none is shown with fewer than two sessions.</li>
<li><b>Configuration group</b> L/M/H: an <code>[experiment] group</code> key, else an L/M/H token in the
experiment name, else the drawn scale (beauty-contest upper bound &lt; 100 / &lt; 1000 / else; auction assets
&le; 100 / &le; 1000 / else). The experiments table says which rule decided.</li>
<li><b>Roles</b>: in the rational environment the equilibrium opponents are left out of every per-player
figure and table.</li>
</ul>
"""


def _card_html(card: Card) -> str:
    verdict = f"<p class='verdict'>Against the published numbers: {_esc(card.compared)}.</p>" if card.compared else ""
    return (f"<section class='scorecard' id='{card.anchor}'><h2>{_esc(card.title)}</h2>"
            f"<p class='intro'>{card.intro}</p>{verdict}<div class='tablewrap'>{card.body}</div></section>")


def _family_of(game: str) -> str:
    found = GAMES.get(game)
    return found.info.family if found is not None else ""


def _core(store: Any) -> Frames:
    """The experiments no family module other than EconArena's analyses (the paper's figures and card), as
    pandas frames: only their rows are read into memory."""
    claimed = {m.FAMILY for name, m in _sections() if name != REST}
    keep = [d.index for d, e in zip(store.dirs, store.experiments) if _family_of(str(e["game"])) not in claimed]
    return store.frames(keep)


def _versions() -> str:
    import matplotlib
    import numpy

    return (f"econarena {__version__}, Python {platform.python_version()}, pandas {pd.__version__}, numpy "
            f"{numpy.__version__}, matplotlib {matplotlib.__version__}")


def _provenance_html(exps: pd.DataFrame, report: Report, numbers: dict[str, int]) -> str:
    """Which directories, experiments and versions made the page: folded away, never inside an image."""
    parts = [f"<p>Built with {_esc(_versions())}. Each run directory keeps its resolved <code>config.toml</code> "
             "and <code>manifest.json</code> (package version, seed, status).</p>",
             f"<h3>Experiments ({len(exps)} run directories)</h3>", _experiments_html(exps),
             "<h3>Run directories per figure</h3><ul>"]
    for fig in report.figures:
        parts.append(f"<li>Figure {numbers[fig.key]} ({_esc(fig.key)}): {_esc(F.sources_text(fig.sources))}</li>")
    parts.append("</ul><h3>Files</h3><p>" + ", ".join(f"<a href='{_esc(p.name)}'>{_esc(p.name)}</a>"
                                                       for p in report.files) + "</p>")
    return "\n".join(parts)


def report_collectors(transcripts: int = 50) -> dict[str, Any]:
    """The scan's consumers a report feeds beside the store, by name: one place, so the copy written as a run
    plays (``analysis/follow.py``) holds the parts the report's own reading asks for."""
    collectors = {m.FAMILY: m.collector() for _, m in _sections() if hasattr(m, "collector")}
    collectors["distributions"] = distributions.Collector()
    collectors["transcripts"] = TalkCollector(transcripts)
    return collectors


def _warm_imports(run_dirs: Sequence[str | Path] | str | Path) -> Any:
    """A started thread importing what the page needs only after the read: the template engine, the parquet
    writer and, for a GLEE study, the OLS fits (statsmodels, about a second).

    Why: the first report after ``econarena run`` waits for the run's follower to write the copy, then
    DuckDB restores it outside the GIL; this thread's imports fill that wait. It is joined before the
    sections run, so no import of theirs ever races one of its own; a failure is left for the section's own
    import to say."""
    import threading

    from ..formats.rundir import game_name

    dirs = [Path(run_dirs)] if isinstance(run_dirs, (str, Path)) else [Path(d) for d in run_dirs]
    try:
        games = {game_name(d) for d in dirs[:16]}
        glee = any(_family_of(g) == "glee" for g in games if g)
    except Exception:  # noqa: BLE001 - a config the read itself will refuse, with its own message
        glee = False

    def warm() -> None:
        try:
            import jinja2  # noqa: F401
            import pyarrow.dataset  # noqa: F401
            import pyarrow.parquet  # noqa: F401

            if glee:
                import statsmodels.regression.linear_model  # noqa: F401
        except Exception:  # noqa: BLE001 - said by the section that needs the module
            pass

    thread = threading.Thread(target=warm, name="econarena-warm-imports", daemon=True)
    thread.start()
    return thread


def build_report(run_dirs: Sequence[str | Path] | str | Path, out: str | Path, *, n_boot: int = N_BOOT, seed: int = 0,
                 prices: str | Path | None = None, title: str = "EconArena report",
                 transcripts: int = 50) -> Report:
    """Read the run directories (once) and write the report, figures and exports into ``out``; up to
    ``transcripts`` games per directory of a game that talks can be read as conversations (0: none)."""
    collectors = report_collectors(transcripts)
    warming = _warm_imports(run_dirs)
    try:
        store, found = study(run_dirs, consumers=list(collectors.values()))
    finally:
        warming.join()  # the sections import on this thread only once the warm-up is over
    try:
        return _build(store, found, Path(out), n_boot, seed, prices, title, transcripts, collectors)
    finally:
        store.close()


def _build(store: Any, found: Any, out: Path, n_boot: int, seed: int, prices: str | Path | None, title: str,
           transcripts: int, collectors: dict[str, Any]) -> Report:
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out, out / "report.html")
    report.notes += found.warnings
    exps = pd.DataFrame(store.experiments)
    dirs = [d.name for d in store.dirs]
    core = _core(store)
    return _page(store, found, out, n_boot, seed, title, transcripts, collectors, report, exps, dirs, core,
                 prices)


def _tables(store: Any, out: Path, n_boot: int, seed: int, prices: str | Path | None, exporting: Any = None
            ) -> tuple[pd.DataFrame, list[Path], pd.DataFrame]:
    """metrics.csv (every metric per setting and label with its interval), the parquet exports (``exporting``:
    already begun), usage. (The metric table run beside the figures on a second connection saved a little
    time and cost 80 MB more at the peak, the GLEE fits' and the intervals' arrays held at once: it runs
    after them; an export begun beside the figures is over before it starts, for the same reason.)"""
    exported = exporting.result() if exporting is not None else None
    with store.lean():
        table = metric_table(store, tuple(METRICS), (*SETTING_COLUMNS, "label", "cell"), n_boot=n_boot,
                             seed=seed)
    release()  # the streamed sessions' batches and the intervals' replicates, before the exports
    # a [grid] cell is part of each row's identity: its text and one column per factor, holding its level
    table = factor_columns(table, {d.name: d.config for d in store.dirs})
    frame_csv(table, out / "metrics.csv")  # the one CSV writer that neutralises formulas (csvcells)
    if exported is None:
        with store.lean():
            exported = store.export(out)
    files = [out / "metrics.csv", *exported]
    release()
    return table, files, usage_table(store, load_prices(prices))


def _page(store: Any, found: Any, out: Path, n_boot: int, seed: int, title: str, transcripts: int,
          collectors: dict[str, Any], report: Report, exps: pd.DataFrame, dirs: list[str], core: Frames,
          prices: str | Path | None) -> Report:
    """The report page: the figures and sections drawn, the tables built, then the page from its template."""
    ctx = Context([Path(d) for d in dirs], out / "figures", out, n_boot, seed, store, core)
    for family, c in collectors.items():
        ctx.provide(family, c)
    # a large study's export runs beside the figures, which leave a core idle (587,400 GLEE games: 15 s of
    # 84 s); a small one's after them, where its batches (75 MB at 57,600 games) don't add to their peak
    decisions = store.count("decisions")
    exporting = store.start_export(out) if decisions >= EXPORT_BESIDE else None
    try:
        cards, sections, numbers = _draw(ctx, store, dirs, collectors, report, prices)
        ctx.forget()  # what the sections memoised (the cells' estimates): the tables after them read the store
        release()
        table, files, usage = _tables(store, out, n_boot, seed, prices, exporting)
    except BaseException:
        if exporting is not None:
            exporting.cancel()
        raise
    report.files += files
    talk = conversations_section(dirs, transcripts, collectors["transcripts"]) if transcripts > 0 else None
    _font_note(store, report)
    incomplete = exps[exps["runs_incomplete"] > 0]
    names = ", ".join(str(x) for x in incomplete["experiment"][:5]) + (" ..." if len(incomplete) > 5 else "")
    page = _template("report.html").render(
        title=title, css=CSS, onload=ONLOAD, n_dirs=len(dirs), player_runs=store.count("players"),
        decisions=decisions, version=__version__, built=time.strftime("%Y-%m-%d %H:%M"),
        n_boot=n_boot, seed=seed, cards=cards, card_html=[_card_html(c) for c in cards], talk=talk,
        findings=findings_html(_findings_rows(store, table)),  # the finding in words, before any table
        incomplete=len(incomplete) and {"runs": int(incomplete["runs_incomplete"].sum()),
                                        "experiments": len(incomplete), "names": names},
        notes=report.notes, figures=[_figure_html(numbers[fig.key], fig, out) for fig in report.figures],
        skipped=report.skipped, sections=sections,
        comparisons=_comparisons_html(core, n_boot, seed, _cell_comparisons_html(store, core, n_boot, seed)),
        usage=_table_html(usage, index=False),
        summary=_summary_html(table[table["run_dir"].isin(set(core.experiments["run_dir"]))]),
        definitions=DEFINITIONS, provenance=_provenance_html(exps, report, numbers))
    # a log written before replies were held to the text rule may still hold a lone surrogate: shown as its
    # escape, and the page replaces the last one only once it is whole (never a 0-byte report.html)
    write_atomic(report.html, storable(page))
    return report


def _draw(ctx: Context, store: Any, dirs: list[str], collectors: dict[str, Any], report: Report,
          prices: str | Path | None) -> tuple[list[Card], list[Section], dict[str, int]]:
    """The figures of every layer, numbered in page order; the families' scorecards (heaviest first) and
    sections. Figures and skipped figures are recorded on ``report``."""
    core, figdir, n_boot, seed = ctx.core, ctx.figdir, ctx.n_boot, ctx.seed
    numbers: dict[str, int] = {}
    with F.style(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from font")  # reported once, as a note
        if not core.experiments.empty:
            for fn in F.FIGURES:
                try:
                    fig = fn(core, figdir, n_boot=n_boot, seed=seed)
                except F.Skip as exc:
                    report.skipped.append((F.FIGURE_TITLES[fn.__name__], str(exc)))
                else:
                    report.figures.append(fig)
                    numbers[fig.key] = figure_number(fig)
        cards = [(i, c) for i, (_, m) in enumerate(_sections()) if (c := m.scorecard(ctx)) is not None]
        sections = [s for name, m in _sections() if name != REST and (s := m.section(ctx)) is not None]
        spread = distributions.report_sections(dirs, figdir, collectors["distributions"])
        thinking = reasoning_section(store, figdir, ctx.out, load_prices(prices))  # None without reasoning
        if thinking is not None:
            sections.append(thinking)
        rated = ratings_section([Path(d) for d in dirs], figdir, n_boot, seed)  # a tournament's, else None
        if rated is not None:
            sections.append(rated)
    for family, fig, why in spread:
        if fig is not None:
            sections.append(Section(family, f"Metrics by player ({family})", [fig]))
        else:
            report.skipped.append((f"Metrics by player ({family})", why or ""))
    next_number = max(numbers.values(), default=0) + 1
    for sec in sections:
        for fig in sec.figures:
            numbers[fig.key] = next_number
            next_number += 1
        report.figures += sec.figures
        report.skipped += sec.skipped
        report.files += sec.files
    cards.sort(key=lambda ic: (-ic[1].weight, ic[0]))
    return [c for _, c in cards], sections, numbers


def _font_note(store: Any, report: Report) -> None:
    """A note on ``report`` naming the labels no installed font can draw (the figures show boxes)."""
    labels = store.con.execute("SELECT DISTINCT label FROM players WHERE label IS NOT NULL").fetchall()
    boxes = F.missing_glyphs(sorted({str(x[0]) for x in labels}))
    if boxes:
        report.notes.append("label(s) " + ", ".join(f"{k!r}" for k in boxes) + " use characters no installed font "
                            "can draw (" + "".join(sorted(set("".join(boxes.values())))) + "): the figures show "
                            "boxes for them, the tables are exact; install a font that has them (Debian: "
                            "apt-get install fonts-noto-cjk) and run report again")


@functools.cache
def _template(name: str) -> Any:
    """A page template of analysis/templates, every value escaped unless the template marks it ``safe`` (the
    HTML our own helpers built). Escaped as the rest of the page is (``html.escape``), so a page reads the
    same byte for byte as when it was assembled by hand."""
    import jinja2
    from markupsafe import Markup

    def escaped(x: Any) -> Markup:
        return x if isinstance(x, Markup) else Markup(esc(x))

    env = jinja2.Environment(autoescape=True, finalize=escaped, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.from_string((Path(__file__).with_name("templates") / name).read_text(encoding="utf-8"))
