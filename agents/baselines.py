"""Baseline players: reference strategies the game computes, and scripted raw replies.

A strategy baseline (rational, random, level-k) knows its action without reading a prompt, so the Host
asks it directly (:meth:`StrategyAgent.act`): no prompt is rendered for it and its action is judged as
the JSON object it is, not written as text and parsed back (baseline-only experiments are the reference
tables every metric is measured against, and run at tens of thousands of decisions a second). Its
decision records keep everything the analysis reads; ``decide`` still answers the protocol in the JSON
an LLM would send, for any caller that has only a :class:`DecisionRequest`. The scripted agent replays
raw text and so takes the text path like a model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from .base import DecisionRequest, Reply


class StrategyAgent:
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

    def act(self, strategy: Callable[..., dict[str, Any]], rng: Any) -> dict[str, Any]:
        """The action (a JSON-ready dict): ``strategy(kind, rng=..., **kw)`` is the game's reference
        strategy at this state and seat, ``rng`` the decision's seeded generator."""
        return strategy(self.strategy_name, rng=rng, **self._kwargs())

    async def decide(self, request: DecisionRequest) -> Reply:
        return Reply(text=json.dumps(self.act(request.strategy, request.rng)))


class RationalAgent(StrategyAgent):
    """Plays the Nash equilibrium action for its own private information."""

    kind = strategy_name = "rational"


class RandomAgent(StrategyAgent):
    """Uniform over legal actions; draws come from the decision's seeded generator."""

    kind = strategy_name = "random"


class LevelKAgent(StrategyAgent):
    """Level-k reasoning: level 0 is a naive anchor, level k best-responds to level k-1. The rule is the
    game's own (``strategy(..., "level_k", k=...)``); games without one do not list it in their policies."""

    kind = strategy_name = "level_k"

    def __init__(self, label: str, k: int = 1) -> None:
        super().__init__(label)
        self.k = k

    def _kwargs(self) -> dict[str, object]:
        return {"k": self.k}


class PolicyAgent(StrategyAgent):
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
