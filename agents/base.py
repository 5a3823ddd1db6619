"""The one protocol every player implements, so the Host has a single decision path.

An agent receives a :class:`DecisionRequest` (chat messages plus, for baselines, a handle on the game's
reference strategies) and returns a :class:`Reply` carrying raw text, which the Host judges and logs the
same way for every player. The strategy baselines also offer a shortcut the Host takes: they return their
action directly, without a prompt or a text round trip (``agents/baselines.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Message:
    """One chat message; ``role`` is ``system``, ``user`` or ``assistant``."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class DecisionRequest:
    """Everything an agent may look at for one decision.

    ``messages`` is what an LLM sees. The remaining fields serve baselines: ``strategy(kind, **kw)`` asks
    the game for a reference action (``"rational"``, ``"level_k"``, ``"random"``) as a JSON-ready dict, so
    agents stay ignorant of any particular game. ``rng`` is derived from the experiment seed and the
    decision's coordinates (``seed_key``), so a resumed run draws exactly what the interrupted one would
    have; it is built on first use because most agents never draw.
    """

    messages: tuple[Message, ...]
    player: int
    decision_index: int  # this player's k-th decision in the session (0-based)
    strategy: Callable[..., dict[str, Any]]
    seed: int = 0
    seed_key: tuple[int, ...] = ()
    coords: Mapping[str, Any] = field(default_factory=dict)  # lineup/session/run/round/seat
    # the reply's JSON Schema, set by the Host for LLM players with ``structured`` on (see games/schema.py)
    schema: Mapping[str, Any] | None = None
    game: str = ""  # the game's name, for a person's screen (agents never branch on it)

    @cached_property
    def rng(self) -> np.random.Generator:
        return LazyGenerator(self.seed, self.seed_key)  # type: ignore[return-value]  # a Generator on first use


class LazyGenerator:
    """A seeded ``numpy.random.Generator`` built on first use.

    Why: building one costs ~70 us, and most decisions (a rational bid) and most moves (a game without
    chance) never draw; the Host makes one per decision and per move, so eager generators were a fifth
    of the Host's time. The draws are exactly those of ``default_rng(SeedSequence(seed, spawn_key))``.
    """

    __slots__ = ("_gen", "_key", "_seed")

    def __init__(self, seed: int, spawn_key: tuple[int, ...]) -> None:
        self._seed, self._key = seed, spawn_key
        self._gen: np.random.Generator | None = None

    def __getattr__(self, name: str) -> Any:
        if self._gen is None:
            self._gen = np.random.default_rng(np.random.SeedSequence(self._seed, spawn_key=self._key))
        return getattr(self._gen, name)


@dataclass
class Reply:
    """An agent's answer plus what it cost; ``error`` marks an infrastructure failure, not a rule break."""

    text: str
    model: str | None = None
    latency_s: float = 0.0
    tokens_in: int | None = None
    tokens_out: int | None = None
    cached: bool = False
    error: str | None = None
    truncated: bool = False  # cut at the token limit (max_tokens): not the model's own end of reply
    # a reasoning model's thinking, kept apart from ``text`` (the answer): stored, never judged, never in a
    # prompt; ``unfinished``: the reply ended inside its reasoning (cut and no move at the token limit; where
    # the model stopped on its own, only an answer before the block is judged)
    reasoning: str = ""
    reasoning_hidden: bool = False
    reasoning_tokens: int | None = None
    unfinished: bool = False


@runtime_checkable
class Agent(Protocol):
    """Messages in, reply out. ``label`` names the player in results; ``model`` is logged."""

    label: str
    kind: str
    model: str | None

    async def decide(self, request: DecisionRequest) -> Reply: ...


class AgentError(Exception):
    """A configuration problem with an agent, reported before any game starts."""
