"""Every registered game x every baseline: ``validate`` refuses the pair (exit 2, naming the agent, the game
and the baselines it has) or one session plays to the end. And the level-k rules, against hand-computed
values and the best responses they claim to be."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from golden_experiments import SMALL

from econarena.agents.baselines import POLICY_AGENTS
from econarena.cli import main
from econarena.games import GAMES
from econarena.games.gamabench.guessing import level_k_number
from econarena.hosts.experiment import BASELINES

LEVEL_K_GAMES = {"beauty_contest", "second_price_auction", "english_auction", "guessing_game", "sealed_bid_auction"}


def _players(baseline: str, n: int) -> list[dict]:
    if baseline == "level_k":  # two depths: level 0 is each game's naive anchor
        return [{"agent": "level_k", "label": "L0", "k": 0},
                {"agent": "level_k", "label": "L2", "k": 2, "count": n - 1}]
    if baseline == "scripted":
        return [{"agent": "scripted", "count": n, "responses": ["{}", "no idea"]}]
    return [{"agent": baseline, "count": n}]


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_baseline_is_refused_by_validate_or_plays_a_session_to_the_end(
        game: str, arena, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = GAMES[game].info.n_players or 3
    replies = tmp_path / "replies.txt"
    replies.write_text("{}\n" * 2000, encoding="utf-8")  # a person who answers nothing useful, many times
    for baseline in sorted(BASELINES):
        if baseline == "policy":
            continue  # the game's own strategies: the next test
        doc = arena.experiment_dict(game, _players(baseline, n), SMALL.get(game), sessions=1, seed=3,
                                    name=f"{game}-{baseline}")
        toml = tmp_path / f"{baseline}.toml"
        toml.write_text(arena.to_toml(doc), encoding="utf-8")
        capsys.readouterr()
        code = main(["validate", str(toml)])
        err = capsys.readouterr().err
        refused = baseline in POLICY_AGENTS and baseline not in GAMES[game].policies()
        if refused:
            assert code == 2, (game, baseline)
            offered = ", ".join(k for k in GAMES[game].policies() if k in POLICY_AGENTS)
            assert f"players[0].agent: {game} has no '{baseline}' rule; its baselines are {offered}" in err
            assert main(["run", str(toml), "--dry-run"]) == 2  # the dry run says the same, before any call
            continue
        assert code == 0, (game, baseline, err)
        out = tmp_path / f"out-{baseline}"
        extra = ["--human-input", str(replies)] if baseline == "human" else []
        code = main(["run", str(toml), "--out", str(out), "--quiet", *extra])
        assert code == 0, (game, baseline, capsys.readouterr().err)
        manifest = json.loads((out / "manifest.json").read_text())
        assert (manifest["status"], manifest["runs_complete"]) == ("complete", 1), (game, baseline)
        assert arena.sorted_runs(out)[0]["complete"]
    assert ("level_k" in GAMES[game].policies()) == (game in LEVEL_K_GAMES)


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_policy_a_game_declares_is_seatable_and_an_unknown_one_is_refused(
        game: str, arena, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``agent = "policy"`` seats a strategy the game itself declares (the dilemma's tit_for_tat, persuasion's
    commitment): each plays a session to the end against random; a name the game lacks is exit 2."""
    n = GAMES[game].info.n_players or 3
    own = [k for k in GAMES[game].policies() if k not in POLICY_AGENTS]
    for policy in [*own, "no_such_policy"]:
        doc = arena.experiment_dict(game, [{"agent": "policy", "policy": policy},
                                           {"agent": "random", "count": n - 1}], SMALL.get(game), sessions=1,
                                    seed=3, name=f"{game}-{policy}")
        toml = tmp_path / f"{policy}.toml"
        toml.write_text(arena.to_toml(doc), encoding="utf-8")
        capsys.readouterr()
        code = main(["validate", str(toml)])
        err = capsys.readouterr().err
        if policy not in own:
            assert code == 2 and f"players[0].policy: {game} has no policy 'no_such_policy'" in err
            continue
        out = tmp_path / f"out-{policy}"
        assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0, capsys.readouterr().err
        run = arena.sorted_runs(out)[0]
        assert run["complete"] and run["labels"][0] == policy and run["agents"][0] == "policy"
        assert run["valid"][0], f"{game}: the declared policy {policy} broke a rule"


