"""Google Gemini through ``google-genai`` (the successor of ``google-generativeai``, which reached end of
support on 2025-11-30), asynchronously through ``client.aio``.

The SDK retries connection errors on its own unless retry options are given, so we give it
``attempts=1``. Gemini reports how long to back off in the error body (``google.rpc.RetryInfo``), not
always in a ``Retry-After`` header; both are honoured.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from google import genai
from google.genai import errors, types

from ..base import Message
from ..calls import (
    Failure,
    MalformedResponse,
    RemoteProvider,
    split_system,
    status_failure,
    token_count,
)
from ..reasoning import ReplyParts, split_text
from ..settings import Generation, LLMSettings


def _retry_info(details: Any) -> float | None:
    """``retryDelay`` ("1.5s") from a google.rpc.RetryInfo entry of an error body, if any."""
    try:
        entries = details.get("error", details).get("details") or []
    except AttributeError:
        return None
    for entry in entries:
        if isinstance(entry, dict) and str(entry.get("@type", "")).endswith("RetryInfo"):
            m = re.fullmatch(r"\s*([0-9.]+)s\s*", str(entry.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    return None


_LEVELS = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}


def thinking_config(settings: LLMSettings) -> types.ThinkingConfig | None:
    """Gemini's form of the reasoning settings: ``reasoning_tokens`` is ``thinking_budget``, an effort
    ``thinking_level`` (``none``: a budget of 0, thinking off); thoughts are asked for whenever a reasoning
    setting is set, so they can be stored. None when neither is set (the model's default)."""
    if settings.reasoning_tokens is not None:
        return types.ThinkingConfig(thinking_budget=settings.reasoning_tokens, include_thoughts=True)
    if settings.reasoning_effort == "none":
        return types.ThinkingConfig(thinking_budget=0)
    if settings.reasoning_effort is not None:
        return types.ThinkingConfig(thinking_level=_LEVELS[settings.reasoning_effort],  # type: ignore[arg-type]  # enum by name
                                    include_thoughts=True)
    return None


class GoogleProvider(RemoteProvider):
    name: ClassVar[str] = "google"

    def _make_client(self, settings: LLMSettings, key: str) -> genai.Client:
        options = types.HttpOptions(
            timeout=int(settings.timeout_s * 1000),  # milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        if settings.url:
            options.base_url = settings.url
            options.api_version = "v1beta"
        return genai.Client(api_key=key, vertexai=False, http_options=options)

    async def _close_client(self, client: genai.Client) -> None:
        await client.aio.aclose()

    async def _attempt(self, client: genai.Client, messages: Sequence[Message],
                       settings: LLMSettings, schema: dict[str, Any] | None = None) -> Generation:
        system, turns = split_system(messages)
        structured: dict[str, Any] = {}
        if schema is not None:  # Gemini takes plain JSON Schema here, bounds and lengths included
            structured = {"response_mime_type": "application/json", "response_json_schema": schema}
        thinking = thinking_config(settings)
        if thinking is not None:
            structured["thinking_config"] = thinking
        config = types.GenerateContentConfig(**structured,
            system_instruction=system, temperature=settings.temperature, top_p=settings.top_p,
            max_output_tokens=settings.max_tokens, seed=settings.seed,
            # per request: players sharing this client may have different timeouts
            http_options=types.HttpOptions(timeout=int(settings.timeout_s * 1000),
                                           retry_options=types.HttpRetryOptions(attempts=1)))
        contents = [types.Content(role="model" if m.role == "assistant" else "user",
                                  parts=[types.Part(text=m.content)]) for m in turns]
        resp = await client.aio.models.generate_content(
            model=self._model(settings), contents=contents, config=config)
        candidates = resp.candidates
        truncated = False
        thoughts: list[str] = []
        signed = False
        if not candidates:
            feedback = getattr(resp, "prompt_feedback", None)
            if feedback is not None and getattr(feedback, "block_reason", None):
                # a blocked prompt is the model's (or its filter's) answer, not an infrastructure failure
                text = ""
            else:
                raise MalformedResponse("no candidates in the generateContent response")
        else:
            content = candidates[0].content
            if content is None and candidates[0].finish_reason is None:
                raise MalformedResponse("candidate has neither content nor finishReason")
            parts = (content.parts if content is not None else None) or []
            text = "".join(p.text for p in parts if isinstance(p.text, str) and not p.thought)
            thoughts = [p.text.strip() for p in parts if p.thought and isinstance(p.text, str) and p.text.strip()]
            signed = any(p.thought_signature for p in parts)
            truncated = str(getattr(candidates[0].finish_reason, "value", candidates[0].finish_reason)) == "MAX_TOKENS"
        usage = resp.usage_metadata
        count = usage.thoughts_token_count if usage else None
        # Gemini counts the thinking apart from the answer's tokens but bills both as output: tokens_out is
        # their sum, so costs and the token columns see what was billed
        out = token_count(usage.candidates_token_count if usage else None, "candidatesTokenCount", self.name)
        count = token_count(count, "thoughtsTokenCount", self.name)
        if count:
            out = (out or 0) + count
        gen = Generation(
            text=text, model=resp.model_version or settings.model,
            tokens_in=token_count(usage.prompt_token_count if usage else None, "promptTokenCount", self.name),
            tokens_out=out, truncated=truncated)
        parts_ = split_text(text, end=settings.reasoning_end, opened=settings.reasoning_end is not None,
                            tokens=count if isinstance(count, int) and count >= 0 else None)
        reasoning = "\n".join(thoughts + ([parts_.reasoning] if parts_.reasoning else []))
        # thought tokens spent with no thought text shown (include_thoughts off, or only a signature): hidden
        hidden = not reasoning and (bool(parts_.tokens) or signed)
        unfinished = parts_.unfinished or (truncated and bool(thoughts or parts_.tokens) and not text.strip())
        return gen.reasoned(ReplyParts(parts_.answer, reasoning, hidden, unfinished, parts_.tokens))

    def _judge(self, exc: BaseException) -> Failure | None:
        if isinstance(exc, errors.UnknownApiResponseError):
            return Failure(False, f"malformed response: {exc}")
        if isinstance(exc, errors.APIError):
            code = int(exc.code) if isinstance(exc.code, int) else 0
            failure = status_failure(code, f"{exc.status or ''} {exc.message or ''}".strip(),
                                     getattr(exc.response, "headers", None))
            if failure.retryable and failure.retry_after is None:
                delay = _retry_info(exc.details)
                if delay is not None:
                    return Failure(True, failure.message, code, delay)
            return failure
        try:
            import aiohttp

            if isinstance(exc, aiohttp.ClientError):
                return Failure(True, f"connection error: {exc}", down=True)
        except ImportError:
            pass
        name = type(exc).__module__ or ""
        if name.startswith(("httpx", "httpx2")) and "Error" in type(exc).__name__:
            return Failure(True, f"connection error: {exc}", down=True)
        if isinstance(exc, ValueError):  # pydantic validation of a body that is JSON but not a response
            return Failure(False, f"malformed response: {exc}")
        return None

