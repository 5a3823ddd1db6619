"""bootstrap_many must give every request's bootstrap_ratio to the last bit: the intervals of one layout
are computed together (one quantile call along an axis), so this pins that shortcut against the one-by-one
path on random data, NaN replicates, empty and one-session requests, and several layouts included."""
from __future__ import annotations

import math

import numpy as np

from econarena.analysis.stats import Estimate, Sums, bootstrap_many, bootstrap_ratio, cluster_sums


def _same(a: Estimate, b: Estimate) -> bool:
    def eq(x: float, y: float) -> bool:
        return (math.isnan(x) and math.isnan(y)) or x == y

    return eq(a.value, b.value) and eq(a.low, b.low) and eq(a.high, b.high) and a.n == b.n and a.sessions == b.sessions


def _sums(rng: np.random.Generator, k: int, strata: int, sparse: bool = False) -> Sums:
    rows = k * 3
    cluster = rng.integers(0, k, size=rows)
    num = rng.normal(size=rows)
    den = (rng.random(rows) < 0.05).astype(float) if sparse else rng.random(rows) + 0.1
    return cluster_sums(num, den, cluster, cluster % strata)


def test_many_matches_one_by_one() -> None:
    rng = np.random.default_rng(7)
    base = _sums(rng, 40, 3)
    other = _sums(rng, 25, 1)
    reqs: list[tuple[Sums, float]] = [
        (base, 1.0), (base, 100.0), (Sums(base.den, base.num, base.n, base.stratum, base.keys), 1.0),
        (Sums(base.num * 2, base.den, base.n, base.stratum, base.keys), -3.5),
        (other, 1.0), (other, 0.1),
        (_sums(rng, 12, 2, sparse=True), 1.0),  # a denominator of 0 in some replicates: NaN ratios
        (_sums(rng, 6, 1, sparse=True), 2.0),
        (cluster_sums(np.zeros(0), np.zeros(0), np.zeros(0)), 1.0),  # empty
        (cluster_sums(np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.array([5, 5])), 1.0),  # one session
    ]
    for n_boot in (1, 7, 200):
        for seed in (0, 3):
            got = bootstrap_many(reqs, n_boot=n_boot, seed=seed)
            want = [bootstrap_ratio(s, scale=c, n_boot=n_boot, seed=seed) for s, c in reqs]
            assert all(_same(g, w) for g, w in zip(got, want)), (n_boot, seed)


def test_many_random_layouts() -> None:
    rng = np.random.default_rng(11)
    for trial in range(30):
        reqs = [(_sums(rng, int(rng.integers(1, 30)), int(rng.integers(1, 4)), sparse=bool(trial % 3 == 0)),
                 float(rng.normal())) for _ in range(int(rng.integers(1, 6)))]
        got = bootstrap_many(reqs, n_boot=50, seed=trial, level=0.9)
        want = [bootstrap_ratio(s, scale=c, n_boot=50, seed=trial, level=0.9) for s, c in reqs]
        assert all(_same(g, w) for g, w in zip(got, want)), trial


def test_many_in_chunks(monkeypatch: object) -> None:
    """Requests stacked a few at a time (the memory cap) give the same bits as all at once."""
    from econarena.analysis import stats

    rng = np.random.default_rng(5)
    base = _sums(rng, 30, 2)
    reqs = [(Sums(base.num * (j + 1), base.den, base.n, base.stratum, base.keys), 1.0 + j) for j in range(7)]
    want = [bootstrap_ratio(s, scale=c, n_boot=40, seed=1) for s, c in reqs]
    monkeypatch.setattr(stats, "STACKED", 90)  # type: ignore[attr-defined]  # 2 requests of 40 at a time
    got = bootstrap_many(reqs, n_boot=40, seed=1)
    assert all(_same(g, w) for g, w in zip(got, want))
