"""Divide the Dollar (GAMA-Bench game 3): rules, the score by hand (clip once per run), importer, a CLI run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from econarena.games import get_game

sys.path.insert(0, str(Path(__file__).parent))
from rounds_helper import play_rounds  # noqa: E402

from econarena.games.base import Setup
from econarena.games.gamabench.divide_dollar import DollarParams, dollar_score

GAME = get_game("divide_dollar")


def _play(bids_per_round: list[list[int | None]], **params):
    params_ = DollarParams(rounds=len(bids_per_round), **params)
    return play_rounds(GAME, params_, "bid_amount", bids_per_round)


def test_payoffs() -> None:
    # G = 100: 30 + 30 + 40 = 100 is paid; 50 + 30 + 40 = 120 voids the round; a rule breaker claims nothing
    _, state, log = _play([[30, 30, 40], [50, 30, 40], [None, 50, 30]])
    assert state.payoffs == ((30.0, 30.0, 40.0), (0.0, 0.0, 0.0), (0.0, 50.0, 30.0))
    assert [e["events"]["total"] for e in log] == [100, 120, 80]
    assert GAME.outcome(state).payoffs == (30.0, 80.0, 70.0)


def test_score_by_hand() -> None:
    # sums 90, 110, 100 -> distances 10, 10, 0 -> S = 20/3 -> (100 - 6.667) / 100 x 100 = 93.33
    setup, _, log = _play([[45, 45], [55, 55], [50, 50]])
    assert GAME.score(setup, log) == pytest.approx(100 - 20 / 3)


def test_clip_once_per_run_not_per_round() -> None:
    # sums 250, 100, 100 -> distances 150, 0, 0 -> S = 50 -> score 50
    # clipping each round first would give (max(0, -50) + 100 + 100) / 3 = 66.67: not the reference
    setup, _, log = _play([[125, 125], [50, 50], [50, 50]])
    assert GAME.score(setup, log) == pytest.approx(50.0)
    # sums 400, 100 -> S = 150 -> (100 - 150) / 100 = -50 -> clipped once to 0 (per round would give 50)
    setup, _, log = _play([[200, 200], [50, 50]])
    assert GAME.score(setup, log) == 0.0


def test_rule_breakers_never_flatter() -> None:
    # valid bids 50 + 50 = 100 (distance 0) but one seat broke a rule: the round counts distance max(0, 100) = 100
    setup, _, log = _play([[None, 50, 50], [34, 33, 33]])
    assert GAME.score(setup, log) == pytest.approx(50.0)  # S = (100 + 0) / 2 = 50
    assert dollar_score([([50, 50], 1, 3)], 100) == 0.0
    assert dollar_score([([150, 50], 1, 3)], 100) == 0.0  # distance 100 already: max(100, 100)


def test_any_whole_number_bid_is_legal_and_huge_bids_do_not_overflow() -> None:
    setup = GAME.setup(DollarParams(), 3, np.random.default_rng(0))
    state = GAME.initial_state(setup)
    assert GAME.judge(state, 0, '{"bid_amount": 187}').action == {"bid_amount": 187}  # no upper rule
    assert GAME.judge(state, 0, '{"bid_amount": -1}').violation == "rule_violation"
    assert GAME.judge(state, 0, '{"bid_amount": 2.5}').violation == "schema_error"
    huge = GAME.judge(state, 0, '{"bid_amount": 1e308}').action["bid_amount"]
    setup, state, log = _play([[huge, huge, 1], [huge, huge, None]])
    assert GAME.score(setup, log) == 0.0
    out = GAME.outcome(state)
    assert out.payoffs == (0.0, 0.0, 0.0) and out.actions[0] == pytest.approx(1e308)
    json.dumps(log, allow_nan=False)


def test_equilibrium_even_split_and_baselines() -> None:
    setup = GAME.setup(DollarParams(rounds=4), 3, np.random.default_rng(0))
    ne = GAME.equilibrium(setup)
    assert ne is not None and ne.actions == (34.0, 33.0, 33.0) and ne.payoffs == (136.0, 132.0, 132.0)
    state = GAME.initial_state(setup)
    assert [GAME.strategy(state, i, "rational") for i in range(3)] == [{"bid_amount": b} for b in (34, 33, 33)]
    rng = np.random.default_rng(1)
    assert all(0 <= GAME.strategy(state, 0, "random", rng)["bid_amount"] <= 100 for _ in range(200))
    _, end, _ = _play([[40, 33, 33]] * 4)  # seat 0 bids 6 over its equilibrium share: sum 106 voids every round
    assert GAME.deviation(setup, GAME.outcome(end), ne, 0) == pytest.approx(0.06)
    with pytest.raises(ValidationError):
        DollarParams(golds=0)
    with pytest.raises(ValidationError):
        DollarParams(rounds=10**12)


def test_from_reference_uses_records_not_the_shuffled_responses() -> None:
    raw = {"meta": {"player_num": 2, "golds": 100, "round_id": 2, "version": "v1"},
           "round_records": [{"responses": [70, 20], "total_proposal": 90},  # shuffled in place by the reference
                             {"responses": [60, 50], "total_proposal": 110}],
           "player_data": [{"records": [20, 60], "utility": [20, 0], "prompt": []},
                           {"records": [70, 50], "utility": [70, 0], "prompt": []}]}
    imp = GAME.from_reference(raw)
    assert [a["bid_amount"] for a in imp.round_log[0]["actions"]] == [20, 70]
    assert imp.payoffs == [20.0, 70.0] and imp.params == {"golds": 100, "rounds": 2}
    # distances 10, 10 -> S = 10 -> 90
    assert GAME.score(Setup(2, imp.params), imp.round_log) == pytest.approx(90.0)
    raw["meta"].pop("golds")  # missing: the reference default, 100
    assert GAME.from_reference(raw).params["golds"] == 100
    with pytest.raises(ValueError, match="whole number"):
        GAME.from_reference({**raw, "player_data": [{"records": [20, "lots"]}, raw["player_data"][1]]})


def test_cli_run(arena, tmp_path) -> None:
    doc = arena.experiment_dict("divide_dollar", [
        {"agent": "rational"}, {"agent": "random", "count": 2},
        {"agent": "scripted", "label": "S", "responses": ['{"bid_amount": 25}', '{"bid_amount": -3}', "{}"]}],
        {"rounds": 3}, sessions=2, runs=1, seed=3)
    toml = tmp_path / "dollar.toml"
    toml.write_text(arena.to_toml(doc))
    proc = arena.cli("run", str(toml), "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "complete, 2/2 runs" in proc.stdout
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 2
    for r in runs:
        assert r["rounds"] == 3 and r["valid"] == [True, True, True, False]
        assert r["ne_actions"] == [25.0] * 4 and r["actions"][0] == 25.0
        assert r["score"] == GAME.score(Setup(4, r["params"]), r["round_log"])
        assert r["round_log"][0]["events"]["total"] == sum(a["bid_amount"] for a in r["round_log"][0]["actions"])
    scripted = [d for d in arena.sorted_decisions(tmp_path / "out") if d["label"] == "S" and d["session"] == 1]
    assert [d["violation"] for d in scripted] == [None, "rule_violation", "parse_error"]
    assert "Result of round 1: the bids came to" in scripted[1]["messages"][0]["content"]
    assert "You bid nothing valid and received 0 golds." in scripted[2]["messages"][0]["content"]
