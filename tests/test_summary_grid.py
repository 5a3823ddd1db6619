"""The summary of a [grid] carries the design: its cells in their factors' natural order (numbers by value,
reasoning efforts none < minimal < low < medium < high < xhigh, anything else as declared), and a baseline
pooled over the [grid.llm] cells (they change the LLM seats only) into one row that says so, in the table,
summary.json and the findings alike; and reasoning.csv writes its means without float noise. Every number
by hand: a stand-in reasoning model (tests/fakeservers.py) answers 70, 60, 50 and 10 at efforts none,
minimal, low and high in a beauty contest against a rational player (0) and a level-1 thinker (33.33)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli, read_jsonl, run_experiment, to_toml

sys.path.insert(0, str(Path(__file__).parent))
from fakeservers import ThinkingServer  # noqa: E402

from econarena.agents.providers import ALL_EFFORTS  # noqa: E402
from econarena.analysis import cells  # noqa: E402
from econarena.formats.numbers import plain  # noqa: E402
from econarena.formats.tally import Tally  # noqa: E402

ECONARENA = str(Path(sys.executable).with_name("econarena"))
SESSIONS, RUNS = 5, 1  # 5 runs a cell: the ratio 100 * 5 / (5 * 33.333333333333336) is 2.9999999999999996
EFFORTS = ["high", "none", "minimal", "low"]  # declared out of order, and not alphabetical either
NATURAL = ["none", "minimal", "low", "high"]


@pytest.fixture(scope="module")
def efforts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    srv = ThinkingServer().start()
    try:
        root = tmp_path_factory.mktemp("efforts")
        doc = {"experiment": {"name": "bc-efforts", "game": "beauty_contest", "environment": "melee",
                              "sessions": SESSIONS, "runs": RUNS, "seed": 3},
               "game": {"upper_bound": 100, "prize": 100}, "llm": {"max_tokens": 2048},
               "players": [{"agent": "openai", "label": "Reasoner", "model": "fake-reasoner",
                            "base_url": f"{srv.url}/v1"},
                           {"agent": "rational"}, {"agent": "level_k", "label": "level-1", "k": 1}],
               "grid": {"llm": {"reasoning_effort": EFFORTS}}}
        (root / "bc.toml").write_text(to_toml(doc), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        r = subprocess.run([ECONARENA, "run", str(root / "bc.toml"), "--out", str(root / "run"), "--no-cache",
                            "--quiet"], env=env, capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    finally:
        srv.stop()
    return root / "run"


def _table(stdout: str) -> dict[str, list[str]]:
    """The summary table's rows by label (the label column is padded; numbers are the last 8 columns)."""
    lines = stdout[stdout.index("label "):].splitlines()
    rows = {}
    for line in lines[2:]:
        if line.startswith("complete runs"):
            break
        parts = line.split()
        rows[" ".join(parts[:-8])] = parts[-8:]
    return rows


def test_summary_lists_efforts_in_natural_order_and_pools_the_baselines(efforts: Path) -> None:
    r = cli("summary", str(efforts))
    assert r.returncode == 0, r.stderr
    rows = _table(r.stdout)
    assert list(rows) == [*(f"Reasoner [reasoning_effort={e}]" for e in NATURAL),
                          "level-1 (pooled over cells)", "rational (pooled over cells)"]
    # runs, payoff, NE payoff, ratio, deviation, win rate, rule breaks %, converged at; by hand: 5 x 1 runs per
    # cell; prize 100 shared 3 ways at the equilibrium (33.33); the model's answer / 100 is its deviation; it
    # wins only at high (10 is nearest 2/3 of the mean 14.44), level-1 (100/3) wins the other three cells
    for effort, dev in zip(NATURAL, ("0.700", "0.600", "0.500", "0.100")):
        won = effort == "high"
        assert rows[f"Reasoner [reasoning_effort={effort}]"][:6] == [
            "5", "100.00" if won else "0.00", "33.33", "3.000" if won else "0.000", dev, "1.000" if won else "0.000"]
    assert rows["level-1 (pooled over cells)"][:6] == ["20", "75.00", "33.33", "2.250", "0.333", "0.750"]
    assert rows["rational (pooled over cells)"][:6] == ["20", "0.00", "33.33", "0.000", "0.000", "0.000"]
    assert "pooled over cells: a baseline plays alike in every reasoning_effort cell" in r.stdout
    assert "level-1 [" not in r.stdout and "rational [" not in r.stdout


