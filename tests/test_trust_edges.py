"""Trust at the edges: files and links, secrets wherever they land, what counts as the same run,
one text rule at every door, numbers and types at the run-directory edge, results that contradict
themselves, messages. Each test uses inputs of its own and failed before its rule; docs/trust.md states
the rules."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import run_experiment

BC = {"experiment": {"name": "bc-edges", "game": "beauty_contest", "sessions": 3, "runs": 1, "seed": 5},
      "game": {}, "players": [{"agent": "rational"}, {"agent": "random", "count": 2}]}


def cli(*args: str, seconds: float = 120) -> SimpleNamespace:
    """``econarena ARGS`` in this process, failing (not hanging) when it has not ended after ``seconds``: a
    reader that blocks on a FIFO would otherwise hang the test run."""
    import contextlib
    import io

    from econarena.cli import main

    got: dict[str, Any] = {}

    def go() -> None:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                got["code"] = main(list(args))
            except BaseException as exc:  # noqa: BLE001 - reported below as what the command did
                got["exc"] = exc
        got["out"], got["err"] = out.getvalue(), err.getvalue()

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"econarena {' '.join(args)} still running after {seconds} s (blocked on a read?)"
    assert "exc" not in got, f"econarena {' '.join(args)} raised {got.get('exc')!r}\n{got.get('err')}"
    return SimpleNamespace(returncode=got["code"], stdout=got["out"], stderr=got["err"])


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("played") / "bc"
    run_experiment(BC, out)
    return out


def copy_of(played: Path, to: Path) -> Path:
    shutil.copytree(played, to)
    return to


# ---------------------------------------------------------------------------------------- files and links

@pytest.mark.parametrize("name", ["config.toml", "manifest.json", "decisions.jsonl", "runs.jsonl"])
def test_a_run_directory_file_that_is_a_device_or_a_fifo_is_refused(played: Path, tmp_path: Path,
                                                                     name: str) -> None:
    for kind in ("device", "fifo"):
        d = copy_of(played, tmp_path / kind)
        (d / name).unlink()
        if kind == "device":
            (d / name).symlink_to("/dev/zero")
        else:
            os.mkfifo(d / name)
        commands = [["summary"]] if name != "manifest.json" else []  # summary reads no manifest
        for command in [*commands, ["report", "--out", str(tmp_path / f"rep-{kind}")]]:
            r = cli(*command, str(d), seconds=60)
            assert r.returncode == 2, (command, r.stderr)
            named = str(d / name) in r.stderr and ("device" in r.stderr or "/dev" in r.stderr
                                                   or "pipe (FIFO)" in r.stderr)
            assert named or f"{d}: holds no run directory" in r.stderr or f"{d}: not a run directory" in r.stderr, \
                r.stderr
            assert "Traceback" not in r.stderr


def test_validate_and_prices_refuse_what_is_no_regular_file(played: Path, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.toml")
    for f in ("/dev/zero", str(tmp_path / "fifo.toml"), "/proc/self/environ"):
        r = cli("validate", f, seconds=30)
        assert r.returncode == 2 and f in r.stderr and "regular file" in r.stderr, r.stderr
    cfg = tmp_path / "e.toml"
    cfg.write_text('[experiment]\nname = "p"\ngame = "beauty_contest"\nsessions = 1\n[game]\n'
                   '[[players]]\nagent = "random"\ncount = 2\n', encoding="utf-8")
    r = cli("run", str(cfg), "--out", str(tmp_path / "o"), "--quiet", "--prices", "/dev/zero", seconds=30)
    assert r.returncode == 2 and "/dev/zero" in r.stderr, r.stderr


def test_a_big_config_is_refused_by_its_size_not_read(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with big.open("wb") as fh:
        fh.truncate(9 * 2**20)  # sparse: nine MiB of NULs, more than a config can be
    r = cli("validate", str(big))
    assert r.returncode == 2 and "more than the" in r.stderr and str(big) in r.stderr


def test_an_import_never_follows_a_link_out_of_its_folder(tmp_path: Path) -> None:
    from test_na_import import gift, ult, write_logs

    write_logs(tmp_path / "logs", {"u/1": ult(("A", "B"), ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok"))})
    outside = tmp_path / "elsewhere"
    write_logs(outside, {"v/2": ult(("C", "D"), ("NONE", gift(40), "x"), ("ACCEPT", "NONE", "ok"))})
    (tmp_path / "logs" / "proc").symlink_to("/proc")
    (tmp_path / "logs" / "out").symlink_to(outside)
    (tmp_path / "logs" / "u" / "2").mkdir()
    (tmp_path / "logs" / "u" / "2" / "game_state.json").symlink_to(outside / "v" / "2" / "game_state.json")
    r = cli("import", "negotiationarena", str(tmp_path / "logs"), "--out", str(tmp_path / "na"), seconds=60)
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "na" / "import_report.json").read_text(encoding="utf-8"))
    assert report["imported"] == 1 and report["refused_by_category"] == {"unreadable": 3}, report
    why = (tmp_path / "na" / "import_refused.csv").read_text(encoding="utf-8")
    assert why.count("out of the source folder") == 3 and "/proc" in why


def test_the_leaderboard_never_follows_a_link_out_of_its_folder(tmp_path: Path) -> None:
    from econarena.analysis.benchmark import find_results

    (tmp_path / "board" / "m").mkdir(parents=True)
    (tmp_path / "board" / "m" / "bench.json").write_text("{}", encoding="utf-8")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "bench.json").write_text("{}", encoding="utf-8")
    (tmp_path / "board" / "link").symlink_to(tmp_path / "other")
    assert find_results([tmp_path / "board"]) == [(tmp_path / "board" / "m" / "bench.json").resolve()]


# ----------------------------------------------------------------------------------- one text rule for names

NAMES = ["gpt\x9b31mred", "a\x1b[2Jb", "nul\x00x", "del\x7f", "sep\u2028x", "c1\x85y"]


@pytest.mark.parametrize("bad", NAMES)
def test_a_config_label_or_model_with_a_control_character_is_refused(tmp_path: Path, bad: str) -> None:
    from econarena.hosts.config import ConfigError, parse_experiment

    for player in ({"agent": "random", "label": bad}, {"agent": "openai", "model": bad}):
        doc = {"experiment": {"name": "n", "game": "beauty_contest", "sessions": 1}, "game": {},
               "players": [player, {"agent": "random"}]}
        with pytest.raises(ConfigError) as info:
            parse_experiment(doc, "t.toml")
        text = str(info.value)
        assert "no control characters" in text and bad not in text  # named by its escape, never printed raw


@pytest.mark.parametrize("bad", NAMES[:3])
def test_a_released_model_name_with_a_control_character_is_refused_as_bad_text(tmp_path: Path, bad: str) -> None:
    from test_na_import import gift, ult, write_logs

    write_logs(tmp_path / "logs", {"u/1": ult(("A", "B"), ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok")),
                                   "u/2": ult((bad, "B"), ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok"))})
    r = cli("import", "negotiationarena", str(tmp_path / "logs"), "--out", str(tmp_path / "na"))
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "na" / "import_report.json").read_text(encoding="utf-8"))
    assert report["imported"] == 1 and report["refused_by_category"] == {"bad_text": 1}, report
    assert "\x1b" not in r.stdout + r.stderr and "\x9b" not in r.stdout + r.stderr


@pytest.mark.parametrize("bad", NAMES[:2])
def test_a_hand_edited_label_with_a_control_character_stops_the_analysis(played: Path, tmp_path: Path,
                                                                         bad: str) -> None:
    d = copy_of(played, tmp_path / "d")
    runs = (d / "runs.jsonl").read_text(encoding="utf-8").replace('"random"', json.dumps(bad), 1)
    (d / "runs.jsonl").write_text(runs, encoding="utf-8")
    for command in (["summary"], ["report", "--out", str(tmp_path / "rep")]):
        r = cli(*command, str(d))
        assert r.returncode == 2 and "control character" in r.stderr and "runs.jsonl" in r.stderr, r.stderr
        assert bad not in r.stdout + r.stderr


# ------------------------------------------------------------------------------ what counts as the same run

def _players(rep: Path) -> int:
    pd = pytest.importorskip("pandas")
    return len(pd.read_parquet(rep / "players.parquet"))


def test_a_second_different_sample_of_one_config_is_counted_with_a_note(played: Path, tmp_path: Path) -> None:
    """Two runs of one config (two --no-cache runs, two machines) share their experiment and run numbers;
    the second was dropped as 'a shard beside its merge': half the data vanished from every table."""
    pytest.importorskip("duckdb")
    second = copy_of(played, tmp_path / "second")
    runs = [json.loads(x) for x in (second / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    runs[1]["payoffs"] = [100.0, 0.0, 0.0]
    runs[1]["winners"] = [0]
    (second / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    r = cli("report", str(played), str(second), "--out", str(tmp_path / "rep"), "--boot", "10", "--transcripts", "0")
    assert r.returncode == 0, r.stderr
    said = r.stdout + r.stderr
    assert "second sample" in said and "run 1/0 (melee)" in said and "'payoffs[0]' is 100.0 here, 0.0 there" in said
    assert _players(tmp_path / "rep") == 2 * 3 * 3  # both samples: 2 x 3 sessions x 3 seats


def test_a_copy_of_a_run_directory_is_still_counted_once(played: Path, tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    copy = copy_of(played, tmp_path / "copy")
    r = cli("report", str(played), str(copy), "--out", str(tmp_path / "rep"), "--boot", "10", "--transcripts", "0")
    assert r.returncode == 0 and "record for record the same" in r.stdout + r.stderr, r.stderr
    assert _players(tmp_path / "rep") == 3 * 3


@pytest.mark.parametrize("how", ["emptied", "deleted", "cut"])
def test_resume_plays_again_the_runs_whose_decisions_are_gone(tmp_path: Path, how: str) -> None:
    """A run whose decisions.jsonl was emptied or deleted was called complete on --resume (and the report
    then dropped its cost table without a word)."""
    from conftest import read_jsonl

    toml = tmp_path / "e.toml"
    toml.write_text('[experiment]\nname = "resumed"\ngame = "beauty_contest"\nsessions = 3\nseed = 2\n[game]\n'
                    '[[players]]\nagent = "random"\ncount = 3\n', encoding="utf-8")
    out = tmp_path / "o"
    assert cli("run", str(toml), "--out", str(out), "--quiet").returncode == 0
    whole = (out / "decisions.jsonl").read_text(encoding="utf-8")
    if how == "emptied":
        (out / "decisions.jsonl").write_text("", encoding="utf-8")
    elif how == "deleted":
        (out / "decisions.jsonl").unlink()
    else:  # the last run's decisions cut off
        (out / "decisions.jsonl").write_text("".join(whole.splitlines(True)[:-2]), encoding="utf-8")
    r = cli("run", str(toml), "--out", str(out), "--quiet", "--resume")
    assert r.returncode == 0, r.stderr
    assert "lack their decisions" in r.stderr and "played again" in r.stderr
    again = read_jsonl(out / "decisions.jsonl")
    assert len(again) == 9 and sorted(map(json.dumps, again)) == sorted(
        json.dumps(json.loads(x)) for x in whole.splitlines())


def test_the_report_says_when_decisions_are_missing(played: Path, tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    d = copy_of(played, tmp_path / "d")
    (d / "decisions.jsonl").write_text("", encoding="utf-8")
    r = cli("report", str(d), "--out", str(tmp_path / "rep"), "--boot", "10", "--transcripts", "0")
    assert r.returncode == 0, r.stderr
    assert "holds 0 of the 9 decisions its complete runs record" in r.stdout + r.stderr


def test_merge_refuses_two_versions_and_an_out_inside_a_shard(tmp_path: Path) -> None:
    from test_analysis_scale import BC as SHARDED
    from test_analysis_scale import _shard

    shards = [_shard(SHARDED, tmp_path / f"s{k}", k, 2) for k in (1, 2)]
    inner = shards[0] / "merged"
    r = cli("merge", *map(str, shards), "--out", str(inner))
    assert r.returncode == 2 and "lies inside the shard" in r.stderr, r.stderr
    assert not inner.exists()  # refused before anything is created in the shard
    m = json.loads((shards[1] / "manifest.json").read_text(encoding="utf-8"))
    m["econarena_version"] = "0.0.9"
    (shards[1] / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    r = cli("merge", *map(str, shards), "--out", str(tmp_path / "all"))
    assert r.returncode == 2 and "played by econarena 0.0.9" in r.stderr and "only shards played by one version" \
        in r.stderr, r.stderr


def test_a_second_import_into_a_held_out_is_refused(tmp_path: Path) -> None:
    import fcntl

    from test_na_import import gift, ult, write_logs

    write_logs(tmp_path / "logs", {"u/1": ult(("A", "B"), ("NONE", gift(30), "x"), ("ACCEPT", "NONE", "ok"))})
    out = tmp_path / "na"
    out.mkdir()
    with (out / ".import.lock").open("a+") as fh:  # an import in progress holds it
        fh.write("import by PID 4242\n")
        fh.flush()
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        r = cli("import", "negotiationarena", str(tmp_path / "logs"), "--out", str(out))
        assert r.returncode == 2 and "being written by another import (import by PID 4242)" in r.stderr, r.stderr
        assert sorted(p.name for p in out.iterdir()) == [".import.lock"]
    assert cli("import", "negotiationarena", str(tmp_path / "logs"), "--out", str(out)).returncode == 0


# ------------------------------------------------------------------------------------ secrets and messages

KEY = "sk-test-Z9y8X7w6V5u4"


def _exp(tmp_path: Path, player: str, name: str = "e.toml", prefix: str = "") -> Path:
    f = tmp_path / name
    f.write_text(prefix + '[experiment]\nname = "k"\ngame = "beauty_contest"\nsessions = 1\n[game]\n'
                 f'[[players]]\n{player}\n[[players]]\nagent = "random"\n', encoding="utf-8")
    return f


def test_api_key_env_must_be_a_variable_name_and_is_never_echoed(tmp_path: Path) -> None:
    f = _exp(tmp_path, f'agent = "openai"\nmodel = "m"\napi_key_env = "{KEY}"')
    r = cli("validate", str(f))
    assert r.returncode == 2 and "api_key_env': expected the name of an environment variable" in r.stderr
    assert KEY not in r.stdout + r.stderr and KEY[:10] not in r.stdout + r.stderr
    f = _exp(tmp_path, 'agent = "openai"\nmodel = "m"\napi_key_env = 12', "n.toml")
    r = cli("validate", str(f))
    assert r.returncode == 2 and "api_key_env" in r.stderr and "12" not in r.stderr.split("api_key_env")[1]


def test_a_model_name_that_is_the_key_is_refused_unshown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for player in (f'agent = "openai"\nmodel = "{KEY}"', f'agent = "openai"\nmodel = "m"\nlabel = "x-{KEY}"'):
        r = cli("validate", str(_exp(tmp_path, player)))
        assert r.returncode == 2 and "holds the value of the player's API key" in r.stderr, r.stderr
        assert KEY not in r.stdout + r.stderr


def test_a_key_in_a_model_argument_never_reaches_bench_json(monkeypatch: pytest.MonkeyPatch) -> None:
    from econarena.hosts.bench import model_specs, shown_model

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    typed = f"llama@https://proxy.example/{KEY}/v1"
    assert shown_model(typed) == "llama@https://proxy.example/***/v1"
    assert KEY not in model_specs(typed)[0].source
    assert shown_model(f"openai:{KEY}") == "openai:***"
    monkeypatch.setenv("MY_PROXY", "pk-proxy-0123456789")
    assert shown_model("m@https://h/pk-proxy-0123456789/") == "m@https://h/pk-proxy-0123456789/"  # not a key yet
    from econarena.agents.keys import mask_keys
    assert mask_keys("m@https://h/pk-proxy-0123456789/", "MY_PROXY") == "m@https://h/***/"


@pytest.mark.parametrize("url", ["http://h.example/v1\r\n", "http://h.example/v1\n", "http://h.example/\x85v1",
                                 "http://h.example/v 1"])
def test_a_base_url_with_a_line_break_or_control_is_refused(tmp_path: Path, url: str) -> None:
    f = _exp(tmp_path, f'agent = "openai"\nmodel = "m"\nbase_url = {json.dumps(url)}')
    r = cli("validate", str(f))
    assert r.returncode == 2 and "holds a space or a control character" in r.stderr, r.stderr
    assert "h.example" not in r.stderr


def test_a_byte_order_mark_is_explained(tmp_path: Path) -> None:
    f = _exp(tmp_path, 'agent = "random"', prefix="\ufeff")
    r = cli("validate", str(f))
    assert r.returncode == 2 and "byte order mark" in r.stderr and "save it as plain UTF-8" in r.stderr


def test_an_error_in_a_list_of_strings_names_the_value_not_the_library(tmp_path: Path) -> None:
    f = _exp(tmp_path, 'agent = "openai"\nmodel = "m"\nbase_url = ["http://a.example/v1", 3]', "b.toml")
    r = cli("validate", str(f))
    assert r.returncode == 2 and "list[str]" not in r.stderr and "a.example" not in r.stderr, r.stderr
    assert "'players[0].base_url': expected a string or a list of strings; entry 2: " in r.stderr, r.stderr


# ------------------------------------------------------------------ numbers and types at the run-directory edge

def _edit_runs(d: Path, edit: Any) -> None:
    runs = [json.loads(x) for x in (d / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    for r in runs:
        edit(r)
    (d / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")


@pytest.mark.parametrize("edit,said", [
    (lambda r: r["payoffs"].__setitem__(0, 1e308), "'payoffs[0]' is 1e+308, beyond the 1e+100"),
    (lambda r: r["payoffs"].__setitem__(1, -9.9e200), "'payoffs[1]' is -9.9e+200"),
    (lambda r: r.__setitem__("score", 2e101), "'score' is 2e+101"),
    (lambda r: r["payoffs"].__setitem__(2, 10**101 + 7), "'payoffs[2]' is 1000000000"),
    (lambda r: r.__setitem__("metrics", {"efficiency": "NaN"}), "'metrics.efficiency' is a number written as text"),
    (lambda r: r.__setitem__("metrics", {"gain": [1.0, " 0.5"]}), "'metrics.gain[1]' is a number written as text"),
    (lambda r: r.__setitem__("metrics", {"big": 1e300}), "'metrics.big' is 1e+300"),
])
def test_numbers_no_game_writes_are_refused_with_file_line_and_key(played: Path, tmp_path: Path, edit: Any,
                                                                   said: str) -> None:
    d = copy_of(played, tmp_path / "d")
    _edit_runs(d, edit)
    for command in (["summary"], ["report", "--out", str(tmp_path / "rep"), "--boot", "10"]):
        r = cli(*command, str(d))
        assert r.returncode == 2 and "runs.jsonl: line 1: " in r.stderr and said in r.stderr, r.stderr
    assert not (tmp_path / "rep" / "metrics.csv").exists()


def test_a_word_as_a_metric_is_still_read(played: Path, tmp_path: Path) -> None:
    d = copy_of(played, tmp_path / "d")
    _edit_runs(d, lambda r: r.__setitem__("metrics", {"ended": "accept", "n": 1e14}))
    assert cli("summary", str(d)).returncode == 0


def test_huge_token_counts_in_a_decision_are_refused(played: Path, tmp_path: Path) -> None:
    d = copy_of(played, tmp_path / "d")
    lines = (d / "decisions.jsonl").read_text(encoding="utf-8").splitlines(True)
    rec = json.loads(lines[1])
    rec["tokens_in"] = 1e308
    lines[1] = json.dumps(rec) + "\n"
    (d / "decisions.jsonl").write_text("".join(lines), encoding="utf-8")
    r = cli("summary", str(d))
    assert r.returncode == 2 and "decisions.jsonl: line 2: " in r.stderr and "'tokens_in' is 1e+308" in r.stderr


@pytest.mark.parametrize("old,new,said", [
    ('game = "beauty_contest"', "game = 5", "'experiment.game' must be a string (got 5)"),
    ('name = "bc-edges"', 'name = ["x"]', "'experiment.name' must be a string"),
    ('prompt = "default"', "prompt = 7", "'experiment.prompt' must be a string"),
    ("sessions = 3", 'sessions = "3"', "'experiment.sessions' must be an integer >= 0"),
])
def test_a_hand_edited_config_of_the_wrong_type_is_refused_not_a_traceback(played: Path, tmp_path: Path, old: str,
                                                                           new: str, said: str) -> None:
    d = copy_of(played, tmp_path / "d")
    text = (d / "config.toml").read_text(encoding="utf-8")
    assert old in text
    (d / "config.toml").write_text(text.replace(old, new, 1), encoding="utf-8")
    for command in (["report", str(d), "--out", str(tmp_path / "rep"), "--boot", "10"],
                    ["compare", str(d), str(played)]):
        r = cli(*command)
        assert r.returncode == 2 and f"{d / 'config.toml'}: {said}" in r.stderr, r.stderr


# ------------------------------------------------------------------------- results that contradict themselves

@pytest.fixture(scope="module")
def bench_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A real bench.json of the small test suite (rational plays it), and the suite read back."""
    from test_bench import small_suite

    from econarena.cli import main
    from econarena.formats.benchsuite import load_suite

    tmp = tmp_path_factory.mktemp("bench")
    suite = small_suite(tmp)
    assert main(["bench", "rational", "--suite", str(suite), "--out", str(tmp / "r"), "--quiet",
                 "--no-baselines"]) == 0
    path = tmp / "r" / "rational" / "bench.json"
    return path, {"suite": load_suite(suite), "data": json.loads(path.read_text(encoding="utf-8"))}


