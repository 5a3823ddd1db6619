"""Runs where researchers run them: batch scripts, CI, ``cmd &`` in a non-interactive shell, ``nohup``, SSH.

A process started in the background by a non-interactive shell inherits SIGINT as *ignored*; these tests
start ``econarena run`` that way (a launcher sets the dispositions and execs it, as a shell does), with
no terminal and stdin closed, and check that SIGINT, SIGTERM and SIGHUP stop it within seconds, the
manifest says ``interrupted``, the printed ``--resume`` completes the experiment to the runs of an
uninterrupted one, and the previous dispositions come back.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from timing import budget

from econarena.cli import main

STOP_WITHIN_S = 5.0

EXPERIMENT = """\
[experiment]
name = "batch"
game = "english_auction"
sessions = 400
runs = 2
seed = 5
history = "full"

[game]
private_value = { normal = [50, 10] }
assets = 100
increment = 4

[[players]]
agent = "random"
count = 2

[[players]]
agent = "scripted"
responses = ['{"decision": "stay"}', 'garbage', '{"decision": "drop"}']

[[players]]
agent = "rational"
"""
TOTAL = 800

# Sets the given signals to ignored and the other stop signals to their default (whatever the test runner
# itself inherited), optionally makes a terminal the controlling one, closes stdin if asked, then execs:
# exec keeps ignored signals ignored, exactly as a shell's `cmd &` hands SIG_IGN for SIGINT to its child.
LAUNCHER = """\
import os, signal, sys
ignored, tty, close_stdin = sys.argv[1].split(","), sys.argv[2], sys.argv[3] == "1"
for name in ("SIGINT", "SIGTERM", "SIGHUP"):
    signal.signal(getattr(signal, name), signal.SIG_IGN if name in ignored else signal.SIG_DFL)
if tty:
    os.login_tty(int(tty))
if close_stdin:
    os.close(0)
