"""The lean request path to OpenAI-compatible servers (vLLM, SGLang, Ollama, llama.cpp, gateways): one pool of
keep-alive connections per endpoint (:mod:`.http11`), the body encoded once by orjson, the reply read as
bytes, nothing of the SDK.

Why: against a fast server the SDK's request machinery (httpx2's request and response objects, its options
and header merging, pydantic) was most of a call's CPU in this process, and aiohttp's session machinery
most of what was left (docs/performance.md), so a study against replicas of a small model waited on us.
Everything the SDK did for us that a run can see is done here the same way, and the rest of the behaviour
(retries, Retry-After, failover, the cache, masking) lives above the client in ``agents/calls.py`` and
``agents/llm.py``, shared by both paths:

- the URL the SDK would build (base_url with a trailing slash, then ``chat/completions``; a query typed in
  the base_url on every request), the ``Authorization: Bearer`` header, JSON in and out;
- the SDK's timeouts (the connect bounded by ``timeout_s``, the whole attempt by the caller's deadline of the
  same length), proxies from the environment and redirects (both sent through aiohttp);
- an HTTP error worded as the SDK words it (``Error code: 429 - <the server's error.message>``), with the
  body and headers kept for the judgement (:func:`status_error`), so ``Retry-After`` and the server's
  explanation reach the same code.

Official OpenAI endpoints keep the SDK (agents/providers/openai.py says why).
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import SplitResult, quote, urlencode, urlsplit

from ... import __version__
from . import http11
from .http11 import Origin


class LeanStatusError(Exception):
    """An HTTP error status from the server: what the SDK's ``APIStatusError`` carried that we judge."""

    def __init__(self, status: int, message: str, body: Any, headers: Any) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message
        self.body = body  # the parsed body's ``error`` member (or the whole body, or its text), as the SDK keeps it
        self.headers = headers


def _account_headers() -> dict[str, str]:
    """The organization and project headers the SDK sends from OpenAI's own variables (``OPENAI_ORG_ID``,
    ``OPENAI_PROJECT_ID``): gateways and proxies in front of compatible servers route or bill by them."""
    out = {}
    for var, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
        value = os.environ.get(var)
        if value:
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):  # a header split by a line break
                raise ValueError(f"the environment variable {var} holds a control character (a line break?); "
                                 "its value is sent as a header: set it to the plain identifier")
            out[header] = value
    return out


