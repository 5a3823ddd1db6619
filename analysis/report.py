"""``econarena report``: run directories -> one self-contained ``report.html`` plus figures and exports.

Why self-contained: a report is mailed, archived and opened on planes; every figure is embedded as a
base64 PNG (the PNG and SVG files also sit beside the HTML for papers and slides), the CSS is inline and
nothing is fetched. A figure whose data are absent is replaced by a note saying what it would need.

Written to ``out``: ``report.html``, ``figures/*.png|svg``, ``metrics.csv`` (every metric per setting and
label with its 95% interval), ``decisions.parquet``, ``runs.parquet`` and ``players.parquet``; sections
add their own (``gamabench_scores.csv``, ``glee_*.csv``, ``steering.csv``, ``steering_strategies.csv``).
"""

from __future__ import annotations

import base64
import html
import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import __version__
from ..rundir import BASELINE_AGENTS
from . import distributions
from . import figures as F
from .compare import compare, setting_pairs
from .families import gamabench, glee, steering
from .families import negotiationarena as na
from .load import SETTING_COLUMNS, Frames, export, load
from .stats import N_BOOT
from .tables import METRICS, metric_table, wide
from .transcripts import transcripts_section

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LOCAL_AGENTS = set(BASELINE_AGENTS) | {"hf"}


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


def load_prices(path: str | Path | None) -> dict[str, tuple[float, float]]:
    """USD per million (input, output) tokens by model name or label, from a TOML file::

        ["gpt-4o"]
        input_per_mtok = 2.5
        output_per_mtok = 10.0

    Prices change and differ by contract, so none are built in; local models and baselines cost 0.
    """
    if path is None:
        return {}
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    out = {}
    for name, v in data.items():
        if isinstance(v, dict):
            prices = []
            for key in ("input_per_mtok", "output_per_mtok"):
                x = v.get(key, 0.0)
                if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
                    raise ValueError(f"[{name}] {key}: expected a number >= 0 (got {x!r})")
                prices.append(float(x))
            out[name] = (prices[0], prices[1])
    return out


def usage_table(frames: Frames, prices: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """Tokens, latency and cost per label (the decisions of opponents left out)."""
    prices = prices or {}
    d = frames.decisions[frames.decisions["role"] != "opponent"]
    rows = []
    for (label, agent), part in d.groupby(["label", "agent"], sort=True, dropna=False):
        models = sorted({str(m) for m in part["model"].dropna()})
        tin, tout = part["tokens_in"].sum(min_count=1), part["tokens_out"].sum(min_count=1)
        known = part["tokens_in"].notna() | part["tokens_out"].notna()
        price = prices.get(str(label)) or next((prices[m] for m in models if m in prices), None)
        if agent in LOCAL_AGENTS:
            cost = "0 (local)"
        elif price is not None and known.any():
            usd = (0 if math.isnan(tin) else tin) * price[0] + (0 if math.isnan(tout) else tout) * price[1]
            cost = f"{usd / 1e6:.4f}"
        else:
            cost = "-"
        rows.append({
            "label": label, "agent": agent, "model": ", ".join(models) or "-", "decisions": len(part),
            "tokens in": "-" if math.isnan(tin) else f"{int(tin):,}",
            "tokens out": "-" if math.isnan(tout) else f"{int(tout):,}",
            "tokens out / decision": "-" if not known.any() else f"{part['tokens_out'].mean():.1f}",
            "mean latency (s)": f"{part['latency_s'].mean():.3f}",
            "cached %": f"{100 * part['cached'].mean():.1f}",
            "API errors": int(part["error"].notna().sum()),
            "cost (USD)": cost,
        })
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ HTML

CSS = """
body{font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1180px;
padding:1.2rem 1.6rem 4rem;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem} h2{margin-top:2.4rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.meta{color:#555;font-size:.9rem} figure{margin:1.2rem 0 2rem} figure img{max-width:100%;height:auto;
border:1px solid #eee} figcaption{font-size:.9rem;color:#333;max-width:980px}
figcaption .src{display:block;color:#666;font-size:.8rem;margin-top:.3rem;word-break:break-all}
table{border-collapse:collapse;font-size:.82rem;margin:.6rem 0 1rem} th,td{border:1px solid #ddd;
padding:.25rem .5rem;text-align:left;vertical-align:top} th{background:#f4f6f8}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.5rem .8rem;margin:.8rem 0}
details{margin:.5rem 0} summary{cursor:pointer;font-weight:600} .tablewrap{overflow-x:auto}
nav a{margin-right:.9rem} code{background:#f4f4f4;padding:0 .2rem}
"""

# Marks the page once every image has decoded: a browser test reads it from the DOM.
ONLOAD = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-images-total', String(imgs.length));
  document.body.setAttribute('data-images-loaded', String(ok));
});
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _table_html(df: pd.DataFrame, index: bool = True) -> str:
    if df is None or df.empty:
        return "<p class='meta'>(empty)</p>"
    if index:  # the index as ordinary columns: one header row instead of pandas' two
        df = df.reset_index()
    df = df.copy()
    df.columns = [str(c) for c in df.columns]  # a named column index (a pivot's) would add an empty column
    return "<div class='tablewrap'>" + df.to_html(index=False, na_rep="-", border=0, escape=True) + "</div>"


