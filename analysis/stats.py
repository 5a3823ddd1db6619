"""Bootstrap confidence intervals that resample SESSIONS, the independent unit of an experiment.

Why sessions: the runs of a session share drawn values and (with history) see each other, and the seats
of a melee share one outcome, so player-runs are not independent; resampling them would give intervals
that are too narrow. Every metric here is a ratio of sums (a mean is sum / count, the payoff ratio is
sum of payoffs / sum of NE payoffs), so each session is reduced to its (numerator, denominator) sums and a
replicate is the ratio of the resampled totals: exactly the estimator applied to a resampled data set.

Sessions are resampled within strata (one stratum per run directory and table), so pooling several
directories keeps each one's weight. Intervals are percentile intervals from ``n_boot`` replicates drawn
from ``numpy.random.default_rng(seed)``: the same data and seed give the same interval, whatever else
was computed before. With fewer than two sessions there is no interval (NaN), not a zero-width one.

Differences between two settings resample both sides; when the two share their sessions (same seed and
session indices, so the same drawn values: a paired design) the sessions are resampled jointly, which
removes the draw-to-draw noise from the difference.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

N_BOOT = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval; ``n`` rows from ``sessions`` resampling units."""

    value: float
    low: float
    high: float
    n: int
    sessions: int

    def fmt(self, digits: int = 3, ci: bool = True) -> str:
        if self.value is None or math.isnan(self.value):
            return "-"
        s = f"{self.value:.{digits}f}"
        if ci and not math.isnan(self.low):
            s += f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
        return s


NAN_ESTIMATE = Estimate(math.nan, math.nan, math.nan, 0, 0)


@dataclass(frozen=True)
class Sums:
    """Per-session sums: ``num``, ``den`` and row counts ``n``, with each session's stratum code and key."""

    num: np.ndarray
    den: np.ndarray
    n: np.ndarray
    stratum: np.ndarray
    keys: np.ndarray

    def __len__(self) -> int:
        return len(self.num)

    @property
    def empty(self) -> bool:
        return len(self.num) == 0

    def select(self, mask: np.ndarray) -> Sums:
        return Sums(self.num[mask], self.den[mask], self.n[mask], self.stratum[mask], self.keys[mask])


def cluster_sums(num: np.ndarray | pd.Series, den: np.ndarray | pd.Series, cluster: np.ndarray | pd.Series,
                 stratum: np.ndarray | pd.Series | None = None) -> Sums:
    """Per-session (numerator, denominator) sums, sessions in sorted order (determinism).

    Rows whose numerator or denominator is NaN are dropped (a deviation that is undefined for an invalid
    reply, tokens a provider did not report).
    """
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    cluster = np.asarray(cluster)
    keep = ~(np.isnan(num) | np.isnan(den))
    num, den, cluster = num[keep], den[keep], cluster[keep]
    strata = np.asarray(stratum)[keep] if stratum is not None else np.zeros(len(num), dtype=int)
    if len(num) == 0:
        e = np.zeros(0)
        return Sums(e, e, e, e.astype(int), e.astype(object))
    keys, codes = np.unique(cluster, return_inverse=True)
    k = len(keys)
    first = np.zeros(k, dtype=int)
    first[codes[::-1]] = np.arange(len(codes))[::-1]  # first row of each session gives its stratum
    _, scodes = np.unique(strata[first], return_inverse=True)
    return Sums(np.bincount(codes, weights=num, minlength=k), np.bincount(codes, weights=den, minlength=k),
                np.bincount(codes, minlength=k).astype(float), scodes.astype(int), keys)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), np.nan)


# Index draws held at once: a replicate block of (rows, sessions) integers. The draws come from one
# generator in the same order whatever the block size (numpy's bounded integers carry no state between
# calls), so blocks change the memory, never a number: 57,600 sessions x 2000 replicates drew 115 million
# indices at once (920 MB, and as much again for the gathered values).
BLOCK = 524_288


