"""Anthropic's Messages API (Claude). The system prompt travels in ``system``, not as a message, and
``max_tokens`` is mandatory.

Sampling settings are not sent: API version 2026-10-21, which the 2.x SDK speaks, rejects
``temperature``, ``top_p`` and ``top_k`` with HTTP 400 even at their defaults, and Anthropic never had
a seed. A player that sets them gets one warning, not a failed experiment (a shared ``[llm]``
temperature is common in mixed line-ups).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

import anthropic

from ..base import Message
from ..calls import (
    Failure,
    MalformedResponse,
    RemoteProvider,
    split_query,
    split_system,
    status_failure,
    token_count,
)
from ..reasoning import ReplyParts, split_text
from ..settings import Generation, LLMSettings

log = logging.getLogger(__name__)


def _http_client(settings: LLMSettings) -> Any | None:
    try:
        import httpx2

        return anthropic.DefaultAioHttpClient(
            limits=httpx2.Limits(max_connections=settings.max_connections,
                                 max_keepalive_connections=settings.max_connections),
            timeout=settings.timeout_s)
    except (ImportError, RuntimeError):
        return None


_UNSUPPORTED = frozenset({"minimum", "maximum", "maxLength"})


def anthropic_schema(schema: Any) -> Any:
    """The schema without the keywords Anthropic's structured outputs do not enforce (numeric bounds,
    string lengths): keys, types and choices stay, which is all ``structured = "format"`` promises here."""
    if isinstance(schema, dict):
        # a number under one of these names is the keyword; a property called "minimum" holds a dict
        return {k: anthropic_schema(v) for k, v in schema.items()
                if k not in _UNSUPPORTED or not isinstance(v, (int, float))}
    if isinstance(schema, list):
        return [anthropic_schema(v) for v in schema]
    return schema


def thinking_params(settings: LLMSettings) -> dict[str, Any]:
    """The Messages API's form of the reasoning settings: ``reasoning_tokens`` is extended thinking's
    ``budget_tokens`` (at least 1024 and below ``max_tokens``, checked at validate), ``reasoning_effort``
    ``output_config.effort``, and ``none`` switches thinking off."""
    out: dict[str, Any] = {}
    if settings.reasoning_tokens is not None:
        out["thinking"] = {"type": "enabled", "budget_tokens": settings.reasoning_tokens}
    if settings.reasoning_effort == "none":
        out["thinking"] = {"type": "disabled"}
    elif settings.reasoning_effort is not None:
        out["effort"] = settings.reasoning_effort
    return out


class AnthropicProvider(RemoteProvider):
    name: ClassVar[str] = "anthropic"

    _warned = False

    def _make_client(self, settings: LLMSettings, key: str) -> anthropic.AsyncAnthropic:
        base_url, query = split_query(settings.url)  # the query goes on every request (calls.split_query)
        return anthropic.AsyncAnthropic(api_key=key, base_url=base_url, default_query=query or None, max_retries=0,
                                        timeout=settings.timeout_s, http_client=_http_client(settings),
                                        open_telemetry=False)

    async def _attempt(self, client: anthropic.AsyncAnthropic, messages: Sequence[Message],
                       settings: LLMSettings, schema: dict[str, Any] | None = None) -> Generation:
        system, turns = split_system(messages)
        kwargs: dict[str, Any] = {}
        if system:
            kwargs["system"] = system
        if schema is not None:
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": anthropic_schema(schema)}}
        thinking = thinking_params(settings)
        if "effort" in thinking:
            kwargs["output_config"] = {**kwargs.get("output_config", {}), "effort": thinking["effort"]}
        if "thinking" in thinking:
            kwargs["thinking"] = thinking["thinking"]
        if not self._warned and (settings.temperature is not None or settings.top_p is not None
                                 or settings.seed is not None):
            self._warned = True
            log.warning("anthropic: temperature, top_p and seed are not supported by the Messages API "
                        "and are ignored")
        resp = await client.messages.create(
            model=self._model(settings), max_tokens=settings.max_tokens,
            messages=[{"role": m.role, "content": m.content} for m in turns],  # type: ignore[misc]  # user/assistant only
            timeout=settings.timeout_s, **kwargs)
        blocks = getattr(resp, "content", None)
        if not isinstance(blocks, list):
            raise MalformedResponse("no content blocks in the message")
        text = "".join(b.text for b in blocks
                       if getattr(b, "type", None) == "text" and isinstance(getattr(b, "text", None), str))
        # thinking blocks are the reasoning; redacted_thinking blocks (encrypted) and signed blocks whose
        # text was omitted are reasoning withheld
        thoughts = [b.thinking for b in blocks if getattr(b, "type", None) == "thinking"
                    and isinstance(getattr(b, "thinking", None), str) and b.thinking.strip()]
        hidden = any(getattr(b, "type", None) == "redacted_thinking"
                     or (getattr(b, "type", None) == "thinking" and not (getattr(b, "thinking", None) or "").strip())
                     for b in blocks)
        usage = getattr(resp, "usage", None)
        model = getattr(resp, "model", None)
        details = getattr(usage, "output_tokens_details", None)
        count = getattr(details, "thinking_tokens", None)
        parts = split_text(text, end=settings.reasoning_end, opened=settings.reasoning_end is not None,
                           tokens=count if isinstance(count, int) and count >= 0 else None)
        reasoning = "\n".join([t.strip() for t in thoughts] + ([parts.reasoning] if parts.reasoning else []))
        gen = Generation(text=text, model=model if isinstance(model, str) else None,
                         tokens_in=token_count(getattr(usage, "input_tokens", None), "usage.input_tokens",
                                               self.name),
                         tokens_out=token_count(getattr(usage, "output_tokens", None), "usage.output_tokens",
                                                self.name),
                         truncated=getattr(resp, "stop_reason", None) == "max_tokens")
        # a reply stopped at the token limit before any text block ended inside its thinking
        unfinished = parts.unfinished or (gen.truncated and bool(thoughts or hidden) and not text.strip())
        return gen.reasoned(ReplyParts(parts.answer, reasoning, hidden or bool(parts.tokens and not reasoning),
                                       unfinished, parts.tokens))

    def _judge(self, exc: BaseException) -> Failure | None:
        if isinstance(exc, anthropic.APIStatusError):
            return status_failure(exc.status_code, exc.api_message or exc.message, exc.response.headers)
        if isinstance(exc, anthropic.APITimeoutError):
            return Failure(True, "timed out", down=True)
        if isinstance(exc, anthropic.APIConnectionError):
            return Failure(True, f"connection error: {exc.__cause__ or exc}", down=True)
        if isinstance(exc, (anthropic.APIResponseValidationError, ValueError)):
            return Failure(False, f"malformed response: {exc}")
        return None
