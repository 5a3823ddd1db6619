"""The trend across a grid factor's ordered levels (numbers, efforts): the least-squares line of a metric on
the level, read as the change it makes from the first level to the last, with a paired interval over the
sessions the levels share; in ``compare --by`` and the report's comparisons, by hand from runs.jsonl. And the
intervals' coverage: 100 seeded replications of a random player whose play differs by cell, through the
functions ``compare --by`` calls."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import cli, read_jsonl, run_experiment

from econarena.analysis import cells
from econarena.analysis.stats import Sums, bootstrap_diff, bootstrap_trend, cluster_sums, trend_weights

pd = pytest.importorskip("pandas")

SESSIONS = 40
DOC = {"experiment": {"name": "bc-trend", "game": "beauty_contest", "sessions": SESSIONS, "runs": 1, "seed": 3,
                      "environment": "melee"},
       "game": {"upper_bound": 100, "prize": 100},
       "grid": {"game": {"ratio": [0.9, 0.3, 0.5]}},  # declared out of order: the trend runs 0.3 < 0.5 < 0.9
       "players": [{"agent": "level_k", "k": 1}, {"agent": "random", "count": 2}]}
# the OLS weights of x = (0.3, 0.5, 0.9) times the span 0.6, by hand: x - mean = (-4/15, -1/15, 1/3),
# sum of squares 14/75, so w = (x - mean) / (14/75) * 3/5 = (-6/7, -3/14, 15/14)
WEIGHTS = (Fraction(-6, 7), Fraction(-3, 14), Fraction(15, 14))


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from econarena.analysis.report import build_report

    root = tmp_path_factory.mktemp("trend")
    run_experiment(DOC, root / "run")
    build_report([root / "run"], root / "report", n_boot=200, seed=1, transcripts=0)
    return root / "run", root / "report"


def _sums(values: dict[int, float], stratum: int = 0) -> Sums:
    """One row per session (key ``d|t|session``), numerator the value, denominator 1."""
    keys = [f"d|t|{s}" for s in values]
    return cluster_sums(np.array(list(values.values())), np.ones(len(values)), np.array(keys),
                        np.full(len(values), stratum))


def test_the_trend_weights_by_hand() -> None:
    assert list(trend_weights([0, 1, 2])) == [-1.0, 0.0, 1.0]  # three even steps: last minus first
    assert list(trend_weights([0, 1, 2, 3])) == pytest.approx([-0.9, -0.3, 0.3, 0.9])
    assert list(trend_weights([0.3, 0.5, 0.9])) == pytest.approx([float(w) for w in WEIGHTS])
    assert list(trend_weights([0, 1])) == [-1.0, 1.0]
    assert all(math.isnan(w) for w in trend_weights([2, 2, 2]))


def test_a_trend_is_a_weighted_sum_of_the_levels_means_paired_on_the_session() -> None:
    # levels at steps 0, 1, 2, 3; sessions 0..3 everywhere, session 4 at the first level only
    levels = [{0: 1.0, 1: 3.0, 2: 2.0, 3: 6.0, 4: 100.0}, {0: 2.0, 1: 2.0, 2: 2.0, 3: 2.0},
              {0: 4.0, 1: 5.0, 2: 3.0, 3: 4.0}, {0: 5.0, 1: 7.0, 2: 6.0, 3: 2.0}]
    sides = [_sums(v) for v in levels]
    est = bootstrap_trend(sides, [0, 1, 2, 3], n_boot=500, seed=4)
    means = [sum(v.values()) / len(v) for v in levels]  # 22.4, 2, 4, 5: every session of a level counts
    assert est.value == pytest.approx(-0.9 * means[0] - 0.3 * means[1] + 0.3 * means[2] + 0.9 * means[3])
    assert est.n == 17 and est.sessions == 17
    # the interval resamples the four shared sessions only: session 4's 100 never enters a replicate, so
    # every replicate lies within the trends of single sessions repeated (the extremes a draw can reach)
    per_session = [-0.9 * levels[0][s] - 0.3 * levels[1][s] + 0.3 * levels[2][s] + 0.9 * levels[3][s]
                   for s in range(4)]
    assert min(per_session) <= est.low < est.high <= max(per_session)
    # each level the same in every session: an exact trend with no width
    flat = bootstrap_trend([_sums({s: float(k) for s in range(5)}) for k in (1, 3, 5)], [0, 1, 2], n_boot=200)
    assert (flat.value, flat.low, flat.high) == (4.0, 4.0, 4.0)
    # a level unplayed is left out (the line through the others); one level left, or one shared session: NaN
    gap = bootstrap_trend([sides[0], _sums({}), sides[2]], [0, 1, 2], n_boot=50)
    assert gap.value == pytest.approx(means[2] - means[0])
    assert math.isnan(bootstrap_trend([sides[0], _sums({})], [0, 1]).value)
    lone = bootstrap_trend([_sums({0: 1.0, 9: 2.0}), _sums({0: 3.0, 8: 1.0}), _sums({0: 2.0})], [0, 1, 2])
    assert lone.value == pytest.approx(0.5) and math.isnan(lone.low)


def test_two_levels_give_the_paired_difference_to_the_bit() -> None:
    rng = np.random.default_rng(7)
    a = _sums({s: float(rng.normal()) for s in range(30)})
    b = _sums({s: float(rng.normal()) for s in range(2, 33)})
    trend = bootstrap_trend([b, a], [0, 1], n_boot=700, seed=3, scale=100.0)
    diff = bootstrap_diff(a, b, paired=True, n_boot=700, seed=3, scale=100.0)
    assert trend == diff


def test_positions_on_the_trend_axis() -> None:
    found = cells.factors({"grid": {"game": {"ratio": [0.9, 0.3, 0.5]}, "llm": {
        "reasoning_effort": ["high", "minimal", "medium"], "prompt": ["a", "b", "c"]}}})
    ratio, effort, prompt = found
    assert ratio.positions() == {"0.3": 0.3, "0.5": 0.5, "0.9": 0.9}  # a number at its value
    assert effort.positions() == {"minimal": 0.0, "medium": 1.0, "high": 2.0}  # an effort at its step
    assert ratio.ordered and effort.ordered and not prompt.ordered


def _by_hand(run: Path, label: str) -> dict[str, float]:
    """Mean deviation of ``label`` per ratio, from runs.jsonl."""
    out = {}
    for ratio in ("0.3", "0.5", "0.9"):
        devs = [d for r in read_jsonl(run / "runs.jsonl") if r["lineup"] == f"melee [ratio={ratio}]"
                for d, lab in zip(r["deviation"], r["labels"]) if lab == label]
        assert len(devs) == SESSIONS * (2 if label == "random" else 1)
        out[ratio] = sum(devs) / len(devs)
    return out


def test_trend_by_equals_the_hand_computed_trend(study: tuple[Path, Path]) -> None:
    from econarena.analysis.compare import compare_by, trend_by
    from econarena.analysis.load import load

    run, _ = study
    found = cells.factors(DOC)
    frames = load(run)
    trends = trend_by(frames, found, "ratio", ("mean_deviation", "payoff_ratio"), n_boot=300, seed=2)
    assert len(trends) == 4 and bool(trends["paired"].all())
    dev = trends[trends["metric"] == "mean_deviation"].set_index("player")
    # level-1 plays ratio x 50 in every session: deviations 0.15, 0.25, 0.45, on a line of slope 0.5
    level_k = dev.loc["level_k"]
    assert (level_k["first"], level_k["last"], level_k["levels"]) == ("0.3", "0.9", 3)
    assert level_k["trend"].value == pytest.approx(0.5 * 0.6)
    assert (level_k["trend"].low, level_k["trend"].high) == pytest.approx((0.3, 0.3))
    means = _by_hand(run, "random")
    want = sum(float(w) * means[r] for w, r in zip(WEIGHTS, ("0.3", "0.5", "0.9")))
    rnd = dev.loc["random"]["trend"]
    assert rnd.value == pytest.approx(want) and rnd.low < want < rnd.high and rnd.sessions == 3 * SESSIONS
    # the trend is the weighted sum of the levels' own values, as compare --by gives them
    diffs = compare_by(frames, found, "ratio", ("mean_deviation",), n_boot=300, seed=2)
    mine = diffs[diffs["player"] == "random"].set_index("level")
    shown = {"0.3": mine.loc["0.5", "b"].value, "0.5": mine.loc["0.5", "a"].value, "0.9": mine.loc["0.9", "a"].value}
    assert shown == pytest.approx(means)
    assert rnd.value == pytest.approx(sum(float(w) * shown[r] for w, r in zip(WEIGHTS, ("0.3", "0.5", "0.9"))))
    # two levels or an unordered factor: no trend (the one difference is all there is)
    two = {**DOC, "grid": {"game": {"ratio": [0.9, 0.3]}}}
    assert trend_by(frames, cells.factors(two), "ratio", ("mean_deviation",)).empty


def test_a_trend_per_player_and_the_rest_of_its_cell(tmp_path: Path) -> None:
    """Two factors: the trend across ratio is fitted within each prize, never across prizes."""
    from econarena.analysis.compare import trend_by
    from econarena.analysis.load import load

    doc = {**DOC, "experiment": {**DOC["experiment"], "sessions": 3},
           "grid": {"game": {"ratio": [0.3, 0.5, 0.9], "prize": [10, 20]}}}
    run_experiment(doc, tmp_path / "run")
    trends = trend_by(load(tmp_path / "run"), cells.factors(doc), "ratio", ("mean_deviation", "mean_payoff"),
                      n_boot=100)
    dev = trends[trends["metric"] == "mean_deviation"].set_index("player")["trend"]
    assert sorted(dev.index) == ["level_k [prize=10]", "level_k [prize=20]", "random [prize=10]",
                                 "random [prize=20]"]
    assert dev["level_k [prize=10]"].value == pytest.approx(0.3) == dev["level_k [prize=20]"].value
    # the payoff scales with the prize: by hand from runs.jsonl, per prize, the weighted means per ratio
    runs = read_jsonl(tmp_path / "run" / "runs.jsonl")
    pay = trends[trends["metric"] == "mean_payoff"].set_index("player")["trend"]
    for prize in ("10", "20"):
        means = []
        for ratio in ("0.3", "0.5", "0.9"):
            got = [x for r in runs if r["lineup"] == f"melee [ratio={ratio},prize={prize}]"
                   for x, lab in zip(r["payoffs"], r["labels"]) if lab == "random"]
            assert len(got) == 6
            means.append(sum(got) / 6)
        want = sum(float(w) * m for w, m in zip(WEIGHTS, means))
        assert pay[f"random [prize={prize}]"].value == pytest.approx(want)


def test_compare_by_prints_the_trend_and_counts_it(study: tuple[Path, Path]) -> None:
    run, _ = study
    r = cli("compare", str(run), "--by", "ratio", "--metrics", "mean_deviation", "--boot", "200")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "== deviation from NE (fraction, lower is better): 4 comparisons, 2 trends" in out
    assert "trend across ratio by value (0.3 < 0.5 < 0.9)" in out
    line = next(x for x in out.splitlines() if x.startswith("level_k  0.3..0.9 (3)"))
    assert line.split()[3:7] == ["0.300", "[0.300,", "0.300]", "*"]
    assert "4 comparisons and 2 trends in all" in out and "least-squares line" in out
    bad = cli("compare", str(run), "--by", "ratio", "--metrics", "reasoning_tokens_per_decision")
    assert bad.returncode != 0 and "cannot be compared between levels" in bad.stderr


def test_the_report_shows_the_trend_and_counts_it(study: tuple[Path, Path]) -> None:
    _, report = study
    page = (report / "report.html").read_text(encoding="utf-8")
    part = page[page.index("id='comparisons'"):page.index("id='usage'")]
    # three metrics (payoff ratio, deviation, rule breaking) x two levels x two players; a trend per
    # metric and player
    assert "ratio, each level (A) against ratio=0.3 (B), paired on the session; 12 comparisons and 6 trends" in part
    assert "Trend across ratio by value (0.3 &lt; 0.5 &lt; 0.9)" in part
    assert "<th>deviation from NE: trend</th>" in part
    assert "0.300 [0.300, 0.300]*" in part  # level-1's deviation trend


TRUE_MEAN = {"0.3": 0.20, "0.5": 0.30, "0.9": 0.36}  # the random player's mean deviation per ratio
# by hand: -6/7 x 0.20 - 3/14 x 0.30 + 15/14 x 0.36 = (-2.4 - 0.9 + 5.4) / 14 = 0.15
TRUE_TREND = 0.15
REPLICATIONS, SEED = 100, 1000


def _replications(frames: Any) -> Any:
    """The study's frames with its random seats played anew REPLICATIONS times, replication k as the player
    ``random-k`` (seed SEED + k), so one ``compare --by`` computation holds them all. The random player: in
    each session a temper shared by the session's cells (what pairing takes out) and per seat-run a draw of
    its own, both uniform on [0, 1]; its deviation is TRUE_MEAN[ratio] x (temper + draw), of expectation
    TRUE_MEAN[ratio]."""
    p = frames.players
    seats = p[p["label"] == "random"]
    mean = seats["cell"].map({f"ratio={k}": v for k, v in TRUE_MEAN.items()}).to_numpy(dtype=float)
    session = seats["session"].to_numpy()
    parts = []
    for k in range(REPLICATIONS):
        rng = np.random.default_rng(SEED + k)
        temper = rng.uniform(size=SESSIONS)[session]
        parts.append(seats.assign(label=f"random-{k:03d}", deviation=mean * (temper + rng.uniform(size=len(seats)))))
    return replace(frames, players=pd.concat(parts, ignore_index=True))


def test_paired_intervals_cover_the_true_difference_in_93_of_100_replications(study: tuple[Path, Path]) -> None:
    """100 seeded replications through compare_by and trend_by (what ``compare --by`` calls), at their
    default 2000 bootstrap replicates and 40 shared sessions. Measured over 5000 replications the intervals
    covered about 94% (the percentile bootstrap's own shortfall at 40 sessions), so 100 replications land
    at 93 or more for a good share of seeds, not all: this seed was set before it was run."""
    from econarena.analysis.compare import compare_by, trend_by
    from econarena.analysis.load import load

    run, _ = study
    found = cells.factors(DOC)
    assert sum(float(w) * TRUE_MEAN[r] for w, r in zip(WEIGHTS, ("0.3", "0.5", "0.9"))) == pytest.approx(TRUE_TREND)
    drawn = _replications(load(run))
    diffs = compare_by(drawn, found, "ratio", ("mean_deviation",))
    trends = trend_by(drawn, found, "ratio", ("mean_deviation",))
    hits = []
    for level in ("0.5", "0.9"):
        mine = diffs[diffs["level"] == level]
        assert len(mine) == REPLICATIONS and bool(mine["paired"].all())
        truth = TRUE_MEAN[level] - TRUE_MEAN["0.3"]
        hits.append(sum(d.low <= truth <= d.high for d in mine["diff"]))
    assert len(trends) == REPLICATIONS
    hits.append(sum(t.low <= TRUE_TREND <= t.high for t in trends["trend"]))
    assert min(hits) >= 93, f"covered in {hits} of 100 (0.5 - 0.3, 0.9 - 0.3, the trend)"
