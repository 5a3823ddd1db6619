"""bootstrap_many must give every request's bootstrap_ratio to the last bit: the intervals of one layout
are computed together (one quantile call along an axis), so this pins that shortcut against the one-by-one
path on random data, NaN replicates, empty and one-session requests, and several layouts included."""
from __future__ import annotations

import math

import numpy as np
import pytest

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


def _by_hand(values: np.ndarray, cells: np.ndarray, n_boot: int, seed: int) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Replicate means of a stratified bootstrap written out: cells in code order, each drawing its games'
    indices from one generator; a cell of one whole number is not gathered (its sum is exact), and the
    cells after the last one that is draw nothing. The pooled replicate is the sum over cells."""
    rng = np.random.default_rng(seed)
    codes = [int(c) for c in np.unique(cells)]
    exact = {c: (v := values[cells == c]).min() == v.max() and float(v[0]).is_integer() for c in codes}
    last = max(c for c in codes if not exact[c])
    total, parts = np.zeros(n_boot), {}
    for c in codes:
        v = values[cells == c]
        draws = rng.integers(0, len(v), size=(n_boot, len(v))) if c <= last else None
        s = np.full(n_boot, v[0] * len(v)) if exact[c] else v[draws].sum(axis=1)
        parts[c] = s / len(v)
        total += s
    return total / len(values), parts


def test_strata_give_the_pooled_bootstrap_and_each_cells_part_of_its_draws() -> None:
    """bootstrap_strata: the whole is bootstrap_ratio's stratified interval to the bit; each stratum's
    interval comes from its part of the same draws (checked against the resampling written out)."""
    from econarena.analysis.stats import bootstrap_strata

    rng = np.random.default_rng(3)
    cells = np.repeat(np.arange(5), [7, 2, 11, 4, 6])
    values = rng.normal(size=len(cells))
    values[cells == 3] = 2.0  # one whole number: no draws there
    ones = np.ones(len(values))
    sums = Sums(values, ones, ones, cells, np.arange(len(values)))
    other = Sums(values * 3 - 1, ones, ones, cells, np.arange(len(values)))
    got = bootstrap_strata([sums, other], n_boot=300, seed=11)
    for s, (whole, per) in zip((sums, other), got):
        assert _same(whole, bootstrap_ratio(s, n_boot=300, seed=11))
        total, parts = _by_hand(s.num, cells, 300, 11)
        assert np.quantile(total, [0.025, 0.975]) == pytest.approx([whole.low, whole.high], rel=1e-12)
        assert sorted(per) == [0, 1, 2, 3, 4]
        for c, e in per.items():
            v = s.num[cells == c]
            assert e.value == pytest.approx(v.mean(), rel=1e-12) and (e.n, e.sessions) == (len(v), len(v))
            assert [e.low, e.high] == pytest.approx(list(np.quantile(parts[c], [0.025, 0.975])), rel=1e-12)
    assert got[0][1][3].low == got[0][1][3].high == 2.0  # no noise within that cell


def test_a_cell_constant_within_has_no_pooled_noise() -> None:
    """The design decides the interval: values that differ only between cells give the stratified pooled
    interval zero width, where resampling all games as one would show the spread between cells."""
    from econarena.analysis.stats import bootstrap_strata

    cells = np.repeat(np.arange(4), 5)
    values = 0.1 + 0.2 * cells
    ones = np.ones(len(values))
    (whole, per), = bootstrap_strata([Sums(values, ones, ones, cells, np.arange(20))], n_boot=200, seed=1)
    assert whole.low == pytest.approx(whole.high, abs=1e-12) == pytest.approx(values.mean())
    plain = bootstrap_ratio(Sums(values, ones, ones, np.zeros(20, dtype=int), np.arange(20)), n_boot=200, seed=1)
    assert plain.high - plain.low > 0.1
    assert all(per[c].low == pytest.approx(per[c].high) == pytest.approx(0.1 + 0.2 * c) for c in range(4))
