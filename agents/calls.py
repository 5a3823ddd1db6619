"""The call machinery shared by the API providers: retries, concurrency and rate limits.

Every SDK's own retry loop is switched off, so this is the one place that decides whether a failed call
is tried again. Retries are bounded twice: by ``settings.max_retries`` and by ``settings.retry_max_wait_s``
of total time, so a researcher can put a hard ceiling on how long an outage may stall an experiment.
A ``Retry-After`` from the server is obeyed for every request to that backend, not only the one that saw
it, because the limit it reports is shared.

Errors leave this module as :class:`CallError` whose message has any API key removed; the SDK's exception
is not chained (its request object carries the ``Authorization`` header).

A spending cap (``bench --max-cost``) is honoured here, for every provider: each attempt's worst case is
reserved before it is sent (:func:`reserve_attempt`) and settled when it returns (:func:`settle_attempt`).

Nothing a server sends is trusted with a size or a wait: a ``Retry-After`` is clipped to what is left of
``retry_max_wait_s`` before it pauses anything (and a call that cannot wait that long says so), and a token
count is a whole number in [0, 10^9] or unknown (:func:`token_count`), an unknown one settling a cap at its
worst case.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import email.utils
import json
import logging
import math
import random
import re
import ssl
import sys
import time
from collections.abc import Awaitable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .base import Message
from .endpoints import AFFINITY, EndpointPool
from .keys import api_key
from .settings import Generation, LLMSettings, Provider

# Backoff without Retry-After: base * 2**retry, capped, with "equal jitter" (half fixed, half random),
# so clients that failed together do not come back together. Module-level so tests can shorten them.
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
# Status codes worth another attempt: request timeout, conflict/too-early (transient), rate limit, and
# every 5xx (529 is Anthropic's "overloaded").
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})

T = TypeVar("T")
log = logging.getLogger(__name__)
MAX_TOKENS_COUNTED = 10**9  # a token count above this is no count: a billion tokens is no reply of one call
_WARNED: set[tuple[str, str]] = set()  # (provider, field) whose bad count was said


class SpendLimit(Protocol):
    """A spending cap the call layer honours (``prices.Budget``): each attempt's worst case is reserved
    before it is sent and settled when it returns."""

    def reserve(self, label: str, model: str | None, tokens_in: int, tokens_out: int) -> float | None: ...

    def settle(self, amount: float, label: str, model: str | None, tokens_in: int | None,
               tokens_out: int | None) -> None: ...

    @property
    def busy(self) -> bool: ...


# (the cap, the label whose calls it prices): set by the Host around a decision of a capped player
# (``bench --max-cost``), read by every remote provider's attempts below; None: no cap.
SPEND: ContextVar[tuple[SpendLimit, str] | None] = ContextVar("econarena_spend", default=None)
# A prompt's tokens bounded from above: a byte-level tokenizer's token covers at least one byte, plus the
# chat template's tokens per message and the request's overhead; a reply schema is sent as input too.
TEMPLATE_TOKENS_PER_MESSAGE = 8
REQUEST_TOKENS = 32


def prompt_token_bound(messages: Sequence[Message], schema: Mapping[str, Any] | None = None) -> int:
    """At most this many input tokens for the request (see above): what a cap reserves before sending."""
    n = sum(len(m.content.encode("utf-8")) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages) + REQUEST_TOKENS
    if schema is not None:
        n += len(json.dumps(schema, ensure_ascii=False).encode("utf-8"))
    return n


async def reserve_attempt(name: str, model: str, worst_in: int, max_tokens: int) -> float | None:
    """Before an HTTP attempt: reserve its worst case against the cap in ``SPEND`` (None: no cap). Waits while
    other capped calls are in flight (their return may leave room); raises CallError when it cannot fit.
    Every path that sends a request calls this before and :func:`settle_attempt` after (generate does)."""
    cap = SPEND.get()
    if cap is None:
        return None
    held = cap[0].reserve(cap[1], model, worst_in, max_tokens)
    while held is None and cap[0].busy:
        await asyncio.sleep(0.02)
        held = cap[0].reserve(cap[1], model, worst_in, max_tokens)
    if held is None:
        spent, limit = getattr(cap[0], "spent", None), getattr(cap[0], "limit", None)
        worst = getattr(cap[0], "last_worst", None)
        said = (f"${spent:.4f} spent of the ${limit:g} allowed, and this call could cost up to ${worst:.4f} "
                "(its prompt and max_tokens at their worst)" if None not in (spent, limit, worst) else
                "this call could cost up to its worst case and pass the --max-cost limit")
        raise CallError(f"{name}: budget reached: {said}, so it was not sent; resume with a higher --max-cost "
                        "to go on")
    return held


def settle_attempt(held: float | None, model: str, gen: Generation | None, worst_in: int = 0,
                   max_tokens: int = 0) -> None:
    """After an attempt reserved by :func:`reserve_attempt`: its reservation becomes its actual cost (a
    failed attempt's is unknown: 0, as the logs count it). A reply whose server gave no usable count of its
    tokens (missing, negative, fractional, past 10^9) is settled at the attempt's worst case (``worst_in``
    in, ``max_tokens`` out): a cap never learns less than it may have cost."""
    cap = SPEND.get()
    if held is None or cap is None:
        return
    tokens_in = gen.tokens_in if gen else None
    tokens_out = gen.tokens_out if gen else None
    if gen is not None:
        tokens_in = worst_in if tokens_in is None else tokens_in
        tokens_out = max_tokens if tokens_out is None else tokens_out
    cap[0].settle(held, cap[1], (gen.model if gen else None) or model, tokens_in, tokens_out)


def token_count(value: Any, what: str, provider: str) -> int | None:
    """A server's count of tokens if it is one: a whole number in [0, 10^9] (``12.0`` is 12); else None with a
    warning that names the field and the value (once per field and process), so a negative or absurd count
    never becomes a cost."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        value = int(value)
    if type(value) is int and 0 <= value <= MAX_TOKENS_COUNTED:
        return value
    if (provider, what) in _WARNED:  # said once per field and process: a server that always sends -1 is no flood
        return None
    _WARNED.add((provider, what))
    log.warning("%s: the server's %s = %.40r is not a token count (a whole number in [0, 10^9]); counted as "
                "unknown (a --max-cost cap counts the call at its worst case)", provider, what, value)
    return None


