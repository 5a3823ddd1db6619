"""Shards for batch schedulers (hosts/shards.py): ``run --shard K/N`` plays a stable share of the sessions in
its own directory, and ``merge`` joins the shards into a directory equal to an unsharded run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from golden_experiments import normalised

from econarena.hosts.shards import in_shard, parse_shard, shard_of, shard_sessions


def doc(arena: Any, **experiment: Any) -> dict[str, Any]:
    """7 sessions of 2 runs at two tables (a grid of two ratios): 14 table-sessions, 28 runs."""
    d = arena.experiment_dict("beauty_contest", [{"agent": "rational"}, {"agent": "random", "count": 2},
                                                 {"agent": "level_k", "k": 2}],
                              sessions=7, runs=2, seed=4, history="full", shuffle_seats=True, **experiment)
    d["grid"] = {"game": {"ratio": [0.5, 0.75]}}
    return d


@pytest.mark.parametrize("text,expected", [("1/1", (1, 1)), ("3/8", (3, 8)), (" 2 / 4 ", (2, 4))])
def test_parse_shard(text: str, expected: tuple[int, int]) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "3", "a/b", "-1/2", ""])
def test_parse_shard_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="K"):
        parse_shard(text)


@pytest.mark.parametrize("tables,n", [(1, 1), (1, 3), (2, 4), (3, 6), (4, 2), (5, 7)])
def test_every_session_is_in_exactly_one_shard_and_counts_match(tables: int, n: int) -> None:
    sessions = 23
    for li in range(tables):
        owners = [[k for k in range(1, n + 1) if in_shard(li, s, tables, (k, n))] for s in range(sessions)]
        assert all(len(o) == 1 for o in owners)
        for k in range(1, n + 1):
            assert shard_sessions(sessions, li, tables, (k, n)) == sum(1 for o in owners if o == [k])
    # round-robin over (session, table): shard sizes differ by at most one table-session
    sizes = [sum(shard_sessions(sessions, li, tables, (k, n)) for li in range(tables)) for k in range(1, n + 1)]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == sessions * tables


def test_the_assignment_is_a_fixed_rule() -> None:
    """Not Python's hash(): the same in every process (a SLURM array task computes it independently)."""
    assert [shard_of(0, s, 1, 3) for s in range(6)] == [1, 2, 3, 1, 2, 3]
    assert [shard_of(li, 1, 2, 4) for li in range(2)] == [3, 4]
    assert shard_sessions(10**12, 0, 1, (1, 8)) == 10**12 // 8


def test_shard_counts_for_a_huge_n_are_computed_not_searched() -> None:
    """--shard 1/100000000000000000000 hung: the count searched a period of N sessions one by one."""
    n = 10**20
    assert shard_sessions(7, 0, 1, (1, n)) == 1 and shard_sessions(7, 0, 1, (8, n)) == 0
    assert shard_sessions(7, 0, 1, (7, n)) == 1 and shard_sessions(10**30, 1, 3, (2, n)) == 10**10
    assert shard_sessions(10**30, 0, 4, (2, n)) == 0  # 4s never hits an odd residue of an even N


