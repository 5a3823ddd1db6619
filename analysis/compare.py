"""Two settings side by side per label: A, B and A - B, each with a session-bootstrap 95% interval.

Used by ``econarena compare DIR_A DIR_B`` and by the report's comparison tables (melee vs rational, with vs
without history, default vs chain-of-thought). When both sides come from one directory each and share
their sessions (same session indices with the same drawn parameters: same seed and game settings), the
difference is bootstrapped PAIRED on the session; otherwise the two sides are resampled independently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..formats.rundir import BASELINE_AGENTS
from .cells import Factor, levels, llm_only
from .load import Frames
from .stats import N_BOOT, Estimate, bootstrap_diff, bootstrap_ratio, bootstrap_trend, cluster_sums
from .tables import METRICS, Metric

COMPARE_METRICS = ("payoff_ratio", "mean_payoff", "mean_deviation", "win_rate", "rule_break_rate_pct")
# What means the same in every game, so may be compared between experiments of different games: how often
# a player breaks the rules, and what its replies cost. Payoffs, deviations and win rates are game-specific.
GAME_FREE_METRICS = ("rule_break_rate_pct", "violations_per_decision_pct", "parse_error_pct", "schema_error_pct",
                     "rule_violation_pct", "tokens_in_per_decision", "tokens_out_per_decision",
                     "latency_s_per_decision")


def _session_params(frames: Frames) -> dict[int, str]:
    """Session index -> drawn parameters of its first run (the configuration every table of it shares)."""
    runs = frames.runs.sort_values(["session", "run", "lineup"])
    return runs.groupby("session")["params"].first().to_dict()


def is_paired(a: Frames, b: Frames) -> bool:
    """Both sides one directory each, with the same sessions drawn identically."""
    if len(a.experiments) != 1 or len(b.experiments) != 1:
        return False
    pa, pb = _session_params(a), _session_params(b)
    common = set(pa) & set(pb)
    return len(common) >= 2 and all(pa[s] == pb[s] for s in common)


def compare(a: Frames, b: Frames, metrics: Sequence[str] = COMPARE_METRICS, *, by: str = "label",
            n_boot: int = N_BOOT, seed: int = 0, paired: bool | None = None,
            extra: Mapping[str, Metric] | None = None) -> pd.DataFrame:
    """One row per label (present on either side) and metric: a, b, diff (a - b) with intervals. ``extra``:
    metrics beyond the report's table (reasoning tokens, analysis/reasoning.py) that may be named too."""
    paired = is_paired(a, b) if paired is None else paired
    known = {**METRICS, **(extra or {})}
    out = []
    for metric in metrics:
        m = known[metric]
        ra, rb = ((f.players if m.frame == "players" else f.decisions) for f in (a, b))
        ra, rb = ra[ra["role"] != "opponent"], rb[rb["role"] != "opponent"]
        sides = []
        for r in (ra, rb):
            num, den = m.num(r).to_numpy(dtype=float), m.den(r).to_numpy(dtype=float)
            sides.append((r.groupby(by).indices, num, den, r["cluster"].to_numpy(), r["stratum"].to_numpy()))
        for key in sorted(set(ra[by]) | set(rb[by]), key=str):
            sums = []
            for groups, num, den, cluster, stratum in sides:
                idx = groups.get(key, np.zeros(0, dtype=int))
                sums.append(cluster_sums(num[idx], den[idx], cluster[idx], stratum[idx]))
            sa, sb = sums
            ea = bootstrap_ratio(sa, n_boot=n_boot, seed=seed, scale=m.scale)
            eb = bootstrap_ratio(sb, n_boot=n_boot, seed=seed, scale=m.scale)
            d = bootstrap_diff(sa, sb, paired=paired, n_boot=n_boot, seed=seed, scale=m.scale)
            out.append({by: key, "metric": metric, "a": ea, "b": eb, "diff": d, "paired": paired})
    return pd.DataFrame(out, columns=[by, "metric", "a", "b", "diff", "paired"])


def _significant(d: Estimate) -> str:
    if math.isnan(d.low):
        return ""
    return "*" if d.low > 0 or d.high < 0 else ""


def format_compare(table: pd.DataFrame, name_a: str, name_b: str, digits: int = 3,
                   extra: Mapping[str, Metric] | None = None) -> str:
    """A plain-text side-by-side table, one block per metric; * marks an interval that excludes 0."""
    if table.empty:
        return "nothing to compare (no labels with complete runs)"
    lines = []
    paired = bool(table["paired"].iloc[0])
    known = {**METRICS, **(extra or {})}
    for metric, part in table.groupby("metric", sort=False):
        m = known[str(metric)]
        head = ["label", f"A: {name_a}", f"B: {name_b}", "A - B", ""]
        rows = [[str(r["label"]), r["a"].fmt(digits), r["b"].fmt(digits), r["diff"].fmt(digits),
                 _significant(r["diff"])] for _, r in part.iterrows()]
        widths = [max(len(x) for x in col) for col in zip(head, *rows)]
        better = f", {m.better} is better" if m.better else ""
        lines.append(f"== {m.title} ({m.unit}{better})")
        fmt = "  ".join(("{:<%d}" if i == 0 else "{:>%d}") % w for i, w in enumerate(widths))
        lines.append(fmt.format(*head).rstrip())
        lines.append(fmt.format(*("-" * w for w in widths)).rstrip())
        lines += [fmt.format(*r).rstrip() for r in rows]
        lines.append("")
    lines.append("value [95% CI]; intervals bootstrap sessions ("
                 + ("paired: both sides share their sessions" if paired else "independent samples")
                 + "); * = the interval of A - B excludes 0")
    return "\n".join(lines)


