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
bid_deviation               player-runs  |bid - value| / value (valid)  1 (valid; dominant-value games)
win_rate                    player-runs  won (shared prize counts)      1
rule_break_rate_pct         player-runs  100 x any invalid reply        1
violations_per_decision_pct decisions    100 x violation                1
truncated_pct               decisions    100 x cut at max_tokens        1
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

from ..games import GAMES
from .cells import cell_of, cell_rank, factors, grid_of
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


def dominant_value(game: Any) -> bool:
    """Whether the game declares its equilibrium action dominant and equal to the private value."""
    found = GAMES.get(str(game))
    return bool(found is not None and found.info.dominant_value)


def _bid_gap(df: pd.DataFrame) -> pd.Series:
    """|action - value| / value of each valid player-run of a game whose equilibrium action is the value
    (``GameInfo.dominant_value``); NaN elsewhere."""
    games = df["game"].map(dominant_value).astype(bool) if "game" in df.columns else False
    value = df["private_value"].where(df["private_value"] > 0)
    return ((df["action"] - value).abs() / value).where(games & df["valid"].astype(bool))


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("mean_payoff", "mean payoff", "game units (auctions: final assets)", "players",
           lambda d: d["payoff"], _one, better="higher"),
    Metric("mean_ne_payoff", "mean NE payoff", "game units", "players", lambda d: d["ne_payoff"], _one),
    Metric("payoff_ratio", "payoff ratio", "x NE payoff", "players", lambda d: d["payoff"],
           lambda d: d["ne_payoff"], better="higher"),
    Metric("mean_deviation", "deviation from NE", "fraction", "players", lambda d: d["deviation"],
           lambda d: d["deviation"].notna().astype(float).where(d["deviation"].notna()), better="lower"),
    Metric("bid_deviation", "deviation of the bid from the value", "fraction of the value", "players",
           lambda d: _bid_gap(d), lambda d: _bid_gap(d).notna().astype(float).where(_bid_gap(d).notna()),
           better="lower"),
    Metric("win_rate", "win rate", "fraction of player-runs", "players", lambda d: d["win"].astype(float), _one,
           better="higher"),
    Metric("rule_break_rate_pct", "rule breaking", "% of player-runs", "players",
           lambda d: d["broke"].astype(float), _one, 100.0, better="lower"),
    Metric("violations_per_decision_pct", "violations per decision", "% of decisions", "decisions",
           lambda d: (d["violation"].notna() & (d["violation"] != "truncated")).astype(float), _one, 100.0,
           better="lower"),  # a reply cut at max_tokens is not the model's error (tally.TRUNCATED)
    # ...but a player whose replies were all cut gave no move either: its share stands beside the invalid one
    Metric("truncated_pct", "cut at max_tokens", "% of decisions", "decisions", _kind("truncated"), _one, 100.0,
           better="lower"),
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
                "violations_per_decision_pct", "truncated_pct")


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
        if "run_dir" in by and "label" in by and set(by) <= {*SETTING_COLUMNS, "label", "cell"}:
            return _metric_table_store(frames, metrics, by, opponents, n_boot, seed)
        frames = frames.frames()
    out = []
    requests: list[tuple[Sums, float]] = []
    for metric in metrics:
        m = METRICS[metric]
        df = rows_for(frames, metric, opponents)
        if metric == "bid_deviation" and not df.empty:  # only the games whose equilibrium action is the value
            df = df[df["game"].map(dominant_value).astype(bool)]
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