def test_shards_merge_into_the_unsharded_run(tmp_path: Path, arena: Any) -> None:
    toml = tmp_path / "e.toml"
    toml.write_text(arena.to_toml(doc(arena)))
    whole = arena.cli("run", str(toml), "--out", str(tmp_path / "whole"), "--quiet")
    assert whole.returncode == 0, whole.stderr
    shards = []
    for k in (1, 2, 3):
        out = tmp_path / f"shard{k}"
        r = arena.cli("run", str(toml), "--out", str(out), "--quiet", "--shard", f"{k}/3")
        assert r.returncode == 0, r.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["shard"] == {"index": k, "count": 3} and manifest["status"] == "complete"
        shards.append(str(out))
    sizes = [len(arena.read_jsonl(Path(s) / "runs.jsonl")) for s in shards]
    # table-session s * 2 + table goes to shard (s * 2 + table) % 3 + 1: 5, 5 and 4 of 14, 2 runs each
    assert sizes == [10, 10, 8]
    merged = arena.cli("merge", *reversed(shards), "--out", str(tmp_path / "merged"), "--quiet")
    assert merged.returncode == 0, merged.stderr
    assert "merged 3 shard(s): 28 runs" in merged.stdout
    got, want = normalised(tmp_path / "merged"), normalised(tmp_path / "whole")
    for name in ("config.toml", "runs.jsonl", "decisions.jsonl", "summary.json", "summary.csv"):
        assert got[name] == want[name], name
    for name in ("runs.jsonl", "decisions.jsonl"):  # the same bytes per line (merge wrote json.dumps's spacing)
        lines = [sorted((d / name).read_bytes().splitlines()) for d in (tmp_path / "merged", tmp_path / "whole")]
        assert lines[0] == lines[1], name
    # written in session order, each run after its decisions
    runs = arena.read_jsonl(tmp_path / "merged" / "runs.jsonl")
    assert [(r["session"], r["run"]) for r in runs] == [(s, r) for s in range(7) for _ in range(2) for r in range(2)]
    manifest = json.loads((tmp_path / "merged" / "manifest.json").read_text())
    assert manifest["runs_total"] == manifest["runs_complete"] == 28 and "shard" not in manifest
    assert [m["shard"] for m in manifest["merged_from"]] == ["1/3", "2/3", "3/3"]
    # the merged directory is an ordinary run directory: report, summary and resume read it
    again = arena.cli("run", str(toml), "--out", str(tmp_path / "merged"), "--quiet", "--resume")
    assert again.returncode == 0 and "28/28 runs" in again.stdout


def test_merge_refuses_what_is_not_one_whole_experiment(tmp_path: Path, arena: Any) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(arena.to_toml(doc(arena)))
    b.write_text(arena.to_toml(doc(arena, name="other")))
    for k in (1, 2):
        r = arena.cli("run", str(a), "--out", str(tmp_path / f"a{k}"), "--quiet", "--shard", f"{k}/2")
        assert r.returncode == 0, r.stderr
    assert arena.cli("run", str(b), "--out", str(tmp_path / "b2"), "--quiet", "--shard", "2/2").returncode == 0
    assert arena.cli("run", str(a), "--out", str(tmp_path / "plain"), "--quiet").returncode == 0

    def merge(*dirs: str) -> Any:
        r = arena.cli("merge", *[str(tmp_path / d) for d in dirs], "--out", str(tmp_path / "m"))
        assert r.returncode == 2 and "Traceback" not in r.stderr and not (tmp_path / "m" / "manifest.json").exists()
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        return r.stderr

    assert "different experiment" in (e := merge("a1", "b2")) and "experiment.name: 't' != 'other'" in e
    assert "shard 1/2 is given twice" in merge("a1", "a1")
    assert "shard(s) 2/2 missing" in merge("a1")
    assert "not a shard" in merge("a1", "plain")
    assert "not a run directory" in merge("a1", "nowhere")
    # a shard whose runs.jsonl lost lines (copied in part): its manifest's count was summed, "28 runs" merged
    # over the 25 on disk; refused before anything is written
    runs = (tmp_path / "a1" / "runs.jsonl").read_bytes()
    (tmp_path / "a1" / "runs.jsonl").write_bytes(b"".join(runs.splitlines(keepends=True)[:-3]))
    e = merge("a1", "a2")
    assert "a1: its manifest says 14 run(s) complete, but its runs.jsonl holds 11" in e and "--resume" in e, e
    assert not (tmp_path / "m" / "runs.jsonl").exists()
    (tmp_path / "a1" / "runs.jsonl").write_bytes(runs)
    # an unfinished shard: its manifest says so
    m = json.loads((tmp_path / "a2" / "manifest.json").read_text())
    (tmp_path / "a2" / "manifest.json").write_text(json.dumps({**m, "status": "interrupted", "runs_complete": 3}))
    assert "shard 2/2" in (e := merge("a1", "a2")) and "interrupted" in e and "--resume" in e
    # a shard no --shard K/N writes: 5 of 2 was taken for a shard of its own experiment
    (tmp_path / "a2" / "manifest.json").write_text(json.dumps({**m, "shard": {"index": 5, "count": 2}}))
    assert "a2: its manifest says shard 5 of 2, which no --shard K/N writes" in merge("a1", "a2")


