"""LLM players: the agent that turns a decision into a provider call, with the response cache.

Settings and the provider interface are in :mod:`.settings`, the provider registry in
:mod:`.providers`, checks before a run and ``.env`` files in :mod:`.preflight`; their names are
re-exported here.

Retries, connection and rate limits live with the API providers (``agents/calls.py``); the response cache
sits here in :class:`LLMAgent`, because only the agent sees which decision a call belongs to, and that is
what makes two identical prompts from different seats two different samples.
"""

from __future__ import annotations

import inspect
import logging
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from .base import AgentError, DecisionRequest, Message, Reply
from .endpoints import AFFINITY
from .keys import api_key, api_key_source
from .preflight import (
    is_loopback,
    load_dotenv,
    local_model_problems,
    preflight,
    settings_problems,
)
from .providers import PROVIDERS, ProviderRecord, unknown_provider
from .settings import LLM_SETTING_KEYS, Generation, LLMSettings, Provider

__all__ = [
    "LLM_SETTING_KEYS", "PROVIDERS", "Generation", "LLMAgent", "LLMSettings", "Provider", "ProviderRecord",
    "RuntimeOptions", "api_key", "api_key_source", "build_llm_agent", "close_all", "decision_seed",
    "is_loopback", "load_dotenv", "local_model_problems", "preflight", "provider_key", "settings_problems",
    "share_provider", "unknown_provider",
]

if TYPE_CHECKING:
    from .cache import ReplyCache

log = logging.getLogger(__name__)
SERVED = ("served", "fingerprint")  # a cached reply's build: what the server said it ran (provenance only)


def decision_seed(seed: int, request: DecisionRequest) -> int:
    """A stable 31-bit seed from the player's seed and the decision's coordinates."""
    import hashlib

    c = request.coords
    text = f"{seed}|{c.get('lineup')}|{c.get('session')}|{c.get('run')}|{c.get('round')}|{request.player}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF


class LLMAgent:
    """An agent backed by a provider. Retries and rate limits live in the provider layer; the cache here."""

    def __init__(self, label: str, provider_name: str, provider: Provider, settings: LLMSettings,
                 cache: ReplyCache | None = None):
        self.label = label
        self.kind = provider_name
        self.provider = provider
        self.settings = settings
        self.model = settings.model or provider.default_model
        self.cache = cache
        self._secrets: tuple[str | None, ...] | None = None  # masked in every stored reply (see _masked)
        self.stale = 0  # cached replies not served: another build of the model made them

    @overload
    def _masked(self, text: str) -> str: ...
    @overload
    def _masked(self, text: None) -> None: ...
    def _masked(self, text: str | None) -> str | None:
        """``text`` with the key's value and a base_url's credentials replaced by ``***`` (exact matches only:
        a reply is the model's words, so no pattern guesses at other tokens)."""
        if not text:
            return text
        from .calls import mask_secrets, url_secrets

        if self._secrets is None:
            self._secrets = (api_key(self.kind, self.settings), *url_secrets(self.settings.base_url))
        return mask_secrets(text, *self._secrets)

    def _messages(self, request: DecisionRequest) -> list[Message]:
        messages = list(request.messages)
        if self.settings.system is not None:
            messages = [Message("system", self.settings.system)] + [m for m in messages if m.role != "system"]
        return messages

    def _cache_key(self, messages: list[Message], request: DecisionRequest) -> str:
        from .cache import cache_key, sample_index

        s = self.settings
        return cache_key(
            provider=self.kind, model=self.model, base_url=s.base_url, messages=messages,
            settings={"temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens,
                      "seed": s.seed, "system": s.system,
                      # a reasoning setting asks another question; keys without one stay as they were
                      **{k: v for k, v in (("reasoning_effort", s.reasoning_effort),
                                            ("reasoning_tokens", s.reasoning_tokens),
                                            ("reasoning_end", s.reasoning_end)) if v is not None},
                      # a constrained reply is another sample than a free one; old keys stay valid when off
                      **({"structured": s.structured, "schema": request.schema,
                          "response_format": s.response_format} if request.schema is not None else {})},
            sample=sample_index(request.coords, request.player, request.decision_index,
                                getattr(request, "seed", None)),
        )

    def build(self) -> dict[str, Any]:
        """The model build now configured: provider, model and what the provider knows before a call (a
        local model's weights). Never a URL or a key: the record is stored in the cache file."""
        return {"provider": self.kind, "model": self.model, **self.provider.build()}

    def _same_build(self, recorded: Any) -> bool:
        """Whether a cached reply was made by the build now configured. What the server reported (its model
        name, fingerprint) is provenance, not compared: it is known only after a call. An entry from before
        builds were recorded names provider and model only (its key holds them): served unless the provider
        now knows more (a local model's weights), since those weights may not be the ones that made it. Weights
        recorded as not found (None) match no build."""
        made = {k: v for k, v in recorded.items() if k not in SERVED} if isinstance(recorded, dict) else \
            {"provider": self.kind, "model": self.model}
        if "weights" in made and made["weights"] is None:  # weights not found then: no build to match
            return False
        return made == self.build()

    async def decide(self, request: DecisionRequest) -> Reply:
        messages = self._messages(request)
        start = time.perf_counter()
        key = None
        if self.cache is not None:
            key = self._cache_key(messages, request)
            hit = self.cache.get(key)
            if inspect.isawaitable(hit):  # the cluster's cache answers from another process (agents/cluster.py)
                hit = await hit
            if hit is not None and not self._same_build(hit.get("build")):
                self.stale += 1
                if self.stale == 1:
                    log.warning("%s: cached replies were made by another build of %s; asked again", self.label,
                                self.model)
                hit = None
            if hit is not None:
                r = hit.get("reasoning") or {}
                return Reply(text=self._masked(hit["text"]), model=self._masked(hit["model"]) or self.model,
                             latency_s=time.perf_counter() - start, tokens_in=hit["tokens_in"],
                             tokens_out=hit["tokens_out"], cached=True, truncated=bool(hit.get("truncated")),
                             reasoning=self._masked(r.get("text")) or "", reasoning_hidden=bool(r.get("hidden")),
                             reasoning_tokens=r.get("tokens") if type(r.get("tokens")) is int else None,
                             unfinished=bool(r.get("unfinished")))
        settings = self.settings
        if settings.seed is not None:  # one reproducible seed per decision, so seats do not echo each other
            settings = settings.model_copy(update={"seed": decision_seed(settings.seed, request)})
        # the session a call belongs to: with several endpoints it stays on one (agents/endpoints.py)
        token = AFFINITY.set((request.coords.get("lineup"), request.coords.get("session")))
        try:
            schema = dict(request.schema) if request.schema is not None else None
            gen = await self.provider.generate(messages, settings, schema)
        except Exception as exc:  # noqa: BLE001 - any failed call is an infrastructure error, not a rule break
            from .calls import redact, url_secrets

            return Reply(text="", model=self.model, latency_s=time.perf_counter() - start,
                         error=redact(f"{type(exc).__name__}: {exc}", api_key(self.kind, self.settings),
                                      *url_secrets(self.settings.base_url)))
        finally:
            AFFINITY.reset(token)
        latency = gen.latency_s or (time.perf_counter() - start)
        # a server (a proxy, a debugging endpoint) may echo the key in a 200 reply: the reply is stored in
        # decisions.jsonl and the cache, so the key's value is masked as in an error's text
        text, model = self._masked(gen.text), self._masked(gen.model)
        reasoning = self._masked(gen.reasoning) or ""
        # cut is what the provider says (the token limit); a reply that ended inside its reasoning where the
        # server said it stopped on its own is no token limit: the Host judges the answer before the block
        truncated = gen.truncated
        if key is not None and self.cache is not None and not gen.cached:
            served = {k: v for k, v in (("served", model), ("fingerprint", self._masked(gen.fingerprint))) if v}
            self.cache.put(key, text=text, model=model, tokens_in=gen.tokens_in,
                           tokens_out=gen.tokens_out, latency_s=latency, truncated=truncated,
                           build={**self.build(), **served},
                           **({"reasoning": {"text": reasoning, "hidden": gen.reasoning_hidden,
                                             "tokens": gen.reasoning_tokens, "unfinished": gen.unfinished}}
                              if (reasoning or gen.reasoning_hidden or gen.reasoning_tokens is not None
                                  or gen.unfinished) else {}))
        return Reply(text=text, model=model or self.model, latency_s=latency,
                     tokens_in=gen.tokens_in, tokens_out=gen.tokens_out, cached=gen.cached, truncated=truncated,
                     reasoning=reasoning, reasoning_hidden=gen.reasoning_hidden,
                     reasoning_tokens=gen.reasoning_tokens, unfinished=gen.unfinished)


