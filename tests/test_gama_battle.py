"""Battle Royale (GAMA-Bench game 7): turn order, shots, rule breaks and the score on hand-computed cases."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from econarena.cli import main
from econarena.games import get_game
from econarena.games.gamabench.battle_royale import BattleParams, battle_score
from econarena.hosts.config import load_experiment
from econarena.hosts.host import Host, HostOptions

GAME = get_game("battle_royale")


class Draws:
    """A chance generator with fixed uniform draws: a shot hits when the draw is below the hit rate."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def _setup(n: int = 4, **params):
    return GAME.setup(BattleParams(**params), n, np.random.default_rng(0))


def _play(setup, targets, draws):
    """``targets``: per turn the shooter's reply dict (None for a rule break)."""
    state = GAME.initial_state(setup)
    log = []
    rng = Draws(*draws)
    for t, action in enumerate(targets):
        (shooter,) = GAME.to_move(state)
        actions = {shooter: action}
        after = GAME.apply(state, actions, rng)  # type: ignore[arg-type]
        log.append({"round": t, "actions": [actions.get(i) for i in range(setup.n_players)],
                    "events": GAME.events(state, after, actions)})
        state = after
    return state, log


def test_hit_rates_and_turn_order_cycle_over_survivors() -> None:
    setup = _setup(4)
    assert setup["hit_rates"] == [35, 40, 45, 50]
    # t0: 0 shoots 3 (draw .1 < .35: hit, 3 out); t1: 1 shoots 2 (.9: miss); t2: 2 misses on purpose;
    # t3: the cycle wraps to 0 (3 is out)
    state, log = _play(setup, [{"target": 3}, {"target": 2}, {"target": None}], [0.1, 0.9])
    assert [e["events"]["shooter"] for e in log] == [0, 1, 2]
    assert log[0]["events"]["hit"] and log[0]["events"]["eliminated"] == 3
    assert not log[1]["events"]["hit"] and log[2]["events"]["target"] is None
    assert state.alive == (0, 1, 2) and GAME.to_move(state) == (0,)
    assert log[1]["events"]["alive"] == [0, 1, 2]  # survivors before the turn


def test_game_ends_with_one_survivor_or_after_max_turns() -> None:
    state, _ = _play(_setup(2), [{"target": 1}], [0.0])
    assert GAME.to_move(state) == () and GAME.outcome(state).payoffs == (1.0, 0.0)
    state, _ = _play(_setup(3, max_turns=2), [{"target": 2}, {"target": 2}], [0.99, 0.99])
    assert GAME.to_move(state) == ()
    out = GAME.outcome(state)
    assert out.payoffs == pytest.approx((1 / 3,) * 3) and out.winners == (0, 1, 2)


def test_targets_must_be_other_survivors() -> None:
    setup = _setup(4)
    state, _ = _play(setup, [{"target": 3}], [0.0])  # 3 is out; player 1 shoots next
    assert GAME.judge(state, 1, '{"target": 2}').action == {"target": 2}
    assert GAME.judge(state, 1, '{"target": "player_2"}').action == {"target": 2}
    assert GAME.judge(state, 1, '{"target": null}').action == {"target": None}
    assert GAME.judge(state, 1, '{"target": -1}').action == {"target": None}
    assert GAME.judge(state, 1, '{"target": 1}').violation == "rule_violation"  # itself
    assert GAME.judge(state, 1, '{"target": 3}').violation == "rule_violation"  # eliminated
    assert GAME.judge(state, 1, '{"target": 9}').violation == "rule_violation"


def test_score_hand_computed_misses_count_as_turns() -> None:
    rates = [35, 40, 45, 50]
    alive = [0, 1, 2, 3]
    events = [
        {"shooter": 0, "target": 3, "alive": alive},  # the strongest other: correct
        {"shooter": 1, "target": None, "alive": alive},  # intentional miss: a turn, never correct
        {"shooter": 2, "target": 1, "alive": alive},  # not the strongest
        {"shooter": 3, "target": 2, "alive": alive},  # 3 is itself the strongest: 2 is correct
        {"shooter": 0, "target": None, "alive": alive},  # a rule break, recorded without target
    ]
    assert battle_score(rates, events) == pytest.approx(2 / 5 * 100)  # not 2 / 3 (misses left out)
    assert battle_score(rates, []) is None


def test_score_from_the_round_log_with_a_rule_break() -> None:
    setup = _setup(3)  # rates 35, 40, 45
    # t0: 0 aims at 2 (correct), misses; t1: 1 breaks a rule (lost turn); t2: 2 aims at 0 (wrong: 1 is stronger)
    state, log = _play(setup, [{"target": 2}, None, {"target": 0}], [0.9, 0.9])
    assert [e["events"]["valid"] for e in log] == [True, False, True]
    assert GAME.score(setup, log) == pytest.approx(100 / 3)
    assert GAME.score(setup, json.loads(json.dumps(log))) == pytest.approx(100 / 3)
    out = GAME.outcome(state)
    assert out.valid == (True, False, True) and out.actions == (1.0, 0.0, 0.0)


