"""GLEE import: released games of the three families, models against models and people against a model,
read into run directories; per-game metrics equal to values computed by hand from game.csv and config.json;
every folder accounted for; the analysis, the people-beside-models comparison and the report on the result.

The folders are written here in GLEE's released format (``Data/<kind>/<family>/<c>/<c>/<c>/<ID>/``:
config.json in its three versions, game.csv with the column orders, literal ``None``/``nan`` cells, extra
columns and quoted newlines the real files have, log_player_<i>.csv for model players)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from econarena.cli import main
from econarena.games import get_game
from econarena.games.base import ForeignValue
from econarena.importers.glee import import_dir, label_of

BARG, NEG, PERS = get_game("bargaining"), get_game("negotiation"), get_game("persuasion")


# ------------------------------------------------------------------------------------------ the format

def llm(model: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"public_name": name, "model_name": model, **extra}


def config(family: str, game_args: dict[str, Any], p1: str = "vertex_ai/gemini-1.5-flash", p2: str = "gpt-4o",
           human: int | None = None, p1_extra: dict[str, Any] | None = None,
           p2_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A config.json: model players are ``litellm``; with ``human`` = seat, that seat is a person (otree) and
    the other the oTree model (otree_LLM), as in Data/human_vs_llm."""
    types = ["litellm", "litellm"]
    args = [llm(p1, "Alice", **(p1_extra or {})), llm(p2, "Bob", **(p2_extra or {}))]
    if human is not None:
        types = ["otree_LLM", "otree_LLM"]
        types[human] = "otree"
        for i in (0, 1):
            args[i]["model_name"] = types[i]
    out: dict[str, Any] = {"player_1_type": types[0], "player_1_args": args[0], "player_2_type": types[1],
                           "player_2_args": args[1], "game_type": family, "game_args": game_args}
    if human is None:
        out.update({"experiment_name": f"{family}_test", "game": None, "date": "2025-04-04 13:21:26",
                    "commit": "9863157"})
    else:
        out.update({"name": f"{family}_1", "title": "Simple Game", "participation_fee": 0.1, "commit": "d62fc86"})
    return out


