"""The fixed registry of LLM providers: names, descriptions, credentials and lazy loaders.

Each loader imports its provider (and so its SDK) only when a player uses it, so the core install needs
no SDK and an unknown name can list the known ones. Nothing from a config is ever imported by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..base import AgentError
from ..keys import KEY_ENVS
from ..settings import Provider


@dataclass(frozen=True)
class ProviderInfo:
    """Registry entry: everything needed to check a provider before loading its SDK."""

    name: str
    description: str
    extra: str
    sdk_modules: tuple[str, ...]
    key_envs: tuple[str, ...]
    load: Callable[[], type[Provider]]
    needs_model: bool = True  # API providers have no sensible default model; a local one does
    structured: tuple[str, ...] = ("format", "strict")  # the structured modes this backend can honour
    structured_note: str = ""  # why a mode is missing, for the error message


def _load_openai() -> type[Provider]:
    from .openai import OpenAIProvider

    return OpenAIProvider


def _load_anthropic() -> type[Provider]:
    from .anthropic import AnthropicProvider

    return AnthropicProvider


def _load_google() -> type[Provider]:
    from .google import GoogleProvider

    return GoogleProvider


def _load_zhipuai() -> type[Provider]:
    from .zhipuai import ZhipuAIProvider

    return ZhipuAIProvider


def _load_hf() -> type[Provider]:
    from .hf import HFProvider

    return HFProvider


PROVIDERS: dict[str, ProviderInfo] = {
    "openai": ProviderInfo(
        "openai", "OpenAI chat completions, or any compatible server through base_url",
        "openai", ("openai",), KEY_ENVS["openai"], _load_openai,
    ),
    "anthropic": ProviderInfo(
        "anthropic", "Anthropic Messages API (Claude)", "anthropic", ("anthropic",),
        KEY_ENVS["anthropic"], _load_anthropic, structured=("format",),
        structured_note="Anthropic's structured outputs do not enforce numeric bounds (minimum/maximum)",
    ),
    "google": ProviderInfo(
        "google", "Google Gemini through google-genai", "google", ("google.genai",),
        KEY_ENVS["google"], _load_google,
    ),
    "zhipuai": ProviderInfo(
        "zhipuai", "ZhipuAI / Z.ai GLM models through zai-sdk", "zhipuai", ("zai",),
        KEY_ENVS["zhipuai"], _load_zhipuai, structured=("format",),
        structured_note="the GLM API has a JSON mode but takes no schema, so bounds cannot be enforced",
    ),
    "hf": ProviderInfo(
        "hf", "local Hugging Face transformers model (default: bundled SmolLM2-135M-Instruct)", "hf",
        ("torch", "transformers"), KEY_ENVS["hf"], _load_hf, needs_model=False,
    ),
}


def unknown_provider(name: str) -> AgentError:
    return AgentError(f"unknown provider {name!r}; known: {', '.join(sorted(PROVIDERS))}")