def _figure_html(n: int, fig: F.Figure, out: Path) -> str:
    data = base64.b64encode(fig.png.read_bytes()).decode("ascii")
    rel_png, rel_svg = fig.png.relative_to(out).as_posix(), fig.svg.relative_to(out).as_posix()
    parts = [f"<figure id='{fig.key}'>",
             f"<img src='data:image/png;base64,{data}' alt='{_esc(fig.title)}' data-figure='{fig.key}'>",
             f"<figcaption><b>Figure {n}. {_esc(fig.title)}.</b> {_esc(fig.caption)} "
             f"Files: <a href='{_esc(rel_png)}'>PNG</a>, <a href='{_esc(rel_svg)}'>SVG</a>."
             f"<span class='src'>Run directories: {_esc(F.sources_text(fig.sources))}</span></figcaption>"]
    for title, table in fig.tables:
        parts.append(f"<h3>{_esc(title)}</h3>{_table_html(table)}")
    parts.append("</figure>")
    return "\n".join(parts)


def _experiments_html(frames: Frames) -> str:
    cols = ["experiment", "game", "environment", "history", "prompt", "group", "group_source", "sessions",
            "runs_per_session", "runs_complete", "runs_incomplete", "status", "run_dir"]
    return _table_html(frames.experiments[cols].rename(columns={"group_source": "group from",
                                                                "runs_per_session": "runs/session"}), index=False)


