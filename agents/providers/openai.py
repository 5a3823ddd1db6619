"""OpenAI chat completions, and through ``base_url`` any compatible server (vLLM, SGLang, Ollama,
llama.cpp, DeepSeek, Together...), which is how local models scale past one machine.

The client uses the aiohttp transport when the ``openai[aiohttp]`` extra is present: the default httpx
transport costs about 2 ms of CPU per call and degrades past ~128 calls in flight.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

import openai
from openai.types.chat import ChatCompletion

from ..base import Message
from ..calls import (
    Failure,
    MalformedResponse,
    RemoteProvider,
    server_detail,
    status_failure,
)
from ..settings import Generation, LLMSettings


def _http_client(settings: LLMSettings) -> Any | None:
    """The aiohttp-backed client sized to our connection limit, or None for the SDK's default."""
    try:
        import httpx2

        return openai.DefaultAioHttpClient(
            limits=httpx2.Limits(max_connections=settings.max_connections,
                                 max_keepalive_connections=settings.max_connections),
            timeout=settings.timeout_s)
    except (ImportError, RuntimeError):  # extra not installed: the SDK's httpx transport still works
        return None


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
    if _official(settings.base_url):
        schema = _without(schema, "maxLength")
    return {"type": "json_schema", "json_schema": {"name": "reply", "strict": True, "schema": schema}}


class OpenAIProvider(RemoteProvider):
    name: ClassVar[str] = "openai"
    extra: ClassVar[str] = "openai"
    sdk_modules: ClassVar[tuple[str, ...]] = ("openai",)
    key_envs: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)

    def _make_client(self, settings: LLMSettings, key: str) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=key, base_url=settings.base_url, max_retries=0,
                                  timeout=settings.timeout_s, http_client=_http_client(settings))

    async def _attempt(self, client: openai.AsyncOpenAI, messages: Sequence[Message],
                       settings: LLMSettings, schema: dict[str, Any] | None = None) -> Generation:
        body: dict[str, Any] = {"model": self._model(settings), "messages": [m.to_dict() for m in messages]}
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.seed is not None:
            body["seed"] = settings.seed
        # OpenAI's own API wants max_completion_tokens (reasoning models reject max_tokens); most
        # compatible servers only know max_tokens.
        body["max_completion_tokens" if _official(settings.base_url) else "max_tokens"] = settings.max_tokens
        if schema is not None:
            body["response_format"] = response_format(schema, settings)
        # The SDK's documented generic request (client.post) with the typed response: the same wire call
        # as chat.completions.create without re-walking our already plain-JSON params through its
        # TypedDict transforms, which cost about a third of the per-call CPU at high concurrency.
        resp = await client.post("/chat/completions", body=body, cast_to=ChatCompletion,
                                 options={"timeout": settings.timeout_s})
        try:
            choice = resp.choices[0]
            text = choice.message.content
        except (AttributeError, IndexError, TypeError, KeyError):
            raise MalformedResponse("no choices[0].message in the chat completion") from None
        if text is not None and not isinstance(text, str):
            raise MalformedResponse(f"message content is {type(text).__name__}, not text")
        usage = getattr(resp, "usage", None)
        return Generation(
            text=text or "",
            model=getattr(resp, "model", None) if isinstance(getattr(resp, "model", None), str) else None,
            tokens_in=getattr(usage, "prompt_tokens", None),
            tokens_out=getattr(usage, "completion_tokens", None),
        )

    def _judge(self, exc: BaseException) -> Failure | None:
        if isinstance(exc, openai.APIStatusError):
            detail = server_detail(exc.body)
            message = exc.message if detail is None or detail in exc.message else f"{exc.message}: {detail}"
            return status_failure(exc.status_code, message, exc.response.headers)
        if isinstance(exc, openai.APITimeoutError):
            return Failure(True, "timed out", down=True)
        if isinstance(exc, openai.APIConnectionError):
            return Failure(True, f"connection error: {exc.__cause__ or exc}", down=True)
        if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
            return Failure(False, f"malformed response: {exc}")
        return None
