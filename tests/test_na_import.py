"""NegotiationArena import: the recorded outcome is the outcome, the replay is a counted check, every log is
accounted for, and the published Figure 3 is printed beside the logs. Logs are built here in the released
``game_state.json`` format; their END summaries are computed the way the authors' engine does (both trade
sides executed by position and netted; final = initial unless the last answer is exactly ACCEPT), by
hand-written code in this file, not by ours."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from econarena.analysis.families import negotiationarena as na
from econarena.analysis.published import load as load_published
from econarena.cli import main
from econarena.games import get_game
from econarena.importers.negotiationarena import import_dir

EX, UL, BS = get_game("resource_exchange"), get_game("ultimatum"), get_game("buy_sell")
SAMPLE = Path("/work/shared/data/negotiationarena-sample")


def res(d: dict[str, int]) -> dict[str, Any]:
    return {"_type": "resource", "_value": d}


def trade(red: dict[str, int], blue: dict[str, int], order: tuple[str, str] = ("RED", "BLUE")) -> dict[str, Any]:
    sides = {"RED": res(red), "BLUE": res(blue)}
    return {"_type": "trade", "_value": {k: sides[k] for k in order}}


def _as_object(tr: Any) -> Any:
    """A text trade as the engine would have stored it (the released summaries hold objects)."""
    if not isinstance(tr, str) or tr.strip() == "NONE":
        return tr
    sides = []
    for part in tr.split("|"):
        sides.append(res({k: int(v) for k, v in re.findall(r"(\w+)\s*:\s*(\d+)", part.split("Gives", 1)[1])}))
    return {"_type": "trade", "_value": {"RED": sides[0], "BLUE": sides[1]}}


def engine_summary(init: list[dict[str, int]], moves: list[tuple[str, Any, str]]) -> dict[str, Any]:
    """NegotiationArena's check_winner: the trade of the message before last, executed by POSITION (the
    first side is what RED gives), both sides netted, no checks; final = initial unless exactly ACCEPT."""
    answer = moves[-1][0] if moves else "NONE"
    proposed = _as_object(moves[-2][1]) if len(moves) > 1 else "NONE"
    final = [dict(init[0]), dict(init[1])]
    if answer == "ACCEPT" and isinstance(proposed, dict):
        first, second = (s["_value"] for s in proposed["_value"].values())
        for k in set(first) | set(second):
            final[0][k] = final[0].get(k, 0) + second.get(k, 0) - first.get(k, 0)
            final[1][k] = final[1].get(k, 0) + first.get(k, 0) - second.get(k, 0)
    outcome = [res({k: final[i].get(k, 0) - init[i].get(k, 0) for k in set(final[i]) | set(init[i])}) for i in (0, 1)]
    return {"initial_resources": [res(x) for x in init], "final_resources": [res(x) for x in final],
            "proposed_trade": proposed, "final_response": answer, "player_outcome": outcome}


def log_file(cls: str, models: tuple[str, str], init: list[dict[str, int]], moves: list[tuple[str, Any, str]],
             iterations: int, goals: list[Any] | None = None, *, end: bool = True,
             summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """A game_state.json of the released format: moves are (answer, trade or "NONE", message)."""
    states: list[dict[str, Any]] = [{"current_iteration": "START", "turn": "None", "settings": {}}]
    for i, (answer, tr, msg) in enumerate(moves):
        states.append({"current_iteration": i + 1, "turn": i % 2,
                       "player_public_info_dict": {"message": msg, "player answer": answer,
                                                   "newly proposed trade": tr},
                       "player_private_info_dict": {"reason": f"secret {i}"},
                       "player_complete_answer": f"<reason> secret {i} </reason>"})
    if end:
        states.append({"current_iteration": "END", "turn": "None",
                       "summary": summary if summary is not None else engine_summary(init, moves)})
    players = [{"class": "ChatGPTAgent", "model": m, "agent_name": name,
                "conversation": [{"role": "system", "content": "rules"}]
                + [x for k in range(len(moves)) if k % 2 == seat
                   for x in ({"role": "user", "content": f"turn {k}"}, {"role": "assistant", "content": f"reply {k}"})]}
               for seat, (m, name) in enumerate(zip(models, ("Player RED", "Player BLUE")))]
    return {"class": cls, "players": players, "game_state": states, "iterations": iterations,
            "player_initial_resources": [res(x) for x in init],
            "player_goals": goals or [{"_type": "goal", "_value": ""}] * 2}


def val(x: int, kind: str) -> dict[str, Any]:
    return {"_type": "goal", "_value": {"_type": kind, "_value": {"_type": "valuation", "_value": {"X": x}}}}


TRADING = [{"X": 25, "Y": 5}, {"X": 5, "Y": 25}]
DOLLARS = [{"Dollars": 100}, {"Dollars": 0}]
MARKET = [{"X": 1}, {"ZUP": 100}]


def ult(models: tuple[str, str], *moves: tuple[str, Any, str], **kw: Any) -> dict[str, Any]:
    return log_file("MultiTurnUltimatumGame", models, DOLLARS, list(moves), 8, **kw)


def gift(red: int, blue: int = 0) -> dict[str, Any]:
    return trade({"Dollars": red}, {"Dollars": blue})


def write_logs(root: Path, logs: dict[str, Any]) -> None:
    for rel, doc in logs.items():
        (root / rel).mkdir(parents=True)
        (root / rel / "game_state.json").write_text(doc if isinstance(doc, str) else json.dumps(doc),
                                                    encoding="utf-8")


def fixture_logs(root: Path) -> None:
    """Two models; hand-computed outcomes in the comments."""
    write_logs(root, {
        # resource exchange, A (RED) vs B: RED gives X 8 for Y 7 -> -1 / +1 (B wins)
        "trading/1": log_file("TradingGame", ("A", "B"), TRADING, [
            ("NONE", trade({"X": 10}, {"Y": 10}), "hi"), ("NONE", "Player RED Gives X: 8 | Player BLUE Gives Y: 7",
                                                           "counter"), ("ACCEPT", "NONE", "ok")], 8),
        # A vs B: RED gives X 5 for Y 8 -> +3 / -3 (A wins)
        "trading/2": log_file("TradingGame", ("A", "B"), TRADING, [
            ("NONE", trade({"X": 5}, {"Y": 8}), "hi"), ("ACCEPT", "NONE", "ok")], 8),
        # A vs B: X 5 for Y 5 -> tie 0 / 0
        "trading/3": log_file("TradingGame", ("A", "B"), TRADING, [
            ("NONE", trade({"X": 5}, {"Y": 5}), "hi"), ("ACCEPT", "NONE", "ok")], 8),
        # ultimatum, B (RED) vs A: 30 then 40 accepted -> 60 / 40; a reject -> 0 / 0; a 0 gift accepted
        "ult/1": ult(("B", "A"), ("NONE", gift(30), "30?"), ("NONE", gift(50), "50!"), ("NONE", gift(40), "40"),
                     ("ACCEPT", "NONE", "fine")),
        "ult/2": ult(("B", "A"), ("NONE", gift(10), "10"), ("REJECT", "NONE", "no")),
        "ult/3": ult(("B", "A"), ("NONE", gift(0), "0"), ("ACCEPT", "NONE", "ok")),
        # buy/sell, A (seller, cost 40) vs B (value 60): 70, counter 45 (not bad), 55 accepted -> 15 / 5
        "bs/1": log_file("BuySellGame", ("A", "B"), MARKET, [
            ("PROPOSAL", trade({"X": 1}, {"ZUP": 70}), "70"), ("PROPOSAL", trade({"X": 1}, {"ZUP": 45}), "45"),
            ("PROPOSAL", trade({"X": 1}, {"ZUP": 55}), "55"), ("ACCEPT", "NONE", "ok")], 10,
            [val(40, "seller_goal"), val(60, "buyer_goal")]),
        # 50, buyer rejects without a price -> 0 / 0, not a bad counter-offer
        "bs/2": log_file("BuySellGame", ("A", "B"), MARKET, [
            ("PROPOSAL", trade({"X": 1}, {"ZUP": 50}), "50"), ("REJECT", "NONE", "no")], 10,
            [val(40, "seller_goal"), val(60, "buyer_goal")]),
        "broken": "{not json",
        "other": {"class": "ChessGame"},
    })


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# ------------------------------------------------------------------------------ from_reference: one log

def test_from_reference_reads_the_record_and_replays_the_moves() -> None:
    doc = log_file("BuySellGame", ("A", "B"), MARKET, [
        ("Propose a trade with", trade({"X": 1}, {"ZUP": 60}), "60"), ("ACCEPT", "NONE", "ok")], 10,
        [val(60, "seller_goal"), val(40, "buyer_goal")])
    imp = BS.from_reference(doc)
    assert imp.params["seller_cost"] == 60 and imp.params["buyer_value"] == 40 and imp.params["turns"] == 10
    assert imp.payoffs == [0.0, -20.0]  # our replay: p - 60, 40 - p at p = 60
    assert imp.recorded["payoff"] == [0.0, -20.0] and imp.recorded["final_price"] == 60.0
    assert imp.check.agree and imp.check.causes == ()
    assert imp.round_log[0]["actions"][0]["reason"] == "secret 0"
    assert "secret" not in json.dumps([r["events"] for r in imp.round_log])
    with pytest.raises(ValueError, match="expected a BuySellGame"):
        BS.from_reference({**doc, "class": "TradingGame"})


def test_buy_sell_summary_that_contradicts_its_holdings_is_flagged() -> None:
    moves = [("PROPOSAL", trade({"X": 1}, {"ZUP": 55}), "55"), ("ACCEPT", "NONE", "ok")]
    summary = engine_summary(MARKET, moves)
    summary["player_outcome"] = [99, -99]  # not 55 - 40 = 15, 60 - 55 = 5
    imp = BS.from_reference(log_file("BuySellGame", ("A", "B"), MARKET, moves, 10,
                                     [val(40, "seller_goal"), val(60, "buyer_goal")], summary=summary))
    assert imp.recorded["payoff"] == [15.0, 5.0]  # final - initial is what the authors' figures use
    assert imp.check.agree and "outcome_mismatch" in imp.check.causes


def test_an_accept_whose_summary_moves_nothing_although_the_trade_does_is_a_source_inconsistency() -> None:
    """The summary says ACCEPT of X for 55 ZUP but its final holdings are the initial ones: the summary
    contradicts itself (before: attributed to zero_net_accept, a metric definition, which is for trades that
    net to nothing)."""
    moves = [("PROPOSAL", trade({"X": 1}, {"ZUP": 55}), "55"), ("ACCEPT", "NONE", "ok")]
    summary = engine_summary(MARKET, moves)
    summary["final_resources"] = summary["initial_resources"]
    imp = BS.from_reference(log_file("BuySellGame", ("A", "B"), MARKET, moves, 10,
                                     [val(40, "seller_goal"), val(60, "buyer_goal")], summary=summary))
    assert imp.recorded["agreement"] and not imp.check.agree
    assert imp.check.causes[0] == "summary_ignores_trade" and "zero_net_accept" not in imp.check.causes
    assert imp.check.kind == "source inconsistency" and "the summary contradicts itself" in imp.check.detail


def test_a_two_sided_ultimatum_trade_keeps_the_logged_split() -> None:
    # 1702869646905: "RED Gives Dollars: 55 | BLUE Gives Dollars: 5" accepted; the engine nets it to 50 / 50
    imp = UL.from_reference(ult(("gpt-3.5-turbo-1106", "gpt-4-1106-preview"), ("NONE", gift(55, 5), "55"),
                                ("ACCEPT", "NONE", "I get 55")))
    assert imp.recorded["payoff"] == [50.0, 50.0] and imp.recorded["final_price"] == 50.0
    assert imp.payoffs == [45.0, 55.0]  # our rules execute RED's side only
    c = imp.check
    assert not c.agree and c.causes[0] == "two_sided_transfer" and c.kind == "rule difference"
    assert c.recorded["payoff"] == [50.0, 50.0] and c.replayed["payoff"] == [45.0, 55.0]
    assert "recorded 50 / 50 (ACCEPT), our replay 45 / 55" in c.detail


def test_a_fifty_fifty_two_sided_trade_nets_to_no_transfer() -> None:
    # 1706508367659: "50 | 50" accepted: nothing moves; correct 100 / 0, the paper's rule 0 / 0
    imp = UL.from_reference(ult(("gpt-3.5-turbo-1106", "gpt-4-1106-preview"), ("NONE", gift(50, 50), "fair"),
                                ("ACCEPT", "NONE", "agree")))
    assert imp.recorded["payoff"] == [100.0, 0.0] and imp.recorded["payoff_paper"] == [0.0, 0.0]
    assert imp.payoffs == [50.0, 50.0]
    assert not imp.check.agree
    assert imp.check.causes[:2] == ("two_sided_transfer", "zero_net_accept")


def test_an_unknown_resource_proposed_but_never_accepted_imports_as_recorded() -> None:
    # 1702531475489: "RED Gives Y: 2 | BLUE Gives Z: 3", then "... BLUE Gives Any Resource: 3"; all 8 messages
    moves = [("NONE", trade({"X": 5}, {"Y": 3}), "a"), ("NONE", "NONE", "b"), ("NONE", trade({"Y": 2}, {"Z": 3}), "c"),
             ("NONE", "NONE", "no Z"), ("NONE", trade({"X": 5}, {"Any Resource": 3}), "d"), ("NONE", "NONE", "e"),
             ("NONE", "NONE", "f"), ("NONE", "NONE", "g")]
    imp = EX.from_reference(log_file("TradingGame", ("A", "B"), TRADING, moves, 8))
    assert imp.recorded["payoff"] == [0.0, 0.0] and imp.recorded["agreement"] is False
    assert imp.check.agree and imp.check.causes == ("unknown_resource_proposed",)
    assert imp.round_log[2]["actions"][0]["red_gives"] == {"X": 0, "Y": 2}  # Z dropped from our replay's trade


def test_an_accepted_unknown_resource_is_counted_as_the_engine_did() -> None:
    # the engine executes "BLUE Gives Z: 3" as a new resource: RED -5 X +3 Z = -2, BLUE +2
    moves = [("NONE", trade({"X": 5}, {"Z": 3}), "z?"), ("ACCEPT", "NONE", "sure")]
    imp = EX.from_reference(log_file("TradingGame", ("A", "B"), TRADING, moves, 8))
    assert imp.recorded["payoff"] == [-2.0, 2.0]
    assert imp.payoffs == [-5.0, 5.0]  # ours keeps X only
    assert not imp.check.agree and imp.check.causes[0] == "unknown_resource_accepted"
    assert imp.check.kind == "malformed move"


def test_sides_in_reverse_order_are_executed_by_position() -> None:
    # stored {"BLUE": Y 7, "RED": X 8}: the engine's first side (BLUE's) is what RED gives -> RED +8 X -7 Y = +1
    moves = [("NONE", trade({"X": 8}, {"Y": 7}, order=("BLUE", "RED")), "x"), ("ACCEPT", "NONE", "ok")]
    imp = EX.from_reference(log_file("TradingGame", ("A", "B"), TRADING, moves, 8))
    assert imp.recorded["payoff"] == [1.0, -1.0] and imp.payoffs == [-1.0, 1.0]
    assert imp.check.causes[0] == "side_order_reversed" and imp.check.kind == "rule difference"


def test_an_answer_with_a_newline_ends_our_replay_but_not_the_engine() -> None:
    # "ACCEPT\n" is no ACCEPT for the engine (it strips spaces only): the game went on to a 30 gift, accepted
    moves = [("NONE", gift(40), "40"), ("ACCEPT\n", "NONE", "ok"), ("NONE", gift(30), "30 then"),
             ("ACCEPT", "NONE", "fine")]
    imp = UL.from_reference(ult(("A", "B"), *moves))
    assert imp.recorded["payoff"] == [70.0, 30.0]
    assert imp.payoffs is None and len(imp.round_log) == 2  # our replay stopped at move 3
    assert not imp.check.agree and imp.check.causes[:2] == ("answer_variant", "replay_error")
    assert imp.check.kind == "parser difference" and "a move after the game ended" in imp.check.detail


def test_a_log_without_end_has_no_record() -> None:
    imp = UL.from_reference(ult(("A", "B"), ("NONE", gift(40), "40"), end=False))
    assert imp.recorded is None and imp.check is None and imp.payoffs == [0.0, 0.0]


# ------------------------------------------------------------------------- the import: every log counted

def test_every_log_is_imported_or_refused_and_the_record_is_the_outcome(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_logs(logs, {
        "u/two_sided": ult(("C", "D"), ("NONE", gift(55, 5), "55"), ("ACCEPT", "NONE", "ok")),
        "u/fifty": ult(("C", "D"), ("NONE", gift(50, 50), "50"), ("ACCEPT", "NONE", "ok")),
        "u/plain": ult(("C", "D"), ("NONE", gift(30), "30"), ("ACCEPT", "NONE", "ok")),
        "u/unended": ult(("C", "D"), ("NONE", gift(30), "30"), end=False),
        "t/z": log_file("TradingGame", ("C", "D"), TRADING, [("NONE", trade({"Y": 2}, {"Z": 3}), "z"),
                                                             ("NONE", "NONE", "no")], 8),
        "bad": "[1, 2",
        "list": [1, 2],
        "chess": {"class": "ChessGame"},
        "nomoves": ult(("C", "D")),
    })
    out = tmp_path / "out"
    result = import_dir(logs, out, metrics="correct")
    assert result.found == 9 and result.runs == 4 and len(result.refused) == 5
    assert result.found == result.runs + len(result.refused)
    cats = {r.item: r.category for r in result.refused}
    assert cats == {"u/unended/game_state.json": "unended", "bad/game_state.json": "unreadable",
                    "list/game_state.json": "unreadable", "chess/game_state.json": "unknown_format",
                    "nomoves/game_state.json": "unreadable"}
    assert result.checked == {"ultimatum": 3, "resource_exchange": 1}
    assert result.agreed == {"ultimatum": 1, "resource_exchange": 1}
    assert sorted(d.item for d in result.disagreements) == ["u/fifty/game_state.json", "u/two_sided/game_state.json"]
    assert result.causes[("resource_exchange", "unknown_resource_proposed")] == 1
    runs = {r["imported"]["file"]: r for r in map(json.loads, (out / "ultimatum--C--vs--D" / "runs.jsonl")
                                                    .read_text().splitlines())}
    assert runs["u/two_sided/game_state.json"]["payoffs"] == [50.0, 50.0]
    assert runs["u/two_sided/game_state.json"]["metrics"]["payoff"] == [50.0, 50.0]
    assert runs["u/two_sided/game_state.json"]["winners"] == []
    assert runs["u/two_sided/game_state.json"]["imported"]["check"]["causes"][0] == "two_sided_transfer"
    assert runs["u/fifty/game_state.json"]["metrics"]["payoff"] == [100.0, 0.0]
    assert runs["u/plain/game_state.json"]["metrics"]["final_price"] == 30.0
    # the paper's per-game rule: RED's payoff is 0 when it equals the total
    import_dir(logs, out, metrics="paper")
    runs = {r["imported"]["file"]: r for r in map(json.loads, (out / "ultimatum--C--vs--D" / "runs.jsonl")
                                                    .read_text().splitlines())}
    assert runs["u/fifty/game_state.json"]["metrics"]["payoff"] == [0.0, 0.0]
    assert runs["u/fifty/game_state.json"]["payoffs"] == [100.0, 0.0]  # the Outcome follows the rules


def test_a_copy_of_a_log_is_refused_as_a_duplicate(tmp_path: Path) -> None:
    """A copy of the logs inside the folder given (a backup, a second download) imported every game twice."""
    logs = tmp_path / "logs"
    game = ult(("C", "D"), ("NONE", gift(30), "30"), ("ACCEPT", "NONE", "ok"))
    write_logs(logs, {"u/1702869646905": game, "backup/1702869646905": game,
                      "u/other": ult(("C", "D"), ("NONE", gift(40), "40"), ("ACCEPT", "NONE", "ok"))})
    result = import_dir(logs, tmp_path / "out")
    assert result.found == 3 and result.runs == 2
    assert [(r.item, r.category, r.reason) for r in result.refused] == [
        ("u/1702869646905/game_state.json", "duplicate",
         "the same log as backup/1702869646905/game_state.json: one game, imported once")]


@pytest.mark.parametrize("source", ["negotiationarena", "glee", "gamabench"])
def test_linked_folders_are_read_and_links_up_the_tree_are_not_followed(tmp_path: Path, source: str) -> None:
    """Logs gathered with `ln -s` were silently skipped (0 found); following links must not loop on
    `ln -s ..` nor read the folders above the source. A link out of the source folder is not
    followed either (a released archive's link to /proc or a home folder read the importer's machine): it
    is an item of the source, refused with its reason, never skipped in silence."""
    import os

    from econarena.importers.registry import IMPORTERS

    elsewhere, logs = tmp_path / "elsewhere", tmp_path / "logs"
    game = ult(("C", "D"), ("NONE", gift(30), "30"), ("ACCEPT", "NONE", "ok"))
    write_logs(elsewhere, {"u/1": game})
    write_logs(tmp_path, {"above/1": game})  # beside logs/: never read from inside it
    write_logs(logs, {"u/2": ult(("C", "D"), ("NONE", gift(40), "40"), ("ACCEPT", "NONE", "ok"))})
    os.symlink(elsewhere / "u", logs / "linked")
    os.symlink("..", logs / "u" / "up")
    os.symlink(tmp_path, logs / "top")
    result = IMPORTERS[source].import_dir(logs, tmp_path / "out")
    linked = [r for r in result.refused if r.item == "linked"]
    assert len(linked) == 1 and "out of the source folder" in linked[0].reason, result.refused
    if source == "negotiationarena":
        assert result.runs == 1 and result.found == 2, [r.item for r in result.refused]
        assert sorted(r["imported"]["file"] for d in result.dirs for r in map(
            json.loads, (d / "runs.jsonl").read_text().splitlines())) == ["u/2/game_state.json"]
    else:  # the others walk the same tree: the log is a JSON file in a folder no GAMA-Bench game reads
        assert result.found == result.runs + len(result.refused) == (2 if source == "gamabench" else 1)


def test_import_cli_prints_and_writes_the_accounting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    fixture_logs(logs)
    write_logs(logs, {"twosided": ult(("B", "A"), ("NONE", gift(55, 5), "55"), ("ACCEPT", "NONE", "ok"))})
    out = tmp_path / "out"
    assert main(["import", "negotiationarena", str(logs), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "refused: broken/game_state.json: not readable JSON" in printed.err and "ChessGame" in printed.err
    assert "negotiationarena: 11 item(s) found: 9 imported, 2 refused" in printed.out
    assert "replay check: 8 of 9 checked run(s) reach the recorded outcome under our rules" in printed.out
    assert "ultimatum: 3 of 4 agree, 1 disagree (rule difference: 1)" in printed.out
    assert "disagrees: twosided/game_state.json: rule difference: recorded 50 / 50" in printed.out
    assert "imported 9 run(s) into 3 run directories" in printed.out
    report = json.loads((out / "import_report.json").read_text())
    assert report["found"] == 11 and report["imported"] == 9 and report["refused"] == 2
    assert report["replay_check"]["checked"] == 9 and report["replay_check"]["agree"] == 8
    dis = read_csv(out / "import_disagreements.csv")
    assert [(d["item"], d["kind"], d["causes"]) for d in dis] == [("twosided/game_state.json", "rule difference",
                                                                   "two_sided_transfer")]
    assert json.loads(dis[0]["recorded"])["payoff"] == [50.0, 50.0]
    assert {r["category"] for r in read_csv(out / "import_refused.csv")} == {"unreadable", "unknown_format"}
    rows = {(r["scenario"], r["p1_model"], r["p2_model"]): r for r in read_csv(out / "negotiationarena_pairs.csv")}
    t = rows[("resource_exchange", "A", "B")]
    assert t["games"] == "3" and float(t["p1_win_rate"]) == 0.5 and float(t["p2_win_rate"]) == 0.5
    assert float(t["p1_payoff"]) == pytest.approx(2 / 3) and float(t["p2_payoff"]) == pytest.approx(-2 / 3)
    u = rows[("ultimatum", "B", "A")]  # 60/40, 0/0, 100/0 and the recorded 50/50: P1 wins 2 of 4, P2 none
    assert u["games"] == "4" and float(u["p1_win_rate"]) == 1.0 and float(u["p2_win_rate"]) == 0.0
    assert float(u["p1_payoff"]) == pytest.approx(210 / 4) and float(u["p2_payoff"]) == pytest.approx(90 / 4)
    b = rows[("buy_sell", "A", "B")]
    assert float(b["p1_win_rate"]) == 1.0 and float(b["p1_payoff"]) == 7.5 and float(b["p2_payoff"]) == 2.5
    # the run directories: RED's model first, decisions from the stored chats, metrics of the game
    d = out / "buy_sell--A--vs--B"
    runs = [json.loads(x) for x in (d / "runs.jsonl").read_text().splitlines()]
    assert [r["labels"] for r in runs] == [["A", "B"], ["A", "B"]]
    assert runs[0]["metrics"]["first_offer"] == 70 and runs[0]["metrics"]["final_price"] == 55
    assert runs[0]["metrics"]["bad_counter_offer"] is False and runs[1]["metrics"]["bad_counter_offer"] is False
    decisions = [json.loads(x) for x in (d / "decisions.jsonl").read_text().splitlines()]
    first = sorted((x for x in decisions if x["session"] == 0), key=lambda x: x["round"])
    assert [(x["player"], x["label"], x["response"]) for x in first] == [
        (0, "A", "reply 0"), (1, "B", "reply 1"), (0, "A", "reply 2"), (1, "B", "reply 3")]
    assert (d / "summary.csv").exists()
    collected = na.collect(out.iterdir())
    assert na.anchoring(collected)["n"] == 4  # 30 -> 40, 0 -> 0, 55 -> 50 (ultimatum), 70 -> 55 (buy/sell)
    assert na.bad_counter_offer_rate(collected)["rate"] == 0.0
    # again with the published formula; the ultimatum's 0 gift now pays RED 0 (the notebook's rule)
    assert main(["import", "negotiationarena", str(logs), "--out", str(out), "--metrics", "paper"]) == 0
    rows = {(r["scenario"], r["p1_model"], r["p2_model"]): r for r in read_csv(out / "negotiationarena_pairs.csv")}
    u = rows[("ultimatum", "B", "A")]
    assert float(u["p1_payoff"]) == pytest.approx(110 / 4) and float(u["p1_win_rate"]) == 1.0
    t = rows[("resource_exchange", "A", "B")]  # w1 = w2 = 1/3: r1 = 0.5, r2 = (1/3) / (0.5 + 1/3) = 0.4
    assert float(t["p2_win_rate"]) == pytest.approx(0.4)


def test_import_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "negotiationarena", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["import", "negotiationarena", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "no NegotiationArena game logs" in capsys.readouterr().err


# --------------------------------------------------------------------------------- the published Figure 3

def test_the_published_figure_3_data_is_complete_and_documented() -> None:
    data = load_published(na.PUBLISHED)
    cells = data["cell"]
    models = {"gpt-4-1106-preview", "claude-2.1", "claude-2", "gpt-3.5-turbo-1106"}
    for fig, metrics in (("3a", {"p2_win_rate", "p2_payoff"}), ("3b", {"p1_win_rate", "p1_payoff"})):
        mine = [c for c in cells if c["figure"] == fig]
        assert {c["metric"] for c in mine} == metrics and len(mine) == 24
        pairs = {(c["p1"], c["p2"]) for c in mine}
        assert len(pairs) == 12 and all(a != b and {a, b} <= models for a, b in pairs)
    ex_ = {(c["p1"], c["p2"], c["metric"]): c for c in cells}
    assert ex_[("gpt-3.5-turbo-1106", "gpt-4-1106-preview", "p1_payoff")]["value"] == 54.5
    assert ex_[("claude-2", "claude-2.1", "p1_payoff")]["value"] == 70.6
    p2 = ex_[("claude-2", "gpt-3.5-turbo-1106", "p2_win_rate")]
    assert p2["value"] == 0.23 and p2["correct"] == 0.39 and "wrong count" in p2["note"]
    assert na.released_counts(data) == {"resource_exchange": 720, "ultimatum": 720, "buy_sell": 914}
    text = (Path(na.published.DIR) / f"{na.PUBLISHED}.toml").read_text(encoding="utf-8")
    assert text.startswith("# Published numbers") and "Format" in text


def test_published_check_reproduces_a_cell_from_the_recorded_outcomes(tmp_path: Path) -> None:
    # 4 ultimatum games GPT-3.5 (RED) vs GPT-4: 60/40, a two-sided 55|5 recorded 50/50, a 0 gift (paper: 0/0),
    # a reject (0/0). Paper payoffs of P1: 60, 50, 0, 0 -> 27.5; P1 wins 1 (60 > 40) of 1 decisive game
    pair = ("gpt-3.5-turbo-1106", "gpt-4-1106-preview")
    logs = tmp_path / "logs"
    write_logs(logs, {
        "a": ult(pair, ("NONE", gift(40), "40"), ("ACCEPT", "NONE", "ok")),
        "b": ult(pair, ("NONE", gift(55, 5), "55"), ("ACCEPT", "NONE", "ok")),
        "c": ult(pair, ("NONE", gift(0), "0"), ("ACCEPT", "NONE", "ok")),
        "d": ult(pair, ("NONE", gift(10), "10"), ("REJECT", "NONE", "no")),
    })
    out = tmp_path / "out"
    import_dir(logs, out)
    data = {"cell": [
        {"figure": "3b", "scenario": "ultimatum", "p1": pair[0], "p2": pair[1], "metric": "p1_payoff",
         "value": 27.5, "decimals": 1, "formula": "paper"},
        {"figure": "3b", "scenario": "ultimatum", "p1": pair[0], "p2": pair[1], "metric": "p1_win_rate",
         "value": 0.77, "decimals": 2, "formula": "paper"},
        {"figure": "3b", "scenario": "ultimatum", "p1": "x", "p2": "y", "metric": "p1_payoff", "value": 1.0,
         "decimals": 1, "formula": "paper"}]}
    dirs = list(out.iterdir())
    rows = na.published_check(na.collect(dirs, reading="paper"), na.collect(dirs, reading="correct"), data)
    assert [(r["metric"], r["games"], r["from_logs"], r["reproduced"]) for r in rows] == [
        ("p1_payoff", 4, 27.5, True), ("p1_win_rate", 4, 1.0, False)]
    # correct rule: P1 60, 50, 100, 0 -> 52.5; wins: 60 > 40 and 100 > 0 -> 2 of 2 decisive
    assert rows[0]["correct_from_logs"] == 52.5 and rows[1]["correct_from_logs"] == 1.0
    text = na.format_check(rows)
    assert "1 of 2 cells reproduced" in text and "DIFFERS" in text
    assert "p1_win_rate" in na.check_csv(rows).splitlines()[2]


def test_the_import_prints_the_published_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pair = ("gpt-3.5-turbo-1106", "gpt-4-1106-preview")
    logs = tmp_path / "logs"
    write_logs(logs, {"a": ult(pair, ("NONE", gift(40), "40"), ("ACCEPT", "NONE", "ok"))})
    assert main(["import", "negotiationarena", str(logs), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "Published Figure 3" in printed and "0 of 2 cells reproduced" in printed
    assert "games per scenario, imported here / in the released section-one logs: buy_sell: 0 / 914; " \
           "resource_exchange: 0 / 720; ultimatum: 1 / 720" in printed
    check = read_csv(tmp_path / "out" / "negotiationarena_published_check.csv")
    assert {(r["metric"], r["published"], r["from_logs"]) for r in check} == {("p1_win_rate", "0.77", "1"),
                                                                             ("p1_payoff", "54.5", "60")}


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="the released sample is only on the development machine")
def test_the_released_sample_replays_to_its_own_record(tmp_path: Path) -> None:
    """36 released logs, read in place: every one imports and our rules reach the recorded outcome."""
    result = import_dir(SAMPLE, tmp_path / "out")
    assert result.runs == 36 and not result.refused
    assert sum(result.agreed.values()) == 36 and not result.disagreements


def test_long_model_names_make_short_distinct_directories(tmp_path: Path) -> None:
    """Two model names of 150 characters made a directory name past the file system's 255 bytes: the import
    stopped with OSError. Names are cut and told apart by a digest of the whole name."""
    from econarena.importers.common import SLUG_MAX, slug

    assert slug("gpt-4") == "gpt-4" and slug("a/b c") == "a_b_c"
    long_a, long_b = "m" * 150 + "-a", "m" * 150 + "-b"  # equal in their first 120 characters
    assert len(slug(long_a)) == SLUG_MAX and slug(long_a) != slug(long_b)
    assert slug(long_a) == slug(long_a)  # stable: a second import writes into the same directory
    logs = tmp_path / "logs"
    write_logs(logs, {"u/1": ult((long_a, long_b), ("NONE", gift(30), "30"), ("ACCEPT", "NONE", "ok")),
                      "u/2": ult((long_b, long_a), ("NONE", gift(40), "40"), ("ACCEPT", "NONE", "ok"))})
    result = import_dir(logs, tmp_path / "out")
    assert result.runs == 2 and not result.refused
    dirs = sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir())
    assert len(dirs) == 2 and all(len(n.encode()) <= 255 for n in dirs)
    models = {json.loads((tmp_path / "out" / n / "runs.jsonl").read_text().splitlines()[0])["labels"][0]
              for n in dirs}
    assert models == {long_a, long_b}  # the whole name is kept inside