def setting_pairs(frames: Frames) -> list[tuple[str, str, str]]:
    """Pairs of directories (A, B, what differs) of one game that differ in exactly one of environment,
    history or prompt, with the same group and the same labels under test: the paper's comparisons."""
    exps = frames.experiments
    players = frames.players[frames.players["role"] != "opponent"]
    labels = players.groupby("run_dir")["label"].agg(lambda s: frozenset(s)).to_dict()
    out = []
    rows = exps.to_dict("records")
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if a["game"] != b["game"] or a["group"] != b["group"] or labels.get(a["run_dir"]) != labels.get(
                    b["run_dir"]):
                continue
            diffs = [k for k in ("environment", "history", "prompt") if a[k] != b[k]]
            if len(diffs) != 1:
                continue
            k = diffs[0]
            # B is the baseline: no history, default prompt, the rational environment
            base = {"environment": "rational", "history": "none", "prompt": "default"}[k]
            first, second = (b, a) if a[k] == base else (a, b)
            if k == "environment" and "rational" not in (a[k], b[k]):
                first, second = a, b
            out.append((first["run_dir"], second["run_dir"], f"{k}: {first[k]} vs {second[k]}"))
    return out


def _by_factor(frames: Frames, found: Sequence[Factor], factor: str,
               metrics: Sequence[str]) -> tuple[Factor, pd.DataFrame, pd.DataFrame]:
    """The factor, and the players' and decisions' rows tagged with their level (``_level``) and player
    (``_player``: the label and the rest of its cell), baselines left out where only ``[grid.llm]`` varies
    the factor; the decisions only when a metric reads them (they are the long table). Refuses a factor
    the study does not have, naming those it has."""
    keys = [f.key for f in found]
    if factor not in keys:
        raise ValueError(f"--by {factor!r}: no such [grid] factor in this study (its factors: "
                         f"{', '.join(keys) or 'none, it has no [grid]'})")
    f = next(x for x in found if x.key == factor)
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"--by {factor}: {', '.join(unknown)} cannot be compared between levels (known: "
                         f"{', '.join(METRICS)})")

    def tag(df: pd.DataFrame) -> pd.DataFrame:
        """Each row's level and player (label and the rest of its cell), read once per distinct cell."""
        cell = df["cell"].fillna("").astype(str) if "cell" in df.columns else pd.Series("", index=df.index)
        got = {c: levels(c, found) for c in cell.unique()}
        level = {c: g.get(factor, "") for c, g in got.items()}
        rest = {c: ",".join(f"{k}={g[k]}" for k in keys if k != factor and k in g) for c, g in got.items()}
        suffix = cell.map({c: f" [{r}]" if r else "" for c, r in rest.items()})
        return df.assign(_level=cell.map(level), _player=df["label"].astype(str) + suffix)

    players = tag(frames.players)
    wanted = any(METRICS[m].frame == "decisions" for m in metrics)
    decisions = tag(frames.decisions) if wanted else tag(frames.decisions.iloc[:0])
    if factor in llm_only(found):  # an LLM setting: a baseline plays alike in every level, never compared
        players = players[~players["agent"].isin(BASELINE_AGENTS)]
        decisions = decisions[~decisions["agent"].isin(BASELINE_AGENTS)]
    return f, players, decisions


