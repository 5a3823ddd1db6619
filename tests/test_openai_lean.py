"""The lean request path of agent "openai" (agents/providers/openai_lean.py, http11.py) on its own ground:
what the HTTP/1.1 client must read (chunked bodies, replies in pieces, gzip, interim replies, bodies until
close), when it may reuse a connection, and what it must leave to aiohttp (proxies, redirects). Each server
here is a real TCP server on 127.0.0.1 that writes the bytes a test scripts.

Both paths must also send the same request and word the same errors: checked here side by side (the shared
behaviour itself runs on both paths in test_providers.py and test_endpoints.py).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeservers import FakeLLMServer, raw, status

from econarena.agents import calls
from econarena.agents.base import Message
from econarena.agents.calls import CallError
from econarena.agents.llm import LLMSettings, close_all
from econarena.agents.providers.openai import OpenAIProvider, lean_path

pytestmark = pytest.mark.timeout(60)

MESSAGES = [Message("user", "Bid?")]
REPLY = {"id": "x", "model": "m-raw", "choices": [{"index": 0, "message": {"role": "assistant", "content": "7"},
                                                    "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
BODY = json.dumps(REPLY).encode()

Handler = Callable[["RawServer", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    """A TCP server in a thread whose every connection is handed to ``handler``; counts connections and keeps
    each request it read (request line, headers, body)."""

    def __init__(self, handler: Handler, ssl: Any = None) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)

            async def start() -> None:
                srv = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=ssl)
                self.port = srv.sockets[0].getsockname()[1]

            self._loop.run_until_complete(start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(self, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        line, *rest = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in rest if h)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append((line, headers, body))
        return line, headers, body

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Cancel the handlers still running (a connection kept alive), then stop the loop."""

        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def reply(body: bytes = BODY, status: str = "200 OK", headers: tuple[str, ...] = ()) -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(calls, "BACKOFF_BASE_S", 0.02)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-lean-test-0123456789")
    monkeypatch.delenv("ECONARENA_OPENAI_CLIENT", raising=False)
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    yield
    asyncio.run(close_all())


def settings(url: str, **kw: Any) -> LLMSettings:
    return LLMSettings(**{"model": "m", "base_url": url, "timeout_s": 5.0, "max_retries": 1, **kw})


def calls_in_one_loop(s: LLMSettings, n: int = 1) -> list[Any]:
    """``n`` calls one after another through one provider (one pool), closed in the same loop."""

    async def go() -> list[Any]:
        p = OpenAIProvider(s)
        try:
            return [await p.generate(MESSAGES, s) for _ in range(n)]
        finally:
            await p.aclose()

    return asyncio.run(go())


def serve(*answers: bytes, close_after: int = 0, ssl: Any = None) -> RawServer:
    """A server that answers the requests of each connection with ``answers`` in turn (the last one repeated);
    ``close_after``: closes a connection, silently, when it sees that many requests on it plus one."""

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen = 0
        while await srv.read_request(reader) is not None:
            seen += 1
            if close_after and seen > close_after:
                return  # a keep-alive the server has ended: no reply at all
            k = min(len(srv.requests), len(answers)) - 1
            writer.write(answers[k])
            await writer.drain()

    return RawServer(handler, ssl)


# -- which path, and what it imports ------------------------------------------------------------------

def test_base_url_servers_take_the_lean_path_and_openai_keeps_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    assert lean_path("http://127.0.0.1:8000/v1") and lean_path("https://api.together.xyz/v1")
    assert not lean_path(None) and not lean_path("https://api.openai.com/v1")
    monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", "sdk")
    assert not lean_path("http://127.0.0.1:8000/v1")
    monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", "lean")
    assert lean_path("https://api.openai.com/v1")