def _blocks(n_boot: int, k: int) -> list[tuple[int, int]]:
    rows = max(1, BLOCK // max(k, 1))
    return [(start, min(rows, n_boot - start)) for start in range(0, n_boot, rows)]


def _exact_constant(v: np.ndarray, k: int) -> float | None:
    """The vector's one value when it is the same whole number everywhere and k of them sum exactly: then
    every replicate's sum of k draws is that value times k, whatever was drawn and in whatever order."""
    if not len(v) or v.min() != v.max():
        return None
    c = float(v[0])
    return c if c.is_integer() and abs(c) * k < 2**53 else None


THREADED = 20_000_000  # draws (sessions x replicates) from which the gathers run on threads
IN_FLIGHT = 3  # blocks whose gathers may wait on the threads at once (each ~4 MB of indices)
_POOL: Any = None


def _pool() -> Any:
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1)),
                                   thread_name_prefix="bootstrap")
    return _POOL


class _Done:
    """A result computed at once, read like a future's."""

    def __init__(self, value: np.ndarray) -> None:
        self.value = value

    def result(self) -> np.ndarray:
        return self.value


def _gathered(v: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.take(v, idx).sum(axis=1)  # take: the same values as v[idx], a fifth faster


def _replicate_sums(vectors: list[np.ndarray], stratum: np.ndarray, rng: np.random.Generator,
                    n_boot: int, each: Any = None) -> list[np.ndarray]:
    """Each replicate's total of each per-session vector (all of one session layout), sessions resampled
    within strata; every vector sees the same draws, added in the order one vector alone would get them.
    A vector that is one whole number in a stratum (a count of one row per session, a rule-break share of
    0) needs no gathering there: its sum is exact. ``each(i, sums)``: called with stratum i's own replicate
    sums of every vector once they are complete, in stratum order (the cells of a grid, from the draws of
    the whole)."""
    out = [np.zeros(n_boot) for _ in vectors]
    strata = np.unique(stratum)
    parts = [np.flatnonzero(stratum == s) for s in strata]
    const = [[_exact_constant(v[part], len(part)) for v in vectors] for part in parts]
    last = max((i for i, c in enumerate(const) if any(x is None for x in c)), default=-1)
    # the gathers and sums of a block run on threads (numpy lets go of the interpreter there) while this one
    # draws the next block; each result is added in the order the serial loop added it, so every total has
    # the same bits (a stratum's sums start at +0.0 and are added to the total once complete: the total is
    # never -0.0, so x + (0.0 + y) is x + y). Small studies stay on this thread.
    pool = _pool() if len(stratum) * n_boot >= THREADED else None
    pending: list[tuple[int, int, int, Any]] = []

    def run(fn: Any, *a: Any) -> Any:
        return pool.submit(fn, *a) if pool is not None else _Done(fn(*a))

    for i, part in enumerate(parts):
        acc = [np.zeros(n_boot) for _ in vectors]
        gather = [j for j, c in enumerate(const[i]) if c is None]
        for j, c in enumerate(const[i]):
            if c is not None:
                acc[j] += c * len(part)
        # strata after the last one that needs draws draw nothing; a stratum whose sessions lie side by side
        # (the common case: sessions sorted by stratum) is gathered from its slice with the draws as they
        # come: the same indices without a pass over them
        if i <= last and len(part) and part[-1] - part[0] + 1 == len(part):
            sub, where = [vectors[j][part[0]:part[-1] + 1] for j in range(len(vectors))], None
        else:
            sub, where = vectors, part
        for start, rows in (_blocks(n_boot, len(part)) if i <= last else ()):
            draws = rng.integers(0, len(part), size=(rows, len(part)))
            idx = draws if where is None else where[draws]
            for j in gather:
                pending.append((j, start, rows, run(_gathered, sub[j], idx)))
            while len(pending) > IN_FLIGHT * max(1, len(gather)):
                j, s0, r0, found = pending.pop(0)
                acc[j][s0:s0 + r0] += found.result()
        while pending:
            j, s0, r0, found = pending.pop(0)
            acc[j][s0:s0 + r0] += found.result()
        for j in range(len(vectors)):
            out[j] += acc[j]
        if each is not None:
            each(i, acc)
    return out


def _replicates(sums: Sums, rng: np.random.Generator, n_boot: int) -> tuple[np.ndarray, np.ndarray]:
    num, den = _replicate_sums([sums.num, sums.den], sums.stratum, rng, n_boot)
    return num, den


def _interval(reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = reps[~np.isnan(reps)]
    if reps.size == 0:
        return math.nan, math.nan
    alpha = (1 - level) / 2
    lo, hi = np.quantile(reps, [alpha, 1 - alpha])
    return float(lo), float(hi)


def _total(sums: Sums) -> float:
    num, den = sums.num.sum(), sums.den.sum()  # numpy scalars: the same division as :func:`_ratio`'s
    return float(num / den) if den != 0 else math.nan


def bootstrap_ratio(sums: Sums, *, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL,
                    scale: float = 1.0) -> Estimate:
    """sum(num) / sum(den) x scale with a session-bootstrap percentile interval."""
    if sums.empty:
        return NAN_ESTIMATE
    value = _total(sums) * scale
    n, k = int(sums.n.sum()), len(sums)
    if k < 2:
        return Estimate(value, math.nan, math.nan, n, k)
    rng = np.random.default_rng(seed)
    num, den = _replicates(sums, rng, n_boot)
    lo, hi = _interval(_ratio(num, den) * scale, level)
    return Estimate(value, lo, hi, n, k)


def bootstrap_many(requests: Sequence[tuple[Sums, float]], *, n_boot: int = N_BOOT, seed: int = 0,
                   level: float = LEVEL) -> list[Estimate]:
    """``bootstrap_ratio(sums, scale=scale)`` of each request, equal to the last bit, computed together.

    Why: a replicate's draws depend only on the session layout (the strata of the sorted sessions) and the
    seed, so every metric of one group of rows (and every group of the same layout: two seats of one grid)
    resamples the very same sessions. The draws are made once per layout and each distinct per-session
    vector gathered once: a report's dozens of intervals over 57,600 sessions cost one draw, not dozens.
    """
    out: list[Estimate | None] = [None] * len(requests)
    layouts: dict[bytes, list[int]] = {}
    for i, (sums, scale) in enumerate(requests):
        if sums.empty:
            out[i] = NAN_ESTIMATE
        elif len(sums) < 2:
            out[i] = Estimate(_total(sums) * scale, math.nan, math.nan, int(sums.n.sum()), len(sums))
        else:
            layouts.setdefault(sums.stratum.astype(np.int64).tobytes(), []).append(i)
    for members in layouts.values():
        vectors: list[np.ndarray] = []
        where: dict[bytes, int] = {}
        slots = []
        for i in members:
            pair = []
            for v in (requests[i][0].num, requests[i][0].den):
                key = v.tobytes()
                if key not in where:
                    where[key] = len(vectors)
                    vectors.append(v)
                pair.append(where[key])
            slots.append(pair)
        reps = _replicate_sums(vectors, requests[members[0]][0].stratum, np.random.default_rng(seed), n_boot)
        rows = max(1, STACKED // max(n_boot, 1))  # requests whose replicates are stacked at once
        for start in range(0, len(members), rows):
            part, pairs = members[start:start + rows], slots[start:start + rows]
            ratios = _ratio(np.stack([reps[a] for a, _ in pairs]), np.stack([reps[b] for _, b in pairs]))
            ratios *= np.array([requests[i][1] for i in part], dtype=float)[:, None]
            for i, (lo, hi) in zip(part, _intervals(ratios, level)):
                sums, scale = requests[i]
                out[i] = Estimate(_total(sums) * scale, lo, hi, int(sums.n.sum()), len(sums))
    return out  # type: ignore[return-value]  # every request's slot is filled above


def bootstrap_strata(requests: Sequence[Sums], *, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL
                     ) -> list[tuple[Estimate, dict[int, Estimate]]]:
    """Per request: ``bootstrap_ratio(sums)`` (sessions resampled within strata: the same numbers) and each
    stratum's own estimate, its replicates the stratum's part of the same draws.

    Why: a grid's cells are its strata (the design fixes how many games each cell has), so the pooled row
    resamples games within cells, and each cell's row needs no draws of its own: a 384-cell GLEE grid
    costs one resampling instead of two. Strata are keyed by their code in ``sums.stratum``; a stratum of
    one session has no interval (as a request of one session would).
    """
    out: list[tuple[Estimate, dict[int, Estimate]] | None] = [None] * len(requests)
    layouts: dict[bytes, list[int]] = {}
    for i, sums in enumerate(requests):
        if len(sums) < 2:
            one = bootstrap_many([(sums, 1.0)], n_boot=n_boot, seed=seed, level=level)[0]
            out[i] = (one, {int(c): one for c in np.unique(sums.stratum)})
        else:
            layouts.setdefault(sums.stratum.astype(np.int64).tobytes(), []).append(i)
    for members in layouts.values():
        vectors = [v for i in members for v in (requests[i].num, requests[i].den)]
        stratum = requests[members[0]].stratum
        codes = np.unique(stratum)
        parts = [np.flatnonzero(stratum == c) for c in codes]
        cells: list[dict[int, Estimate]] = [{} for _ in members]

        def each(k: int, sums: list[np.ndarray], members: list[int] = members, cells: list[dict[int, Estimate]] = cells,
                 codes: np.ndarray = codes, parts: list[np.ndarray] = parts) -> None:
            part = parts[k]
            ratios = _ratio(np.stack(sums[0::2]), np.stack(sums[1::2]))
            ends = _intervals(ratios, level) if len(part) >= 2 else [(math.nan, math.nan)] * len(members)
            for m, i in enumerate(members):
                sub = requests[i].select(part)
                cells[m][int(codes[k])] = Estimate(_total(sub), *ends[m], int(sub.n.sum()), len(part))

        reps = _replicate_sums(vectors, stratum, np.random.default_rng(seed), n_boot, each)
        ends = _intervals(_ratio(np.stack(reps[0::2]), np.stack(reps[1::2])), level)
        for m, i in enumerate(members):
            sums = requests[i]
            out[i] = (Estimate(_total(sums), *ends[m], int(sums.n.sum()), len(sums)), cells[m])
    return out  # type: ignore[return-value]  # every request's slot is filled above


STACKED = 262_144  # replicate ratios held at once (2 MB); a GLEE card stacks thousands of requests' 2000


def _intervals(reps: np.ndarray, level: float) -> list[tuple[float, float]]:
    """:func:`_interval` of each row, the rows without NaN in one quantile call along the axis (the same
    per-row partition and interpolation, so the same bits); a row with NaN goes alone, as it would."""
    out: list[tuple[float, float]] = [(math.nan, math.nan)] * len(reps)
    bad = np.isnan(reps).any(axis=1)
    whole = np.flatnonzero(~bad)
    if len(whole):
        alpha = (1 - level) / 2
        q = np.quantile(reps[whole], [alpha, 1 - alpha], axis=1)
        for j, i in enumerate(whole.tolist()):
            out[i] = (float(q[0, j]), float(q[1, j]))
    for i in np.flatnonzero(bad).tolist():
        out[i] = _interval(reps[i], level)
    return out


def bootstrap_mean(values: np.ndarray | pd.Series, cluster: np.ndarray | pd.Series, **kw: Any) -> Estimate:
    """Mean of ``values`` with sessions (``cluster``) as the resampling unit."""
    values = np.asarray(values, dtype=float)
    return bootstrap_ratio(cluster_sums(values, np.ones_like(values), cluster), **kw)


def _session_index(keys: np.ndarray) -> np.ndarray:
    return np.array([int(str(k).rsplit("|", 1)[-1]) for k in keys], dtype=int)


def _sum_by(session: np.ndarray, keys: np.ndarray, sums: Sums) -> tuple[np.ndarray, np.ndarray]:
    """Sums per session index (several tables of one session add up), on the common ``keys`` only."""
    mask = np.isin(session, keys)
    idx = np.searchsorted(keys, session[mask])
    return (np.bincount(idx, weights=sums.num[mask], minlength=len(keys)),
            np.bincount(idx, weights=sums.den[mask], minlength=len(keys)))


def bootstrap_diff(a: Sums, b: Sums, *, paired: bool = False, n_boot: int = N_BOOT, seed: int = 0,
                   level: float = LEVEL, scale: float = 1.0) -> Estimate:
    """(ratio of A) - (ratio of B), each side from :func:`cluster_sums`.

    ``paired``: the sessions are matched on their session index (the last ``|`` field of the key, see
    ``load``) and resampled together; sessions present on one side only are left out of the interval.
    ``n`` and ``sessions`` report side A + side B.
    """
    if a.empty or b.empty:
        return NAN_ESTIMATE
    value = (_total(a) - _total(b)) * scale
    n, k = int(a.n.sum() + b.n.sum()), len(a) + len(b)
    rng = np.random.default_rng(seed)
    if paired:
        sa, sb = _session_index(a.keys), _session_index(b.keys)
        keys = np.intersect1d(sa, sb)
        if len(keys) < 2:
            return Estimate(value, math.nan, math.nan, n, k)
        na, da = _sum_by(sa, keys, a)
        nb, db = _sum_by(sb, keys, b)
        ra, rb = np.zeros(n_boot), np.zeros(n_boot)
        for start, rows in _blocks(n_boot, len(keys)):
            idx = rng.integers(0, len(keys), size=(rows, len(keys)))
            ra[start:start + rows] = _ratio(na[idx].sum(1), da[idx].sum(1))
            rb[start:start + rows] = _ratio(nb[idx].sum(1), db[idx].sum(1))
    else:
        if len(a) < 2 or len(b) < 2:
            return Estimate(value, math.nan, math.nan, n, k)
        ra = _ratio(*_replicates(a, rng, n_boot))
        rb = _ratio(*_replicates(b, rng, n_boot))
    lo, hi = _interval((ra - rb) * scale, level)
    return Estimate(value, lo, hi, n, k)


def trend_weights(x: Sequence[float]) -> np.ndarray:
    """Weights w with sum(w * y) = the OLS slope of y on x times the span max(x) - min(x): the change the
    fitted line makes from the lowest level to the highest, in y's own unit. Why the span: a slope per unit
    of a token budget is a tiny number, while the fitted change reads like a difference A - B (with two
    levels it is exactly the later one minus the earlier one). NaN weights when x does not vary."""
    xs = np.asarray(x, dtype=float)
    centered = xs - xs.mean()
    sxx = float((centered ** 2).sum())
    if len(xs) < 2 or sxx == 0:
        return np.full(len(xs), math.nan)
    return centered / sxx * float(xs.max() - xs.min())


def bootstrap_trend(sides: Sequence[Sums], x: Sequence[float], *, n_boot: int = N_BOOT, seed: int = 0,
                    level: float = LEVEL, scale: float = 1.0) -> Estimate:
    """The trend of a ratio across ordered levels: sum over levels of ``trend_weights(x)`` times each
    level's ratio (one side per level, from :func:`cluster_sums`), with a PAIRED interval.

    Why paired: the levels of one grid factor share their sessions, so a replicate draws the session
    indices once and every level sums the same draws (sessions missing from any level are left out of the
    interval, as in :func:`bootstrap_diff`). With two levels at x = (0, 1) the value and the interval are
    those of ``bootstrap_diff(later, earlier, paired=True)``, to the bit (the same draws in the same order).
    A side with no rows is left out (its level unplayed); fewer than two levels left gives NaN.
    ``n`` and ``sessions`` add up the levels kept."""
    kept = [i for i, s in enumerate(sides) if not s.empty]
    w = trend_weights([x[i] for i in kept])
    if len(kept) < 2 or bool(np.isnan(w).any()):
        return NAN_ESTIMATE
    used = [sides[i] for i in kept]
    value = float(sum(wi * _total(s) for wi, s in zip(w, used))) * scale
    n, k = int(sum(s.n.sum() for s in used)), sum(len(s) for s in used)
    index = [_session_index(s.keys) for s in used]
    keys = index[0]
    for other in index[1:]:
        keys = np.intersect1d(keys, other)
    if len(keys) < 2:
        return Estimate(value, math.nan, math.nan, n, k)
    totals = [_sum_by(si, keys, s) for si, s in zip(index, used)]
    rng = np.random.default_rng(seed)
    reps = np.zeros(n_boot)
    for start, rows in _blocks(n_boot, len(keys)):
        idx = rng.integers(0, len(keys), size=(rows, len(keys)))
        part = np.zeros(rows)
        for wi, (num, den) in zip(w, totals):
            part = part + wi * _ratio(num[idx].sum(1), den[idx].sum(1))
        reps[start:start + rows] = part
    lo, hi = _interval(reps * scale, level)
    return Estimate(value, lo, hi, n, k)
