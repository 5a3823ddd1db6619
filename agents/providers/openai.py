"""OpenAI chat completions, and through ``base_url`` any compatible server (vLLM, SGLang, Ollama,
llama.cpp, DeepSeek, Together...), which is how local models scale past one machine.

The SDK's client uses the aiohttp transport when the ``openai[aiohttp]`` extra is present: the default httpx
transport costs about 2 ms of CPU per call and degrades past ~128 calls in flight.

What the SDK costs per call is most of a call's CPU in this process (``bench/bench_llm_cost.py``), so the
request goes through its documented generic ``client.post`` with the body already encoded (``content=``,
orjson) and the reply returned as bytes (``cast_to=bytes``) that we read ourselves: the SDK still sends it,
with its headers, auth, timeouts and error classes, but no longer builds a typed ``ChatCompletion`` (a
fifth of its per-call CPU) for the three fields we keep. One TLS context serves every SDK client of the
process (and one more every lean client): building one reads the certificate store (about 80 ms), and a
client is made per experiment.

That is the path to OpenAI's own API. A ``base_url`` server (vLLM, SGLang, Ollama...) gets the lean path
instead (:mod:`.openai_lean`: our own keep-alive HTTP/1.1 client, orjson, no SDK object per call, the SDK
not even imported), where
the server answers fast enough for our CPU per call to matter: both paths build the same body and read the
reply with the same :func:`completion`, and everything else (retries, failover, cache, masking) is above
the client. Official endpoints keep the SDK: their calls are bounded by the network and rate limits, not by
our CPU, and the SDK reads OpenAI's own variables (``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``) for them.
``ECONARENA_OPENAI_CLIENT=sdk`` (or ``lean``) forces one path for every endpoint.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import ssl
import sys
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

import orjson

from ..base import Message
from ..calls import (
    Failure,
    MalformedResponse,
    RemoteProvider,
    server_detail,
    split_query,
    status_failure,
    token_count,
)
from ..reasoning import split_message
from ..settings import Generation, LLMSettings

log = logging.getLogger(__name__)

CLIENT_ENV = "ECONARENA_OPENAI_CLIENT"  # "sdk" or "lean": one path for every endpoint (default: by URL)


def lean_path(base_url: str | None) -> bool:
    """Whether calls to ``base_url`` go through the lean path: any server but OpenAI's own, unless
    ``ECONARENA_OPENAI_CLIENT`` names a path."""
    forced = os.environ.get(CLIENT_ENV, "").strip().lower()
    if forced in ("sdk", "lean"):
        return forced == "lean"
    return not _official(base_url)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The TLS context the SDK's transport would build for itself (httpx2's default: certifi or the system
    store, with the SSL_CERT_* variables), built once per process."""
    import httpx2

    return httpx2.create_ssl_context()


@functools.cache
def _lean_tls_context() -> ssl.SSLContext:
    """The lean path's TLS context: the SDK's trust store and checks, offering HTTP/1.1 only (ALPN), since that
    is the one protocol its client speaks; its own, so no other client's settings reach it."""
    import httpx2

    context = httpx2.create_ssl_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def _http_client(settings: LLMSettings) -> Any | None:
    """The aiohttp-backed client sized to our connection limit, or None for the SDK's default."""
    import openai

    try:
        import httpx2

        client = openai.DefaultAioHttpClient(
            limits=httpx2.Limits(max_connections=settings.max_connections,
                                 max_keepalive_connections=settings.max_connections),
            timeout=settings.timeout_s, verify=_tls_context())
    except (ImportError, RuntimeError):  # extra not installed: the SDK's httpx transport still works
        return None
    client._transport = _bounded_transport(client._transport)  # every reply bounded, as on the lean path
    return client


