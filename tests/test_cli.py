"""``econarena`` end to end on TOML files: run, validate, list, summary, options and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from econarena.cli import main

EXPERIMENT = """\
[experiment]
name = "cli-bc"
game = "beauty_contest"
sessions = 3
runs = 2
seed = 5
history = "actions"

[game]
upper_bound = { uniform = [10, 100] }

[[players]]
agent = "scripted"
label = "S"
responses = ['{"answer": 0}', 'no answer']

[[players]]
agent = "random"
count = 2

[[players]]
agent = "level_k"
label = "L1"
"""

BAD_FILES = {
    "syntax.toml": ('[experiment]\nname = "x\n', r"syntax.toml: TOML syntax error: .*line 2, column"),
    "key.toml": (EXPERIMENT.replace("seed = 5", "sead = 5"), "unknown key 'experiment.sead'"),
    "game.toml": (EXPERIMENT.replace('"beauty_contest"', '"poker"'), "unknown game 'poker'"),
    "agent.toml": (EXPERIMENT.replace('"level_k"', '"gpt9"'), "unknown agent 'gpt9'"),
    "dist.toml": (EXPERIMENT.replace("uniform = [10, 100]", "gamma = [1, 2]"), "unknown distribution 'gamma'"),
    "type.toml": (EXPERIMENT.replace("runs = 2", 'runs = "two"'), "'experiment.runs'"),
    "shape.toml": ("experiment = 3\n", r"shape.toml: missing table \[experiment\]"),
    "list.toml": (EXPERIMENT.replace("beauty_contest", "second_price_auction").replace(
        "upper_bound = { uniform = [10, 100] }", "private_value = [1, 2]"), "list has 2 entries"),
}


@pytest.fixture
def toml(tmp_path: Path) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(EXPERIMENT)
    return path


def test_run_writes_the_run_directory(toml: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "cli-bc: complete, 6/6 runs, 24 decisions" in stdout
    assert "payoff" in stdout and "rule breaks %" in stdout  # the table is printed
    assert {p.name for p in out.iterdir()} >= {"config.toml", "manifest.json", "decisions.jsonl", "runs.jsonl",
                                               "summary.json", "summary.csv"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["seed"] == 5 and manifest["schema_version"] >= 1
    assert manifest["started_at"] and manifest["ended_at"]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["labels"]) == {"S", "random", "L1"}
    assert summary["labels"]["S"]["rule_break_rate_pct"] == 50.0  # every second reply is garbage
    assert (out / "summary.csv").read_text().startswith("label,")
    assert "[experiment]" in (out / "config.toml").read_text()


def test_run_default_directory_and_quiet(toml: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(toml), "--quiet"]) == 0
    stdout = capsys.readouterr().out
    assert "payoff" not in stdout  # no table with --quiet, just the outcome line
    assert stdout.strip().endswith(str(Path("runs") / "cli-bc"))
    assert (tmp_path / "runs" / "cli-bc" / "runs.jsonl").exists()


def test_seed_override(toml: Path, tmp_path: Path, arena) -> None:
    for name, seed in (("a", []), ("b", ["--seed", "5"]), ("c", ["--seed", "6"])):
        assert main(["run", str(toml), "--out", str(tmp_path / name), "--quiet", *seed]) == 0
    a, b, c = (arena.sorted_runs(tmp_path / n) for n in "abc")
    assert a == b
    assert [r["params"] for r in a] != [r["params"] for r in c]
    assert json.loads((tmp_path / "c" / "manifest.json").read_text())["seed"] == 6
    assert "seed = 6" in (tmp_path / "c" / "config.toml").read_text()


def test_run_several_files(tmp_path: Path, toml: Path, monkeypatch, capsys) -> None:
    other = tmp_path / "other.toml"
    other.write_text(EXPERIMENT.replace('name = "cli-bc"', 'name = "cli-two"'))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(toml), str(other), "--quiet"]) == 0
    assert (tmp_path / "runs" / "cli-bc" / "summary.json").exists()
    assert (tmp_path / "runs" / "cli-two" / "summary.json").exists()
    capsys.readouterr()
    assert main(["run", str(toml), str(other), "--out", str(tmp_path / "x")]) == 2
    assert "--out names one directory" in capsys.readouterr().err


@pytest.mark.parametrize("shard", [[], ["--shard", "1/2"]])
def test_two_files_of_one_name_are_refused_not_appended_into_one_directory(
        tmp_path: Path, toml: Path, monkeypatch, capsys, shard: list[str]) -> None:
    """`run a.toml b.toml` (or a.toml twice) with one [experiment] name appended the second experiment's
    runs to the first's directory and overwrote its config.toml: a directory of two experiments."""
    other = tmp_path / "other.toml"
    other.write_text(EXPERIMENT.replace("seed = 5", "seed = 6"))
    monkeypatch.chdir(tmp_path)
    where = Path("runs") / ("cli-bc-shard-1-of-2" if shard else "cli-bc")
    for files in ([toml, other], [toml, toml]):
        assert main(["run", *map(str, files), "--quiet", *shard]) == 2
        assert f"both write to {where}" in capsys.readouterr().err
        assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("runs.jsonl"))


