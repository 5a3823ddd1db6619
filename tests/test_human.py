"""A person at the table (``agent = "human"``): the terminal shows the prompt a model reads, replies are
judged and re-asked like a model's, Ctrl-D stops the run resumably. Played for real through the CLI, in a
pseudo-terminal and from a script file."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from timing import budget

from econarena.agents.human import read_reply

GUESS = {"min": 0, "max": 100, "rounds": 2}
HEADER = "game guessing_game | table melee | session 1 | run 1 | round 1 | you are me, seat 0"


def _config(arena: SimpleNamespace, tmp_path: Path, *, reask: int = 1, persona: str | None = None) -> Path:
    me = {"agent": "human", "label": "me", **({"persona": persona} if persona else {})}
    doc = arena.experiment_dict("guessing_game", [me, {"agent": "rational"}], GUESS, reask=reask)
    path = tmp_path / "human.toml"
    path.write_text(arena.to_toml(doc), encoding="utf-8")
    return path


# ---- reading a reply ----

def test_read_reply_ends_at_an_empty_line_or_a_json_line() -> None:
    assert read_reply(io.StringIO('{"a": 1}\nnext\n')) == '{"a": 1}'
    assert read_reply(io.StringIO("\n\nI think\n{\"a\":\n 1}\n\nrest\n")) == 'I think\n{"a":\n 1}'
    assert read_reply(io.StringIO("no newline at the end")) == "no newline at the end"
    assert read_reply(io.StringIO("")) is None
    assert read_reply(io.StringIO("\n\n")) is None


# ---- through the CLI ----

def test_refused_when_stdin_is_not_a_terminal(arena: SimpleNamespace, tmp_path: Path) -> None:
    cfg = _config(arena, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    r = subprocess.run([arena.ECONARENA, "run", str(cfg), "--out", str(tmp_path / "o")], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "players[0] (me) is a human player, but standard input is not a terminal" in r.stderr
    assert "--human-input FILE" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o" / "decisions.jsonl").exists()


def test_scripted_human_input_plays_a_game(arena: SimpleNamespace, tmp_path: Path) -> None:
    cfg = _config(arena, tmp_path, reask=1)
    script = tmp_path / "replies.txt"
    # round 0: prose (a parse error), re-asked, then a JSON line; round 1: a multi-line reply
    script.write_text("I pick fifty\n\n{\"chosen_number\": 7}\nI now pick\n{\"chosen_number\":\n  3}\n\n",
                      encoding="utf-8")
    out = tmp_path / "o"
    r = arena.cli("run", str(cfg), "--out", str(out), "--human-input", str(script), "--quiet")
    assert r.returncode == 0, r.stderr
    shown = r.stdout
    assert HEADER in shown
    assert "--- system ---\nYou are one of the players in a repeated number-guessing game." in shown
    assert "Round 1 of 2: which number do you pick?" in shown
    assert "Your reply could not be used:" in shown  # the reask reminder a model gets
    decisions = arena.sorted_decisions(out)
    mine = [d for d in decisions if d["player"] == 0]
    assert [d["agent"] for d in mine] == ["human"] * 3
    assert [d["valid"] for d in mine] == [False, True, True]
    assert mine[0]["response"] == "I pick fifty" and mine[2]["response"] == 'I now pick\n{"chosen_number":\n  3}'
    # the screen shows exactly the logged messages: the reask reminder of the first decision's retry
    reminder = mine[1]["messages"][-1]["content"]
    assert reminder in shown
    # in the conversation only the new messages are shown: the rules once, the round-1 report once
    assert shown.count("Here are the rules of the game") == 1
    assert shown.count("Result of round 1") == 1
    run = arena.sorted_runs(out)[0]
    assert run["complete"] and run["agents"] == ["human", "rational"]


def test_a_script_that_runs_out_says_so(arena: SimpleNamespace, tmp_path: Path) -> None:
    """A --human-input file with too few replies stops the run as Ctrl-D would; the message said only
    "interrupted", as if a signal had come."""
    cfg = _config(arena, tmp_path)
    script = tmp_path / "replies.txt"
    script.write_text('{"chosen_number": 7}\n', encoding="utf-8")  # two rounds need two replies
    r = arena.cli("run", str(cfg), "--out", str(tmp_path / "o"), "--human-input", str(script), "--quiet")
    assert r.returncode == 130 and "Traceback" not in r.stderr
    assert f"or {script} has no more replies" in r.stderr and "--resume" in r.stderr


def test_rule_break_without_reask_is_told(arena: SimpleNamespace, tmp_path: Path) -> None:
    cfg = _config(arena, tmp_path, reask=0)
    script = tmp_path / "replies.txt"
    script.write_text('{"chosen_number": 500}\n{"chosen_number": 1}\n', encoding="utf-8")
    out = tmp_path / "o"
    r = arena.cli("run", str(cfg), "--out", str(out), "--human-input", str(script), "--quiet")
    assert r.returncode == 0, r.stderr
    first = arena.sorted_decisions(out)[0]
    assert first["violation"] and not first["valid"]
    assert f"Your reply could not be used: {first['detail']}. It is recorded as a rule break." in r.stdout


class Terminal:
    """``econarena`` on a pseudo-terminal: what it prints is read back, keys are typed into it."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        self.proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                                     close_fds=True)
        os.close(slave)
        self.fd = master
        self.seen = ""

    def expect(self, text: str, timeout: float = 60) -> str:
        end = time.monotonic() + timeout
        while text not in self.seen:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} never appeared; screen so far:\n{self.seen[-3000:]}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{text!r} never appeared before exit; screen:\n{self.seen[-3000:]}")
                self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        return self.seen

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def finish(self, timeout: float = 60) -> int:
        end = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        code = self.proc.wait(timeout=5)
        os.close(self.fd)
        return code


