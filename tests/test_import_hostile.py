"""Foreign data at the import doors, hostile on purpose: every imported value passes the game's own parameter
models and judge (or is refused with its category, or imported as a named disagreement, never as agreeing);
text that is not text never crashes a write nor leaves a ``.tmp``; one bad item never stops a mixed import or
the report over it; a second import never replaces another's run directories in silence. Files are written
here in each source's released format (the helpers of the importers' own test files)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from test_gama_import import guess_file
from test_gama_import import write as write_gama
from test_glee_import import barg_args, bargaining_rows, config, neg_args, pers_args, persuasion_csv, write_game
from test_glee_import import csv_text as glee_csv
from test_na_import import TRADING, gift, log_file, trade, ult, write_logs

from econarena.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def refused(out: Path) -> dict[str, tuple[str, str]]:
    """import_refused.csv as {item: (category, reason)}."""
    with (out / "import_refused.csv").open(encoding="utf-8", newline="") as fh:
        return {r["item"]: (r["category"], r["reason"]) for r in csv.DictReader(fh)}


def no_leftovers(out: Path) -> None:
    assert not list(out.rglob("*.tmp")), "a write left its .tmp behind"


# ------------------------------------------------------------------------------------ NegotiationArena

def test_negotiationarena_values_our_rules_refuse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Gifts of -40 and 1e308 imported as valid deals (the replay agreed); 1e308 crashed the import in the
    summary's fsum, another `report` in anchoring's Pearson. Now: out-of-range numbers and non-whole parameters
    are refused with their category; a gift our rules refuse is a named disagreement; the rest imports."""
    pair = ("A", "B")
    docs: dict[str, Any] = {
        "ok/1": ult(pair, ("NONE", gift(30), "30?"), ("ACCEPT", "NONE", "ok")),
        "negative/1": ult(pair, ("NONE", gift(-40), "take -40"), ("ACCEPT", "NONE", "ok")),
        "too_much/1": ult(pair, ("NONE", gift(150), "150 of 100"), ("ACCEPT", "NONE", "ok")),
        "exchange_overdraft/1": log_file("TradingGame", pair, TRADING, [
            ("NONE", trade({"X": 30}, {"Y": 5}), "30 of my 25 X"), ("ACCEPT", "NONE", "ok")], 8),
        "turns_2.5/1": {**ult(pair, ("NONE", gift(30), "30"), ("ACCEPT", "NONE", "ok")), "iterations": 2.5},
        "turns_true/1": {**ult(pair, ("NONE", gift(30), "30"), ("ACCEPT", "NONE", "ok")), "iterations": True},
        "surrogate_name/1": ult(("A\ud800", "B"), ("NONE", gift(30), "30"), ("ACCEPT", "NONE", "ok")),
        "surrogate_message/1": ult(pair, ("NONE", gift(20), "hi \ud800 there"), ("ACCEPT", "NONE", "ok")),
    }
    write_logs(tmp_path / "logs", docs)
    # numbers JSON can hold and a game cannot: 1e308 (a float), 10**400 (an int), NaN in the summary
    for rel, value in (("huge_float/1", "1e308"), ("huge_int/1", "1" + "0" * 400)):
        text = json.dumps(ult(pair, ("NONE", gift(7777), "x"), ("ACCEPT", "NONE", "ok"))).replace("7777", value)
        (tmp_path / "logs" / rel).mkdir(parents=True)
        (tmp_path / "logs" / rel / "game_state.json").write_text(text, encoding="utf-8")
    nan = ult(pair, ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok"))
    nan["game_state"][-1]["summary"]["final_resources"][1]["_value"]["Dollars"] = float("nan")
    (tmp_path / "logs" / "nan" / "1").mkdir(parents=True)
    (tmp_path / "logs" / "nan" / "1" / "game_state.json").write_text(json.dumps(nan), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["import", "negotiationarena", str(tmp_path / "logs"), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err
    why = refused(out)
    assert {k.split("/")[0]: v[0] for k, v in why.items()} == {
        "huge_float": "bad_number", "huge_int": "bad_number", "nan": "bad_number", "turns_2.5": "bad_parameter",
        "turns_true": "bad_parameter", "surrogate_name": "bad_text"}
    assert "iterations: expected a whole number, got 2.5" in why["turns_2.5/1/game_state.json"][1]
    assert "final_resources[1].Dollars: 1e+308 is beyond 1e+12" in why["huge_float/1/game_state.json"][1]
    report = json.loads((out / "import_report.json").read_text(encoding="utf-8"))
    assert report["imported"] == 5 and report["found"] == 11
    dis = {d["item"].split("/")[0]: d for d in report["disagreements"]}
    assert set(dis) == {"negative", "too_much", "exchange_overdraft"}  # the rest agree
    for d in dis.values():
        assert d["kind"] == "malformed move" and d["causes"][0] == "invalid_move"
        assert d["replayed"]["agreement"] is False and d["recorded"]["agreement"] is True
    assert dis["negative"]["recorded"]["payoff"] == [140.0, -40.0]  # the study's record is kept, and named
    runs = [json.loads(x) for d in out.iterdir() if d.is_dir() for x in (d / "runs.jsonl").read_text().splitlines()]
    kept = next(r for r in runs if r["imported"]["file"].startswith("surrogate_message"))
    assert kept["round_log"][0]["actions"][0]["message"] == "hi \\ud800 there"  # kept, made storable
    no_leftovers(out)  # the report over such a mixed import: tests/test_csvcells.py (one report for both)


# ------------------------------------------------------------------------------------------ GAMA-Bench

def test_gamabench_answers_the_reference_could_not_write_are_never_scored(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Guesses of -1e300, NaN or text were scored (a score of -2.5e299 reached gamabench_scores.csv). What the
    reference's parser could not have stored (NaN, text, true, 33.5 where it stored int(...)) or no sum can
    hold (-1e300) is refused; what it took but our rules forbid (it checked no bounds: a guess of 101 or -1, a
    plan giving -20 gold, a bid of -5) is scored as the reference scored it and listed as a disagreement."""
    g = tmp_path / "raw" / "guessing_game"
    write_gama(g / "m_guessing_game_v1_1.json", guess_file([[50, 20], [50, 40]]))  # A = 40 -> 60
    values = {"2": -1e300, "3": "abc", "4": 101, "5": 33.5, "6": True, "7": -1, "8": float("nan")}
    for run, value in values.items():  # seat 0's answer in round 2
        doc = guess_file([[50, 20], [50, 40]])
        doc["player_data"][0]["records"][1] = value
        (g / f"{'wild' if run in ('4', '7') else 'm'}_guessing_game_v1_{run}.json").write_text(json.dumps(doc))
    write_gama(g / "m_guessing_game_v1_9.json", guess_file([[50], [50]], min=2.5))
    write_gama(g / "m_guessing_game_v1_10.json", guess_file([[50], [50]], ratio="2/3"))
    write_gama(tmp_path / "raw" / "pirate_game" / "m_pirate_game_v1_1.json", {
        "meta": {"player_num": 3, "gold": 100}, "player_data": [{"records": []}] * 3,
        "round_records": [{"gold_distribution": [90, 30, -20], "responses": ["accept", "accept", "reject"]}]})
    battle = {"meta": {"player_num": 10**9, "interval": 0}, "player_data": [{"records": []}] * 3, "round_records": []}
    write_gama(tmp_path / "raw" / "battle_royale" / "m_battle_royale_v1_1.json", battle)  # built 10**9 hit rates
    write_gama(tmp_path / "raw" / "sealed_bid_auction" / "first_price" / "m_sealed_bid_auction_v1_1.json", {
        "meta": {"player_num": 2, "round_id": 1, "seed": 43}, "player_data": [{"records": [-5]}, {"records": [10]}],
        "round_records": [{"valuations": [50, 60], "bid_winner": "player_1", "utility": [0, 1]}]})
    name = os.fsdecode(b"\xff\xfe_guessing_game_v1_1.json")  # bytes that are not UTF-8: a lone surrogate
    write_gama(g / name, guess_file([[10], [30]]))
    out = tmp_path / "out"
    assert main(["import", "gamabench", str(tmp_path / "raw"), "--out", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    why = {k.rsplit("/", 1)[-1]: v for k, v in refused(out).items()}
    assert {k: v[0] for k, v in why.items()} == {
        "m_guessing_game_v1_2.json": "bad_number", **{f"m_guessing_game_v1_{r}.json": "bad_move" for r in "3568"},
        "m_guessing_game_v1_9.json": "bad_parameter", "m_guessing_game_v1_10.json": "bad_parameter",
        "\\udcff\\udcfe_guessing_game_v1_1.json": "bad_text", "m_battle_royale_v1_1.json": "bad_parameter"}
    assert "meta.player_num is 1000000000 but player_data has 3 players" in why["m_battle_royale_v1_1.json"][1]
    assert "is not a finite number within 1e+12" in why["m_guessing_game_v1_2.json"][1]
    assert "round 2, player 0: 'abc' is not a number" in why["m_guessing_game_v1_3.json"][1]
    assert "round 2, player 0: 'chosen_number' must be a whole number, got 33.5" in why["m_guessing_game_v1_5.json"][1]
    report = json.loads((out / "import_report.json").read_text(encoding="utf-8"))
    dis = {d["item"].rsplit("/", 1)[-1]: d for d in report["disagreements"]}
    assert set(dis) == {"wild_guessing_game_v1_4.json", "wild_guessing_game_v1_7.json", "m_pirate_game_v1_1.json",
                        "m_sealed_bid_auction_v1_1.json"}
    assert all(d["causes"][0] == "answer_outside_our_rules" and d["kind"] == "rule difference" for d in dis.values())
    assert "round 2, player 0: chosen_number 101 is outside [0, 100]" in dis["wild_guessing_game_v1_4.json"]["detail"]
    assert "allocation has a negative share" in dis["m_pirate_game_v1_1.json"]["detail"]
    with (out / "gamabench_scores.csv").open(encoding="utf-8") as fh:
        scores = {(r["model"], r["game"]): r for r in csv.DictReader(fh)}
    assert float(scores[("m", "guessing_game")]["score"]) == 60.0
    # wild: round means (50 + 101) / 2 and (50 - 1) / 2 scored as the reference would: both runs kept
    assert scores[("wild", "guessing_game")]["runs"] == "2"
    no_leftovers(out)


# ---------------------------------------------------------------------------------------------------- GLEE

def test_glee_files_our_rules_refuse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A last decision cut mid-word (accept -> ac; a person's AcceptOffer -> Accep; yes -> ye) imported as a
    finished no-deal game that the replay called agreeing; a config without its delta was read as delta 1;
    max_rounds 2.5 became 2; a lone surrogate in config.json gave a traceback and left config.toml.tmp."""
    root = tmp_path / "Data"
    cfg = config("bargaining", barg_args(100, 12, delta_1=0.9, delta_2=0.9))
    h, rows = bargaining_rows([(60, 40)], ["accept"])
    write_game(root, "llm_vs_llm", "bargaining", "G0GOOD0000000001", cfg, glee_csv(h, rows))
    h, cut = bargaining_rows([(60, 40)], ["ac"])
    write_game(root, "llm_vs_llm", "bargaining", "G0CUTB0000000002", cfg, glee_csv(h, cut))
    neg = glee_csv(["message", "product_price", "player", "round", "decision"], [
        ["good", "8000.0", "Alice", 1, ""], ["", "", "Bob", 1, "Accep"]])
    write_game(root, "human_vs_llm", "negotiation", "G0CUTN0000000003",
               config("negotiation", neg_args(1.0, 1.0, 10000, 30, ma=True), human=1), neg)
    write_game(root, "llm_vs_llm", "persuasion", "G0CUTP0000000004",
               config("persuasion", pers_args(0.5, 2.0, 100, text=False, myopic=False)),
               persuasion_csv("hl", ["yes", "no"], "yn", text=False).rstrip("\n")[:-1] + "e\n")  # "no" -> "ne"
    write_game(root, "llm_vs_llm", "bargaining", "G0NODELTA0000005",
               config("bargaining", barg_args(100, 12, in_args=False)), glee_csv(h, rows))
    write_game(root, "llm_vs_llm", "bargaining", "G0HALF0000000006",
               config("bargaining", barg_args(100, 2.5, delta_1=0.9, delta_2=0.9)), glee_csv(h, rows))  # type: ignore[arg-type]
    write_game(root, "llm_vs_llm", "bargaining", "G0NAN00000000007",
               config("bargaining", {**barg_args(100, 12), "money_to_divide": "nan"}), glee_csv(h, rows))
    write_game(root, "llm_vs_llm", "bargaining", "G0BOOL0000000008",
               config("bargaining", {**barg_args(100, 12), "money_to_divide": True}), glee_csv(h, rows))
    write_game(root, "llm_vs_llm", "bargaining", "G0SURR0000000009",
               config("bargaining", barg_args(100, 12), p1="model-\ud800"), glee_csv(h, rows))
    out = tmp_path / "out"
    assert main(["import", "glee", str(root), "--out", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    why = {k.rsplit("/", 1)[-1]: v for k, v in refused(out).items()}
    assert {k: v[0] for k, v in why.items()} == {
        "G0CUTB0000000002": "bad_move", "G0CUTN0000000003": "bad_move", "G0CUTP0000000004": "bad_move",
        "G0NODELTA0000005": "bad_parameter", "G0HALF0000000006": "bad_parameter", "G0NAN00000000007": "bad_parameter",
        "G0BOOL0000000008": "bad_parameter", "G0SURR0000000009": "bad_text"}
    assert "the last decision 'ac' is none of accept, reject" in why["G0CUTB0000000002"][1]
    assert "the last decision 'Accep' is none of AcceptOffer" in why["G0CUTN0000000003"][1]
    assert "no delta for Alice" in why["G0NODELTA0000005"][1]
    assert "game_args.max_rounds: expected a whole number, got 2.5" in why["G0HALF0000000006"][1]
    report = json.loads((out / "import_report.json").read_text(encoding="utf-8"))
    assert report["imported"] == 1 and report["replay_check"]["agree"] == 1
    no_leftovers(out)


# ------------------------------------------------------------------------------- a second import, same --out

def test_a_second_import_never_replaces_another_in_silence(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A second import into the same --out replaced the first import's run directories (2 runs -> 1). Another
    folder (or another source) is refused, exit 2, naming the first; the same folder again is the same import
    (byte for byte), and a group it no longer makes is removed, with a warning, not left to be counted."""
    pair = ("A", "B")
    write_logs(tmp_path / "first", {"u/1": ult(pair, ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok")),
                                    "u/2": ult(pair, ("NONE", gift(40), "x"), ("ACCEPT", "NONE", "ok")),
                                    "v/1": ult(("C", "D"), ("NONE", gift(10), "x"), ("ACCEPT", "NONE", "ok"))})
    write_logs(tmp_path / "second", {"u/1": ult(pair, ("NONE", gift(50), "x"), ("ACCEPT", "NONE", "ok"))})
    out = tmp_path / "out"
    assert main(["import", "negotiationarena", str(tmp_path / "first"), "--out", str(out)]) == 0
    runs = out / "ultimatum--A--vs--B" / "runs.jsonl"
    before = runs.read_bytes()
    assert len(before.splitlines()) == 2
    capsys.readouterr()
    for source, raw in (("negotiationarena", "second"), ("glee", "second"), ("gamabench", "first")):
        assert main(["import", source, str(tmp_path / raw), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"holds the import of {tmp_path / 'first'}" in err and "Traceback" not in err, err
        assert runs.read_bytes() == before
    assert main(["import", "negotiationarena", str(tmp_path / "first"), "--out", str(out)]) == 0
    assert runs.read_bytes() == before  # the same folder again: the same import
    shutil.rmtree(tmp_path / "first" / "v")
    (out / "ultimatum--C--vs--D" / "my_notes.txt").write_text("mine", encoding="utf-8")
    (out / "link").symlink_to(out / "ultimatum--A--vs--B")  # never removed, never followed to remove
    assert main(["import", "negotiationarena", str(tmp_path / "first"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "ultimatum--C--vs--D: removed" in err and "kept what an import does not write: my_notes.txt" in err
    assert [p.name for p in (out / "ultimatum--C--vs--D").iterdir()] == ["my_notes.txt"]  # no run directory now
    assert runs.read_bytes() == before
    # --out inside the source: the next import would read its own output
    assert main(["import", "negotiationarena", str(tmp_path / "first"), "--out", str(tmp_path / "first" / "o")]) == 2
    assert "lies inside RAW_DIR" in capsys.readouterr().err
    # GLEE the same: a second Data/ folder into the same --out is refused
    for name in ("d1", "d2"):
        h, rows = bargaining_rows([(60, 40)], ["accept"])
        write_game(tmp_path / name, "llm_vs_llm", "bargaining", f"R0{name.upper()}000000001",
                   config("bargaining", barg_args(100, 12)), glee_csv(h, rows))
    assert main(["import", "glee", str(tmp_path / "d1"), "--out", str(tmp_path / "g")]) == 0
    assert main(["import", "glee", str(tmp_path / "d2"), "--out", str(tmp_path / "g")]) == 2
    assert f"holds the import of {tmp_path / 'd1'}" in capsys.readouterr().err


def test_paths_that_are_not_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A source folder and an --out whose names are not UTF-8 (a lone surrogate once decoded) crashed the
    import report and the printed summary with UnicodeEncodeError; they are shown as their escapes, and the
    same folder imported again is still the same import."""
    raw = tmp_path / os.fsdecode(b"logs\xfe")
    write_logs(raw, {os.fsdecode(b"u\xff/1"): ult(("A", "B"), ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok"))})
    out = tmp_path / os.fsdecode(b"out\xff")
    for _ in range(2):
        assert main(["import", "negotiationarena", str(raw), "--out", str(out)]) == 0
        printed = capsys.readouterr()
        assert "out\\udcff" in printed.out and "Traceback" not in printed.err
    report = json.loads((out / "import_report.json").read_text(encoding="utf-8"))
    assert report["imported"] == 1 and report["run_dirs"][0].endswith("out\\udcff/ultimatum--A--vs--B")
    run = json.loads((out / "ultimatum--A--vs--B" / "runs.jsonl").read_text(encoding="utf-8"))
    assert run["imported"]["file"] == "u\\udcff/1/game_state.json"
    # the config.toml is TOML a reader takes back (it held a TOML escape of a surrogate, which the analysis
    # then read as no settings at all), its description naming the source by its escape
    config = tomllib.loads((out / "ultimatum--A--vs--B" / "config.toml").read_text(encoding="utf-8"))
    assert "logs\\udcfe:" in config["experiment"]["description"] and config["experiment"]["game"] == "ultimatum"


def test_a_failed_atomic_write_leaves_no_tmp(tmp_path: Path) -> None:
    """write_atomic wrote config.toml.tmp, failed on a lone surrogate and left the .tmp behind."""
    from econarena.formats.rundir import write_atomic

    target = tmp_path / "config.toml"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "name = 'A\ud800'")
    assert target.read_text(encoding="utf-8") == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


# ----------------------------------------------------------------------- files no writer of the source makes

def test_a_key_or_column_written_twice_is_refused_not_read_as_its_last(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """JSON keeps the last of two equal keys and a csv.DictReader the last of two equal columns, in silence: a
    GAMA-Bench file with a second ``records`` list was scored from it (the model's score 60 -> 68.75), a
    NegotiationArena log with a second ``class`` was read as another scenario, a GLEE game.csv with two
    ``decision`` columns (reject, then accept) imported a deal that GLEE's own reader (pandas: the first
    column) reads as none. No writer of those tools writes a key or a column twice: such a file is refused,
    naming the key; so is a game.csv row with text beyond its header (an unquoted comma shifts its cells)."""
    good = guess_file([[50, 20], [50, 40]])
    write_gama(tmp_path / "raw" / "guessing_game" / "m_guessing_game_v1_1.json", good)
    write_gama(tmp_path / "raw" / "guessing_game" / "m_guessing_game_v1_2.json",
               json.dumps(good).replace('"records": [50, 20]', '"records": [50, 20], "records": [0, 0]'))
    assert main(["import", "gamabench", str(tmp_path / "raw"), "--out", str(tmp_path / "gama")]) == 0
    why = refused(tmp_path / "gama")
    assert "the key 'records' is written twice" in why["guessing_game/m_guessing_game_v1_2.json"][1]
    assert ",60.0," in (tmp_path / "gama" / "gamabench_scores.csv").read_text(encoding="utf-8")
    pair = ("A", "B")
    text = json.dumps(ult(pair, ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok")))
    write_logs(tmp_path / "logs", {"u/1": text, "u/2": text.replace('"class": "MultiTurnUltimatumGame"',
                                                                    '"class": "MultiTurnUltimatumGame", "class": '
                                                                    '"TradingGame"')})
    assert main(["import", "negotiationarena", str(tmp_path / "logs"), "--out", str(tmp_path / "na")]) == 0
    assert refused(tmp_path / "na")["u/2/game_state.json"][0] == "unreadable"
    root = tmp_path / "Data"
    cfg = config("bargaining", barg_args(100, 12, delta_1=0.9, delta_2=0.9))
    h, rows = bargaining_rows([(60, 40)], ["reject"])
    write_game(root, "llm_vs_llm", "bargaining", "G0GOOD0000000001", cfg, glee_csv(h, rows))
    write_game(root, "llm_vs_llm", "bargaining", "G0TWICE000000002", cfg,
               glee_csv([*h, "decision"], [[*r, "accept" if r[-1] == "reject" else ""] for r in rows]))
    write_game(root, "llm_vs_llm", "bargaining", "G0SHIFT000000003", cfg,
               glee_csv(h, [*rows[:-1], [*rows[-1], "later", "cells"]]))
    write_game(root, "llm_vs_llm", "bargaining", "G0KEY00000000004",
               json.dumps(cfg).replace('"max_rounds": 12', '"max_rounds": 12, "max_rounds": 2'), glee_csv(h, rows))
    assert main(["import", "glee", str(root), "--out", str(tmp_path / "glee")]) == 0
    assert "Traceback" not in capsys.readouterr().err
    why = {k.rsplit("/", 1)[-1]: v for k, v in refused(tmp_path / "glee").items()}
    assert {k: v[0] for k, v in why.items()} == dict.fromkeys(
        ["G0TWICE000000002", "G0SHIFT000000003", "G0KEY00000000004"], "unreadable")
    assert "the column 'decision' is named twice" in why["G0TWICE000000002"][1]
    assert "2 cell(s) beyond the header's 5 columns" in why["G0SHIFT000000003"][1]
    assert "the key 'max_rounds' is written twice" in why["G0KEY00000000004"][1]


def test_a_file_that_cannot_be_read_as_one_is_refused_not_skipped(tmp_path: Path) -> None:
    """A log behind a link to a disk that is not mounted, or a named pipe, was skipped without a word (found
    counted only the readable files): each is an item of the source, refused with its reason."""
    pair = ("A", "B")
    write_logs(tmp_path / "logs", {"u/1": ult(pair, ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok"))})
    (tmp_path / "logs" / "gone").mkdir()
    (tmp_path / "logs" / "gone" / "game_state.json").symlink_to(tmp_path / "unmounted" / "game_state.json")
    (tmp_path / "logs" / "pipe").mkdir()
    os.mkfifo(tmp_path / "logs" / "pipe" / "game_state.json")
    g = tmp_path / "raw" / "guessing_game"
    write_gama(g / "m_guessing_game_v1_1.json", guess_file([[50, 20], [50, 40]]))
    (g / "m_guessing_game_v1_2.json").symlink_to(tmp_path / "unmounted" / "x.json")
    os.mkfifo(g / "m_guessing_game_v1_3.json")
    for source, raw, out in (("negotiationarena", "logs", "na"), ("gamabench", "raw", "gama")):
        assert main(["import", source, str(tmp_path / raw), "--out", str(tmp_path / out)]) == 0
        report = json.loads((tmp_path / out / "import_report.json").read_text(encoding="utf-8"))
        assert (report["found"], report["imported"], report["refused_by_category"]) == (3, 1, {"unreadable": 2})
        reasons = sorted(r for _, r in refused(tmp_path / out).values())
        assert reasons[0].startswith(f"a link to {tmp_path / 'unmounted'}") and "which does not exist" in reasons[0]
        assert reasons[1] == "not a regular file (a pipe, a socket or a device)"


def test_a_glee_money_of_zero_is_a_bad_parameter(tmp_path: Path) -> None:
    """A bargaining money or a negotiation price of 0 (or -0.0) was refused as 'unreadable' with a
    ZeroDivisionError for its reason: the game's own bounds are now checked before any arithmetic."""
    root = tmp_path / "Data"
    h, rows = bargaining_rows([(60, 40)], ["accept"])
    write_game(root, "llm_vs_llm", "bargaining", "G0GOOD0000000001",
               config("bargaining", barg_args(100, 12, delta_1=0.9, delta_2=0.9)), glee_csv(h, rows))
    for i, money in enumerate((0, -0.0)):
        write_game(root, "llm_vs_llm", "bargaining", f"G0ZERO{i}000000000",
                   config("bargaining", {**barg_args(100, 12, delta_1=0.9, delta_2=0.9), "money_to_divide": money}),
                   glee_csv(h, rows))
    neg = glee_csv(["product_price", "player", "round", "decision"],
                   [["8000.0", "Alice", 1, ""], ["", "Bob", 1, "AcceptOffer"]])
    write_game(root, "llm_vs_llm", "negotiation", "G0ZEROPRICE00002", config("negotiation", neg_args(1.0, 1.0, 0, 30)),
               neg)
    assert main(["import", "glee", str(root), "--out", str(tmp_path / "out")]) == 0
    why = refused(tmp_path / "out")
    assert len(why) == 3 and all(cat == "bad_parameter" and "parameter money: Input should be greater than 0" in r
                                 for cat, r in why.values()), why


def test_a_glee_offer_that_is_not_finite_is_a_bad_number(tmp_path: Path) -> None:
    """An accepted offer of 1e400 (or inf) in game.csv was read as no number: GLEE's reading became a game
    without a deal, imported with payoffs 0 and 0 (a 'source inconsistency'), where importing.md refuses a
    number that is not finite as bad_number."""
    root = tmp_path / "Data"
    cfg = config("bargaining", barg_args(100, 12, delta_1=0.9, delta_2=0.9))
    h, rows = bargaining_rows([(60, 40)], ["accept"])
    write_game(root, "llm_vs_llm", "bargaining", "G0GOOD0000000001", cfg, glee_csv(h, rows))
    for i, x in enumerate(("1e400", "-inf")):
        write_game(root, "llm_vs_llm", "bargaining", f"G0INF{i}0000000002", cfg,
                   glee_csv(h, [[x, *rows[0][1:]], *rows[1:]]))
    assert main(["import", "glee", str(root), "--out", str(tmp_path / "out")]) == 0
    why = {k.rsplit("/", 1)[-1]: v for k, v in refused(tmp_path / "out").items()}
    assert why == {"G0INF00000000002": ("bad_number", "not a readable bargaining game (game.csv column alice_gain: "
                                                      "'1e400' is not a finite number)"),
                   "G0INF10000000002": ("bad_number", "not a readable bargaining game (game.csv column alice_gain: "
                                                      "'-inf' is not a finite number)")}
