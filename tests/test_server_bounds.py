"""Every value a server sends is bounded, on both request paths of agent "openai" (the lean client,
agents/providers/http11.py, and the SDK's transport): a reply's size on the wire and decoded, its framing,
the waits it asks for and the token counts it reports. Each hostile reply is written by a real TCP server on
127.0.0.1 and sent through both paths, which must accept and refuse the same replies.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import socket
import struct
import time
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from test_openai_lean import BODY, RawServer, calls_in_one_loop, reply, settings

from econarena.agents import calls
from econarena.agents.calls import SPEND, CallError
from econarena.agents.llm import close_all
from econarena.agents.providers import http11
from econarena.formats.prices import Budget

pytestmark = pytest.mark.timeout(60)

LIMIT = 1 << 20  # the bound on one reply, made small so the endless replies below end in milliseconds
OK = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(calls, "BACKOFF_BASE_S", 0.01)
    monkeypatch.setattr(http11, "REPLY_BYTES", LIMIT)
    monkeypatch.setattr(calls, "_WARNED", set())  # each test sees the first warning of each field
    monkeypatch.setenv("OPENAI_API_KEY", "sk-bounds-test-0123456789")
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    yield
    asyncio.run(close_all())


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), not a clean end of stream."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def hostile(head: bytes, body: bytes = b"", endless: bytes = b"", reset: bool = False) -> RawServer:
    """A server that answers each request with ``head`` and ``body``, then writes ``endless`` until the client
    goes, or resets the connection (``reset``)."""

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await srv.read_request(reader) is not None:
            writer.write(head + body)
            await writer.drain()
            if reset:
                await asyncio.sleep(0.05)
                _reset(writer)
                return
            if endless:
                deadline = time.monotonic() + 20  # never past the test's own bound, whatever the client does
                while time.monotonic() < deadline:
                    writer.write(endless)
                    await writer.drain()
                return

    return RawServer(handler)


def _bomb(kind: str) -> bytes:
    data = b"0" * (8 * LIMIT)  # 8 MiB decoded from a few KiB on the wire
    if kind == "gzip":
        return gzip.compress(data)
    return zlib.compress(data)


# (name, server, what the call must end in: "ok" or a phrase of the refusal, or phrases split by "|")
HOSTILE: dict[str, tuple[Any, str]] = {
    "content-length 10^18": (lambda: hostile(f"{OK}Content-Length: {10**18}\r\n\r\n".encode(), BODY),
                             "reply too large"),
    "endless chunks": (lambda: hostile(f"{OK}Transfer-Encoding: chunked\r\n\r\n".encode(),
                                       endless=b"4000\r\n" + b"x" * 0x4000 + b"\r\n"), "reply too large"),
    "endless http/1.0 body": (lambda: hostile(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n",
                                              endless=b"x" * 65536), "reply too large"),
    "gzip bomb": (lambda: hostile(f"{OK}Content-Encoding: gzip\r\nContent-Length: {len(_bomb('gzip'))}\r\n\r\n"
                                  .encode(), _bomb("gzip")), "reply too large"),
    "deflate bomb": (lambda: hostile(f"{OK}Content-Encoding: deflate\r\nContent-Length: "
                                     f"{len(_bomb('deflate'))}\r\n\r\n".encode(), _bomb("deflate")),
                     "reply too large"),
    "gzip under the bound": (lambda: hostile(f"{OK}Content-Encoding: gzip\r\nContent-Length: "
                                             f"{len(gzip.compress(BODY))}\r\n\r\n".encode(), gzip.compress(BODY)),
                             "ok"),
    "superscript length": (lambda: hostile(f"{OK}Content-Length: ".encode() + "²".encode() + b"\r\n\r\n", BODY),
                           "connection error"),
    "negative chunk size": (lambda: hostile(f"{OK}Transfer-Encoding: chunked\r\n\r\n".encode(), b"-2\r\nxx\r\n"),
                            "connection error"),
    "hex-prefixed chunk size": (lambda: hostile(f"{OK}Transfer-Encoding: chunked\r\n\r\n".encode(),
                                                b"0x3\r\nabc\r\n0\r\n\r\n"), "connection error"),
    "underscored chunk size": (lambda: hostile(f"{OK}Transfer-Encoding: chunked\r\n\r\n".encode(),
                                               b"1_0\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n"), "connection error"),
    "endless header line": (lambda: hostile(f"{OK}X-Pad: ".encode(), endless=b"a" * 65536), "connection error"),
    "endless interim replies": (lambda: hostile(b"", endless=b"HTTP/1.1 100 Continue\r\n\r\n" * 4096),
                                "connection"),
    "a chunk of 2^64 - 1 bytes": (lambda: hostile(f"{OK}Transfer-Encoding: chunked\r\n\r\n".encode(),
                                                  b"ffffffffffffffff\r\n", endless=b"x" * 65536), "reply too large"),
    "endless trailers": (lambda: hostile(f"{OK}Transfer-Encoding: chunked\r\n\r\n".encode(), b"1\r\nx\r\n0\r\n",
                                         endless=b"X-Trailer: y\r\n" * 4096), "reply too large|too many headers"),
    "reset mid-body (until close)": (lambda: hostile(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n",
                                                     BODY[:20], reset=True), "connection"),
    "reset mid-body (length)": (lambda: hostile(f"{OK}Content-Length: {len(BODY)}\r\n\r\n".encode(), BODY[:20],
                                                reset=True), "connection"),
}


def _outcome(path: str, make: Any, monkeypatch: pytest.MonkeyPatch, timeout_s: float = 10.0) -> str:
    monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", path)
    srv = make()
    try:
        t0 = time.monotonic()
        try:
            (g,) = calls_in_one_loop(settings(srv.url, max_retries=0, timeout_s=timeout_s))
        except CallError as exc:
            return f"refused in {time.monotonic() - t0:.1f} s: {exc}"
        return "ok" if g.text == "7" else f"wrong text {g.text!r}"
    finally:
        srv.stop()


# aiohttp reads interim replies in a loop of its own, before our transport sees the reply: on the SDK path an
# endless stream of them is refused by the attempt's deadline (timeout_s), not as it arrives (docs/trust.md)
BY_DEADLINE_ON_THE_SDK_PATH = {"endless interim replies"}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_both_paths_accept_and_refuse_the_same_hostile_reply(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    make, expected = HOSTILE[case]
    slow = case in BY_DEADLINE_ON_THE_SDK_PATH
    lean, sdk = (_outcome(path, make, monkeypatch, 2.0 if slow else 10.0) for path in ("lean", "sdk"))
    for path, outcome in (("lean", lean), ("sdk", sdk)):
        if expected == "ok":
            assert outcome == "ok"
        elif path == "sdk" and slow:
            assert outcome.startswith("refused in ") and "timed out after 2 s" in outcome, outcome
        else:
            assert outcome.startswith("refused in ") and any(x in outcome.lower() for x in expected.split("|")), \
                outcome
            assert float(outcome.split()[2]) < (1 if slow else 5)  # as the bytes came, long before timeout_s
    if expected == "reply too large":
        assert str(LIMIT) in lean and str(LIMIT) in sdk  # the bound is named on both paths


# -- waits ---------------------------------------------------------------------------------------------------

def _rate_limited(retry_after: str, header: str = "Retry-After") -> RawServer:
    body = json.dumps({"error": {"message": "slow down"}}).encode()
    return hostile(f"HTTP/1.1 429 Too Many Requests\r\n{header}: {retry_after}\r\nContent-Length: {len(body)}"
                   "\r\n\r\n".encode(), body)


@pytest.mark.parametrize("path", ["lean", "sdk"])
@pytest.mark.parametrize(("value", "header", "said"), [
    ("1e18", "Retry-After", "1e+18 s"),
    ("inf", "Retry-After", "forever"),
    ("Sat, 01 Jan 2100 00:00:00 GMT", "Retry-After", " s, more than"),
    ("9e20", "retry-after-ms", "9e+17 s"),
])
def test_a_wait_past_the_run_bounds_is_refused_at_once_and_said(path: str, value: str, header: str, said: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", path)
    srv = _rate_limited(value, header)
    try:
        s = settings(srv.url, max_retries=3, retry_max_wait_s=1.5)

        async def go() -> tuple[str, float, float]:
            from econarena.agents.base import Message
            from econarena.agents.providers.openai import OpenAIProvider

            p = OpenAIProvider(s)
            t0 = time.monotonic()
            try:
                await p.generate([Message("user", "x")], s)
            except CallError as exc:
                message = str(exc)
            took = time.monotonic() - t0
            pause = p._state().gate.cool_until - time.monotonic()  # what later calls would wait
            await p.aclose()
            return message, took, pause

        message, took, pause = asyncio.run(go())
        assert took < 1.0 and pause <= 1.5  # gave up at once; the endpoint paused within retry_max_wait_s
        assert "the server asked to wait" in message and said in message and "retry_max_wait_s = 1.5" in message
        assert len(srv.requests) == 1
    finally:
        srv.stop()


def test_a_wait_within_the_bounds_is_obeyed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clip takes nothing from an honest Retry-After: 0.3 s is waited, then the call succeeds."""
    answers = [b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0.3\r\nContent-Length: 0\r\n\r\n", reply()]

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await srv.read_request(reader) is not None:
            writer.write(answers[min(len(srv.requests), 2) - 1])
            await writer.drain()

    srv = RawServer(handler)
    try:
        t0 = time.monotonic()
        (g,) = calls_in_one_loop(settings(srv.url, max_retries=2, retry_max_wait_s=5.0))
        assert g.text == "7" and 0.3 <= time.monotonic() - t0 < 2.0
    finally:
        srv.stop()


# -- token counts --------------------------------------------------------------------------------------------

def _usage_server(usage: Any) -> RawServer:
    body = json.dumps({"model": "m", "choices": [{"message": {"content": "7"}, "finish_reason": "stop"}],
                       "usage": usage}).encode()
    return hostile(f"{OK}Content-Length: {len(body)}\r\n\r\n".encode(), body)


@pytest.mark.parametrize(("usage", "counted"), [
    ({"prompt_tokens": 12, "completion_tokens": 3}, (12, 3)),
    ({"prompt_tokens": 12.0, "completion_tokens": 3.0}, (12, 3)),
    ({"prompt_tokens": -30000, "completion_tokens": 3}, (None, 3)),
    ({"prompt_tokens": 10**30, "completion_tokens": 10**9 + 1}, (None, None)),
    ({"prompt_tokens": 1.5, "completion_tokens": True}, (None, None)),
    ({"prompt_tokens": "12", "completion_tokens": 10**9}, (None, 10**9)),
])
def test_token_counts_are_whole_numbers_in_range_or_unknown_with_a_warning(
        usage: dict[str, Any], counted: tuple[Any, Any], caplog: pytest.LogCaptureFixture) -> None:
    srv = _usage_server(usage)
    try:
        with caplog.at_level(logging.WARNING, logger="econarena.agents.calls"):
            (g,) = calls_in_one_loop(settings(srv.url))
        assert (g.tokens_in, g.tokens_out) == counted
        warned = [r.getMessage() for r in caplog.records if "is not a token count" in r.getMessage()]
        assert len(warned) == sum(x is None for x in counted)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="econarena.agents.calls"):
            calls_in_one_loop(settings(srv.url), 2)  # the same fields again: counted unknown, not said again
        assert not [r for r in caplog.records if "is not a token count" in r.getMessage()]
    finally:
        srv.stop()