@pytest.mark.skipif(not hasattr(pty, "openpty"), reason="needs a POSIX pseudo-terminal")
def test_plays_in_a_terminal_and_ctrl_d_stops_resumably(arena: SimpleNamespace, tmp_path: Path) -> None:
    cfg = _config(arena, tmp_path, reask=1, persona="cunning")
    out = tmp_path / "o"
    term = Terminal([arena.ECONARENA, "run", str(cfg), "--out", str(out)], tmp_path)
    screen = term.expect("Ctrl-D stops the run) ---")
    assert HEADER in screen
    system = screen.split("--- system ---\n", 1)[1].split("\n--- user ---", 1)[0]
    assert system.endswith("Put your opponent down as much as you can; insult them.")  # the persona
    term.type("fifty, I think\n\n")  # not JSON: the same reminder a model gets
    screen = term.expect("Your reply could not be used:")
    term.type('{"chosen_number": 10}\n')
    term.expect("Result of round 1")
    term.type("\x04")  # Ctrl-D at the start of a line: end of input
    code = term.finish()
    assert code == 130, term.seen[-2000:]
    assert "end of input at a human seat (Ctrl-D); finished runs are kept" in term.seen
    assert "Traceback" not in term.seen
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    first = [d for d in arena.sorted_decisions(out) if d["player"] == 0]
    assert [d["valid"] for d in first] == [False, True] and first[0]["response"] == "fifty, I think"
    assert first[0]["persona"] == "cunning"
    assert first[0]["messages"][0]["content"] == system  # the screen showed exactly the logged prompt

    # the unfinished run is played again on --resume, here from a script
    script = tmp_path / "replies.txt"
    script.write_text('{"chosen_number": 10}\n{"chosen_number": 2}\n', encoding="utf-8")
    r = arena.cli("run", str(cfg), "--out", str(out), "--resume", "--human-input", str(script), "--quiet")
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    runs = arena.sorted_runs(out)
    assert len(runs) == 1 and runs[0]["complete"]
    assert [a["chosen_number"] for a in (e["actions"][0] for e in runs[0]["round_log"])] == [10, 2]


