"""GAMA-Bench: importing the reference's released results, the score table, summary scores, the report section,
the shipped configs and the benchmark. Raw files are built here, small, in the reference's format."""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from econarena.analysis.families import gamabench
from econarena.analysis.metrics import summarize
from econarena.cli import main
from econarena.games import GAMES, get_game
from econarena.games.base import Game
from econarena.games.gamabench.guessing import GuessingGame
from econarena.importers.gamabench import Folder, import_reference, parse_file_name

GAME = get_game("guessing_game")
GUESS = Folder(("guessing_game",), GAME, {})


def guess_file(records: list[list[Any]], *, prompts: bool = True, **meta: Any) -> dict[str, Any]:
    """A reference result of Guess 2/3: ``records[i]`` are seat i's numbers, one per round."""
    rounds = len(records[0])
    round_records = []
    for k in range(rounds):
        numbers = [r[k] for r in records]
        mean = sum(numbers) / len(numbers)
        # the reference shuffles the responses in place: keep only the totals meaningful
        round_records.append({"responses": list(reversed(numbers)), "mean": mean, "mean_ratio": mean * 2 / 3,
                              "winner": 0, "winner_num": 1})
    players = []
    for i, recs in enumerate(records):
        chat = [{"role": "system", "content": "rules"}]
        for k, x in enumerate(recs):
            chat += [{"role": "user", "content": f"round {k + 1}: you chose:"},
                     {"role": "assistant", "content": json.dumps({"chosen_number": str(x)})},
                     {"role": "user", "content": "you lost"}]
        players.append({"model": "m", "id": f"player_{i}", "prompt": chat if prompts else [], "records": recs,
                        "utility": []})
    return {"meta": {"name_exp": "x", "player_num": len(records), "min": 0, "max": 100, "ratio": 2 / 3,
                     "ratio_str": "2/3", "round_id": rounds, "version": "v1", **meta},
            "round_records": round_records, "player_data": players}


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


# ------------------------------------------------------------------------------------------ from_reference

def test_from_reference_takes_player_order_from_the_records() -> None:
    # round means (30+60+90)/3 = 60 and (10+20+30)/3 = 20 -> A = 40 -> (100 - 40) / 100 x 100 = 60
    imp = GAME.from_reference(guess_file([[30, 10], [60, 20], [90, 30]]))
    assert imp.n_players == 3 and imp.params["rounds"] == 2 and imp.params["ratio"] == pytest.approx(2 / 3)
    assert imp.round_log[0]["actions"] == [{"chosen_number": 30}, {"chosen_number": 60}, {"chosen_number": 90}]
    assert imp.round_log[1]["events"]["mean"] == 20 and imp.round_log[1]["events"]["winners"] == [0]  # 10 nearest 13.3
    setup = GAME.setup(GAME.Params(**imp.params), 3, np.random.default_rng(0))
    assert GAME.score(setup, imp.round_log) == pytest.approx(60.0)
    assert imp.payoffs == [2.0, 0.0, 0.0]  # round 1: target 40, 30 wins; round 2: target 13.3, 10 wins
    assert imp.messages is not None and imp.messages[1][2]["content"] == '{"chosen_number": "60"}'


def test_from_reference_meta_defaults_and_bad_files() -> None:
    raw = guess_file([[50], [50]])
    for key in ("min", "max", "ratio"):
        del raw["meta"][key]
    imp = GAME.from_reference(raw)
    assert (imp.params["min"], imp.params["max"]) == (0, 100) and imp.messages is not None
    assert GAME.from_reference(guess_file([[1], [2]], prompts=False)).messages is None
    assert GAME.from_reference({**guess_file([[1], [2]]), "player_data": [{"records": ["7", "x"]}]}) \
        .round_log[0]["actions"] == [{"chosen_number": 7}]
    with pytest.raises(ValueError):
        GAME.from_reference({"meta": {}, "round_records": [], "player_data": []})


