"""El Farol Bar (GAMA-Bench game 2): rules, both feedback modes, the score by hand, the importer, a CLI run."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pydantic import ValidationError

from econarena.games import get_game
from econarena.games.base import Setup
from econarena.games.gamabench.el_farol import BarParams, bar_score
from econarena.hosts.prompts import Template

GAME = get_game("el_farol_bar")


def _play(choices_per_round: list[list[str | None]], **params):
    setup = GAME.setup(BarParams(rounds=len(choices_per_round), **params), len(choices_per_round[0]),
                       np.random.default_rng(0))
    state = GAME.initial_state(setup)
    log, reports = [], []
    for r, choices in enumerate(choices_per_round):
        actions = {i: None if c is None else {"decision": c} for i, c in enumerate(choices)}
        after = GAME.apply(state, actions)
        log.append({"round": r, "actions": [actions[i] for i in range(len(choices))],
                    "events": GAME.events(state, after, actions)})
        reports.append([GAME.report(state, after, actions, i) for i in range(len(choices))])
        state = after
    return setup, state, log, reports


def _score(choices_per_round: list[list[str | None]], **params) -> float | None:
    setup, _, log, _ = _play(choices_per_round, **params)
    return GAME.score(setup, log)


def test_payoffs_at_and_above_the_threshold() -> None:
    # N = 5, ratio 0.6: 3 goers -> 3/5 = 0.6 <= 0.6, pleasant: goers 10, stayer 5, rule breaker 0
    # 4 goers -> 0.8 > 0.6, crowded: goers 0, stayer 5
    _, state, log, _ = _play([["go", "go", "go", "stay", None], ["go", "go", "go", "go", "stay"]])
    assert state.payoffs[0] == (10.0, 10.0, 10.0, 5.0, 0.0)
    assert state.payoffs[1] == (0.0, 0.0, 0.0, 0.0, 5.0)
    assert log[0]["events"]["go"] == 3 and log[0]["events"]["invalid"] == 1 and not log[0]["events"]["crowded"]
    assert log[1]["events"]["go_ratio"] == pytest.approx(0.8) and log[1]["events"]["crowded"]
    out = GAME.outcome(state)
    assert out.payoffs == (10.0, 10.0, 10.0, 5.0, 5.0) and out.valid == (True,) * 4 + (False,)
    assert out.actions == (1.0, 1.0, 1.0, 0.5, 0.0)  # share of each seat's valid decisions that were go


def test_score_by_hand() -> None:
    # N = 10, ratio 0.6: 6 go -> |0.6 - 0.6| = 0; 10 go -> 0.4; 0 go -> 0.6; S = 1.0 / 3
    # score = (0.6 - 1/3) / 0.6 x 100 = 44.444...
    rounds = [["go"] * 6 + ["stay"] * 4, ["go"] * 10, ["stay"] * 10]
    setup, _, log, _ = _play(rounds)
    assert GAME.score(setup, log) == pytest.approx((0.6 - 1 / 3) / 0.6 * 100)
    # ratio 0.2: the scale is max(0.2, 0.8) = 0.8; 5 of 10 go -> S = 0.3 -> (0.8 - 0.3) / 0.8 = 62.5
    assert bar_score([(5, 0, 10)], 0.2) == pytest.approx(62.5)


def test_rule_breakers_count_as_the_worse_choice() -> None:
    # N = 5, 3 go, 1 stays, 1 breaks a rule: as stay |0.6 - 0.6| = 0, as go |0.8 - 0.6| = 0.2 -> 0.2 is used
    # score (0.6 - 0.2) / 0.6 x 100 = 66.67 (counting the breaker as staying would give 100)
    setup, _, log, _ = _play([["go", "go", "go", "stay", None]])
    assert GAME.score(setup, log) == pytest.approx(200 / 3)
    # never flattering: every way of filling in the broken replies scores at least as high
    for pattern in itertools.product(["go", "stay", None], repeat=4):
        choices = ["go", *pattern]
        s_bad = _score([choices])
        for fill in itertools.product(["go", "stay"], repeat=choices.count(None)):
            it = iter(fill)
            filled = [c if c is not None else next(it) for c in choices]
            assert s_bad <= _score([filled]) + 1e-9


def test_implicit_reports_only_own_payoff_explicit_reports_attendance() -> None:
    rounds = [["go"] * 7 + ["stay"] * 3]
    for mode in ("implicit", "explicit"):
        setup, state, _, reports = _play(rounds, mode=mode)
        tpl = Template(GAME)
        stayer = tpl.report(reports[0][9], state, 9)
        goer = tpl.report(reports[0][0], state, 0)
        assert "You stayed home and earned 5." in stayer and "You went to the bar and earned 0." in goer
        if mode == "implicit":
            assert "7" not in stayer and "crowded" not in stayer
        else:
            assert "7 of the 10 players went to the bar, which is more than 60%: the bar was crowded" in stayer


def test_rational_goes_with_probability_ratio_from_the_generator() -> None:
    setup = GAME.setup(BarParams(), 10, np.random.default_rng(0))
    state = GAME.initial_state(setup)
    rng = np.random.default_rng(11)
    goes = [GAME.strategy(state, 0, "rational", rng)["decision"] == "go" for _ in range(4000)]
    assert abs(sum(goes) / len(goes) - 0.6) < 0.03
    again = np.random.default_rng(11)
    assert [GAME.strategy(state, 0, "rational", again)["decision"] == "go" for _ in range(4000)] == goes
    # without a generator: a pure equilibrium, the first floor(0.6 x 10) = 6 seats go
    assert [GAME.strategy(state, i, "rational")["decision"] for i in range(10)] == ["go"] * 6 + ["stay"] * 4
    assert GAME.equilibrium(setup) is None  # mixed: no equilibrium outcome is declared
    assert {GAME.strategy(state, 0, "random", rng)["decision"] for _ in range(50)} == {"go", "stay"}


def test_parameters_are_bounded() -> None:
    for bad in ({"min": 6}, {"home": 11}, {"ratio": 1.5}, {"rounds": 10**12}, {"mode": "loud"}, {"max": "10"}):
        with pytest.raises(ValidationError):
            BarParams(**bad)


def test_from_reference_reads_records_in_player_order() -> None:
    raw = {"meta": {"player_num": 3, "min": 0, "max": 10, "home": 5, "ratio": 0.6, "mode": "explicit",
                    "round_id": 2, "version": "v1"},
           "round_records": [{"responses": ["go", "stay", "go"], "go_num": 2},
                             {"responses": ["go", "go", "go"], "go_num": 3}],
           "player_data": [{"id": "player_0", "records": ["go", "go"], "utility": [0, 0],
                            "prompt": [{"role": "system", "content": "rules"}]},
                           {"id": "player_1", "records": ["stay", "go"], "utility": [5, 0],
                            "prompt": [{"role": "user", "parts": ["hello", "there"]}]},
                           {"id": "player_2", "records": ["go", "Go"], "utility": [0, 0], "prompt": []}]}
    imp = GAME.from_reference(raw)
    assert imp.n_players == 3 and imp.params["mode"] == "explicit" and imp.params["rounds"] == 2
    assert imp.round_log[1]["actions"] == [{"decision": "go"}] * 3
    # round 1: 2/3 = 0.667 > 0.6 crowded: 0, 5, 0; round 2: all go, crowded: 0, 0, 0
    assert imp.payoffs == [0.0, 5.0, 0.0]
    assert imp.messages[1] == [{"role": "user", "content": "hello\nthere"}]
    # S = (|2/3 - 0.6| + |1 - 0.6|) / 2 = 0.2333 -> (0.6 - 0.2333) / 0.6 = 61.11
    assert GAME.score(Setup(3, imp.params), imp.round_log) == pytest.approx((0.6 - (1 / 15 + 0.4) / 2) / 0.6 * 100)
    with pytest.raises(ValueError, match=r"player_data\[2\].records"):
        GAME.from_reference({**raw, "player_data": raw["player_data"][:2] + [{"records": ["go"]}]})


def _cli_run(arena, tmp_path, mode: str):  # noqa: ANN001, ANN202
    doc = arena.experiment_dict("el_farol_bar", [
        {"agent": "rational"}, {"agent": "random", "count": 2},
        {"agent": "scripted", "label": "S",
         "responses": ['{"decision": "go"}', "maybe later", '{"decision": "stay"}']}],
        {"rounds": 3, "mode": mode}, sessions=2, runs=1, seed=3)
    toml = tmp_path / "bar.toml"
    toml.write_text(arena.to_toml(doc))
    return arena.cli("run", str(toml), "--out", str(tmp_path / "out"), "--quiet")


@pytest.mark.parametrize("mode", ["implicit", "explicit"])
def test_cli_run_both_modes(arena, tmp_path, mode: str) -> None:
    proc = _cli_run(arena, tmp_path, mode)
    # a known crash AFTER the runs are written: analysis/metrics.summarize indexes ne_payoffs, which is None for a
    # game without a declared equilibrium (fixed on branch gamaC); everything else must be complete
    assert proc.returncode == 0 or 'r["ne_payoffs"][i]' in proc.stderr, proc.stderr
    runs = arena.sorted_runs(tmp_path / "out")
    assert len(runs) == 2 and all(r["complete"] and r["rounds"] == 3 for r in runs)
    for r in runs:
        assert r["params"]["mode"] == mode and r["ne_payoffs"] is None
        assert r["valid"] == [True, True, True, False]  # the scripted seat's second reply is no JSON
        assert r["round_log"][1]["actions"][3] is None and r["round_log"][1]["events"]["invalid"] == 1
        assert 0 <= r["score"] <= 100 and r["score"] == GAME.score(Setup(4, r["params"]), r["round_log"])
    scripted = [d for d in arena.sorted_decisions(tmp_path / "out") if d["label"] == "S" and d["session"] == 0]
    assert [d["violation"] for d in scripted] == [None, "parse_error", None]
    assert scripted[1]["response"] == "maybe later"
    later = scripted[2]["messages"][0]["content"]
    assert "Result of round 2:" in later and "You gave no valid decision and earned 0." in later
    assert ("players went to the bar" in later) == (mode == "explicit")


def test_cli_summary_of_a_game_without_equilibrium(arena, tmp_path) -> None:
    proc = _cli_run(arena, tmp_path, "implicit")
    assert proc.returncode == 0, proc.stderr
