"""The LLM providers: one record per provider holding every fact read before its SDK loads.

A record says who the provider is (name, description), what it needs (the pip extra, the SDK modules and
their minimum versions, the key variables), and what it honours (reasoning efforts and budgets, structured
modes). Everything else reads the record: the key lookup (``keys.py``), the reasoning checks (``effort.py``),
the preflight, the CLI's listing and the docs. The provider class itself is a lazy ``module:attr`` entry
(``formats/registry.py``), imported with its SDK only when a player uses it, after the SDK's version is
checked, so the core install needs no SDK and an unknown name can list the known ones. Nothing from a config
is ever imported by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...formats.registry import Registry, RegistryError
from ..base import AgentError
from ..settings import Provider

ALL_EFFORTS = ("none", "minimal", "low", "medium", "high")


@dataclass(frozen=True)
class Accepts:
    """One provider's reasoning settings: the effort levels it has, and whether it takes a token budget
    (with the smallest budget its API allows)."""

    efforts: tuple[str, ...]
    budget: bool
    min_budget: int = 1
    note: str = ""  # why a setting is missing, for the error message
    effort_or_budget: bool = False  # takes reasoning_effort or reasoning_tokens, never both at once
    structured_reasoning: bool = True  # False: a structured reply cannot think first (a grammar from token one)


@dataclass(frozen=True)
class ProviderRecord:
    """Everything about one provider that is known without importing it."""

    name: str
    description: str
    target: str  # the provider class, "module:Class" (relative to this package)
    extra: str  # the pip extra that installs the SDK: pip install 'econarena[<extra>]'
    sdk_modules: tuple[str, ...]  # import names that must be importable
    sdk_min: tuple[tuple[str, str], ...]  # (distribution, minimum version), checked when the class loads
    key_envs: tuple[str, ...]  # the variables that may hold the API key, first set wins
    accepts: Accepts  # the reasoning settings it honours
    needs_model: bool = True  # API providers have no sensible default model; a local one does
    structured: tuple[str, ...] = ("format", "strict")  # the structured modes this backend can honour
    structured_note: str = ""  # why a mode is missing, for the error message

    def load(self) -> type[Provider]:
        """The provider class, its SDK's version checked first (:func:`check_sdk`)."""
        check_sdk(self)
        try:
            return _CLASSES.load(self.name)
        except RegistryError as exc:
            raise AgentError(str(exc)) from None


RECORDS: tuple[ProviderRecord, ...] = (
    ProviderRecord(
        "openai", "OpenAI chat completions, or any compatible server through base_url", ".openai:OpenAIProvider",
        "openai", ("openai",), (("openai", "2.0"),), ("OPENAI_API_KEY",),
        Accepts(ALL_EFFORTS, False, note="chat completions take reasoning_effort but no token budget"),
    ),
    ProviderRecord(
        "anthropic", "Anthropic Messages API (Claude)", ".anthropic:AnthropicProvider",
        "anthropic", ("anthropic",), (("anthropic", "0.50"),), ("ANTHROPIC_API_KEY",),
        Accepts(("none", "low", "medium", "high"), True, 1024,
                note="the Messages API's effort levels are low, medium and high (none: thinking off); "
                     "extended thinking's budget_tokens is at least 1024", effort_or_budget=True),
        structured=("format",),
        structured_note="Anthropic's structured outputs do not enforce numeric bounds (minimum/maximum)",
    ),
    ProviderRecord(
        "google", "Google Gemini through google-genai", ".google:GoogleProvider",
        "google", ("google.genai",), (("google-genai", "1.0"),), ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        Accepts(ALL_EFFORTS, True, note="Gemini takes a thinking_level or a thinking_budget", effort_or_budget=True),
    ),
    ProviderRecord(
        "zhipuai", "ZhipuAI / Z.ai GLM models through zai-sdk", ".zhipuai:ZhipuAIProvider",
        "zhipuai", ("zai",), (("zai-sdk", "0.0.4"),), ("ZHIPUAI_API_KEY", "ZAI_API_KEY"),
        Accepts(ALL_EFFORTS, False, note="GLM has a thinking switch and reasoning_effort, no budget"),
        structured=("format",),
        structured_note="the GLM API has a JSON mode but takes no schema, so bounds cannot be enforced",
    ),
    ProviderRecord(
        "hf", "local Hugging Face transformers model (default: bundled SmolLM2-135M-Instruct)", ".hf:HFProvider",
        "hf", ("torch", "transformers"), (("torch", "2.2"), ("transformers", "4.50")), (),
        Accepts(ALL_EFFORTS, True, note="a chat template's thinking switch and a cap on thinking tokens",
                structured_reasoning=False),
        needs_model=False,
    ),
)

PROVIDERS: dict[str, ProviderRecord] = {r.name: r for r in RECORDS}
_CLASSES: Registry[type[Provider]] = Registry(
    "provider", {r.name: r.target for r in RECORDS}, package=__name__, kind=Provider)


def _release(version: str) -> tuple[int, ...]:
    """The release numbers a version starts with ("2.13.0+cpu" -> (2, 13, 0)); enough to compare minimums."""
    m = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(p) for p in m.group(0).split(".")) if m else ()


def older(installed: str, minimum: str) -> bool:
    """Whether ``installed`` is below ``minimum`` by their release numbers (missing parts count as 0)."""
    a, b = _release(installed), _release(minimum)
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)) < b + (0,) * (width - len(b))


def check_sdk(record: ProviderRecord) -> None:
    """Refuse an SDK older than the record's minimum before importing it: an old SDK would fail later,
    deep in a call, with an error that names neither the version nor the fix."""
    from importlib import metadata

    for dist, minimum in record.sdk_min:
        try:
            installed = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue  # not installed: the import says so, and the preflight names the extra
        if older(installed, minimum):
            raise AgentError(f"agent '{record.name}' needs {dist} >= {minimum}, but {dist} {installed} is "
                             f"installed: pip install '{dist}>={minimum}'")


def unknown_provider(name: str) -> AgentError:
    return AgentError(f"unknown provider {name!r}; known: {', '.join(sorted(PROVIDERS))}")
