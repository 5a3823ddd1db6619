"""What each provider accepts of the reasoning settings, checked at ``validate`` (no key, no SDK needed).

Why a table of its own: a setting a provider cannot honour must be refused, naming the provider and the
key, never dropped in silence; and the sampling rules of reasoning models (a budget that must fit under
``max_tokens``, the headroom an answer needs after the thinking) are the same check for every player.
"""

from __future__ import annotations

from dataclasses import dataclass

from .settings import LLMSettings


@dataclass(frozen=True)
class Accepts:
    """One provider's reasoning settings: the effort levels it has, and whether it takes a token budget
    (with the smallest budget its API allows)."""

    efforts: tuple[str, ...]
    budget: bool
    min_budget: int = 1
    note: str = ""  # why a setting is missing, for the error message


ALL_EFFORTS = ("none", "minimal", "low", "medium", "high")

ACCEPTS: dict[str, Accepts] = {
    "openai": Accepts(ALL_EFFORTS, False, note="chat completions take reasoning_effort but no token budget"),
    "anthropic": Accepts(("none", "low", "medium", "high"), True, 1024,
                         note="the Messages API's effort levels are low, medium and high (none: thinking off); "
                              "extended thinking's budget_tokens is at least 1024"),
    "google": Accepts(ALL_EFFORTS, True, note="Gemini takes a thinking_level or a thinking_budget"),
    "zhipuai": Accepts(ALL_EFFORTS, False, note="GLM has a thinking switch and reasoning_effort, no budget"),
    "hf": Accepts(ALL_EFFORTS, True, note="a chat template's thinking switch and a cap on thinking tokens"),
}

# what an answer needs after the reasoning, when the player leaves max_tokens at its default
DEFAULT_MAX_TOKENS = LLMSettings.model_fields["max_tokens"].default


def reasoning_problems(provider: str, settings: LLMSettings, where: str) -> list[str]:
    """The reasoning settings this provider cannot honour, or that would cut the model before it answers."""
    accepts = ACCEPTS.get(provider)
    if accepts is None or (settings.reasoning_effort is None and settings.reasoning_tokens is None):
        return []
    problems: list[str] = []
    effort, budget = settings.reasoning_effort, settings.reasoning_tokens
    if effort is not None and effort not in accepts.efforts:
        problems.append(f"{where}: reasoning_effort = \"{effort}\" is not available for agent '{provider}' "
                        f"({accepts.note}); use one of {', '.join(accepts.efforts)}")
    if budget is not None:
        if not accepts.budget:
            problems.append(f"{where}: reasoning_tokens is not available for agent '{provider}' ({accepts.note}); "
                            "remove it, or set reasoning_effort")
        elif budget < accepts.min_budget:
            problems.append(f"{where}: reasoning_tokens = {budget} is below the {accepts.min_budget} that agent "
                            f"'{provider}' requires ({accepts.note})")
        if effort == "none":
            problems.append(f"{where}: reasoning_tokens = {budget} with reasoning_effort = \"none\": a budget for "
                            "thinking that is switched off; set one of them")
        elif effort is not None and provider in ("anthropic", "google"):
            problems.append(f"{where}: agent '{provider}' takes reasoning_effort or reasoning_tokens, not both; "
                            "remove one of them")
        if budget >= settings.max_tokens:
            problems.append(f"{where}: reasoning_tokens = {budget} must be below max_tokens = {settings.max_tokens} "
                            "(the reasoning counts toward max_tokens and the answer needs room after it); "
                            "raise max_tokens")
    if provider == "hf" and settings.reasoning_on and settings.structured != "off":
        problems.append(f"{where}: structured = \"{settings.structured}\" with a reasoning setting is not available "
                        "for agent 'hf': the grammar constrains the reply from its first token, so the model "
                        "could not think first; use structured = \"off\" or remove the reasoning setting")
    if settings.reasoning_on and "max_tokens" not in settings.model_fields_set:
        problems.append(f"{where}: a reasoning model with the default max_tokens = {DEFAULT_MAX_TOKENS} is cut "
                        "before it answers (its reasoning counts toward max_tokens); set max_tokens for it "
                        "(a few thousand is usual)")
    return problems