def test_a_rational_environment_needs_a_game_with_a_rational_baseline(arena, tmp_path: Path, monkeypatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    game = GAMES["guessing_game"]
    monkeypatch.setattr(type(game), "policies", lambda self: ("random",))
    doc = arena.experiment_dict("guessing_game", [{"agent": "random"}], {"rounds": 1}, environment="rational")
    toml = tmp_path / "r.toml"
    toml.write_text(arena.to_toml(doc))
    assert main(["validate", str(toml)]) == 2
    assert "'rational' seats rational opponents, but guessing_game has no rational baseline" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ Guess 2/3

def test_guessing_level_k_by_hand() -> None:
    # round 1 of the leaderboard setting: level 0 at the midpoint 50, then 2/3 of the level below, rounded
    assert [level_k_number(50, k, 2 / 3, 0, 100) for k in range(12)] == [50, 33, 22, 15, 10, 7, 5, 3, 2, 1, 1, 1]
    # ratio above 1 climbs to max; min > 0 holds the floor: 50, 25, 12.5 -> 13, 6.5 -> 7 -> 10
    assert [level_k_number(50, k, 1.5, 0, 100) for k in range(4)] == [50, 75, 100, 100]
    assert [level_k_number(50, k, 0.5, 10, 90) for k in range(5)] == [50, 25, 13, 10, 10]
    assert level_k_number(50, 1000, 10, 0, 100) == 100  # no 10**1000 overflow
    assert level_k_number(20.5, 0, 2 / 3, 0, 100) == 21  # halves round up


def test_guessing_level_k_anchors_on_the_last_round_mean() -> None:
    g = GAMES["guessing_game"]
    setup = g.setup(g.Params(rounds=3), 3, np.random.default_rng(0))
    state = g.initial_state(setup)
    assert g.strategy(state, 0, "level_k", k=1) == {"chosen_number": 33}
    state = g.apply(state, {0: {"chosen_number": 10}, 1: {"chosen_number": 20}, 2: {"chosen_number": 60}})
    assert g.strategy(state, 0, "level_k", k=0) == {"chosen_number": 30}  # mean 30
    assert g.strategy(state, 0, "level_k", k=1) == {"chosen_number": 20}
    state = g.apply(state, {0: None, 1: None, 2: None})  # a round without a mean: the last one that had one
    assert g.strategy(state, 0, "level_k", k=2) == {"chosen_number": 13}  # 30 -> 20 -> 13.3


def test_guessing_level_one_is_a_best_response_to_a_crowd_of_level_zero() -> None:
    """Against nine players at level 0 (50), the winning number of the whole-number range is level 1's."""
    best = min(range(101), key=lambda x: abs(x - 2 / 3 * (9 * 50 + x) / 10))
    assert abs(best - level_k_number(50, 1, 2 / 3, 0, 100)) <= 1  # own weight in the mean ignored: 33 vs 32


# ------------------------------------------------------------------------------------- sealed-bid auction

def _sealed(**params: object):  # noqa: ANN202
    g = GAMES["sealed_bid_auction"]
    return g, g.initial_state(g.setup(g.Params(**params), 4, np.random.default_rng(0)))


def test_sealed_bid_level_k_by_hand() -> None:
    g, state = _sealed()  # round 0's valuations (reference draw, seed 42): 200, 30, 0, 80
    assert [g.strategy(state, i, "level_k", k=0)["bid"] for i in range(4)] == [200, 30, 0, 80]  # truthful
    assert [g.strategy(state, i, "level_k", k=1)["bid"] for i in range(4)] == [150, 22, 0, 60]  # 3/4 v, floored
    assert [g.strategy(state, i, "level_k", k=5)["bid"] for i in range(4)] == [150, 22, 0, 60]
    assert [g.strategy(state, i, "rational")["bid"] for i in range(4)] == [150, 22, 0, 60]  # m = 0: the same
    g, state = _sealed(valuation_min=20)  # valuations 50, 20, 100, 90: 20 + 3/4 (v - 20)
    assert [g.strategy(state, i, "level_k", k=1)["bid"] for i in range(4)] == [42, 20, 80, 72]
    g, state = _sealed(mode="second")
    assert [g.strategy(state, i, "level_k", k=3)["bid"] for i in range(4)] == [200, 30, 0, 80]  # truthful is best


def test_sealed_bid_level_one_maximises_against_truthful_level_zero() -> None:
    """(v - b) P(three uniform valuations on [m, M] below b), maximised over a fine grid of bids."""
    m, big_m, n = 20.0, 200.0, 4
    for v in (50.0, 100.0, 190.0):
        bids = np.linspace(m, v, 200_001)
        best = bids[np.argmax((v - bids) * ((bids - m) / (big_m - m)) ** (n - 1))]
        assert best == pytest.approx(m + (n - 1) * (v - m) / n, abs=1e-3)