# Each session's sums of a metric, made from the rows streamed out of the engine in log order: counts (0/1
# per row) and token counts are whole numbers, exact in any order (bincount); every other sum is added one row
# at a time in log order (numpy's ``add.at``), as ``cluster_sums``' bincount added them, so every bit is the
# same; a NULL (NaN, a missing value) is left out of its sum and count, as the engine's ``sum`` leaves it. A
# reply cut at max_tokens ('truncated') is no violation of the model's (METRICS' violations_per_decision_pct,
# formats/tally.py). Why not the engine's ``sum(... ORDER BY row)`` per session: it holds a group's rows until the
# end, so under its 64 MB limit a directory had to be asked for a range of sessions at a time (485 queries at
# 587,400 GLEE games, 20 s against copies read in place; one streamed pass: a few seconds).
_DECISION_VALUES = {  # column -> (SQL, summed in log order)
    "violation": ("coalesce(violation <> 'truncated', false)::DOUBLE", False),
    "truncated": ("coalesce(violation = 'truncated', false)::DOUBLE", False),
    "parse_error": ("coalesce(violation = 'parse_error', false)::DOUBLE", False),
    "schema_error": ("coalesce(violation = 'schema_error', false)::DOUBLE", False),
    "rule_violation": ("coalesce(violation = 'rule_violation', false)::DOUBLE", False),
    "tokens_in": ("tokens_in", False), "tokens_out": ("tokens_out", False), "latency_s": ("latency_s", True),
}
_PLAYER_VALUES = {
    "payoff": ("payoff", True), "ne_payoff": ("ne_payoff", True),
    "ratio_num": ("CASE WHEN ne_payoff IS NOT NULL THEN payoff END", True),
    "ratio_den": ("CASE WHEN payoff IS NOT NULL THEN ne_payoff END", True),
    "deviation": ("deviation", True), "win": ("win::DOUBLE", False), "broke": ("broke::DOUBLE", False),
    # {dominant}: the directory's game declares its equilibrium action dominant and equal to the value
    "bid_gap": ("CASE WHEN {dominant} AND valid AND private_value > 0 THEN abs(action - private_value) / "
                "private_value END", True),
}
_PLAYER_PARTS = {  # metric -> (numerator, denominator, rows) columns: a row with either side missing is left out
    "mean_payoff": ("payoff", "payoff_n", "payoff_n"), "mean_ne_payoff": ("ne_payoff", "ne_payoff_n", "ne_payoff_n"),
    "payoff_ratio": ("ratio_num", "ratio_den", "ratio_den_n"),
    "mean_deviation": ("deviation", "deviation_n", "deviation_n"),
    "win_rate": ("win", "n", "n"), "rule_break_rate_pct": ("broke", "n", "n"),
    "bid_deviation": ("bid_gap", "bid_gap_n", "bid_gap_n"),
}
_DECISION_PARTS = {  # metric -> (numerator column, count column)
    "violations_per_decision_pct": ("violation", "n"), "truncated_pct": ("truncated", "n"),
    "parse_error_pct": ("parse_error", "n"),
    "schema_error_pct": ("schema_error", "n"), "rule_violation_pct": ("rule_violation", "n"),
    "tokens_in_per_decision": ("tokens_in", "tokens_in_n"), "tokens_out_per_decision": ("tokens_out", "tokens_out_n"),
    "latency_s_per_decision": ("latency_s", "latency_s_n"),
}
STREAM_BATCH = 65_536  # rows per batch streamed out of the engine (about 5 MB of columns)
# A row's (label, lineup) pair, as the stream tells it: the engine's 64-bit hash of the two, one number per row
# (the two texts, dictionary-encoded per batch, were a fifth of the pass: 1.3 of 6.2 s at 587,400 games). Where
# two of a directory's pairs share a hash, that directory streams the texts instead.
PAIR_HASH = "hash(label, lineup)"


def _hashed_pairs(hashes: np.ndarray) -> Callable[[Any], np.ndarray]:
    """Each batch row's pair number, from its ``h`` column and the pairs' distinct hashes (``hashes[p]``)."""
    order = np.argsort(hashes, kind="stable")
    known = hashes[order]

    def pairs(batch: Any) -> np.ndarray:
        h = batch.column("h").to_numpy(zero_copy_only=False)
        at = np.minimum(np.searchsorted(known, h), len(known) - 1)
        if not np.array_equal(known[at], h):  # the rows are the ones grouped into pairs: never, unless the engine
            raise RuntimeError("a streamed row's (label, lineup) is none of its directory's")
        return order[at]
    return pairs


def _text_pairs(index: dict[tuple[Any, Any], int]) -> Callable[[Any], np.ndarray]:
    """Each batch row's pair number, from its ``label`` and ``lineup`` texts."""
    import pyarrow.compute as pc

    def pairs(batch: Any) -> np.ndarray:
        labels = pc.dictionary_encode(batch.column("label"), null_encoding="encode")
        lineups = pc.dictionary_encode(batch.column("lineup"), null_encoding="encode")
        ld, ud = labels.dictionary.to_pylist(), lineups.dictionary.to_pylist()
        ids = np.array([[index.get((a, b), 0) for b in ud] for a in ld], dtype=np.int64).reshape(len(ld), len(ud))
        return ids[labels.indices.to_numpy(zero_copy_only=False), lineups.indices.to_numpy(zero_copy_only=False)]
    return pairs


