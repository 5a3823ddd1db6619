"""Builds agents from validated player entries: a fixed table of names, plus the user's own strategies by a
``module:Class`` path (``plugins.py``, the one place an agent is imported by name)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from .base import Agent, AgentError
from .baselines import LevelKAgent, PolicyAgent, RandomAgent, RationalAgent, ScriptedAgent
from .human import HumanAgent
from .llm import PROVIDERS, LLMSettings, RuntimeOptions, build_llm_agent
from .plugins import PluginError, is_spec, load_agent_class


def create_agent(agent: str, label: str, *, responses: Sequence[str] = (), k: int = 1, policy: str | None = None,
                 llm: LLMSettings | None = None, options: RuntimeOptions | None = None,
                 human_io: tuple[TextIO, TextIO, bool] | None = None) -> Agent:
    """``human_io`` = (input, output, echo) for ``human`` seats: the terminal, or a script file."""
    if agent == "rational":
        return RationalAgent(label)
    if agent == "random":
        return RandomAgent(label)
    if agent == "level_k":
        return LevelKAgent(label, k)
    if agent == "policy":
        if not policy:
            raise AgentError(f"{label}: agent 'policy' needs the name of a policy the game declares")
        return PolicyAgent(label, policy)
    if agent == "scripted":
        return ScriptedAgent(label, responses)
    if agent == "human":
        if human_io is None:
            raise AgentError(f"{label}: a human seat is played with 'econarena run' in a terminal, or with "
                             "--human-input FILE")
        return HumanAgent(label, *human_io)
    if agent in PROVIDERS:
        return build_llm_agent(agent, label, llm or LLMSettings(), options or RuntimeOptions())
    if is_spec(agent):  # a strategy of the user's own, checked when the experiment was read
        try:
            return load_agent_class(agent)(label)
        except PluginError as exc:
            raise AgentError(f"{label}: {exc}") from None
    raise AgentError(f"unknown agent {agent!r}")
