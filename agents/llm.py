"""LLM players: generation settings, the provider interface and the lazy provider registry.

A provider turns chat messages into a :class:`Generation`. Providers are found by a fixed registry of
names, each with a loader that imports its SDK only when the provider is used, so the core install needs
no SDK and an unknown name can list the known ones. Nothing from a config is ever imported by name.

Retries, connection and rate limits live with the API providers (``agents/calls.py``); the response cache
sits here in :class:`LLMAgent`, because only the agent sees which decision a call belongs to, and that is
what makes two identical prompts from different seats two different samples.
"""

from __future__ import annotations

import abc
import importlib.util
import ipaddress
import os
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from econarena.agents.base import AgentError, DecisionRequest, Message, Reply

if TYPE_CHECKING:
    from econarena.agents.cache import ResponseCache


class LLMSettings(BaseModel):
    """Generation and connection settings, merged: defaults < provider < TOML ``[llm]`` < player."""

    # strict: TOML is typed, so max_tokens = true or timeout_s = "60" is a mistake, not a 1 or a 60
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    model: str | None = None
    base_url: str | None = None
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
    from econarena.agents.providers.openai import OpenAIProvider

    return OpenAIProvider


def _load_anthropic() -> type[Provider]:
    from econarena.agents.providers.anthropic import AnthropicProvider

    return AnthropicProvider


def _load_google() -> type[Provider]:
    from econarena.agents.providers.google import GoogleProvider

    return GoogleProvider


def _load_zhipuai() -> type[Provider]:
    from econarena.agents.providers.zhipuai import ZhipuAIProvider

    return ZhipuAIProvider


def _load_hf() -> type[Provider]:
    from econarena.agents.providers.hf import HFProvider

    return HFProvider


PROVIDERS: dict[str, ProviderInfo] = {
    "openai": ProviderInfo(
        "openai", "OpenAI chat completions, or any compatible server through base_url",
        "openai", ("openai",), ("OPENAI_API_KEY",), _load_openai,
    ),
    "anthropic": ProviderInfo(
        "anthropic", "Anthropic Messages API (Claude)", "anthropic", ("anthropic",),
        ("ANTHROPIC_API_KEY",), _load_anthropic, structured=("format",),
        structured_note="Anthropic's structured outputs do not enforce numeric bounds (minimum/maximum)",
    ),
    "google": ProviderInfo(
        "google", "Google Gemini through google-genai", "google", ("google.genai",),
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"), _load_google,
    ),
    "zhipuai": ProviderInfo(
        "zhipuai", "ZhipuAI / Z.ai GLM models through zai-sdk", "zhipuai", ("zai",),
        ("ZHIPUAI_API_KEY", "ZAI_API_KEY"), _load_zhipuai, structured=("format",),
        structured_note="the GLM API has a JSON mode but takes no schema, so bounds cannot be enforced",
    ),
    "hf": ProviderInfo(
        "hf", "local Hugging Face transformers model (default: bundled SmolLM2-135M-Instruct)", "hf",
        ("torch", "transformers"), (), _load_hf, needs_model=False,
    ),
}


