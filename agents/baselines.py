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
    """Level-k reasoning: beauty contest upper/2 x ratio^k; auctions bid (or stay up to) the value."""

    kind = strategy_name = "level_k"

    def __init__(self, label: str, k: int = 1) -> None:
        super().__init__(label)
        self.k = k

    def _kwargs(self) -> dict[str, object]:
        return {"k": self.k}


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