def _bounded_stream() -> Any:
    """The class of a reply's body under the bound, for :func:`_bounded_transport` (made on first use: httpx2
    is imported only when the SDK path is)."""
    import httpx2

    from . import http11

    class _BoundedStream(httpx2.AsyncByteStream):
        """A reply's body, at most ``limit`` bytes on the wire and decoded; see :func:`_bounded_transport`."""

        def __init__(self, resp: Any, encoding: str, limit: int, lost: Any = None) -> None:
            import zlib

            self.resp, self.limit, self.encoding, self.lost = resp, limit, encoding, lost
            self.decoder = (zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
                            if encoding in ("gzip", "deflate") else None)

        async def __aiter__(self) -> Any:
            import zlib

            wire = decoded = 0
            async for data in self.resp.aiter_raw():
                wire += len(data)
                if wire > self.limit:
                    raise http11.ReplyTooLarge(f"the reply passed {self.limit} bytes on the wire (the bound on one "
                                               "reply)")
                if self.decoder is None:
                    yield data
                    continue
                try:
                    out = self.decoder.decompress(data, self.limit - decoded + 1)
                except zlib.error as exc:
                    raise http11.BadReply(f"cannot decode a {self.encoding} body: {exc}") from None
                decoded += len(out)
                if decoded > self.limit or self.decoder.unconsumed_tail:
                    raise http11.ReplyTooLarge(f"the reply's {self.encoding} body decodes past the bound on one "
                                               f"reply ({self.limit} bytes)")
                yield out
            if self.decoder is not None and not self.decoder.eof:
                raise http11.BadReply(f"cannot decode a {self.encoding} body: it ends before its stream does")
            lost = self.lost
            if lost is not None and lost.done() and not lost.cancelled() and lost.exception() is not None:
                # aiohttp ends a body that runs until close on a reset as on a clean end: not a reply
                raise http11.ServerDisconnected(f"Server disconnected before the reply was complete "
                                                f"({lost.exception()})")

        async def aclose(self) -> None:
            await self.resp.aclose()

    return _BoundedStream


def _bounded_transport(inner: Any) -> Any:
    """The SDK's transport with each reply bounded as on the lean path (http11.REPLY_BYTES): a Content-Length
    past the bound refused from the head, the raw body counted as it arrives, a gzip or deflate body inflated
    here step by step under the same bound (httpx would inflate it whole). aiohttp's parser bounds the framing
    (a line of a head or a chunk size: 8 KiB)."""
    import httpx2

    from . import http11

    bounded_stream = _bounded_stream()

    class Bounded(httpx2.AsyncBaseTransport):
        query: bytes | None = None  # the base_url's query as typed, sent on every request

        async def handle_async_request(self, request: Any) -> Any:
            if self.query is not None:
                request.url = request.url.copy_with(query=self.query)
            resp = await inner.handle_async_request(request)
            limit = http11.REPLY_BYTES
            length = resp.headers.get("content-length", "")
            if length.isdigit() and int(length) > limit:
                await resp.aclose()
                raise http11.ReplyTooLarge(f"the reply's Content-Length {length[:24]} is past the bound on one "
                                           f"reply ({limit} bytes)")
            encoding = resp.headers.get("content-encoding", "").lower()
            headers = [(k, v) for k, v in resp.headers.multi_items()
                       if not (encoding in ("gzip", "deflate") and k.lower() in ("content-encoding", "content-length"))]
            lost = None
            if "content-length" not in resp.headers and "chunked" not in resp.headers.get("transfer-encoding", ""):
                # a body that runs until close: watch how the connection ends (aiohttp's protocol says it)
                connection = getattr(getattr(resp.stream, "_aiohttp_response", None), "_connection", None)
                lost = getattr(getattr(connection, "protocol", None), "closed", None)
            return httpx2.Response(resp.status_code, headers=headers,
                                   stream=bounded_stream(resp, encoding, limit, lost), extensions=resp.extensions)

        async def aclose(self) -> None:
            await inner.aclose()

        def __getattr__(self, name: str) -> Any:  # the inner transport's settings (its TLS context...)
            return getattr(inner, name)

    return Bounded()


