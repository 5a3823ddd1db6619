"""Public Goods (GAMA-Bench game 4): rules, the score by hand, out-of-range imports, a CLI run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from econarena.games import get_game

sys.path.insert(0, str(Path(__file__).parent))
from rounds_helper import play_rounds  # noqa: E402

from econarena.games.base import Setup
from econarena.games.gamabench.public_goods import GoodsParams, goods_score

GAME = get_game("public_goods")


def _play(contribs_per_round: list[list[int | None]], **params):
    params_ = GoodsParams(rounds=len(contribs_per_round), **params)
    return play_rounds(GAME, params_, "tokens_contributed", contribs_per_round)


def test_payoffs_reset_every_round() -> None:
    # T = 20, R = 2, N = 4: pot 0 + 10 + 20 = 30, each part 2 x 30 / 4 = 15
    # payoffs 20 - 0 + 15 = 35, 20 - 10 + 15 = 25, 20 - 20 + 15 = 15, the rule breaker forfeits: 0
    _, state, log = _play([[0, 10, 20, None], [0, 0, 0, 0]])
    assert state.payoffs[0] == (35.0, 25.0, 15.0, 0.0)
    assert state.payoffs[1] == (20.0,) * 4  # holdings reset: nothing carries over
    assert log[0]["events"]["pot"] == 30 and log[0]["events"]["share"] == 15.0
    assert log[0]["events"]["mean_contribution"] == 7.5


def test_score_by_hand() -> None:
    # T = 20, N = 2: round means (0 + 10) / 2 = 5 and (20 + 20) / 2 = 20 -> S = 12.5 -> (20 - 12.5) / 20 = 37.5
    setup, _, log = _play([[0, 10], [20, 20]])
    assert GAME.score(setup, log) == pytest.approx(37.5)


def test_rule_breakers_count_as_contributing_everything() -> None:
    # [None, 0]: the breaker counts as 20 -> mean 10 -> S = 10 -> 50 (counting it as 0 would give 100)
    setup, _, log = _play([[None, 0]])
    assert GAME.score(setup, log) == pytest.approx(50.0)
    assert goods_score([[20, 0]], 20) == pytest.approx(50.0)


def test_the_range_is_a_rule_here() -> None:
    setup = GAME.setup(GoodsParams(), 3, np.random.default_rng(0))
    state = GAME.initial_state(setup)
    assert GAME.judge(state, 0, '{"tokens_contributed": 20}').valid
    assert GAME.judge(state, 0, '{"tokens_contributed": 21}').violation == "rule_violation"
    assert GAME.judge(state, 0, '{"tokens_contributed": -1}').violation == "rule_violation"
    assert GAME.judge(state, 0, '{"tokens_contributed": 3.5}').violation == "schema_error"
    for bad in ({"tokens": 0}, {"rounds": 10**12}, {"ratio": -1.0}, {"ratio": "2"}, {"reset": False}):
        with pytest.raises(ValidationError):
            GoodsParams(**bad)


def _raw(records: list[list[int]], **meta):
    return {"meta": {"name_exp": "public_goods", "player_num": len(records), "tokens": 20, "ratio": 2,
                     "token_initialization": "fixed", "reset": True, "round_id": len(records[0]), **meta},
            "round_records": [{"responses": [r[k] for r in records], "total_tokens": sum(r[k] for r in records)}
                              for k in range(len(records[0]))],
            "player_data": [{"records": r, "tokens": [20] * (len(r) + 1), "utility": [20 - c for c in r]}
                            for r in records]}


def test_from_reference_imports_out_of_range_contributions_as_they_are() -> None:
    imp = GAME.from_reference(_raw([[25, 5], [25, 15]]))
    assert [a["tokens_contributed"] for a in imp.round_log[0]["actions"]] == [25, 25]
    # round 1: pot 50, part 2 x 50 / 2 = 50 -> 20 - 25 + 50 = 45 each; round 2: pot 20, part 20 -> 35 and 25
    assert imp.payoffs == [80.0, 70.0]  # the file's utility (20 - c) lacks the public part; ours is complete
    # S = (25 + 10) / 2 = 17.5 -> (20 - 17.5) / 20 = 12.5; a round of two 25s alone: (20 - 25) / 20 = -25 (no clip)
    assert GAME.score(Setup(2, imp.params), imp.round_log) == pytest.approx(12.5)
    alone = GAME.from_reference(_raw([[25], [25]]))
    assert GAME.score(Setup(2, alone.params), alone.round_log) == pytest.approx(-25.0)


def test_from_reference_refuses_other_token_settings() -> None:
    with pytest.raises(ValueError, match="token_initialization 'fixed'"):
        GAME.from_reference(_raw([[5], [5]], token_initialization="random"))
    with pytest.raises(ValueError, match="reset"):
        GAME.from_reference(_raw([[5], [5]], reset=False))
    with pytest.raises(ValueError, match="player_num"):
        GAME.from_reference(_raw([[5], [5]], player_num=3))


def test_equilibrium_and_baselines() -> None:
    setup = GAME.setup(GoodsParams(rounds=3), 4, np.random.default_rng(0))  # R = 2 < N = 4: keep everything
    ne = GAME.equilibrium(setup)
    assert ne is not None and ne.actions == (0.0,) * 4 and ne.payoffs == (60.0,) * 4
    rich = GAME.setup(GoodsParams(rounds=3, ratio=5), 4, np.random.default_rng(0))  # R = 5 > N: give all
    ne_rich = GAME.equilibrium(rich)
    assert ne_rich.actions == (20.0,) * 4 and ne_rich.payoffs == (300.0,) * 4  # 20 - 20 + 5 x 80 / 4 = 100
    state = GAME.initial_state(setup)
    assert GAME.strategy(state, 0, "rational") == {"tokens_contributed": 0}
    rng = np.random.default_rng(2)
    assert all(0 <= GAME.strategy(state, 0, "random", rng)["tokens_contributed"] <= 20 for _ in range(200))
    _, end, _ = _play([[10, 0, 0, 0], [0, 0, 0, 0], [5, 0, 0, 0]])
    assert GAME.deviation(setup, GAME.outcome(end), ne, 0) == pytest.approx(5 / 20)


def test_cli_run(arena, tmp_path) -> None:
    doc = arena.experiment_dict("public_goods", [
        {"agent": "rational"}, {"agent": "random", "count": 2},
        {"agent": "scripted", "label": "S", "responses": ['{"tokens_contributed": 4}', '{"tokens_contributed": 30}',
                                                         '{"tokens_contributed": 0}']}],
        {"rounds": 3}, sessions=2, runs=1, seed=3)
    toml = tmp_path / "goods.toml"
    toml.write_text(arena.to_toml(doc))
    proc = arena.cli("run", str(toml), "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 2
    for r in runs:
        assert r["rounds"] == 3 and r["valid"] == [True, True, True, False] and r["ne_actions"] == [0.0] * 4
        assert r["round_log"][1]["actions"][3] is None and r["round_log"][1]["events"]["payoffs"][3] == 0.0
        assert r["score"] == GAME.score(Setup(4, r["params"]), r["round_log"])
    scripted = [d for d in arena.sorted_decisions(tmp_path / "out") if d["label"] == "S" and d["session"] == 0]
    assert [d["violation"] for d in scripted] == [None, "rule_violation", None]
    report = scripted[1]["messages"][0]["content"]
    assert "Result of round 1: tokens put in, by player id: player 0: 0, " in report and "player 3: 4." in report
