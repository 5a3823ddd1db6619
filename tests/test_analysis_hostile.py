"""The streamed analysis against logs and surroundings a hostile user brings: text no UTF-8 table can
hold, strings where numbers belong, integers beyond the tables', a config.toml that is no TOML, a full or
missing temporary folder, a report killed midway, two reports into one folder. Each is either read as the
README says or refused with the file, line and key (exit 2), never a traceback. One small experiment of
baselines, copied and edited per test: seconds in all."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import run_experiment

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")

BC = {"experiment": {"name": "bc-hostile", "game": "beauty_contest", "sessions": 4, "runs": 1, "seed": 3},
      "game": {}, "players": [{"agent": "rational"}, {"agent": "random", "count": 2}]}


def cli(*args: str) -> SimpleNamespace:
    from test_analysis_scale import cli as run

    return run(*args)


@pytest.fixture(autouse=True)
def _no_drawing(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_analysis_golden import _no_drawing as skip

    from econarena.analysis import figures

    monkeypatch.setattr(figures, "_save", skip)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("played") / "bc"
    run_experiment(BC, out)
    return out


def _edited(played: Path, to: Path, file: str, edit: Callable[[list[dict[str, Any]]], None]) -> Path:
    """A copy of the played directory with ``file``'s records changed by ``edit`` (written as json.dumps does,
    which escapes a lone surrogate as \\udXXX: valid JSON, no UTF-8 text)."""
    shutil.copytree(played, to)
    recs = [json.loads(line) for line in (to / file).read_text(encoding="utf-8").splitlines()]
    edit(recs)
    (to / file).write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return to


def test_a_lone_surrogate_in_an_old_reply_is_shown_as_its_escape(played: Path, tmp_path: Path) -> None:
    """Logs written before replies were held to the text rule: the pandas loader showed the escape; the
    streamed store failed the whole report on UTF-8 (a regression)."""
    def edit(recs: list[dict[str, Any]]) -> None:
        recs[0]["response"] = "bad \udc80 reply"
        recs[1]["detail"], recs[2]["error"], recs[3]["model"] = "d\ud800", "e\udfff", "m\udc80"

    d = _edited(played, tmp_path / "bc", "decisions.jsonl", edit)
    r = cli("report", str(d), "--out", str(tmp_path / "rep"), "--boot", "10", "--transcripts", "2")
    assert r.returncode == 0, r.stderr
    decisions = pd.read_parquet(tmp_path / "rep" / "decisions.parquet")
    assert decisions["response"].iloc[0] == "bad \\udc80 reply"
    assert decisions["detail"].iloc[1] == "d\\ud800" and decisions["error"].iloc[2] == "e\\udfff"


@pytest.mark.parametrize("file,edit,said", [
    ("runs.jsonl", lambda r: r[1]["labels"].__setitem__(1, "lone\udc80"), "line 2: not a runs record: 'labels[1]' "
     "is not UTF-8 text"),
    ("decisions.jsonl", lambda r: r[2].__setitem__("label", "x\ud800"), "line 3: not a decisions record: 'label' is "
     "not UTF-8 text"),
    ("runs.jsonl", lambda r: r[0].__setitem__("lineup", "t\udfff"), "line 1: not a runs record: 'lineup' is not "
     "UTF-8 text"),
    ("runs.jsonl", lambda r: r[3].__setitem__("session", 2**64 + 5), "line 4: not a runs record: 'session' is too "
     "large"),
    ("decisions.jsonl", lambda r: r[0].__setitem__("tokens_in", "12"), "line 1: not a decisions record: "
     "'tokens_in' must be a number or null (got \"12\")"),
    ("decisions.jsonl", lambda r: r[0].__setitem__("latency_s", "slow"), "'latency_s' must be a number or null"),
    ("runs.jsonl", lambda r: r[0]["deviation"].__setitem__(1, "Infinity"), "'deviation' must hold numbers"),
    ("runs.jsonl", lambda r: r[0]["valid"].__setitem__(1, "false"), "'valid' must hold true or false"),
    ("runs.jsonl", lambda r: r[0].__setitem__("score", "high"), "'score' must be a number or null"),
])
def test_what_no_table_can_hold_is_refused_by_summary_and_report_alike(played: Path, tmp_path: Path, file: str,
                                                                        edit: Any, said: str) -> None:
    """A label that is no UTF-8 text failed the report with a traceback (and the summary printed it); a string
    where a number belongs was a traceback in summary while the report read "Infinity" as infinite and "12"
    as twelve tokens; a session of 20 digits was a traceback. Now: exit 2 with the file, line and key, the
    same for both commands."""
    d = _edited(played, tmp_path / "bc", file, edit)
    for args in (["report", str(d), "--out", str(tmp_path / "rep"), "--boot", "10"], ["summary", str(d)]):
        r = cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert f"{file}: " in r.stderr and said in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


@pytest.mark.parametrize("text,said", [("[[[not toml", "config.toml: not TOML ("),
                                       (b"\xff\xfe = 1\n", "config.toml: not UTF-8 text (byte 0)")])
def test_a_config_that_is_no_toml_is_refused_not_read_as_no_settings(played: Path, tmp_path: Path, text: Any,
                                                                     said: str) -> None:
    """It was read as an empty config: an experiment of no game, environment melee and history none (the
    played one had others), numbers reported under settings nobody chose."""
    d = tmp_path / "bc"
    shutil.copytree(played, d)
    (d / "config.toml").write_bytes(text.encode() if isinstance(text, str) else text)
    for args in (["report", str(d), "--out", str(tmp_path / "rep"), "--boot", "10"], ["compare", str(d), str(d)],
                 ["analyze", "glee", str(d)]):
        r = cli(*args)
        assert r.returncode == 2 and said in r.stderr and str(d) in r.stderr, (args, r.stderr)
    assert not (tmp_path / "rep" / "metrics.csv").exists()


def test_a_directory_named_in_another_encoding_is_refused_and_its_link_is_read(played: Path, tmp_path: Path) -> None:
    """A path that is no UTF-8 text (a name of Latin-1 bytes) failed the report with a traceback in the
    engine's query text; now exit 2 naming it, and a link under a UTF-8 name reads it."""
    import os

    odd = Path(os.fsdecode(bytes(tmp_path) + b"/bc-\xff\xfe"))
    shutil.copytree(played, odd)
    r = cli("report", str(odd), "--out", str(tmp_path / "rep"), "--boot", "10")
    assert r.returncode == 2 and "the directory's path is not UTF-8 text" in r.stderr, r.stderr
    (tmp_path / "link").symlink_to(odd)
    r = cli("report", str(tmp_path / "link"), "--out", str(tmp_path / "rep"), "--boot", "10")
    assert r.returncode == 0, r.stderr
    assert pd.read_csv(tmp_path / "rep" / "metrics.csv")["run_dir"].eq(str(tmp_path / "link")).all()