def _family_game(data: dict[str, Any]) -> tuple[str, int]:
    i = next(i for i, g in enumerate(data["games"]) if g["per_session"])
    return data["games"][i]["family"], i


@pytest.mark.parametrize("edit,said", [
    (lambda d: d["overall"].update(score=99.0, low=0.0, high=100.0), "overall.score: 99.0 in the file, 100.0 from"),
    (lambda d: d["subscores"][_family_game(d)[0]].update(score=99.0, low=0.0, high=100.0),
     ".score: 99.0 in the file, 100.0 from its own games' scores"),
    (lambda d: d.update(stopped="budget"), "complete: true, but stopped: 'budget'"),
    (lambda d: d["overall"].update(low=80.0, high=20.0, score=50.0), "does not hold its score 50.0"),
    (lambda d: d["games"][_family_game(d)[1]].update(score=1e6), "is not a score from 0 to 100"),
    (lambda d: d["games"].append(dict(d["games"][0])), "the game is listed twice"),
    (lambda d: d["games"].append({**d["games"][0], "id": "invented"}), "'invented' is no game of suite"),
    (lambda d: d["games"].pop(), "is missing"),
    (lambda d: d["games"][_family_game(d)[1]]["per_session"].__setitem__(0, 0.0),
     "is not the mean of its sessions' scores"),
])
def test_a_bench_json_that_contradicts_itself_is_refused(bench_file: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch, edit: Any, said: str) -> None:
    from econarena.analysis import benchcheck

    source, held = bench_file
    suite = held["suite"]
    monkeypatch.setattr(benchcheck, "known_suites", lambda: {suite.digest: suite})
    data = json.loads(json.dumps(held["data"]))
    if said.startswith("complete: true") or "is missing" in said or "listed twice" in said or "invented" in said:
        assert data["complete"] is True and data["stopped"] is None
    edit(data)
    path = tmp_path / "m" / "bench.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data), encoding="utf-8")
    r = cli("leaderboard", str(path))
    assert r.returncode == 2 and f"{path}: contradicts itself" in r.stderr and said in r.stderr, r.stderr
    assert cli("leaderboard", str(source.parent)).returncode == 0  # the file as written is ranked


def test_a_deeply_nested_bench_json_is_refused_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text('{"format": "econarena-bench/1", "model": ' + "[" * 100000 + "]" * 100000 + "}",
                    encoding="utf-8")
    r = cli("leaderboard", str(path))
    assert r.returncode == 2 and str(path) in r.stderr and "Traceback" not in r.stderr
