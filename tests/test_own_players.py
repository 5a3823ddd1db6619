"""What a run takes from a player of one's own (agents/plugins.py): an ``act`` that blocks ends in an error
after the class's ``timeout_s`` while the event loop, and so SIGTERM, stays in charge; a reply of 50 MB is
refused with its length. Each CLI call runs in a child process of this tree (PYTHONPATH passed through).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXE = [sys.executable, "-m", "econarena.cli"]

AGENTS = '''
import os, time
from pathlib import Path
from econarena.agents.plugins import CustomAgent


class Stuck(CustomAgent):
    timeout_s = 0.5

    def act(self, request):
        time.sleep(3600)


class Forever(CustomAgent):
    timeout_s = 3600.0

    def act(self, request):
        Path(os.environ["ACT_STARTED"]).touch()
        while True:
            time.sleep(1)


class Huge(CustomAgent):
    def act(self, request):
        return "7" * 50_000_000


class Half(CustomAgent):
    def act(self, request):
        return {k: 0.5 * v for k, v in request.strategy("rational").items()}
'''

EXPERIMENT = """[experiment]
name = "own"
game = "second_price_auction"
sessions = 2
runs = 1
seed = 3

[[players]]
agent = "mine.agents:{cls}"

[[players]]
agent = "rational"
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "mine" / "agents.py").write_text(AGENTS, encoding="utf-8")
    return tmp_path


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "ACT_STARTED": str(folder / "started")}  # PYTHONPATH kept: this tree is imported


def test_a_blocking_act_fails_check_after_its_timeout(folder: Path) -> None:
    t0 = time.monotonic()
    proc = subprocess.run([*EXE, "check", "--trust", ".", "--agent", "mine.agents:Stuck", "second_price_auction",
                           "--seeds", "2"],
                          cwd=folder, env=_env(folder), capture_output=True, text=True, timeout=60)
    assert time.monotonic() - t0 < 30  # the act thread sleeps an hour: it was left behind, not joined
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL plays to the end: AgentTimeout: Stuck.act did not return within timeout_s = 0.5 s" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_a_50_mb_reply_is_refused_with_its_length(folder: Path) -> None:
    proc = subprocess.run([*EXE, "check", "--trust", ".", "--agent", "mine.agents:Huge", "second_price_auction",
                           "--seeds", "1"],
                          cwd=folder, env=_env(folder), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("Huge.act returned a reply of 50,000,000 characters, more than the 1,048,576 a reply may have"
            in proc.stdout)


def test_a_blocking_act_in_a_run_is_stopped_by_sigterm(folder: Path) -> None:
    (folder / "own.toml").write_text(EXPERIMENT.format(cls="Forever"), encoding="utf-8")
    proc = subprocess.Popen([*EXE, "run", "own.toml", "--trust", ".", "--out", "runs", "--quiet"], cwd=folder,
                            env=_env(folder),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (folder / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=20)
        assert time.monotonic() - t0 < 10
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    manifest = json.loads((folder / "runs" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "interrupted"


def test_an_act_that_returns_still_plays_in_its_thread(folder: Path) -> None:
    """The thread changes nothing of what is played: the bids are half the private values, as act says."""
    (folder / "own.toml").write_text(EXPERIMENT.format(cls="Half"), encoding="utf-8")
    proc = subprocess.run([*EXE, "run", "own.toml", "--trust", ".", "--out", "runs", "--quiet"], cwd=folder,
                          env=_env(folder), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = [json.loads(x) for x in (folder / "runs" / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 2
    for r in runs:
        mine = r["labels"].index("Half")
        assert r["actions"][mine] == pytest.approx(0.5 * r["private_values"][mine])


# -- a game of one's own that fails --------------------------------------------------------------------------

GAMES = '''
from dataclasses import replace
from typing import ClassVar

from econarena.games.base import GameInfo
from econarena.games.econarena.contests import BeautyContest


class Raises(BeautyContest):
    name: ClassVar[str] = "raises"
    info: ClassVar[GameInfo] = replace(BeautyContest.info, title="raises")

    def apply(self, state, actions, rng):
        raise ZeroDivisionError("the rules divided by zero")


class Endless(BeautyContest):
    name: ClassVar[str] = "endless"
    info: ClassVar[GameInfo] = replace(BeautyContest.info, title="endless")

    def apply(self, state, actions, rng):
        return state  # the contest never moves on: every seat is asked again and again


class Nobody(BeautyContest):
    name: ClassVar[str] = "nobody"
    info: ClassVar[GameInfo] = replace(BeautyContest.info, title="nobody")

    def to_move(self, state):
        return (7,)  # a seat that is not at the table
'''

GAME_EXPERIMENT = """[experiment]
name = "g"
game = "mine.games:{cls}"
sessions = 2
runs = 1
seed = 3

[[players]]
agent = "random"
count = 3
"""


@pytest.mark.parametrize(("cls", "name", "said"), [
    ("Raises", "raises", "at step 0: ZeroDivisionError: the rules divided by zero"),
    ("Endless", "endless", "at step 2: it has not ended after 2 steps, 2 moves of one seat, past the 1 its "
                           "max_moves declares"),
    ("Nobody", "nobody", "at step 0: ValueError: to_move named (7,), not seats of the 3 at the table"),
])
def test_a_game_that_fails_ends_in_a_game_error_naming_where(cls: str, name: str, said: str, folder: Path) -> None:
    (folder / "mine" / "games.py").write_text(GAMES, encoding="utf-8")
    (folder / "g.toml").write_text(GAME_EXPERIMENT.format(cls=cls), encoding="utf-8")
    proc = subprocess.run([*EXE, "run", "g.toml", "--trust", ".", "--out", "runs", "--quiet", "--concurrency", "1"],
                          cwd=folder, env=_env(folder), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"econarena: error: the game {name} failed in lineup " in proc.stderr
    assert ", session " in proc.stderr and ", run 0, " in proc.stderr and said in proc.stderr, proc.stderr
    assert json.loads((folder / "runs" / "manifest.json").read_text(encoding="utf-8"))["status"] == "failed"


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_blocking_act_in_check_is_stopped_by_a_signal(sig: str, folder: Path) -> None:
    """SIGINT inherited as ignored (a command started with ``&`` by a script) and SIGTERM both stop `check
    --agent` while act blocks: exit 130, one line, no traceback."""
    proc = subprocess.Popen([*EXE, "check", "--trust", ".", "--agent", "mine.agents:Forever",
                             "second_price_auction"], cwd=folder,
                            env=_env(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 60
        while not (folder / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(getattr(signal, sig))
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert f"interrupted by {sig}" in err and "Traceback" not in err
