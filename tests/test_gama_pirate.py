"""Pirate Game (GAMA-Bench game 8): proposals, votes, the optimal plan and the score on hand-computed cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from econarena.cli import main
from econarena.games import get_game
from econarena.games.gamabench.pirate import PirateParams, optimal_plan, pirate_score

GAME = get_game("pirate_game")


def _setup(n: int = 4, **params):
    return GAME.setup(PirateParams(**params), n, np.random.default_rng(0))


def _play(setup, moves):
    """``moves``: per move a {seat: reply dict or None} for the players to move."""
    state = GAME.initial_state(setup)
    log = []
    for r, actions in enumerate(moves):
        assert set(actions) == set(GAME.to_move(state)), (actions, GAME.to_move(state))
        after = GAME.apply(state, actions)
        log.append({"round": r, "actions": [actions.get(i) for i in range(setup.n_players)],
                    "events": GAME.events(state, after, actions)})
        state = after
    return state, log


def _alloc(**shares: int) -> dict:
    return {"allocation": {k.lstrip("p"): v for k, v in shares.items()}}


def test_optimal_plan() -> None:
    assert optimal_plan(10, 100) == [96, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    assert optimal_plan(3, 100) == [99, 0, 1]
    assert optimal_plan(2, 100) == [100, 0]


def test_score_hand_computed() -> None:
    # n = 4, opt = [99, 0, 1, 0]; plan [97, 0, 1, 2]: L1 = 2 + 0 + 0 + 2 = 4
    # votes: j=1 g=0 accept (wrong), j=2 g=1 accept (right, even j), j=3 g=2 accept (right) -> 2/3
    ev = [{"phase": "propose", "alive": [0, 1, 2, 3], "proposal": [97, 0, 1, 2]},
          {"phase": "vote", "alive": [0, 1, 2, 3], "proposal": [97, 0, 1, 2],
           "votes": ["accept", "accept", "accept", "accept"]}]
    assert pirate_score(ev, 100) == pytest.approx((200 - 4) / 200 * 50 + 50 * 2 / 3)  # 82.333


def test_score_code_versus_paper_on_a_single_coin_at_odd_position() -> None:
    # plan [98, 0, 1, 1]: L1 = 1 + 0 + 0 + 1 = 2 -> 49.5; votes j=1 g=0 reject (right), j=2 g=1 accept (right),
    # j=3 g=1 reject: never right in the code, right in the paper
    ev = [{"phase": "propose", "alive": [0, 1, 2, 3], "proposal": [98, 0, 1, 1]},
          {"phase": "vote", "alive": [0, 1, 2, 3], "proposal": [98, 0, 1, 1],
           "votes": ["accept", "reject", "accept", "reject"]}]
    assert pirate_score(ev, 100, "code") == pytest.approx(49.5 + 50 * 2 / 3)
    assert pirate_score(ev, 100, "paper") == pytest.approx(49.5 + 50)


def test_l1_compares_with_the_100_gold_optimum_after_rescaling() -> None:
    # gold 200, plan [196, 0, 2, 2] -> [98, 0, 1, 1] per 100: L1 = 2; no votes -> accuracy 0
    ev = [{"phase": "propose", "alive": [0, 1, 2, 3], "proposal": [196, 0, 2, 2]}]
    assert pirate_score(ev, 200) == pytest.approx(49.5)
    assert pirate_score([], 100) is None


def test_broken_proposal_throws_the_proposer_and_counts_200() -> None:
    setup = _setup(4)
    # proposal 0 unusable -> player 0 overboard, no vote; player 1 proposes [99, 0, 1] over (1, 2, 3);
    # 2 rejects (g=0: right), 3 accepts (g=1, j=2: right); 2 of 3 accept -> passes
    state, log = _play(setup, [{0: None}, {1: _alloc(p1=99, p2=0, p3=1)},
                               {2: {"vote": "reject"}, 3: {"vote": "accept"}}])
    assert [e["events"]["phase"] for e in log] == ["propose", "propose", "vote"]
    assert log[0]["events"]["proposal"] is None and log[2]["events"]["passed"]
    out = GAME.outcome(state)
    assert out.payoffs == (0.0, 99.0, 0.0, 1.0) and out.valid == (False, True, True, True)
    # mean L1 = (200 + 0) / 2 = 100 -> 25; accuracy 2/2 -> 50
    assert GAME.score(setup, log) == pytest.approx(75.0)
    assert GAME.score(setup, json.loads(json.dumps(log))) == pytest.approx(75.0)


def test_half_the_votes_pass_a_plan() -> None:
    setup = _setup(4)
    plan = _alloc(p0=97, p1=1, p2=1, p3=1)
    state, _ = _play(setup, [{0: plan}, {1: {"vote": "accept"}, 2: {"vote": "reject"}, 3: None}])
    assert GAME.outcome(state).payoffs == (97.0, 1.0, 1.0, 1.0)  # 2 of 4 (proposer + 1)
    state, log = _play(setup, [{0: plan}, {1: {"vote": "reject"}, 2: {"vote": "reject"}, 3: None}])
    assert state.alive == (1, 2, 3) and GAME.to_move(state) == (1,)  # 1 of 4: player 0 overboard
    assert log[1]["events"]["votes"] == ["accept", "reject", "reject", None]
    assert GAME.outcome(state).valid == (True, True, True, False)  # an unusable vote is a rule break


def test_lone_pirate_keeps_everything() -> None:
    setup = _setup(2)
    # with two pirates the proposer's own vote is half: any usable plan passes
    state, _ = _play(setup, [{0: _alloc(p0=100, p1=0)}, {1: {"vote": "reject"}}])
    assert GAME.outcome(state).payoffs == (100.0, 0.0)
    # an unusable plan throws player 0 overboard; player 1, alone, proposes and passes without a vote
    state, log = _play(setup, [{0: None}, {1: _alloc(p1=100)}])
    assert GAME.to_move(state) == () and GAME.outcome(state).payoffs == (0.0, 100.0)
    assert log[-1]["events"]["passed"] is True
    # L1: 200 (unusable) and 0 ([100] vs [100]) -> 50; no votes -> accuracy 0
    assert GAME.score(setup, log) == pytest.approx(25.0)


def test_allocation_is_judged() -> None:
    state = GAME.initial_state(_setup(3))
    assert GAME.judge(state, 0, '{"allocation": {"0": 99, "1": 0, "2": 1}}').valid
    assert GAME.judge(state, 0, '{"allocation": [99, 0, 1]}').valid
    assert GAME.judge(state, 0, '{"allocation": {"0": 99, "1": 0, "2": 2}}').violation == "rule_violation"
    assert GAME.judge(state, 0, '{"allocation": {"0": 99.5, "1": 0, "2": 0.5}}').violation == "schema_error"
    assert GAME.judge(state, 0, '{"allocation": {"0": 100, "1": 0}}').violation == "schema_error"
    state = GAME.apply(state, {0: _alloc(p0=99, p1=0, p2=1)})
    assert GAME.judge(state, 1, '{"vote": "Reject"}').action == {"vote": "reject"}
    assert GAME.judge(state, 1, '{"vote": "maybe"}').violation == "schema_error"


def test_equilibrium_and_rational_play() -> None:
    setup = _setup(10)
    ne = GAME.equilibrium(setup)
    assert ne is not None and ne.payoffs == tuple(float(g) for g in optimal_plan(10, 100))
    state = GAME.initial_state(setup)
    while movers := GAME.to_move(state):
        state = GAME.apply(state, {i: GAME.strategy(state, i, "rational") for i in movers})
    assert GAME.outcome(state).payoffs == ne.payoffs
    assert GAME.equilibrium(_setup(10, gold=3)) is None  # 3 coins cannot buy 4 votes
    state = GAME.apply(GAME.initial_state(_setup(4)), {0: _alloc(p0=90, p1=5, p2=1, p3=4)})
    assert [GAME.strategy(state, i, "rational")["vote"] for i in (1, 2, 3)] == ["accept", "accept", "accept"]
    state = GAME.apply(GAME.initial_state(_setup(4)), {0: _alloc(p0=98, p1=0, p2=1, p3=1)})
    assert [GAME.strategy(state, i, "rational")["vote"] for i in (1, 2, 3)] == ["reject", "accept", "reject"]


def test_from_reference_tiny_file() -> None:
    raw = {"meta": {"player_num": 3, "round_id": 2},  # no "gold": 100
           "round_records": [{"gold_distribution": [100, 0, 0], "responses": ["accept", "reject", "reject"]},
                             {"gold_distribution": [99, 1], "responses": ["accept", "I accept"]}],
           "player_data": [{"id": f"player_{i}", "records": [], "utility": []} for i in range(3)]}
    imp = GAME.from_reference(raw)
    assert imp.params == {"gold": 100} and imp.payoffs == [0.0, 99.0, 1.0]
    assert imp.round_log[3]["actions"][2] == {"vote": "accept"}  # any answer containing "accept"
    setup = GAME.setup(PirateParams(**imp.params), imp.n_players, np.random.default_rng(0))
    # L1: [100,0,0] vs [99,0,1] = 2; [99,1] vs [100,0] = 2 -> 49.5
    # votes: 2 rejects of g=0 (right); g=1 at j=1 accepted (never right) -> 2/3
    assert GAME.score(setup, imp.round_log) == pytest.approx(49.5 + 50 * 2 / 3)


def test_cli_run_with_baselines_and_a_script(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("pirate_game", [
        {"agent": "rational"}, {"agent": "random", "count": 2},
        {"agent": "scripted", "responses": ['{"vote": "reject"}', "arr"]}], sessions=2, seed=3)
    path = tmp_path / "pirate.toml"
    path.write_text(arena.to_toml(doc))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 2 and all(r["complete"] for r in runs)
    assert all(0 <= r["score"] <= 100 for r in runs)
    for r in runs:  # a plan passed: the gold is shared out
        assert sum(r["payoffs"]) == pytest.approx(100) and r["round_log"][0]["events"]["phase"] == "propose"
    decisions = arena.read_jsonl(tmp_path / "out" / "decisions.jsonl")
    first = [d for d in decisions if d["round"] == 0]
    assert {d["player"] for d in first} == {0}  # the proposal comes first, alone
    assert {d["player"] for d in decisions if d["round"] == 1} == {1, 2, 3}  # then the others vote
