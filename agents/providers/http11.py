"""A minimal keep-alive HTTP/1.1 client for one origin: POST bytes, get (status, headers, body bytes).

Why our own: against a fast OpenAI-compatible server, a general client's per-request machinery (aiohttp's
session, request and response objects, header multidicts, cookie jars, trace hooks) is most of the CPU a call
costs in this process, and a run makes hundreds of thousands of the same request to the same origin. This
client does only that request: the head is rendered once per endpoint, a connection is an
``asyncio.Protocol`` whose reply is parsed as it arrives by ``httptools`` (llhttp, the parser of Node.js and
uvicorn: lengths, chunks, interim replies and every malformed form are its judgement, not ours), and an idle
connection is reused for the next call. Anything it does not do (a proxy, a redirect) is left to the caller,
which sends such a request through aiohttp instead (``openai_lean.LeanClient``).

What a server sends is bounded as it arrives: one reply may take at most :data:`REPLY_BYTES` bytes on the wire
(head, chunk framing and body together) and as many decoded (a gzip or deflate body is inflated step by step,
never past the bound); a ``Content-Length`` above it is refused from the head. A reply is complete only when
its framing says so, or, for a body that runs until close, on a clean end of stream (a reset is a lost
connection, not a short answer).

Errors are the standard library's: ``ConnectionRefusedError`` from the connect, :class:`ServerDisconnected`
(a ``ConnectionResetError``) when the server closes before its reply is complete, :class:`StaleConnection`
when it was a kept-alive connection closed before any byte of a reply came (the caller counts the resend as
an attempt), ``TimeoutError`` when the connect takes longer than its bound, :class:`BadReply` (a
``ConnectionError``) for a reply llhttp refuses, and :class:`ReplyTooLarge` for one past the bound.
"""

from __future__ import annotations

import asyncio
import re
import time
import zlib
from collections import deque
from typing import Any, cast

import httptools

# An idle connection older than this is closed, not reused: below the 5 s keep-alive of uvicorn and Node.js, so
# we give a connection up before the server does; a server's own ``Keep-Alive: timeout=N`` shortens it.
KEEPALIVE_S = 4.0
KEEPALIVE_MARGIN_S = 1.0  # how long before a server's announced keep-alive timeout a connection is given up
REPLY_BYTES = 32 * 2**20  # one reply: at most this many bytes on the wire, and at most this many decoded
HEAD_BYTES = 65536  # the status line and headers of one reply
# a host with several addresses (IPv6 and IPv4): the next is tried after this long, not after the first one's
# connect timed out (RFC 8305's recommended delay)
HAPPY_EYEBALLS_S = 0.25


class ServerDisconnected(ConnectionResetError):
    """The server closed the connection before its reply was complete."""


class StaleConnection(ServerDisconnected):
    """A kept-alive connection the server had closed (nothing of a reply came): sending again is safe, and is
    counted by the caller as an attempt of its own (under the retry count and the cost cap)."""

    resend_now = True


class BadReply(ConnectionError):
    """What came back is not an HTTP/1.x reply (judged as a connection error, as aiohttp's parser errors were)."""


class ReplyTooLarge(ValueError):
    """The reply passed :data:`REPLY_BYTES` (on the wire or decoded): refused as it arrived, never retried."""

    too_large = True


_KEEPALIVE_TIMEOUT = re.compile(r"timeout\s*=\s*(\d+(?:\.\d+)?)", re.I)


