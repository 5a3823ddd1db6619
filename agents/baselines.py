"""Baseline players behind the same protocol as LLMs: they answer with the JSON an LLM would send.

Answering in text keeps one path through the Host (render, reply, parse, validate, log), so a baseline's
decisions are judged and logged exactly like a model's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .base import DecisionRequest, Reply


class _StrategyAgent:
    """Plays a reference strategy that the game computes for the current state."""

    kind = "baseline"
    strategy_name = ""

    def __init__(self, label: str) -> None:
        self.label = label
        self.model: str | None = None

    def _kwargs(self) -> dict[str, object]:
        return {}

    @property
    def policy(self) -> tuple[str, dict[str, object]]:
        """The strategy this seat plays and its options (``("level_k", {"k": 2})``): a game that can tell
        how such seats move may skip moves in which none of them changes anything (``Game.fast_forward``)."""
        return self.strategy_name, self._kwargs()

    async def decide(self, request: DecisionRequest) -> Reply:
        action = request.strategy(self.strategy_name, rng=request.rng, **self._kwargs())
        return Reply(text=json.dumps(action))


class RationalAgent(_StrategyAgent):
    """Plays the Nash equilibrium action for its own private information."""

    kind = strategy_name = "rational"


class RandomAgent(_StrategyAgent):
    """Uniform over legal actions; draws come from the decision's seeded generator."""

    kind = strategy_name = "random"


class LevelKAgent(_StrategyAgent):
    """Level-k reasoning: level 0 is a naive anchor, level k best-responds to level k-1. The rule is the
    game's own (``strategy(..., "level_k", k=...)``); games without one do not list it in their policies."""

    kind = strategy_name = "level_k"

    def __init__(self, label: str, k: int = 1) -> None:
        super().__init__(label)
        self.k = k

    def _kwargs(self) -> dict[str, object]:
        return {"k": self.k}


class PolicyAgent(_StrategyAgent):
    """A strategy the game itself declares beyond the three above (the dilemma's ``tit_for_tat``,
    persuasion's ``commitment``): ``agent = "policy"``, ``policy = "<name>"``."""

    kind = "policy"

    def __init__(self, label: str, policy: str) -> None:
        super().__init__(label)
        self.strategy_name = policy


class ScriptedAgent:
    """Replays fixed raw texts: the k-th decision of a session gets ``responses[k mod len]``.

    It sees the same messages an LLM would, so prompts, parsing and rule breaks can be tested exactly.
    """

    kind = "scripted"

    def __init__(self, label: str, responses: Sequence[str]) -> None:
        if not responses:
            raise ValueError("scripted agent needs at least one response")
        self.label = label
        self.model: str | None = None
        self.responses = list(responses)

    async def decide(self, request: DecisionRequest) -> Reply:
        return Reply(text=self.responses[request.decision_index % len(self.responses)])


# Agents that play a strategy the game computes: a game offers them only where its ``GameInfo.policies``
# lists them (checked when an experiment is read); scripted and human seats play every game.
POLICY_AGENTS = tuple(cls.strategy_name for cls in (RationalAgent, RandomAgent, LevelKAgent))