def csv_text(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def write_game(root: Path, kind: str, family: str, game_id: str, cfg: dict[str, Any] | str | None,
               game_csv: str | None, logs: list[list[tuple[str, str]]] | None = None) -> Path:
    d = root / kind / family / game_id[0] / game_id[1] / game_id[2] / game_id
    d.mkdir(parents=True)
    if cfg is not None:
        (d / "config.json").write_text(cfg if isinstance(cfg, str) else json.dumps(cfg, indent=4) + "\n",
                                       encoding="utf-8")
    if game_csv is not None:
        (d / "game.csv").write_text(game_csv, encoding="utf-8")
    for i, log in enumerate(logs or []):
        (d / f"log_player_{i + 1}.csv").write_text(csv_text(["prompt", "response"], [list(x) for x in log]),
                                                   encoding="utf-8")
    return d


def bargaining_rows(offers: list[tuple[float, float]], decisions: list[str], *, messages: list[str] | None = None,
                    human: bool = False) -> tuple[list[str], list[list[Any]]]:
    """Alternating rounds: offer t by Alice (odd) or Bob (even), then the other's decision."""
    empty = "None" if human else ""
    header = ["alice_gain", "bob_gain"] + (["message"] if messages is not None else []) + ["player", "round",
                                                                                         "decision"]
    rows = []
    for t, ((a, b), d) in enumerate(zip(offers, decisions), 1):
        me, other = ("Alice", "Bob") if t % 2 else ("Bob", "Alice")
        msg = [] if messages is None else [messages[t - 1]]
        rows.append([a, b, *msg, me, t, empty])
        rows.append(["", "", *([] if messages is None else [empty]), other, t, d])
    return header, rows


def barg_args(money: float, max_rounds: int, ci: bool = True, ma: bool = False, in_args: bool = True,
              **deltas: float) -> dict[str, Any]:
    """game_args of a bargaining config; the deltas in game_args (1 unless given) unless ``in_args`` is False
    (the oldest version keeps them in the player arguments)."""
    return {"money_to_divide": money, "max_rounds": max_rounds, "complete_information": ci, "messages_allowed": ma,
            **({"delta_1": 1.0, "delta_2": 1.0, **deltas} if in_args else deltas)}


def neg_args(fa: float, fb: float, m: float, max_rounds: int, ma: bool = False, ci: bool = True) -> dict[str, Any]:
    return {"seller_value": fa, "buyer_value": fb, "product_price_order": m, "max_rounds": max_rounds,
            "complete_information": ci, "messages_allowed": ma}


def pers_args(p: float, v: float, m: float, text: bool, myopic: bool, human: bool = False) -> dict[str, Any]:
    out = {"p": p, "v": v, "c": 0 if human else 0.0, "product_price": m, "total_rounds": 20, "is_seller_know_cv": True,
           "seller_message_type": "text" if text else "binary", "is_myopic": myopic}
    if human:
        out.update({"is_buyer_know_p": True, "allow_buyer_message": False})
    return out


def persuasion_csv(qualities: str, recs: list[str], buys: str, *, text: bool, buyer: str = "Bob",
                   worth: float = 200.0) -> str:
    """``qualities``/``buys``: one letter per round (h/l, y/n); ``recs``: the seller's message or yes/no."""
    header = ["round_quality", "product_worth", "player", "round"] + (["message", "decision"] if text else
                                                                       ["decision"])
    rows: list[list[Any]] = []
    for t, (q, rec, b) in enumerate(zip(qualities, recs, buys), 1):
        high = q == "h"
        rows.append(["high-quality" if high else "low-quality", worth if high else 0.0, "Nature", t]
                    + (["", ""] if text else [""]))
        rows.append(["", "", "Alice", t] + ([rec, ""] if text else [rec]))
        rows.append(["", "", buyer, t] + (["", "yes" if b == "y" else "no"] if text else ["yes" if b == "y" else "no"]))
    return csv_text(header, rows)


# n = 12 high-quality rounds, k = 9 of them bought, r = 5 of the 8 low-quality rounds not bought (spec 1.6)
QUALITY = "hhhhhhhhhhhhllllllll"
BOUGHT = "yyyyyyyyynnnyyynnnnn"


def write_data(root: Path) -> dict[str, Path]:
    """The released tree, every family and kind; hand-computed metrics in the comments."""
    games: dict[str, Path] = {}
    # 1. LLM bargaining, config v1 (deltas in the player args, "infinite" 25): deal in round 3 at 60 / 40 of
    #    100, dA = 0.9, dB = 0.8 -> efficiency 0.6 * 0.81 + 0.4 * 0.64 = 0.742, fairness 0.96, gains 0.486, 0.256
    h, rows = bargaining_rows([(70, 30), (40, 60), (60, 40)], ["reject", "reject", "accept"])
    games["b_deal"] = write_game(root, "llm_vs_llm", "bargaining", "B0DEAL0000000001", config(
        "bargaining", barg_args(100, 25, in_args=False), p1_extra={"delta": 0.9},
        p2_extra={"delta": 0.8, "player_id": 3}),
        csv_text(h, rows), [[("Round 1\nSend your offer to divide $100.", '{"alice_gain": 70, "bob_gain": 30}'),
                             ("Bob's offer ...", '{"decision": "reject"}'),
                             ("Round 3", '```json\n{"alice_gain": 60}```')],
                            [("Alice's offer", '{"decision": "reject"}'), ("Round 2", '{"alice_gain": 40}'),
                             ("Alice's offer", '{"decision": "accept"}')]])
    # 2. LLM bargaining, config v2 (deltas in game_args), T = 12, messages: no deal after 12 rounds, dA = 0.95,
    #    dB = 0.9 -> paper: efficiency 0, fairness 1, gains 0 / 0; code: efficiency = Bob = 0.9^11, fairness 0
    h, rows = bargaining_rows([(55, 45)] * 12, ["reject"] * 12, messages=[f"offer, {t}" for t in range(12)])
    games["b_none"] = write_game(root, "llm_vs_llm", "bargaining", "B0NONE0000000002", config(
        "bargaining", barg_args(100, 12, ma=True, delta_1=0.95, delta_2=0.9), p1="o3-mini", p2="gpt-4o"),
        csv_text(h, rows))
    # 3. human bargaining, the person is Bob, literal None / nan cells, d = 1: 50 / 50 in round 1 -> 1, 1, .5, .5
    h, rows = bargaining_rows([(50, 50)], ["accept"], messages=["nan"], human=True)
    games["b_human"] = write_game(root, "human_vs_llm", "bargaining", "0043BAB60C08E66A", config(
        "bargaining", barg_args(100, 99, ma=True, delta_1=1.0, delta_2=1.0), human=1), csv_text(h, rows))
    # 4. LLM negotiation, FA = 0.8, FB = 1.2, M = 1e4, messages first and an extra column: Bob's 13,000 in round 2
    #    accepted -> fairness 1 - 4 (1.3 - 1)^2 = 0.64, paper efficiency 0 (above V_B), code 1; gains 0.5, -0.1
    neg = csv_text(["message", "product_price", "player", "round", "decision", "reasoning"], [
        ["Buy it for $14,000, a bargain", "14000.0", "Alice", 1, "", "high anchor"],
        ["", "", "Bob", 1, "RejectOffer", ""],
        ["I can pay 13,000.", "$13,000", "Bob", 2, "", ""],
        ["", "", "Alice", 2, "AcceptOffer", ""]])
    games["n_deal"] = write_game(root, "llm_vs_llm", "negotiation", "N0DEAL0000000003", config(
        "negotiation", neg_args(0.8, 1.2, 10000, 10, ma=True), p1="gpt-4o", p2="xai/grok-2-1212"), neg)
    # 5. LLM negotiation FA = 1.5 > FB = 1.2, M = 100, "infinite" 99: Alice sells to John in round 2 -> no trade:
    #    fairness 1, efficiency 1 (paper: V_A >= V_B and no trade; code: FB < FA and no trade), gains 0 / 0
    neg = csv_text(["product_price", "player", "round", "decision"], [
        ["190.0", "Alice", 1, ""], ["", "Bob", 1, "RejectOffer"], ["115.0", "Bob", 2, ""],
        ["", "Alice", 2, "SellToJhon"]])
    games["n_john"] = write_game(root, "llm_vs_llm", "negotiation", "N0JOHN0000000004", config(
        "negotiation", neg_args(1.5, 1.2, 100, 99)), neg)
    # 6. human negotiation, the person sells (Alice), FA = FB = 1, M = 1e4: asks 50 (!), then accepts 8,000 ->
    #    fairness 1 - 4 (0.8 - 1)^2 = 0.84, paper efficiency 0 (below V_A), code 1 (FA = FB); gains -0.2, 0.2
    neg = csv_text(["message", "product_price", "player", "round", "decision"], [
        ["good", "50.0", "Alice", 1, ""], ["", "", "Bob", 1, "RejectOffer"],
        ["How about $8,000?", "8000.0", "Bob", 2, ""], ["", "", "Alice", 2, "AcceptOffer"]])
    games["n_human"] = write_game(root, "human_vs_llm", "negotiation", "074B169DA9A84299", config(
        "negotiation", neg_args(1.0, 1.0, 10000, 30, ma=True), human=0), neg)
    # 7. LLM persuasion, text, myopic ("the buyer"), v = 2: n = 12, k = 9, r = 5 -> efficiency 0.75, fairness
    #    0.625, Alice 12 / 20 = 0.6, Bob (9 (2 - 1) - (20 - 12 - 5)) / 20 = 0.3 (code: (9 - 5) / 20 = 0.2)
    msgs = [f"Round {t}: a fine product, \"really\"" for t in range(1, 21)]
    games["p_text"] = write_game(root, "llm_vs_llm", "persuasion", "P0TEXT0000000005", config(
        "persuasion", pers_args(0.5, 2.0, 100, text=True, myopic=True), p1="gpt-4o", p2="vertex_ai/gemini-1.5-flash"),
        persuasion_csv(QUALITY, msgs, BOUGHT, text=True, buyer="the buyer"))
    # 8. human persuasion, the person sells, binary, p written 0.333333333, v = 1.25: every round high and bought
    #    -> efficiency 1, fairness undefined (n = T), Alice 1, Bob 20 x 0.25 / 20 = 0.25
    games["p_human"] = write_game(root, "human_vs_llm", "persuasion", "05FD369904ABE9E3", config(
        "persuasion", pers_args(0.333333333, 1.25, 100, text=False, myopic=False, human=True), human=0),
        persuasion_csv("h" * 20, ["yes"] * 20, "y" * 20, text=False, worth=125.0))
    # 9. human persuasion, text, a message with a newline inside quotes; p 0.8, v 1.25: qualities hhhh...,
    #    all high; the buyer (the person is Bob) buys 10 of 20 -> efficiency 0.5, Alice 0.5, Bob 10 x 0.25 / 20
    games["p_human_text"] = write_game(root, "human_vs_llm", "persuasion", "0DA1C6935358D200", config(
        "persuasion", pers_args(0.8, 1.25, 100, text=True, myopic=False, human=True), human=1),
        persuasion_csv("h" * 20, ["high quality was accepted to buy\n"] * 20, "yn" * 10, text=True, worth=125.0))
    return games


def problem_cases(root: Path) -> None:
    """Folders that must be refused (with the reason) or skipped (unreleased partial games)."""
    h, rows = bargaining_rows([(60, 40)], ["accept"])
    write_game(root, "llm_vs_llm", "bargaining", "X0NOCSV000000001", config("bargaining", barg_args(100, 12)), None)
    write_game(root, "llm_vs_llm", "bargaining", "X0BADCFG00000002", "{not json", csv_text(h, rows))
    write_game(root, "llm_vs_llm", "bargaining", "X0CHESS000000003", config("chess", {}), csv_text(h, rows))
    # the last row is a proposal nobody answered
    write_game(root, "llm_vs_llm", "bargaining", "X0OPEN0000000004", config("bargaining", barg_args(100, 12)),
               csv_text(h, rows[:1]))
    partial = root / "llm_vs_llm" / "bargaining" / "X" / "0" / "P" / "X0PART0000000005" / ".partial"
    partial.mkdir(parents=True)
    (partial / "config.json").write_text(json.dumps({"partial": True}), encoding="utf-8")


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def num(text: str) -> float | None:
    return None if text == "" else float(text)


# ------------------------------------------------------------------------------------ one game at a time

def test_labels_people_and_provider_prefixes() -> None:
    assert label_of(config("bargaining", {}, p1="vertex_ai/meta/llama-3.3-70b-instruct-maas"), 0) == (
        "meta/llama-3.3-70b-instruct-maas", "vertex_ai/meta/llama-3.3-70b-instruct-maas")
    assert label_of(config("bargaining", {}, p2="xai/grok-2-1212"), 1) == ("grok-2-1212", "xai/grok-2-1212")
    people = config("bargaining", {}, human=0)
    assert label_of(people, 0) == ("human", "otree") and label_of(people, 1) == ("gemini-1.5-flash", "otree_LLM")


def test_bargaining_reads_either_delta_location_and_keeps_the_raw_horizon() -> None:
    h, rows = bargaining_rows([(60, 40)], ["accept"])
    raw_rows = [dict(zip(h, map(str, r))) for r in rows]
    v1 = config("bargaining", barg_args(100, 25, in_args=False), p1_extra={"delta": 0.9}, p2_extra={"delta": 0.8})
    imp = BARG.from_reference({"config": v1, "rows": raw_rows})
    assert (imp.params["delta_alice"], imp.params["delta_bob"], imp.params["max_rounds"]) == (0.9, 0.8, 99)
    assert imp.recorded["max_rounds_raw"] == 25 and imp.recorded["payoff"] == [60.0, 40.0]
    v2 = config("bargaining", barg_args(100, 12, delta_1=0.95, delta_2=1.0))
    imp = BARG.from_reference({"config": v2, "rows": raw_rows})
    assert (imp.params["delta_alice"], imp.params["delta_bob"], imp.params["max_rounds"]) == (0.95, 1.0, 12)
    # no delta anywhere: every released config records them, so a missing one is refused, not read as 1
    plain = config("bargaining", barg_args(100, 12, in_args=False))
    with pytest.raises(ForeignValue, match=r"no delta for Alice \(game_args.delta_1 or player_1_args.delta\)") as e:
        BARG.from_reference({"config": plain, "rows": raw_rows})
    assert e.value.category == "bad_parameter"


def test_a_capped_infinite_game_ends_before_its_configured_horizon() -> None:
    # v3 configs say 99 where the harness stopped at 25: GLEE's reading is no deal at 25, and so is ours
    h, rows = bargaining_rows([(50, 50)] * 25, ["reject"] * 25)
    imp = BARG.from_reference({"config": config("bargaining", barg_args(100, 99)),
                               "rows": [dict(zip(h, map(str, r))) for r in rows]})
    assert imp.recorded["rounds"] == 25 and imp.recorded["agreement"] is False
    assert imp.check.agree and imp.check.causes == ("ended_before_horizon",)
    assert imp.recorded["metrics"]["efficiency"] == 0.0 and imp.recorded["metrics_code"]["efficiency"] == 1.0


def test_rows_after_an_accept_are_a_listed_disagreement() -> None:
    h, rows = bargaining_rows([(60, 40), (30, 70)], ["accept", "accept"])
    imp = BARG.from_reference({"config": config("bargaining", barg_args(100, 12)),
                               "rows": [dict(zip(h, map(str, r))) for r in rows]})
    # GLEE's reading takes the last accept (round 2, 30 / 70); our rules ended the game in round 1
    assert imp.recorded["deal_round"] == 2 and imp.recorded["alice_gain"] == 30.0
    assert not imp.check.agree and imp.check.causes[0] == "move_after_end"
    assert imp.check.kind == "rule difference" and "a move after the game ended" in imp.check.detail


def test_an_offer_not_dividing_the_money_is_kept_as_a_named_disagreement() -> None:
    """GLEE's reading keeps a person's offer of 83 + 10 of 100 (GLEE checked offers for models only); our rules
    refuse it, so the replay stops there: imported with GLEE's outcome, listed as a disagreement, never as
    agreeing."""
    h, rows = bargaining_rows([(83, 10), (50, 50)], ["reject", "accept"], messages=["nan", "ok"], human=True)
    imp = BARG.from_reference({"config": config("bargaining", barg_args(100, 12, ma=True), human=0), "human": True,
                               "rows": [dict(zip(h, map(str, r))) for r in rows]})
    assert imp.recorded["alice_gain"] == 50.0 and imp.recorded["metrics"]["self_gain"] == [0.5, 0.5]
    assert not imp.check.agree and imp.check.causes == ("offer_not_dividing_money", "invalid_move")
    assert imp.check.kind == "malformed move" and "row 2 (round 1, Alice): our rules refuse this offer" in \
        imp.check.detail and imp.check.replayed is None
    assert imp.round_log == []  # the replay stopped at the refused offer


# ------------------------------------------------------------------------------ the import, end to end

@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    root = tmp_path / "Data"
    games = write_data(root)
    problem_cases(root)
    return root, games


def test_every_folder_is_imported_or_refused(data: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    root, games = data
    result = import_dir(root, tmp_path / "out")
    assert result.runs == len(games) == 9 and len(result.refused) == 4 and result.found == 13
    assert {r.item.rsplit("/", 1)[-1]: r.category for r in result.refused} == {
        "X0NOCSV000000001": "missing_file", "X0BADCFG00000002": "unreadable", "X0CHESS000000003": "unknown_format",
        "X0OPEN0000000004": "incomplete"}
    assert result.imported == {"bargaining": 3, "negotiation": 3, "persuasion": 3}
    assert sum(result.checked.values()) == 9 and sum(result.agreed.values()) == 9 and not result.disagreements
    assert result.causes[("negotiation", "glee_cleaning_drop")] == 0
    names = sorted(d.name for d in result.dirs)
    assert "bargaining--gemini-1.5-flash--vs--human" in names and "negotiation--human--vs--gemini-1.5-flash" in names
    assert "negotiation--gpt-4o--vs--grok-2-1212" in names and "bargaining--o3-mini--vs--gpt-4o" in names


def test_the_import_writes_glee_games_with_hand_computed_metrics(data: tuple[Path, dict[str, Path]], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = data
    out = tmp_path / "out"
    assert main(["import", "glee", str(root), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "glee: 13 item(s) found: 9 imported, 4 refused" in printed.out
    assert "replay check: 9 of 9 checked run(s) reach the recorded outcome" in printed.out
    assert "refused: llm_vs_llm/bargaining/X/0/O/X0OPEN0000000004: the last row of game.csv" in printed.err
    assert "econarena analyze glee" in printed.out and "--human-vs-model" in printed.out
    rows = {r["game_id"]: r for r in read_csv(out / "glee_games.csv")}
    assert list(read_csv(out / "glee_games.csv")[0])[:6] == ["game_id", "family", "kind", "alice_model", "bob_model",
                                                            "rounds"]

    def metrics(gid: str) -> tuple[float | None, ...]:
        r = rows[gid]
        return tuple(num(r[k]) for k in ("efficiency", "fairness", "alice_self_gain", "bob_self_gain"))

    def code(gid: str) -> tuple[float | None, ...]:
        r = rows[gid]
        return tuple(num(r[k]) for k in ("efficiency_code", "fairness_code", "alice_self_gain_code",
                                         "bob_self_gain_code"))

    r = rows["B0DEAL0000000001"]
    assert (r["family"], r["kind"], r["alice_model"], r["bob_model"], r["rounds"], r["deal"]) == (
        "bargaining", "llm", "gemini-1.5-flash", "gpt-4o", "3", "true")
    assert metrics("B0DEAL0000000001") == pytest.approx((0.742, 0.96, 0.486, 0.256))
    assert code("B0DEAL0000000001") == pytest.approx((0.742, 0.96, 0.486, 0.256))
    assert rows["B0NONE0000000002"]["deal"] == "false" and rows["B0NONE0000000002"]["rounds"] == "12"
    assert metrics("B0NONE0000000002") == (0.0, 1.0, 0.0, 0.0)
    assert code("B0NONE0000000002") == pytest.approx((0.9 ** 11, 0.0, 0.0, 0.9 ** 11))
    h = rows["0043BAB60C08E66A"]
    assert (h["kind"], h["alice_model"], h["bob_model"]) == ("human", "gemini-1.5-flash", "human")
    assert metrics("0043BAB60C08E66A") == (1.0, 1.0, 0.5, 0.5)
    assert metrics("N0DEAL0000000003") == pytest.approx((0.0, 0.64, 0.5, -0.1))
    assert code("N0DEAL0000000003") == pytest.approx((1.0, 0.64, 0.5, -0.1))
    assert rows["N0DEAL0000000003"]["final_price"] == "13000" and rows["N0DEAL0000000003"]["rounds"] == "2"
    assert rows["N0DEAL0000000003"]["bob_model"] == "grok-2-1212"
    assert metrics("N0JOHN0000000004") == (1.0, 1.0, 0.0, 0.0) and code("N0JOHN0000000004")[0] == 1.0
    assert rows["N0JOHN0000000004"]["deal"] == "false"
    assert metrics("074B169DA9A84299") == pytest.approx((0.0, 0.84, -0.2, 0.2))
    assert code("074B169DA9A84299") == pytest.approx((1.0, 0.84, -0.2, 0.2))
    assert rows["074B169DA9A84299"]["alice_model"] == "human"
    assert metrics("P0TEXT0000000005") == pytest.approx((0.75, 0.625, 0.6, 0.3))
    assert code("P0TEXT0000000005") == pytest.approx((0.75, 0.625, 0.6, 0.2))
    p = rows["P0TEXT0000000005"]
    assert (p["rounds"], p["purchases"], p["deal"]) == ("20", "12", "true")
    assert metrics("05FD369904ABE9E3") == (1.0, None, 1.0, 0.25)
    assert metrics("0DA1C6935358D200") == (0.5, None, 0.5, 0.125)
    assert all(r["replay_agrees"] == "true" for r in rows.values())
    assert json.loads(rows["05FD369904ABE9E3"]["params"])["p_high"] == pytest.approx(1 / 3, abs=1e-12)
    summary = read_csv(out / "glee_summary.csv")
    human_bob = next(s for s in summary if s["player"] == "human" and s["family"] == "bargaining")
    assert (human_bob["seat"], human_bob["games"], float(human_bob["self_gain"])) == ("Bob", "1", 0.5)


def test_run_directories_hold_the_moves_and_the_record(data: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    root, _ = data
    out = tmp_path / "out"
    import_dir(root, out)
    run = json.loads((out / "bargaining--gemini-1.5-flash--vs--gpt-4o" / "runs.jsonl").read_text().splitlines()[0])
    assert run["labels"] == ["gemini-1.5-flash", "gpt-4o"]
    assert run["models"] == ["vertex_ai/gemini-1.5-flash", "gpt-4o"]
    assert run["params"] == {"money": 100.0, "delta_alice": 0.9, "delta_bob": 0.8, "max_rounds": 99,
                             "complete_information": True, "messages_allowed": False,
                             "show_inflation_update": True, "metrics": "paper"}
    assert run["payoffs"] == pytest.approx([60 * 0.81, 40 * 0.64]) and run["winners"] == [0] and not run["void"]
    assert run["imported"]["game_id"] == "B0DEAL0000000001" and run["imported"]["max_rounds_raw"] == 25
    assert run["imported"]["check"]["agree"] is True and len(run["round_log"]) == 6
    assert run["metrics"]["first_offer_alice_share"] == 0.7
    decisions = [json.loads(x) for x in (out / "bargaining--gemini-1.5-flash--vs--gpt-4o" / "decisions.jsonl")
                 .read_text().splitlines()]
    alice = sorted((d for d in decisions if d["player"] == 0), key=lambda d: d["round"])
    assert [d["response"] for d in alice] == ['{"alice_gain": 70, "bob_gain": 30}', '{"decision": "reject"}',
                                              '```json\n{"alice_gain": 60}```']
    assert alice[0]["messages"] == [{"role": "user", "content": "Round 1\nSend your offer to divide $100."}]
    people = [json.loads(x) for x in (out / "persuasion--human--vs--gemini-1.5-flash" / "decisions.jsonl")
              .read_text().splitlines()]
    assert people and all(d["response"] is None for d in people)  # no chat is logged for people
    text = json.loads((out / "persuasion--gemini-1.5-flash--vs--human" / "runs.jsonl").read_text().splitlines()[0])
    assert text["round_log"][0]["actions"][0]["message"] == "high quality was accepted to buy\n"
    assert text["params"]["first_quality"] == "high" and text["params"]["buyer"] == "long-living"


def test_analyze_and_people_beside_models(data: tuple[Path, dict[str, Path]], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The comparison: the person as Bob in bargaining (vs gemini-1.5-flash as Alice) beside gpt-4o as Bob
    against the same Alice, on the configurations the person played only."""
    pytest.importorskip("statsmodels")
    root, _ = data
    same = barg_args(100, 99, ma=True, delta_1=1.0, delta_2=1.0)  # the person's configuration
    for k, (a, b) in enumerate([(70, 30), (80, 20)]):  # gpt-4o as Bob: self-gain 0.3 and 0.2 -> mean 0.25
        h, rows = bargaining_rows([(a, b)], ["accept"], messages=["deal?"])
        write_game(root, "llm_vs_llm", "bargaining", f"C0SAME{k}000000000", config("bargaining", same),
                   csv_text(h, rows))
    h, rows = bargaining_rows([(10, 90)], ["accept"])  # another configuration (12 rounds): left out
    write_game(root, "llm_vs_llm", "bargaining", "C0OTHER000000000", config("bargaining", barg_args(100, 12)),
               csv_text(h, rows))
    out = tmp_path / "out"
    assert main(["import", "glee", str(root), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["analyze", "glee", str(out), "--human-vs-model"]) == 0
    printed = capsys.readouterr().out
    assert "People beside models" in printed
    table = {(r["family"], r["seat"], r["player"]): r for r in read_csv(out / "glee_human_vs_model.csv")}
    person = table[("bargaining", "Bob", "human")]
    model = table[("bargaining", "Bob", "gpt-4o")]
    assert (person["games"], person["opponent"], float(person["self_gain"])) == ("1", "gemini-1.5-flash", 0.5)
    assert (model["games"], model["configs"], float(model["self_gain"])) == ("2", "1", 0.25)
    assert float(model["diff_vs_human"]) == pytest.approx(-0.25) and model["diff_low"] == ""  # one person: no SE
    assert float(model["self_gain_se"]) == pytest.approx(0.05)  # sd 0.0707 / sqrt 2
    assert ("negotiation", "Alice", "human") in table and ("persuasion", "Alice", "human") in table
    # the linear models run on the imported directories as on our own
    assert main(["analyze", "glee", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bargaining: efficiency" in printed and (out / "glee_effects.csv").exists()


def test_report_has_the_people_section(data: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    root, _ = data
    out = tmp_path / "out"
    import_dir(root, out)
    from econarena.analysis.report import build_report

    report = build_report([out], tmp_path / "report", n_boot=50, transcripts=0)
    html = report.html.read_text(encoding="utf-8")
    assert "People beside models (GLEE)" in html and "played by a person or a model" in html
    assert (tmp_path / "report" / "glee_human_vs_model.csv").exists()


def test_import_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "glee", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "expected GLEE's Data/ folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["import", "glee", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "no GLEE games" in capsys.readouterr().err
    assert main(["analyze", "glee", str(tmp_path / "o"), "--human-vs-model"]) == 2


def test_hostile_configs_are_refused_with_the_key(tmp_path: Path) -> None:
    root = tmp_path / "Data"
    h, rows = bargaining_rows([(60, 40)], ["accept"])
    write_game(root, "llm_vs_llm", "bargaining", "H0HUGE0000000001", config("bargaining", barg_args(1e12, 12)),
               csv_text(h, rows))
    write_game(root, "llm_vs_llm", "bargaining", "H0NOARG000000002", config("bargaining", {"max_rounds": 12}),
               csv_text(h, rows))
    write_game(root, "llm_vs_llm", "bargaining", "H0NOMOD000000003", {**config("bargaining", barg_args(100, 12)),
                                                                      "player_2_args": {"public_name": "Bob"}},
               csv_text(h, rows))
    write_game(root, "llm_vs_llm", "bargaining", "H0EMPTY000000004", config("bargaining", barg_args(100, 12)), "")
    write_game(root, "llm_vs_llm", "persuasion", "H0PVAL0000000005", config(
        "persuasion", {**pers_args(0.5, 0.5, 100, text=False, myopic=False)}),
        persuasion_csv("h", ["yes"], "y", text=False))
    result = import_dir(root, tmp_path / "out")
    why = {r.item.rsplit("/", 1)[-1]: r.reason for r in result.refused}
    assert result.runs == 0 and len(why) == 5
    assert "parameter money" in why["H0HUGE0000000001"]
    assert "game_args has no 'money_to_divide'" in why["H0NOARG000000002"]
    assert "player_2_args has no model_name" in why["H0NOMOD000000003"]
    assert "game.csv has no rows" in why["H0EMPTY000000004"]
    assert "value_high" in why["H0PVAL0000000005"]


def test_a_copy_of_a_game_is_refused_as_a_duplicate_and_bad_rounds_are_unreadable(tmp_path: Path) -> None:
    """A copy of the tree inside the tree imported every game twice; a last round of 'one' or -3 was read as
    round 0 or -3, and GLEE's discounting by it gave payoffs above the money."""
    root = tmp_path / "Data"
    h, rows = bargaining_rows([(60, 40)], ["accept"])
    cfg = config("bargaining", barg_args(100, 12, delta_1=0.9, delta_2=0.9))
    d = write_game(root, "llm_vs_llm", "bargaining", "D0GAME0000000001", cfg, csv_text(h, rows))
    import shutil

    shutil.copytree(d, root / "backup" / d.name)
    for gid, r in (("D0WORD0000000002", "one"), ("D0NEGR0000000003", -3), ("D0ZERO0000000004", 0)):
        write_game(root, "llm_vs_llm", "bargaining", gid, cfg, csv_text(h, [[60, 40, "Alice", r, ""],
                                                                           ["", "", "Bob", r, "accept"]]))
    result = import_dir(root, tmp_path / "out")
    assert result.runs == 1 and result.found == 5 and len(result.refused) == 4
    why = {r.item: (r.category, r.reason) for r in result.refused}
    assert why["llm_vs_llm/bargaining/D/0/G/D0GAME0000000001"] == (
        "duplicate", "game id D0GAME0000000001 is also at backup/D0GAME0000000001: one game, imported once")
    for gid, r in (("D0WORD0000000002", "'one'"), ("D0NEGR0000000003", "'-3'"), ("D0ZERO0000000004", "'0'")):
        category, reason = why[f"llm_vs_llm/bargaining/D/0/{gid[2]}/{gid}"]
        assert category == "unreadable" and f"the last row's round is {r}, expected a whole number from 1" in reason


def test_a_negative_gain_is_flagged_like_an_offer_not_dividing_the_money() -> None:
    h, rows = bargaining_rows([(-50, 150)], ["accept"])
    imp = BARG.from_reference({"config": config("bargaining", barg_args(100, 12)),
                               "rows": [dict(zip(h, map(str, r))) for r in rows]})
    assert imp.recorded["alice_gain"] == -50.0  # GLEE's reading, as GLEE's code takes it
    assert not imp.check.agree and imp.check.causes == ("offer_not_dividing_money", "invalid_move")


def test_every_importer_follows_the_interface() -> None:
    import inspect

    from econarena.cli import build_parser
    from econarena.importers.common import ImportResult
    from econarena.importers.registry import IMPORTERS

    assert set(IMPORTERS) == {"gamabench", "negotiationarena", "glee"}
    for name, module in IMPORTERS.items():
        assert name == module.NAME and module.DESCRIPTION and module.ITEMS and isinstance(module.OPTIONS, tuple)
        sig = inspect.signature(module.import_dir)
        assert list(sig.parameters)[:2] == ["src", "out"]
        assert set(module.OPTIONS) <= set(sig.parameters) and sig.return_annotation in (ImportResult, "ImportResult")
    choices = next(a for a in build_parser()._subparsers._group_actions[0].choices["import"]._actions
                   if a.dest == "source").choices
    assert list(choices) == ["gamabench", "negotiationarena", "glee"]