def _comparisons_html(frames: Frames, n_boot: int, seed: int) -> str:
    pairs = setting_pairs(frames)
    if not pairs:
        return ("<p class='note'>No pair of experiments differs in exactly one of environment, history or prompt "
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
    return "\n".join(out)


def _summary_html(table: pd.DataFrame) -> str:
    parts = []
    for (exp, game), part in table.groupby(["experiment", "game"], sort=True):
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


def _gamabench_html(gama: tuple[list[F.Figure], list[tuple[str, str]], pd.DataFrame, Path], report: Report,
                    out: Path) -> str:
    """The GAMA-Bench section: score table, the labels-across-games chart and the per-round curves."""
    figs, skipped, table, csv_path = gama
    first = len(report.figures) + 1
    report.figures += figs
    report.skipped += skipped
    report.files.append(csv_path)
    parts = ["<h2 id='gamabench'>GAMA-Bench</h2>",
             "<p>Per-run scores (0-100) as the reference code computes them, mean &plusmn; standard deviation over "
             "runs (ddof = 1) and the number of runs. Overall: the mean of the eight leaderboard games, only for "
             "labels that have all of them; its &plusmn; is over the per-run overall means. Columns with "
             "[key=value] are unscored modes. Also in <code>" + _esc(csv_path.name) + "</code>.</p>",
             _table_html(table)]
    parts += [_figure_html(i, fig, out) for i, fig in enumerate(figs, first)]
    parts += [f"<p class='note'><b>Not shown: {_esc(name)}.</b> {_esc(why)}</p>" for name, why in skipped]
    return "\n".join(parts)


def _negotiation_html(trade: dict[str, Any], report: Report, out: Path) -> str:
    """NegotiationArena: per scenario the win-rate and payoff matrices by ordered model pair, the bad
    counter-offer rate, then the anchoring and acceptance figure."""
    formula = "as published (the player-2 rate divides by the wrong count)" if trade["formula"] == "paper" \
        else "correct: each player's wins over the games"
    parts = ["<h2 id='negotiationarena'>NegotiationArena</h2>",
             f"<p>Rows: player 1 (RED, moves first); columns: player 2 (BLUE). Win rate: a player wins a game "
             f"when its payoff change is larger than the opponent's ({_esc(formula)}).</p>"]
    for sc in trade["scenarios"]:
        bad = sc["bad_counter_offers"]
        parts += [f"<h3>{_esc(sc['title'])} ({sc['games']} games)</h3>",
                  "<p>Win rates (P1 / P2):</p>", _table_html(sc["wins"]),
                  "<p>Mean payoffs (P1 / P2):</p>", _table_html(sc["payoffs"])]
        if bad["n"]:
            parts.append(f"<p>Bad counter-offers: {bad['rate']:.1%} of {bad['n']} games "
                         f"(standard error {bad['se']:.1%}).</p>")
    first = len(report.figures) + 1
    report.figures += trade["figures"]
    report.skipped += trade.get("skipped", [])
    parts += [_figure_html(i, fig, out) for i, fig in enumerate(trade["figures"], first)]
    return "\n".join(parts)


def _linear_html(sec: glee.Section, report: Report, out: Path) -> str:
    """A family's linear models: effects tables and plots, the pair heatmaps and meta-game equilibria."""
    first = len(report.figures) + 1
    report.figures += sec.figures
    report.skipped += sec.skipped
    report.files += sec.files
    parts = [f"<h2 id='linear-{_esc(sec.family)}'>Linear models ({_esc(sec.family)})</h2>",
             "<p>One OLS per game and metric on the game's declared parameters (one-hot, the reference level "
             "dropped; several merged into one market variable where declared) and each seat's player (one-hot, "
             "the most frequent player as reference). Effects x100: the change of the metric in points of M "
             "against the reference, with 95% intervals coef &plusmn; 1.96 SE. Runs with a rule break are left "
             "out; efficiency and fairness are clipped to [0, 1]. Also in "
             + ", ".join(f"<code>{_esc(p.name)}</code>" for p in sec.files) + ".</p>"]
    parts += [f"<p class='note'>{_esc(n)}</p>" for n in sec.notes]
    parts += [f"<h3>{_esc(title)}</h3>{_table_html(table)}" for title, table in sec.tables]
    parts += [_figure_html(i, fig, out) for i, fig in enumerate(sec.figures, first)]
    parts += [f"<p class='note'><b>Not shown: {_esc(name)}.</b> {_esc(why)}</p>" for name, why in sec.skipped]
    return "\n".join(parts)


def _people_html(sec: glee.Section, report: Report) -> str:
    """GLEE's human games: each seat people played beside the models in the same seat (glee.human_section)."""
    report.files += sec.files
    parts = [f"<h2 id='people'>{_esc(glee.HUMAN_TITLE)}</h2>"]
    parts += [f"<p class='note'>{_esc(n)}</p>" for n in sec.notes]
    parts += [f"<h3>{_esc(title)}</h3>{_table_html(table, index=False)}" for title, table in sec.tables]
    return "\n".join(parts)


def _steering_html(sec: steering.Section, report: Report, out: Path) -> str:
    """Steering (issue 11): the table of NashConv, CFR gain and conversation shares per action space,
    then the curves over CFR iterations and the final mixed strategies."""
    first = len(report.figures) + 1
    report.figures += sec.figures
    report.skipped += sec.skipped
    report.files += sec.files
    parts = ["<h2 id='steering'>Steering</h2>",
             "<p>One column per experiment, lineup and action space, at the report iteration (the iteration row "
             "says which was used). NashConv and CFR gain: mean &plusmn; standard deviation over games "
             "(ddof = 1). Gain/NashConv of means: mean CFR gain / mean NashConv, the paper's reading; per game: "
             "mean &plusmn; sd of each game's ratio, games with NashConv 0 left out. The shares are over "
             "conversation branches (each game weighted by its branch count). Also in "
             + ", ".join(f"<code>{_esc(p.name)}</code>" for p in sec.files) + ".</p>",
             _table_html(sec.display)]
    parts += [_figure_html(i, fig, out) for i, fig in enumerate(sec.figures, first)]
    parts += [f"<p class='note'><b>Not shown: {_esc(name)}.</b> {_esc(why)}</p>" for name, why in sec.skipped]
    return "\n".join(parts)


def build_report(run_dirs: list[str | Path] | str | Path, out: str | Path, *, n_boot: int = N_BOOT, seed: int = 0,
                 prices: str | Path | None = None, title: str = "EconArena report", transcripts: int = 3) -> Report:
    """Load the run directories and write the report, figures and exports into ``out``; ``transcripts``
    runs per directory of a game that talks are rendered readably (0: none)."""
    frames = load(run_dirs)
    out = Path(out)
    figdir = out / "figures"
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out, out / "report.html")
    with F.style(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from font")  # reported once, as a note
        for fn in F.FIGURES:
            try:
                report.figures.append(fn(frames, figdir, n_boot=n_boot, seed=seed))
            except F.Skip as exc:
                report.skipped.append((F.FIGURE_TITLES[fn.__name__], str(exc)))
        gama = gamabench.report_section(frames.dirs, figdir, out)
        linear = glee.report_sections(frames.dirs, figdir, out)
        people = glee.human_section(frames.dirs, out)
        trade = na.report_section(frames.dirs, figdir)
        spread = distributions.report_sections(frames.dirs, figdir)
        steer = steering.report_section(frames.dirs, figdir, out)
    table = metric_table(frames, tuple(METRICS), (*SETTING_COLUMNS, "label"), n_boot=n_boot, seed=seed)
    table.to_csv(out / "metrics.csv", index=False)
    report.files += [out / "metrics.csv", *export(frames, out)]
    usage = usage_table(frames, load_prices(prices))
    talk = transcripts_section(frames.dirs, transcripts) if transcripts > 0 else None

    body = [f"<h1>{_esc(title)}</h1>",
            f"<p class='meta'>econarena {__version__} &middot; generated {time.strftime('%Y-%m-%d %H:%M')} "
            f"&middot; {len(frames.dirs)} run director{'y' if len(frames.dirs) == 1 else 'ies'} &middot; "
            f"{len(frames.players):,} player-runs &middot; {len(frames.decisions):,} decisions &middot; "
            f"intervals: {n_boot} bootstrap replicates, seed {seed}</p>",
            "<nav>" + "".join(f"<a href='#{f.key}'>Fig. {figure_number(f)}</a>" for f in report.figures)
            + ("<a href='#gamabench'>GAMA-Bench</a>" if gama is not None else "")
            + "".join(f"<a href='#linear-{_esc(sec.family)}'>Linear models ({_esc(sec.family)})</a>" for sec in linear)
            + ("<a href='#people'>People beside models</a>" if people is not None else "")
            + "".join(f"<a href='#metrics-{_esc(f)}'>Metrics ({_esc(f)})</a>" for f, _, _ in spread)
            + ("<a href='#negotiationarena'>NegotiationArena</a>" if trade is not None else "")
            + ("<a href='#steering'>Steering</a>" if steer is not None else "")
            + ("<a href='#transcripts'>Transcripts</a>" if talk is not None else "")
            + "<a href='#comparisons'>Comparisons</a><a href='#usage'>Tokens &amp; cost</a>"
            "<a href='#tables'>All metrics</a></nav>",
            "<h2>Experiments</h2>", _experiments_html(frames)]
    incomplete = frames.experiments[frames.experiments["runs_incomplete"] > 0]
    for _, e in incomplete.iterrows():
        body.append(f"<p class='note'>{_esc(e['experiment'])}: {e['runs_incomplete']} incomplete run(s) are left "
                    f"out; finish them with <code>econarena run ... --resume</code>.</p>")
    boxes = F.missing_glyphs(sorted({str(x) for x in frames.players["label"].dropna()}))
    if boxes:
        report.notes.append("label(s) " + ", ".join(f"{k!r}" for k in boxes) + " use characters no installed font "
                            "can draw (" + "".join(sorted(set("".join(boxes.values())))) + "): the figures show "
                            "boxes for them, the tables are exact; install a font that has them (Debian: "
                            "apt-get install fonts-noto-cjk) and run report again")
    for note in report.notes:
        body.append(f"<p class='note'>{_esc(note)}</p>")
    body.append("<h2>Figures</h2>")
    for fig in report.figures:
        body.append(_figure_html(figure_number(fig), fig, out))
    for name, why in report.skipped:
        body.append(f"<p class='note'><b>Not shown: {_esc(name)}.</b> {_esc(why)}</p>")
    if gama is not None:
        body.append(_gamabench_html(gama, report, out))
    for sec in linear:
        body.append(_linear_html(sec, report, out))
    if people is not None:
        body.append(_people_html(people, report))
    for family, fig, why in spread:
        body.append(f"<h2 id='metrics-{_esc(family)}'>Metrics by player ({_esc(family)})</h2>")
        if fig is not None:
            report.figures.append(fig)
            body.append(_figure_html(len(report.figures), fig, out))
        else:
            report.skipped.append((f"Metrics by player ({family})", why or ""))
    if trade is not None:
        body.append(_negotiation_html(trade, report, out))
    if steer is not None:
        body.append(_steering_html(steer, report, out))
    if talk is not None:
        body += ["<h2 id='transcripts'>Transcripts</h2>", talk]
    body += ["<h2 id='comparisons'>Comparisons between settings</h2>", _comparisons_html(frames, n_boot, seed),
             "<h2 id='usage'>Tokens and cost per player</h2>",
             "<p>Cost uses prices from <code>--prices FILE.toml</code> (USD per million tokens by model or label); "
             "local models and baselines cost nothing; '-' = unknown.</p>", _table_html(usage, index=False),
             "<h2 id='tables'>All metrics per experiment</h2>",
             "<p>value [95% CI]; every metric, setting and label is also in <code>metrics.csv</code>.</p>",
             _summary_html(table), "<h2>Definitions</h2>", DEFINITIONS,
             "<h2>Files</h2><p>" + ", ".join(f"<a href='{_esc(p.name)}'>{_esc(p.name)}</a>" for p in report.files)
             + "</p>"]
    page = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{_esc(title)}</title><style>{CSS}</style><script>{ONLOAD}</script></head>"
            "<body>\n" + "\n".join(body) + "\n</body></html>\n")
    report.html.write_text(page, encoding="utf-8")
    return report