def test_reports_go_to_everyone_still_in() -> None:
    setup = _setup(3)
    s0 = GAME.initial_state(setup)
    s1 = GAME.apply(s0, {0: {"target": 2}}, Draws(0.0))  # type: ignore[arg-type]
    assert all(GAME.report(s0, s1, {0: {"target": 2}}, p) is not None for p in range(3))
    assert "You are out" in GAME.report(s0, s1, {0: {"target": 2}}, 2)["what"]
    s2 = GAME.apply(s1, {1: {"target": None}}, Draws())  # type: ignore[arg-type]
    assert GAME.report(s1, s2, {1: {"target": None}}, 2) is None  # already out
    assert "Turn 1: player 0 shot at player 2 and hit" in GAME.observation(s2, 0)["so_far"]


def test_rational_aims_at_the_strongest_other() -> None:
    state = GAME.initial_state(_setup(4))
    assert GAME.strategy(state, 0, "rational") == {"target": 3}
    state = GAME.apply(state, {0: {"target": 3}}, Draws(0.0))  # type: ignore[arg-type]
    assert GAME.strategy(state, 1, "rational") == {"target": 2}
    assert GAME.equilibrium(state.setup) is None
    assert GAME.max_moves(BattleParams(), 10) == (10, False)


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match="above 100"):
        GAME.setup(BattleParams(base_hit_rate=80, interval=10), 4, np.random.default_rng(0))
    with pytest.raises(ValueError):
        BattleParams(max_turns=10**12)


def test_from_reference_tiny_file() -> None:
    players = [["player_0", 35], ["player_1", 40], ["player_2", 45]]
    raw = {"meta": {"player_num": 3, "base_hit_rate": 35, "interval": 5, "round_id": 5},
           "round_records": [
               {"responses": ["2"], "player_shooting": "0", "shot_player": "2", "action": "shoot", "out": False,
                "initial_players": players},
               {"responses": ["null"], "player_shooting": "1", "shot_player": "null", "action": "miss",
                "out": False, "initial_players": players},
               {"responses": ["2"], "player_shooting": "2", "shot_player": "2", "action": "shoot", "out": False,
                "initial_players": players},
               {"responses": ["1"], "player_shooting": "0", "shot_player": "1", "action": "shoot", "out": True,
                "initial_players": players}],
           "player_data": [{"id": f"player_{i}", "records": [], "utility": []} for i in range(3)]}
    imp = GAME.from_reference(raw)
    ev = [r["events"] for r in imp.round_log]
    assert [e["valid"] for e in ev] == [True, True, False, True]  # shooting oneself: a wasted, broken turn
    assert ev[3]["hit"] and ev[3]["eliminated"] == 1 and imp.round_log[3]["actions"][0] == {"target": 1}
    setup = GAME.setup(BattleParams(**imp.params), imp.n_players, np.random.default_rng(0))
    # correct: turn 0 only (turn 3 aims at 1 while 2 is stronger) -> 1 / 4
    assert GAME.score(setup, imp.round_log) == pytest.approx(25.0)


def _doc(arena):
    return arena.experiment_dict("battle_royale", [
        {"agent": "rational"}, {"agent": "random"},
        {"agent": "scripted", "responses": ['{"target": 0}', "bang"]}],
        params={"max_turns": 3}, sessions=2, seed=3)


def test_cli_run_writes_a_summary(tmp_path: Path, arena) -> None:
    path = tmp_path / "battle.toml"
    path.write_text(arena.to_toml(_doc(arena)))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0


def test_toml_run_with_baselines_and_a_script(tmp_path: Path, arena) -> None:
    # the Host in-process, to read its result object
    path = tmp_path / "battle.toml"
    path.write_text(arena.to_toml(_doc(arena)))
    result = asyncio.run(Host(load_experiment(path), tmp_path / "out", HostOptions(quiet=True)).run())
    assert result.status == "complete"
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 2 and all(r["complete"] and 1 <= len(r["round_log"]) <= 3 for r in runs)
    assert all(0 <= r["score"] <= 100 for r in runs)
    for r in runs:  # the score is the share of correct turns in the log
        ev = [x["events"] for x in r["round_log"]]
        assert r["score"] == pytest.approx(100 * sum(e["at_strongest"] for e in ev) / len(ev))
    decisions = arena.read_jsonl(tmp_path / "out" / "decisions.jsonl")
    assert {d["player"] for d in decisions if d["round"] == 0} == {0}  # one shooter per turn