def test_summary_json_is_in_natural_order_streamed_or_read_back(efforts: Path) -> None:
    from econarena.analysis.metrics import summarize

    streamed = json.loads((efforts / "summary.json").read_text(encoding="utf-8"))  # counted as `run` wrote
    read = summarize(efforts)  # counted from the files
    assert streamed["labels"] == read["labels"] and list(streamed["labels"]) == list(read["labels"])
    labels = read["labels"]
    assert list(labels) == [*(f"Reasoner [reasoning_effort={e}]" for e in NATURAL), "level-1", "rational"]
    for name in ("level-1", "rational"):
        assert labels[name]["pooled_over"] == ["reasoning_effort"] and labels[name]["pooled_cells"] == 4
        assert labels[name]["player_runs"] == 20 and labels[name]["decisions"] == 20  # one move per run
    assert "pooled_over" not in labels["Reasoner [reasoning_effort=high]"]
    assert labels["level-1"]["win_rate"] == 0.75 and labels["level-1"]["mean_payoff"] == 75.0
    assert labels["level-1"]["mean_deviation"] == pytest.approx(1 / 3)
    assert list(labels["level-1"]["deviation_by_run"]) == ["0"]
    head = (efforts / "summary.csv").read_text(encoding="utf-8").splitlines()
    assert [line.split(",")[0] for line in head[1:]] == list(labels)
    columns = head[0].split(",")
    level = head[1 + list(labels).index("level-1")].split(",")
    assert (level[columns.index("pooled_over")], level[columns.index("pooled_cells")]) == ("reasoning_effort", "4")


def test_summary_findings_never_split_a_baseline_by_an_llm_factor(efforts: Path) -> None:
    r = cli("summary", str(efforts))
    text = r.stdout[:r.stdout.index("label ")]
    flat = " ".join(text.split())
    assert "[pooled over reasoning_effort] Closest to the equilibrium: rational (mean deviation 0.000); " \
           "furthest: level-1 (0.333)." in flat
    assert "level-1 across" not in flat and "rational across" not in flat  # no baseline set against its copies
    firsts = [flat.index(f"[reasoning_effort={e}]") for e in NATURAL]
    assert firsts == sorted(firsts)  # the cells' sentences in natural order
    assert ("Reasoner across its cells, mean deviation: reasoning_effort=none: 0.700; reasoning_effort=minimal: "
            "0.600; reasoning_effort=low: 0.500; reasoning_effort=high: 0.100.") in flat


def test_reasoning_csv_lists_efforts_in_natural_order_without_float_noise(efforts: Path, tmp_path: Path) -> None:
    from econarena.analysis.load import study
    from econarena.analysis.reasoning import reasoning_csv, reasoning_table

    store, _ = study(efforts)
    try:
        table = reasoning_table(store)
    finally:
        store.close()
    text = reasoning_csv(table, tmp_path / "reasoning.csv")
    assert (tmp_path / "reasoning.csv").read_text(encoding="utf-8") == text
    head, *rows = [line.split(",") for line in text.splitlines()]
    got = {row[head.index("effort")]: row for row in rows}
    assert list(got) == NATURAL
    # the ratio at high, by hand: 100 per run over the equilibrium's 100/3 (33.333333333333336 as a float:
    # 500 / 166.66666666666669 prints 2.9999999999999996): 3
    assert got["high"][head.index("payoff ratio")] == "3.0"
    assert [got[e][head.index("deviation from NE")] for e in NATURAL] == ["0.7", "0.6", "0.5", "0.1"]
    assert [got[e][head.index("reasoning tokens / decision")] for e in NATURAL] == ["0.0", "5.0", "10.0", "90.0"]


