"""NegotiationArena: the three scenarios' rules, payoffs and metrics by hand, the aggregations (win rates by
both formulas, anchoring, bad counter-offers, acceptance curves) and the importer of the released
``game_state.json`` logs, on small logs built here in the same format."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from econarena.analysis.families import negotiationarena as na
from econarena.cli import main
from econarena.games import get_game
from econarena.games.base import RULE_VIOLATION, Game
from econarena.games.negotiationarena.common import parse_trade_text, trade_text

EX, UL, BS = get_game("resource_exchange"), get_game("ultimatum"), get_game("buy_sell")


def play(game: Game, moves: list[dict[str, Any]], **params: Any) -> tuple[Any, list[dict[str, Any]], Any]:
    """Judge and apply ``moves`` in turn (RED first); returns (setup, round_log, final state)."""
    setup = game.setup(game.Params(**params), 2, np.random.default_rng(0))
    state = game.initial_state(setup)
    log: list[dict[str, Any]] = []
    for move in moves:
        seat = game.to_move(state)[0]
        j = game.judge(state, seat, json.dumps({"reason": "", "message": "hi", **move}))
        assert j.valid, j.detail
        after = game.apply(state, {seat: j.action})
        log.append({"round": len(log), "actions": [j.action if i == seat else None for i in (0, 1)],
                    "events": game.events(state, after, {seat: j.action})})
        state = after
    return setup, log, state


def ex(d: str, red: dict[str, int] | None = None, blue: dict[str, int] | None = None) -> dict[str, Any]:
    z = {"X": 0, "Y": 0}
    return {"decision": d, "red_gives": {**z, **(red or {})}, "blue_gives": {**z, **(blue or {})}}


# ------------------------------------------------------------------------------------------- the games

def test_resource_exchange_executes_the_trade_just_before_the_accept() -> None:
    setup, log, state = play(EX, [ex("propose", {"X": 10}, {"Y": 10}), ex("propose", {"X": 10}, {"Y": 7}),
                                  ex("propose", {"X": 8}, {"Y": 7}), ex("accept")])
    out = EX.outcome(state)
    assert out.payoffs == (-1.0, 1.0)  # RED gives 8, gets 7
    assert out.winners == (1,) and not out.void and out.extra["ended"] == "accept"
    m = EX.metrics(setup, log)
    assert m["payoff"] == [-1.0, 1.0] and m["win"] == [False, True] and m["agreement"]
    assert m["proposals"] == [2, 1] and m["turns"] == 4 and m["first_response"] == "propose"
    # the events carry the public part only: no reason
    assert log[0]["events"]["say"] == {"player": 0, "message": "hi", "decision": "propose",
                                       "offer": {"red_gives": {"X": 10}, "blue_gives": {"Y": 10}}}


def test_resource_exchange_limits_and_rule_violations() -> None:
    setup, log, state = play(EX, [ex("propose", {"X": 1}, {"Y": 2})] + [ex("none")] * 7)
    assert EX.outcome(state).payoffs == (0.0, 0.0) and EX.outcome(state).extra["ended"] == "limit"
    assert EX.to_move(state) == ()
    state = EX.initial_state(setup)
    for reply, problem in ((ex("accept"), "no trade on the table"), (ex("propose", {"X": 26}), "hold only 25"),
                           (ex("propose"), "must move some resources")):
        j = EX.judge(state, 0, json.dumps({"reason": "", "message": "", **reply}))
        assert j.violation == RULE_VIOLATION and problem in (j.detail or "")
    # BLUE cannot accept to give more Y than it holds
    s1 = EX.apply(state, {0: {"reason": "", "message": "", **ex("propose", {"X": 1}, {"Y": 30})}})
    j = EX.judge(s1, 1, json.dumps({"reason": "", "message": "", **ex("accept")}))
    assert j.violation == RULE_VIOLATION and "hold only 25" in (j.detail or "")
    # a rule break ends the game without a deal and marks the seat
    broken = EX.apply(s1, {1: None})
    assert EX.outcome(broken).valid == (True, False) and EX.outcome(broken).payoffs == (0.0, 0.0)


def test_ultimatum_payoffs_reject_and_last_move() -> None:
    setup, log, state = play(UL, [{"decision": "propose", "red_gives": 30}, {"decision": "propose", "red_gives": 50},
                                  {"decision": "propose", "red_gives": 40}, {"decision": "accept", "red_gives": 0}])
    assert UL.outcome(state).payoffs == (60.0, 40.0)
    m = UL.metrics(setup, log)
    assert m["first_offer"] == 30 and m["final_price"] == 40 and m["win"] == [True, False]
    _, _, state = play(UL, [{"decision": "propose", "red_gives": 30}, {"decision": "reject", "red_gives": 0}])
    assert UL.outcome(state).payoffs == (0.0, 0.0) and UL.outcome(state).void
    # 2 messages: BLUE's reply is the last one, it may not propose
    setup2 = UL.setup(UL.Params(turns=2), 2, np.random.default_rng(0))
    s = UL.apply(UL.initial_state(setup2), {0: {"reason": "", "message": "", "decision": "propose", "red_gives": 5}})
    j = UL.judge(s, 1, json.dumps({"reason": "", "message": "", "decision": "propose", "red_gives": 50}))
    assert j.violation == RULE_VIOLATION and "only accept or reject" in (j.detail or "")


def test_ultimatum_paper_metric_zeroes_a_red_payoff_equal_to_the_total() -> None:
    moves = [{"decision": "propose", "red_gives": 0}, {"decision": "accept", "red_gives": 0}]
    setup, log, state = play(UL, moves)
    assert UL.outcome(state).payoffs == (100.0, 0.0) and UL.metrics(setup, log)["payoff"] == [100.0, 0.0]
    setup, log, state = play(UL, moves, metrics="paper")
    assert UL.outcome(state).payoffs == (100.0, 0.0)  # the rules
    assert UL.metrics(setup, log)["payoff"] == [0.0, 0.0]  # the authors' notebook
    assert UL.metrics(setup, log)["win"] == [False, False]


def test_buy_sell_payoffs_and_bad_counter_offer() -> None:
    p = lambda d, x=0: {"decision": d, "price": x}  # noqa: E731
    setup, log, state = play(BS, [p("propose", 70), p("propose", 45), p("propose", 55), p("accept")])
    assert BS.outcome(state).payoffs == (15.0, 5.0)  # 55 - 40, 60 - 55
    m = BS.metrics(setup, log)
    assert m["first_offer"] == 70 and m["final_price"] == 55 and m["bad_counter_offer"] is False
    assert m["win"] == [True, False] and m["first_response"] == "propose"
    setup, log, _ = play(BS, [p("propose", 50), p("propose", 52), p("reject")])
    m = BS.metrics(setup, log)
    assert m["bad_counter_offer"] is True and m["payoff"] == [0.0, 0.0] and not m["agreement"]
    setup, log, _ = play(BS, [p("propose", 50), p("reject")])
    assert BS.metrics(setup, log)["bad_counter_offer"] is False  # no counter-price counts as 0
    # reverse setting: seller 60, buyer 40; a sale at 45 loses both... the seller 15, the buyer 5
    setup, log, state = play(BS, [p("propose", 45), p("accept")], seller_cost=60, buyer_value=40)
    assert BS.outcome(state).payoffs == (-15.0, -5.0)
    s = BS.apply(BS.initial_state(setup), {0: {"reason": "", "message": "", **p("propose", 150)}})
    j = BS.judge(s, 1, json.dumps({"reason": "", "message": "", **p("accept")}))
    assert j.violation == RULE_VIOLATION and "hold only 100" in (j.detail or "")


def test_rational_baselines() -> None:
    # ultimatum: RED offers 0, BLUE accepts; buy/sell: the seller asks its cost, the buyer accepts
    for game, pay in ((UL, (100.0, 0.0)), (BS, (0.0, 20.0))):
        setup = game.setup(game.Params(), 2, np.random.default_rng(0))
        state = game.initial_state(setup)
        while movers := game.to_move(state):
            seat = movers[0]
            state = game.apply(state, {seat: game.judge(state, seat, json.dumps(
                game.strategy(state, seat, "rational"))).action})
        assert game.outcome(state).payoffs == pay


def test_trade_text_round_trips() -> None:
    t = parse_trade_text("Player RED Gives X: 5, Y: 2 | Player BLUE Gives Y: 3")
    assert t == {"red_gives": {"X": 5, "Y": 2}, "blue_gives": {"Y": 3}}
    assert parse_trade_text(trade_text(t)) == t  # type: ignore[arg-type]
    assert parse_trade_text(" NONE ") is None
    with pytest.raises(ValueError):
        parse_trade_text("Player RED Gives X: five")


def test_prompts_show_the_opponent_move_but_never_its_reason() -> None:
    from econarena.hosts.prompts import Template

    setup = BS.setup(BS.Params(), 2, np.random.default_rng(0))
    s0 = BS.initial_state(setup)
    act = {"reason": "my cost is 40, SECRET", "message": "Buy it for 70.", "decision": "propose", "price": 70}
    s1 = BS.apply(s0, {0: act})
    msgs = Template(BS).render(s1, 1, "melee", "default")
    text = "\n".join(m.content for m in msgs)
    assert 'Player RED says: "Buy it for 70."' in text and "Player BLUE Gives ZUP: 70" in text
    assert "SECRET" not in text and "willing to pay at most X: 60" in text and "cost" not in text.split("Your goal")[0]
    assert "at most 4 proposals" in text
    report = BS.report(s0, s1, {0: act}, 1)
    assert report is not None and "SECRET" not in json.dumps(report) and BS.report(s0, s1, {0: act}, 0) is None


# ------------------------------------------------------------------------------------------- aggregation

def test_win_rates_correct_and_published_formula() -> None:
    win1 = [True] * 2 + [False] * 8
    win2 = [False] * 2 + [True] * 6 + [False] * 2
    assert na.win_rates(win1, win2) == pytest.approx((0.25, 0.75))
    assert na.win_rates(win1, win2, "paper") == pytest.approx((0.25, 0.6 / 0.85))
    assert na.win_rates([False], [False]) == (None, None)
    # the spec's published pairs: 60 games; P1 / P2 wins giving the published (bugged) and correct P2 rates
    for w1, w2, published, correct in ((13, 14, 0.33, 0.52), (9, 37, 0.76, 0.80)):
        a = [True] * w1 + [False] * (60 - w1)
        b = [False] * w1 + [True] * w2 + [False] * (60 - w1 - w2)
        assert round(na.win_rates(a, b)[1], 2) == correct  # type: ignore[arg-type]
        assert round(na.win_rates(a, b, "paper")[1], 2) == published  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="formula"):
        na.win_rates([True], [False], "code")


def test_correlations_by_hand() -> None:
    assert na.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    assert na.spearman([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert na.pearson([1, 1, 2, 3], [10, 20, 30, 50]) == pytest.approx(47.5 / math.sqrt(2.75 * 875))
    assert na.pearson([1, 1], [2, 3]) is None and na.pearson([1], [2]) is None


def row(scenario: str = "buy_sell", p1: str = "a", p2: str = "b", pay: tuple[float, float] = (0.0, 0.0),
        **kw: Any) -> na.GameRow:
    return na.GameRow(scenario, p1, p2, pay, (pay[0] > pay[1], pay[0] < pay[1]), kw.pop("agreement", True), **kw)


def test_anchoring_bad_counter_offers_and_acceptance_curve() -> None:
    rows = [row(first_offer=x, final_price=y) for x, y in ((1, 2), (2, 1), (3, 4), (4, 3), (5, 5))]
    rows.append(row(first_offer=9, final_price=None, agreement=False))  # no deal: not in the anchoring
    a = na.anchoring(rows)
    assert a["n"] == 5 and a["spearman"] == pytest.approx(0.8) and a["pearson"] == pytest.approx(0.8)
    flags = [row(bad_counter_offer=b) for b in (True, False, False, False, None)]
    r = na.bad_counter_offer_rate(flags)
    assert r["n"] == 4 and r["rate"] == 0.25 and r["se"] == pytest.approx(math.sqrt(0.25 * 0.75 / 4))
    curve = na.acceptance_curve([row("ultimatum", first_offer=o, first_response=d)
                                 for o, d in ((0, "reject"), (0, "accept"), (5, "accept"), (5, None))])
    assert curve == {0.0: (0.5, 2), 5.0: (1.0, 1)}


def test_pair_table_by_ordered_pair() -> None:
    rows = [row("ultimatum", "m1", "m2", (60, 40)), row("ultimatum", "m1", "m2", (50, 50)),
            row("ultimatum", "m1", "m2", (30, 70)), row("ultimatum", "m2", "m1", (80, 20))]
    t = na.pair_table(rows)
    assert [(r["p1_model"], r["p2_model"], r["games"]) for r in t] == [("m1", "m2", 3), ("m2", "m1", 1)]
    assert t[0]["p1_win_rate"] == 0.5 and t[0]["p2_win_rate"] == 0.5
    assert t[0]["p1_payoff"] == pytest.approx(140 / 3) and t[0]["p2_payoff"] == pytest.approx(160 / 3)
    assert t[1]["p1_win_rate"] == 1.0 and t[1]["p2_win_rate"] == 0.0
    text = na.pairs_csv(t)
    assert text.splitlines()[0] == ",".join(na.PAIR_COLUMNS)


# ------------------------------------------------------------------------------------------- from TOML

@pytest.mark.parametrize("game", ["resource_exchange", "ultimatum", "buy_sell"])
def test_toml_runs_with_rational_random_and_scripted_players(game: str, tmp_path: Path, arena: Any) -> None:
    scripted = {"agent": "scripted", "label": "s", "responses": [
        '{"reason": "x", "message": "no idea", "decision": "reject"}']}
    lineups = [[{"agent": "rational", "label": "r"}, {"agent": "random", "label": "q"}], [{"agent": "random",
               "label": "q"}, scripted]]
    for k, players in enumerate(lineups):
        doc = arena.experiment_dict(game, players, sessions=2, runs=1, seed=3, reask=1)
        path = tmp_path / f"{k}.toml"
        path.write_text(arena.to_toml(doc), encoding="utf-8")
        out = tmp_path / f"run{k}"
        proc = arena.cli("run", str(path), "--out", str(out), "--quiet")
        assert proc.returncode == 0, proc.stderr
        runs = arena.read_jsonl(out / "runs.jsonl")
        assert len(runs) == 2 and all(r["complete"] for r in runs)
        for r in runs:
            assert len(r["metrics"]["payoff"]) == 2 and r["metrics"]["payoff"] == r["payoffs"]
            assert all("reason" not in json.dumps(x["events"]) for x in r["round_log"])
    three = arena.experiment_dict(game, [{"agent": "random", "count": 3}], sessions=1)
    path = tmp_path / "three.toml"
    path.write_text(arena.to_toml(three), encoding="utf-8")
    proc = arena.cli("validate", str(path))
    assert proc.returncode == 2 and "two-player game" in proc.stderr


def test_negotiationarena_configs_validate(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parent.parent / "configs" / "negotiationarena"
    files = sorted(p for p in root.glob("*.toml") if p.name != "models.toml")
    assert {p.stem for p in files} >= {"resource_exchange", "ultimatum", "buy_sell"}
    for path in files:
        assert main(["validate", str(path), str(root / "models.toml")]) == 0, capsys.readouterr().err
    assert "resource_exchange, melee, 1 table(s) x 60 session(s)" in capsys.readouterr().out


def test_import_out_at_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from econarena.cli import main

    target = tmp_path / "a-file"
    target.write_text("x", encoding="utf-8")
    for source in ("negotiationarena", "gamabench"):
        assert main(["import", source, str(tmp_path), "--out", str(target)]) == 2
        assert "is a file, not a directory" in capsys.readouterr().err