@functools.lru_cache(maxsize=64)
def _official(base_url: str | None) -> bool:
    return not base_url or (urlsplit(base_url).hostname or "").endswith("openai.com")


def _without(schema: Any, keyword: str) -> Any:
    """A copy of the schema with one keyword removed everywhere."""
    if isinstance(schema, dict):
        return {k: _without(v, keyword) for k, v in schema.items() if k != keyword}
    if isinstance(schema, list):
        return [_without(v, keyword) for v in schema]
    return schema


def response_format(schema: dict[str, Any], settings: LLMSettings) -> dict[str, Any]:
    """The ``response_format`` for a reply schema: OpenAI's strict ``json_schema`` (vLLM and SGLang take
    it too), or ``{"type": "json_object", "schema": ...}`` for servers such as llama.cpp's.

    OpenAI's strict mode rejects string ``maxLength``, so it is dropped for api.openai.com only; local
    servers keep it, since it is what stops a small model's reasoning from running to the token limit.
    """
    if settings.response_format == "json_object":
        return {"type": "json_object", "schema": schema}
    if _official(settings.url):
        schema = _without(schema, "maxLength")
    return {"type": "json_schema", "json_schema": {"name": "reply", "strict": True, "schema": schema}}


MAX_FINGERPRINT = 200  # a longer "system_fingerprint" is no build name: not recorded


