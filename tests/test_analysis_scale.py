"""Analysis that streams and reads what it is given honestly: a run met twice counts
once, a lone shard says it is part of an experiment, NaN and Infinity are refused with the file, line and
key, the report's page does not grow with the number of games, and the store gives the frames ``load``
always gave. Small experiments of baselines: seconds."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import run_experiment

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")

def cli(*args: str) -> SimpleNamespace:
    """``econarena ARGS`` in this process (the interpreter and pandas already loaded: a fraction of a second
    instead of two), with its exit code and what it printed."""
    import contextlib
    import io

    from econarena.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


@pytest.fixture(autouse=True)
def _no_drawing(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_analysis_golden import _no_drawing as skip

    from econarena.analysis import figures

    monkeypatch.setattr(figures, "_save", skip)


BC = {"experiment": {"name": "bc-shards", "game": "beauty_contest", "sessions": 6, "runs": 2, "seed": 3},
      "game": {}, "players": [{"agent": "rational"}, {"agent": "random", "count": 2}]}


def _shard(doc: dict, out: Path, k: int, n: int) -> Path:
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    exp = parse_experiment(doc, "test.toml")
    asyncio.run(Host(exp, out, HostOptions(concurrency=2, quiet=True, shard=(k, n))).run())
    return out


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/exp/shard-1, shard-2 and their merge all/ in one folder, as the README lays them out."""
    from econarena.hosts.shards import merge_shards

    root = tmp_path_factory.mktemp("exp")
    shards = [_shard(BC, root / f"shard-{k}", k, 2) for k in (1, 2)]
    merge_shards(shards, root / "all")
    return root


def test_a_folder_of_shards_and_their_merge_counts_every_game_once(sharded: Path, tmp_path: Path) -> None:
    r = cli("report", str(sharded), "--out", str(tmp_path / "rep"), "--boot", "20", "--transcripts", "0")
    assert r.returncode == 0, r.stderr
    assert "already read from" in r.stdout + r.stderr  # said, not silent
    metrics = pd.read_csv(tmp_path / "rep" / "metrics.csv")
    alone = cli("report", str(sharded / "all"), "--out", str(tmp_path / "one"), "--boot", "20", "--transcripts", "0")
    assert alone.returncode == 0, alone.stderr
    one = pd.read_csv(tmp_path / "one" / "metrics.csv")
    pay = metrics[metrics["metric"] == "mean_payoff"].groupby("label")["n"].sum()
    assert pay.to_dict() == one[one["metric"] == "mean_payoff"].groupby("label")["n"].sum().to_dict()
    assert pay["rational"] == 6 * 2  # 6 sessions x 2 runs, not twice that
    players = pd.read_parquet(tmp_path / "rep" / "players.parquet")
    assert len(players) == len(pd.read_parquet(tmp_path / "one" / "players.parquet")) == 6 * 2 * 3


def test_the_shards_alone_make_the_whole_and_a_lone_shard_says_it_is_a_part(sharded: Path, tmp_path: Path) -> None:
    both = cli("report", str(sharded / "shard-1"), str(sharded / "shard-2"), "--out", str(tmp_path / "b"),
               "--boot", "20", "--transcripts", "0")
    assert both.returncode == 0 and "shard 1 of 2" not in both.stdout + both.stderr
    lone = cli("report", str(sharded / "shard-2"), "--out", str(tmp_path / "l"), "--boot", "20", "--transcripts", "0")
    assert lone.returncode == 0, lone.stderr
    assert "is shard 2 of 2 of experiment 'bc-shards'" in lone.stdout
    page = (tmp_path / "l" / "report.html").read_text(encoding="utf-8")
    assert "shard 2 of 2" in page and "<th>part</th>" in page  # in the experiments table and a note


def test_shards_read_where_they_lie_through_a_glob_the_shell_left(sharded: Path, tmp_path: Path) -> None:
    pattern = str(sharded / "shard-*")  # quoted in a job script: no shell expanded it
    r = cli("analyze", "glee", pattern, "--out", str(tmp_path))
    assert r.returncode == 2 and "no complete runs of a 'glee' game" in r.stderr  # found the directories
    r = cli("report", pattern, "--out", str(tmp_path / "g"), "--boot", "20", "--transcripts", "0")
    assert r.returncode == 0, r.stderr
    exps = (tmp_path / "g" / "report.html").read_text(encoding="utf-8")
    assert "shard-1" in exps and "shard-2" in exps and "shard 1 of 2" not in exps


def test_a_run_recorded_twice_in_one_directory_counts_once(tmp_path: Path) -> None:
    from econarena.analysis.load import load

    out = tmp_path / "bc"
    run_experiment(BC, out)
    lines = (out / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "runs.jsonl").write_text("".join(lines + lines[:3]), encoding="utf-8")
    with _stderr() as err:
        frames = load(out)
    assert len(frames.runs) == len(lines) and len(frames.players) == 6 * 2 * 3
    assert "3 run(s) recorded twice" in err.read()


