"""The core metrics as functions over the loaded frames, each with a session-bootstrap 95% interval.

Definitions are those of ``analysis/metrics.py`` (which writes ``summary.json``), restated as ratios of
sums so that one bootstrap serves all of them:

==========================  ===========  =============================  ==========================
metric                      rows         numerator                      denominator
==========================  ===========  =============================  ==========================
mean_payoff                 player-runs  payoff                         1
mean_ne_payoff              player-runs  NE payoff                      1
payoff_ratio                player-runs  payoff                         NE payoff
mean_deviation              player-runs  deviation (valid replies)      1 (valid replies)
win_rate                    player-runs  won (shared prize counts)      1
rule_break_rate_pct         player-runs  100 x any invalid reply        1
violations_per_decision_pct decisions    100 x violation                1
parse/schema/rule_*_pct     decisions    100 x that violation kind      1
tokens_in/out_per_decision  decisions    tokens (where reported)        1 (where reported)
latency_s_per_decision      decisions    latency                        1
==========================  ===========  =============================  ==========================

Only complete runs count (``load`` already drops the rest). Per-label tables leave out the hard-coded
opponents of the rational environment unless ``opponents=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .load import SETTING_COLUMNS, Frames
from .stats import N_BOOT, Estimate, Sums, bootstrap_ratio, cluster_sums


@dataclass(frozen=True)
class Metric:
    name: str
    title: str
    unit: str
    frame: str  # "players" | "decisions"
    num: Callable[[pd.DataFrame], pd.Series]
    den: Callable[[pd.DataFrame], pd.Series]
    scale: float = 1.0
    better: str = ""  # "higher" | "lower" | ""


def _one(df: pd.DataFrame) -> pd.Series:
    return pd.Series(1.0, index=df.index)


def _where_known(col: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda df: df[col].notna().astype(float).where(df[col].notna())


def _kind(kind: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda df: (df["violation"] == kind).astype(float)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("mean_payoff", "mean payoff", "game units (auctions: final assets)", "players",
           lambda d: d["payoff"], _one, better="higher"),
    Metric("mean_ne_payoff", "mean NE payoff", "game units", "players", lambda d: d["ne_payoff"], _one),
    Metric("payoff_ratio", "payoff ratio", "x NE payoff", "players", lambda d: d["payoff"],
           lambda d: d["ne_payoff"], better="higher"),
    Metric("mean_deviation", "deviation from NE", "fraction", "players", lambda d: d["deviation"],
           lambda d: d["deviation"].notna().astype(float).where(d["deviation"].notna()), better="lower"),
    Metric("win_rate", "win rate", "fraction of player-runs", "players", lambda d: d["win"].astype(float), _one,
           better="higher"),
    Metric("rule_break_rate_pct", "rule breaking", "% of player-runs", "players",
           lambda d: d["broke"].astype(float), _one, 100.0, better="lower"),
    Metric("violations_per_decision_pct", "violations per decision", "% of decisions", "decisions",
           lambda d: (d["violation"].notna() & (d["violation"] != "truncated")).astype(float), _one, 100.0,
           better="lower"),  # a reply cut at max_tokens is not the model's error (tally.TRUNCATED)
    Metric("parse_error_pct", "parse errors", "% of decisions", "decisions", _kind("parse_error"), _one, 100.0),
    Metric("schema_error_pct", "schema errors", "% of decisions", "decisions", _kind("schema_error"), _one, 100.0),
    Metric("rule_violation_pct", "rule violations", "% of decisions", "decisions", _kind("rule_violation"), _one,
           100.0),
    Metric("tokens_in_per_decision", "prompt tokens per decision", "tokens", "decisions",
           lambda d: d["tokens_in"], _where_known("tokens_in")),
    Metric("tokens_out_per_decision", "completion tokens per decision", "tokens", "decisions",
           lambda d: d["tokens_out"], _where_known("tokens_out")),
    Metric("latency_s_per_decision", "latency per decision", "s", "decisions", lambda d: d["latency_s"], _one),
)}

MAIN_METRICS = ("mean_payoff", "payoff_ratio", "mean_deviation", "win_rate", "rule_break_rate_pct",
                "violations_per_decision_pct")


def rows_for(frames: Frames, metric: str, opponents: bool = False) -> pd.DataFrame:
    m = METRICS[metric]
    df = frames.players if m.frame == "players" else frames.decisions
    if not opponents:
        df = df[df["role"] != "opponent"]
    return df


def sums_of(df: pd.DataFrame, metric: str) -> Sums:
    """Per-session (num, den) sums of a metric over rows of the right frame; strata = directory x table."""
    m = METRICS[metric]
    if df.empty:
        return cluster_sums(np.zeros(0), np.zeros(0), np.zeros(0, dtype=object))
    return cluster_sums(m.num(df).to_numpy(dtype=float), m.den(df).to_numpy(dtype=float),
                        df["cluster"].to_numpy(), df["stratum"].to_numpy())


def estimate(df: pd.DataFrame, metric: str, *, n_boot: int = N_BOOT, seed: int = 0) -> Estimate:
    """One metric over the given rows (already filtered), with its interval."""
    return bootstrap_ratio(sums_of(df, metric), n_boot=n_boot, seed=seed, scale=METRICS[metric].scale)


def metric_table(frames: Frames, metrics: Sequence[str] = MAIN_METRICS, by: Sequence[str] = (*SETTING_COLUMNS,
                 "label"), *, opponents: bool = False, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Long table: one row per group of ``by`` and metric, with value, CI, rows and sessions."""
    out = []
    for metric in metrics:
        m = METRICS[metric]
        df = rows_for(frames, metric, opponents)
        if df.empty:
            continue
        num, den = m.num(df).to_numpy(dtype=float), m.den(df).to_numpy(dtype=float)
        cluster, stratum = df["cluster"].to_numpy(), df["stratum"].to_numpy()
        groups = df.groupby(list(by), sort=True, dropna=False).indices
        for key in sorted(groups, key=lambda k: tuple(map(str, k if isinstance(k, tuple) else (k,)))):
            idx = groups[key]
            key = key if isinstance(key, tuple) else (key,)
            sums = cluster_sums(num[idx], den[idx], cluster[idx], stratum[idx])
            e = bootstrap_ratio(sums, n_boot=n_boot, seed=seed, scale=m.scale)
            out.append({**dict(zip(by, key)), "metric": metric, "value": e.value, "ci_low": e.low,
                        "ci_high": e.high, "n": e.n, "sessions": e.sessions, "unit": m.unit})
    cols = [*by, "metric", "value", "ci_low", "ci_high", "n", "sessions", "unit"]
    return pd.DataFrame(out, columns=cols)


