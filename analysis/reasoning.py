"""Reasoning as an experiment axis: what thinking effort and budget buy, per model, in the report.

The EconArena paper compared chain-of-thought on and off; a reasoning model's effort or budget is the same
question asked with a dial. For each player that played with a reasoning setting, or whose replies carried
reasoning (decision records' ``reasoning_*`` keys, hosts/host.py), one row per experiment, label, model,
effort and budget: reasoning tokens spent per decision, deviation from Nash, payoff ratio, rule breaks,
replies cut inside their reasoning, and cost (reasoning tokens are billed as output, and the logged
``tokens_out`` already holds them). The figure sets each outcome against reasoning tokens per decision, one
line per model through its efforts. Present only when a study has such decisions: every other report keeps
its shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..formats.csvcells import frame_csv
from ..formats.numbers import plain
from ..formats.prices import cost_usd, price_of
from . import figures as F
from .cells import EFFORTS
from .page import Section, esc, table_html
from .tables import Metric, dominant_value

KEY = "reasoning_axis"


def _reasoning_tokens(d: pd.DataFrame) -> pd.Series:
    return d["reasoning_tokens"] if "reasoning_tokens" in d else pd.Series(math.nan, index=d.index)


# for `econarena compare`: not in the report's metrics.csv (whose columns every other study keeps)
REASONING_METRICS = {"reasoning_tokens_per_decision": Metric(
    "reasoning_tokens_per_decision", "reasoning tokens per decision", "tokens", "decisions", _reasoning_tokens,
    lambda d: _reasoning_tokens(d).notna().astype(float).where(_reasoning_tokens(d).notna()))}


def has_reasoning(frames: Any) -> bool:
    """Whether loaded frames hold reasoning decisions (the columns exist only then)."""
    return "reasoning_tokens" in frames.decisions and bool(frames.decisions["reasoning_tokens"].notna().any())
COLUMNS = ("experiment", "game", "label", "model", "effort", "budget", "player-runs", "decisions",
           "reasoning tokens / decision", "hidden %", "cut inside reasoning", "tokens out / decision",
           "deviation from NE", "bid deviation", "payoff ratio", "rule breaks %", "cost (USD)")


def reasoning_table(store: Any, prices: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """One row per experiment, label, model, effort and budget of the players that reasoned (opponents in a
    rational environment left out); empty when the study has no reasoning decisions."""
    if not getattr(store, "has_reasoning", False):
        return pd.DataFrame(columns=list(COLUMNS))
    dec = store.con.execute("""
        SELECT dir, lineup, session, run, player AS seat, label, any_value(model) AS model,
               coalesce(any_value(reasoning_effort), '') AS effort, any_value(reasoning_budget) AS budget,
               count(*) AS decisions, sum(reasoning_tokens) AS rtok, count(reasoning_tokens) AS rtok_n,
               count(*) FILTER (WHERE reasoning_hidden) AS hidden,
               count(*) FILTER (WHERE violation = 'truncated' AND detail LIKE '%inside its reasoning%') AS cut,
               sum(tokens_in) AS tin, sum(tokens_out) AS tout
        FROM decisions WHERE role <> 'opponent'
        GROUP BY dir, lineup, session, run, player, label
        HAVING count(reasoning_effort) + count(reasoning_budget) + count(reasoning_tokens) > 0
            OR sum(reasoning_chars) > 0""").df()
    if dec.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    players = store.con.execute("""SELECT dir, lineup, session, run, seat, payoff, ne_payoff, deviation,
                                   broke, CASE WHEN valid AND private_value > 0 THEN
                                   abs(action - private_value) / private_value END AS bid_gap
                                   FROM players WHERE role <> 'opponent'""").df()
    rows = dec.merge(players, on=["dir", "lineup", "session", "run", "seat"], how="left")
    exps = {i: e for i, e in enumerate(store.experiments)}
    rows["experiment"] = [str(exps[int(d)]["experiment"]) for d in rows["dir"]]
    rows["game"] = [str(exps[int(d)]["game"]) for d in rows["dir"]]
    rows["budget"] = rows["budget"].astype(float)
    out = []
    keys = ["experiment", "game", "label", "model", "effort", "budget"]
    # efforts in their natural order (low before high), numbers exact: fsum, so 3 prints as 3
    groups = sorted(rows.groupby(keys, sort=True, dropna=False),
                    key=lambda kv: (*map(str, kv[0][:4]), EFFORTS.index(kv[0][4]) if kv[0][4] in EFFORTS
                                    else len(EFFORTS), str(kv[0][4]), str(kv[0][5])))
    for key, part in groups:
        decisions = int(part["decisions"].sum())
        both = part["payoff"].notna() & part["ne_payoff"].notna()
        den = math.fsum(part.loc[both, "ne_payoff"])
        rtok_n = int(part["rtok_n"].sum())
        price = price_of(prices or {}, str(key[2]), [str(key[3])])
        tin, tout = float(part["tin"].sum()), float(part["tout"].sum())
        out.append({
            **dict(zip(keys, key)), "player-runs": len(part), "decisions": decisions,
            "reasoning tokens / decision": _sum(part["rtok"]) / rtok_n if rtok_n else math.nan,
            "hidden %": 100.0 * float(part["hidden"].sum()) / decisions if decisions else math.nan,
            "cut inside reasoning": int(part["cut"].sum()),
            "tokens out / decision": tout / decisions if decisions else math.nan,
            "deviation from NE": _mean(part["deviation"]),
            # where bidding one's value is dominant, the bid itself (the asset deviation misses a losing underbid)
            "bid deviation": _mean(part["bid_gap"]) if dominant_value(key[1]) else math.nan,
            "payoff ratio": math.fsum(part.loc[both, "payoff"]) / den if den else math.nan,
            "rule breaks %": 100.0 * _mean(part["broke"].astype(float)),
            "cost (USD)": cost_usd(price, tin, tout) if price is not None else math.nan,
        })
    return pd.DataFrame(out, columns=list(COLUMNS))


def _mean(values: pd.Series) -> float:
    """The exact mean of the known values (``math.fsum``), NaN without any."""
    known = values.dropna()
    return math.fsum(known) / len(known) if len(known) else math.nan


def _sum(values: pd.Series) -> float:
    """The exact sum of the known values (``math.fsum``): the same whatever their order."""
    return math.fsum(values.dropna())


def reasoning_csv(table: pd.DataFrame, path: Path) -> str:
    """``reasoning.csv``: the table with every computed number :func:`~econarena.formats.numbers.plain` (its
    shortest text without float noise: 0.4435, not 0.44349999999999995); counts stay whole."""
    out = table.copy()
    for col in out.columns:
        if out[col].dtype.kind == "f":
            out[col] = [plain(float(v)) for v in out[col]]
    return frame_csv(out, path)


def _setting(row: Mapping[str, Any]) -> str:
    """How a row's reasoning setting reads on an axis: the effort, the budget, or the model's default."""
    parts = []
    if row["effort"]:
        parts.append(str(row["effort"]))
    if isinstance(row["budget"], float) and not math.isnan(row["budget"]):
        parts.append(f"{int(row['budget'])} tok")
    return " + ".join(parts) or "default"


def reasoning_figure(table: pd.DataFrame, out: Path, sources: list[str]) -> F.Figure:
    """Outcome against reasoning tokens per decision, one line per model (label) and game through its
    settings; the legend names both (one model plays several games of a suite). Where bidding one's value
    is dominant a panel shows the bid's own deviation: the asset deviation misses a losing underbid."""
    panels = [("deviation from NE", "deviation from NE (lower is closer)"), ("payoff ratio", "payoff ratio"),
              ("rule breaks %", "rule breaks (% of player-runs)")]
    if table["bid deviation"].notna().any():
        panels.insert(1, ("bid deviation", "|bid - value| / value (dominant-bid games)"))
    cost = "cost (USD)" if table["cost (USD)"].notna().any() else "tokens out / decision"
    panels.append((cost, cost if cost != "cost (USD)" else "cost (USD, with --prices)"))
    x = table["reasoning tokens / decision"].fillna(0.0)
    fig, axes = F._subplots(1, len(panels), (3.2 * len(panels), 3.2))
    groups = list(table.groupby(["experiment", "game", "label", "model"], sort=True, dropna=False))
    colors = F._palette(len(groups))
    names = _legend_names([(str(e), str(g), str(lab), str(m)) for (e, g, lab, m), _ in groups])
    for ax, (col, title) in zip(np.ravel(axes), panels):
        for color, name, (_key, part) in zip(colors, names, groups):
            order = x[part.index].sort_values().index
            ax.plot(x[order], part.loc[order, col], marker="o", color=color, label=name)
            for i in order:
                ax.annotate(_setting(part.loc[i]), (x[i], part.loc[i, col]), fontsize=7,
                            textcoords="offset points", xytext=(3, 3))
        ax.set_title(title)
        ax.set_xlabel("reasoning tokens / decision")
    handles, labels = np.ravel(axes)[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", title="player (game)")
    png, svg = F._save(fig, out, KEY, sources)
    return F.Figure(KEY, "What reasoning buys", "Each point is one player at one reasoning setting (its effort or "
                    "budget, annotated); x: reasoning tokens per decision as the provider counted them (0 where it "
                    "gave no count); panels: deviation from the Nash equilibrium, payoff ratio to it, rule breaks "
                    "and cost (reasoning tokens are billed as output). A line joins one player's settings.",
                    png, svg, sources)


def _legend_names(keys: list[tuple[str, str, str, str]]) -> list[str]:
    """One legend entry per (experiment, game, label, model): ``label (game title)``, with the experiment
    where one game has several, and the model where one label plays several: never one name twice."""
    names = [f"{lab} ({F.game_title(game)})" for _exp, game, lab, _model in keys]
    if len(set(names)) < len(names):
        names = [f"{lab} ({F.game_title(game)}, {exp})" for exp, game, lab, _model in keys]
    if len(set(names)) < len(names):
        names = [f"{n[:-1]}, {key[3]})" for n, key in zip(names, keys)]
    return names


def reasoning_section(store: Any, figdir: Path, out: Path,
                      prices: Mapping[str, tuple[float, float]] | None = None) -> Section | None:
    """The report's reasoning section (figure, table, ``reasoning.csv``), or None without reasoning."""
    table = reasoning_table(store, prices)
    if table.empty:
        return None
    sources = sorted({str(e["run_dir"]) for e in store.experiments if str(e["experiment"]) in
                      set(table["experiment"])})
    section = Section("reasoning", "Reasoning: effort and budget")
    try:
        section.figures.append(reasoning_figure(table, figdir, sources))
    except (ValueError, TypeError) as exc:  # a table with nothing drawable: said, never a failed report
        section.skipped.append(("What reasoning buys", f"could not be drawn ({exc})"))
    csv = out / "reasoning.csv"
    reasoning_csv(table, csv)
    section.files.append(csv)
    shown = table.copy()
    shown["setting"] = [_setting(r) for _, r in table.iterrows()]
    shown = shown.drop(columns=["effort", "budget"])
    for col in ("reasoning tokens / decision", "tokens out / decision", "deviation from NE", "bid deviation",
                "payoff ratio", "hidden %", "rule breaks %"):
        shown[col] = [("-" if math.isnan(v) else f"{v:.3f}" if col in ("deviation from NE", "bid deviation",
                                                                       "payoff ratio")
                       else f"{v:.1f}") for v in shown[col]]
    shown["cost (USD)"] = ["-" if math.isnan(v) else f"{v:.4f}" for v in shown["cost (USD)"]]
    lead = ["experiment", "game", "label", "model", "setting"]
    shown = shown[lead + [c for c in shown.columns if c not in lead]]
    section.detail = ("<p>One row per player and reasoning setting. <i>Cut inside reasoning</i>: replies that "
                      "ended inside their reasoning (recorded as truncated, never as moves); <i>hidden %</i>: "
                      "decisions whose reasoning the provider withheld (encrypted, redacted or only counted). "
                      f"Also in <code>{esc(csv.name)}</code>.</p>" + table_html(shown, False))
    return section
