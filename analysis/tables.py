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
from typing import Any

import numpy as np
import pandas as pd

from .load import SETTING_COLUMNS, Frames
from .stats import N_BOOT, Estimate, Sums, bootstrap_many, bootstrap_ratio, cluster_sums


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


def metric_table(frames: Any, metrics: Sequence[str] = MAIN_METRICS, by: Sequence[str] = (*SETTING_COLUMNS,
                 "label"), *, opponents: bool = False, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Long table: one row per group of ``by`` and metric, with value, CI, rows and sessions.

    ``frames``: the loaded :class:`Frames`, or the columnar store (``analysis/store.py``), which is read one
    directory at a time when ``by`` holds ``run_dir`` and ``label`` (the report's table): equal numbers,
    memory of one directory's rows instead of the study's."""
    from .store import Store

    if isinstance(frames, Store):
        if "run_dir" in by and "label" in by and set(by) <= {*SETTING_COLUMNS, "label"}:
            return _metric_table_store(frames, metrics, by, opponents, n_boot, seed)
        frames = frames.frames()
    out = []
    requests: list[tuple[Sums, float]] = []
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
            requests.append((cluster_sums(num[idx], den[idx], cluster[idx], stratum[idx]), m.scale))
            out.append({**dict(zip(by, key)), "metric": metric})
    return _table(out, requests, by, n_boot, seed)


def _table(out: list[dict[str, Any]], requests: list[tuple[Sums, float]], by: Sequence[str], n_boot: int,
           seed: int) -> pd.DataFrame:
    for row, e in zip(out, bootstrap_many(requests, n_boot=n_boot, seed=seed)):
        row.update({"value": e.value, "ci_low": e.low, "ci_high": e.high, "n": e.n, "sessions": e.sessions,
                    "unit": METRICS[row["metric"]].unit})
    cols = [*by, "metric", "value", "ci_low", "ci_high", "n", "sessions", "unit"]
    return pd.DataFrame(out, columns=cols)


# Each session's sums of a metric straight from the engine: counts (0/1 per row) and token counts are
# whole numbers, exact in any order; every other sum is ``sum(... ORDER BY row)``, one by one in log order,
# as numpy's bincount added them (checked equal); a directory's sessions are taken a range at a time, so a
# study of millions of rows never comes into memory as rows. A reply cut at max_tokens ('truncated') is no
# violation of the model's (METRICS' violations_per_decision_pct, tally.py).
_DECISION_CLUSTERS = """SELECT label, lineup, session, count(*) AS n,
    sum(coalesce(violation <> 'truncated', false)::DOUBLE) AS violation,
    sum(coalesce(violation = 'parse_error', false)::DOUBLE) AS parse_error,
    sum(coalesce(violation = 'schema_error', false)::DOUBLE) AS schema_error,
    sum(coalesce(violation = 'rule_violation', false)::DOUBLE) AS rule_violation,
    sum(tokens_in) AS tokens_in, count(tokens_in) AS tokens_in_n,
    sum(tokens_out) AS tokens_out, count(tokens_out) AS tokens_out_n,
    sum(latency_s ORDER BY row) AS latency_s, count(latency_s) AS latency_s_n
    FROM decisions WHERE dir = ? {role} AND session >= ? AND session < ? GROUP BY label, lineup, session"""
_PLAYER_CLUSTERS = """SELECT label, lineup, session, count(*) AS n,
    sum(payoff ORDER BY row) AS payoff, count(payoff) AS payoff_n,
    sum(ne_payoff ORDER BY row) AS ne_payoff, count(ne_payoff) AS ne_payoff_n,
    sum(payoff ORDER BY row) FILTER (WHERE payoff IS NOT NULL AND ne_payoff IS NOT NULL) AS ratio_num,
    sum(ne_payoff ORDER BY row) FILTER (WHERE payoff IS NOT NULL AND ne_payoff IS NOT NULL) AS ratio_den,
    count(*) FILTER (WHERE payoff IS NOT NULL AND ne_payoff IS NOT NULL) AS ratio_n,
    sum(deviation ORDER BY row) AS deviation, count(deviation) AS deviation_n,
    sum(win::DOUBLE) AS win, sum(broke::DOUBLE) AS broke
    FROM players WHERE dir = ? {role} AND session >= ? AND session < ? GROUP BY label, lineup, session"""
_PLAYER_PARTS = {  # metric -> (numerator, denominator, rows) columns: a row with either side missing is left out
    "mean_payoff": ("payoff", "payoff_n", "payoff_n"), "mean_ne_payoff": ("ne_payoff", "ne_payoff_n", "ne_payoff_n"),
    "payoff_ratio": ("ratio_num", "ratio_den", "ratio_n"),
    "mean_deviation": ("deviation", "deviation_n", "deviation_n"),
    "win_rate": ("win", "n", "n"), "rule_break_rate_pct": ("broke", "n", "n"),
}
_DECISION_PARTS = {  # metric -> (numerator column, count column)
    "violations_per_decision_pct": ("violation", "n"), "parse_error_pct": ("parse_error", "n"),
    "schema_error_pct": ("schema_error", "n"), "rule_violation_pct": ("rule_violation", "n"),
    "tokens_in_per_decision": ("tokens_in", "tokens_in_n"), "tokens_out_per_decision": ("tokens_out", "tokens_out_n"),
    "latency_s_per_decision": ("latency_s", "latency_s_n"),
}
# rows aggregated per query: their ordered sums fit the engine's 64 MB (the report's peak at 57,600 games:
# 480 MB; 510 MB with 50,000)
CLUSTER_CHUNK = 20_000


def _cluster_sums(store: Any, d: int, role: str, metrics: Sequence[str], table: str
                  ) -> list[tuple[str, str, Sums]]:
    """(label, metric, Sums) of a directory's metrics of one table (``players`` or ``decisions``): what
    :func:`~.stats.cluster_sums` gives on its rows, each session's sums made by the engine (whole numbers in any
    order, the rest ``ORDER BY row``: one by one in log order, as bincount adds), a range of sessions at a
    time, so no directory comes into memory as rows."""
    wanted = [m for m in metrics if METRICS[m].frame == table]
    if not wanted:
        return []
    n, top = store.con.execute(f"SELECT count(*), max(session) FROM {table} WHERE dir = ? {role}",
                               [d]).fetchall()[0]
    if not n:
        return []
    step = max(1, (int(top) + 1) * CLUSTER_CHUNK // int(n))
    parts: dict[str, list[dict[str, np.ndarray]]] = {}
    for lo in range(0, int(top) + 1, step):
        sql = _PLAYER_CLUSTERS if table == "players" else _DECISION_CLUSTERS
        r = store.query(sql.format(role=role), [d, lo, lo + step])
        labels = np.asarray(r["label"], dtype=object)
        for label in dict.fromkeys(labels):
            mask = labels == label
            parts.setdefault(label, []).append({k: np.asarray(v)[mask] for k, v in r.items() if k != "label"})
    out = []
    for label in sorted(parts):
        cols = {k: np.concatenate([p[k] for p in parts[label]]) for k in parts[label][0]}
        # the sessions in the order of their keys' text, the strata by their lineup's (Python's string order
        # is numpy's; fixed-width numpy text of 57,600 long lineups cost 100 MB to sort)
        lineups = [str(x) for x in cols["lineup"]]
        keys = [f"{lu}|{se}" for lu, se in zip(lineups, cols["session"])]
        order = np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)
        rank = {lu: k for k, lu in enumerate(sorted(set(lineups)))}
        strata = np.array([rank[lineups[k]] for k in order], dtype=np.int64)
        del keys
        for metric in wanted:
            if table == "players":
                num_col, den_col, n_col = _PLAYER_PARTS[metric]
            else:
                (num_col, n_col), den_col = _DECISION_PARTS[metric], _DECISION_PARTS[metric][1]
            rows = np.asarray(np.ma.filled(np.ma.asarray(cols[n_col], dtype=float), 0.0))[order]
            num = np.asarray(np.ma.filled(np.ma.asarray(cols[num_col], dtype=float), np.nan))[order]
            den = np.asarray(np.ma.filled(np.ma.asarray(cols[den_col], dtype=float), np.nan))[order]
            keep = rows > 0  # a label with no value at all still has its row (no estimate), as before
            _, st = np.unique(strata[keep], return_inverse=True)
            out.append((label, metric, Sums(num[keep], den[keep], rows[keep], st.astype(int),
                                            np.flatnonzero(keep))))
    return out


def _metric_table_store(store: Any, metrics: Sequence[str], by: Sequence[str], opponents: bool, n_boot: int,
                        seed: int) -> pd.DataFrame:
    role = "" if opponents else "AND role <> 'opponent'"
    entries: list[tuple[tuple[str, ...], int, dict[str, Any], Sums]] = []
    for i, exp in enumerate(store.experiments):
        setting = {c: exp[c] for c in SETTING_COLUMNS}
        for table in ("decisions", "players"):
            for label, metric, sums in _cluster_sums(store, store.dirs[i].index, role, metrics, table):
                key = {**setting, "label": label}
                entries.append((tuple(str(key[b]) for b in by), 0, {**{b: key[b] for b in by}, "metric": metric},
                                sums))
    order = [metric for metric in metrics]
    entries.sort(key=lambda e: (order.index(e[2]["metric"]), e[0]))
    return _table([e[2] for e in entries], [(e[3], METRICS[e[2]["metric"]].scale) for e in entries], by, n_boot,
                  seed)


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
