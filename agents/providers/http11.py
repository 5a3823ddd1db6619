"""A minimal keep-alive HTTP/1.1 client for one origin: POST bytes, get (status, headers, body bytes).

Why our own: against a fast OpenAI-compatible server, a general client's per-request machinery (aiohttp's
session, request and response objects, header multidicts, cookie jars, trace hooks) is most of the CPU a call
costs in this process, and a run makes hundreds of thousands of the same request to the same origin. This
client does only that request: the head is rendered once per endpoint, a connection is an
``asyncio.Protocol`` that parses the reply as it arrives (``Content-Length``, chunked, or until close), and an
idle connection is reused for the next call. Anything it does not do (a proxy, a redirect) is left to the
caller, which sends such a request through aiohttp instead (``openai_lean.LeanClient``).

Errors are the standard library's: ``ConnectionRefusedError`` from the connect, :class:`ServerDisconnected`
(a ``ConnectionResetError``) when the server closes before its reply is complete, ``TimeoutError`` when the
connect takes longer than its bound, :class:`BadReply` (a ``ConnectionError``) for a reply that is not HTTP/1.x.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections import deque
from typing import Any

KEEPALIVE_S = 5.0  # an idle connection older than this is closed, not reused (httpx's default expiry)


class ServerDisconnected(ConnectionResetError):
    """The server closed the connection before its reply was complete."""


class BadReply(ConnectionError):
    """What came back is not an HTTP/1.x reply (judged as a connection error, as aiohttp's parser errors were)."""


class _Conn(asyncio.Protocol):
    """One TCP (or TLS) connection: sends a request, parses its reply, says whether it may be reused."""

    __slots__ = ("transport", "buf", "waiter", "closed", "reusable", "idle_since", "received", "status", "headers",
                 "length", "chunked", "body", "head_done")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, dict[str, str], bytes]] | None = None
        self.closed = False
        self.reusable = True
        self.idle_since = 0.0
        self.received = False  # any byte of a reply to the request in flight came
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.length: int | None = None
        self.chunked = False
        self.body = bytearray()
        self.head_done = False

    # -- asyncio.Protocol ------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for: the connection is out of step, never reuse it
            self.reusable = False
            return
        self.received = True
        self.buf += data
        try:
            self._parse()
        except BadReply as exc:
            self.reusable = False
            self._fail(exc)

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if self.head_done and self.length is None and not self.chunked:  # a body that runs until close
                self._finish(bytes(self.buf))
                return
            cause = f" ({exc})" if exc else ""
            self._fail(ServerDisconnected(f"Server disconnected{cause}"))

    # -- parsing ---------------------------------------------------------------------------------------
    def _parse(self) -> None:
        buf = self.buf
        if not self.head_done:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > 65536:
                    raise BadReply("reply head longer than 64 KiB")
                return
            lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
            del buf[:end + 4]
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                raise BadReply(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
            status = int(parts[1])
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    key = name.strip().lower()
                    value = value.strip()
                    headers[key] = f"{headers[key]}, {value}" if key in headers else value
            if 100 <= status < 200:  # an interim reply (100 Continue): the real one follows
                return self._parse() if buf else None
            self.status, self.headers, self.head_done = status, headers, True
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self.chunked = True
            elif "content-length" in headers:
                text = headers["content-length"]
                if not text.isdigit():  # also refuses "-5", "+5" and a list of two lengths
                    raise BadReply(f"bad Content-Length {text[:40]!r}")
                self.length = int(text)
            elif status in (204, 304):
                self.length = 0
            if headers.get("connection", "").lower() == "close" or parts[0] == "HTTP/1.0":
                self.reusable = False
        if self.chunked:
            self._parse_chunks()
        elif self.length is not None and len(buf) >= self.length:
            if len(buf) > self.length:
                self.reusable = False  # more than the reply: out of step
            self._finish(bytes(buf[:self.length]))

    def _parse_chunks(self) -> None:
        buf = self.buf
        while True:
            end = buf.find(b"\r\n")
            if end < 0:
                return
            size_text = bytes(buf[:end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise BadReply(f"bad chunk size {size_text[:20]!r}") from None
            if size == 0:
                if buf.find(b"\r\n\r\n", end) < 0:  # the empty line after the last chunk (and any trailers)
                    return
                self._finish(bytes(self.body))
                return
            if len(buf) < end + 2 + size + 2:
                return
            self.body += buf[end + 2:end + 2 + size]
            del buf[:end + 2 + size + 2]

    def _finish(self, body: bytes) -> None:
        waiter, status, headers = self.waiter, self.status, self.headers
        self.waiter = None
        self.buf.clear()
        self._reset()
        encoding = headers.get("content-encoding", "").lower()
        if encoding in ("gzip", "deflate"):  # not asked for (no Accept-Encoding), but read if sent
            try:
                body = zlib.decompress(body, 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
            except zlib.error as exc:
                if waiter is not None and not waiter.done():
                    waiter.set_exception(BadReply(f"cannot decode a {encoding} body: {exc}"))
                return
        if waiter is not None and not waiter.done():
            waiter.set_result((status, headers, body))

    def _fail(self, exc: BaseException) -> None:
        waiter = self.waiter
        self.waiter = None
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
                                   server_hostname=self.host if self.ssl else None), self.connect_timeout)
        return conn

    async def post(self, head: bytes, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send ``head`` (request line and headers, ending in the empty line) and ``body``; the reply."""
        if self.closed:
            raise ServerDisconnected("the connection pool is closed")
        now = time.monotonic()
        conn = None
        while self.idle:
            c = self.idle.pop()  # the most recently used: the least likely to have been closed by the server
            if not c.closed and c.reusable and now - c.idle_since < KEEPALIVE_S:
                conn = c
                break
            if c.transport is not None:
                c.transport.close()
        reused = conn is not None
        if conn is None:
            conn = await self._connect()
        try:
            return await self._send(conn, head, body)
        except ServerDisconnected:
            if not reused or conn.received:
                raise
        # A reused connection the server had closed meanwhile (its keep-alive ran out as we sent) and nothing
        # of a reply came on it: the request is sent once more on a fresh connection, as HTTP clients do.
        return await self._send(await self._connect(), head, body)

    async def _send(self, conn: _Conn, head: bytes, body: bytes) -> tuple[int, dict[str, str], bytes]:
        transport = conn.transport
        assert transport is not None
        if conn.closed:  # lost between the connect and now: a write would vanish and the reply never come
            raise ServerDisconnected("Server disconnected before the request was sent")
        waiter = asyncio.get_running_loop().create_future()
        conn.waiter = waiter
        conn.received = False
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