class _stderr:
    """Capture what is printed on stderr while the block runs (capsys cannot be module-scoped)."""

    def __enter__(self) -> _stderr:
        import io
        import sys

        self.old, self.buf = sys.stderr, io.StringIO()
        sys.stderr = self.buf
        return self

    def __exit__(self, *exc: object) -> None:
        import sys

        sys.stderr = self.old

    def read(self) -> str:
        return self.buf.getvalue()


@pytest.mark.parametrize("token,key", [("NaN", "payoffs[1]"), ("Infinity", "payoffs[1]"), ("-Infinity", "payoffs[1]"),
                                       ("1e999", "payoffs[1]")])
def test_nan_or_infinity_in_a_payoff_is_refused_with_file_line_and_key(tmp_path: Path, token: str, key: str) -> None:
    out = tmp_path / "bc"
    run_experiment(BC, out)
    lines = (out / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    rec = json.loads(lines[4])
    text = json.dumps(rec).replace(json.dumps(rec["payoffs"]),
                                   "[" + ", ".join([json.dumps(rec["payoffs"][0]), token]
                                                   + [json.dumps(x) for x in rec["payoffs"][2:]]) + "]")
    lines[4] = text + "\n"
    (out / "runs.jsonl").write_text("".join(lines), encoding="utf-8")
    for args in (["report", str(out), "--out", str(tmp_path / "rep"), "--boot", "10"], ["summary", str(out)]):
        r = cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "runs.jsonl: line 5:" in r.stderr and f"'{key}' is not a finite number" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


def test_nan_in_a_glee_metric_is_refused_by_analyze(tmp_path: Path) -> None:
    doc = {"experiment": {"name": "g", "game": "bargaining", "sessions": 2, "runs": 1, "seed": 1},
           "game": {"max_rounds": 4},
           "players": [{"agent": "rational", "label": "a"}, {"agent": "random", "label": "b"}]}
    out = tmp_path / "g"
    run_experiment(doc, out)
    lines = (out / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = re.sub(r'"efficiency":\s*[-0-9.e]+', '"efficiency": NaN', lines[1])
    assert "NaN" in lines[1]
    (out / "runs.jsonl").write_text("".join(lines), encoding="utf-8")
    r = cli("analyze", "glee", str(out), "--out", str(tmp_path / "a"))
    assert r.returncode == 2 and "line 2:" in r.stderr and "'metrics.efficiency' is not a finite number" in r.stderr


def test_the_page_weighs_the_same_for_five_times_the_games(tmp_path: Path) -> None:
    """Scorecards, per-configuration aggregates and distributions: no row per game on the page."""
    sizes = {}
    for sessions in (4, 20):
        doc = {"experiment": {"name": "glee", "game": "bargaining", "sessions": sessions, "runs": 1, "seed": 2},
               "game": {"max_rounds": 12}, "grid": {"game": {"delta_alice": [0.8, 0.9]}},
               "players": [{"agent": "rational", "label": "R"}, {"agent": "random", "label": "X"}]}
        out = tmp_path / f"s{sessions}"
        run_experiment(doc, out)
        r = cli("report", str(out), "--out", str(tmp_path / f"r{sessions}"), "--boot", "20", "--transcripts", "3")
        assert r.returncode == 0, r.stderr
        page = (tmp_path / f"r{sessions}" / "report.html").read_text(encoding="utf-8")
        sizes[sessions] = len(re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page))
    assert abs(sizes[20] - sizes[4]) / sizes[4] < 0.02, sizes


def test_store_frames_equal_what_load_built_row_by_row(tmp_path: Path) -> None:
    """The engine's tables read back as pandas are the frames the loader built from dicts: same columns,
    dtypes and values, for a rational-environment experiment with opponents and rule breaks."""
    from econarena.analysis.load import load

    doc = {"experiment": {"name": "bc-rational", "game": "beauty_contest", "sessions": 3, "runs": 2, "seed": 5,
                          "environment": "rational"},
           "game": {}, "players": [{"agent": "scripted", "label": "S", "responses": ['{"answer": 30}', "no"]},
                                   {"agent": "random"}]}
    out = tmp_path / "r"
    run_experiment(doc, out)
    frames = load(out)
    assert set(frames.players["role"]) == {"player", "opponent"}
    assert frames.players["broke"].any() and frames.players["session"].dtype == "int64"
    assert list(frames.players.columns)[:7] == ["run_dir", "experiment", "game", "environment", "history", "prompt",
                                                "group"]
    # per player-run, the decisions' counts joined in the engine equal a count of the decisions frame
    counts = frames.decisions.groupby(["lineup", "session", "run", "player"]).size()
    joined = frames.players.set_index(["lineup", "session", "run", "seat"])["decisions"]
    assert (joined[joined > 0].sort_index() == counts.sort_index().values).all()