def test_resume_keeps_the_shard_it_started_with(tmp_path: Path, arena: Any) -> None:
    toml = tmp_path / "e.toml"
    toml.write_text(arena.to_toml(doc(arena)))
    out = tmp_path / "s"
    assert arena.cli("run", str(toml), "--out", str(out), "--quiet", "--shard", "2/3").returncode == 0
    r = arena.cli("run", str(toml), "--out", str(out), "--quiet", "--shard", "1/3", "--resume")
    assert r.returncode == 2 and "holds shard 2/3" in r.stderr
    r = arena.cli("run", str(toml), "--out", str(out), "--quiet", "--resume")
    assert r.returncode == 2 and "no --shard" in r.stderr
    r = arena.cli("run", str(toml), "--out", str(out), "--quiet", "--shard", "2/3", "--resume")
    assert r.returncode == 0 and "10/10 runs" in r.stdout
    r = arena.cli("run", str(toml), "--quiet", "--shard", "4/3")
    assert r.returncode == 2 and "K must be from 1 to N" in r.stderr


def test_a_shard_killed_before_it_wrote_anything_resumes_with_its_own_command(tmp_path: Path, arena: Any) -> None:
    """Found by trying: a shard job stopped before its manifest was written (a scheduler's kill at start-up)
    left a directory without one (or none at all), and the resume command printed for it, with --shard, was
    refused as resuming "an unsharded run"; a resume of a directory that never started begins the shard."""
    toml = tmp_path / "e.toml"
    toml.write_text(arena.to_toml(doc(arena)))
    for out in (tmp_path / "never-made", tmp_path / "empty"):
        if out.name == "empty":
            out.mkdir()
            (out / ".lock").write_text("")  # what a process killed right after taking the lock leaves
        r = arena.cli("run", str(toml), "--out", str(out), "--quiet", "--shard", "2/3", "--resume")
        assert r.returncode == 0, r.stderr
        assert "10/10 runs" in r.stdout
        assert json.loads((out / "manifest.json").read_text())["shard"] == {"index": 2, "count": 3}