class CallError(Exception):
    """A call that failed for good: not retryable, or out of attempts or time. Message is key-free."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.attempts = attempts


class MalformedResponse(Exception):
    """The server answered 200 but not with what its protocol promises (no choices, no content...)."""


@dataclass(frozen=True)
class Failure:
    """How one failed attempt is judged."""

    retryable: bool
    message: str
    status: int | None = None
    retry_after: float | None = None
    down: bool = False  # refused, timed out, connection lost, 5xx: the endpoint itself is the problem
    at_once: bool = False  # sent again without a pause (a kept-alive connection the server had closed)


def parse_retry_after(headers: Mapping[str, str] | Any | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI), ``Retry-After`` seconds or an HTTP date."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            wait = float(ms) / 1000.0
            if not math.isnan(wait):
                return max(0.0, wait)
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = str(value).strip()
    try:
        wait = float(value)
    except ValueError:
        pass
    else:  # "inf" and "1e18" are kept as asked: the caller clips every wait to its own bounds
        return None if math.isnan(wait) else max(0.0, wait)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def status_failure(status: int, message: str, headers: Any = None) -> Failure:
    """Judge an HTTP error status the same way for every provider."""
    retryable = status in RETRYABLE_STATUS or status >= 500
    # a 5xx is the server's own failure (a crashed replica behind a gateway answers 502/503, not a refusal):
    # with several endpoints it is set aside like one that refuses connections
    return Failure(retryable, f"HTTP {status}: {message}", status,
                   parse_retry_after(headers) if retryable else None, down=status >= 500)


def backoff_delay(retry: int) -> float:
    """Delay before retry number ``retry`` (0-based) when the server gave no Retry-After."""
    d = min(BACKOFF_CAP_S, BACKOFF_BASE_S * (2 ** retry))
    return d / 2 + random.uniform(0, d / 2)


def mask_secrets(text: str, *secrets: str | None) -> str:
    """``text`` with every occurrence of each secret (4 characters or more) replaced by ``***``."""
    for s in secrets:
        if s and len(s) >= 4 and s in text:
            text = text.replace(s, "***")
    return text


def redact(text: str, *secrets: str | None) -> str:
    """Remove secrets (and their common renderings) from text that may end up in a log."""
    text = mask_secrets(text, *secrets)
    # a bearer token or api-key header echoed by a proxy, whatever the key was
    return re.sub(r"(?i)(bearer\s+|api[-_]?key[\"'=:\s]+)[A-Za-z0-9._\-]{12,}", r"\1***", text)


def _pieces(text: str) -> list[str]:
    """Values of a query or fragment (``a=1&b=2;c``): every value, and a bare item as a whole."""
    out = []
    for item in re.split(r"[&;]", text):
        key, sep, value = item.partition("=")
        out.append(value if sep else key)
    return [x for x in out if x]


def url_secrets(url: str | Sequence[str] | None) -> list[str]:
    """Everything in a base_url (or each of a list of them) that may be a credential: userinfo
    (``user:pass@``), every query value, the fragment. Each as written and percent-decoded (``%2D``, ``+``),
    so :func:`redact` finds it in an error message whichever form the SDK echoes."""
    if not url:
        return []
    if not isinstance(url, str):
        return [x for u in url for x in url_secrets(u)]
    from urllib.parse import unquote, unquote_plus, urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    raw = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        raw += [x for x in userinfo.split(":", 1) if x]
    raw += _pieces(parts.query)
    if parts.fragment:
        raw += [*_pieces(parts.fragment), parts.fragment]
    found: list[str] = []
    for x in raw:
        for form in (x, unquote(x), unquote_plus(x)):
            if form and form not in found:
                found.append(form)
    return found


def split_query(url: str | None) -> tuple[str | None, dict[str, str]]:
    """A base_url without its query string, and the query's parameters, in the order typed.

    Why: the SDKs append the endpoint's path to base_url as a string, so ``http://host/v1?api-version=1``
    became ``/v1/?api-version=1/chat/completions`` (404 on an Azure-style server, which needs the query on
    every request). The providers give the SDK the bare URL and the parameters as the default query of each
    request, so what the user typed reaches the server. A fragment is never sent, so it is dropped."""
    if not url or "?" not in url:
        return url, {}
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(url)
    return (urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
            dict(parse_qsl(parts.query, keep_blank_values=True)))


def public_urls(url: Any, keys: Sequence[str | None] = ()) -> Any:
    """:func:`public_url` of a base_url, or of each of a list of them (several endpoints)."""
    if isinstance(url, str):
        return public_url(url, keys)
    if isinstance(url, (list, tuple)):
        return [public_url(u, keys) if isinstance(u, str) else u for u in url]
    return url


def public_url(url: str, keys: Sequence[str | None] = ()) -> str:
    """The base_url with any credentials masked, for files and logs: scheme, host, port and path stay;
    userinfo, every query value and the fragment become ``***``, however they were encoded; so does each of
    ``keys`` (the API keys the player sends) wherever the path holds it, as typed or percent-encoded (a proxy
    that takes the key in its path: ``https://proxy/KEY/v1``)."""
    from urllib.parse import quote, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return "<base_url not shown: it does not parse as a URL>"
    host = parts.netloc.rpartition("@")[2]
    netloc = ("***@" if "@" in parts.netloc else "") + host
    query = "&".join(f"{item.partition('=')[0]}=***" if "=" in item else "***"
                     for item in re.split(r"[&;]", parts.query) if item)
    path = parts.path
    for key in keys:
        if key and len(key) >= 4:
            for form in dict.fromkeys((key, quote(key, safe=""), quote(key))):
                path = path.replace(form, "***")
    return urlunsplit((parts.scheme, netloc, path, query, "***" if parts.fragment else ""))


async def _within(coro: Awaitable[T], seconds: float) -> T:
    """A hard deadline on one attempt (SDK timeouts are per socket operation, not per call).
    ``asyncio.timeout`` (3.11+) avoids the extra task that ``wait_for`` creates for every call."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await coro
    return await asyncio.wait_for(coro, seconds)


class RateLimiter:
    """Spaces request starts at least ``60 / rpm`` seconds apart (a token bucket of size one).

    Spacing rather than bursting keeps us under limits that providers measure over short windows.
    Slots are reserved without awaiting, so it is safe for any number of tasks on one event loop.
    """

    def __init__(self, requests_per_minute: float) -> None:
        self.interval = 60.0 / requests_per_minute
        self._next = 0.0

    async def acquire(self) -> None:
        now = time.monotonic()
        slot = max(now, self._next)
        self._next = slot + self.interval
        if slot > now:
            await asyncio.sleep(slot - now)


class LocalGate:
    """The provider's limits in this process: ``max_connections`` requests at once, ``requests_per_minute``
    spacing, and the pause a Retry-After asked for. On a Ray cluster a gate of the same shape asks a
    cluster-wide actor instead (agents/cluster.py), so the limits hold for every worker together."""

    def __init__(self, settings: LLMSettings) -> None:
        self.semaphore = asyncio.Semaphore(settings.max_connections)
        self.limiter = RateLimiter(settings.requests_per_minute) if settings.requests_per_minute else None
        self.cool_until = 0.0  # monotonic time before which no request is sent (server asked us to wait)

    @contextlib.asynccontextmanager
    async def slot(self) -> Any:
        async with self.semaphore:
            # checked after the semaphore: tasks queued behind it must see a pause set meanwhile
            while self.cool_until > time.monotonic():
                await asyncio.sleep(self.cool_until - time.monotonic())
            if self.limiter is not None:
                await self.limiter.acquire()
            yield

    def pause(self, seconds: float) -> None:
        self.cool_until = max(self.cool_until, time.monotonic() + seconds)


class _LoopState:
    """What must belong to one event loop: the SDK clients (connection pools, one per endpoint), the gate."""

    def __init__(self, loop: asyncio.AbstractEventLoop, n_endpoints: int, gate: Any) -> None:
        self.loop = loop
        self.clients: list[Any] = [None] * n_endpoints
        self.gate = gate


class RemoteProvider(Provider):
    """A provider reached over HTTP. Subclasses make the client, send one attempt and judge errors."""

    requires_model: bool = True

    def __init__(self, settings: LLMSettings) -> None:
        super().__init__(settings)
        self._key = api_key(self.name, settings)
        self._states: dict[int, _LoopState] = {}
        self.endpoints: EndpointPool | None = None
        if isinstance(settings.base_url, list):  # several servers: sessions spread, refusals set aside
            self.endpoints = EndpointPool(settings.base_url, [public_url(u, [self._key]) for u in settings.base_url])
        # a Ray worker sets this so the limits hold for the whole cluster (agents/cluster.py)
        self.gate_factory: Any = None

    # -- what a subclass provides -------------------------------------------------------------------
    @abc.abstractmethod
    def _make_client(self, settings: LLMSettings, key: str) -> Any:
        """Build the SDK client with its own retries off; called inside the running event loop."""

    @abc.abstractmethod
    async def _attempt(self, client: Any, messages: Sequence[Message], settings: LLMSettings,
                       schema: dict[str, Any] | None = None) -> Generation:
        """Send one request (constrained to ``schema`` when given); raise the SDK's exception or
        :class:`MalformedResponse` on failure."""

    def _judge(self, exc: BaseException) -> Failure | None:
        """Classify an SDK exception; ``None`` leaves it to the generic rules."""
        return None

    async def _close_client(self, client: Any) -> None:
        close = getattr(client, "close", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result

    # -- the shared machinery -----------------------------------------------------------------------
    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(id(loop))
        if state is None or state.loop is not loop:
            # a loop that has ended cannot be used to close its client; drop it
            self._states = {k: s for k, s in self._states.items() if not s.loop.is_closed()}
            gate = self.gate_factory(self.settings) if self.gate_factory is not None else LocalGate(self.settings)
            state = _LoopState(loop, len(self.endpoints.urls) if self.endpoints else 1, gate)
            for i in range(len(state.clients)):  # made now, before any limit: a first call is not slower
                self._client(state, i)
            self._states[id(loop)] = state
        return state

    def _endpoint(self, settings: LLMSettings, i: int) -> LLMSettings:
        """The settings a client and an attempt see: one base_url, endpoint ``i`` of a list."""
        return settings if self.endpoints is None else settings.model_copy(update={"base_url": self.endpoints.urls[i]})

    def _client(self, state: _LoopState, i: int) -> Any:
        if state.clients[i] is None:
            key = self._key or "none"  # loopback servers need no key, but SDKs insist on one
            state.clients[i] = self._make_client(self._endpoint(self.settings, i), key)
        return state.clients[i]

    def _failure(self, exc: BaseException, timeout_s: float, url: str | None = None) -> Failure:
        big = _in_chain(exc, lambda e: getattr(e, "too_large", False))
        if big is not None:  # http11.ReplyTooLarge on either path (the SDK wraps it): the same reply again
            return Failure(False, f"reply too large: {big}")
        if isinstance(exc, MalformedResponse):
            return Failure(False, f"malformed response: {exc}")
        url = url if url is not None else self.settings.base_url if isinstance(self.settings.base_url, str) else None
        cert = _certificate_error(exc)
        if cert is not None:  # an SSLCertVerificationError is also a ValueError: named before "malformed"
            where = public_url(url, [self._key]) if url else "the server"
            return Failure(False, f"certificate verification failed for {where}: {cert} (the server's "
                                  "certificate is not trusted here; see docs/trust.md)")
        if getattr(exc, "resend_now", False):  # http11.StaleConnection: an attempt of its own, sent at once
            return Failure(True, f"connection lost: {exc}", at_once=True)
        if _refused(exc):  # before the SDK's own reading: some transports call a refusal a timeout
            where = public_url(url, [self._key]) if url else "the server"
            return Failure(True, f"connection refused by {where} (nothing is listening there; is the server "
                                 "running?)", down=True)
        if _dropped(exc):  # the same: the openai SDK's transport calls a server gone mid-request a timeout
            where = public_url(url, [self._key]) if url else "the server"
            return Failure(True, f"connection lost: {where} closed it before answering (the server stopped or "
                                 "was killed?)", down=True)
        if isinstance(exc, TimeoutError):  # asyncio.TimeoutError is TimeoutError from 3.11
            return Failure(True, f"timed out after {timeout_s:g} s", down=True)
        judged = self._judge(exc)
        if judged is not None:
            return judged
        if isinstance(exc, (ConnectionError, OSError)):
            return Failure(True, f"connection error: {exc}", down=True)
        return Failure(False, f"{type(exc).__name__}: {exc}")

    def _model(self, settings: LLMSettings) -> str:
        model = settings.model or self.default_model
        if not model:
            raise CallError(f"{self.name}: no model set (model = \"...\")")
        return model

    async def generate(self, messages: Sequence[Message], settings: LLMSettings,
                       schema: dict[str, Any] | None = None) -> Generation:
        self._model(settings)  # fail before any request when no model is set
        state = self._state()
        pool = self.endpoints
        start = time.monotonic()
        deadline = start + settings.retry_max_wait_s
        attempt = 0
        worst_in = prompt_token_bound(messages, schema) if SPEND.get() is not None else 0
        while True:
            async with state.gate.slot():
                # the attempt's worst case, reserved against a cap before it is sent (a cap is a cap); no await
                # from here to the try below, so a cancelled call never leaves a reservation behind
                held = await reserve_attempt(self.name, self._model(settings), worst_in, settings.max_tokens)
                i = pool.choose(AFFINITY.get()) if pool is not None else 0
                if pool is not None:
                    pool.in_flight[i] += 1
                t0 = time.perf_counter()
                gen: Generation | None = None
                try:
                    gen = await _within(self._attempt(self._client(state, i), messages, self._endpoint(settings, i),
                                                      schema), settings.timeout_s)
                except Exception as exc:  # noqa: BLE001 - every failure is judged below
                    failure = self._failure(exc, settings.timeout_s, pool.urls[i] if pool is not None else None)
                    if failure.retryable and failure.retry_after is not None:
                        # clipped to what is left of retry_max_wait_s before it pauses anything: a server's
                        # "Retry-After: 1e18" (or a date in 2100) never freezes the endpoint past the run's bounds
                        left = max(0.0, deadline - time.monotonic())
                        state.gate.pause(min(failure.retry_after, left))  # before the slot is free
                else:
                    gen.latency_s = time.perf_counter() - t0
                    if pool is not None:
                        pool.served[i] += 1
                    return gen
                finally:
                    if pool is not None:
                        pool.in_flight[i] -= 1
                    settle_attempt(held, self._model(settings), gen, worst_in, settings.max_tokens)
            attempt += 1
            message = redact(failure.message, self._key, *url_secrets(self.settings.base_url))
            other = pool is not None and failure.down and pool.set_aside(i, message)
            if not failure.retryable:
                raise CallError(f"{self.name}: {message}", status=failure.status, attempts=attempt)
            if attempt > settings.max_retries:
                raise CallError(f"{self.name}: {message} (gave up after {attempt} attempts)",
                                status=failure.status, retryable=True, attempts=attempt)
            if other or failure.at_once:
                continue  # another endpoint is up, or a stale connection: try at once (the attempt counts)
            left = deadline - time.monotonic()
            if failure.retry_after is not None and failure.retry_after > left:
                raise CallError(
                    f"{self.name}: {message} (gave up after {attempt} attempts: the server asked to wait "
                    f"{_seconds(failure.retry_after)}, more than the {max(0.0, left):.1f} s left of "
                    f"retry_max_wait_s = {settings.retry_max_wait_s:g}; the endpoint was paused "
                    f"{max(0.0, left):.1f} s at most)", status=failure.status, retryable=True, attempts=attempt)
            if failure.retry_after is not None:
                wait = failure.retry_after + random.uniform(0, min(1.0, 0.1 * failure.retry_after))
            else:
                wait = backoff_delay(attempt - 1)
            if time.monotonic() + wait > deadline:
                raise CallError(
                    f"{self.name}: {message} (gave up after {attempt} attempts: waiting {wait:.1f} s more "
                    f"would pass retry_max_wait_s = {settings.retry_max_wait_s:g})",
                    status=failure.status, retryable=True, attempts=attempt)
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        states, self._states = self._states, {}
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for state in states.values():
            if state.loop is loop:
                for client in state.clients:
                    if client is not None:  # closing must not mask the experiment's result
                        with contextlib.suppress(Exception):
                            await self._close_client(client)


def _in_chain(exc: BaseException, test: Any) -> BaseException | None:
    """The first exception in ``exc``'s cause chain that passes ``test``, or None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if test(cur):
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


def _seconds(wait: float) -> str:
    return "forever (Retry-After: inf)" if math.isinf(wait) else f"{wait:.4g} s"


def _certificate_error(exc: BaseException) -> str | None:
    """The reason of a failed certificate check anywhere in the cause chain (``ssl`` raises it; aiohttp keeps it
    as ``certificate_error``), or None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        inner = getattr(cur, "certificate_error", None)
        if isinstance(inner, ssl.SSLCertVerificationError):
            cur = inner
        if isinstance(cur, ssl.SSLCertVerificationError):
            return str(cur.verify_message or cur.reason or cur)
        cur = cur.__cause__ or cur.__context__
    return None


def _refused(exc: BaseException) -> bool:
    """Whether a refused TCP connection lies anywhere in the exception's cause chain."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError):
            return True
        if any(isinstance(a, ConnectionRefusedError) for a in getattr(cur, "args", ())):
            return True  # aiohttp keeps the OSError in args (ClientConnectorError(key, os_error))
        cur = cur.__cause__ or cur.__context__
    return False


_DROPPED = ("ServerDisconnectedError", "RemoteProtocolError", "IncompleteRead")


def _dropped(exc: BaseException) -> bool:
    """Whether the server closed or reset the connection before its reply, anywhere in the cause chain:
    aiohttp's ServerDisconnectedError (httpx's RemoteProtocolError), a reset or a broken pipe. Named by
    class name: this module imports no HTTP client."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return True
        if type(cur).__name__ in _DROPPED:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def server_detail(body: Any) -> str | None:
    """The server's own explanation in an error body: OpenAI's ``error.message`` or FastAPI's ``detail``
    (transformers serve, vLLM), so a 400 says what the server disliked."""
    if not isinstance(body, dict):
        return None
    err = body.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return err["message"]
    if isinstance(err, str):
        return err
    detail = body.get("detail", body.get("message"))
    if isinstance(detail, str):
        return detail
    if detail is not None:
        import json

        return json.dumps(detail)[:500]
    return None


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """APIs that take the system prompt apart (Anthropic, Gemini) get it joined from all system turns."""
    system = [m.content for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    return ("\n\n".join(system) if system else None), rest
