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
    from .reasoning import ReplyParts


class LLMSettings(BaseModel):
    """Generation and connection settings, merged: defaults < provider < TOML ``[llm]`` < player."""

    # strict: TOML is typed, so max_tokens = true or timeout_s = "60" is a mistake, not a 1 or a 60;
    # a string under a field is its entry in the generated TOML reference (docs/), read at build time
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    model: str | None = None
    """The model's name as the provider or server knows it; `hf`: a hub id, a local folder or a `.gguf`
    file (default: the bundled SmolLM2-135M-Instruct)."""
    base_url: str | list[str] | None = None
    """Another server for the provider (a gateway, vLLM, SGLang, Ollama...), or a list of servers of the same
    model: sessions are spread over them and each stays on one (its prefix cache)."""
    api_key_env: str | None = None
    """The environment variable that holds the key, if not the provider's usual one."""
    temperature: float | None = Field(default=None, ge=0, le=10)
    """Sampling temperature, from 0 to 10 (APIs take at most 2; beyond 10 any sampler is uniform noise, and
    1e308 overflows one); unset: the provider's default (`hf`: greedy)."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling's probability mass."""
    max_tokens: int = Field(default=512, gt=0)
    """The most tokens a reply may have; a reply cut at this limit is recorded as truncated."""
    seed: int | None = None
    """Turned into one reproducible seed per decision (hashed with the decision's coordinates)."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Seconds one request may take before it is retried."""
    max_connections: int = Field(default=16, gt=0)
    """Requests in flight to this provider at once (for the whole cluster on Ray)."""
    requests_per_minute: float | None = Field(default=None, gt=0)
    """A rate limit for this provider's requests."""
    system: str | None = None
    """Replaces the template's system prompt for this player."""
    max_retries: int = Field(default=5, ge=0)
    """Retries of a failed request (429, 5xx, timeouts, dropped connections), with backoff and `Retry-After`."""
    retry_max_wait_s: float = Field(default=120.0, gt=0)
    """The longest wait between two retries."""
    structured: Literal["off", "format", "strict"] = "off"
    """Structured output: `format` constrains the reply's keys, types and number lengths to the game's JSON
    Schema; `strict` also its rule bounds; `off` judges the reply as it comes."""
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    """`openai` only: how structured output is asked for: OpenAI's `json_schema`, or
    `{"type": "json_object", "schema": ...}` (llama.cpp's server)."""
    device: str | None = None
    """`hf` only: the torch device (`cpu`, `cuda`, `cuda:1`, `mps`). Default: `cpu`."""
    dtype: str | None = None
    """`hf` only: the torch dtype of the weights (`float32`, `bfloat16`, `float16`, `auto`). Default: `float32`."""
    max_batch_size: int = Field(default=16, gt=0)
    """`hf` only: the most decisions batched into one `generate()` call."""
    threads: int | None = Field(default=None, gt=0)
    """`hf` only: torch's CPU threads. Default: half the cores, at least 1, at most 4."""
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    """How hard a reasoning model thinks before it answers (`none` switches thinking off), mapped to each
    provider's own form (docs/reasoning.md); unset: the model's default. Refused where a provider has no such
    level."""
    reasoning_tokens: int | None = Field(default=None, gt=0)
    """A budget of reasoning tokens (Anthropic `budget_tokens`, Gemini `thinking_budget`, `hf`: a cap on the
    thinking tokens); it must be below `max_tokens`. Refused by providers that take no budget."""
    reasoning_end: str | None = Field(default=None, min_length=1)
    """The marker that ends a model's reasoning in its text, for templates without `<think>` tags (gpt-oss:
    `<|channel|>final<|message|>`): before it is reasoning, after it the answer; a reply without it ended
    inside its reasoning and is recorded as truncated."""

    @property
    def reasoning_on(self) -> bool:
        """Whether a reasoning setting asks the model to think (``reasoning_effort = "none"`` does not)."""
        return self.reasoning_tokens is not None or self.reasoning_effort not in (None, "none")

    @property
    def url(self) -> str | None:
        """The one server a client talks to: a list of them is split into one settings per endpoint before a
        client is made (agents/calls.py), so a list here is a bug, said at once."""
        if isinstance(self.base_url, list):
            raise TypeError("a client was given several base_urls; each endpoint has its own settings")
        return self.base_url

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
    # the model's reasoning, apart from ``text`` (the answer, all the game judges): its text, whether it was
    # withheld (encrypted, redacted, only counted), the provider's count of its tokens, and whether the reply
    # ended inside it (agents/reasoning.py); such a reply is cut, never a move
    reasoning: str = ""
    reasoning_hidden: bool = False
    reasoning_tokens: int | None = None
    unfinished: bool = False
    # the build the server says answered (OpenAI's ``system_fingerprint``): recorded with a cached reply
    fingerprint: str | None = None

    def reasoned(self, parts: ReplyParts) -> Generation:
        """This generation with the reasoning of ``parts``, its answer as the text."""
        self.text, self.reasoning, self.reasoning_hidden = parts.answer, parts.reasoning, parts.hidden
        self.reasoning_tokens, self.unfinished = parts.tokens, parts.unfinished
        return self


class Provider(abc.ABC):
    """One backend. Subclasses set ``name`` and implement :meth:`generate`; what is known of a provider
    before its SDK loads (extra, SDK modules and versions, key variables) is its record in
    ``providers/__init__.py``."""

    name: ClassVar[str]
    default_model: ClassVar[str | None] = None

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    @abc.abstractmethod
    async def generate(self, messages: Sequence[Message], settings: LLMSettings,
                       schema: dict[str, Any] | None = None) -> Generation:
        """One reply; ``schema`` (a JSON Schema) is set for players with ``structured`` on."""

    def build(self) -> dict[str, Any]:
        """What identifies the model build this provider will answer with, known before any call (a local
        model's weights); a cached reply records it and is served only to the same build. Remote providers
        know nothing more than the model's name before a call: {}."""
        return {}

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the Host calls it once at the end."""