def compare_by(frames: Frames, found: Sequence[Factor], factor: str, metrics: Sequence[str] = COMPARE_METRICS,
               *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Each level of one ``[grid]`` factor against its first level (natural order), per label and the rest
    of its cell, paired on the session: the cells of one grid share their sessions (same seeds, same draws).
    A factor only ``[grid.llm]`` varies leaves the baselines out (they play alike at every level).
    One row per level, player and metric: level, reference, player, a, b, diff (a - b), paired."""
    f, players, decisions = _by_factor(frames, found, factor, metrics)
    order = f.natural()
    reference = order[0]
    out = []
    for level in order[1:]:
        sides = [Frames(players[players["_level"] == lv], frames.runs, decisions[decisions["_level"] == lv],
                        frames.experiments, frames.dirs) for lv in (level, reference)]
        t = compare(sides[0], sides[1], metrics, by="_player", n_boot=n_boot, seed=seed, paired=True)
        out.append(t.rename(columns={"_player": "player"}).assign(level=level, reference=reference))
    cols = ["level", "reference", "player", "metric", "a", "b", "diff", "paired"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


TREND_COLUMNS = ["player", "metric", "first", "last", "levels", "trend", "paired"]


def trend_by(frames: Frames, found: Sequence[Factor], factor: str, metrics: Sequence[str] = COMPARE_METRICS,
             *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """The trend of each metric across an ordered factor's levels (numbers, efforts; three levels or more),
    per player as in :func:`compare_by`: the OLS line of the metric on the level's position
    (``Factor.positions``: a number's value, an effort's step), read as the change it makes from the first
    level to the last, with a 95% interval bootstrapped over the sessions the levels share (paired, see
    ``stats.bootstrap_trend``). One row per player and metric: player, metric, first and last level
    played, levels (how many), trend, paired. A factor without an order (or of two levels, where
    ``compare_by``'s one difference is the trend) gives no rows."""
    f, players, decisions = _by_factor(frames, found, factor, metrics)
    if not f.ordered:
        return pd.DataFrame(columns=TREND_COLUMNS)
    order, where = f.natural(), f.positions()
    out = []
    for metric in metrics:
        m = METRICS[metric]
        rows = players if m.frame == "players" else decisions
        rows = rows[rows["role"] != "opponent"]
        num, den = m.num(rows).to_numpy(dtype=float), m.den(rows).to_numpy(dtype=float)
        cluster, stratum = rows["cluster"].to_numpy(), rows["stratum"].to_numpy()
        groups = rows.groupby(["_player", "_level"]).indices
        for player in sorted(set(rows["_player"]), key=str):
            sides = [cluster_sums(num[idx], den[idx], cluster[idx], stratum[idx])
                     for idx in (groups.get((player, lv), np.zeros(0, dtype=int)) for lv in order)]
            played = [lv for lv, s in zip(order, sides) if not s.empty]
            if not played:
                continue
            est = bootstrap_trend(sides, [where[lv] for lv in order], n_boot=n_boot, seed=seed, scale=m.scale)
            out.append({"player": player, "metric": metric, "first": played[0], "last": played[-1],
                        "levels": len(played), "trend": est, "paired": True})
    return pd.DataFrame(out, columns=TREND_COLUMNS)


def trend_axis(f: Factor) -> str:
    """What a trend of ``f`` is fitted along, in words, for a table's header."""
    order = " < ".join(f.natural())
    return f"{f.key} by value ({order})" if f.numeric else f"{f.key} in steps ({order})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _aligned(head: list[str], rows: list[list[str]], left: int) -> list[str]:
    """A plain-text table: the first ``left`` columns aligned left, the rest right."""
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    fmt = "  ".join(("{:<%d}" if i < left else "{:>%d}") % w for i, w in enumerate(widths))
    return [fmt.format(*head).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip(),
            *(fmt.format(*r).rstrip() for r in rows)]


def format_compare_by(table: pd.DataFrame, factor: str, digits: int = 3, trends: pd.DataFrame | None = None,
                      axis: str = "") -> str:
    """``compare_by``'s table as text, one block per metric, with the number of comparisons it holds;
    ``trends`` (``trend_by``'s table, fitted along ``axis``, see ``trend_axis``) adds each metric's trend
    under its comparisons, and counts them too."""
    if table.empty:
        return f"nothing to compare: {factor} has a single level with complete runs"
    trends = trends if trends is not None else pd.DataFrame(columns=TREND_COLUMNS)
    lines = []
    for metric, part in table.groupby("metric", sort=False):
        m = METRICS[str(metric)]
        head = [factor, "player", "A: level", f"B: {factor}={part['reference'].iloc[0]}", "A - B", ""]
        rows = [[str(r["level"]), str(r["player"]), r["a"].fmt(digits), r["b"].fmt(digits), r["diff"].fmt(digits),
                 _significant(r["diff"])] for _, r in part.iterrows()]
        mine = trends[trends["metric"] == metric]
        better = f", {m.better} is better" if m.better else ""
        count = _plural(len(rows), "comparison") + (f", {_plural(len(mine), 'trend')}" if len(mine) else "")
        lines.append(f"== {m.title} ({m.unit}{better}): {count}")
        lines += _aligned(head, rows, 2)
        if len(mine):
            lines += ["", f"trend across {axis or factor}"]
            lines += _aligned(["player", "levels", "trend, first to last", ""],
                              [[str(r["player"]), f"{r['first']}..{r['last']} ({r['levels']})",
                                r["trend"].fmt(digits), _significant(r["trend"])] for _, r in mine.iterrows()], 2)
        lines.append("")
    counted = _plural(len(table), "comparison") + (f" and {_plural(len(trends), 'trend')}" if len(trends) else "")
    lines.append(f"value [95% CI]; each level against the first, paired on the session (the cells of one grid "
                 f"share their sessions); {counted} in all; * = the interval of A - B excludes 0")
    if len(trends):
        lines.append("trend: the least-squares line of the metric on the level, read as the change it makes from "
                     "the first level to the last; its interval bootstraps the sessions all levels share (paired); "
                     "* = it excludes 0")
    return "\n".join(lines)
