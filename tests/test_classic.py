"""The classic family: the repeated Prisoner's Dilemma with an announced horizon.

Payoffs of scripted sequences by hand, the subgame-perfect equilibrium checked by an independent backward
induction over every history, parameter errors, the baselines, metrics, prompts, and an end-to-end
``econarena run`` / ``validate`` / ``report`` with a garbage-writing scripted seat.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from econarena.games import get_game
from econarena.games.base import PARSE_ERROR, SCHEMA_ERROR
from econarena.games.classic.prisoners_dilemma import DilemmaParams, dilemma_metrics
from econarena.hosts.prompts import Template

GAME = get_game("prisoners_dilemma")
C, D = "cooperate", "defect"
REPO = Path(__file__).resolve().parent.parent


def _play(pairs: list[tuple[str | None, str | None]], **params):
    """Play the given replies (None: an unusable reply) round by round, as the Host does; returns
    (setup, end state, round log)."""
    setup = GAME.setup(DilemmaParams(rounds=len(pairs), **params), 2, np.random.default_rng(0))
    state = GAME.initial_state(setup)
    log = []
    for r, pair in enumerate(pairs):
        actions = {i: None if x is None else {"action": x} for i, x in enumerate(pair)}
        after = GAME.apply(state, actions)
        log.append({"round": r, "actions": [actions[0], actions[1]], "events": GAME.events(state, after, actions)})
        state = after
    return setup, state, log


# ------------------------------------------------------------------------------------------------ payoffs

def test_the_four_outcomes_over_four_rounds() -> None:
    # T, R, P, S = 5, 3, 1, 0: C/C 3+3, C/D 0+5, D/C 5+0, D/D 1+1 -> (3+0+5+1, 3+5+0+1) = (9, 9)
    _, state, log = _play([(C, C), (C, D), (D, C), (D, D)])
    assert [e["events"]["payoffs"] for e in log] == [[3.0, 3.0], [0.0, 5.0], [5.0, 0.0], [1.0, 1.0]]
    out = GAME.outcome(state)
    assert out.payoffs == (9.0, 9.0)
    assert out.winners == (0, 1) and out.valid == (True, True) and not out.void
    assert out.actions == (0.5, 0.5)  # cooperation rates: each cooperated in 2 of 4 rounds
    assert [e["events"]["cooperation"] for e in log] == [1.0, 0.5, 0.5, 0.0]


def test_another_table() -> None:
    # T, R, P, S = 10, 6, 2, 1 (2R = 12 > 11): D/C, D/C, C/C -> (10 + 10 + 6, 1 + 1 + 6) = (26, 8)
    _, state, _ = _play([(D, C), (D, C), (C, C)], temptation=10, reward=6, punishment=2, sucker=1)
    out = GAME.outcome(state)
    assert out.payoffs == (26.0, 8.0) and out.winners == (0,)
    assert out.actions == pytest.approx((1 / 3, 1.0))


def test_an_unusable_reply_is_played_as_defect() -> None:
    # seat 0's reply is unusable in round 1: played as D against C -> 5 and 0; then C/C -> 3 and 3
    _, state, log = _play([(None, C), (C, C)])
    out = GAME.outcome(state)
    assert out.payoffs == (8.0, 3.0) and out.valid == (False, True)
    assert log[0]["events"]["choices"] == [None, C] and log[0]["events"]["moves"] == [D, C]
    assert out.actions == (0.5, 1.0)
    assert dilemma_metrics([e["events"] for e in log])["invalid_rounds"] == [1, 0]


# ------------------------------------------------------------------------------------------- equilibrium

def _backward_induction(t: float, r: float, p: float, s: float, k: int, history: tuple = ()) -> tuple[float, float]:
    """The subgame-perfect payoffs of K rounds, solved over EVERY history (4^(K-1) last-round subgames):
    at each node the stage game plus the continuation values must have exactly one equilibrium, in which
    both defect, by strict dominance (so no mixed equilibrium either). Independent of the game's code."""
    if len(history) == k:
        return 0.0, 0.0
    stage = {(C, C): (r, r), (C, D): (s, t), (D, C): (t, s), (D, D): (p, p)}
    u = {}
    for pair, (a, b) in stage.items():
        cont = _backward_induction(t, r, p, s, k, history + (pair,))
        u[pair] = (a + cont[0], b + cont[1])
    for other in (C, D):
        assert u[(D, other)][0] > u[(C, other)][0], "defect strictly dominates for seat 0"
        assert u[(other, D)][1] > u[(other, C)][1], "defect strictly dominates for seat 1"
    return u[(D, D)]


