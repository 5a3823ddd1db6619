"""``econarena bench`` and ``leaderboard`` tried as a hostile user: odd MODEL strings, labels that are markup or
formulas, hand-edited results and suite files, a budget lowered after the end, busy baselines, scores and
intervals at their edges. Each test is a defect found that way (see the commit that added it)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from test_bench import SMALL, bench_args, prices_file, scripted_reply, small_suite

from econarena.cli import main
from econarena.hosts import bench as H
from econarena.hosts.config import ConfigError

LABELS = ['=HYPERLINK("http://evil.example","x")', "<script>alert(1)</script>", "x' onmouseover='alert(2)"]


def test_labels_are_text_in_the_leaderboard_csv_and_html(tmp_path: Path, capsys) -> None:
    """A label that is a spreadsheet formula is written as text (the project's one CSV writer); a label that
    is markup is escaped in the scorecard and the leaderboard page."""
    models = tmp_path / "models.toml"
    models.write_text("".join(f'["m{i}"]\nagent = "random"\nlabel = {json.dumps(x)}\n' for i, x in enumerate(LABELS)),
                      encoding="utf-8")
    out = tmp_path / "o"
    assert main(["bench", str(models), "--suite", str(small_suite(tmp_path)), "--out", str(out), "--quiet",
                 "--no-baselines"]) == 0
    files = {k: tmp_path / f"lb.{k}" for k in ("csv", "html")}
    assert main(["leaderboard", str(out), "--csv", str(files["csv"]), "--html", str(files["html"])]) == 0
    cells = [r["label"] for r in csv.DictReader(io.StringIO(files["csv"].read_text(encoding="utf-8")))]
    assert "'" + LABELS[0] in cells and LABELS[0] not in cells
    pages = [files["html"].read_text(encoding="utf-8"),
             *(p.read_text(encoding="utf-8") for p in out.glob("*/scorecard.html"))]
    assert len(pages) == 4
    for page in pages:
        assert "<script>alert" not in page and "x' onmouseover" not in page
    assert "&lt;script&gt;alert(1)" in pages[0] and "x&#x27; onmouseover" in pages[0]


SECRET = "QS3CRETv4lue"


def test_a_url_in_model_never_shows_its_secrets(tmp_path: Path, capsys) -> None:
    """MODEL@URL with a password or a key in the query string: bench.json's "source", the dry run, and the
    error messages show the URL masked (before: as typed, password and key included)."""
    spec = H.model_specs(f"llama@http://127.0.0.1:9/v1?api-key={SECRET}")[0]
    assert spec.entry["base_url"].endswith(SECRET)  # the player still gets it
    assert SECRET not in spec.source and spec.source == "llama@http://127.0.0.1:9/v1?api-key=***"
    suite = str(small_suite(tmp_path))
    assert main(["bench", f"llama@http://127.0.0.1:9/v1?api-key={SECRET}", "--suite", suite, "--dry-run"]) == 0
    assert main(["bench", f"llama@http://user:{SECRET}@127.0.0.1:9/v1", "--suite", suite,
                 "--out", str(tmp_path / "o")]) == 2  # URL credentials: refused
    for bad in (f"llama@htp://u:{SECRET}@h", f"http://u:{SECRET}@h/v1"):
        with pytest.raises(ConfigError) as exc:
            H.model_specs(bad)
        assert SECRET not in str(exc.value) and "***" in str(exc.value)
    seen = capsys.readouterr()
    assert SECRET not in seen.out + seen.err and "base_url carries credentials" in seen.err


def test_bench_json_of_a_url_with_a_key_holds_no_key(server: Any, tmp_path: Path) -> None:
    server.reset()
    server.reply = scripted_reply
    out = tmp_path / "o"
    args = bench_args(server, small_suite(tmp_path), out, "--no-baselines")
    args[1] += f"?api-key={SECRET}"
    assert main(args) == 0
    assert server.seen[0].query == f"api-key={SECRET}"  # the server got it
    for p in out.rglob("*"):
        if p.is_file():
            assert SECRET not in p.read_text(encoding="utf-8", errors="replace"), p


def test_a_provider_without_its_model_is_refused_before_a_dry_run() -> None:
    """``openai:`` and bare ``openai`` name no model: refused at once (the dry run planned them before and
    only the real run said 'needs a model'); ``hf`` alone is the bundled model; ``rational:`` is no baseline."""
    for text in ("openai:", "openai", "anthropic:"):
        with pytest.raises(ConfigError, match="needs a model"):
            H.model_specs(text)
    assert H.model_specs("hf:")[0].entry["agent"] == "hf"
    with pytest.raises(ConfigError, match="not a model"):
        H.model_specs("rational:")


def test_a_lower_budget_on_a_finished_bench_leaves_it_complete(server: Any, tmp_path: Path, capsys) -> None:
    """Every run played, then the same command with a --max-cost below what was spent: nothing to play, so
    the result stays complete (exit 0). Before: "complete": false, "stopped": "budget", exit 3, unranked."""
    server.reset()
    server.reply = scripted_reply
    suite, prices, out = small_suite(tmp_path), prices_file(tmp_path), tmp_path / "o"
    assert main(bench_args(server, suite, out, "--no-baselines", "--prices", str(prices), "--max-cost", "1e9")) == 0
    calls = server.count()
    assert main(bench_args(server, suite, out, "--no-baselines", "--prices", str(prices), "--max-cost", "1e-9")) == 0
    result = json.loads((out / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert result["complete"] and result["stopped"] is None and server.count() == calls


def _rational_result(tmp_path: Path) -> Path:
    out = tmp_path / "r"
    assert main(["bench", "rational", "--suite", str(small_suite(tmp_path)), "--out", str(out), "--quiet",
                 "--no-baselines"]) == 0
    return out / "rational" / "bench.json"


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["overall"].update(score=float("nan")), "overall.score: nan"),
    (lambda d: d["overall"].update(score=-5e300), "overall.score: -5e+300 is not a score from 0 to 100"),
    (lambda d: d["overall"].update(high=float("inf")), "overall.high: inf"),
    (lambda d: d["overall"].update(score="<b>99</b>"), "overall.score: '<b>99</b>'"),
    (lambda d: d.update(complete="false"), "complete: 'false' is not true or false"),
    (lambda d: d.update(cost_usd="free"), "cost_usd: 'free'"),
    (lambda d: d.update(model="gpt"), "model: expected"),
    (lambda d: d.update(subscores=[1, 2]), "subscores: expected"),
    (lambda d: d.update(overall=None), "overall: expected"),
    (lambda d: d.update(suite="v1"), "suite: expected"),
    (lambda d: d.update(tier="huge"), "tier: 'huge' is not one of"),
    # a cost beyond any bench was ranked; a label's newline split the terminal's table
    (lambda d: d.update(cost_usd=1e308), "cost_usd: 1e+308 is not a number from 0 to 1e+12"),
    (lambda d: d.update(score_per_usd=1e13), "score_per_usd: 10000000000000.0 is not a number from 0 to 1e+12"),
    (lambda d: d["model"].update(label="gpt\n1 | fake-top-row | 100"), "model.label: "),
    (lambda d: d["model"].update(model="m\x1b[2J"), "model.model: "),
])
def test_a_hand_edited_result_is_refused_by_key(tmp_path: Path, capsys, edit: Any, message: str) -> None:
    """Before: a NaN or 1e300 overall was ranked first or last, "complete": "false" was ranked as complete,
    and a string or a null where a table belongs stopped the leaderboard with a traceback."""
    path = _rational_result(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert main(["leaderboard", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err and "Traceback" not in err


def test_one_row_per_model(tmp_path: Path, capsys) -> None:
    """The same label in two different results is refused, naming both files (it was ranked twice); copies of
    one result (the baselines of two --out folders) count once."""
    suite = str(small_suite(tmp_path))
    for out in ("a", "b"):
        assert main(["bench", "random", "--suite", suite, "--out", str(tmp_path / out), "--quiet"]) == 0
    assert main(["leaderboard", str(tmp_path / "a"), str(tmp_path / "b"), "--baselines",
                 "--json", str(tmp_path / "lb.json")]) == 0
    rows = json.loads((tmp_path / "lb.json").read_text(encoding="utf-8"))
    assert sorted(r["label"] for r in rows) == ["accept", "constant", "random", "rational"]  # each baseline twice
    path = tmp_path / "b" / "random" / "bench.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    # another result of the same label: other settings (an overall score edited alone is now refused as a
    # file that contradicts its own games)
    data["settings_digest"] = "0" * 64
    path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "one model label, several different results" in err and str(path) in err


def test_every_interval_holds_its_point_estimate(tmp_path: Path) -> None:
    """Constant sessions whose sums round differently in numpy and math.fsum: the overall 0.27499999999999997
    had the interval [0.275, 0.275] (2% of random small benches had a point outside its interval)."""
    from econarena.analysis import benchmark as B
    from econarena.formats.benchsuite import load_suite

    suite = load_suite(small_suite(tmp_path))
    games = [B.GameScore(gid, fam, game, rule, v, None, None, 2, 2, 2, 0, 0, None, [v, v])
             for (gid, fam, game, rule), v in zip(
                 [("guess", "gamabench", "guessing_game", "game"),
                  ("beauty", "econarena", "beauty_contest", "equilibrium_action"),
                  ("ultimatum", "negotiationarena", "ultimatum", "payoff_share")], [0.1, 1 / 3, 1 / 3])]
    out = B.combine(suite, games)
    o = out["overall"]
    assert o["score"] == pytest.approx(0.275) and o["low"] <= o["score"] <= o["high"]
    for s in [*out["subscores"].values(), *({"low": g.low, "score": g.score, "high": g.high} for g in games)]:
        assert s["low"] <= s["score"] <= s["high"]


@pytest.mark.parametrize("change, message", [
    (("params = { rounds = 2 }", "params = 5"), "games[0].params: expected a table, got 5"),
    (("params = { rounds = 2 }", "params = { rounds = 2 }\ntier_params = { quick = 3 }"),
     "games[0].tier_params.quick: expected a table, got 3"),
    (('family = "gamabench"', 'family = ["gamabench"]'), "games[0].family: ['gamabench'] is not in [families]"),
    (('opponent = { agent = "rational" }', "opponent = 5"), "games[2].opponent: expected a table, got 5"),
])
def test_a_suite_of_the_wrong_types_is_an_error_not_a_traceback(tmp_path: Path, change: tuple[str, str],
                                                                 message: str, capsys) -> None:
    """Before: a number or a list where a table belongs stopped load_suite with a TypeError."""
    path = small_suite(tmp_path, SMALL.replace(*change, 1))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_score_rule_the_game_cannot_feed_is_refused_before_playing(tmp_path: Path, capsys) -> None:
    """best naming no parameter of the run: `validate` said ok, the bench played every game, then ended in a
    traceback (BenchError) while scoring. Now both refuse it at once, naming the game and the numbers known."""
    path = small_suite(tmp_path, SMALL.replace('best = "total"', 'best = "pie"'))
    assert main(["validate", str(path)]) == 2
    assert "[games ultimatum]: best = 'pie': no 'pie' in the run's parameters (numbers: total, turns)" in \
        capsys.readouterr().err
    out = tmp_path / "o"
    assert main(["bench", "random", "--suite", str(path), "--out", str(out), "--quiet"]) == 2
    assert not out.exists()
    from dataclasses import replace

    from econarena.formats.benchsuite import load_suite

    suite = load_suite(small_suite(tmp_path))
    beauty = next(g for g in suite.games if g.id == "beauty")
    exp = H.build(suite, "quick", H.model_specs("random")[0])[1]
    assert H.score_rule_problems(beauty, exp) == []
    assert "computes no 0-100 score" in H.score_rule_problems(replace(beauty, score="game"), exp)[0]


def test_a_pinned_model_opponent_without_its_key_stops_before_playing(tmp_path: Path, capsys,
                                                                      monkeypatch) -> None:
    """Only the first game was checked for keys: a later game's LLM opponent without its key played the suite
    and ended in 'API errors' after the retries."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env with a key
    path = small_suite(tmp_path, SMALL.replace('opponent = { agent = "rational" }',
                                               'opponent = { agent = "openai", model = "gpt-4o" }'))
    assert main(["bench", "random", "--suite", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "players[1] (opponent (openai/gpt-4o)): agent 'openai' needs an API key" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_model_without_its_key_is_said_once_not_once_per_seat(tmp_path: Path, capsys, monkeypatch) -> None:
    """The model sits in seat 0 of one game and seat 1 of another: its missing key was printed once per seat."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env with a key
    assert main(["bench", "openai:gpt-4o-mini", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if "needs an API key" in x]
    assert len(lines) == 1 and "set OPENAI_API_KEY" in lines[0], lines
    assert not (tmp_path / "o").exists()


def test_a_reply_with_a_lone_surrogate_is_a_rule_break_and_the_run_ends(server: Any, tmp_path: Path) -> None:
    """The loopback server answers text holding a lone surrogate (valid JSON on the wire). Before: the response
    cache failed to hash or store it, and the next request of the run (the reply is in the conversation)
    failed in the SDK, both as API errors: the runs never finished, whatever the reruns. Now the reply is a
    rule break (the one text rule), the conversation carries its visible escape, and the bench completes."""
    server.reset()
    server.reply = lambda protocol, body: '{"chosen_number": 30, "answer": 20, "x": "\ud800"}'
    out = tmp_path / "o"
    assert main(bench_args(server, small_suite(tmp_path), out, "--no-baselines")) == 0
    result = json.loads((out / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert result["complete"] and all(g["rule_break_pct"] == 100.0 for g in result["games"])
    second_round = [s for s in server.seen if "\\ud800" in json.dumps(s.body)]
    assert second_round and all("\\\\ud800" in json.dumps(s.body) for s in second_round)  # sent as its escape
    decisions = (out / "fake" / "guess" / "decisions.jsonl").read_text(encoding="utf-8")
    assert "lone surrogate U+D800" in decisions


def test_the_cache_keeps_a_reply_that_is_not_text_and_skips_a_model_name_that_is_not(tmp_path: Path) -> None:
    """A reply with a lone surrogate is kept as its bytes (a resume reads back the same reply); a model name
    with one cannot be stored at all and is skipped, and the cache stays enabled either way."""
    from econarena.agents.cache import ResponseCache

    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", text="bad \ud800", model="m", tokens_in=1, tokens_out=1, latency_s=0.1)
    cache.put("k1", text="x", model="m\udfff", tokens_in=1, tokens_out=1, latency_s=0.1)
    cache.put("k2", text="fine", model="m", tokens_in=1, tokens_out=1, latency_s=0.1)
    assert cache.get("k")["text"] == "bad \ud800" and cache.get("k1") is None
    assert cache.get("k2")["text"] == "fine"


def test_a_run_without_one_valid_reply_scores_0_under_the_game_rule(server: Any, tmp_path: Path) -> None:
    """Every reply cut short (no JSON) in every seat: Guess 2/3 has no number to score. Before:
    the run was unscored, so GAMA-Bench and the overall had no score: a complete bench that could never be
    ranked (a model that never follows the rules escaped the leaderboard). Now such a run scores 0."""
    from econarena.analysis import benchmark as B
    from econarena.formats.benchsuite import load_suite

    server.reset()
    server.reply = lambda protocol, body: '{"chosen_num'
    out = tmp_path / "o"
    assert main(bench_args(server, small_suite(tmp_path), out, "--no-baselines")) == 0
    result = json.loads((out / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert [g["score"] for g in result["games"]] == [0.0, 0.0, 0.0]
    assert result["complete"] and result["overall"]["score"] == 0.0
    guess = next(g for g in load_suite(small_suite(tmp_path)).games if g.id == "guess")
    rec = {"labels": ["m", "m"], "first_valid": [True, True], "score": 200.0}
    assert B.run_score(guess, rec, 0) == 100.0  # clipped to the scale
    assert B.run_score(guess, {**rec, "score": None}, 0) is None  # no rule broken: nothing to score
    assert B.run_score(guess, {**rec, "score": None, "first_valid": [False, True]}, 0) == 0.0


def test_a_baseline_busy_in_another_bench_does_not_cost_the_model_its_result(server: Any, tmp_path: Path,
                                                                             capsys) -> None:
    """Two benches into one --out at once both play the baselines: the one that finds a baseline's game locked
    ended in exit 2 without bench.json or scorecard, its own games played. Now it scores its model, leaves
    that baseline's row to the other process and says so; the next bench into the --out adds the row."""
    from econarena.formats.rundir import RunDirectory

    server.reset()
    server.reply = scripted_reply
    out, suite = tmp_path / "o", small_suite(tmp_path)
    busy = RunDirectory(out / "_baselines" / "quick" / "random" / "guess")
    busy.path.mkdir(parents=True)
    busy.lock()  # held as another process playing it holds it
    try:
        assert main(bench_args(server, suite, out)) == 0
    finally:
        busy.unlock()
    assert "_baselines/quick/random is being played by another process" in capsys.readouterr().err
    assert json.loads((out / "fake" / "bench.json").read_text(encoding="utf-8"))["complete"]
    page = (out / "fake" / "scorecard.html").read_text(encoding="utf-8")
    assert "rational (baseline)" in page and "random (baseline)" not in page
    assert main(bench_args(server, suite, out)) == 0
    assert "random (baseline)" in (out / "fake" / "scorecard.html").read_text(encoding="utf-8")


def test_the_advice_for_an_unreadable_settings_file_leads_somewhere(tmp_path: Path, capsys) -> None:
    """bench-settings.json truncated: the message says to delete it; deleting it was then refused as 'not
    empty and holds no bench', so only deleting the whole directory (paid runs included) went on. Now the
    bench's own files are allowed beside the games (each checked against its config). A refused directory
    keeps its settings (they were overwritten before the games were checked)."""
    suite = str(small_suite(tmp_path))
    args = ["bench", "random", "--suite", suite, "--out", str(tmp_path / "o"), "--quiet", "--no-baselines"]
    assert main(args) == 0
    held = tmp_path / "o" / "random" / "bench-settings.json"
    held.write_text(held.read_text(encoding="utf-8")[:100], encoding="utf-8")
    assert main(args) == 2
    assert "unreadable" in capsys.readouterr().err
    held.unlink()
    assert main(args) == 0 and held.is_file()
    other = ["bench", "random", "--suite", suite, "--out", str(tmp_path / "x"), "--quiet", "--no-baselines"]
    assert main([*other, "--label", "other"]) == 0
    held.unlink()
    (tmp_path / "o" / "random" / "guess").rename(tmp_path / "keep")
    (tmp_path / "x" / "other" / "guess").rename(tmp_path / "o" / "random" / "guess")  # another model's game
    assert main(args) == 2
    assert "holds a different experiment (players[0].label: 'other' != 'random')" in capsys.readouterr().err
    assert not held.exists()  # a refused invocation writes no settings
    assert main([*args[:2], "--label", "", *args[2:]]) == 2
    assert "--label '': expected a name" in capsys.readouterr().err


def test_a_leaderboard_file_that_cannot_be_written_is_named_as_given(tmp_path: Path, capsys) -> None:
    path = _rational_result(tmp_path)
    assert main(["leaderboard", str(path), "--csv", str(tmp_path / "nowhere" / "b.csv")]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {tmp_path / 'nowhere' / 'b.csv'}: No such file" in err and ".tmp" not in err


@pytest.mark.parametrize("text, message", [
    ('agent = "random"\nlabel = 5\n', "m.toml: label: expected a non-empty string, got 5"),
    ('agent = "random"\nlabel = ""\n', "m.toml: label: expected a non-empty string, got ''"),
    ('["a"]\nagent = "random"\nlabel = ["x"]\n', "m.toml [a]: label: expected a non-empty string, got ['x']"),
    ('["a/b"]\nagent = "random"\n["a_b"]\nagent = "random"\n', "share a label or its directory ('a/b', 'a_b'"),
])
def test_labels_in_a_players_file_are_checked(tmp_path: Path, capsys, text: str, message: str) -> None:
    """A number or a list as a label stopped the bench with a TypeError; an empty one fell back to the
    default label in silence; two labels of one directory were refused without saying which."""
    (tmp_path / "m.toml").write_text(text, encoding="utf-8")
    assert main(["bench", str(tmp_path / "m.toml"), "--suite", str(small_suite(tmp_path)), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_shard_stopped_on_api_errors_is_not_played(server: Any, tmp_path: Path, capsys) -> None:
    """`bench --shard K/N` whose runs stopped on API errors said 'shard K/N played; merge ...' with exit 0, so a
    Slurm merge job queued with afterok started on it (and was refused). Now exit 3; the rerun finishes it."""
    from fakeservers import status

    server.reset()
    server.reply = scripted_reply
    server.script(*(status(400) for _ in range(2)))
    model = tmp_path / "model.toml"
    model.write_text(f'agent = "openai"\nmodel = "fake-model"\nbase_url = "{server.url}/v1"\nlabel = "fake"\n'
                     'max_retries = 0\n', encoding="utf-8")
    args = ["bench", str(model), "--suite", str(small_suite(tmp_path)), "--out", str(tmp_path / "o"), "--quiet",
            "--shard", "1/2", "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 3
    assert "shard 1/2 incomplete (fake " in capsys.readouterr().err
    assert main(args) == 0
    assert "shard 1/2 played" in capsys.readouterr().out


def test_a_torn_or_edited_invocation_log_does_not_stop_the_bench(tmp_path: Path) -> None:
    """bench-log.jsonl with a line cut by a kill: the next line was glued onto it (and lost); a hand-edited
    line (a list, a string wall_s) stopped the bench with a traceback. Now each counts what it can."""
    args = ["bench", "random", "--suite", str(small_suite(tmp_path)), "--out", str(tmp_path / "o"), "--quiet",
            "--no-baselines"]
    assert main(args) == 0
    log = tmp_path / "o" / "random" / "bench-log.jsonl"
    with log.open("a", encoding="utf-8") as f:
        f.write('[1, 2]\n{"wall_s": "abc"}\n{"wall_s": NaN}\n{"wall_s": 1.5, "sto')
    assert main(args) == 0
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[-2] == '{"wall_s": 1.5, "sto' and json.loads(lines[-1])["wall_s"] >= 0
    walls = [json.loads(x)["wall_s"] for x in (lines[0], lines[-1])]
    result = json.loads((tmp_path / "o" / "random" / "bench.json").read_text(encoding="utf-8"))
    assert result["wall_s"] == pytest.approx(sum(walls), abs=2e-3)


def test_two_processes_writing_one_file_never_collide(tmp_path: Path) -> None:
    """Two benches into one --out write the baselines' files at once. With one shared <name>.tmp, 5% of the
    writes of two processes failed (FileNotFoundError: the other had renamed the .tmp) and a reader could
    see the other's half-written file renamed into place."""
    import subprocess
    import sys

    target = tmp_path / "bench.json"
    code = ("import sys; from pathlib import Path; from econarena.formats.rundir import write_atomic\n"
            "for i in range(400): write_atomic(Path(sys.argv[1]), sys.argv[2] * 5000)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(target), c]) for c in "ab"]
    assert [p.wait(60) for p in procs] == [0, 0]
    assert target.read_text(encoding="utf-8") in ("a" * 5000, "b" * 5000)
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]


class _NodeLost:
    """An engine that plays nothing and says why, as the Ray engine does when no node is left to play on."""

    WHY = "Ray node 5bd6 (host, 10.0.0.7:36795) was lost, and no node left could run the session workers for 60 s"

    def play(self, host: Any, work: Any, resume: Any) -> Any:
        async def nothing() -> None:
            host.stopped.append(self.WHY)
        return nothing()

    def close(self) -> None:
        pass


def test_sessions_an_engine_left_unplayed_are_not_called_api_errors(tmp_path: Path, capsys, monkeypatch) -> None:
    """A bench on Ray whose node was lost said 'incomplete (some runs stopped on API errors)' (the message was
    fixed for run and suite, not for bench): now the engine's reason is said, and bench.json says
    "stopped": "engine"."""
    import econarena.cli.bench as cb

    monkeypatch.setattr(cb, "ray_engine", lambda args: _NodeLost())
    assert main(["bench", "random", "--suite", str(small_suite(tmp_path)), "--out", str(tmp_path / "o"),
                 "--quiet", "--no-baselines", "--label", "m"]) == 3
    err = capsys.readouterr().err
    assert f"m, guess: {_NodeLost.WHY}" in err and "API errors" not in err
    assert "the Ray cluster could not play every session" in err
    result = json.loads((tmp_path / "o" / "m" / "bench.json").read_text(encoding="utf-8"))
    assert not result["complete"] and result["stopped"] == "engine"


def test_a_price_beyond_any_price_is_refused(tmp_path: Path, capsys) -> None:
    """input_per_mtok = 1e308 passed the check (finite), the cost overflowed to inf, bench.json held
    "cost_usd": Infinity (not JSON for most readers) and the leaderboard refused the bench's own file."""
    prices = tmp_path / "p.toml"
    prices.write_text('["fake-model"]\ninput_per_mtok = 1e308\noutput_per_mtok = 1\n', encoding="utf-8")
    assert main(["bench", "random", "--suite", str(small_suite(tmp_path)), "--prices", str(prices),
                 "--dry-run"]) == 2
    assert "input_per_mtok: 1e+308 USD per million tokens is beyond any price" in capsys.readouterr().err


def test_validate_checks_what_only_an_llm_reads(tmp_path: Path, capsys) -> None:
    """The suite's [llm] and a game's protocol apply only to an LLM in the model's seat; validate built the
    games with a baseline there, so max_tokens = "x" or temperature = nan said ok, and every LLM bench failed."""
    for change, said in ((("max_tokens = 64", 'max_tokens = "x"'), "max_tokens': Input should be a valid integer"),
                         (("protocol = { temperature = 1.0 }", "protocol = { temperature = nan }"),
                          "temperature': Input should be a finite number")):
        assert main(["validate", str(small_suite(tmp_path, SMALL.replace(*change)))]) == 2
        assert said in capsys.readouterr().err
