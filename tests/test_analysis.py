"""The analysis library: frames, metrics against hand-computed values, the session bootstrap, comparisons.

Run directories are produced by the real CLI (``econarena run``) from tiny scripted/baseline experiments,
so these tests also pin the contract between the run-directory files and the analysis.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from econarena.analysis.compare import compare, format_compare, is_paired, setting_pairs  # noqa: E402
from econarena.analysis.load import expand_run_dirs, export, load  # noqa: E402
from econarena.analysis.metrics import summarize  # noqa: E402
from econarena.analysis.stats import bootstrap_diff, bootstrap_mean, bootstrap_ratio, cluster_sums  # noqa: E402
from econarena.analysis.tables import METRICS, metric_table, running_mean  # noqa: E402
from econarena.cli import main  # noqa: E402

BC_SCRIPTED = """
[experiment]
name = "{name}"
game = "beauty_contest"
sessions = 2
runs = 2
seed = 5
history = "actions"

[game]
upper_bound = 50

[[players]]
agent = "scripted"
label = "A"
responses = {responses}

[[players]]
agent = "scripted"
label = "B"
responses = ['{{"answer": 20}}']

[[players]]
agent = "rational"
"""

SPA_FIXED = """
[experiment]
name = "spa-fixed"
game = "second_price_auction"
sessions = 3
seed = 1

[game]
private_value = [60, 40, 50]
assets = 100

[[players]]
agent = "scripted"
label = "low-bidder"
responses = ['{"bid": 30}']

[[players]]
agent = "level_k"
label = "truthful"

[[players]]
agent = "rational"
"""

RATIONAL = """
[experiment]
name = "{name}"
game = "beauty_contest"
environment = "rational"
players_per_game = 3
sessions = 4
seed = 3
prompt = "{prompt}"

[game]
upper_bound = {{ uniform = [10, 100] }}

[[players]]
agent = "level_k"
label = "L1"
k = {k}

[[players]]
agent = "random"
label = "R"
"""


def run_cli(toml: str, tmp: Path, name: str) -> Path:
    """Write the experiment and play it through ``econarena run`` (in process)."""
    cfg = tmp / f"{name}.toml"
    cfg.write_text(toml, encoding="utf-8")
    out = tmp / name
    assert main(["run", str(cfg), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("analysis")
    return {
        # A: 10 then garbage; B: 20; rational: 0 -> see test_beauty_contest_hand_computed
        "bc": run_cli(BC_SCRIPTED.format(name="bc", responses="""['{"answer": 10}', 'garbage']"""), tmp, "bc"),
        "bc_clean": run_cli(BC_SCRIPTED.format(name="bc-clean", responses="""['{"answer": 10}']"""), tmp,
                            "bc_clean"),
        "spa": run_cli(SPA_FIXED, tmp, "spa"),
        "rat": run_cli(RATIONAL.format(name="bc-rational", prompt="default", k=1), tmp, "rat"),
        "rat_cot": run_cli(RATIONAL.format(name="bc-rational-cot", prompt="cot", k=2), tmp, "rat_cot"),
    }


def value(table: pd.DataFrame, label: str, metric: str) -> float:
    row = table[(table["label"] == label) & (table["metric"] == metric)]
    assert len(row) == 1, (label, metric)
    return float(row["value"].iloc[0])


def test_frames_shape_and_columns(dirs: dict[str, Path]) -> None:
    f = load(dirs["bc"])
    assert len(f.players) == 2 * 2 * 3  # sessions x runs x seats
    assert len(f.runs) == 4 and len(f.decisions) == 12
    for col in ("label", "model", "environment", "game", "history", "prompt", "group", "cluster", "role"):
        assert col in f.players.columns
    row = f.experiments.iloc[0]
    assert (row["game"], row["environment"], row["history"], row["prompt"]) == ("beauty_contest", "melee",
                                                                                "actions", "default")
    assert row["group"] == "L" and row["group_source"] == "scale"  # upper bound 50 < 100
    assert f.players["cluster"].nunique() == 2  # one resampling unit per session
    assert set(f.decisions["violation"].dropna()) == {"parse_error"}


def test_beauty_contest_hand_computed(dirs: dict[str, Path]) -> None:
    """Upper 50, prize 100, three players, NE payoff 100/3.

    run 0: A=10, B=20, rational=0 -> mean 10, target 20/3: A is closest (3.33) and wins.
    run 1: A garbage (left out), B=20, rational=0 -> mean 10, target 20/3: rational (6.67) beats B (13.3).
    """
    t = metric_table(load(dirs["bc"]), tuple(METRICS), by=["label"], n_boot=200)
    assert value(t, "A", "mean_payoff") == pytest.approx(50.0)
    assert value(t, "A", "payoff_ratio") == pytest.approx(1.5)
    assert value(t, "A", "mean_deviation") == pytest.approx(10 / 50)  # the invalid run has no deviation
    assert value(t, "A", "win_rate") == pytest.approx(0.5)
    assert value(t, "A", "rule_break_rate_pct") == pytest.approx(50.0)
    assert value(t, "A", "parse_error_pct") == pytest.approx(50.0)
    assert value(t, "A", "schema_error_pct") == 0.0
    assert value(t, "B", "mean_payoff") == 0.0
    assert value(t, "B", "mean_deviation") == pytest.approx(20 / 50)
    assert value(t, "rational", "payoff_ratio") == pytest.approx(1.5)
    assert value(t, "rational", "mean_deviation") == 0.0
    assert value(t, "A", "mean_ne_payoff") == pytest.approx(100 / 3)
    # both sessions are identical, so every interval collapses onto the value
    row = t[(t["label"] == "A") & (t["metric"] == "payoff_ratio")].iloc[0]
    assert row["ci_low"] == pytest.approx(1.5) and row["ci_high"] == pytest.approx(1.5)
    assert row["sessions"] == 2 and row["n"] == 4


def test_auction_hand_computed(dirs: dict[str, Path]) -> None:
    """Values 60/40/50, assets 100; bids 30 / 40 / 50: the rational player (v=50) wins and pays 40 -> 110.

    NE: the v=60 player wins paying 50 -> 110, others 100. Deviation |asset / NE asset - 1|.
    """
    t = metric_table(load(dirs["spa"]), tuple(METRICS), by=["label"], n_boot=200)
    assert value(t, "low-bidder", "mean_payoff") == pytest.approx(100.0)
    assert value(t, "low-bidder", "payoff_ratio") == pytest.approx(100 / 110)
    assert value(t, "low-bidder", "mean_deviation") == pytest.approx(1 - 100 / 110)
    assert value(t, "rational", "mean_payoff") == pytest.approx(110.0)
    assert value(t, "rational", "mean_deviation") == pytest.approx(0.1)
    assert value(t, "rational", "win_rate") == 1.0
    assert value(t, "truthful", "mean_deviation") == 0.0
    f = load(dirs["spa"])
    low = f.players[f.players["label"] == "low-bidder"].iloc[0]
    assert low["action_norm"] == pytest.approx(30 / 60) and low["ne_action_norm"] == pytest.approx(1.0)


@pytest.mark.parametrize("key", ["bc", "spa", "rat"])
def test_same_numbers_as_summary_json(dirs: dict[str, Path], key: str) -> None:
    """The frame metrics equal analysis/metrics.py's summary (opponents included, as summary.json has them)."""
    t = metric_table(load(dirs[key]), tuple(METRICS), by=["label"], opponents=True, n_boot=50)
    summary = summarize(dirs[key])["labels"]
    checked = 0
    for _, r in t.iterrows():
        ref = summary[r["label"]].get(r["metric"])
        if r["metric"] not in summary[r["label"]]:
            continue
        checked += 1
        if ref is None:
            assert math.isnan(r["value"])
        else:
            assert r["value"] == pytest.approx(ref)
    assert checked >= 6 * len(summary)