def _add_batches(reader: Any, values: dict[str, tuple[str, bool]], pairs_of: Callable[[Any], np.ndarray],
                 offset: np.ndarray, low: np.ndarray, sparse: dict[int, np.ndarray], n: np.ndarray,
                 sums: dict[str, np.ndarray], counts: dict[str, np.ndarray]) -> bool:
    """Add each batch's rows to their cells' row counts ``n``, sums and counts of values; False (part added)
    at the first row out of log order."""
    from .store import rows_follow

    cells, last = len(n), -1
    for batch in reader:
        rows = batch.column("row").to_numpy()
        if not rows_follow(rows, last):
            return False
        last = int(rows[-1]) if len(rows) else last
        pid = pairs_of(batch)
        session = batch.column("session").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        cell = offset[pid] + (session - low[pid])
        if sparse:
            for p in sparse.keys() & set(np.flatnonzero(np.bincount(pid, minlength=len(offset))).tolist()):
                rows_of = pid == p
                cell[rows_of] = offset[p] + np.searchsorted(sparse[p], session[rows_of])
        n += np.bincount(cell, minlength=cells)
        for c, (_, ordered) in values.items():
            x = batch.column(c)
            x = (x if x.null_count == 0 else x.fill_null(np.nan)).to_numpy(zero_copy_only=False)
            x = x.astype(float, copy=False)
            ok = ~np.isnan(x)
            at = cell
            if not ok.all():  # counted as missing; a cell's count of values is its rows less those (below)
                counts[c] += np.bincount(cell[~ok], minlength=cells)
                at, x = cell[ok], x[ok]
            if ordered:
                np.add.at(sums[c], at, x)  # one row at a time, in log order
            elif x.any():  # adding a batch of zeros changes no sum (none is -0.0: each starts at +0.0)
                sums[c] += np.bincount(at, weights=x, minlength=cells)
    for c in counts:
        counts[c] = n - counts[c]
    return True


def _session_sums(store: Any, d: int, role: str, table: str) -> dict[Any, list[tuple[Any, dict[str, np.ndarray]]]]:
    """Per label and lineup: each session's row count ``n``, and each value column's sum and count (``_n``)
    over the directory's rows of ``table``, in one streamed pass; empty when it has no rows."""
    from .store import read_ahead

    values = _PLAYER_VALUES if table == "players" else _DECISION_VALUES
    source = store.relation(table, d)
    # each (label, lineup) gets a block of cells: one per session number in its range, or, where its session
    # numbers lie far apart (shards, imported numbering), one per session it has (found by binary search). The
    # distinct sessions are estimated (HyperLogLog: a third of the exact count's time): they only choose the
    # layout, never a number, as an empty cell is dropped
    pairs = store.con.execute(f"""SELECT label, lineup, min(session), max(session), approx_count_distinct(session),
        {PAIR_HASH} FROM {source} WHERE TRUE {role} GROUP BY label, lineup""").fetchall()
    if not pairs:
        return {}
    index: dict[tuple[Any, Any], int] = {}
    offset, low = np.zeros(len(pairs), dtype=np.int64), np.zeros(len(pairs), dtype=np.int64)
    sparse: dict[int, np.ndarray] = {}
    cells = 0
    for p, (label, lineup, lo, hi, k, _) in enumerate(pairs):
        index[(label, lineup)] = p
        offset[p], low[p] = cells, int(lo)
        if int(hi) - int(lo) + 1 <= 2 * int(k) + 1024:
            cells += int(hi) - int(lo) + 1
        else:
            sparse[p] = np.asarray(store.con.execute(f"""SELECT DISTINCT session FROM {source} WHERE label IS NOT
                DISTINCT FROM ? AND lineup IS NOT DISTINCT FROM ? {role} ORDER BY session""", [label, lineup]
                ).fetchnumpy()["session"], dtype=np.int64)
            cells += len(sparse[p])
    hashes = np.array([h for *_, h in pairs], dtype=np.uint64)
    hashed = len(np.unique(hashes)) == len(pairs)
    pairs_of = _hashed_pairs(hashes) if hashed else _text_pairs(index)
    game = next((x.game_name for x in store.dirs if x.index == d), "")
    flag = "true" if dominant_value(game) else "false"
    exprs = ", ".join(f"{sql.replace('{dominant}', flag)} AS {c}" for c, (sql, _) in values.items())
    keys = f"{PAIR_HASH} AS h" if hashed else "label, lineup"
    # the rows as the engine holds them, which is log order; where a scan returns them otherwise (DuckDB 2.0
    # did, for a few rows of a follower's copy), the pass starts again sorted: the ordered sums need the order
    for order in ("", " ORDER BY row"):
        n = np.zeros(cells, dtype=np.int64)
        sums = {c: np.zeros(cells) for c in values}
        counts = {c: np.zeros(cells, dtype=np.int64) for c in values}
        reader = store.con.sql(f"SELECT row, {keys}, session, {exprs} FROM {source} WHERE TRUE {role}"
                               f"{order}").to_arrow_reader(STREAM_BATCH)
        with read_ahead(reader, 2, "econarena-sums") as batches:  # the engine's next batch beside numpy
            if _add_batches(batches, values, pairs_of, offset, low, sparse, n, sums, counts):
                break
    else:
        raise RuntimeError(f"the engine returned the {table} of directory {d} out of log order, sorted")
    # each column made whole once (a cell with no value at all: the engine's NULL), then a pair's sessions
    # taken from it: a view where the pair had rows in every session of its block
    whole = {"n": n.astype(float)}
    for c in values:
        whole[c] = np.where(counts[c] > 0, sums[c], np.nan)
        whole[f"{c}_n"] = counts[c].astype(float)
    out: dict[Any, list[tuple[Any, dict[str, np.ndarray]]]] = {}
    for p, (label, lineup, lo, hi, *_) in enumerate(pairs):
        size = len(sparse[p]) if p in sparse else int(hi) - int(lo) + 1
        part = slice(int(offset[p]), int(offset[p]) + size)
        have: Any = np.flatnonzero(n[part] > 0)
        sessions = sparse[p][have] if p in sparse else have + int(lo)
        if len(have) == size:
            have = slice(None)
        cols = {"session": sessions, **{c: v[part][have] for c, v in whole.items()}}
        out.setdefault(label, []).append((lineup, cols))
    return out


