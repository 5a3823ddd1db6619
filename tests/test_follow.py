"""The columnar copy written while `econarena run` plays (analysis/follow.py): the first report after a run
reads no log and prints what a report from the logs prints, and a copy never stands for logs it does not
match (a run killed with SIGKILL and resumed, shards, a log changed after the run).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ECONARENA, cli, to_toml

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")
pytest.importorskip("pandas")


@pytest.fixture
def follow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Copies under the test's folder, written as runs play (the suite turns the follower off elsewhere)."""
    root = tmp_path / "columns"
    monkeypatch.setenv("ECONARENA_COLUMNS", str(root))
    monkeypatch.setenv("ECONARENA_FOLLOW", "on")
    return root


def _config(tmp_path: Path, sessions: int, name: str = "grid.toml") -> Path:
    """A GLEE bargaining grid of baselines (its games talk: the conversations' sample is copied too)."""
    doc = {"experiment": {"name": "glee-grid", "game": "bargaining", "sessions": sessions, "runs": 1, "seed": 5,
                          "environment": "melee"},
           "game": {"max_rounds": 12},
           "grid": {"game": {"delta_alice": [0.8, 0.9], "money": [100, 10000]}},
           "players": [{"agent": "rational", "label": "R"}, {"agent": "random", "label": "X"}]}
    path = tmp_path / name
    path.write_text(to_toml(doc), encoding="utf-8")
    return path


def _ready(run_dir: Path) -> dict[str, Any]:
    """The copy's meta once the follower is done with it (the lock a report waits on); {} when none."""
    from econarena.analysis import columnar

    columnar.wait_for_follower(run_dir, timeout=120)
    copy = columnar.open_copy(run_dir, {"status": "complete"})
    assert copy is not None
    return copy.meta


PARTS = {"scan", "store", "glee", "distributions", "transcripts"}


class _NoLogs:
    """Fails the test if the scan parses a log."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from econarena.analysis import scan

        def refuse(path: Path, kind: str) -> Any:
            raise AssertionError(f"{path} was parsed although its copy is there")
        monkeypatch.setattr(scan, "iter_records", refuse)


def _same_reports(dirs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report from the copies (no log parsed) equals the report from the logs (copies off)."""
    import pandas as pd

    from econarena.analysis.report import build_report

    with monkeypatch.context() as m:
        _NoLogs(m)
        build_report(dirs, tmp_path / "from-copy", n_boot=50, seed=1)
    with monkeypatch.context() as m:
        m.setenv("ECONARENA_COLUMNS", "off")
        build_report(dirs, tmp_path / "from-logs", n_boot=50, seed=1)
    a, b = tmp_path / "from-copy", tmp_path / "from-logs"
    for name in ("metrics.csv", "glee_effects.csv", "glee_pairs.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    for name in ("players.parquet", "runs.parquet", "decisions.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(a / name), pd.read_parquet(b / name))
    pages = [(r / "report.html").read_text(encoding="utf-8").split("</p>", 1)[1] for r in (a, b)]
    pages = [p.replace(str(r), "OUT") for p, r in zip(pages, (a, b))]
    assert pages[0] == pages[1]  # every table and conversation (the first paragraph holds the build time)
    assert "Conversations" in pages[0] or "conversation" in pages[0].lower()


