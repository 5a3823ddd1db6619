"""Generation settings and the provider interface every LLM backend implements.

Why a module of its own: the settings are validated from TOML by the hosts, read by every provider, and
must not pull in the agent machinery (cache, retries) or any SDK.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Message

if TYPE_CHECKING:
    pass


class LLMSettings(BaseModel):
    """Generation and connection settings, merged: defaults < provider < TOML ``[llm]`` < player."""

    # strict: TOML is typed, so max_tokens = true or timeout_s = "60" is a mistake, not a 1 or a 60
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    model: str | None = None
    # one server, or several serving the same model (replicas): sessions are spread over them
    base_url: str | list[str] | None = None
    api_key_env: str | None = None
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int = Field(default=512, gt=0)
    seed: int | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    max_connections: int = Field(default=16, gt=0)
    requests_per_minute: float | None = Field(default=None, gt=0)
    system: str | None = None
    max_retries: int = Field(default=5, ge=0)
    retry_max_wait_s: float = Field(default=120.0, gt=0)
    # structured output: "format" constrains keys, types and number lengths; "strict" also the rule bounds
    structured: Literal["off", "format", "strict"] = "off"
    # how the openai provider asks for it: OpenAI's json_schema, or {"type": "json_object", "schema": ...}
    # (llama.cpp's server, which answers json_schema with HTTP 500)
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    # local (hf) models only
    device: str | None = None
    dtype: str | None = None
    max_batch_size: int = Field(default=16, gt=0)
    threads: int | None = Field(default=None, gt=0)

    def merged(self, *layers: dict[str, Any]) -> LLMSettings:
        data = self.model_dump(exclude_unset=True)
        for layer in layers:
            data.update({k: v for k, v in layer.items() if v is not None})
        return LLMSettings(**data)


LLM_SETTING_KEYS = frozenset(LLMSettings.model_fields)


@dataclass
class Generation:
    """What a provider returns for one call."""

    text: str
    model: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_s: float = 0.0
    cached: bool = False
    raw: dict[str, Any] = field(default_factory=dict)
    # the provider says it stopped at the token limit (finish reason "length", Anthropic "max_tokens", Gemini
    # MAX_TOKENS; a local model that used all max_tokens without its end token): the reply is cut, not finished
    truncated: bool = False


class Provider(abc.ABC):
    """One backend. Subclasses set the class attributes and implement :meth:`generate`."""

    name: ClassVar[str]
    extra: ClassVar[str]  # pip extra that installs the SDK
    sdk_modules: ClassVar[tuple[str, ...]]  # import names that must be importable
    key_envs: ClassVar[tuple[str, ...]] = ()  # accepted key variables, first set wins
    default_model: ClassVar[str | None] = None

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    @abc.abstractmethod
    async def generate(self, messages: Sequence[Message], settings: LLMSettings,
                       schema: dict[str, Any] | None = None) -> Generation:
        """One reply; ``schema`` (a JSON Schema) is set for players with ``structured`` on."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the Host calls it once at the end."""