@pytest.mark.parametrize("name, expected", [
    ("gpt-4o_guessing_game_v1_3.json", ("gpt-4o", "gpt-4o", 3)),
    ("guessing_game_v1_2.json", ("anon", "anon", 2)),
    ("my_model_guessing_game_v1_1.json", ("my_model", "my_model", 1)),
    ("gpt-4o_guessing_game_v1.json", ("gpt-4o", "gpt-4o[v1]", 0)),
    ("gpt-4o_guessing_game_v2.json", ("gpt-4o", "gpt-4o[v2]", 0)),
    ("gpt-4o_guessing_game_v2_4.json", ("gpt-4o", "gpt-4o[v2]", 4)),
    ("gpt-4o_guessing_game_v1_t3.json", ("gpt-4o", "gpt-4o[v1_t3]", 0)),
    ("gpt-4o_guessing_game_v1_cot1.json", ("gpt-4o", "gpt-4o[v1_cot1]", 0)),
    ("guessing_game_v1_savept1_3.json", ("anon", "anon[v1_savept1_3]", 0)),
    ("gpt-4o_guessing.json", None),
    ("gpt-4o_guessing_game_1.json", None),
    ("gpt-4o_bar_game_implicit_v1_1.json", None),
])
def test_file_names(name: str, expected: tuple[str, str, int] | None) -> None:
    assert parse_file_name(name, GUESS, "anon") == expected


def test_file_names_in_a_nested_folder_use_the_component_in_the_name() -> None:
    nested = Folder(("sealed_bid_auction", "first_price"), GAME, {})
    assert parse_file_name("llama-3.1-8b_sealed_bid_auction_v1_5.json", nested, "u") == \
        ("llama-3.1-8b", "llama-3.1-8b", 5)


# ------------------------------------------------------------------------------------------------ import

@pytest.fixture
def raw_tree(tmp_path: Path) -> Path:
    raw = tmp_path / "raw_results"
    g = raw / "guessing_game"
    # m1 run 1: round means 50, 30 -> A = 40 -> 60; run 2: means 30, 10 -> A = 20 -> 80
    write(g / "m1_guessing_game_v1_1.json", guess_file([[50, 20], [50, 40]]))
    write(g / "m1_guessing_game_v1_2.json", guess_file([[20, 0], [40, 20]]))
    write(g / "m1_guessing_game_v1_t0.json", guess_file([[100], [100]]))  # variant: A = 100 -> 0
    # no model prefix: run 1 mean 20 -> 80; run 2 mean 5 -> 95
    write(g / "guessing_game_v1_1.json", guess_file([[10], [30]]))
    write(g / "guessing_game_v1_2.json", guess_file([[0], [10]]))
    write(g / "m1_guessing_game_v1_4.json", "{not json")
    write(g / "m1_guessing_game_v1_5.json", "[1, 2, 3]")
    write(g / "m1_guessing_game_v1_6.json", {"meta": {}, "round_records": "x", "player_data": 7})
    write(g / "m1_guessing_game_v1_7.json", guess_file([[10], [30]], min=500, max=100))
    write(g / "weird.json", guess_file([[1], [2]]))
    write(g / "notes.txt", "hello")
    write(raw / "unknown_game" / "m1_unknown_game_v1_1.json", guess_file([[1], [2]]))
    return raw