def completion(raw: bytes, end: str | None = None) -> Generation:
    """The reply text, model and token counts of a chat completion's JSON body; MalformedResponse when the
    body is not one (not JSON, no ``choices[0].message``, content that is not text). The reasoning, in a
    field of its own or inline (``<think>``, or the template's ``end`` marker), is kept apart from the
    answer (agents/reasoning.py)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # what orjson refuses the standard library may still read (NaN, huge exponents)
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise MalformedResponse(f"not JSON: {raw[:80]!r}") from None
    try:
        choice = data["choices"][0]
        message = choice["message"]
        text = message.get("content")
    except (AttributeError, IndexError, TypeError, KeyError):
        raise MalformedResponse("no choices[0].message in the chat completion") from None
    if text is not None and not isinstance(text, str):
        raise MalformedResponse(f"message content is {type(text).__name__}, not text")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    model = data.get("model")
    gen = Generation(text=text or "", model=model if isinstance(model, str) else None,
                     tokens_in=token_count(usage.get("prompt_tokens"), "usage.prompt_tokens", "openai"),
                     tokens_out=token_count(usage.get("completion_tokens"), "usage.completion_tokens", "openai"),
                     truncated=isinstance(choice, dict) and choice.get("finish_reason") == "length")
    fingerprint = data.get("system_fingerprint")
    if isinstance(fingerprint, str) and 0 < len(fingerprint) <= MAX_FINGERPRINT:  # what the server says it ran
        gen.fingerprint = fingerprint
    if not isinstance(message, dict):
        return gen
    return gen.reasoned(split_message(message, usage, end=end, opened=end is not None))


class OpenAIProvider(RemoteProvider):
    name: ClassVar[str] = "openai"

    _warned = False

    def _make_client(self, settings: LLMSettings, key: str) -> Any:
        base_url, query = split_query(settings.url)  # the query goes on every request (calls.split_query)
        if base_url and lean_path(base_url):
            from .openai_lean import LeanClient

            tls = _lean_tls_context() if base_url.lower().startswith("https:") else None
            # the query as typed, not parsed and re-encoded (a signed URL's %2F, a repeated key, a bare flag)
            return LeanClient(base_url, urlsplit(settings.url or "").query, key, settings.max_connections,
                              settings.timeout_s, tls)
        import openai

        http_client = _http_client(settings)
        raw_query = urlsplit(settings.url or "").query
        if http_client is not None and raw_query:  # our transport puts the typed query on every request
            http_client._transport.query = raw_query.encode("ascii", "strict") if raw_query.isascii() else None
            query = {} if http_client._transport.query else query
        return openai.AsyncOpenAI(api_key=key, base_url=base_url, default_query=query or None, max_retries=0,
                                  timeout=settings.timeout_s, http_client=http_client)

    async def _attempt(self, client: Any, messages: Sequence[Message],
                       settings: LLMSettings, schema: dict[str, Any] | None = None) -> Generation:
        body = self._body(messages, settings, schema)
        chat = getattr(client, "chat_bytes", None)
        if chat is not None:  # the lean path (openai_lean.LeanClient)
            return completion(await chat(orjson.dumps(body), settings.timeout_s), settings.reasoning_end)
        # The SDK's documented generic request (client.post): the same wire call as
        # chat.completions.create without re-walking our already plain-JSON params through its TypedDict
        # transforms (a third of its per-call CPU), the body encoded by orjson, the reply read as bytes.
        raw = await client.post("/chat/completions", content=orjson.dumps(body), cast_to=bytes,
                                options={"timeout": settings.timeout_s})
        return completion(raw, settings.reasoning_end)

    def _body(self, messages: Sequence[Message], settings: LLMSettings,
              schema: dict[str, Any] | None) -> dict[str, Any]:
        """The request body, the same on both paths."""
        body: dict[str, Any] = {"model": self._model(settings), "messages": [m.to_dict() for m in messages]}
        # OpenAI's reasoning models take no sampling settings (only the default temperature 1): left out for
        # them, with one warning; compatible servers get what the player set
        fixed = settings.reasoning_on and _official(settings.url)
        if fixed and not self._warned and (settings.temperature is not None or settings.top_p is not None):
            self._warned = True
            log.warning("openai: reasoning models take no temperature or top_p; they are not sent "
                        "(reasoning_effort = %r)", settings.reasoning_effort)
        if settings.temperature is not None and not fixed:
            body["temperature"] = settings.temperature
        if settings.top_p is not None and not fixed:
            body["top_p"] = settings.top_p
        if settings.reasoning_effort is not None:
            body["reasoning_effort"] = settings.reasoning_effort
        if settings.seed is not None:
            body["seed"] = settings.seed
        # OpenAI's own API wants max_completion_tokens (reasoning models reject max_tokens); most
        # compatible servers only know max_tokens.
        body["max_completion_tokens" if _official(settings.url) else "max_tokens"] = settings.max_tokens
        if schema is not None:
            body["response_format"] = response_format(schema, settings)
        return body

    def _judge(self, exc: BaseException) -> Failure | None:
        lean = sys.modules.get(f"{__package__}.openai_lean")
        if lean is not None and isinstance(exc, lean.LeanStatusError):  # worded as the SDK words it
            return _status(exc.status_code, exc.message, exc.body, exc.headers)
        aiohttp = sys.modules.get("aiohttp")  # the lean path's proxies and redirects; refusals and drops were
        if aiohttp is not None and isinstance(exc, aiohttp.ClientError):  # named before this
            return Failure(True, f"connection error: {exc}", down=True)
        openai = sys.modules.get("openai")
        if openai is not None:  # else the SDK was never imported, so this is none of its exceptions
            if isinstance(exc, openai.APIStatusError):
                return _status(exc.status_code, exc.message, exc.body, exc.response.headers)
            if isinstance(exc, openai.APITimeoutError):
                return Failure(True, "timed out", down=True)
            if isinstance(exc, openai.APIConnectionError):
                return Failure(True, f"connection error: {exc.__cause__ or exc}", down=True)
            if isinstance(exc, openai.APIResponseValidationError):
                return Failure(False, f"malformed response: {exc}")
        if isinstance(exc, ValueError):
            return Failure(False, f"malformed response: {exc}")
        return None


def _status(code: int, message: str, body: Any, headers: Any) -> Failure:
    """An HTTP error judged as the SDK path always judged it: its message, with the server's own explanation
    added when the message does not hold it yet."""
    detail = server_detail(body)
    return status_failure(code, message if detail is None or detail in message else f"{message}: {detail}",
                          headers)