def test_rational_environment_roles_and_groups(dirs: dict[str, Path]) -> None:
    f = load(dirs["rat"])
    opp = f.players[f.players["role"] == "opponent"]
    assert set(opp["label"]) == {"rational"}
    assert set(f.players.loc[f.players["role"] == "player", "label"]) == {"L1", "R"}
    assert f.players["lineup"].nunique() == 2
    t = metric_table(f, ["payoff_ratio"], by=["label"])
    assert set(t["label"]) == {"L1", "R"}  # equilibrium opponents are left out by default


def test_group_from_name_and_scale(tmp_path: Path) -> None:
    toml = BC_SCRIPTED.format(name="bc-groups-H", responses="""['{"answer": 1}']""")
    d = run_cli(toml, tmp_path, "named")
    assert load(d).experiments.iloc[0][["group", "group_source"]].tolist() == ["H", "name"]
    d = run_cli(toml.replace('"bc-groups-H"', '"bc-big"').replace("upper_bound = 50", "upper_bound = 5000"),
                tmp_path, "big")
    assert load(d).experiments.iloc[0][["group", "group_source"]].tolist() == ["H", "scale"]


def test_expand_folder_and_export(dirs: dict[str, Path], tmp_path: Path) -> None:
    parent = dirs["bc"].parent
    found = expand_run_dirs([parent])
    assert {p.name for p in found} >= {"bc", "spa", "rat"}
    f = load([dirs["bc"], dirs["spa"]])
    assert set(f.players["game"]) == {"beauty_contest", "second_price_auction"}
    files = export(f, tmp_path)
    assert {p.name for p in files} == {"decisions.parquet", "runs.parquet", "players.parquet"}
    back = pd.read_parquet(tmp_path / "players.parquet")
    assert len(back) == len(f.players) and back["payoff"].sum() == pytest.approx(f.players["payoff"].sum())
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nothing-here")


def test_running_mean_is_cumulative(dirs: dict[str, Path]) -> None:
    rm = running_mean(load(dirs["bc"]).players, "payoff_ratio")
    a = rm[rm["label"] == "A"]
    assert a["sessions"].tolist() == [1, 2]
    assert a["value"].tolist() == pytest.approx([1.5, 1.5])