def _key_order(groups: list[tuple[Any, dict[str, np.ndarray]]], sorts: dict[bytes, np.ndarray] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The order of a label's sessions by the text of their keys (``lineup|session``, Python's string order,
    as ``cluster_sums`` sorts them) over its groups' concatenated rows, and each one's stratum (its lineup's
    rank). Sorted a lineup at a time (sessions by their decimal text) unless one ``lineup|`` starts another,
    where only the whole keys tell the order. ``sorts``: the text orders of session arrays sorted before (a
    grid's cells mostly hold the same sessions), kept by the arrays' bytes."""
    lineups = [str(lu) for lu, _ in groups]
    sessions = [cols["session"] for _, cols in groups]
    starts = np.cumsum([0] + [len(x) for x in sessions])
    rank = {lu: k for k, lu in enumerate(sorted(set(lineups)))}
    heads = sorted(range(len(groups)), key=lambda g: lineups[g] + "|")
    prefixed = any((lineups[b] + "|").startswith(lineups[a] + "|") for a, b in zip(heads, heads[1:]))
    if prefixed or len(set(lineups)) != len(lineups):
        keys = [f"{lu}|{se}" for lu, x in zip(lineups, sessions) for se in x.tolist()]
        order = np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)
        group = np.repeat(np.arange(len(groups)), np.diff(starts))[order]
        return order, np.array([rank[lineups[g]] for g in range(len(groups))], dtype=np.int64)[group]
    parts, strata = [], []
    sorts = {} if sorts is None else sorts
    for g in heads:
        seen = sessions[g].tobytes()
        if seen not in sorts:
            sorts[seen] = np.argsort(sessions[g].astype(str), kind="stable")
        parts.append(starts[g] + sorts[seen])
        strata.append(np.full(len(sessions[g]), rank[lineups[g]], dtype=np.int64))
    return np.concatenate(parts), np.concatenate(strata)


def _codes(ranks: np.ndarray) -> np.ndarray:
    """Each rank's place among the distinct ranks present (``np.unique``'s inverse; ranks are small and >= 0)."""
    if not len(ranks):
        return np.zeros(0, dtype=int)
    return (np.cumsum(np.bincount(ranks) > 0) - 1)[ranks].astype(int)


def _cluster_sums(store: Any, d: int, role: str, metrics: Sequence[str], table: str, grid: bool = False
                  ) -> list[tuple[str, str, str, Sums]]:
    """(label, cell, metric, Sums) of a directory's metrics of one table (``players`` or ``decisions``): what
    :func:`~.stats.cluster_sums` gives on its rows, without the directory's rows in memory. ``grid``: a
    label's rows are split by their [grid] cell (``analysis/cells.py``), else every row is in cell ``""``."""
    wanted = [m for m in metrics if METRICS[m].frame == table]
    if not wanted:
        return []
    found = _session_sums(store, d, role, table)
    if not found:
        return []
    split: dict[tuple[str, str], list[tuple[Any, dict[str, np.ndarray]]]] = {}
    for label in sorted(found):
        for lineup, cols in found[label]:
            split.setdefault((label, cell_of(lineup, grid)), []).append((lineup, cols))
    out = []
    sorts: dict[bytes, np.ndarray] = {}
    for label, cell in sorted(split):
        groups = split[(label, cell)]
        order, strata = _key_order(groups, sorts)
        # each column in key order once, shared by the metrics that read it (a study's Sums held at once
        # for the intervals: 20 metrics x 5 arrays per label and directory were 500 MB at 587,400 games)
        cols = {k: (np.concatenate([c[k] for _, c in groups]) if len(groups) > 1 else groups[0][1][k])[order]
                for k in groups[0][1]}
        kept: dict[str, tuple[Any, np.ndarray, np.ndarray]] = {}
        every: tuple[Any, np.ndarray, np.ndarray] | None = None  # the count columns with a value in each session
        for metric in wanted:
            if table == "players":
                num_col, den_col, n_col = _PLAYER_PARTS[metric]
            else:
                (num_col, n_col), den_col = _DECISION_PARTS[metric], _DECISION_PARTS[metric][1]
            if n_col not in kept:
                keep = cols[n_col] > 0  # a label with no value at all still has its row (no estimate), as before
                if keep.all():
                    every = every or (slice(None), _codes(strata), np.arange(len(keep)))
                    kept[n_col] = every
                else:
                    kept[n_col] = (keep, _codes(strata[keep]), np.flatnonzero(keep))
            keep, st, at = kept[n_col]
            out.append((label, cell, metric, Sums(cols[num_col][keep], cols[den_col][keep], cols[n_col][keep], st,
                                                  at)))
    return out


