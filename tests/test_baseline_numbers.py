"""Summaries of experiments played by baselines (no prompt, no text round trip: ``Host._decide_direct``)
against numbers worked out by hand: payoff ratio, deviation, win rate, rule breaks, convergence, scores.
Each summary is checked twice: as counted while the run wrote (``RunDirectory.tally``) and re-read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from econarena.agents.llm import RuntimeOptions
from econarena.analysis.metrics import summarize, write_summary
from econarena.hosts.config import parse_experiment
from econarena.hosts.host import Host, HostOptions


def _summary(tmp_path: Path, game: str, players: list[dict[str, Any]], params: dict[str, Any],
             **experiment: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    doc = {"experiment": {"name": "t", "game": game, **experiment}, "game": params, "players": players}
    host = Host(parse_experiment(doc, "t.toml"), tmp_path, HostOptions(concurrency=2, quiet=True,
                                                                      runtime=RuntimeOptions(cache=False)))
    asyncio.run(host.run())
    assert host.dir.tally is not None
    streamed = write_summary(tmp_path, host.dir.tally)
    assert streamed == summarize(tmp_path)  # the same numbers read back from the logs
    decisions = [json.loads(x) for x in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    return streamed, decisions


def test_beauty_contest_level_k_and_rational_by_hand(tmp_path: Path) -> None:
    # upper 100, ratio 2/3, prize 100, 4 seats: NE payoff 25 each. Level k answers 50 (2/3)^k.
    # run 0: [0, 100/3, 200/9, 150 (out of range)]: mean of the valid (500/9)/3 = 18.52, target 12.35:
    #        distances 12.35, 20.99, 9.88 -> L2 wins 100.
    # run 1: [0, 100/3, 200/9, 10]: mean 16.39, target 10.93: distances 10.93, 22.41, 11.30, 0.93 -> S wins.
    s, decisions = _summary(tmp_path, "beauty_contest",
                            [{"agent": "rational"}, {"agent": "level_k", "label": "L1", "k": 1},
                             {"agent": "level_k", "label": "L2", "k": 2},
                             {"agent": "scripted", "label": "S", "responses": ['{"answer": 150}', '{"answer": 10}']}],
                            {"upper_bound": 100, "prize": 100}, runs=2, seed=5)
    assert all(d["messages"] is None for d in decisions if d["label"] != "S")  # baselines read no prompt
    assert all(d["messages"] for d in decisions if d["label"] == "S")
    r, l1, l2, sc = (s["labels"][k] for k in ("rational", "L1", "L2", "S"))
    assert (r["mean_payoff"], r["mean_ne_payoff"], r["payoff_ratio"], r["mean_deviation"], r["win_rate"],
            r["rule_break_rate_pct"], r["converged_at_run"], r["decisions"]) == (0.0, 25.0, 0.0, 0.0, 0.0, 0.0, 0, 2)
    assert (l1["mean_payoff"], l1["win_rate"], l1["converged_at_run"]) == (0.0, 0.0, None)
    assert l1["mean_deviation"] == pytest.approx(1 / 3) and l1["deviation_by_run"] == {"0": pytest.approx(1 / 3),
                                                                                     "1": pytest.approx(1 / 3)}
    assert (l2["mean_payoff"], l2["payoff_ratio"], l2["win_rate"]) == (50.0, 2.0, 0.5)
    assert l2["mean_deviation"] == pytest.approx(2 / 9)
    # S: run 0 broke a rule (scored 0), won run 1: mean 50; a deviation only where valid: 10/100
    assert (sc["mean_payoff"], sc["payoff_ratio"], sc["win_rate"], sc["rule_break_rate_pct"]) == (50.0, 2.0, 0.5, 50.0)
    assert sc["deviation_by_run"] == {"0": None, "1": pytest.approx(0.1)} and sc["mean_deviation"] == pytest.approx(0.1)
    assert sc["violations"] == {"parse_error": 0, "schema_error": 0, "rule_violation": 1}
    assert sc["violations_per_decision_pct"] == 50.0
    assert all(v["score"] is None for v in s["labels"].values())  # the beauty contest has no 0-100 score


def test_prisoners_dilemma_rational_against_tit_for_tat_by_hand(tmp_path: Path) -> None:
    # K = 3, T R P S = 5 3 1 0. rational: D D D; tit for tat: C, then the other's last move: D D.
    # payoffs: rational T + P + P = 7, tit for tat S + P + P = 2; NE P K = 3 each.
    # deviation = cooperation rate: 0 and 1/3.
    s, decisions = _summary(tmp_path, "prisoners_dilemma",
                            [{"agent": "rational"}, {"agent": "policy", "policy": "tit_for_tat", "label": "tft"}],
                            {"rounds": 3}, runs=2, sessions=2, seed=1)
    assert len(decisions) == 2 * 2 * 2 * 3 and all(d["messages"] is None for d in decisions)
    r, t = s["labels"]["rational"], s["labels"]["tft"]
    assert (r["player_runs"], r["decisions"], r["mean_payoff"], r["mean_ne_payoff"], r["mean_deviation"],
            r["win_rate"], r["converged_at_run"]) == (4, 12, 7.0, 3.0, 0.0, 1.0, 0)
    assert r["payoff_ratio"] == pytest.approx(7 / 3)
    assert (t["mean_payoff"], t["win_rate"], t["rule_break_rate_pct"], t["converged_at_run"]) == (2.0, 0.0, 0.0, None)
    assert t["payoff_ratio"] == pytest.approx(2 / 3) and t["mean_deviation"] == pytest.approx(1 / 3)
    assert t["deviation_by_run"] == {"0": pytest.approx(1 / 3), "1": pytest.approx(1 / 3)}


def test_guessing_game_level_k_score_by_hand(tmp_path: Path) -> None:
    # GAMA-Bench Guess 2/3, 2 rounds, min 0 max 100. Round 1: rational 0, L1 33, L2 22 (level 0 = 50):
    # mean 55/3, target 12.22 -> L2 (9.78 away) wins. Round 2 anchors level 0 on that mean, 18.33 -> 18:
    # L1 12, L2 8, rational 0: mean 20/3, target 4.44 -> L2 (3.56 away) wins again.
    # Score: A = (55/3 + 20/3) / 2 = 12.5 -> (100 - 12.5) / 100 x 100 = 87.5, the same in every run (std 0).
    # NE payoff: a point per round, 2. Deviation |mean number - 0| / 100: 0, 22.5/100, 15/100.
    s, _ = _summary(tmp_path, "guessing_game",
                    [{"agent": "rational"}, {"agent": "level_k", "label": "L1", "k": 1},
                     {"agent": "level_k", "label": "L2", "k": 2}], {"rounds": 2}, runs=2, seed=3)
    r, l1, l2 = (s["labels"][k] for k in ("rational", "L1", "L2"))
    for v in (r, l1, l2):
        assert (v["score"], v["score_std"], v["mean_ne_payoff"], v["player_runs"], v["decisions"]) == (
            87.5, 0.0, 2.0, 2, 4)
    assert (l2["mean_payoff"], l2["payoff_ratio"], l2["win_rate"]) == (2.0, 1.0, 1.0)
    assert (r["mean_payoff"], r["payoff_ratio"], r["mean_deviation"], r["converged_at_run"]) == (0.0, 0.0, 0.0, 0)
    assert l1["mean_deviation"] == pytest.approx(0.225) and l2["mean_deviation"] == pytest.approx(0.15)
    assert l1["converged_at_run"] is None


def test_english_auction_baselines_by_hand(tmp_path: Path) -> None:
    # values 60, 45, 30, assets 100, clock 0, 5, 10, ...: rational and level-k stay while price < value.
    # The 30 drops at 30, the 45 at 45: the 60 wins at 45 -> final assets 115, 100, 100, the equilibrium's.
    s, decisions = _summary(tmp_path, "english_auction",
                            [{"agent": "rational"}, {"agent": "level_k", "label": "L", "k": 3},
                             {"agent": "rational", "label": "R2"}],
                            {"private_value": [60, 45, 30], "assets": 100, "increment": 5}, runs=1, seed=2)
    assert (s["labels"]["rational"]["mean_payoff"], s["labels"]["L"]["mean_payoff"],
            s["labels"]["R2"]["mean_payoff"]) == (115.0, 100.0, 100.0)
    for v in s["labels"].values():
        assert (v["payoff_ratio"], v["mean_deviation"], v["rule_break_rate_pct"]) == (1.0, 0.0, 0.0)
    assert s["labels"]["rational"]["win_rate"] == 1.0 and s["labels"]["L"]["win_rate"] == 0.0
    assert len(decisions) < 3 * 10  # the clock jumped over the rounds in which everyone stays


def test_sealed_bid_level_k_score_by_hand(tmp_path: Path) -> None:
    # GAMA-Bench first-price sealed bid, one round, four seats, the reference's draw (valuation seed 42):
    # valuations 200, 30, 0, 80. With min 0, rational and level 1 both bid floor(3/4 v): 150, 22, 0, 60.
    # The 150 wins and pays it: utilities 50, 0, 0, 0. Score: mean of max(0, (v - b) / v') x 100 (v' = 1 when
    # v = 0): (50/200 + 8/30 + 0 + 20/80) / 4 x 100 = 19.1666... First price declares no equilibrium.
    s, decisions = _summary(tmp_path, "sealed_bid_auction",
                            [{"agent": "rational"}, {"agent": "level_k", "label": "L1", "k": 1, "count": 3}],
                            {"rounds": 1}, runs=1, seed=4)
    assert [d["action"] for d in sorted(decisions, key=lambda d: d["player"])] == [150, 22, 0, 60]
    r, l1 = s["labels"]["rational"], s["labels"]["L1"]
    want = (0.25 + 8 / 30 + 0 + 0.25) / 4 * 100
    assert r["score"] == pytest.approx(want) and l1["score"] == pytest.approx(want)
    assert (r["player_runs"], r["mean_payoff"], r["win_rate"], r["score_std"]) == (1, 50.0, 1.0, None)
    assert (l1["player_runs"], l1["mean_payoff"], l1["win_rate"], l1["decisions"]) == (3, 0.0, 0.0, 3)
    assert (r["mean_ne_payoff"], r["payoff_ratio"], r["mean_deviation"]) == (None, None, None)
