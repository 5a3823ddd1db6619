"""summary.json on small scripted experiments, against numbers worked out by hand."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from econarena.analysis.metrics import summarize, write_summary
from econarena.cli import main


def run_and_summarize(tmp_path: Path, arena, doc: dict) -> dict:
    arena.run_experiment(doc, tmp_path)
    summary = write_summary(tmp_path)
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(json.dumps(summary))
    return summary


def test_second_price_summary(tmp_path: Path, arena) -> None:
    # values 60, 45, 30; assets 100; entrance fee 10. NE: seat 0 wins paying 45 -> NE assets 115, 100, 100.
    # run 0: bids [-, 40, 30]: seat 1 pays 30 -> 90 (fee), 115, 100; deviations 25/115=5/23, 0.15, 0
    # run 1: bids [90, -, 30]: seat 0 pays 30 -> 130, 90 (fee), 100; deviations 15/115=3/23, 0.10, 0
    # run 2: bids [60, 45, 30]: seat 0 pays 45 -> 115, 100, 100;      deviations 0, 0, 0
    doc = arena.experiment_dict(
        "second_price_auction",
        [{"agent": "scripted", "label": "S1", "responses": ["garbage", '{"bid": 90}', '{"bid": 60}']},
         {"agent": "scripted", "label": "S2", "responses": ['{"bid": 40}', '{"bid": "80"}', '{"bid": 45}']},
         {"agent": "rational", "label": "R"}],
        {"private_value": [60, 45, 30], "assets": 100, "entrance_fee": 10}, runs=3)
    s = run_and_summarize(tmp_path, arena, doc)
    assert s["runs_complete"] == 3 and s["runs_incomplete"] == 0
    s1, s2, r = s["labels"]["S1"], s["labels"]["S2"], s["labels"]["R"]

    # S1: game payoffs 90 (rule break), 130, 115; a rule break scores 0 -> scored 0, 130, 115: mean 245/3;
    # NE 115; ratio 245/345 = 49/69. Deviation only where valid: (3/23 + 0) / 2 = 3/46
    assert s1["player_runs"] == 3 and s1["decisions"] == 3
    assert s1["mean_payoff"] == pytest.approx(245 / 3)
    assert s1["mean_ne_payoff"] == pytest.approx(115.0)
    assert s1["payoff_ratio"] == pytest.approx(49 / 69)
    assert s1["mean_deviation"] == pytest.approx(3 / 46)
    assert s1["win_rate"] == pytest.approx(2 / 3)
    assert s1["rule_break_rate_pct"] == pytest.approx(33.333333333333336)
    assert s1["violations"] == {"parse_error": 1, "schema_error": 0, "rule_violation": 0}
    assert s1["deviation_by_run"] == {"0": None, "1": pytest.approx(3 / 23), "2": 0.0}
    assert s1["converged_at_run"] == 2

    # S2: game payoffs 115, 90 (rule break), 100 -> scored 115, 0, 100: mean 215/3; NE 100; ratio 43/60;
    # deviations 0.15, -, 0 -> 0.075
    assert s2["mean_payoff"] == pytest.approx(215 / 3)
    assert s2["payoff_ratio"] == pytest.approx(43 / 60)
    assert s2["mean_deviation"] == pytest.approx(0.075)
    assert s2["win_rate"] == pytest.approx(1 / 3)
    assert s2["rule_break_rate_pct"] == pytest.approx(33.333333333333336)
    assert s2["violations"] == {"parse_error": 0, "schema_error": 1, "rule_violation": 0}
    assert s2["deviation_by_run"] == {"0": pytest.approx(0.15), "1": None, "2": 0.0}
    assert s2["converged_at_run"] == 2

    # R: always 100 = NE
    assert (r["mean_payoff"], r["payoff_ratio"], r["mean_deviation"], r["win_rate"], r["rule_break_rate_pct"],
            r["converged_at_run"]) == (100.0, 1.0, 0.0, 0.0, 0.0, 0)

    rows = list(csv.DictReader(io.StringIO((tmp_path / "summary.csv").read_text())))
    by_label = {row["label"]: row for row in rows}
    assert set(by_label) == {"S1", "S2", "R"}
    assert float(by_label["S1"]["payoff_ratio"]) == pytest.approx(49 / 69)
    assert by_label["S2"]["deviation_run_1"] == "" and float(by_label["S2"]["deviation_run_0"]) == pytest.approx(0.15)
    assert by_label["S1"]["parse_error"] == "1"


def test_beauty_contest_summary(tmp_path: Path, arena) -> None:
    # upper 10, prize 100, S + two rational players (answer 0). NE payoff 100/3 each.
    # run 0: [5, 0, 0]: mean 5/3, target 10/9; the zeros (distance 10/9) share 100 -> 0, 50, 50.
    #        deviations |5 - 0|/10 = 0.5, 0, 0
    # run 1: [11 (outside the range), 0, 0]: only the zeros are valid, target 0 -> 0, 50, 50; S: no deviation
    doc = arena.experiment_dict(
        "beauty_contest",
        [{"agent": "scripted", "label": "S", "responses": ['{"answer": 5}', '{"answer": 11}']},
         {"agent": "rational", "count": 2}], {"upper_bound": 10}, runs=2)
    s = run_and_summarize(tmp_path, arena, doc)
    S, R = s["labels"]["S"], s["labels"]["rational"]
    assert S["mean_payoff"] == 0.0
    assert S["mean_ne_payoff"] == pytest.approx(33.333333333333336)
    assert S["payoff_ratio"] == 0.0
    assert S["mean_deviation"] == pytest.approx(0.5)  # the invalid run has no deviation
    assert S["deviation_by_run"] == {"0": 0.5, "1": None}
    assert S["converged_at_run"] is None
    assert S["win_rate"] == 0.0
    assert S["rule_break_rate_pct"] == pytest.approx(50.0)
    assert S["violations"]["rule_violation"] == 1
    assert R["player_runs"] == 4 and R["decisions"] == 4
    assert R["mean_payoff"] == pytest.approx(50.0)
    assert R["payoff_ratio"] == pytest.approx(1.5)  # 50 / (100/3)
    assert R["win_rate"] == 1.0  # a shared prize counts as a win
    assert R["converged_at_run"] == 0


def test_summary_uses_complete_runs_only(tmp_path: Path) -> None:
    base = {"lineup": "melee", "session": 0, "labels": ["A", "B"], "valid": [True, True], "winners": [0],
            "ne_payoffs": [10.0, 10.0], "deviation": [0.5, 0.25]}
    runs = [
        {**base, "run": 0, "complete": True, "payoffs": [20.0, 0.0]},
        {**base, "run": 1, "complete": True, "payoffs": [10.0, 4.0], "valid": [True, False], "winners": [1],
         "deviation": [0.0, 0.75]},
        {"lineup": "melee", "session": 0, "run": 2, "complete": False, "labels": ["A", "B"], "error": "x"},
    ]
    decisions = [{"lineup": "melee", "session": 0, "run": k, "round": 0, "player": p, "label": "AB"[p],
                  "violation": "parse_error" if (k, p) == (1, 1) else None, "latency_s": 0.5, "tokens_in": 7,
                  "tokens_out": 3, "cached": p == 0} for k in range(3) for p in range(2)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    (tmp_path / "decisions.jsonl").write_text("".join(json.dumps(d) + "\n" for d in decisions))
    s = summarize(tmp_path)
    assert s["runs_complete"] == 2 and s["runs_incomplete"] == 1
    a, b = s["labels"]["A"], s["labels"]["B"]
    # A: payoffs 20, 10 -> 15; NE 10 -> ratio 1.5; deviations 0.5, 0 -> 0.25; wins 1 of 2
    assert (a["mean_payoff"], a["payoff_ratio"], a["mean_deviation"], a["win_rate"]) == (15.0, 1.5, 0.25, 0.5)
    assert a["decisions"] == 2 and a["tokens_in"] == 14 and a["tokens_out"] == 6 and a["cached_decisions"] == 2
    # B: payoffs 0, 4, but run 1 broke a rule: scored 0, 0 -> 0; ratio 0; deviation only run 0's 0.25
    assert (b["mean_payoff"], b["payoff_ratio"], b["mean_deviation"], b["rule_break_rate_pct"]) == (0.0, 0.0, 0.25,
                                                                                                  50.0)
    assert b["violations_per_decision_pct"] == 50.0
    assert b["deviation_by_run"] == {"0": 0.25, "1": None} and b["converged_at_run"] is None
    assert b["mean_latency_s"] == 0.5


def test_summary_command_recomputes_from_the_directory(tmp_path: Path, arena, capsys) -> None:
    doc = arena.experiment_dict("beauty_contest", [{"agent": "rational", "count": 3}], {"upper_bound": 10})
    arena.run_experiment(doc, tmp_path)
    assert not (tmp_path / "summary.json").exists()  # the Host writes records; summaries come from them
    assert main(["summary", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(ln for ln in lines if ln.split()[:1] == ["rational"])  # the table's row, not a sentence on it
    # label, runs, payoff, NE payoff, ratio, deviation, win rate, rule breaks %, converged at
    assert row.split() == ["rational", "3", "33.33", "33.33", "1.000", "0.000", "1.000", "0.0", "0"]