os.execv(sys.argv[4], sys.argv[4:])
"""


def launch(arena, args: list[str], *, ignored: tuple[str, ...] = ("SIGINT",), tty: int | None = None,
           close_stdin: bool = False, **popen) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    if tty is not None:
        popen["pass_fds"] = (tty,)
    return subprocess.Popen([sys.executable, "-c", LAUNCHER, ",".join(ignored), "" if tty is None else str(tty),
                             "1" if close_stdin else "0", arena.ECONARENA, *args], env=env, stdin=subprocess.DEVNULL,
                            start_new_session=tty is None, text=True, **popen)  # a session of its own, no terminal
    # (with ``tty``, login_tty makes the new session, the terminal its controlling one)


def lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_for_runs(proc: subprocess.Popen[str], out: Path, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while lines(out / "runs.jsonl") < n:
        assert proc.poll() is None, f"ended before {n} runs: {proc.communicate()}"
        assert time.monotonic() < deadline
        time.sleep(0.01)


def stopped_within(proc: subprocess.Popen[str], seconds: float = STOP_WITHIN_S) -> tuple[int, str]:
    seconds = budget(seconds)  # measured before the clock starts: the measurement takes a moment
    start = time.monotonic()
    try:
        _, err = proc.communicate(timeout=seconds + 25)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the run ignored the signal (it had to be killed)")
    took = time.monotonic() - start
    assert took < seconds, f"stopped only after {took:.1f}s"
    return proc.returncode, err


def status(out: Path) -> str:
    return json.loads((out / "manifest.json").read_text())["status"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """The experiment file and the runs of an uninterrupted run of it."""
    folder = tmp_path_factory.mktemp("batch")
    toml = folder / "batch.toml"
    toml.write_text(EXPERIMENT)
    out = folder / "ref"
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    return toml, sorted(runs, key=lambda r: (r["session"], r["run"]))


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_background_run_with_sigint_ignored_stops_on_each_stop_signal_and_resumes_exactly(
        sig: str, arena, reference, tmp_path: Path) -> None:
    toml, ref_runs = reference
    out = tmp_path / "out"
    proc = launch(arena, ["run", str(toml), "--out", str(out), "--seed", "5"])
    wait_for_runs(proc, out, 40)
    proc.send_signal(getattr(signal, sig))
    code, err = stopped_within(proc)
    assert code == 130, err
    assert "Traceback" not in err
    assert status(out) == "interrupted"
    assert lines(out / "runs.jsonl") < TOTAL, "finished before the signal; make the experiment bigger"
    hint = err.split(f"interrupted by {sig}; finished runs are kept: ")[1].strip()
    assert hint == f"econarena run {toml} --out {out} --seed 5 --resume"
    assert main(hint.split()[1:] + ["--quiet"]) == 0  # the printed command, as printed
    assert status(out) == "complete"
    runs = sorted((json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()),
                  key=lambda r: (r["session"], r["run"]))
    assert runs == ref_runs


def test_a_job_started_with_ampersand_by_a_non_interactive_shell_stops_on_sigint(arena, tmp_path: Path) -> None:
    """The case as found: `bash -c 'econarena run ... &'` (bash gives the job SIGINT ignored), stdin /dev/null."""
    toml = tmp_path / "batch.toml"
    toml.write_text(EXPERIMENT.replace("sessions = 400", "sessions = 4000"))
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    probe = subprocess.run(["bash", "-c", "grep SigIgn /proc/self/status & wait"], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    assert int(probe.stdout.split()[1], 16) & (1 << (signal.SIGINT - 1)), "the job really starts with SIGINT ignored"
    shell = subprocess.Popen(["bash", "-c", '"$@" < /dev/null & wait $!', "job", arena.ECONARENA, "run", str(toml),
                              "--out", str(out), "--quiet"], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for_runs(shell, out, 40)
    pid = int((out / ".lock").read_text().split()[1])  # "PID n on host, since ...": the job, not bash
    os.kill(pid, signal.SIGINT)
    code, err = stopped_within(shell)
    assert code == 130 and "interrupted by SIGINT; finished runs are kept" in err, err
    assert status(out) == "interrupted"


def test_sighup_of_a_closed_terminal_stops_the_run_and_nohup_keeps_it_going(arena, tmp_path: Path) -> None:
    """A closed SSH session: the terminal hangs up (SIGHUP, and every later write to it fails with EIO).
    Under nohup (SIGHUP ignored on entry) the run goes on, as nohup promises, and SIGTERM still stops it."""
    if not hasattr(os, "login_tty"):
        pytest.skip("os.login_tty needs Python 3.11")
    import pty

    toml = tmp_path / "batch.toml"
    toml.write_text(EXPERIMENT.replace("sessions = 400", "sessions = 4000"))
    for ignored, name in (((), "hup"), (("SIGINT", "SIGHUP"), "nohup")):
        out = tmp_path / name
        master, slave = pty.openpty()
        proc = launch(arena, ["run", str(toml), "--out", str(out)], ignored=ignored, tty=slave,
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # the terminal replaces them
        os.close(slave)
        deadline = time.monotonic() + 60
        screen = b""
        while lines(out / "runs.jsonl") < 40 or b"runs" not in screen:  # the live line is on the terminal
            assert proc.poll() is None and time.monotonic() < deadline
            screen += os.read(master, 65536)
        os.close(master)  # hang up
        if name == "hup":
            assert stopped_within(proc)[0] == 130  # not 120 or 1: the dead terminal cost no exit code
            assert status(out) == "interrupted"
        else:
            time.sleep(1.0)
            assert proc.poll() is None, "nohup: the run outlives the terminal"
            before = lines(out / "runs.jsonl")
            time.sleep(0.5)
            assert lines(out / "runs.jsonl") > before, "and goes on writing"
            proc.send_signal(signal.SIGTERM)
            assert stopped_within(proc)[0] == 130
            assert status(out) == "interrupted"


def test_stdin_closed_and_no_terminal_runs_and_refuses_a_human_seat_cleanly(arena, tmp_path: Path) -> None:
    toml = tmp_path / "small.toml"
    toml.write_text(EXPERIMENT.replace("sessions = 400", "sessions = 3"))
    proc = launch(arena, ["run", str(toml), "--out", str(tmp_path / "a")], close_stdin=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and status(tmp_path / "a") == "complete", err
    human = tmp_path / "human.toml"
    human.write_text(EXPERIMENT.replace("sessions = 400", "sessions = 3").replace('agent = "rational"',
                                                                                   'agent = "human"'))
    proc = launch(arena, ["run", str(human), "--out", str(tmp_path / "b")], close_stdin=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "Traceback" not in err
    assert "is a human player, but standard input is not a terminal" in err


def test_a_second_signal_while_a_thread_finishes_exits_at_once(tmp_path: Path) -> None:
    """After the first signal the run is over and its manifest written, but asyncio still waits for worker
    threads (a local model's batch); a second signal does not wait for them."""
    script = ("import asyncio, time\n"
              "from econarena.cli.common import Interrupted, run_until_signalled\n"
              "async def work():\n"
              "    print('ready', flush=True)\n"
              "    await asyncio.to_thread(time.sleep, 60)\n"
              "run_until_signalled(work())\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert proc.poll() is None  # cancelled, now waiting for the sleeping thread
    proc.send_signal(signal.SIGTERM)
    code, err = stopped_within(proc, 3)
    assert code == 130 and "SIGTERM again while stopping: exiting now" in err


def test_handlers_work_in_process_with_sigint_ignored_and_dispositions_come_back() -> None:
    from econarena.cli.common import Interrupted, run_until_signalled

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        async def interrupted_by(sig: int) -> None:
            os.kill(os.getpid(), sig)
            await asyncio.sleep(5)  # never reached: the signal cancels the task
            raise AssertionError("the signal was ignored")

        for sig in (signal.SIGINT, signal.SIGTERM):
            with pytest.raises(Interrupted) as caught:
                run_until_signalled(interrupted_by(sig))
            assert caught.value.signame == sig.name
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # restored as it was
        assert run_until_signalled(asyncio.sleep(0, "done")) == "done"
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    assert {s: signal.getsignal(s) for s in before} == before


# Runs econarena's main in a process of its own that sends itself a stop signal at a fixed point outside the
# event loop: while the files are read (start-up), while the summary is written (the end), or while an
# analysis has its working database open (store). SIGINT starts ignored, as in a `cmd &` job; SIGHUP starts
# ignored only for the nohup case.
SIGNAL_AT = """\
import os, signal, sys
sig, where, ignored = getattr(signal, sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
for name in ("SIGINT", "SIGTERM", "SIGHUP"):  # exactly these ignored, whatever the test run inherited (nohup)
    signal.signal(getattr(signal, name), signal.SIG_IGN if name in ignored else signal.SIG_DFL)
import econarena.analysis.metrics as metrics
import econarena.analysis.store as store
import econarena.hosts.config as config
target = {"start": (config, "load_experiment"), "summary": (metrics, "write_summary"),
          "store": (store.Store, "finish")}[where]
real = getattr(*target)
def patched(*args, **kwargs):
    os.kill(os.getpid(), sig)
    return real(*args, **kwargs)
setattr(*target, patched)
from econarena.cli import main
sys.exit(main(sys.argv[4:]))
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("where", ["start", "summary"])
def test_a_stop_signal_before_or_after_the_games_stops_the_command_with_130(sig: str, where: str,
                                                                           tmp_path: Path) -> None:
    """Found by trying: a SIGINT during start-up of a `cmd &` job was lost (the run went on to the end),
    and SIGTERM/SIGHUP while the files were read or the summary written killed it with 143/129."""
    toml = tmp_path / "small.toml"
    toml.write_text(EXPERIMENT.replace("sessions = 400", "sessions = 3"))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AT, sig, where, "SIGINT", "run", str(toml), "--out",
                           str(out), "--quiet"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120, start_new_session=True)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert f"interrupted by {sig}" in proc.stderr
    if where == "start":  # nothing was touched: no manifest, a plain run starts afresh
        assert not (out / "manifest.json").exists()
    else:  # every run finished; the printed --resume writes the summary that the signal stopped
        assert status(out) == "complete" and not (out / "summary.json").exists()
        hint = proc.stderr.split("finished runs are kept: ")[1].strip()
        assert main(hint.split()[1:] + ["--quiet"]) == 0
        assert (out / "summary.json").exists()


def test_nohup_keeps_ignoring_sighup_during_start_up(tmp_path: Path) -> None:
    toml = tmp_path / "small.toml"
    toml.write_text(EXPERIMENT.replace("sessions = 400", "sessions = 3"))
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AT, "SIGHUP", "start", "SIGINT,SIGHUP", "run", str(toml),
                           "--out", str(tmp_path / "out"), "--quiet"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, start_new_session=True)
    assert proc.returncode == 0 and status(tmp_path / "out") == "complete", proc.stderr


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_during_an_analysis_removes_its_temporary_folder(command: str, sig: str, reference,
                                                                     tmp_path: Path) -> None:
    """Found by trying: SIGTERM (a scheduler's time limit, ``kill``) or SIGHUP killed ``report`` with 143/129
    and left its working database, tens of MB to GB, in the temporary folder; it now ends as Ctrl-C does."""
    toml, _ = reference
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    ref = str(toml.parent / "ref")
    args = [command, ref, "--out", str(tmp_path / "out")] if command == "report" else [command, ref, ref]
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AT, sig, "store", "SIGINT", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120, start_new_session=True,
                          env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert f"interrupted by {sig}" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not list(tmp.glob("econarena-analysis-*"))


def test_an_analysis_under_cmd_and_keeps_ignoring_sigint(reference, tmp_path: Path) -> None:
    """A report started with ``&`` by a script inherits SIGINT as ignored and keeps it so, as any program
    does (the script's Ctrl-C is not for it); unlike ``run``, it has nothing to keep by stopping."""
    toml, _ = reference
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AT, "SIGINT", "store", "SIGINT", "report",
                           str(toml.parent / "ref"), "--out", str(out)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, start_new_session=True)
    assert proc.returncode == 0, proc.stderr
    assert (out / "report.html").exists()


STEER_CFR = """\
[experiment]
name = "steer-cfr"
game = "fruit_trade"
sessions = 4
seed = 2

[steer]
actions = "offers"
samples = 4
iterations = 1000000
every = 100000
report_at = 100000

[[players]]
agent = "random"
label = "p1"

[[players]]
agent = "random"
label = "p2"
"""


def test_a_steering_run_stops_at_once_while_cfr_solves_in_worker_threads(arena, tmp_path: Path) -> None:
    """Found by trying: the first SIGTERM waited for every CFR solve in flight (46 s for 250,000 iterations;
    up to minutes at the largest solve a file may ask for) before the run exited; a solve now ends at its
    next iteration once its game is cancelled."""
    toml = tmp_path / "steer.toml"
    toml.write_text(STEER_CFR)
    out = tmp_path / "out"
    proc = launch(arena, ["steer", str(toml), "--out", str(out), "--quiet"])
    deadline = time.monotonic() + 60
    while lines(out / "decisions.jsonl") < 1:  # random players decide in a moment, then CFR solves (~30 s each)
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    code, err = stopped_within(proc)
    assert code == 130 and "interrupted by SIGTERM" in err and "Traceback" not in err, err
    assert status(out) == "interrupted" and lines(out / "steering.jsonl") == 0