def wide(table: pd.DataFrame, index: Sequence[str], digits: int = 3, ci: bool = True) -> pd.DataFrame:
    """``metric_table`` output as formatted text, one column per metric (for printing and HTML)."""
    def cell(r: pd.Series) -> str:
        return Estimate(r["value"], r["ci_low"], r["ci_high"], int(r["n"]), int(r["sessions"])).fmt(digits, ci)

    t = table.assign(cell=table.apply(cell, axis=1) if len(table) else [])
    return t.pivot_table(index=list(index), columns="metric", values="cell", aggfunc="first").reindex(
        columns=[m for m in METRICS if m in set(table["metric"])])


def running_mean(df: pd.DataFrame, metric: str = "payoff_ratio") -> pd.DataFrame:
    """The metric over the first k sessions present, for every k (the paper's 20 / 60 / 100), per label.

    k counts the sessions in the frame in session order; incomplete sessions are not in it, so they are
    skipped rather than counted.
    """
    m = METRICS[metric]
    out = []
    for label, part in df.groupby("label", sort=True):
        num, den = m.num(part), m.den(part).where(~m.num(part).isna())
        s = pd.DataFrame({"session": part["session"], "num": num, "den": den}).groupby("session").sum()
        cum = s.cumsum()
        with np.errstate(divide="ignore", invalid="ignore"):
            val = cum["num"] / cum["den"].replace(0, np.nan) * m.scale
        out.append(pd.DataFrame({"label": label, "sessions": np.arange(1, len(s) + 1), "value": val.to_numpy()}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=["label", "sessions", "value"])