@pytest.mark.parametrize("t, r, p, s, k, want", [
    (5, 3, 1, 0, 1, 1.0),      # one round: the one-shot dilemma, P
    (5, 3, 1, 0, 4, 4.0),
    (5, 3, 1, 0, 10, 10.0),    # the defaults: P x 10
    (10, 6, 2, 1, 3, 6.0),
    (4, 3, 2.5, 0, 5, 12.5),   # T + S = 4 < 2P = 5: still defect everywhere
    (7, 5, 0.5, 0, 2, 1.0),
])
def test_equilibrium_payoffs_by_backward_induction(t, r, p, s, k, want) -> None:
    setup = GAME.setup(DilemmaParams(temptation=t, reward=r, punishment=p, sucker=s, rounds=k), 2,
                       np.random.default_rng(0))
    ne = GAME.equilibrium(setup)
    assert ne.payoffs == (want, want) == _backward_induction(t, r, p, s, k)
    assert ne.actions == (0.0, 0.0) and ne.winners == (0, 1)


@pytest.mark.parametrize("k, p", [(1, 1.0), (37, 1.0), (1000, 2.0)])
def test_rational_play_reaches_the_equilibrium(k: int, p: float) -> None:
    setup = GAME.setup(DilemmaParams(rounds=k, temptation=5, reward=3, punishment=p, sucker=0), 2,
                       np.random.default_rng(0))
    state = GAME.initial_state(setup)
    while GAME.to_move(state):
        state = GAME.apply(state, {i: GAME.judge(state, i, json.dumps(GAME.strategy(state, i, "rational"))).action
                                   for i in (0, 1)})
    out = GAME.outcome(state)
    assert out.payoffs == GAME.equilibrium(setup).payoffs == (p * k, p * k)
    assert GAME.deviation(setup, out, GAME.equilibrium(setup), 0) == 0.0


def test_deviation_is_the_share_of_rounds_cooperated() -> None:
    setup, state, _ = _play([(C, D), (C, D), (D, D), (C, D)])
    out, ne = GAME.outcome(state), GAME.equilibrium(setup)
    assert GAME.deviation(setup, out, ne, 0) == 0.75
    assert GAME.deviation(setup, out, ne, 1) == 0.0


def test_huge_payoffs_stay_finite() -> None:
    setup = GAME.setup(DilemmaParams(temptation=1e9, reward=9e8, punishment=8e8, sucker=0, rounds=1000), 2,
                       np.random.default_rng(0))
    assert GAME.equilibrium(setup).payoffs == (8e11, 8e11)
    assert GAME.observation(GAME.initial_state(setup), 0)["temptation"] == "1000000000"


# -------------------------------------------------------------------------------------------- parameters