def _module_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def is_loopback(base_url: str | None) -> bool:
    """A server on this machine (vLLM, Ollama, llama.cpp, a test fake) usually takes no key."""
    if not base_url:
        return False
    try:
        host = urlsplit(base_url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _key_envs(provider: str, settings: LLMSettings) -> tuple[str, ...]:
    return (settings.api_key_env,) if settings.api_key_env else PROVIDERS[provider].key_envs


def _key_optional(settings: LLMSettings) -> bool:
    """No key is demanded from a loopback server unless the player names a variable explicitly."""
    return not settings.api_key_env and is_loopback(settings.base_url)


def preflight(provider: str, settings: LLMSettings, where: str) -> list[str]:
    """Problems that would stop this player, found before any request: missing SDK, key or model.

    Messages name the variable or the pip extra, never a key's value.
    """
    info = PROVIDERS[provider]
    problems = []
    missing = [m for m in info.sdk_modules if not _module_available(m)]
    if missing:
        problems.append(
            f"{where}: agent '{provider}' needs {', '.join(missing)}: "
            f"pip install 'econarena[{info.extra}]'"
        )
    envs = _key_envs(provider, settings)
    if envs and not _key_optional(settings) and api_key(provider, settings) is None:
        problems.append(f"{where}: agent '{provider}' needs an API key: set {' or '.join(envs)}"
                        " (in the environment or in .env)")
    if info.needs_model and not settings.model:
        problems.append(f"{where}: agent '{provider}' needs a model: set model = \"...\"")
    return problems + settings_problems(provider, settings, where)


def settings_problems(provider: str, settings: LLMSettings, where: str) -> list[str]:
    """Settings this provider cannot honour (a structured mode, a local model's path, device, dtype).

    Needs no key and loads no model, so ``validate`` runs it for every file.
    """
    info = PROVIDERS[provider]
    problems = []
    if settings.structured != "off" and settings.structured not in info.structured:
        modes = " or ".join(f'"{m}"' for m in ("off", *info.structured))
        problems.append(f"{where}: structured = \"{settings.structured}\" is not available for agent "
                        f"'{provider}' ({info.structured_note}); use structured = {modes}")
    if provider == "hf":
        problems += local_model_problems(settings, where)
    return problems


_DTYPES = ("auto", "float32", "float16", "bfloat16", "float64")


def local_model_problems(settings: LLMSettings, where: str) -> list[str]:
    """What is wrong with an hf player's model, device or dtype, found without loading anything."""
    problems = []
    if settings.dtype is not None and settings.dtype not in _DTYPES:
        problems.append(f"{where}: dtype = {settings.dtype!r} is not a dtype the hf provider knows "
                        f"(expected one of {', '.join(_DTYPES)})")
    model = settings.model
    if model:
        path = Path(model).expanduser()
        # "org/name" is a hub id unless it exists here; an explicit path or a .gguf file must exist
        explicit = model.endswith(".gguf") or model.startswith(("./", "../", "/", "~"))
        if explicit and not path.exists():
            problems.append(f"{where}: model = {model!r}: no such file or folder")
        elif path.is_dir() and not (path / "config.json").is_file():
            problems.append(f"{where}: model = {model!r}: the folder has no config.json (not a transformers "
                            "model folder)")
    device = (settings.device or "cpu").strip()
    if not re.fullmatch(r"(cpu|cuda|mps|xpu)(:\d+)?|auto", device):
        problems.append(f"{where}: device = {device!r}: expected cpu, cuda, cuda:N, mps or xpu")
    elif device.startswith(("cuda", "mps", "xpu")) and _module_available("torch"):
        problems += _device_problems(device, where)
    return problems


def _device_problems(device: str, where: str) -> list[str]:
    """Ask torch (already needed for hf) whether the accelerator exists; cheap, loads no model."""
    import torch

    kind, _, index = device.partition(":")
    backend = {"cuda": torch.cuda, "mps": getattr(torch.backends, "mps", None),
               "xpu": getattr(torch, "xpu", None)}[kind]
    available = bool(backend is not None and backend.is_available())
    if not available:
        return [f"{where}: device = {device!r}, but torch sees no {kind} device on this machine "
                "(use device = \"cpu\")"]
    if index and kind != "mps" and int(index) >= backend.device_count():
        return [f"{where}: device = {device!r}, but torch sees only {backend.device_count()} {kind} device(s)"]
    return []


def api_key_source(provider: str, settings: LLMSettings) -> tuple[str, str] | None:
    """(variable, value) of the key this player uses, first set variable wins."""
    for env in _key_envs(provider, settings):
        value = os.environ.get(env, "").strip()
        if value:
            return env, value
    return None


def api_key(provider: str, settings: LLMSettings) -> str | None:
    found = api_key_source(provider, settings)
    return found[1] if found else None


_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def load_dotenv(path: str | os.PathLike[str] = ".env") -> list[str]:
    """Read ``KEY=VALUE`` lines into the environment without overriding what is already set.

    A variable that is set but empty counts as unset (as it does for keys). Supports ``export``,
    quotes and ``#`` comments. Returns the names it set, never values, so the caller may log them.
    """
    p = Path(path)
    if not p.is_file():
        return []
    loaded = []
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:  # a binary or unreadable .env must not stop a run
        print(f"econarena: warning: {p}: not read ({getattr(exc, 'strerror', None) or 'not UTF-8 text'})",
              file=sys.stderr)
        return []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _DOTENV_LINE.match(line)
        if not m:
            continue
        name, value = m.group(1), m.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
            if m.group(2)[0] == '"':
                value = value.replace("\\n", "\n").replace('\\"', '"')
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        if os.environ.get(name, "").strip():
            continue
        os.environ[name] = value
        loaded.append(name)
    return loaded


def decision_seed(seed: int, request: DecisionRequest) -> int:
    """A stable 31-bit seed from the player's seed and the decision's coordinates."""
    import hashlib

    c = request.coords
    text = f"{seed}|{c.get('lineup')}|{c.get('session')}|{c.get('run')}|{c.get('round')}|{request.player}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF


class LLMAgent:
    """An agent backed by a provider. Retries and rate limits live in the provider layer; the cache here."""

    def __init__(self, label: str, provider_name: str, provider: Provider, settings: LLMSettings,
                 cache: ResponseCache | None = None):
        self.label = label
        self.kind = provider_name
        self.provider = provider
        self.settings = settings
        self.model = settings.model or provider.default_model
        self.cache = cache

    def _messages(self, request: DecisionRequest) -> list[Message]:
        messages = list(request.messages)
        if self.settings.system is not None:
            messages = [Message("system", self.settings.system)] + [m for m in messages if m.role != "system"]
        return messages

    def _cache_key(self, messages: list[Message], request: DecisionRequest) -> str:
        from econarena.agents.cache import cache_key, sample_index

        s = self.settings
        return cache_key(
            provider=self.kind, model=self.model, base_url=s.base_url, messages=messages,
            settings={"temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens,
                      "seed": s.seed, "system": s.system,
                      # a constrained reply is another sample than a free one; old keys stay valid when off
                      **({"structured": s.structured, "schema": request.schema,
                          "response_format": s.response_format} if request.schema is not None else {})},
            sample=sample_index(request.coords, request.player, request.decision_index,
                                getattr(request, "seed", None)),
        )

    async def decide(self, request: DecisionRequest) -> Reply:
        messages = self._messages(request)
        start = time.perf_counter()
        key = None
        if self.cache is not None:
            key = self._cache_key(messages, request)
            hit = self.cache.get(key)
            if hit is not None:
                return Reply(text=hit["text"], model=hit["model"] or self.model,
                             latency_s=time.perf_counter() - start, tokens_in=hit["tokens_in"],
                             tokens_out=hit["tokens_out"], cached=True)
        settings = self.settings
        if settings.seed is not None:  # one reproducible seed per decision, so seats do not echo each other
            settings = settings.model_copy(update={"seed": decision_seed(settings.seed, request)})
        try:
            schema = dict(request.schema) if request.schema is not None else None
            gen = await self.provider.generate(messages, settings, schema)
        except Exception as exc:  # noqa: BLE001 - any failed call is an infrastructure error, not a rule break
            from econarena.agents.calls import redact, url_secrets

            return Reply(text="", model=self.model, latency_s=time.perf_counter() - start,
                         error=redact(f"{type(exc).__name__}: {exc}", api_key(self.kind, self.settings),
                                      *url_secrets(self.settings.base_url)))
        latency = gen.latency_s or (time.perf_counter() - start)
        if key is not None and self.cache is not None and not gen.cached:
            self.cache.put(key, text=gen.text, model=gen.model, tokens_in=gen.tokens_in,
                           tokens_out=gen.tokens_out, latency_s=latency)
        return Reply(text=gen.text, model=gen.model or self.model, latency_s=latency,
                     tokens_in=gen.tokens_in, tokens_out=gen.tokens_out, cached=gen.cached)


def unknown_provider(name: str) -> AgentError:
    return AgentError(f"unknown provider {name!r}; known: {', '.join(sorted(PROVIDERS))}")


@dataclass(frozen=True)
class RuntimeOptions:
    """Switches from the command line that shape how LLM calls are made (not what is asked)."""

    cache: bool = True
    cache_path: str | None = None  # a file or a directory; None: $ECONARENA_CACHE_DIR or the user cache dir


_SHARED: dict[tuple[Any, ...], Provider] = {}


def build_llm_agent(provider_name: str, label: str, settings: LLMSettings,
                    options: RuntimeOptions) -> LLMAgent:
    """Players with the same backend and connection settings share one provider (pool, limits, model)."""
    if provider_name not in PROVIDERS:
        raise unknown_provider(provider_name)
    key = (provider_name, settings.base_url, settings.api_key_env, settings.model, settings.device,
           settings.dtype, settings.max_connections, settings.requests_per_minute)
    provider = _SHARED.get(key)
    if provider is None:
        provider = PROVIDERS[provider_name].load()(settings)
        _SHARED[key] = provider
    cache = None
    if options.cache:
        from econarena.agents.cache import open_cache

        try:
            cache = open_cache(options.cache_path)
        except (OSError, sqlite3.Error) as exc:
            raise AgentError(f"cannot open the response cache ({exc}); use --no-cache or another path") from None
    return LLMAgent(label, provider_name, provider, settings, cache)


async def close_all() -> None:
    """Close every shared provider; called once when an experiment ends."""
    from econarena.agents.cache import close_caches

    providers = list(_SHARED.values())
    _SHARED.clear()
    try:
        for p in providers:
            await p.aclose()
    finally:
        close_caches()