class _Conn(asyncio.Protocol):
    """One TCP (or TLS) connection: sends a request, parses its reply, says whether it may be reused."""

    __slots__ = ("transport", "parser", "waiter", "closed", "reusable", "idle_since", "keepalive_s", "received",
                 "status", "headers", "body", "head_done", "complete", "framed", "wire", "decoder", "error",
                 "limit", "_name")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[tuple[int, dict[str, str], bytes]] | None = None
        self.closed = False
        self.reusable = True
        self.idle_since = 0.0
        self.keepalive_s = KEEPALIVE_S
        self.received = False  # any byte of a reply to the request in flight came
        self.limit = REPLY_BYTES
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.head_done = False
        self.complete = False
        self.framed = False  # the reply says where it ends (a length or chunks); else it runs until close
        self.wire = 0
        self.decoder: Any = None
        self.error: BaseException | None = None
        self._name = ""

    # -- asyncio.Protocol ------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream connection's is a Transport

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.complete:  # bytes nobody asked for: out of step, never reuse it
            self.reusable = False
            return
        self.received = True
        self.wire += len(data)
        error: BaseException | None = None
        try:
            if self.wire > self.limit:
                raise ReplyTooLarge(f"the reply passed {self.limit} bytes on the wire (the bound on one reply)")
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            error = self.error or BadReply("the reply could not be read")
        except httptools.HttpParserError as exc:
            error = BadReply(f"malformed HTTP reply: {exc}")
        except ReplyTooLarge as exc:
            error = exc
        if self.complete:  # whatever followed the reply (parsed or not) only makes the connection unusable
            if error is not None:
                self.reusable = False
            self._finish()
        elif error is not None:
            self._give_up(error)
        elif not self.head_done and self.wire > HEAD_BYTES:
            self._give_up(BadReply(f"reply head longer than {HEAD_BYTES // 1024} KiB"))

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if exc is None and self.head_done and not self.framed and not self.complete:
            self.complete = True  # a body that runs until close, ended cleanly
            self._finish()
            return
        if not self.received:
            self._fail(ServerDisconnected(f"Server disconnected{f' ({exc})' if exc else ''}"))
            return
        self._fail(ServerDisconnected(f"Server disconnected before the reply was complete"
                                      f"{f' ({exc})' if exc else ''}"))

    # -- httptools callbacks ------------------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head_done:  # a trailer after the chunks: nothing we read (and no string to grow without end)
            return
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1").strip()
        headers = self.headers
        if self.complete:  # a second reply after ours: out of step
            self.reusable = False
            return
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        if self.complete:
            self.reusable = False
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim reply (100 Continue): the real one follows
            self.headers = {}
            return
        self.status, self.head_done = status, True
        headers = self.headers
        length = headers.get("content-length")
        if length is not None:
            self.framed = True
            if int(length.partition(",")[0]) > self.limit:  # llhttp has checked it is digits
                self.error = ReplyTooLarge(f"the reply's Content-Length {length[:24]} is past the bound on one "
                                           f"reply ({self.limit} bytes)")
                raise self.error
        elif "chunked" in headers.get("transfer-encoding", "").lower() or status in (204, 304):
            self.framed = True
        encoding = headers.get("content-encoding", "").lower()
        if encoding in ("gzip", "deflate"):  # not asked for (no Accept-Encoding), but read if sent
            self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
            self._name = encoding
        if not self.parser.should_keep_alive():
            self.reusable = False
        elif "keep-alive" in headers:
            found = _KEEPALIVE_TIMEOUT.search(headers["keep-alive"])
            if found:
                self.keepalive_s = min(KEEPALIVE_S, max(0.0, float(found.group(1)) - KEEPALIVE_MARGIN_S))

    def on_body(self, data: bytes) -> None:
        if not self.head_done or self.complete:
            return
        body = self.body
        if self.decoder is None:
            body += data
            return
        try:
            body += self.decoder.decompress(data, self.limit - len(body) + 1)
        except zlib.error as exc:
            self.error = BadReply(f"cannot decode a {self._name} body: {exc}")
            raise self.error from None
        if len(body) > self.limit or self.decoder.unconsumed_tail:
            self.error = ReplyTooLarge(f"the reply's {self._name} body decodes past the bound on one reply "
                                       f"({self.limit} bytes)")
            raise self.error

    def on_message_complete(self) -> None:
        if self.complete:
            self.reusable = False
        elif self.head_done:
            self.complete = True

    # -- the outcome ----------------------------------------------------------------------------------
    def _finish(self) -> None:
        waiter = self.waiter
        self.waiter = None
        status, headers, body, decoder = self.status, self.headers, self.body, self.decoder
        self._reset()
        if waiter is None or waiter.done():
            return
        if decoder is not None and not decoder.eof:
            self.reusable = False
            waiter.set_exception(BadReply(f"cannot decode a {headers.get('content-encoding')} body: it ends "
                                          "before its stream does"))
            return
        waiter.set_result((status, headers, bytes(body)))

    def _give_up(self, exc: BaseException) -> None:
        self.reusable = False
        self._fail(exc)
        if self.transport is not None:
            self.transport.close()

    def _fail(self, exc: BaseException) -> None:
        waiter = self.waiter
        self.waiter = None
        self._reset()
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


class Origin:
    """Keep-alive connections to one ``host:port`` (TLS when ``ssl`` is a context); at most ``limit`` idle."""

    def __init__(self, host: str, port: int, ssl: Any = None, limit: int = 16, connect_timeout: float = 60.0) -> None:
        self.host, self.port, self.ssl = host, port, ssl
        self.limit = limit
        self.connect_timeout = connect_timeout
        self.idle: deque[_Conn] = deque()
        self.closed = False

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(
            loop.create_connection(_Conn, self.host, self.port, ssl=self.ssl,
                                   server_hostname=self.host if self.ssl else None,
                                   happy_eyeballs_delay=HAPPY_EYEBALLS_S), self.connect_timeout)
        return conn

    async def post(self, head: bytes, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send ``head`` (request line and headers, ending in the empty line) and ``body`` once; the reply.

        A kept-alive connection the server closed before any of its reply came raises
        :class:`StaleConnection`: the request is never sent again here, where no attempt count or cap sees it."""
        if self.closed:
            raise ServerDisconnected("the connection pool is closed")
        now = time.monotonic()
        conn = None
        while self.idle:
            c = self.idle.pop()  # the most recently used: the least likely to have been closed by the server
            if not c.closed and c.reusable and now - c.idle_since < c.keepalive_s:
                conn = c
                break
            if c.transport is not None:
                c.transport.close()
        reused = conn is not None
        if conn is None:
            conn = await self._connect()
        try:
            return await self._send(conn, head, body)
        except ServerDisconnected as exc:
            if reused and not conn.received:
                raise StaleConnection(f"a kept-alive connection was closed by the server before it answered "
                                      f"({exc})") from None
            raise

    async def _send(self, conn: _Conn, head: bytes, body: bytes) -> tuple[int, dict[str, str], bytes]:
        transport = conn.transport
        assert transport is not None
        if conn.closed:  # lost between the connect and now: a write would vanish and the reply never come
            raise ServerDisconnected("Server disconnected before the request was sent")
        waiter = asyncio.get_running_loop().create_future()
        conn.waiter = waiter
        conn.received = False
        conn.wire = 0
        transport.write(head + body)
        try:
            reply = await waiter
        except BaseException:
            conn.reusable = False
            transport.close()
            raise
        if conn.reusable and not conn.closed and not self.closed and len(self.idle) < self.limit:
            conn.idle_since = time.monotonic()
            self.idle.append(conn)
        else:
            transport.close()
        return reply

    def close(self) -> None:
        self.closed = True
        while self.idle:
            c = self.idle.pop()
            if c.transport is not None:
                c.transport.close()