def test_the_first_report_after_run_reads_no_log(tmp_path: Path, follow: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    r = cli("run", str(_config(tmp_path, 6)), "--out", str(out), "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    meta = _ready(out)
    assert set(meta.get("parts", {})) == PARTS  # written by the follower: no report has read the directory
    assert meta["parts"]["store"]["info"]["complete"] == 24  # 4 cells x 6 sessions x 1 run
    _same_reports([out], tmp_path, monkeypatch)


def test_no_follower_when_turned_off_or_without_the_report_extra(tmp_path: Path, follow: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from econarena.cli import common as cli_run

    monkeypatch.setenv("ECONARENA_FOLLOW", "off")
    assert cli_run.start_follower(tmp_path / "a") is None
    monkeypatch.setenv("ECONARENA_FOLLOW", "on")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    assert cli_run.start_follower(tmp_path / "a") is None
    monkeypatch.setattr(importlib.util, "find_spec", real)
    out = tmp_path / "off"
    with monkeypatch.context() as m:
        m.setenv("ECONARENA_FOLLOW", "off")
        r = cli("run", str(_config(tmp_path, 2)), "--out", str(out), "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    assert _ready(out) == {}  # the run works as before and writes no copy


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_a_run_killed_and_resumed_gets_a_copy_of_its_final_logs(tmp_path: Path, follow: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL mid-run: the follower writes nothing (the manifest is not complete); the resumed run's follower
    reads the rewritten logs from their start and its copy gives the report the logs give."""
    config, out = _config(tmp_path, 400), tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen([ECONARENA, "run", str(config), "--out", str(out), "--quiet", "--concurrency", "1"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _lines(out / "runs.jsonl") < 40 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed: make it longer"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["status"] == "running"
    killed_at = _lines(out / "runs.jsonl")
    assert 40 <= killed_at < 1600
    assert _ready(out) == {}  # the killed run's follower gave up: no copy of logs that are not finished
    r = cli("run", str(config), "--out", str(out), "--resume", "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    meta = _ready(out)
    assert set(meta.get("parts", {})) == PARTS
    assert meta["parts"]["store"]["info"]["complete"] == 1600
    _same_reports([out], tmp_path, monkeypatch)


def test_shards_each_get_their_copy(tmp_path: Path, follow: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(tmp_path, 6)
    outs = []
    for k in (1, 2):
        out = tmp_path / f"shard-{k}"
        r = cli("run", str(config), "--out", str(out), "--shard", f"{k}/2", "--quiet", timeout=300)
        assert r.returncode == 0, r.stderr
        assert set(_ready(out).get("parts", {})) == PARTS
        outs.append(out)
    _same_reports(outs, tmp_path, monkeypatch)


@pytest.mark.timeout(600)
def test_a_run_on_ray_gets_its_copy(tmp_path: Path, follow: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run --ray`: the driver writes what the workers ship, the follower reads the same files."""
    pytest.importorskip("ray")
    out = tmp_path / "ray"
    r = cli("run", str(_config(tmp_path, 3)), "--out", str(out), "--quiet", "--ray", "--ray-workers", "1",
            timeout=480)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["engine"]["engine"] == "ray"
    assert set(_ready(out).get("parts", {})) == PARTS
    _same_reports([out], tmp_path, monkeypatch)


def test_a_log_changed_after_the_run_is_read_from_the_logs(tmp_path: Path, follow: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The follower's copy carries the source key of the logs it followed: a line appended afterwards (a
    run record met twice) makes the report read the logs, and warn as the logs say."""
    from econarena.analysis.load import study

    out = tmp_path / "run"
    r = cli("run", str(_config(tmp_path, 2)), "--out", str(out), "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    assert set(_ready(out).get("parts", {})) == PARTS
    with (out / "runs.jsonl").open("ab") as fh:
        fh.write((out / "runs.jsonl").read_bytes().splitlines(keepends=True)[0])
    store, found = study([out])
    store.close()
    assert any("recorded twice" in w for w in found.warnings), found.warnings


def test_the_follower_gives_up_on_logs_a_copy_cannot_stand_for(tmp_path: Path, follow: Path) -> None:
    """In process: a run recorded twice, a torn last line, or a manifest that is not complete: no copy."""
    import tomllib
    from conftest import run_experiment

    from econarena.analysis import columnar
    from econarena.analysis.follow import follow as follow_dir

    doc = tomllib.loads(_config(tmp_path, 2).read_text(encoding="utf-8"))
    for case in ("twice", "torn", "running", "whole"):
        out = tmp_path / case
        run_experiment(doc, out)
        runs = out / "runs.jsonl"
        if case == "twice":
            with runs.open("ab") as fh:
                fh.write(runs.read_bytes().splitlines(keepends=True)[0])
        elif case == "torn":
            with runs.open("ab") as fh:
                fh.write(b'{"session": 1')
        elif case == "running":
            m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
            (out / "manifest.json").write_text(json.dumps({**m, "status": "running"}), encoding="utf-8")
        written = follow_dir(out, lambda timeout: True)
        copy = columnar.open_copy(out, {"status": "complete"})
        assert copy is not None
        assert written is (case == "whole"), case
        assert bool(copy.meta) is (case == "whole"), case


def test_the_conversations_sample_keeps_its_reasoning_when_fed_run_by_run() -> None:
    """The follower feeds a run's decisions right after its record: a run that enters the sample after
    another's decisions were read still gets its reasoning, one pushed out loses it (as the two passes of a
    read from the logs give)."""
    from types import SimpleNamespace

    from econarena.analysis.transcripts import Collector

    log = [{"round": 0, "actions": [{"message": "hi"}], "events": {}}]
    c = Collector(max_runs=1)
    d: Any = SimpleNamespace(exp={"game": "bargaining"}, config={"x": 1}, path=Path("d"))
    assert c.begin(d)
    for session in (1, 0):  # session 1 first: in the sample, then pushed out by session 0
        c.run(d, session, {"lineup": "m", "session": session, "run": 0, "round_log": log})
        c.decision(d, {"lineup": "m", "session": session, "run": 0, "round": 0, "player": 0,
                       "reasoning": f"thought {session}", "reasoning_tokens": 3})
    c.end(d)
    (_, _, total, runs), = c.found
    assert total == 2 and [r["session"] for r in runs] == [0]
    assert runs[0]["_reasoning"] == {(0, 0): ("thought 0", False, 3)}
    assert c.thoughts == {(("m", 0, 0)): {(0, 0): ("thought 0", False, 3)}}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