def test_a_baseline_is_pooled_over_llm_factors_only_and_cells_keep_their_order() -> None:
    """Records by hand: a game factor ratio declared [10, 2] (by value: 2 first) and an llm factor
    temperature [1, 0] (numbers: 0 first); the baseline B keeps ratio and pools temperature."""
    found = cells.factors({"grid": {"game": {"ratio": [10, 2]}, "llm": {"temperature": [1, 0]}}})
    tally = Tally()
    payoff = {("10", "1"): 1.0, ("10", "0"): 2.0, ("2", "1"): 4.0, ("2", "0"): 8.0}
    for (ratio, temp), p in payoff.items():
        lineup = f"melee [ratio={ratio},temperature={temp}]"
        for session in (0, 1):
            tally.run({"lineup": lineup, "session": session, "run": 0, "labels": ["R", "B"],
                       "agents": ["openai", "random"], "cell": {"game.ratio": int(ratio), "llm.temperature": int(temp)},
                       "payoffs": [p, 10 * p + session], "ne_payoffs": [1.0, 1.0], "valid": [True, True],
                       "deviation": [0.5, 0.25 * session], "winners": [1]})
            for label in ("R", "B"):
                tally.decision({"lineup": lineup, "session": session, "run": 0, "label": label, "tokens_in": 3})
    labels = tally.summary("d", found=found)["labels"]
    assert list(labels) == ["B [ratio=2]", "B [ratio=10]", "R [ratio=2,temperature=0]", "R [ratio=2,temperature=1]",
                            "R [ratio=10,temperature=0]", "R [ratio=10,temperature=1]"]
    b2, b10 = labels["B [ratio=2]"], labels["B [ratio=10]"]
    # B at ratio=2: 40 + 0, 40 + 1 (temperature 1), 80 + 0, 80 + 1 (temperature 0): mean 60.5
    assert (b2["player_runs"], b2["mean_payoff"], b2["mean_deviation"]) == (4, 60.5, 0.125)
    assert (b10["mean_payoff"], b10["win_rate"], b10["decisions"], b10["tokens_in"]) == (15.5, 1.0, 4, 12)
    assert (b2["pooled_over"], b2["pooled_cells"]) == (["temperature"], 2)
    r = labels["R [ratio=2,temperature=0]"]
    assert (r["player_runs"], r["mean_payoff"], r["decisions"]) == (2, 8.0, 2) and "pooled_over" not in r


def test_a_grid_without_llm_factors_lists_numbers_by_value_and_the_rest_as_declared(tmp_path: Path) -> None:
    from econarena.analysis.metrics import summarize

    doc = {"experiment": {"name": "bc-order", "game": "beauty_contest", "sessions": 1, "runs": 1, "seed": 2},
           "players": [{"agent": "random", "label": "X"}, {"agent": "rational", "label": "Y"}],
           "grid": {"game": {"upper_bound": [100, 20, 5]}, "experiment": {"history": ["none", "actions"]}}}
    run_experiment(doc, tmp_path / "run")
    cells_in_order = [f"upper_bound={u},history={h}" for u in (5, 20, 100) for h in ("none", "actions")]
    labels = list(summarize(tmp_path / "run")["labels"])
    assert labels == [f"{who} [{c}]" for who in ("X", "Y") for c in cells_in_order]
    r = cli("summary", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    assert list(_table(r.stdout)) == labels
    assert len(read_jsonl(tmp_path / "run" / "runs.jsonl")) == 6


def test_efforts_run_from_none_to_xhigh_as_the_providers_name_them() -> None:
    assert list(cells.EFFORTS[:6]) == ["none", "minimal", "low", "medium", "high", "xhigh"]
    assert [e for e in cells.EFFORTS if e in ALL_EFFORTS] == list(ALL_EFFORTS)  # the accepted names, same order
    f = cells.Factor("llm", "reasoning_effort", ("high", "minimal", "none", "low"))
    assert f.natural() == ["none", "minimal", "low", "high"]
    assert f.positions() == {"none": 0.0, "minimal": 1.0, "low": 2.0, "high": 3.0}


def test_plain_drops_float_noise_and_keeps_the_number() -> None:
    noisy = math.fsum([0.42] * 10 + [0.467] * 10) / 20  # the mean of a reasoning.csv row: 0.4435 by hand
    assert repr(noisy) != "0.4435" and repr(plain(noisy)) == "0.4435"
    assert repr(plain(0.7499999999999999)) == "0.75" and repr(plain(1.0499999999999998)) == "1.05"
    assert plain(0.1) == 0.1 and plain(123456.789) == 123456.789 and plain(2.5e-07) == 2.5e-07
    assert plain(1 / 3) == 0.333333333333 and plain(0.0) == 0.0 and plain(-0.75) == -0.75
    assert math.isnan(plain(math.nan)) and plain(math.inf) == math.inf