def _metric_table_store(store: Any, metrics: Sequence[str], by: Sequence[str], opponents: bool, n_boot: int,
                        seed: int) -> pd.DataFrame:
    role = "" if opponents else "AND role <> 'opponent'"
    entries: list[tuple[tuple[Any, ...], int, dict[str, Any], Sums]] = []  # a cell sorts by its rank
    for i, exp in enumerate(store.experiments):
        setting = {c: exp[c] for c in SETTING_COLUMNS}
        wanted = [m for m in metrics if m != "bid_deviation" or dominant_value(exp["game"])]
        grid = "cell" in by and grid_of(store.dirs[i])  # without "cell" in by, a label pools its cells
        found = factors(store.dirs[i].config) if grid else []
        for table in ("decisions", "players"):
            for label, cell, metric, sums in _cluster_sums(store, store.dirs[i].index, role, wanted, table, grid):
                key = {**setting, "label": label, "cell": cell}
                entries.append((tuple(cell_rank(cell, found) if b == "cell" else str(key[b]) for b in by), 0,
                                {**{b: key[b] for b in by}, "metric": metric}, sums))
    order = [metric for metric in metrics]
    entries.sort(key=lambda e: (order.index(e[2]["metric"]), e[0]))
    return _table([e[2] for e in entries], [(e[3], METRICS[e[2]["metric"]].scale) for e in entries], by, n_boot,
                  seed)


def wide(table: pd.DataFrame, index: Sequence[str], digits: int = 3, ci: bool = True) -> pd.DataFrame:
    """``metric_table`` output as formatted text, one column per metric (for printing and HTML)."""
    def cell(r: pd.Series) -> str:
        return Estimate(r["value"], r["ci_low"], r["ci_high"], int(r["n"]), int(r["sessions"])).fmt(digits, ci)

    t = table.assign(_text=table.apply(cell, axis=1) if len(table) else [])  # not "cell": a grid's column
    return t.pivot_table(index=list(index), columns="metric", values="_text", aggfunc="first").reindex(
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