def test_validate(toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(toml)]) == 0
    assert "ok (beauty_contest, melee, 1 table(s) x 3 session(s) x 2 run(s))" in capsys.readouterr().out


def test_validate_and_run_report_every_bad_file_without_traceback(tmp_path: Path, arena) -> None:
    paths = []
    for name, (text, _) in BAD_FILES.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    for command in ("validate", "run"):
        proc = arena.cli(command, *paths, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""
        for name, (_, pattern) in BAD_FILES.items():
            lines = [ln for ln in proc.stderr.splitlines() if name in ln]
            assert lines, f"{name} not named in stderr"
            assert any(re.search(pattern, ln) for ln in lines), pattern
        assert proc.stderr.startswith("econarena: error: ")
    assert not (tmp_path / "runs").exists()  # nothing started


def test_problems_found_after_loading_name_their_file(tmp_path: Path, arena) -> None:
    """A key, a dtype or a structured mode checked after loading is reported with its file, as a syntax error
    is: with several files on the command line, `players[0]` alone did not say which."""
    good = tmp_path / "good.toml"
    good.write_text('[experiment]\ngame = "beauty_contest"\n[[players]]\nagent = "rational"\ncount = 3\n')
    bad = tmp_path / "bad.toml"
    bad.write_text('[experiment]\ngame = "beauty_contest"\n[[players]]\nagent = "hf"\ndtype = "float13"\n'
                   '[[players]]\nagent = "openai"\nmodel = "m"\n')
    for command in ("validate", "validate --check-keys", "run"):
        proc = arena.cli(*command.split(), str(good), str(bad), cwd=tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert lines and all(ln.startswith(f"econarena: error: {bad}: players[") or ln.startswith(f"{bad}: players[")
                             for ln in lines), proc.stderr
        assert "dtype = 'float13'" in proc.stderr
        assert ("OPENAI_API_KEY" in proc.stderr) == (command != "validate"), command


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("beauty_contest", "second_price_auction", "english_auction", "rational", "random", "scripted",
                 "level_k"):
        line = next(ln for ln in out.splitlines() if ln.split() and ln.split()[0] == name)
        assert len(line.split()) > 2  # one line of description each


def test_summary(toml: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["summary", str(out)]) == 0
    table = capsys.readouterr().out
    assert "label" in table and "win rate" in table and "complete runs: 6" in table
    lines = table.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("label "))  # the findings in words come first
    assert lines[0] == f"== {out}" and head > 1
    assert {ln.split()[0] for ln in lines[head + 2:head + 5]} == {"S", "random", "L1"}
    assert main(["summary", "--json", str(out)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["labels"]["L1"]["player_runs"] == 6
    assert main(["summary", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert main(["summary", str(tmp_path / "typo")]) == 2
    assert f"{tmp_path / 'typo'}: no such file or directory" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["run"], ["bogus"], ["run", "x.toml", "--concurrency", "many"], []])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2


def test_concurrency_must_be_positive(toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(toml), "--concurrency", "0"]) == 2
    assert "--concurrency must be >= 1" in capsys.readouterr().err


def test_dry_run_plays_nothing(toml: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(toml), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "6 decisions (no API calls)" in out  # S: 3 sessions x 2 runs x 1 decision
    assert not (tmp_path / "runs").exists()


def test_dry_run_with_resume_counts_only_what_is_left(toml: Path, tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out_dir), "--quiet"]) == 0
    lines = (out_dir / "runs.jsonl").read_text().splitlines(keepends=True)
    (out_dir / "runs.jsonl").write_text("".join(lines[:4]))  # 2 of the 6 runs are still to play
    capsys.readouterr()
    assert main(["run", str(toml), "--out", str(out_dir), "--resume", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "4 run(s) already complete" in out
    assert "2 decisions (no API calls)" in out and "4 decisions (no API calls)" in out  # S; random (2 seats)


def test_console_script_end_to_end(toml: Path, tmp_path: Path, arena) -> None:
    proc = arena.cli("run", str(toml), "--out", str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "cli-bc: complete, 6/6 runs" in proc.stdout
    proc = arena.cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("econarena ")


def test_shipped_configs_validate(arena, capsys: pytest.CaptureFixture[str]) -> None:
    configs = sorted(str(p) for p in (arena.REPO / "configs").rglob("*.toml") if p.name != "models.toml")
    assert configs
    assert main(["validate", *configs]) == 0, capsys.readouterr().err


def test_unusable_cache_is_a_clear_error_before_the_run_directory(tmp_path: Path, capsys) -> None:
    # An LLM player whose response cache cannot be opened used to print a traceback and leave
    # manifest.json stuck at "running" (so the next plain run refused the directory).
    path = tmp_path / "llm.toml"
    path.write_text(EXPERIMENT.replace('agent = "level_k"\nlabel = "L1"',
                                       'agent = "openai"\nlabel = "L1"\nmodel = "m"\n'
                                       'base_url = "http://127.0.0.1:9/v1"'))
    (tmp_path / "afile").write_text("")
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--cache-dir", str(tmp_path / "afile" / "x")]) == 2
    assert "cannot open the response cache" in capsys.readouterr().err
    assert not (out / "manifest.json").exists()


def _long_query(stop) -> None:
    """A real DuckDB query of a few seconds, stopped ``stop`` (a callable on the connection) 0.2 s in."""
    import threading

    import duckdb

    con = duckdb.connect()
    timer = threading.Timer(0.2, stop, (con,))
    timer.start()
    try:
        con.execute("SELECT sum(a * b) FROM range(400000000) t(a), range(2) u(b)").fetchall()
    finally:
        timer.cancel()
        con.close()


def _sigint(con) -> None:
    import os
    import signal

    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("stop", [_sigint, lambda con: con.interrupt()], ids=["sigint", "interrupt"])
def test_ctrl_c_inside_a_duckdb_query_ends_the_command_with_130(stop, monkeypatch, capsys):
    """DuckDB catches the KeyboardInterrupt of a SIGINT during a query and raises RuntimeError('Query
    interrupted'): the command ends as interrupted (130, one line), not with a traceback and 1."""
    import signal

    from econarena.analysis.columnar import engine_interrupted
    from econarena.cli import experiments

    old = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever pytest inherited
    try:
        with pytest.raises(Exception) as caught:
            _long_query(stop)
        assert engine_interrupted(caught.value), repr(caught.value)
        monkeypatch.setattr(experiments, "cmd_list", lambda args: _long_query(stop))
        assert main(["list"]) == 130
    finally:
        signal.signal(signal.SIGINT, old)
    assert capsys.readouterr().err.strip().endswith("interrupted")
    assert not engine_interrupted(RuntimeError("another error")) and not engine_interrupted(KeyboardInterrupt())


POOL_AFTER = """\
import sys
from econarena.cli import main
code = main(sys.argv[1:])
import pyarrow as pa
print(code, pa.default_memory_pool().backend_name)
"""


@pytest.mark.parametrize("preset", [None, "mimalloc"])
def test_the_analyses_take_arrows_buffers_from_malloc_unless_told(preset, tmp_path):
    """pyarrow's default pool (mimalloc) kept what the analysis's tables freed: the report's peak was 70-120 MB
    higher (analysis/memory.py). The analysis commands switch Arrow to malloc before its first import; a
    pool the user names in ARROW_DEFAULT_MEMORY_POOL is kept."""
    import os
    import subprocess
    import sys

    path = tmp_path / "e.toml"
    path.write_text(EXPERIMENT)
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if preset:
        env["ARROW_DEFAULT_MEMORY_POOL"] = preset
    for command, expected in ((["validate", str(path)], preset or "system"), (["list"], preset or "mimalloc")):
        r = subprocess.run([sys.executable, "-c", POOL_AFTER, *command], capture_output=True, text=True, env=env,
                           timeout=120, stdin=subprocess.DEVNULL)
        assert r.stdout.split()[-2:] == ["0", expected], (command, r.stdout[-500:], r.stderr[-2000:])


def test_the_arrow_pool_is_replaced_once_pyarrow_is_imported(monkeypatch):
    import pyarrow as pa

    from econarena.analysis.memory import system_allocator_for_arrow

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    before = pa.default_memory_pool()
    try:
        system_allocator_for_arrow()
        assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(before)