def test_a_run_record_whose_params_is_no_table_is_refused_by_every_reader(played: Path, tmp_path: Path) -> None:
    """`"params": [1, 2]` stopped report and compare with an AttributeError traceback."""
    d = _edited(played, tmp_path / "bc", "runs.jsonl", lambda r: r[1].__setitem__("params", [1, 2]))
    for args in (["report", str(d), "--out", str(tmp_path / "rep"), "--boot", "10"], ["compare", str(d), str(played)],
                 ["summary", str(d)], ["analyze", "glee", str(d)]):
        r = cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "runs.jsonl: line 2: not a runs record: 'params' must be a JSON object of the game's parameters or " \
               "null (got list)" in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr


@pytest.mark.parametrize("shard", [{"index": 5, "count": 2}, {"index": 0, "count": 3}, {"index": "1", "count": 2},
                                   {"index": True, "count": 1}, [1, 2]])
def test_a_shard_no_run_writes_is_refused_not_reported(played: Path, tmp_path: Path, shard: Any) -> None:
    """A manifest saying shard 5 of 2 was reported as "shard 5 of 2 of experiment ..."; one with a shard
    of the wrong type was read as the whole experiment."""
    d = tmp_path / "bc"
    shutil.copytree(played, d)
    manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
    manifest["shard"] = shard
    (d / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    r = cli("report", str(d), "--out", str(tmp_path / "rep"), "--boot", "10")
    assert r.returncode == 2 and "manifest.json: 'shard' is " in r.stderr and "1 <= K <= N" in r.stderr, r.stderr
    assert not (tmp_path / "rep" / "metrics.csv").exists()


def test_a_run_recorded_twice_differently_is_said_with_its_difference(played: Path, tmp_path: Path) -> None:
    """A second, different record of a run was counted once in silence by summary, and by report as a plain
    duplicate; now both say the records differ, where and how, and still count the first."""
    def again(recs: list[dict[str, Any]]) -> None:
        second = json.loads(json.dumps(recs[0]))
        second["payoffs"][0] = 12345.0
        recs.append(second)
        recs.append(json.loads(json.dumps(recs[1])))  # and one written twice alike: a plain duplicate
    d = _edited(played, tmp_path / "bc", "runs.jsonl", again)
    n = len((d / "runs.jsonl").read_text(encoding="utf-8").splitlines())
    first = json.loads((d / "runs.jsonl").read_text(encoding="utf-8").splitlines()[0])["payoffs"][0]
    said = (f"runs.jsonl: 1 run(s) recorded twice with different records, e.g. run 0/0 (melee) at line {n - 1}: "
            f"'payoffs[0]' is 12345.0 here, {json.dumps(first)} there (line 1); the first record is counted")
    for args in (["summary", str(d)], ["report", str(d), "--out", str(tmp_path / "rep"), "--boot", "10"]):
        r = cli(*args)
        assert r.returncode == 0, (args, r.stderr)
        out = r.stdout + r.stderr
        assert "2 run(s) recorded twice; each is counted once" in out and said in out, (args, out)
    summary = json.loads(cli("summary", str(d), "--json").stdout)
    plain = json.loads(cli("summary", str(played), "--json").stdout)
    assert summary["labels"] == plain["labels"]  # the first records counted, the others not


def test_a_full_temporary_folder_is_said_with_what_to_do(played: Path, tmp_path: Path) -> None:
    """A report whose temporary folder filled up ended in DuckDB's FatalException traceback. The folder is a
    512 KB tmpfs mounted in a user namespace of its own (unshare), so the disk really is full."""
    import os
    import shutil as sh
    import subprocess
    import sys

    from timing import budget

    small = tmp_path / "small"
    small.mkdir()
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            f"mount -t tmpfs -o size=512k tmpfs {small}"], capture_output=True, text=True)
    if sh.which("unshare") is None or probe.returncode != 0:
        pytest.skip(f"no tmpfs in a user namespace here: {probe.stderr.strip()[:200]}")
    env = {**os.environ, "ECONARENA_COLUMNS": "off", "TMPDIR": str(small)}
    script = (f"mount -t tmpfs -o size=512k tmpfs {small} && exec {sys.executable} -m econarena.cli report "
              f"{played} --out {tmp_path / 'rep'} --boot 10")
    r = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], env=env,
                       capture_output=True, text=True, timeout=budget(120))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "econarena: error: no space left: " in r.stderr and "No space left on device" in r.stderr
    assert f"temporary folder {small}: free some space there, or set TMPDIR" in r.stderr
    assert "Traceback" not in r.stderr