def status_error(status: int, raw: bytes, headers: Any) -> LeanStatusError:
    """The error for a 4xx/5xx reply, worded as the openai SDK words it: ``Error code: N``, then `` - `` and the
    body's ``error.message`` (or top-level ``message``) when it has one."""
    text = raw.decode("utf-8", "replace").strip()
    message = f"Error code: {status}"
    body: Any = text
    try:
        body = json.loads(text)
    except ValueError:
        pass
    else:
        error = body.get("error", body) if isinstance(body, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
    return LeanStatusError(status, message, body.get("error", body) if isinstance(body, dict) else body, headers)


def chat_url(base_url: str, query: dict[str, str] | str) -> str:
    """``base_url`` + ``chat/completions`` joined as the SDK joins them (one slash between), with the query
    typed in the base_url: a string goes as typed (a signature's ``%2F``, a repeated key, a bare flag kept), a
    dict encoded as the SDK encodes its default query."""
    url = (base_url if base_url.endswith("/") else base_url + "/") + "chat/completions"
    if isinstance(query, str):
        return f"{url}?{query}" if query else url
    return f"{url}?{urlencode(query)}" if query else url


def _env_proxy(url: str) -> tuple[Any, Any]:
    """The environment's proxy for ``url`` and its credentials, or (None, None): none set, or NO_PROXY names
    the host. Found once per client, as the SDK's httpx client did; aiohttp's own ``trust_env`` looks it up,
    and reads ~/.netrc, in a worker thread on every request (two thread hops per call)."""
    import urllib.request

    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if parts.scheme not in proxies or (parts.hostname and urllib.request.proxy_bypass(parts.hostname)):
        return None, None
    import yarl
    from aiohttp.helpers import get_env_proxy_for_url

    try:
        return get_env_proxy_for_url(yarl.URL(url))
    except LookupError:
        return None, None


class LeanClient:
    """One endpoint's connection pool and its fixed request parts (URL, headers, timeouts).

    A direct connection (no proxy in the environment for this URL) goes through :class:`.http11.Origin`, the
    request's head rendered once here; a proxied one, and a request the server redirects, through an aiohttp
    session made on first need (aiohttp follows redirects and speaks to proxies as the SDK's client did)."""

    def __init__(self, base_url: str, query: dict[str, str] | str, key: str, max_connections: int, timeout_s: float,
                 ssl_context: Any = None) -> None:
        self.url = chat_url(base_url, query)
        self.key, self.max_connections, self.timeout_s, self.ssl_context = key, max_connections, timeout_s, ssl_context
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                        "Accept": "application/json", "User-Agent": f"econarena/{__version__}",
                        **_account_headers()}
        self.session: Any = None  # the aiohttp session, when needed
        self.proxy, self.proxy_auth = _env_proxy(self.url)
        self.origin: Origin | None = None
        self.head = b""
        parts: SplitResult = urlsplit(self.url)
        https = parts.scheme == "https"
        if self.proxy is None and parts.scheme in ("http", "https") and parts.hostname:
            path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")  # as typed; what is not URL-safe, encoded
            host = parts.netloc.rpartition("@")[2]
            lines = [f"POST {path}?{parts.query}" if parts.query else f"POST {path}", f"Host: {host}",
                     *(f"{k}: {v}" for k, v in self.headers.items()), "Content-Length: "]
            lines[0] += " HTTP/1.1"
            try:
                self.head = "\r\n".join(lines).encode("latin-1")
                port = parts.port or (443 if https else 80)
            except (UnicodeEncodeError, ValueError):  # a key no header can carry, a bad port: aiohttp reports
                pass                                   # it, as the SDK's client did
            else:
                self.origin = Origin(parts.hostname, port, (ssl_context or _default_tls()) if https else None,
                                     max_connections, timeout_s)

    async def chat_bytes(self, body: bytes, timeout_s: float | None = None) -> bytes:
        """POST one encoded chat completion; the reply's bytes, or :class:`LeanStatusError` for a 4xx/5xx."""
        if self.origin is None:
            return await self._via_aiohttp(body, timeout_s)
        status, headers, raw = await self.origin.post(self.head + b"%d\r\n\r\n" % len(body), body)
        if 300 <= status < 400 and "location" in headers:  # followed, as the SDK's client follows them
            return await self._via_aiohttp(body, timeout_s, redirect=(status, headers["location"]))
        if status >= 400:
            raise status_error(status, raw, headers)
        return raw

    async def _via_aiohttp(self, body: bytes, timeout_s: float | None,
                           redirect: tuple[int, str] | None = None) -> bytes:
        """The request through aiohttp; ``redirect``: the status and Location our own client was answered, so
        aiohttp goes there at once (the POST is not sent to the first URL twice). The Location is followed as
        aiohttp follows one: 307 and 308 keep the POST, 301, 302 and 303 become a GET; the key and the account
        headers go to the same origin only."""
        from urllib.parse import urljoin

        import aiohttp

        t = self.timeout_s if timeout_s is None else timeout_s
        if self.session is None:
            connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0,
                                             ssl=self.ssl_context if self.ssl_context is not None else True,
                                             keepalive_timeout=5.0)  # httpx's keep-alive expiry, as the SDK's
            self.session = aiohttp.ClientSession(connector=connector, trust_env=False,
                                                 skip_auto_headers=("User-Agent",))
        # the SDK's Timeout(timeout_s) as its aiohttp transport maps it: connect, pool and each read
        timeout = aiohttp.ClientTimeout(total=None, connect=t, sock_connect=t, sock_read=t)
        url, method, headers = self.url, "POST", self.headers
        data: bytes | None = body
        if redirect is not None:
            url = urljoin(self.url, redirect[1])
            if redirect[0] not in (307, 308):
                method, data = "GET", None
            if _origin(url) != _origin(self.url):
                headers = {k: v for k, v in headers.items() if k.lower() not in _CREDENTIALS}
        async with self.session.request(method, _yarl(url), data=data, headers=headers, timeout=timeout,
                                        proxy=self.proxy, proxy_auth=self.proxy_auth) as resp:
            raw = await _read_bounded(resp)
            if resp.status >= 400:
                raise status_error(resp.status, raw, resp.headers)
            return raw

    async def close(self) -> None:
        if self.origin is not None:
            self.origin.close()
        if self.session is not None:
            await self.session.close()


_CREDENTIALS = frozenset({"authorization", "openai-organization", "openai-project"})


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.hostname, parts.port or (443 if parts.scheme.lower() == "https" else 80)


async def _read_bounded(resp: Any) -> bytes:
    """An aiohttp reply's body under the bound of one reply (http11.REPLY_BYTES), counted as it arrives
    (aiohttp inflates a gzip body as it comes, so the count is of decoded bytes)."""
    limit = http11.REPLY_BYTES
    if resp.content_length is not None and resp.content_length > limit:
        raise http11.ReplyTooLarge(f"the reply's Content-Length {resp.content_length} is past the bound on one "
                                   f"reply ({limit} bytes)")
    out = bytearray()
    async for piece in resp.content.iter_chunked(65536):
        out += piece
        if len(out) > limit:
            raise http11.ReplyTooLarge(f"the reply passed {limit} bytes (the bound on one reply)")
    return bytes(out)


def _default_tls() -> Any:
    import ssl

    return ssl.create_default_context()


def _yarl(url: str) -> Any:
    """The URL as aiohttp's fallback sends it: already encoded, so it is not quoted twice."""
    import yarl

    return yarl.URL(url, encoded=True)