@pytest.mark.parametrize("params, words", [
    ({"reward": 6}, "reward (6) must be below temptation (5)"),
    ({"punishment": 3}, "punishment (3) must be below reward (3)"),
    ({"sucker": 1}, "sucker (1) must be below punishment (1)"),
    ({"temptation": 7}, "2 x 3 = 6 is not above 7 + 0 = 7"),
    ({"temptation": 6, "sucker": 0.5, "punishment": 1}, "2R > T + S"),
])
def test_a_table_that_is_no_dilemma_is_refused(params, words) -> None:
    with pytest.raises(ValidationError, match=words.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        DilemmaParams(**params)


@pytest.mark.parametrize("params", [{"rounds": 0}, {"rounds": 1001}, {"sucker": -1}, {"temptation": "5"},
                                    {"reward": True}, {"temptation": float("inf")}, {"temptation": 2e9},
                                    {"horizon": 10}])
def test_bad_values_are_refused(params) -> None:
    with pytest.raises(ValidationError):
        DilemmaParams(**params)


def test_defaults_and_the_two_seats() -> None:
    p = DilemmaParams()
    assert (p.temptation, p.reward, p.punishment, p.sucker, p.rounds) == (5, 3, 1, 0, 10)
    assert GAME.info.n_players == 2 and GAME.max_moves(p, 2) == (10, True)
    with pytest.raises(ValueError, match="two-player game, got 3"):
        GAME.setup(p, 3, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------- judging, policies

def test_judging_the_reply() -> None:
    state = GAME.initial_state(GAME.setup(DilemmaParams(), 2, np.random.default_rng(0)))
    assert GAME.judge(state, 0, 'I think {"action": " Cooperate "}').action == {"action": C}
    assert GAME.judge(state, 0, '```json\n{"action": "DEFECT", "reason": "last round"}\n```').action == {"action": D}
    assert GAME.judge(state, 0, '{"action": "C"}').violation == SCHEMA_ERROR
    assert GAME.judge(state, 0, '{"action": 1}').violation == SCHEMA_ERROR
    assert GAME.judge(state, 0, '{"move": "defect"}').violation == PARSE_ERROR
    assert GAME.judge(state, 0, "defect").violation == PARSE_ERROR


def test_tit_for_tat_against_the_equilibrium_and_itself() -> None:
    setup = GAME.setup(DilemmaParams(rounds=5), 2, np.random.default_rng(0))

    def play(kinds: tuple[str, str]) -> tuple[float, ...]:
        state = GAME.initial_state(setup)
        while GAME.to_move(state):
            state = GAME.apply(state, {i: GAME.strategy(state, i, kinds[i]) for i in (0, 1)})
        return GAME.outcome(state).payoffs

    assert play(("tit_for_tat", "tit_for_tat")) == (15.0, 15.0)  # R x 5
    assert play(("tit_for_tat", "rational")) == (4.0, 9.0)  # S + 4P against T + 4P
    with pytest.raises(ValueError, match="no 'level_k' strategy"):
        GAME.strategy(GAME.initial_state(setup), 0, "level_k")


def test_tit_for_tat_answers_an_unusable_reply_with_defect() -> None:
    later = GAME.initial_state(GAME.setup(DilemmaParams(rounds=3), 2, np.random.default_rng(0)))
    later = GAME.apply(later, {0: {"action": C}, 1: None})
    assert GAME.strategy(later, 0, "tit_for_tat") == {"action": D}
    assert GAME.strategy(later, 1, "tit_for_tat") == {"action": C}


def test_random_is_uniform_and_reproducible() -> None:
    state = GAME.initial_state(GAME.setup(DilemmaParams(), 2, np.random.default_rng(0)))
    a = [GAME.strategy(state, 0, "random", rng=np.random.default_rng(i))["action"] for i in range(400)]
    b = [GAME.strategy(state, 0, "random", rng=np.random.default_rng(i))["action"] for i in range(400)]
    assert a == b and 160 < a.count(C) < 240


# ------------------------------------------------------------------------------------------------ metrics

def test_metrics_by_hand() -> None:
    # moves C/C, C/D, D/C, D/D. Seat 0 repeats seat 1's previous move in rounds 2 (C) and 3 (D), not in 4
    # (D after C): 2/3; seat 1 in rounds 3 (C) and 4 (D), not in 2 (D after C): 2/3
    setup, _, log = _play([(C, C), (C, D), (D, C), (D, D)])
    m = GAME.metrics(setup, log)
    assert m == {"cooperation_rate": [0.5, 0.5], "payoff": [9.0, 9.0], "mutual_cooperation_rate": 0.25,
                 "mutual_defection_rate": 0.25, "sucker_rate": [0.25, 0.25], "first_defection": [3, 2],
                 "reciprocity": [2 / 3, 2 / 3], "invalid_rounds": [0, 0]}
    assert GAME.metrics(setup, json.loads(json.dumps(log))) == m  # from the logged round records alone


def test_metrics_of_tit_for_tat_and_one_round() -> None:
    # tit for tat (seat 1) against C, C, D, C: it plays C, C, C, D -> reciprocity 1, never defects until round 4
    setup, _, log = _play([(C, C), (C, C), (D, C), (C, D)])
    m = GAME.metrics(setup, log)
    assert m["reciprocity"][1] == 1.0 and m["first_defection"] == [3, 4]
    assert m["sucker_rate"] == [0.25, 0.25] and m["mutual_cooperation_rate"] == 0.5
    setup, _, log = _play([(C, C)])
    m = GAME.metrics(setup, log)
    assert m["reciprocity"] == [None, None] and m["first_defection"] == [None, None]
    assert m["mutual_cooperation_rate"] == 1.0 and m["payoff"] == [3.0, 3.0]


# ------------------------------------------------------------------------------------------------ prompts

def test_prompts_announce_the_horizon_and_report_each_round() -> None:
    setup = GAME.setup(DilemmaParams(rounds=7, temptation=9, reward=5, punishment=2, sucker=0.5), 2,
                       np.random.default_rng(0))
    state = GAME.initial_state(setup)
    template = Template(GAME)
    text = "\n".join(m.content for m in template.render(state, 1, "melee", "default"))
    assert "The game lasts 7 round(s)" in text and "Round 1 of 7" in text
    assert "you defect, the other cooperates: 9, 0.5" in text and "you cooperate, the other cooperates: 5, 5" in text
    assert '- action: str ("cooperate" or "defect"), your move this round' in text
    after = GAME.apply(state, {0: {"action": C}, 1: None})
    report = template.report(GAME.report(state, after, {0: {"action": C}, 1: None}, 0), after, 0)
    assert report == ("Result of round 1: you chose cooperate and the other player chose no usable reply (played as "
                      "defect). Points this round: you 0.5, the other player 9. Totals so far: you 0.5, the other "
                      "player 9.")
    assert "Round 2 of 7" in template.follow_up(after, 0, "default")


# ------------------------------------------------------------------------------------------------- the CLI

TOML = """
[experiment]
name = "pd-e2e"
game = "prisoners_dilemma"
environment = "rational"
players_per_game = 2
sessions = 2
seed = 3

[game]
rounds = 4

[[players]]
agent = "random"

[[players]]
agent = "scripted"
label = "S"
responses = ['{"action": "cooperate"}', "I will defect!", '```json\\n{"action": "DEFECT"}\\n```', '{"action": "maybe"}']
"""


def test_run_validate_and_summary_end_to_end(tmp_path: Path, arena) -> None:
    path = tmp_path / "pd.toml"
    path.write_text(TOML, encoding="utf-8")
    r = arena.cli("validate", str(path))
    assert r.returncode == 0 and "ok (prisoners_dilemma, rational" in r.stdout, r.stderr
    out = tmp_path / "run"
    r = arena.cli("run", str(path), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    runs = arena.sorted_runs(out)
    assert len(runs) == 4 and all(x["complete"] for x in runs)
    for rec in (x for x in runs if x["lineup"] == "S"):
        # S plays C (valid), garbage (D), D (valid), "maybe" (D) against four defections:
        # S earns 0 + 1 + 1 + 1 = 3, the rational seat 5 + 1 + 1 + 1 = 8; NE 4 each
        assert rec["labels"] == ["S", "rational"] and rec["payoffs"] == [3.0, 8.0]
        assert rec["valid"] == [False, True] and rec["ne_payoffs"] == [4.0, 4.0]
        assert rec["payoff_ratio"] == [0.0, 2.0]  # a rule break scores 0
        assert rec["metrics"]["invalid_rounds"] == [2, 0] and rec["metrics"]["sucker_rate"] == [0.25, 0.0]
    for rec in (x for x in runs if x["lineup"] == "random"):
        assert rec["valid"] == [True, True] and rec["payoffs"][1] >= rec["payoffs"][0]  # defecting never loses
        assert rec["deviation"][1] == 0.0 and rec["deviation"][0] == rec["metrics"]["cooperation_rate"][0]
    decisions = [d for d in arena.read_jsonl(out / "decisions.jsonl") if d["label"] == "S"]
    assert [d["violation"] for d in sorted(decisions, key=lambda d: (d["session"], d["round"]))[:4]] == [
        None, "parse_error", None, "schema_error"]
    assert any(d["response"] == "I will defect!" for d in decisions)  # the raw text is kept
    summary = json.loads((out / "summary.json").read_text())["labels"]
    assert summary["S"]["rule_break_rate_pct"] == 100.0 and summary["S"]["violations_per_decision_pct"] == 50.0
    assert summary["S"]["payoff_ratio"] == 0.0
    assert arena.cli("summary", str(out)).returncode == 0


def test_bad_tables_fail_validate_with_the_key(tmp_path: Path, arena) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(TOML.replace("rounds = 4", "rounds = 4\nreward = 6"), encoding="utf-8")
    r = arena.cli("validate", str(path))
    assert r.returncode == 2 and "reward (6) must be below temptation (5)" in r.stderr
    assert "Traceback" not in r.stderr


def test_shipped_config_runs_and_reports(tmp_path: Path, arena) -> None:
    pytest.importorskip("matplotlib")  # the [report] extra, part of make install's [dev]
    out = tmp_path / "run"
    r = arena.cli("run", str(REPO / "configs" / "classic" / "prisoners_dilemma.toml"), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    labels = json.loads((out / "summary.json").read_text())["labels"]
    for k in (1, 10, 50):
        rational = labels[f"rational [rounds={k}]"]
        assert rational["mean_ne_payoff"] == k and rational["payoff_ratio"] >= 1 and rational["mean_deviation"] == 0
    r = arena.cli("report", str(out), "--out", str(tmp_path / "report"), "--boot", "50", timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "report" / "figures" / "classic_metrics.png").exists()
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "data-figure='classic_metrics'" in page and "classic: the games&#x27; metrics by player" in page
    assert "id='card-econarena'" in page  # no family module of its own: the EconArena scorecard covers it