def test_the_lean_path_never_imports_the_sdk(server: FakeLLMServer) -> None:
    """The SDK's import is most of a short run's start-up (docs/performance.md): a run against a base_url
    server must not pay it."""
    server.reset()
    code = ("import asyncio, sys\nfrom econarena.agents.llm import LLMSettings\n"
            "from econarena.agents.base import Message\n"
            "from econarena.agents.providers.openai import OpenAIProvider\n"
            f"s = LLMSettings(model='m', base_url='{server.url}/v1')\n"
            "async def go():\n    p = OpenAIProvider(s)\n    g = await p.generate([Message('user', 'x')], s)\n"
            "    await p.aclose()\n    return g.text\n"
            "print(asyncio.run(go()), sorted(m for m in ('openai', 'httpx2', 'aiohttp', 'pydantic_core')"
            " if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"OPENAI_API_KEY": "sk-x", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == """{"answer": 7} ['pydantic_core']"""


# -- what the client reads ----------------------------------------------------------------------------

def test_a_chunked_reply_in_pieces_and_a_reused_connection() -> None:
    half = len(BODY) // 2
    chunked = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"%x\r\n" % half + BODY[:half] + b"\r\n" + b"%x;ext=1\r\n" % (len(BODY) - half) + BODY[half:]
               + b"\r\n0\r\nX-Trailer: y\r\n\r\n")

    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await srv.read_request(reader) is not None:
            for i in range(0, len(chunked), 7):  # a few bytes at a time: the parser sees every split
                writer.write(chunked[i:i + 7])
                await writer.drain()
                await asyncio.sleep(0)

    srv = RawServer(handler)
    try:
        gens = calls_in_one_loop(settings(srv.url), 3)
        assert [(g.text, g.model, g.tokens_in) for g in gens] == [("7", "m-raw", 1)] * 3
        assert srv.connections == 1  # kept alive between calls
        line, headers, body = srv.requests[0]
        assert line == "POST /v1/chat/completions HTTP/1.1"
        assert headers["host"] == f"127.0.0.1:{srv.port}"
        assert headers["authorization"] == "Bearer sk-lean-test-0123456789"
        assert json.loads(body)["messages"] == [{"role": "user", "content": "Bid?"}]
    finally:
        srv.stop()


def test_a_burst_opens_at_most_max_connections_and_a_second_reuses_them() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await srv.read_request(reader) is not None:
            await asyncio.sleep(0.01)  # long enough for the burst to pile up on every connection
            writer.write(reply())
            await writer.drain()

    srv = RawServer(handler)
    s = settings(srv.url, max_connections=6)

    async def bursts() -> list[int]:
        p = OpenAIProvider(s)
        seen = []
        try:
            for _ in range(2):
                gens = await asyncio.gather(*(p.generate(MESSAGES, s) for _ in range(40)))
                assert [g.text for g in gens] == ["7"] * 40
                seen.append(srv.connections)
        finally:
            await p.aclose()
        return seen

    try:
        first, second = asyncio.run(bursts())
        assert 1 < first <= 6 and second == first  # the pool is kept between bursts
    finally:
        srv.stop()


def test_gzip_interim_replies_and_connection_close() -> None:
    packed = gzip.compress(BODY)
    first = (b"HTTP/1.1 100 Continue\r\n\r\n"
             + reply(packed, headers=("Content-Encoding: gzip", "Connection: close")))
    srv = serve(first, reply())
    try:
        gens = calls_in_one_loop(settings(srv.url), 2)
        assert [g.text for g in gens] == ["7", "7"]
        assert srv.connections == 2  # "Connection: close" is obeyed
    finally:
        srv.stop()


def test_a_body_that_runs_until_the_server_closes() -> None:
    async def handler(srv: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await srv.read_request(reader)
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY)
        await writer.drain()

    srv = RawServer(handler)
    try:
        assert [g.text for g in calls_in_one_loop(settings(srv.url), 2)] == ["7", "7"]
        assert srv.connections == 2
    finally:
        srv.stop()


def test_a_keep_alive_the_server_ended_is_resent_as_an_attempt_of_its_own() -> None:
    """A server that ends each connection after one request without a word (its keep-alive ran out as our
    next request left): the request goes again at once on a fresh connection, as an attempt counted under
    max_retries (and reserved under a cost cap), never silently; the endpoint is not called down."""
    srv = serve(reply(), close_after=1)
    try:
        gens = calls_in_one_loop(settings(srv.url, max_retries=1), 3)
        assert [g.text for g in gens] == ["7"] * 3
        assert srv.connections == 3 and len(srv.requests) == 5  # calls 2 and 3: sent twice, the second fresh
        with pytest.raises(CallError, match="kept-alive connection was closed by the server") as err:
            calls_in_one_loop(settings(srv.url, max_retries=0), 2)  # no retry left: the resend is not made
        assert err.value.attempts == 1 and err.value.retryable
    finally:
        srv.stop()


def test_a_fresh_connection_closed_without_a_reply_is_a_lost_connection() -> None:
    srv = serve(reply(), close_after=-1)  # never answers
    try:
        with pytest.raises(CallError, match="connection lost") as err:
            calls_in_one_loop(settings(srv.url, max_retries=1))
        assert err.value.attempts == 2 and err.value.retryable
    finally:
        srv.stop()


@pytest.mark.parametrize(("answer", "why"), [
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "malformed HTTP reply: Expected HTTP/"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", "malformed HTTP reply: Invalid character in Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
     "malformed HTTP reply: Invalid character in chunk size"),
], ids=["ssh", "negative-length", "chunk-size"])
def test_a_reply_that_is_not_http_is_a_connection_error(answer: bytes, why: str) -> None:
    srv = serve(answer)
    try:
        with pytest.raises(CallError, match=f"connection error: {why}") as err:
            calls_in_one_loop(settings(srv.url, max_retries=1))
        assert err.value.attempts == 2
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made by the openssl command."""
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed: no certificate for the TLS test")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "key.pem"),
                    "-out", str(d / "cert.pem"), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return d / "cert.pem", d / "key.pem"


def test_tls_offers_http_1_1_only_and_checks_the_certificate(certificate: tuple[Path, Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A TLS server that would take HTTP/2 gets HTTP/1.1 (the one protocol the client speaks); a certificate
    the trust store does not know is refused, as the SDK refuses it."""
    import ssl

    from econarena.agents.providers.openai_lean import LeanClient

    cert, key = certificate
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    server_ctx.set_alpn_protocols(["h2", "http/1.1"])
    srv = serve(reply(), ssl=server_ctx)
    url = f"https://127.0.0.1:{srv.port}/v1"
    try:
        trusting = ssl.create_default_context(cafile=str(cert))
        trusting.set_alpn_protocols(["http/1.1"])

        async def go() -> bytes:
            client = LeanClient(url, {}, "sk-x", 4, 5.0, trusting)
            try:
                return await client.chat_bytes(b"{}")
            finally:
                await client.close()

        assert json.loads(asyncio.run(go()))["model"] == "m-raw"
        for path in ("lean", "sdk"):  # the provider's own context (the system store), named as what it is
            monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", path)
            with pytest.raises(CallError, match="certificate verification failed for https://127.0.0.1:.*"
                                                "self-signed certificate") as err:
                calls_in_one_loop(settings(url, max_retries=2))
            assert "malformed" not in str(err.value) and err.value.attempts == 1  # a certificate is not retried
    finally:
        srv.stop()


# -- what is left to aiohttp, on both paths -------------------------------------------------------------

@pytest.mark.usefixtures("openai_path")
def test_a_redirect_is_followed(server: FakeLLMServer) -> None:
    server.reset()
    srv = serve(reply(b"", status="307 Temporary Redirect",
                      headers=(f"Location: {server.url}/v1/chat/completions",)))
    try:
        (g,) = calls_in_one_loop(settings(srv.url))
        assert g.text == '{"answer": 7}' and server.count() == 1
        assert server.seen[0].body["messages"] == [{"role": "user", "content": "Bid?"}]
    finally:
        srv.stop()


@pytest.mark.usefixtures("openai_path")
def test_a_proxy_from_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = serve(reply())
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    try:
        (g,) = calls_in_one_loop(settings("http://upstream.invalid:8000/v1"))
        assert g.text == "7"
        (line, headers, _), = proxy.requests
        assert line == "POST http://upstream.invalid:8000/v1/chat/completions HTTP/1.1"
    finally:
        proxy.stop()


# -- the same request and the same errors on both paths -----------------------------------------------------

def _both(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, s: LLMSettings, *script: Any) -> list[Any]:
    """The outcome of one call on each path, the server scripted the same way for each."""
    out = []
    for path in ("lean", "sdk"):
        monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", path)
        server.script(*script)
        try:
            out.append(calls_in_one_loop(s)[0])
        except CallError as exc:
            out.append((str(exc), exc.status, exc.retryable, exc.attempts))
    return out


def test_both_paths_send_the_same_request(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.reset()
    monkeypatch.setenv("OPENAI_ORG_ID", "org-both-paths")  # the SDK sends it as a header; so must the lean path
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-both-paths")
    s = settings(f"{server.url}/v1?api-version=2024-06-01", temperature=0.3, top_p=0.9, seed=4, max_tokens=33)
    lean, sdk = _both(server, monkeypatch, s)
    assert (lean.text, lean.model, lean.tokens_in, lean.tokens_out) == (sdk.text, sdk.model, sdk.tokens_in,
                                                                        sdk.tokens_out)
    a, b = server.seen
    assert (a.path, a.query, a.body) == (b.path, b.query, b.body)
    for header in ("authorization", "content-type", "accept", "openai-organization", "openai-project"):
        assert {k.lower(): v for k, v in a.headers.items()}[header] == \
            {k.lower(): v for k, v in b.headers.items()}[header]
    assert {k.lower(): v for k, v in a.headers.items()}["openai-organization"] == "org-both-paths"


ERRORS = {
    "openai error": status(400, body={"error": {"message": "bad 'temperature'", "type": "invalid", "code": None}}),
    "fastapi detail": status(422, body={"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}),
    "text body": raw("upstream unavailable", content_type="text/plain", code=503),
    "empty body": raw("", content_type="text/plain", code=404),
    "rate limit": status(429, {"Retry-After": "0"}),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_both_paths_word_an_error_the_same(case: str, server: FakeLLMServer,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    server.reset()
    script = [ERRORS[case]] * 2
    lean, sdk = _both(server, monkeypatch, settings(f"{server.url}/v1", max_retries=1), *script)
    assert lean == sdk
    assert isinstance(lean, tuple) and lean[0].startswith(f"openai: HTTP {ERRORS[case].status}: Error code: ")