def test_an_unknown_count_settles_a_cap_at_its_worst_case() -> None:
    """A reply whose usage is negative settles the reservation at the attempt's worst case, never below 0:
    with 1 USD per million tokens in and out, the prompt bound (its bytes + 8 per message + 32) and max_tokens."""
    srv = _usage_server({"prompt_tokens": -30000, "completion_tokens": -5})
    budget = Budget(1.0, {"m": (1.0, 1.0)})
    try:
        s = settings(srv.url, max_tokens=100)
        token = SPEND.set((budget, "P"))
        try:
            (g,) = calls_in_one_loop(s)
        finally:
            SPEND.reset(token)
        assert (g.tokens_in, g.tokens_out) == (None, None)
        assert budget.reserved == 0.0
        # "Bid?": 4 bytes + 8 per message + 32 per request = 44 in, 100 out: 144 tokens at 1 USD per million
        assert budget.pending == pytest.approx(144 / 1e6)
    finally:
        srv.stop()


# -- what is sent ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["lean", "sdk"])
def test_a_base_url_query_is_sent_as_typed(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A signed URL's query (an escaped slash, a repeated key, a bare flag, a plus) reaches the server byte for
    byte: parsed and re-encoded it was ``sig=a%2Fb&x=2&flag=`` and its signature failed."""
    monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", path)
    srv = hostile(reply(), b"")
    query = "sig=a%2Fb%3D&x=1&x=2&flag&q=a+b~"
    try:
        (g,) = calls_in_one_loop(settings(f"{srv.url}?{query}"))
        assert g.text == "7"
        sent = srv.requests[0][0]
        if path == "sdk":  # aiohttp takes the URL as a string and writes an escape of a character legal in a
            sent = sent.replace("sig=a/b", "sig=a%2Fb")  # query as the character: the same query to any server
        assert sent == f"POST /v1/chat/completions?{query} HTTP/1.1"
    finally:
        srv.stop()


def test_no_hostile_reply_prints_an_asyncio_traceback(monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """A parser error is the call's error, not a 'Fatal error: protocol.data_received() call failed' of the
    event loop blaming the server's death."""
    with caplog.at_level(logging.DEBUG, logger="asyncio"):
        for case in ("negative chunk size", "superscript length", "gzip bomb", "endless chunks"):
            assert _outcome("lean", HOSTILE[case][0], monkeypatch).startswith("refused")
    assert [(r.getMessage(), r.exc_text) for r in caplog.records  # the client's loop (the servers run in threads)
            if r.name == "asyncio" and r.levelno >= logging.WARNING and r.threadName == "MainThread"] == []


@pytest.mark.parametrize(("keepalive", "connections"), [(None, 1), ("timeout=1, max=100", 2), ("timeout=30", 1)])
def test_an_idle_connection_is_given_up_before_the_server_s_keep_alive(keepalive: str | None, connections: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two calls 0.1 s apart: reused, unless the server announced a keep-alive that ends within a second of
    that (``timeout=1``: given up after 1 - 1 = 0 s), so the request never races the server's close."""
    monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", "lean")  # our own pool's expiry
    head = ("Keep-Alive: " + keepalive,) if keepalive else ()

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await srv.read_request(reader) is not None:
            writer.write(reply(headers=head))
            await writer.drain()

    srv = RawServer(handler)
    s = settings(srv.url)

    async def two() -> None:
        from econarena.agents.base import Message
        from econarena.agents.providers.openai import OpenAIProvider

        p = OpenAIProvider(s)
        try:
            for _ in range(2):
                assert (await p.generate([Message("user", "x")], s)).text == "7"
                await asyncio.sleep(0.1)
        finally:
            await p.aclose()

    try:
        asyncio.run(two())
        assert srv.connections == connections and len(srv.requests) == 2
    finally:
        srv.stop()
