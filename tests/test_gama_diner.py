"""Diner's Dilemma (GAMA-Bench game 5): rules, the code vs paper score on raw labels, importer, a CLI run."""

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
from econarena.games.gamabench.diners_dilemma import DinerParams, diner_score, paper_label

GAME = get_game("diners_dilemma")


def _play(orders_per_round: list[list[str | None]], **params):
    params_ = DinerParams(rounds=len(orders_per_round), **params)
    return play_rounds(GAME, params_, "chosen_dish", orders_per_round)


def test_payoffs_split_the_bill() -> None:
    # N = 4: cheap, costly, costly, rule break -> bill 10 + 20 + 20 = 50, share 12.5
    # 15 - 12.5 = 2.5; 20 - 12.5 = 7.5 (twice); the breaker gets no dish but pays: 0 - 12.5
    _, state, log = _play([["cheap", "costly", "costly", None]])
    assert state.payoffs[0] == (2.5, 7.5, 7.5, -12.5)
    ev = log[0]["events"]
    assert (ev["cheap"], ev["costly"], ev["invalid"], ev["bill"], ev["costly_share"]) == (1, 2, 1, 50, 0.5)


def test_score_by_hand() -> None:
    # N = 4: 1 cheap -> 75; 4 cheap -> 0; 0 cheap -> 100: mean 58.33; a rule break counts as cheap
    setup, _, log = _play([["cheap", "costly", "costly", "costly"], ["cheap"] * 4, ["costly"] * 4])
    assert GAME.score(setup, log) == pytest.approx(175 / 3)
    setup, _, log = _play([["costly", "costly", None, "cheap"]])  # 2 of 4 count as cheap -> 50
    assert GAME.score(setup, log) == pytest.approx(50.0)


def _raw(records: list[list[str]]):
    n, k = len(records), len(records[0])
    return {"meta": {"player_num": n, "cheap_cost": 10, "cheap_utility": 15, "exp_cost": 20, "exp_utility": 20,
                     "round_id": k, "version": "v1"},
            "round_records": [{"responses": [r[j] for r in records]} for j in range(k)],
            "player_data": [{"records": r, "utility": [0.0] * k} for r in records]}


def test_mixtral_like_labels_code_versus_paper() -> None:
    # the spec's case: Mixtral-8x7B answered with labels such as cheap_dish, chea, che`,`ap, costly_or_cheap
    rounds = [["cheap_dish", "cheap", "costly_dish", "chea", "costly"],
              ["che`,`ap", "costly_or_cheap", "cheaper", "costly", "CHEAP"]]
    imp = GAME.from_reference(_raw([list(seat) for seat in zip(*rounds)]))
    assert [a["chosen_dish"] for a in imp.round_log[1]["actions"]] == ["che`,`ap", "costly_or_cheap", "cheaper",
                                                                      "costly", "cheap"]  # lower-cased, kept raw
    # code: only the exact "cheap" is cheap -> 1 of 5 in each round -> (80 + 80) / 2 = 80
    assert GAME.score(Setup(5, imp.params), imp.round_log) == pytest.approx(80.0)
    # paper: round 1 cheap_dish, cheap, chea are cheap (3/5 -> 40); round 2 che`,`ap, cheaper, cheap are cheap
    # and costly_or_cheap is unreadable, counted as cheap (4/5 -> 20): (40 + 20) / 2 = 30
    assert GAME.score(Setup(5, {**imp.params, "scoring": "paper"}), imp.round_log) == pytest.approx(30.0)
    # the payoffs follow the reference: every label but "cheap" is served the costly dish
    assert imp.round_log[0]["events"]["cheap"] == 1 and imp.round_log[0]["events"]["bill"] == 90


@pytest.mark.parametrize("label, expected", [
    ("cheap", "cheap"), ("cheap_dish", "cheap"), ("cheaper", "cheap"), ("che`,`ap", "cheap"), ("chea", "cheap"),
    ("costly", "costly"), ("costly_dish", "costly"), ("Costly Dish", "costly"), ("cost", "costly"),
    ("costly_or_cheap", None), ("ch", None), ("", None), ("expensive", None)])
def test_paper_labels(label: str, expected: str | None) -> None:
    assert paper_label(label) == expected


def test_rule_breaks_count_as_cheap_in_both_readings() -> None:
    assert diner_score([[None, "costly"]], "code") == pytest.approx(50.0)
    assert diner_score([[None, "costly"]], "paper") == pytest.approx(50.0)
    assert diner_score([[]]) is None


def test_equilibrium_and_baselines() -> None:
    setup = GAME.setup(DinerParams(rounds=2), 10, np.random.default_rng(0))
    ne = GAME.equilibrium(setup)  # 20 - 20/10 = 18 > 15 - 10/10 = 14: costly; all costly pays 20 - 20 = 0
    assert ne is not None and ne.actions == (1.0,) * 10 and ne.payoffs == (0.0,) * 10
    state = GAME.initial_state(setup)
    assert GAME.strategy(state, 3, "rational") == {"chosen_dish": "costly"}
    # N = 2 at the defaults: 20 - 10 = 15 - 5: a tie, costly declared
    assert GAME.equilibrium(GAME.setup(DinerParams(), 2, np.random.default_rng(0))).actions == (1.0, 1.0)
    # a costly dish at 100: 20 - 50 < 15 - 5, cheap dominates; all cheap pays 15 - 10 = 5 a round
    dear = GAME.setup(DinerParams(exp_cost=100, rounds=2), 2, np.random.default_rng(0))
    assert GAME.equilibrium(dear).actions == (0.0, 0.0) and GAME.equilibrium(dear).payoffs == (10.0, 10.0)
    rng = np.random.default_rng(4)
    assert {GAME.strategy(state, 0, "random", rng)["chosen_dish"] for _ in range(50)} == {"cheap", "costly"}
    _, end, _ = _play([["cheap"] + ["costly"] * 9, ["costly"] * 10])
    assert GAME.deviation(setup, GAME.outcome(end), ne, 0) == pytest.approx(0.5)
    assert GAME.judge(state, 0, '{"chosen_dish": "cheap_dish"}').violation == "schema_error"
    with pytest.raises(ValidationError):
        DinerParams(scoring="leaderboard")
    with pytest.raises(ValidationError):
        DinerParams(exp_cost=1e12)


def test_cli_run(arena, tmp_path) -> None:
    doc = arena.experiment_dict("diners_dilemma", [
        {"agent": "rational"}, {"agent": "random", "count": 2},
        {"agent": "scripted", "label": "S", "responses": ['{"chosen_dish": "cheap"}', '{"chosen_dish": "soup"}',
                                                         '{"chosen_dish": "Costly"}']}],
        {"rounds": 3, "scoring": "paper"}, sessions=2, runs=1, seed=3)
    toml = tmp_path / "diner.toml"
    toml.write_text(arena.to_toml(doc))
    proc = arena.cli("run", str(toml), "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 2
    for r in runs:
        assert r["rounds"] == 3 and r["valid"] == [True, True, True, False] and r["ne_actions"] == [1.0] * 4
        assert r["round_log"][2]["actions"][3] == {"chosen_dish": "costly"}
        assert r["score"] == GAME.score(Setup(4, r["params"]), r["round_log"])
    scripted = [d for d in arena.sorted_decisions(tmp_path / "out") if d["label"] == "S" and d["session"] == 0]
    assert [d["violation"] for d in scripted] == [None, "schema_error", None]
    assert "You had the cheap dish, worth 15" in scripted[1]["messages"][0]["content"]
    assert "You had no valid dish, worth 0" in scripted[2]["messages"][0]["content"]