def read_csv(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and list(rows[0]) == ["model", "game", "score", "std", "runs"]
    return {(r["model"], r["game"]): r for r in rows}


def test_import_command_end_to_end(raw_tree: Path, tmp_path: Path, arena) -> None:
    out = tmp_path / "imported"
    r = arena.cli("import", "gamabench", str(raw_tree), "--out", str(out), "--unnamed-model", "gpt-3.5")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    refused = [line for line in r.stderr.splitlines() if line.startswith("econarena: refused:")]
    for bad in ("v1_4.json", "v1_5.json", "v1_6.json", "v1_7.json", "weird.json", "notes.txt", "unknown_game"):
        assert sum(bad in w for w in refused) == 1, (bad, r.stderr)
    assert len(refused) == 7
    assert "parameter" in next(w for w in refused if "v1_7.json" in w)  # max below min: named, not a crash
    # every file is accounted for: 5 imported (4 default runs and one variant) and 7 refused
    report = json.loads((out / "import_report.json").read_text(encoding="utf-8"))
    assert report["found"] == report["imported"] + report["refused"] and report["refused"] == 7
    assert report["refused_by_category"] == {"bad_parameter": 1, "unknown_folder": 1, "unknown_format": 1,
                                             "unreadable": 4}  # v1_7: max below min, the Params model refuses it
    # the replay check: the reference's round means and targets agree with ours in every imported file
    assert report["replay_check"]["checked"] == report["imported"] == report["replay_check"]["agree"]
    assert "replay check: 5 of 5 checked run(s) reach the recorded outcome" in r.stdout
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "guessing_game--gpt-3.5", "guessing_game--m1", "guessing_game--m1_v1_t0"]
    rows = read_csv(out / "gamabench_scores.csv")
    m1 = rows[("m1", "guessing_game")]
    assert float(m1["score"]) == pytest.approx(70.0)  # (60 + 80) / 2
    assert float(m1["std"]) == pytest.approx(math.sqrt(200))  # (10^2 + 10^2) / (2 - 1)
    assert m1["runs"] == "2"
    anon = rows[("gpt-3.5", "guessing_game")]
    assert float(anon["score"]) == pytest.approx(87.5) and float(anon["std"]) == pytest.approx(math.sqrt(112.5))
    variant = rows[("m1[v1_t0]", "guessing_game")]
    assert float(variant["score"]) == 0.0 and variant["std"] == "" and variant["runs"] == "1"
    if gamabench.leaderboard_games() == ["guessing_game"]:  # Overall needs every registered GAMA-Bench game
        overall = rows[("m1", "overall")]
        assert float(overall["score"]) == pytest.approx(70.0) and float(overall["std"]) == pytest.approx(math.sqrt(200))
        assert "70.0 ± 14.1" in r.stdout
    else:
        assert not any(g == "overall" for _, g in rows)
    assert "imported 5 run(s) into 3 run directories" in r.stdout

    # the run directories are ours: summary, decisions from the stored chats, sessions = the files' numbers
    summary = json.loads((out / "guessing_game--m1" / "summary.json").read_text())
    assert summary["labels"]["m1"]["score"] == pytest.approx(70.0)
    assert summary["labels"]["m1"]["score_std"] == pytest.approx(math.sqrt(200))
    runs = arena.sorted_runs(out / "guessing_game--m1")
    assert [x["session"] for x in runs] == [1, 2] and [x["score"] for x in runs] == [60.0, 80.0]
    assert runs[0]["imported"]["file"] == "guessing_game/m1_guessing_game_v1_1.json"
    decisions = arena.sorted_decisions(out / "guessing_game--m1")
    assert len(decisions) == 2 * 2 * 2 and all(d["imported"] and d["valid"] for d in decisions)
    d = next(x for x in decisions if x["session"] == 1 and x["round"] == 1 and x["player"] == 1)
    assert d["action"] == 40 and d["response"] == '{"chosen_number": "40"}'
    assert d["messages_from"] == 3 and [m["content"] for m in d["messages"]] == ["you lost", "round 2: you chose:"]

    # importing again gives the same files, not twice the runs
    again = arena.cli("import", "gamabench", str(raw_tree), "--out", str(out), "--unnamed-model", "gpt-3.5")
    assert again.returncode == 0 and len(arena.read_jsonl(out / "guessing_game--m1" / "runs.jsonl")) == 2


