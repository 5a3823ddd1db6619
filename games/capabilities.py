"""The game contract read as parts: the core every game implements, and the capabilities a game may add.

:class:`.base.Game` carries the whole contract so that a subclass inherits a default for every optional
method (the default says "none": no equilibrium, no score, no judge). That keeps a new game short, but
leaves a reader 39 members to sort. These protocols sort them: :class:`Core` is what a game must write;
each capability protocol names the methods a game writes to have that capability, and nothing else.

A Game subclass satisfies every protocol structurally (it inherits the defaults), so the question a host
or a tool asks is :func:`implements`: does this game's class write the capability's methods itself, or
keep Game's defaults? :func:`capabilities` lists them by name for the games reference and ``econarena
check``. Nothing here changes what a game does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .base import ActionSpec, Game, GameInfo, GameParams, ImportedRun, Outcome, Setup


@runtime_checkable
class Core(Protocol):
    """What every game declares and implements: its declarations, and seven rules that play one run from a
    drawn setup to its outcome (the shape of OpenSpiel's State, with the observation apart)."""

    name: str
    version: str
    description: str
    info: GameInfo
    Params: type[GameParams]
    action_key: str
    history_key: str

    def setup(self, params: Any, n_players: int, rng: np.random.Generator) -> Setup:
        """Draw a session's configuration once per session."""

    def initial_state(self, setup: Setup) -> Any:
        """The state a run starts from."""

    def to_move(self, state: Any) -> tuple[int, ...]:
        """The seats that decide now; empty when the run is over."""

    def action_spec(self, state: Any, player: int) -> ActionSpec:
        """The reply fields a seat fills now, with their bounds."""

    def observation(self, state: Any, player: int) -> dict[str, Any]:
        """The facts a seat may see now, as template fields."""

    def apply(self, state: Any, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> Any:
        """The state after one move (None: a seat whose reply broke a rule)."""

    def outcome(self, state: Any) -> Outcome:
        """The finished run's actions, payoffs and winners."""


@runtime_checkable
class Solvable(Protocol):
    """A game with a Nash equilibrium for each draw: the report measures every seat's distance from it and
    ``econarena check`` verifies it by unilateral deviations. It may refine the claim with
    ``mixed_equilibrium`` (a mixture per seat) and ``payoff_bounds`` (checked on every run)."""

    def equilibrium(self, setup: Setup) -> Outcome | None:
        """The equilibrium's actions and payoffs for exactly this draw."""

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        """One seat's distance from the equilibrium."""


@runtime_checkable
class Scored(Protocol):
    """A game with a 0-100 score per run (declare ``info.score = True``): GAMA-Bench's scores, the bench's
    rules. ``metrics`` (the game's own per-run numbers) needs no score and is written by any game."""

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        """The run's score from its round records."""


@runtime_checkable
class Replayable(Protocol):
    """A game that reads another tool's released logs (``econarena import``): one parsed result file becomes
    an imported run, replayed through these rules; ``info.reference`` says where the files lie."""

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        """One released result, in this game's terms; pure, no I/O."""


@runtime_checkable
class Judged(Protocol):
    """A game whose payoffs may come from a judge model (the experiment names the judge): the host asks
    the judge once the run is over and the game reads its replies."""

    def needs_judge(self, params: GameParams) -> bool:
        """Whether these parameters take payoffs from a judge."""

    def judge_requests(self, setup: Setup, state: Any) -> dict[int, dict[str, Any]] | None:
        """Per seat, the template fields of the judge's question (None: the game pays itself)."""

    def judged_outcome(self, setup: Setup, state: Any, replies: Mapping[int, str | None]) -> Outcome:
        """The outcome with payoffs read from the judge's replies."""


@runtime_checkable
class Steerable(Protocol):
    """A game with prompt-action spaces of its own for ``econarena steer`` (every game is steered by the
    tones the steering module offers; a steerable game adds spaces that depend on its own goods)."""

    def prompt_actions(self, kind: str, params: GameParams) -> tuple[tuple[str, str], ...] | None:
        """(label, instruction) pairs of the space ``kind``; None: no such space here."""


CAPABILITIES: dict[str, type] = {
    "solvable": Solvable, "scored": Scored, "replayable": Replayable, "judged": Judged, "steerable": Steerable,
}


def members(protocol: type) -> tuple[str, ...]:
    """The methods a protocol names, in the order written."""
    return tuple(k for k, v in vars(protocol).items() if callable(v) and not k.startswith("_"))


def implements(game: Any, protocol: type) -> bool:
    """Whether ``game`` has the capability: it satisfies the protocol and its class writes each of the
    protocol's methods itself, somewhere below :class:`.base.Game` (whose defaults say "none")."""
    if not isinstance(game, protocol):
        return False
    if protocol is Core or not isinstance(game, Game):
        return True
    return all(getattr(type(game), m) is not getattr(Game, m) for m in members(protocol))


def capabilities(game: Any) -> tuple[str, ...]:
    """The names of the capabilities ``game`` implements, in :data:`CAPABILITIES` order."""
    return tuple(name for name, protocol in CAPABILITIES.items() if implements(game, protocol))
