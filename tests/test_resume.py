"""Kill the process at any moment: ``--resume`` completes the experiment, every run exactly once, with the
results of an uninterrupted run. Also: a run directory is never silently overwritten or mixed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from econarena.cli import main

SESSIONS, RUNS = 120, 2
TOTAL = SESSIONS * RUNS

EXPERIMENT = f"""\
[experiment]
name = "resume"
game = "english_auction"
sessions = {SESSIONS}
runs = {RUNS}
seed = 21
history = "full"

[game]
private_value = {{ normal = [50, 10] }}
assets = 100
increment = 4
entrance_fee = 1

[[players]]
agent = "random"
count = 3

[[players]]
agent = "scripted"
responses = ['{{"decision": "stay"}}', '{{"decision": "stay"}}', 'garbage', '{{"decision": "drop"}}']

[[players]]
agent = "rational"
"""


def lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def start(arena, toml: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.Popen([arena.ECONARENA, "run", str(toml), "--out", str(out), "--quiet", *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)


def kill_midway(arena, toml: Path, out: Path, at_least: int, *extra: str) -> int:
    """Start a run, SIGKILL it once runs.jsonl has ``at_least`` lines; returns the lines it had."""
    proc = start(arena, toml, out, *extra)
    deadline = time.monotonic() + 60
    while lines(out / "runs.jsonl") < at_least:
        assert proc.poll() is None, f"finished before the kill: {proc.communicate()}"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    done = lines(out / "runs.jsonl")
    assert done < TOTAL, "the run finished before it was killed; make the experiment bigger"
    return done


def summary(out: Path) -> dict:
    data = json.loads((out / "summary.json").read_text())
    data.pop("run_dir")
    return data


def test_resume_after_sigkill_equals_an_uninterrupted_run(tmp_path: Path, arena) -> None:
    toml = tmp_path / "exp.toml"
    toml.write_text(EXPERIMENT)
    ref, out = tmp_path / "ref", tmp_path / "killed"
    reference = start(arena, toml, ref)  # runs alongside the victim

    first = kill_midway(arena, toml, out, TOTAL // 5)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "running" and manifest["seed"] == 21
    assert not (out / "summary.json").exists()

    # a second kill during the first resume: killed runs never count twice
    second = kill_midway(arena, toml, out, first + TOTAL // 5, "--resume")
    assert second > first

    resumed = start(arena, toml, out, "--resume")
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert f"complete, {TOTAL}/{TOTAL} runs" in stdout
    stdout, stderr = reference.communicate(timeout=120)
    assert reference.returncode == 0, stderr

    runs = arena.sorted_runs(out)
    keys = [(r["lineup"], r["session"], r["run"]) for r in runs]
    assert len(keys) == len(set(keys)) == TOTAL  # every run exactly once
    assert runs == arena.sorted_runs(ref)
    assert arena.sorted_decisions(out) == arena.sorted_decisions(ref)
    assert summary(out) == summary(ref)
    assert sum(1 for r in runs if not r["valid"][3]) > 0  # the scripted garbage made it into the results
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["resumes"] == 2
    assert manifest["runs_complete"] == TOTAL


def test_a_run_directory_is_not_reused_without_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "exp.toml"
    toml.write_text(EXPERIMENT.replace(f"sessions = {SESSIONS}", "sessions = 2"))
    out = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    before = (out / "runs.jsonl").read_text()
    capsys.readouterr()
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "already holds results" in err and "--resume" in err
    assert (out / "runs.jsonl").read_text() == before
    # resuming a complete directory changes nothing
    assert main(["run", str(toml), "--out", str(out), "--quiet", "--resume"]) == 0
    assert (out / "runs.jsonl").read_text() == before


@pytest.mark.parametrize("change", [("seed = 21", "seed = 22"), ("increment = 4", "increment = 5")])
def test_resume_with_a_different_config_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   change: tuple[str, str]) -> None:
    toml = tmp_path / "exp.toml"
    toml.write_text(EXPERIMENT.replace(f"sessions = {SESSIONS}", "sessions = 2"))
    out = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    before = (out / "runs.jsonl").read_text()
    toml.write_text(toml.read_text().replace(*change))
    capsys.readouterr()
    assert main(["run", str(toml), "--out", str(out), "--quiet", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "holds a different experiment" in err
    key, old, new = {"seed": ("experiment.seed", 21, 22), "increment": ("game.increment", 4, 5)}[change[0].split()[0]]
    assert f"{key}: {old} != {new}" in err or f"{key}: {float(old)} != {float(new)}" in err, err  # names the key
    assert (out / "runs.jsonl").read_text() == before
    if change[0] == "seed = 21":  # --seed is part of the experiment: overriding it back is the same one
        assert main(["run", str(toml), "--out", str(out), "--quiet", "--resume", "--seed", "21"]) == 0
        assert (out / "runs.jsonl").read_text() == before


def test_resume_drops_torn_lines_and_unfinished_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     arena) -> None:
    toml = tmp_path / "exp.toml"
    toml.write_text(EXPERIMENT.replace(f"sessions = {SESSIONS}", "sessions = 3"))
    ref, out = tmp_path / "ref", tmp_path / "out"
    assert main(["run", str(toml), "--out", str(ref), "--quiet"]) == 0
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    # fake a crash: keep the first 2 runs, the decisions of the first 3 (the 3rd never finished), and a
    # torn half line at the end of each file
    runs = (out / "runs.jsonl").read_text().splitlines(keepends=True)
    decisions = arena.read_jsonl(out / "decisions.jsonl")
    kept = {(r["session"], r["run"]) for r in map(json.loads, runs[:3])}
    partial = [json.dumps(d) + "\n" for d in decisions if (d["session"], d["run"]) in kept]
    (out / "runs.jsonl").write_text("".join(runs[:2]) + runs[2][:25])
    (out / "decisions.jsonl").write_text("".join(partial) + '{"session": 0, "ru')
    (out / "summary.json").unlink()
    assert main(["run", str(toml), "--out", str(out), "--quiet", "--resume"]) == 0
    assert arena.sorted_runs(out) == arena.sorted_runs(ref)
    assert arena.sorted_decisions(out) == arena.sorted_decisions(ref)
    assert summary(out) == summary(ref)
    discarded = arena.read_jsonl(out / "decisions.discarded.jsonl")
    torn = [d for d in discarded if "unreadable_line" in d]  # kept verbatim, not deleted
    assert [d["text"] for d in torn] == ['{"session": 0, "ru']
    discarded = [d for d in discarded if "unreadable_line" not in d]
    assert discarded and all((d["session"], d["run"]) in kept - {(r["session"], r["run"])
                                                                 for r in map(json.loads, runs[:2])}
                             for d in discarded)


def test_resume_on_a_fresh_directory_starts_a_normal_run(tmp_path: Path, arena) -> None:
    toml = tmp_path / "exp.toml"
    toml.write_text(EXPERIMENT.replace(f"sessions = {SESSIONS}", "sessions = 2"))
    assert main(["run", str(toml), "--out", str(tmp_path / "out"), "--quiet", "--resume"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["seed"] == 21 and manifest["experiment"] == "resume"
    assert {"schema_version", "econarena_version", "started_at", "ended_at"} <= set(manifest)
    assert len(arena.read_jsonl(tmp_path / "out" / "runs.jsonl")) == 4


def test_ctrl_c_exits_130_marks_the_run_interrupted_and_says_how_to_resume(tmp_path: Path, arena) -> None:
    toml = tmp_path / "exp.toml"
    toml.write_text(EXPERIMENT)
    out = tmp_path / "out"
    proc = start(arena, toml, out, "--seed", "8")
    deadline = time.monotonic() + 60
    while lines(out / "runs.jsonl") < 10:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and 10 <= manifest["runs_complete"] < TOTAL
    hint = stderr.split("finished runs are kept: ")[1].strip()
    assert hint == f"econarena run {toml} --out {out} --seed 8 --resume"
    assert main(hint.split()[1:] + ["--quiet"]) == 0  # the hint works as printed
    assert len(arena.read_jsonl(out / "runs.jsonl")) == TOTAL


def test_a_corrupt_line_in_the_middle_is_reported_not_silently_dropped(tmp_path: Path, capsys) -> None:
    from econarena.formats.rundir import read_jsonl

    path = tmp_path / "runs.jsonl"
    path.write_text('{"a": 1}\nnot json\n{"a": 2}\n{"a": 3')  # line 2 corrupt, line 4 torn
    assert read_jsonl(path, warn=True) == [{"a": 1}, {"a": 2}]
    err = capsys.readouterr().err
    assert "skipped 1 unreadable line(s): 2" in err and str(path) in err