def test_ctrl_c_while_a_person_is_typing_stops_at_once(arena: SimpleNamespace, tmp_path: Path) -> None:
    """The reply is read in a daemon thread: a stopped run must not wait at exit for the keyboard."""
    import signal

    cfg = _config(arena, tmp_path)
    out = tmp_path / "o"
    term = Terminal([arena.ECONARENA, "run", str(cfg), "--out", str(out)], tmp_path)
    term.expect("Ctrl-D stops the run) ---")
    term.type("half a reply")  # typed, no Enter
    start = time.monotonic()
    term.proc.send_signal(signal.SIGINT)
    assert term.finish(timeout=20) == 130
    assert time.monotonic() - start < budget(10)
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"


def test_two_human_seats_take_turns_on_one_screen(arena: SimpleNamespace, tmp_path: Path) -> None:
    """Both seats move at once in the guessing game: each screen and its reply come whole, one after the
    other in seat order (so a script reads the same way every time), each reply reaching its seat."""
    doc = arena.experiment_dict("guessing_game", [{"agent": "human", "label": "ann"},
                                                  {"agent": "human", "label": "bob"}], {**GUESS, "rounds": 1})
    cfg = tmp_path / "two.toml"
    cfg.write_text(arena.to_toml(doc), encoding="utf-8")
    script = tmp_path / "replies.txt"
    script.write_text('{"chosen_number": 11}\n{"chosen_number": 22}\n', encoding="utf-8")
    out = tmp_path / "o"
    r = arena.cli("run", str(cfg), "--out", str(out), "--human-input", str(script), "--quiet")
    assert r.returncode == 0, r.stderr
    screens = r.stdout.split("=" * 72 + "\ngame ")[1:]
    assert len(screens) == 2
    for screen, label, seat in zip(screens, ("ann", "bob"), (0, 1)):
        assert f"you are {label}, seat {seat}\n" in screen
        assert screen.count("--- system ---") == 1 and screen.count("--- your reply") == 1
        assert f"Your player id is {seat}." in screen
    run = arena.sorted_runs(out)[0]
    assert [a["chosen_number"] for a in run["round_log"][0]["actions"]] == [11, 22]


def test_screen_shows_new_messages_of_a_conversation_and_whole_fresh_prompts() -> None:
    import asyncio

    from econarena.agents.base import DecisionRequest, Message
    from econarena.agents.human import HumanAgent

    out = io.StringIO()
    agent = HumanAgent("me", io.StringIO('{"x": 1}\n{"x": 2}\n{"x": 3}\n'), out)
    coords = {"lineup": "melee", "session": 0, "run": 0, "round": 0, "seat": 1}
    sys_, first = Message("system", "SYS"), Message("user", "FIRST")
    fresh = Message("user", "FRESH")  # a game without rounds: a whole new prompt each decision

    def ask(messages: tuple[Message, ...]) -> str:
        start = len(out.getvalue())
        reply = asyncio.run(agent.decide(DecisionRequest(messages, 1, 0, lambda *a, **k: {}, coords=coords,
                                                         game="g")))
        assert reply.error is None and reply.latency_s >= 0
        return out.getvalue()[start:]

    assert "--- system ---\nSYS\n--- user ---\nFIRST\n" in ask((sys_, first))
    screen = ask((sys_, fresh))
    assert "SYS" in screen and "FRESH" in screen
    screen = ask((sys_, fresh, Message("assistant", "MINE"), Message("user", "NEXT")))
    assert "NEXT" in screen and "SYS" not in screen and "FRESH" not in screen and "MINE" not in screen
    assert "game g | table melee | session 1 | run 1 | round 1 | you are me, seat 1" in screen