def test_import_errors(raw_tree: Path, tmp_path: Path, arena) -> None:
    r = arena.cli("import", "gamabench", str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "not a directory" in r.stderr and "Traceback" not in r.stderr
    r = arena.cli("import", "gamabench", str(raw_tree / "unknown_game"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "no GAMA-Bench result files could be imported" in r.stderr
    own = tmp_path / "mine" / "guessing_game--m1"
    own.mkdir(parents=True)
    (own / "manifest.json").write_text('{"status": "complete"}')
    r = arena.cli("import", "gamabench", str(raw_tree), "--out", str(tmp_path / "mine"))
    assert r.returncode == 2 and "were not imported" in r.stderr and "Traceback" not in r.stderr
    # --out one of our run directories (or an imported one): its runs would hold run directories inside
    for run_dir in (own, tmp_path / "imported" / "guessing_game--m1"):
        if run_dir != own:
            assert arena.cli("import", "gamabench", str(raw_tree), "--out", str(run_dir.parent)).returncode == 0
        before = sorted(p.name for p in run_dir.iterdir())
        r = arena.cli("import", "gamabench", str(raw_tree), "--out", str(run_dir))
        assert r.returncode == 2 and f"--out {run_dir} is a run directory" in r.stderr, r.stderr
        assert sorted(p.name for p in run_dir.iterdir()) == before
    r = arena.cli("import", "elsewhere", str(raw_tree), "--out", str(tmp_path / "o"))
    assert r.returncode == 2


def test_a_game_that_cannot_import_yet_is_reported_as_skipped(raw_tree: Path, tmp_path: Path, monkeypatch,
                                                               capsys) -> None:
    class Pending(GuessingGame):
        name = "pending_game"
        info = dataclasses.replace(GuessingGame.info, reference=(("unknown_game", {}),))
        from_reference = Game.from_reference  # the protocol's default: not implemented

    monkeypatch.setitem(GAMES, "pending_game", Pending())
    result = import_reference(raw_tree / "unknown_game", tmp_path / "x")
    assert [(r.category, r.reason) for r in result.refused] == [
        ("not_implemented", "reading reference results is not implemented for pending_game yet")]
    assert result.dirs == [] and result.found == 1
    assert main(["import", "gamabench", str(raw_tree), "--out", str(tmp_path / "y")]) == 0
    err = capsys.readouterr().err
    assert "refused: unknown_game/m1_unknown_game_v1_1.json: reading reference results is not implemented" in err
    assert "Traceback" not in err


def test_a_copy_of_a_folder_is_refused_naming_the_file_read_first(raw_tree: Path, tmp_path: Path) -> None:
    """The reason named only the file name, the refused file's own name: 'already read from
    m1_guessing_game_v1_1.json' when the copy under backup/ had been read."""
    import shutil

    shutil.copytree(raw_tree / "guessing_game", raw_tree / "backup" / "guessing_game")
    result = import_reference(raw_tree, tmp_path / "out", unnamed="u")
    dup = {r.item: r.reason for r in result.refused if r.category == "duplicate"}
    assert len(dup) == 5 and result.found == result.runs + len(result.refused)
    assert dup["guessing_game/m1_guessing_game_v1_1.json"] == (
        "run 1 of m1 in guessing_game was already read from backup/guessing_game/m1_guessing_game_v1_1.json")


def test_a_subset_of_the_tree_imports_alone(raw_tree: Path, tmp_path: Path) -> None:
    result = import_reference(raw_tree / "guessing_game", tmp_path / "sub", unnamed="u")
    assert result.runs == 5 and {d.name for d in result.dirs} == {"guessing_game--u", "guessing_game--m1",
                                                                  "guessing_game--m1_v1_t0"}


# ------------------------------------------------------------------------------------------ score table

def _score(label: str, column: str, session: int, score: float, lead: bool = True) -> gamabench.RunScore:
    return gamabench.RunScore(label, column, lead, session, 0, score, "d")


def test_overall_is_the_mean_of_the_game_cells_with_the_std_of_per_run_means() -> None:
    two = {"guessing_game": GAME, "other_game": _OtherGame()}
    scores = [_score("m", "guessing_game", 1, 60), _score("m", "guessing_game", 2, 80),
              _score("m", "other_game", 1, 20), _score("m", "other_game", 2, 30), _score("m", "other_game", 3, 40),
              _score("half", "guessing_game", 1, 50)]
    rows = {(r["model"], r["game"]): r for r in gamabench.score_table(scores, two)}
    # cells: guessing 70, other 30 -> Overall (70 + 30) / 2 = 50 (not the mean of all five runs, 46)
    assert rows[("m", "overall")]["score"] == pytest.approx(50.0)
    # per-run means over the runs present in both games: run 1 (60+20)/2 = 40, run 2 (80+30)/2 = 55
    assert rows[("m", "overall")]["std"] == pytest.approx(math.sqrt((7.5 ** 2 * 2) / 1))
    assert rows[("m", "overall")]["runs"] == 2
    assert rows[("m", "other_game")]["std"] == pytest.approx(10.0)  # 20, 30, 40
    assert ("half", "overall") not in rows  # only one of the two games: no Overall
    text = gamabench.format_leaderboard(list(rows.values()), two)
    assert text.splitlines()[0].split() == ["model", "overall", "guessing_game", "other_game"]
    assert "50.0 ± 10.6" in text and text.splitlines()[-1].startswith("half")


class _OtherGame(GuessingGame):
    name = "other_game"


def test_score_columns_follow_the_declared_reference_settings() -> None:
    class Moded(GuessingGame):
        name = "moded"
        info = dataclasses.replace(GuessingGame.info, reference=(("a", {"scoring": "code"}),
                                                                 ("b", {"scoring": "paper"})))

    g = Moded()
    assert gamabench.score_column(g, {"scoring": "code"}) == ("moded", True)
    assert gamabench.score_column(g, {"scoring": "paper"}) == ("moded[scoring=paper]", False)
    assert gamabench.score_column(g, {"scoring": "other"}) == ("moded[scoring=other]", False)
    assert gamabench.score_column(GAME, {"ratio": 0.5}) == ("guessing_game", True)


# ------------------------------------------------------------------------------------ runs played here

def test_summary_score_over_the_runs_a_label_played(tmp_path: Path, arena) -> None:
    # run 0: a plays 30 then 60, rational 0 -> round means 15, 30 -> A = 22.5 -> 77.5
    # run 1: a plays 100, 100 -> means 50, 50 -> A = 50 -> 50; both labels played both runs
    doc = arena.experiment_dict("guessing_game", [
        {"agent": "scripted", "label": "a",
         "responses": [json.dumps({"chosen_number": x}) for x in (30, 60, 100, 100)]},
        {"agent": "rational"}], {"rounds": 2}, sessions=1, runs=2)
    out = tmp_path / "run"
    assert arena.run_experiment(doc, out).status == "complete"
    s = summarize(out)["labels"]
    for label in ("a", "rational"):
        assert s[label]["score"] == pytest.approx(63.75)
        assert s[label]["score_std"] == pytest.approx(math.sqrt(2 * 13.75 ** 2))
    # a game without a score has none
    bc = arena.experiment_dict("beauty_contest", [{"agent": "rational"}, {"agent": "random"}], {"upper_bound": 100})
    arena.run_experiment(bc, tmp_path / "bc")
    assert summarize(tmp_path / "bc")["labels"]["rational"]["score"] is None


def test_rule_breaks_count_first_attempts(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("guessing_game", [
        {"agent": "scripted", "label": "flaky", "responses": ["oops", '{"chosen_number": 10}']},
        {"agent": "rational"}], {"rounds": 1}, reask=1)
    out = tmp_path / "run"
    arena.run_experiment(doc, out)
    run = arena.read_jsonl(out / "runs.jsonl")[0]
    assert run["valid"] == [True, True] and run["first_valid"] == [False, True]
    assert summarize(out)["labels"]["flaky"]["rule_break_rate_pct"] == 100.0
    # a log written before first_valid existed: fall back to valid
    del run["first_valid"]
    (out / "runs.jsonl").write_text(json.dumps(run) + "\n")
    assert summarize(out)["labels"]["flaky"]["rule_break_rate_pct"] == 0.0


# ---------------------------------------------------------------------------------------------- report

def test_report_has_a_gamabench_section(raw_tree: Path, tmp_path: Path, arena) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    imported = tmp_path / "imported"
    import_reference(raw_tree, imported, unnamed="gpt-3.5")
    doc = arena.experiment_dict("guessing_game", [{"agent": "rational", "count": 3}, {"agent": "random"}],
                                {"rounds": 4}, name="native-guess", sessions=2)
    arena.run_experiment(doc, tmp_path / "native")
    out = tmp_path / "report"
    r = arena.cli("report", str(imported), str(tmp_path / "native"), "--out", str(out), "--boot", "50",
                  timeout=240)
    assert r.returncode == 0, r.stderr
    assert "gama_scores.png" in r.stdout and "gama_rounds.png" in r.stdout
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<section class='scorecard' id='card-gamabench'>" in html and "href='#card-gamabench'" in html
    card = html.split("id='card-gamabench'", 1)[1].split("</section>", 1)[0]
    assert "<b>70.0</b><small>± 14.1</small>" in card  # m1's guessing cell, first on the page
    assert "data-figure='gama_scores'" in html and "data-figure='gama_rounds'" in html
    assert "70.0 ± 14.1 (n=2)" in html  # m1's guessing cell
    for key in ("gama_scores", "gama_rounds"):
        png = (out / "figures" / f"{key}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
    rows = read_csv(out / "gamabench_scores.csv")
    assert float(rows[("rational", "guessing_game")]["score"]) < 100  # the random player sits at the same table
    assert rows[("random", "guessing_game")]["score"] == rows[("rational", "guessing_game")]["score"]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium:  # the page's own load handler counts the decoded images, the section's two included
        n = html.count("<img src='data:image/png;base64,")
        dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              "--disable-background-networking", "--disable-dev-shm-usage",
                              f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom",
                              (out / "report.html").as_uri()], capture_output=True, text=True, timeout=90)
        assert f'data-images-loaded="{n}"' in dom.stdout and 'data-figure="gama_rounds"' in dom.stdout


def test_no_gamabench_section_without_such_runs(tmp_path: Path, arena) -> None:
    pytest.importorskip("matplotlib")
    from econarena.analysis.report import build_report

    bc = arena.experiment_dict("beauty_contest", [{"agent": "rational"}, {"agent": "random"}], {"upper_bound": 100})
    arena.run_experiment(bc, tmp_path / "bc")
    rep = build_report([tmp_path / "bc"], tmp_path / "rep", n_boot=20)
    assert "id='card-gamabench'" not in rep.html.read_text(encoding="utf-8")
    assert not (tmp_path / "rep" / "gamabench_scores.csv").exists()


# --------------------------------------------------------------------------------------- configs, bench

CONFIGS = sorted((Path(__file__).resolve().parent.parent / "configs" / "gamabench").glob("*.toml"))


def test_gamabench_configs(arena, capsys) -> None:
    import tomllib

    experiments = [p for p in CONFIGS if p.name != "models.toml"]
    assert len(experiments) == 8
    games = set()
    for path in experiments:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        e = doc["experiment"]
        games.add(e["game"])
        assert (e["environment"], e["sessions"], e["runs"], e["reask"]) == ("melee", 5, 1, 3)
        assert doc["llm"]["temperature"] == 1.0 and doc["players"] == [{"alias": "model", "count": 10}]
        # files of games merged from other branches validate once their game is registered
        code = main(["validate", str(path), str(path.parent / "models.toml")])
        err = capsys.readouterr().err
        if e["game"] in GAMES:
            assert code == 0, err
        else:
            assert code == 2 and e["game"] in err, err
    assert games == {"guessing_game", "el_farol_bar", "divide_dollar", "public_goods", "diners_dilemma",
                     "sealed_bid_auction", "battle_royale", "pirate_game"}


def test_gamabench_guessing_config_runs_in_a_suite(tmp_path: Path, arena) -> None:
    """The shipped file as the suite runs it, with the alias pointed at a baseline instead of the local model."""
    models = tmp_path / "models.toml"
    models.write_text('["model"]\nagent = "rational"\n', encoding="utf-8")
    cfg = [p for p in CONFIGS if p.name == "guessing_game.toml"][0]
    r = arena.cli("suite", str(cfg), "--models", str(models), "--sessions", "2", "--out", str(tmp_path / "s"),
                  "--no-report", "--quiet", timeout=120)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "s" / "gama-guessing_game" / "summary.json").read_text())
    assert s["labels"]["model"]["score"] == 100.0 and s["labels"]["model"]["decisions"] == 2 * 20 * 10


def test_bench_gama_measures(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent / "bench"
    spec = importlib.util.spec_from_file_location("bench_gama", root / "bench_gama.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    n, secs, size = mod.measure(1, 8)
    assert n == 10 * 20 and secs > 0 and size > 0
    assert "bench_gama.py" in (root / "run_all.py").read_text(encoding="utf-8")


def test_any_model_name_or_folder_gives_a_readable_config_toml(tmp_path: Path) -> None:
    """Model names and folders come from other people's files: an emoji or a newline must still give a
    config.toml that reads back (a hand-written writer escaped an emoji as an invalid surrogate pair)."""
    from econarena.hosts.config import read_toml

    raw = tmp_path / "odd\nname" / "guessing_game"
    write(raw / "gpt😀 \"x\"_guessing_game_v1_1.json", guess_file([[50, 40], [10, 20]]))
    result = import_reference(tmp_path / "odd\nname", tmp_path / "out")
    assert result.dirs and not result.warnings
    config = read_toml(result.dirs[0] / "config.toml")
    assert config["players"][0]["label"] == 'gpt😀 "x"' and "odd\nname" in config["experiment"]["description"]