@dataclass(frozen=True)
class RuntimeOptions:
    """Switches from the command line that shape how LLM calls are made (not what is asked)."""

    cache: bool = True
    cache_path: str | None = None  # a file or a directory; None: $ECONARENA_CACHE_DIR or the user cache dir


_SHARED: dict[tuple[Any, ...], Provider] = {}


def provider_key(provider_name: str, settings: LLMSettings) -> tuple[Any, ...]:
    """What makes two players share one provider: backend and connection settings (pool, limits, model)."""
    url = tuple(settings.base_url) if isinstance(settings.base_url, list) else settings.base_url
    return (provider_name, url, settings.api_key_env, settings.model, settings.device, settings.dtype,
            settings.max_connections, settings.requests_per_minute)


def share_provider(provider_name: str, settings: LLMSettings, provider: Provider) -> None:
    """Make ``provider`` the one that players with these settings get (a Ray worker installs proxies for
    the cluster's model replicas and limits this way, before its agents are built)."""
    _SHARED[provider_key(provider_name, settings)] = provider


def build_llm_agent(provider_name: str, label: str, settings: LLMSettings,
                    options: RuntimeOptions) -> LLMAgent:
    """Players with the same backend and connection settings share one provider (pool, limits, model)."""
    if provider_name not in PROVIDERS:
        raise unknown_provider(provider_name)
    key = provider_key(provider_name, settings)
    provider = _SHARED.get(key)
    if provider is None:
        provider = PROVIDERS[provider_name].load()(settings)
        _SHARED[key] = provider
    cache = None
    if options.cache:
        from .cache import open_cache

        try:
            cache = open_cache(options.cache_path)
        except (OSError, sqlite3.Error) as exc:
            raise AgentError(f"cannot open the response cache ({exc}); use --no-cache or another path") from None
    return LLMAgent(label, provider_name, provider, settings, cache)


async def close_all() -> None:
    """Close every shared provider; called once when an experiment ends."""
    from .cache import close_caches

    providers = list(_SHARED.values())
    _SHARED.clear()
    try:
        for p in providers:
            await p.aclose()
    finally:
        close_caches()
