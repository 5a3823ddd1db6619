"""Fruit trade (spec 3.1-3.3): payoffs by hand, the rules, both payoff modes, the judge's number, the
offers space, the baselines, the prompts, and a run through the CLI with scripted replies."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from econarena.cli import main
from econarena.games import get_game
from econarena.games.base import PARSE_ERROR, RULE_VIOLATION, SCHEMA_ERROR, Setup
from econarena.games.steering.fruit_trade import (
    FruitParams,
    judge_number,
    offer_space,
    trade_payoff,
    valid_offer,
    valid_offer_label,
)
from econarena.hosts.prompts import Template

sys.path.insert(0, str(Path(__file__).parent))
from rounds_helper import play_turns  # noqa: E402

GAME = get_game("fruit_trade")
FRUITS = ("apple", "banana", "orange")


def fixed(e0: tuple[int, ...], v0: tuple[int, ...], e1: tuple[int, ...], v1: tuple[int, ...],
          **params: Any) -> Setup:
    """A setup with given holdings and values (seat 0 first), like a draw would make it."""
    return Setup(2, {**FruitParams(**params).model_dump(),
                     "endowments": [dict(zip(FRUITS, e0)), dict(zip(FRUITS, e1))],
                     "valuations": [dict(zip(FRUITS, v0)), dict(zip(FRUITS, v1))]})


# Ann (seat 0) holds apples 2, bananas 2, oranges 1 and values them 1, 2, 4 (spec 3.1's worked example);
# the other player holds 1, 2, 2 and values them 3, 1, 0.
ANN = ((2, 2, 1), (1, 2, 4), (1, 2, 2), (3, 1, 0))


def trade(**counts: int) -> dict[str, int]:
    return {f: counts.get(f, 0) for f in FRUITS}


def opening(give: dict[str, int], receive: dict[str, int], message: str = "hello") -> str:
    return json.dumps({"message": message, "give": give, "receive": receive})


def reply(decision: str, give: dict[str, int] | None = None, receive: dict[str, int] | None = None) -> str:
    return json.dumps({"message": "re", "decision": decision, "give": give or trade(), "receive": receive or trade()})


def play(setup: Setup, replies: list[str]) -> tuple[Any, list[dict[str, Any]]]:
    """Judge and apply replies in turn as the Host does; the round log as it reads back from JSON."""
    state, log = play_turns(GAME, setup, replies)
    return state, json.loads(json.dumps(log))


ANN_OPEN = opening(trade(apple=1), trade(banana=1))


# ---- payoffs ----

def test_worked_example_pays_ann_plus_one() -> None:
    assert trade_payoff({"apple": 1, "banana": 2, "orange": 4}, {"apple": -1, "banana": 1}) == 1.0
    state, log = play(fixed(*ANN), [ANN_OPEN, reply("accept")])
    out = GAME.outcome(state)
    # Ann: -1 apple (1) + 1 banana (2) = +1; the other: -1 banana (1) + 1 apple (3) = +2
    assert out.payoffs == (1.0, 2.0) and out.winners == (1,) and not out.void
    assert out.extra["deal"] == {"player_1_gives": {"apple": 1}, "player_2_gives": {"banana": 1}}
    assert GAME.to_move(state) == () and len(log) == 2
    assert GAME.metrics(state.setup, log) == {"agreement": True, "deal": True, "infeasible": False,
                                              "structured_payoffs": [1.0, 2.0], "ended": "accept", "turns": 2}


def test_a_counter_accepted_is_the_third_message_trade() -> None:
    # player 2 gives 2 bananas for 1 apple: player 1 +2*2 - 1 = +3, player 2 +3 - 2*1 = +1
    counter = reply("counter", trade(banana=2), trade(apple=1))
    state, log = play(fixed(*ANN), [ANN_OPEN, counter, '{"decision": "accept"}'])
    out = GAME.outcome(state)
    assert out.payoffs == (3.0, 1.0) and out.extra["ended"] == "counter_accept"
    m = GAME.metrics(state.setup, log)
    assert (m["agreement"], m["deal"], m["structured_payoffs"], m["turns"]) == (False, True, [3.0, 1.0], 3)


def test_a_counter_rejected_pays_nothing() -> None:
    counter = reply("counter", trade(banana=2), trade(apple=1))
    state, log = play(fixed(*ANN), [ANN_OPEN, counter, '{"decision": "reject"}'])
    out = GAME.outcome(state)
    assert out.payoffs == (0.0, 0.0) and out.void and out.extra["deal"] is None
    m = GAME.metrics(state.setup, log)
    assert (m["agreement"], m["deal"], m["structured_payoffs"]) == (False, False, [0.0, 0.0])


def test_accepting_a_trade_someone_cannot_make_is_no_trade_not_a_rule_break() -> None:
    # Ann asks for 2 apples; the other holds 1: accepting is legal but nothing is traded
    state, log = play(fixed(*ANN), [opening(trade(orange=1), trade(apple=2)), reply("accept")])
    out = GAME.outcome(state)
    assert out.payoffs == (0.0, 0.0) and out.valid == (True, True) and out.extra["infeasible"]
    assert GAME.metrics(state.setup, log) | {"turns": 0} == {
        "agreement": True, "deal": False, "infeasible": True, "structured_payoffs": [0.0, 0.0],
        "ended": "accept", "turns": 0}
    # a counter asking Ann for 2 oranges (she holds 1), accepted by her: no trade either
    state, log = play(fixed(*ANN), [ANN_OPEN, reply("counter", trade(apple=1), trade(orange=2)),
                                     '{"decision": "accept"}'])
    assert GAME.outcome(state).payoffs == (0.0, 0.0) and GAME.metrics(state.setup, log)["infeasible"]


@pytest.mark.parametrize("broken_turn", [0, 1, 2])
def test_a_rule_break_ends_the_game_without_a_trade(broken_turn: int) -> None:
    replies = [ANN_OPEN, reply("counter", trade(banana=2), trade(apple=1)), '{"decision": "accept"}']
    bad = [opening(trade(apple=3), trade(banana=1)), reply("counter", trade(orange=3), trade(apple=1)),
           '{"decision": "maybe"}'][broken_turn]
    replies[broken_turn] = bad
    state = GAME.initial_state(fixed(*ANN))
    for text in replies:
        if not GAME.to_move(state):
            break
        seat = GAME.to_move(state)[0]
        judged = GAME.judge(state, seat, text)
        state = GAME.apply(state, {seat: judged.action})
    assert state.turn == broken_turn + 1 and GAME.to_move(state) == ()
    out = GAME.outcome(state)
    seat = 1 if broken_turn == 1 else 0
    assert out.payoffs == (0.0, 0.0) and out.valid[seat] is False and out.valid[1 - seat] is True
    assert out.extra["ended"] == "broken"


def test_rules_of_a_proposal() -> None:
    setup = fixed(*ANN)
    s0 = GAME.initial_state(setup)
    cases = {
        opening(trade(apple=1), trade()): (RULE_VIOLATION, "ask for at least one"),
        opening(trade(), trade(apple=1)): (RULE_VIOLATION, "give at least one"),
        opening(trade(apple=1), trade(apple=1, banana=1)): (RULE_VIOLATION, "apple is on both sides"),
        opening(trade(orange=2), trade(apple=1)): (RULE_VIOLATION, "hold only 1"),
        opening(trade(apple=1), trade(banana=3)): (RULE_VIOLATION, "nobody holds more than 2"),
        opening(trade(apple=-1), trade(banana=1)): (RULE_VIOLATION, "negative"),
        opening({"apple": 0.5, "banana": 0, "orange": 0}, trade(banana=1)): (SCHEMA_ERROR, "whole number"),
        json.dumps({"message": "x", "give": trade(apple=1)}): (PARSE_ERROR, "receive"),
        opening(trade(apple=1), trade(banana=1), "x" * 1001): (RULE_VIOLATION, "1001 characters"),
    }
    for text, (violation, words) in cases.items():
        j = GAME.judge(s0, 0, text)
        assert j.violation == violation and words in (j.detail or ""), (text, j.detail)
    assert GAME.judge(s0, 0, opening(trade(apple=2, orange=1), trade(banana=2))).valid  # a bundle is legal
    # player 2's counter is held to ITS holdings (1 apple); accepting ignores the trade fields
    s1 = GAME.apply(s0, {0: GAME.judge(s0, 0, ANN_OPEN).action})
    assert GAME.judge(s1, 1, reply("counter", trade(apple=2), trade(banana=1))).violation == RULE_VIOLATION
    assert GAME.judge(s1, 1, reply("accept", trade(apple=9), trade(apple=9))).valid
    assert GAME.judge(s1, 1, reply("counter", trade(orange=2), trade(banana=1))).valid


# ---- both modes ----

def test_structured_mode_has_three_moves_and_llm_mode_two() -> None:
    counter = reply("counter", trade(banana=2), trade(apple=1))
    state, _ = play(fixed(*ANN), [ANN_OPEN, counter])
    assert GAME.to_move(state) == (0,) and GAME.action_spec(state, 0).fields[0].choices == ("accept", "reject")
    assert [f.name for f in GAME.action_spec(state, 0).fields] == ["decision"]  # no message: nobody reads it
    judged, _ = play(fixed(*ANN, payoff="llm"), [ANN_OPEN, counter])
    assert GAME.to_move(judged) == () and judged.ended == "counter"
    assert GAME.max_moves(FruitParams(), 2) == (2, False)
    assert GAME.max_moves(FruitParams(payoff="llm"), 2) == (1, False)
    assert GAME.judge_requests(state.setup, state) is None  # structured: no judge


@pytest.mark.parametrize(("text", "value"), [
    ("I think 7.9", 7), ("-35", -20), ("no idea", 0), (None, 0), ("", 0), ("25 points", 20),
    ("-7.9", -7), ("Value: +3, or maybe 5", 3), ("\u22124", -4), ("20", 20), ("-20", -20),
    ("0", 0), ("99999999999999999999999", 20)])
def test_judge_number_casts_clips_and_defaults_to_zero(text: str | None, value: int) -> None:
    assert judge_number(text) == value


def test_judged_outcome_reads_the_judge_and_logs_both_payoffs() -> None:
    setup = fixed(*ANN, payoff="llm")
    counter = reply("counter", trade(banana=2), trade(apple=1))  # worth +3 to player 1: counted as accepted
    state, log = play(setup, [ANN_OPEN, counter])
    long = "I think 7.9 " + "x" * 5000
    out = GAME.judged_outcome(setup, state, {0: long, 1: "-35"})
    assert out.payoffs == (7.0, -20.0) and out.winners == (0,) and not out.void
    assert out.extra["judge_payoffs"] == [7.0, -20.0] and out.extra["structured_payoffs"] == [3.0, 1.0]
    assert out.extra["judge_raw"] == [long[:2000], "-35"]
    assert GAME.outcome(state).payoffs == (3.0, 1.0)  # without a judge: the structured reading
    m = GAME.metrics(setup, log)
    assert (m["agreement"], m["deal"], m["structured_payoffs"]) == (False, True, [3.0, 1.0])
    unread = GAME.judged_outcome(setup, state, {0: "no idea", 1: None})
    assert unread.payoffs == (0.0, 0.0) and unread.void and unread.extra["judge_raw"] == ["no idea", None]
    # a counter worth -3 to player 1 (gives 1 orange = 4, gets 1 apple = 1) counts as declined
    bad, log = play(setup, [ANN_OPEN, reply("counter", trade(apple=1), trade(orange=1))])
    assert GAME.judged_outcome(setup, bad, {0: "5", 1: "6"}).extra["structured_payoffs"] == [0.0, 0.0]
    assert GAME.metrics(setup, log)["deal"] is False
    # worth exactly 0 to player 1 (gives 2 apples = 2, gets 1 banana = 2): not "worth > 0", so declined
    even, log = play(setup, [ANN_OPEN, reply("counter", trade(banana=1), trade(apple=2))])
    assert GAME.judged_outcome(setup, even, {0: "0", 1: "0"}).extra["structured_payoffs"] == [0.0, 0.0]
    assert GAME.metrics(setup, log)["structured_payoffs"] == [0.0, 0.0]
    assert GAME.strategy(play(fixed(*ANN), [ANN_OPEN, reply("counter", trade(banana=1), trade(apple=2))])[0], 0,
                         "rational") == {"decision": "reject"}
    # a direct agreement: the proposal's own values
    agreed, _ = play(setup, [ANN_OPEN, reply("accept")])
    assert GAME.judged_outcome(setup, agreed, {0: "1", 1: "2"}).extra["structured_payoffs"] == [1.0, 2.0]


def test_judge_requests_show_the_dialogue_and_both_private_facts() -> None:
    setup = fixed(*ANN, payoff="llm")
    state, _ = play(setup, [opening(trade(apple=1), trade(banana=1), "Apple for banana?"),
                            reply("counter", trade(banana=2), trade(apple=1))])
    req = GAME.judge_requests(setup, state)
    assert req is not None and set(req) == {0, 1}
    assert req[0]["my_holdings"] == "apple: 2, banana: 2, orange: 1"
    assert req[0]["my_values"] == "apple: 1, banana: 2, orange: 4"
    assert req[0]["other_values"] == "apple: 3, banana: 1, orange: 0" == req[1]["my_values"]
    assert req[0]["agreed"] == "no" and req[1]["seat_name"] == "Player 2"
    dialogue = req[0]["dialogue"]
    assert dialogue.count("#" * 28 + "\nTrade Proposal Message:") == 2
    assert "from: Player 1\nto: Player 2" in dialogue and "from: Player 2\nto: Player 1" in dialogue
    assert "Apple for banana?" in dialogue and "Player 2 gives 2 banana and receives 1 apple" in dialogue
    system, user = Template(GAME).judge(req[1])
    assert "referee" in system.content and "would accept that counter-proposal" in user.content
    assert "value per piece: apple: 3, banana: 1, orange: 0" in user.content and "-20 to 20" in user.content
    accepted, _ = play(setup, [ANN_OPEN, reply("accept")])
    assert GAME.judge_requests(setup, accepted)[0]["agreed"] == "yes"  # type: ignore[index]
    broken, _ = play(setup, [opening(trade(apple=5), trade(banana=1))])
    assert GAME.judge_requests(setup, broken) is None  # a rule break pays (0, 0): nothing to judge


# ---- steering: the offers space ----

def test_offers_space_has_the_papers_25_actions() -> None:
    space = GAME.prompt_actions("offers", GAME.Params())
    assert space is not None and len(space) == 25 and space == offer_space()
    assert space[-1] == ("any", "") and len({label for label, _ in space}) == 25
    assert space[0] == ("1 apple for 1 banana", space[0][1]) and "you give 1 apple" in space[0][1]
    assert all(valid_offer_label(label) and (label == "any" or text) for label, text in space)
    assert all(GAME.prompt_actions(kind, GAME.Params()) is None for kind in ("tones", "nonsense"))
    four = GAME.prompt_actions("offers", GAME.Params(fruits=["apple", "banana", "orange", "kiwi"]))
    assert four is not None and len(four) == 4 * 3 * 2 * 2 + 1 and "1 kiwi for 2 apple" in dict(four)


def test_offer_validity_follows_spec_3_2() -> None:
    assert valid_offer({"apple": 2}, {"orange": 1})
    assert valid_offer({"apple": 1, "banana": 0}, {"orange": 2, "banana": 0})
    assert not valid_offer({"apple": 3}, {"orange": 1})  # quantity >= 3
    assert not valid_offer({"apple": 0}, {"orange": 1})  # quantity 0: nothing given
    assert not valid_offer({"apple": 1}, {"apple": 2})  # same fruit on both sides
    assert not valid_offer({"apple": 1, "banana": 1}, {"orange": 1})  # a bundle
    assert not valid_offer({"apple": 1}, {"kiwi": 1})  # not a fruit of the game
    assert not valid_offer({"apple": -1}, {"orange": 1})
    for label in ("3 apple for 1 banana", "0 apple for 1 banana", "1 apple for 1 apple", "1 kiwi for 1 apple",
                  "1 apple and 1 banana for 1 orange", "apple for banana"):
        assert not valid_offer_label(label), label
    assert valid_offer_label("2 orange for 1 banana") and valid_offer_label("any")


# ---- baselines ----

def test_rational_baseline_by_hand() -> None:
    setup = fixed(*ANN)
    s0 = GAME.initial_state(setup)
    # Ann's best one-for-one trade: 1 apple (worth 1) for 2 oranges (worth 8): +7
    a = GAME.strategy(s0, 0, "rational")
    assert (a["give"], a["receive"]) == (trade(apple=1), trade(orange=2))
    s1 = GAME.apply(s0, {0: GAME.judge(s0, 0, json.dumps(a)).action})
    # the other gives 2 oranges (worth 0) for 1 apple (worth 3): +3 > 0, feasible: accept
    b = GAME.strategy(s1, 1, "rational")
    assert b["decision"] == "accept"
    end = GAME.apply(s1, {1: GAME.judge(s1, 1, json.dumps(b)).action})
    assert GAME.outcome(end).payoffs == (7.0, 3.0)
    # 1 banana for 1 apple is worth 1 - 3 = -2 to player 2: it counters with its own best, 1 orange (0)
    # for 2 apples (6); Ann would give 2 apples (2) for an orange (4): +2 > 0, both hold the fruit: accept
    s1 = GAME.apply(s0, {0: GAME.judge(s0, 0, opening(trade(banana=1), trade(apple=1))).action})
    c = GAME.strategy(s1, 1, "rational")
    assert (c["decision"], c["give"], c["receive"]) == ("counter", trade(orange=1), trade(apple=2))
    s2 = GAME.apply(s1, {1: GAME.judge(s1, 1, json.dumps(c)).action})
    assert GAME.strategy(s2, 0, "rational") == {"decision": "accept"}
    end = GAME.apply(s2, {0: {"decision": "accept"}})
    assert GAME.outcome(end).payoffs == (2.0, 6.0)


def test_random_baseline_is_legal_and_depends_only_on_the_generator() -> None:
    for seed in range(30):
        setup = GAME.setup(FruitParams(), 2, np.random.default_rng(seed))
        replies = []
        for _ in range(2):
            rng = np.random.default_rng(seed)
            state = GAME.initial_state(setup)
            seen = []
            while GAME.to_move(state):
                seat = GAME.to_move(state)[0]
                a = GAME.strategy(state, seat, "random", rng=rng)
                j = GAME.judge(state, seat, json.dumps(a))
                assert j.valid, j.detail
                seen.append(a)
                state = GAME.apply(state, {seat: j.action})
            replies.append(seen)
        assert replies[0] == replies[1]


# ---- setup ----

def test_draws_are_integers_in_the_ranges_per_seat_and_fruit() -> None:
    seen_e, seen_v = set(), set()
    for seed in range(40):
        s = GAME.setup(FruitParams(), 2, np.random.default_rng(seed))
        for seat in (0, 1):
            assert list(s["endowments"][seat]) == list(FRUITS)
            seen_e |= set(s["endowments"][seat].values())
            seen_v |= set(s["valuations"][seat].values())
    assert seen_e == {1, 2} and seen_v == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match="two-player"):
        GAME.setup(FruitParams(), 3, np.random.default_rng(0))


@pytest.mark.parametrize(("params", "words"), [
    ({"fruits": ["apple"]}, "2 to 6 fruits"), ({"fruits": ["apple", "apple"]}, "must differ"),
    ({"fruits": ["Apple", "pear"]}, "lower-case"), ({"endowment_range": [0, 2]}, "1 <= low"),
    ({"endowment_range": [3, 1]}, "low <= high"), ({"valuation_range": [0, 4, 5]}, "low, high"),
    ({"payoff": "judge"}, "structured"), ({"message_chars": 5}, "greater than or equal"),
    ({"endowment_range": ["1", 2]}, "valid integer")])
def test_bad_parameters_are_clear_errors(params: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        FruitParams(**params)


# ---- prompts ----

@pytest.mark.parametrize("payoff", ["structured", "llm"])
def test_templates_render_for_every_seat_and_turn(payoff: str) -> None:
    tpl = Template(GAME)
    setup = fixed(*ANN, payoff=payoff)
    state = GAME.initial_state(setup)
    texts = []
    for text in [ANN_OPEN, reply("counter", trade(banana=2), trade(apple=1)), '{"decision": "reject"}']:
        if not GAME.to_move(state):
            break
        seat = GAME.to_move(state)[0]
        for env in ("melee", "rational", "self"):
            for variant in ("default", "cot"):
                system, user = tpl.render(state, seat, env, variant)
                texts.append(user.content)
                tpl.follow_up(state, seat, variant)
                tpl.reask("a sample problem", state, seat, variant)
        action = GAME.judge(state, seat, text).action
        after = GAME.apply(state, {seat: action})
        for other in (0, 1):
            fields = GAME.report(state, after, {seat: action}, other)
            if fields is not None:
                texts.append(tpl.report(fields, after, other))
        state = after
    joined = "\n".join(texts)
    assert "summing to" not in joined and "{" + "task}" not in joined
    assert "You hold: apple: 2, banana: 2, orange: 1" in joined
    assert "from your side: you give 1 banana and receive 1 apple" in joined  # player 2's reading
    if payoff == "structured":
        assert "from your side: you give 1 apple and receive 2 banana. Answer \"accept\"" in joined
    else:
        assert "a referee" in joined and "Answer \"accept\"" not in joined


# ---- end to end through the CLI ----

SCRIPTED = """\
[experiment]
name = "fruit-scripted"
game = "fruit_trade"
environment = "melee"
sessions = 1
runs = 2
seed = 3

