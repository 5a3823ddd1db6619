"""Builds agents from validated player entries: a table of builders by name, the providers' records, plus
the user's own strategies by a ``module:Class`` path (``plugins.py``, the one place an agent is imported by
name)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from .base import Agent, AgentError
from .baselines import LevelKAgent, PolicyAgent, RandomAgent, RationalAgent, ScriptedAgent
from .human import HumanAgent
from .llm import PROVIDERS, LLMSettings, RuntimeOptions, build_llm_agent
from .plugins import PluginError, is_spec, load_agent_class


@dataclass(frozen=True)
class Seat:
    """What a seat's entry gives the agent it builds (each builder reads the fields it needs)."""

    label: str
    responses: Sequence[str] = ()
    k: int = 1
    policy: str | None = None
    human_io: tuple[TextIO, TextIO, bool] | None = None


def _policy(seat: Seat) -> Agent:
    if not seat.policy:
        raise AgentError(f"{seat.label}: agent 'policy' needs the name of a policy the game declares")
    return PolicyAgent(seat.label, seat.policy)


def _human(seat: Seat) -> Agent:
    if seat.human_io is None:
        raise AgentError(f"{seat.label}: a human seat is played with 'econarena run' in a terminal, or with "
                         "--human-input FILE")
    return HumanAgent(seat.label, *seat.human_io)


# the agents that are not LLM providers, by name: one builder each (the providers are their records)
BUILDERS: dict[str, Callable[[Seat], Agent]] = {
    "rational": lambda seat: RationalAgent(seat.label),
    "random": lambda seat: RandomAgent(seat.label),
    "level_k": lambda seat: LevelKAgent(seat.label, seat.k),
    "policy": _policy,
    "scripted": lambda seat: ScriptedAgent(seat.label, seat.responses),
    "human": _human,
}


def create_agent(agent: str, label: str, *, responses: Sequence[str] = (), k: int = 1, policy: str | None = None,
                 llm: LLMSettings | None = None, options: RuntimeOptions | None = None,
                 human_io: tuple[TextIO, TextIO, bool] | None = None) -> Agent:
    """``human_io`` = (input, output, echo) for ``human`` seats: the terminal, or a script file."""
    build = BUILDERS.get(agent)
    if build is not None:
        return build(Seat(label, responses, k, policy, human_io))
    if agent in PROVIDERS:
        return build_llm_agent(agent, label, llm or LLMSettings(), options or RuntimeOptions())
    if is_spec(agent):  # a strategy of the user's own, checked when the experiment was read
        try:
            return load_agent_class(agent)(label)
        except PluginError as exc:
            raise AgentError(f"{label}: {exc}") from None
    raise AgentError(f"unknown agent {agent!r}")
