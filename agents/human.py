"""A person at the terminal takes a seat: they read exactly what a model reads and type the reply.

Why it is an ordinary agent: the Host renders, judges, re-asks and logs a person's reply on the same path
as a model's, so a researcher playing against a model sees the same prompt, the same reply format and the
same validation messages (with ``reask``), and the run directory holds their decisions like any other.

Input: a reply ends with an empty line, or is a single line that parses as JSON by itself. End of input
(Ctrl-D at the start of a line, or the end of a ``--human-input`` file) stops the whole run as Ctrl-C does:
finished runs are kept and ``--resume`` continues. One decision is on screen at a time, however many human
seats or concurrent games there are: a process-wide queue serialises them in the Host's order (the Host plays
one session at a time when a person sits at the table, so a script file meets the same decisions in the same
order every time). Every line read is bounded (``MAX_LINE_CHARS``, a reply ``MAX_REPLY_CHARS``): input that
never ends a line (``--human-input /dev/zero``) stops the run with the line's number, in constant memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TextIO

from .base import DecisionRequest, Message, Reply

RULE = "=" * 72


class _Screen:
    """One terminal shared by every human seat: jobs run one at a time, in the order they were asked for.

    Each job runs in a daemon thread (a run stopped by Ctrl-C must not wait at exit for a thread that still
    blocks on the keyboard). Tickets are drawn on the event loop, so the order is the Host's order (seat
    order within a round), and a script file given with --human-input is read the same way every time.
    """

    def __init__(self) -> None:
        self._tickets = itertools.count()
        self._serving = 0
        self._turn = threading.Condition()

    def submit(self, job: Callable[[], None], name: str) -> None:
        ticket = next(self._tickets)

        def run() -> None:
            with self._turn:
                self._turn.wait_for(lambda: self._serving == ticket)
            try:
                job()
            finally:
                with self._turn:
                    self._serving += 1
                    self._turn.notify_all()

        threading.Thread(target=run, name=name, daemon=True).start()


SCREEN = _Screen()


_OBJECT = json.JSONDecoder()


def _is_complete(lines: list[str]) -> bool:
    """A single line that is JSON on its own, or that begins with a whole JSON object, ends the reply without
    the empty line. Why the second: a line such as ``{"bid": 5}  # first`` (or with a stray NUL after it) was
    no JSON line, so the next reply's line joined it and the pair was judged as the second's number."""
    if len(lines) != 1:
        return False
    try:
        json.loads(lines[0])
    except ValueError:
        text = lines[0].lstrip()
        if not text.startswith("{"):
            return False
        try:
            obj, _ = _OBJECT.raw_decode(text)
        except (ValueError, RecursionError):
            return False
        return isinstance(obj, dict)
    return True


MAX_LINE_CHARS = 65_536  # a line of a reply; a person's message is at most a few thousand characters
MAX_REPLY_CHARS = 262_144  # a whole reply, its lines together


class HumanInputError(KeyboardInterrupt):
    """Input a person or a script gave that is no reply (a line without end, a reply too long): the run stops
    as on Ctrl-C (finished runs are kept, ``--resume`` continues once the input is fixed) and the command
    exits 2 with this message. A KeyboardInterrupt so that no layer takes it for a rule break or an API error."""


# lines read so far per input stream (the seats share one), for error messages
_LINES: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _count(stream: TextIO) -> int:
    try:
        n = _LINES.get(stream, 0) + 1
        _LINES[stream] = n
    except TypeError:  # a stream that takes no weak reference: no line numbers
        return 0
    return n


def read_reply(stream: TextIO) -> str | None:
    """Lines up to an empty line (or one JSON line); None at end of input before anything was typed.

    End of input after some lines returns what was typed, so a file whose last reply has no trailing
    empty line still plays it. A line longer than ``MAX_LINE_CHARS`` or a reply longer than
    ``MAX_REPLY_CHARS`` raises :class:`HumanInputError` (what was read of it is not kept)."""
    lines: list[str] = []
    size = 0
    while True:
        line = stream.readline(MAX_LINE_CHARS + 1)
        number = _count(stream)
        if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
            raise HumanInputError(f"input line {number} is longer than {MAX_LINE_CHARS:,} characters (is it a "
                                  "text file of replies, each ending with an empty line?)")
        if not line:  # end of input
            return "\n".join(lines) if lines else None
        size += len(line)
        if size > MAX_REPLY_CHARS:
            raise HumanInputError(f"the reply ending at input line {number} is longer than {MAX_REPLY_CHARS:,} "
                                  "characters; end each reply with an empty line")
        line = line.rstrip("\r\n")
        if not line.strip():
            if lines:
                return "\n".join(lines)
            continue  # blank lines before a reply are not a reply
        lines.append(line)
        if _is_complete(lines):
            return lines[0]


class HumanInputEnded(KeyboardInterrupt):
    """The person ended input (Ctrl-D): the run stops as on Ctrl-C and can be resumed."""


class HumanAgent:
    """Shows each decision's messages and reads the reply from ``stdin`` (a terminal or a script file).

    In a conversation only the messages new since this seat's previous decision are shown (the person
    has the rest on screen), never the person's own earlier replies.
    """

    kind = "human"

    def __init__(self, label: str, stdin: TextIO, stdout: TextIO, echo: bool = False) -> None:
        self.label = label
        self.model: str | None = None
        self.stdin, self.stdout = stdin, stdout
        self.echo = echo  # print the reply read (a script file is not echoed by a terminal)
        self._shown: dict[tuple[Any, ...], tuple[Message, ...]] = {}  # per conversation, what was shown

    def _header(self, request: DecisionRequest) -> str:
        """Where this decision is, counted from 1 as the prompts count (the logs count from 0)."""
        c = request.coords

        def nth(key: str) -> str:
            return f"{key} {c[key] + 1}" if isinstance(c.get(key), int) else ""

        where = [f"game {request.game}" if request.game else "",
                 f"table {c['lineup']}" if "lineup" in c else "", nth("session"), nth("run"), nth("round")]
        seat = f"you are {self.label}, seat {request.player}"
        return f"{RULE}\n{' | '.join(w for w in where if w)} | {seat}\n{RULE}"

    def _screen(self, request: DecisionRequest) -> str:
        c = request.coords
        key = (c.get("lineup"), c.get("session"), c.get("run"), request.player)
        before = self._shown.get(key, ())
        # the conversation goes on: show what is new; a fresh prompt (a game without rounds): all of it
        start = len(before) if request.messages[:len(before)] == before else 0
        self._shown[key] = request.messages
        parts = [self._header(request)]
        for m in request.messages[start:]:
            if m.role == "assistant":
                continue  # the person's own earlier reply
            parts.append(f"--- {m.role} ---\n{m.content}")
        parts.append("--- your reply (end with an empty line; a single JSON line ends at once; "
                     "Ctrl-D stops the run) ---")
        return "\n".join(parts) + "\n"

    def _turn(self, request: DecisionRequest) -> tuple[str | None, float]:
        self.stdout.write(self._screen(request))
        self.stdout.flush()
        start = time.perf_counter()
        text = read_reply(self.stdin)
        if self.echo and text is not None:  # bytes that were no UTF-8 (kept as lone surrogates) shown escaped
            self.stdout.write(text.encode("utf-8", "backslashreplace").decode("utf-8") + "\n")
        self.stdout.flush()
        return text, time.perf_counter() - start

    async def decide(self, request: DecisionRequest) -> Reply:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[tuple[str | None, float]] = loop.create_future()

        def settle(result: tuple[str | None, float] | None, exc: BaseException | None) -> None:
            if not done.done():
                done.set_result(result) if exc is None else done.set_exception(exc)  # type: ignore[arg-type]  # no exc: a result

        def work() -> None:
            result, error = None, None
            try:
                result = self._turn(request)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
                error = exc
            # the run may have stopped (Ctrl-C) while the person typed: its loop is closed then
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, result, error)

        SCREEN.submit(work, f"human-{self.label}")
        text, seconds = await done
        if text is None:
            raise HumanInputEnded(f"{self.label}: end of input")
        return Reply(text=text, latency_s=seconds)

    def notify(self, text: str) -> None:
        """A line the Host wants the person to read (a reply recorded as a rule break, no re-ask left);
        queued on the screen, so the event loop never waits for another seat's typing."""

        def show() -> None:
            self.stdout.write(f"--- note ---\n{text}\n")
            self.stdout.flush()

        SCREEN.submit(show, f"human-{self.label}-note")