[game]
fruits = ["apple", "banana"]
endowment_range = [2, 2]
valuation_range = [3, 3]

[[players]]
agent = "scripted"
label = "P1"
responses = [{open}, '{{"decision": "accept"}}', {open}]

[[players]]
agent = "scripted"
label = "P2"
responses = [{counter}, {accept}]
"""


def test_cli_run_with_scripted_replies(tmp_path: Path) -> None:
    """Everyone holds 2 of each fruit worth 3 a piece. Run 0: player 1 offers 1 apple for 2 bananas,
    player 2 counters with 1 banana for 2 apples and player 1 accepts: player 1 gets 1 banana for 2
    apples, 3 * (1 - 2) = -3, player 2 +3. Run 1: player 2 accepts the opening: player 1 3 * (2 - 1) = +3."""
    q = lambda s: "'" + s + "'"  # noqa: E731 - a TOML literal string
    path = tmp_path / "fruit.toml"
    path.write_text(SCRIPTED.format(
        open=q(json.dumps({"message": "1 apple for 2 bananas?", "give": {"apple": 1, "banana": 0},
                           "receive": {"apple": 0, "banana": 2}})),
        counter=q(json.dumps({"message": "No: 1 banana for 2 apples.", "decision": "counter",
                              "give": {"apple": 0, "banana": 1}, "receive": {"apple": 2, "banana": 0}})),
        accept=q(json.dumps({"message": "Deal.", "decision": "accept", "give": {"apple": 0, "banana": 0},
                             "receive": {"apple": 0, "banana": 0}}))))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    runs = sorted((json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()), key=lambda r: r["run"])
    assert [r["payoffs"] for r in runs] == [[-3.0, 3.0], [3.0, -3.0]]
    assert [r["metrics"]["agreement"] for r in runs] == [False, True]
    assert [r["metrics"]["structured_payoffs"] for r in runs] == [[-3.0, 3.0], [3.0, -3.0]]
    assert [r["rounds"] for r in runs] == [3, 2] and all(r["valid"] == [True, True] for r in runs)
    assert runs[0]["extra"]["deal"] == {"player_1_gives": {"apple": 2}, "player_2_gives": {"banana": 1}}
    decisions = [json.loads(x) for x in (out / "decisions.jsonl").read_text().splitlines()]
    assert len(decisions) == 5 and all(d["valid"] for d in decisions)
    # player 1's last decision continues its conversation: the counter arrives as an email
    last = [d for d in decisions if d["run"] == 0 and d["round"] == 2][0]
    shown = "\n".join(m["content"] for m in last["messages"])
    assert "from: Player 2\nto: Player 1" in shown and "No: 1 banana for 2 apples." in shown


def test_shipped_example_config_runs(tmp_path: Path) -> None:
    config = Path(__file__).resolve().parent.parent / "configs" / "fruit_trade.toml"
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--quiet"]) == 0
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert runs and all(r["complete"] for r in runs)
    for r in runs:
        assert r["payoffs"] == r["metrics"]["structured_payoffs"]
        assert r["metrics"]["deal"] == (r["extra"]["deal"] is not None)
