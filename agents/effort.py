"""The reasoning settings a provider cannot honour, checked at ``validate`` (no key, no SDK needed); what
each provider accepts is its record's ``accepts`` (``providers/__init__.py``).

Why a check of its own: a setting a provider cannot honour must be refused, naming the provider and the
key, never dropped in silence; and the sampling rules of reasoning models (a budget that must fit under
``max_tokens``, the headroom an answer needs after the thinking) are the same check for every player.
"""

from __future__ import annotations

from .providers import ALL_EFFORTS, PROVIDERS, Accepts
from .settings import LLMSettings

__all__ = ["ALL_EFFORTS", "Accepts", "reasoning_problems"]  # the efforts live in each provider's record

# what an answer needs after the reasoning, when the player leaves max_tokens at its default
DEFAULT_MAX_TOKENS = LLMSettings.model_fields["max_tokens"].default


def reasoning_problems(provider: str, settings: LLMSettings, where: str) -> list[str]:
    """The reasoning settings this provider cannot honour, or that would cut the model before it answers."""
    record = PROVIDERS.get(provider)
    accepts = record.accepts if record is not None else None
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
        elif effort is not None and accepts.effort_or_budget:
            problems.append(f"{where}: agent '{provider}' takes reasoning_effort or reasoning_tokens, not both; "
                            "remove one of them")
        if budget >= settings.max_tokens:
            problems.append(f"{where}: reasoning_tokens = {budget} must be below max_tokens = {settings.max_tokens} "
                            "(the reasoning counts toward max_tokens and the answer needs room after it); "
                            "raise max_tokens")
    if not accepts.structured_reasoning and settings.reasoning_on and settings.structured != "off":
        problems.append(f"{where}: structured = \"{settings.structured}\" with a reasoning setting is not available "
                        f"for agent '{provider}': the grammar constrains the reply from its first token, so the model "
                        "could not think first; use structured = \"off\" or remove the reasoning setting")
    if settings.reasoning_on and "max_tokens" not in settings.model_fields_set:
        problems.append(f"{where}: a reasoning model with the default max_tokens = {DEFAULT_MAX_TOKENS} is cut "
                        "before it answers (its reasoning counts toward max_tokens); set max_tokens for it "
                        "(a few thousand is usual)")
    return problems