# ------------------------------------------------------------------------------------------- bootstrap

def test_bootstrap_is_seeded_and_deterministic() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=60)
    cluster = np.repeat(np.arange(20), 3)
    a = bootstrap_mean(values, cluster, n_boot=500, seed=7)
    b = bootstrap_mean(values, cluster, n_boot=500, seed=7)
    c = bootstrap_mean(values, cluster, n_boot=500, seed=8)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)
    assert a.value == pytest.approx(values.mean())
    assert a.low < a.value < a.high and a.sessions == 20 and a.n == 60


def test_bootstrap_degenerate_cases() -> None:
    one = bootstrap_mean(np.array([1.0, 2.0]), np.array([0, 0]))
    assert one.value == 1.5 and math.isnan(one.low)  # one session: no interval, not a zero-width one
    const = bootstrap_mean(np.full(10, 3.0), np.arange(10))
    assert (const.low, const.value, const.high) == (3.0, 3.0, 3.0)
    nan_rows = bootstrap_mean(np.array([np.nan, 1.0, 3.0]), np.array([0, 1, 2]))
    assert nan_rows.value == 2.0 and nan_rows.n == 2


def test_bootstrap_resamples_sessions_not_rows() -> None:
    """Rows inside a session are perfectly correlated: the interval must reflect 5 sessions, not 500 rows."""
    session_means = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    values = np.repeat(session_means, 100)
    cluster = np.repeat(np.arange(5), 100)
    by_session = bootstrap_mean(values, cluster, n_boot=2000)
    by_row = bootstrap_mean(values, np.arange(500), n_boot=2000)
    assert by_session.high - by_session.low > 3 * (by_row.high - by_row.low)


def test_bootstrap_strata_keep_their_weight() -> None:
    """Pooling two directories: resampling within each keeps their shares, so the pooled mean cannot move."""
    values = np.r_[np.zeros(10), np.ones(10)]
    cluster = np.arange(20)
    stratum = np.r_[np.zeros(10), np.ones(10)]
    strat = bootstrap_ratio(cluster_sums(values, np.ones(20), cluster, stratum))
    assert strat.low == pytest.approx(0.5) and strat.high == pytest.approx(0.5)
    pooled = bootstrap_ratio(cluster_sums(values, np.ones(20), cluster))
    assert pooled.low < 0.5 < pooled.high


def test_bootstrap_coverage_sanity() -> None:
    """Nominal 95%: over 300 simulated experiments of 40 sessions the interval covers the truth ~95%."""
    rng = np.random.default_rng(123)
    hits = 0
    for i in range(300):
        session_effect = rng.normal(0, 1, 40)
        values = np.repeat(session_effect, 3) + rng.normal(0, 1, 120)
        e = bootstrap_mean(values, np.repeat(np.arange(40), 3), n_boot=400, seed=i)
        hits += e.low <= 0.0 <= e.high
    assert 0.88 <= hits / 300 <= 0.99


def test_paired_difference_is_tighter_when_sessions_are_shared() -> None:
    rng = np.random.default_rng(1)
    draw = rng.normal(0, 5, 30)  # the session's drawn values move both settings together
    a = cluster_sums(draw + 1.0 + rng.normal(0, 0.2, 30), np.ones(30), [f"a|x|{s}" for s in range(30)])
    b = cluster_sums(draw + rng.normal(0, 0.2, 30), np.ones(30), [f"b|x|{s}" for s in range(30)])
    paired = bootstrap_diff(a, b, paired=True)
    indep = bootstrap_diff(a, b, paired=False)
    assert paired.value == pytest.approx(indep.value)
    assert paired.low < 1.0 < paired.high
    assert (paired.high - paired.low) * 5 < indep.high - indep.low


# ------------------------------------------------------------------------------------------ comparisons

def test_compare_hand_computed_and_paired(dirs: dict[str, Path]) -> None:
    a, b = load(dirs["bc"]), load(dirs["bc_clean"])
    assert is_paired(a, b)  # same seed, same fixed game: the sessions drew the same configuration
    t = compare(a, b, ("rule_break_rate_pct", "mean_payoff"), n_boot=200)
    rb = t[(t["label"] == "A") & (t["metric"] == "rule_break_rate_pct")].iloc[0]
    assert (rb["a"].value, rb["b"].value, rb["diff"].value) == (50.0, 0.0, 50.0)
    pay = t[(t["label"] == "A") & (t["metric"] == "mean_payoff")].iloc[0]
    assert pay["diff"].value == pytest.approx(50.0 - 100.0)  # clean A wins every run
    text = format_compare(t, "bc", "bc-clean")
    assert "rule breaking" in text and "paired" in text and "50.000" in text


def test_setting_pairs_find_the_prompt_comparison(dirs: dict[str, Path]) -> None:
    f = load([dirs["rat"], dirs["rat_cot"], dirs["bc"]])
    pairs = setting_pairs(f)
    assert [(Path(a).name, Path(b).name, what) for a, b, what in pairs] == [
        ("rat_cot", "rat", "prompt: cot vs default")]
