"""The lean request path to OpenAI-compatible servers (vLLM, SGLang, Ollama, llama.cpp, gateways): one aiohttp
connection pool per endpoint, the body encoded once by orjson, the reply read as bytes, nothing of the SDK.

Why: against a fast server the SDK's request machinery (httpx2's request and response objects, its options
and header merging, pydantic) was most of a call's CPU in this process (docs/performance.md), so a study
against replicas of a small model waited on us. Everything the SDK did for us that a run can see is done
here the same way, and the rest of the behaviour (retries, Retry-After, failover, the cache, masking) lives
above the client in ``agents/calls.py`` and ``agents/llm.py``, shared by both paths:

- the URL the SDK would build (base_url with a trailing slash, then ``chat/completions``; a query typed in
  the base_url on every request), the ``Authorization: Bearer`` header, JSON in and out;
- the SDK's timeouts (connect, pool and each read bounded by ``timeout_s``; the attempt's hard deadline is
  the caller's), proxies from the environment (``trust_env``), redirects followed;
- an HTTP error worded as the SDK words it (``Error code: 429 - <the server's error.message>``), with the
  body and headers kept for the judgement (:func:`status_error`), so ``Retry-After`` and the server's
  explanation reach the same code.

Official OpenAI endpoints keep the SDK (agents/providers/openai.py says why).
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import yarl

from ... import __version__


class LeanStatusError(Exception):
    """An HTTP error status from the server: what the SDK's ``APIStatusError`` carried that we judge."""

    def __init__(self, status: int, message: str, body: Any, headers: Any) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message
        self.body = body  # the parsed body's ``error`` member (or the whole body, or its text), as the SDK keeps it
        self.headers = headers


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


def chat_url(base_url: str, query: dict[str, str]) -> yarl.URL:
    """``base_url`` + ``chat/completions`` joined as the SDK joins them (one slash between), with the query.
    Built once per client: aiohttp takes a ready URL without parsing it again."""
    url = yarl.URL(base_url if base_url.endswith("/") else base_url + "/")
    url = url.join(yarl.URL("chat/completions"))
    return url.with_query(query) if query else url


class LeanClient:
    """One endpoint's connection pool and its fixed request parts (URL, headers, timeouts)."""

    def __init__(self, base_url: str, query: dict[str, str], key: str, max_connections: int, timeout_s: float,
                 ssl_context: Any = None) -> None:
        self.url = chat_url(base_url, query)
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                        "Accept": "application/json", "User-Agent": f"econarena/{__version__}"}
        # the SDK's Timeout(timeout_s) as its aiohttp transport maps it: connect, pool and each read
        self.timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_connect=timeout_s,
                                             sock_read=timeout_s)
        connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0,
                                         ssl=ssl_context if ssl_context is not None else True,
                                         keepalive_timeout=5.0)  # httpx's keep-alive expiry, as the SDK set it
        self.session = aiohttp.ClientSession(connector=connector, trust_env=True, auto_decompress=True,
                                             skip_auto_headers=("User-Agent",))

    async def chat_bytes(self, body: bytes, timeout_s: float | None = None) -> bytes:
        """POST one encoded chat completion; the reply's bytes, or :class:`LeanStatusError` for a 4xx/5xx."""
        timeout = self.timeout
        if timeout_s is not None and timeout_s != timeout.sock_read:
            timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_connect=timeout_s,
                                            sock_read=timeout_s)
        async with self.session.post(self.url, data=body, headers=self.headers, timeout=timeout) as resp:
            raw = await resp.read()
            if resp.status >= 400:
                raise status_error(resp.status, raw, resp.headers)
            return raw

    async def close(self) -> None:
        await self.session.close()