def test_default_shard_directory(tmp_path: Path, arena: Any) -> None:
    toml = tmp_path / "e.toml"
    toml.write_text(arena.to_toml(doc(arena)))
    r = arena.cli("run", str(toml), "--quiet", "--shard", "3/3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "runs" / "t-shard-3-of-3" / "manifest.json").exists()


def test_merge_says_a_killed_shard_stopped_and_a_live_one_still_runs(tmp_path: Path, arena: Any, server: Any,
                                                                     capsys: Any) -> None:
    """Found by trying: a shard whose process was killed was "running (0/? runs)" while it held finished
    runs. Now: a shard killed for real (SIGKILL) "stopped before it ended" with the runs it finished
    (counted from its log: a killed process never wrote the manifest's counts) and how to finish it; a shard
    whose lock a live process holds is "still running", with the holder and how to wait for it."""
    import signal
    import subprocess
    import time

    from econarena.cli import main
    from econarena.formats.rundir import RunDirectory

    d = doc(arena)
    d["players"][0] = {"agent": "openai", "model": "fake", "base_url": f"{server.url}/v1", "max_tokens": 20}
    toml = tmp_path / "e.toml"
    toml.write_text(arena.to_toml(d))
    server.reset()
    server.reply = lambda protocol, body: '{"chosen_number": 20}'
    server.latency = 0.1
    assert arena.cli("run", str(toml), "--out", str(tmp_path / "s1"), "--quiet", "--shard", "1/2").returncode == 0
    killed = tmp_path / "s2"
    proc = subprocess.Popen([arena.ECONARENA, "run", str(toml), "--out", str(killed), "--quiet", "--shard", "2/2",
                             "--concurrency", "1"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while (not (killed / "runs.jsonl").exists() or len(arena.read_jsonl(killed / "runs.jsonl")) < 2) \
                and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert proc.poll() is None, "the shard finished before the kill"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    finished = len(arena.read_jsonl(killed / "runs.jsonl"))
    assert 2 <= finished < 14
    assert main(["merge", str(tmp_path / "s1"), str(killed), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert (f"shard 2/2 ({killed}) stopped before it ended: its process was killed or lost (the manifest still "
            f"says running; {finished} run(s) finished); finish it with econarena run FILE.toml --shard 2/2 "
            f"--out {killed} --resume") in err, err
    holder = RunDirectory(killed)
    holder.lock()  # a live process writes it
    try:
        assert main(["merge", str(tmp_path / "s1"), str(killed), "--out", str(tmp_path / "m")]) == 2
    finally:
        holder.unlock()
    err = capsys.readouterr().err
    assert f"shard 2/2 ({killed}) is still running (PID {os.getpid()} on " in err, err
    assert "sbatch --dependency=afterok:JOBID" in err and not (tmp_path / "m" / "manifest.json").exists()


def test_a_huge_n_is_merged_and_read_without_walking_1_to_n(tmp_path: Path, arena: Any) -> None:
    """``--shard 1/10**20`` is valid; merge listed every missing shard (a loop over 1..N that never ended)
    and report's scan built ``set(range(1, N + 1))``: both hung. Now the first few are named, with a count."""
    from econarena.analysis.scan import read_dirs
    from econarena.hosts.shards import MergeError, merge_shards

    toml = tmp_path / "e.toml"
    toml.write_text(arena.to_toml(doc(arena)))
    n = 10**20
    r = arena.cli("run", str(toml), "--out", str(tmp_path / "s1"), "--quiet", "--shard", f"1/{n}")
    assert r.returncode == 0 and "2/2 runs" in r.stdout, r.stderr  # table-session 0 only
    with pytest.raises(MergeError) as e:
        merge_shards([tmp_path / "s1"], tmp_path / "m")
    assert f"2/{n}, 3/{n}" in str(e.value) and f"and {n - 9} more missing" in str(e.value)
    assert not (tmp_path / "m").exists()
    (d,) = read_dirs([tmp_path / "s1"])
    assert d.part == f"shard 1 of {n}"


def test_dry_run_counts_the_shards_sessions_and_reads_its_directory(tmp_path: Path, arena: Any,
                                                                     monkeypatch: Any, capsys: Any) -> None:
    """``run --dry-run --shard K/N`` printed the whole experiment's decisions and calls (what an operator
    sizes one array task by), and with --resume read runs/<name> instead of the shard's runs/<name>-shard-K-of-N."""
    from econarena.cli import main
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.experiment import planned_calls

    exp = parse_experiment(doc(arena), "e.toml")
    counts = [planned_calls(exp, shard=(k, 3))["rational"][0] for k in (1, 2, 3)]
    assert counts == [10, 10, 8] and sum(counts) == planned_calls(exp)["rational"][0] == 28
    assert planned_calls(exp, shard=(20, 10**20))["rational"] == (0, True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.toml").write_text(arena.to_toml(doc(arena)))
    assert main(["run", "e.toml", "--shard", "2/3", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "e.toml", "--shard", "2/3", "--dry-run", "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "shard 2/3 (its sessions only), 10 run(s) already complete in runs/t-shard-2-of-3" in printed, printed
    assert " rational " in printed and " 0 decisions" in printed
    assert main(["run", "e.toml", "--shard", "3/3", "--dry-run"]) == 0
    assert "  rational                       8 decisions" in capsys.readouterr().out
