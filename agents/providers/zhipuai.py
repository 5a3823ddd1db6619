"""ZhipuAI / Z.ai GLM models through ``zai-sdk`` (the successor of ``zhipuai``).

The SDK has only a blocking client, so calls run in a thread pool of exactly ``max_connections``
workers: the event loop never blocks and the pool cannot grow past the connection limit. A key from
``ZAI_API_KEY`` selects the international endpoint (api.z.ai); otherwise the mainland one
(open.bigmodel.cn). Note that the SDK itself clamps ``temperature`` and ``top_p`` into (0, 1).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import httpx
import zai
from zai.core._errors import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
)

from ..base import Message
from ..calls import (
    Failure,
    MalformedResponse,
    RemoteProvider,
    split_query,
    status_failure,
    token_count,
)
from ..keys import api_key_source
from ..reasoning import split_message
from ..settings import Generation, LLMSettings


class ZhipuAIProvider(RemoteProvider):
    name: ClassVar[str] = "zhipuai"

    def __init__(self, settings: LLMSettings) -> None:
        super().__init__(settings)
        self._pool: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.settings.max_connections,
                                            thread_name_prefix="econarena-zai")
        return self._pool

    def _make_client(self, settings: LLMSettings, key: str) -> zai.ZhipuAiClient | zai.ZaiClient:
        source = api_key_source(self.name, settings)
        cls = zai.ZaiClient if source is not None and source[0] == "ZAI_API_KEY" else zai.ZhipuAiClient
        base_url, query = split_query(settings.url)  # the query goes on every request (calls.split_query)
        http = httpx.Client(
            params=query or None, timeout=settings.timeout_s,
            limits=httpx.Limits(max_connections=settings.max_connections,
                                max_keepalive_connections=settings.max_connections))
        # disable_token_cache: send the key as a bearer token rather than a locally signed JWT
        return cls(api_key=key, base_url=base_url, max_retries=0, timeout=settings.timeout_s,
                   http_client=http, disable_token_cache=True)

    async def _close_client(self, client: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor(), client.close)

    @staticmethod
    def _send(client: Any, model: str, messages: list[dict[str, str]], settings: LLMSettings,
              schema: dict[str, Any] | None = None) -> Any:
        kwargs: dict[str, Any] = {}
        if schema is not None:
            # GLM's JSON mode: a JSON object is guaranteed, the keys come from the prompt (no schema field)
            kwargs["response_format"] = {"type": "json_object"}
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        if settings.top_p is not None:
            kwargs["top_p"] = settings.top_p
        if settings.seed is not None:
            kwargs["seed"] = settings.seed
        # GLM's thinking switch, and the SDK's reasoning_effort for the models that grade it (glm-5.2 on)
        if settings.reasoning_effort == "none":
            kwargs["thinking"] = {"type": "disabled"}
        elif settings.reasoning_effort is not None:
            kwargs["thinking"] = {"type": "enabled"}
            kwargs["reasoning_effort"] = settings.reasoning_effort
        return client.chat.completions.create(model=model, messages=messages, max_tokens=settings.max_tokens,
                                              stream=False, timeout=settings.timeout_s, **kwargs)

    async def _attempt(self, client: Any, messages: Sequence[Message], settings: LLMSettings,
                       schema: dict[str, Any] | None = None) -> Generation:
        call = functools.partial(self._send, client, self._model(settings), [m.to_dict() for m in messages],
                                 settings, schema)
        resp = await asyncio.get_running_loop().run_in_executor(self._executor(), call)
        try:
            message = resp.choices[0].message
            text = message.content
            truncated = getattr(resp.choices[0], "finish_reason", None) == "length"
        except (AttributeError, IndexError, TypeError, KeyError):
            raise MalformedResponse("no choices[0].message in the chat completion") from None
        if text is not None and not isinstance(text, str):
            raise MalformedResponse(f"message content is {type(text).__name__}, not text")
        usage = getattr(resp, "usage", None)
        model = getattr(resp, "model", None)
        gen = Generation(text=text or "", model=model if isinstance(model, str) else None,
                         tokens_in=token_count(getattr(usage, "prompt_tokens", None), "usage.prompt_tokens",
                                               self.name),
                         tokens_out=token_count(getattr(usage, "completion_tokens", None),
                                                "usage.completion_tokens", self.name), truncated=truncated)
        # the same split as an OpenAI-compatible message: reasoning_content beside the content, or inline
        count = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None)
        return gen.reasoned(split_message(
            {"content": text, "reasoning_content": getattr(message, "reasoning_content", None)},
            {"reasoning_tokens": count}, end=settings.reasoning_end, opened=settings.reasoning_end is not None))

    def _judge(self, exc: BaseException) -> Failure | None:
        if isinstance(exc, APIStatusError):
            return status_failure(exc.status_code, str(exc), exc.response.headers)
        if isinstance(exc, APITimeoutError):
            return Failure(True, "timed out", down=True)
        if isinstance(exc, APIConnectionError):
            return Failure(True, f"connection error: {exc.__cause__ or exc}", down=True)
        if isinstance(exc, (APIResponseValidationError, ValueError)):
            return Failure(False, f"malformed response: {exc}")
        return None

    async def aclose(self) -> None:
        await super().aclose()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
