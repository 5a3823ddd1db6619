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
)
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


class GoogleProvider(RemoteProvider):
    name: ClassVar[str] = "google"
    extra: ClassVar[str] = "google"
    sdk_modules: ClassVar[tuple[str, ...]] = ("google.genai",)
    key_envs: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def _make_client(self, settings: LLMSettings, key: str) -> genai.Client:
        options = types.HttpOptions(
            timeout=int(settings.timeout_s * 1000),  # milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        if settings.base_url:
            options.base_url = settings.base_url
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
            truncated = str(getattr(candidates[0].finish_reason, "value", candidates[0].finish_reason)) == "MAX_TOKENS"
        usage = resp.usage_metadata
        return Generation(
            text=text, model=resp.model_version or settings.model,
            tokens_in=usage.prompt_token_count if usage else None,
            tokens_out=usage.candidates_token_count if usage else None, truncated=truncated)

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

