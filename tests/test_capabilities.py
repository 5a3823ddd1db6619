"""The game contract in parts (games/capabilities.py): every game has the core; a capability is the methods a
game writes itself, never the defaults it inherits from Game."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from econarena.games import GAMES
from econarena.games.base import ActionField, ActionSpec, Game, GameInfo, GameParams, Outcome, Setup
from econarena.games.capabilities import (
    CAPABILITIES,
    Core,
    Judged,
    Scored,
    Solvable,
    capabilities,
    implements,
    members,
)

# read off each game's module by hand: which of the capability methods its class (or its family's base) writes
EXPECTED = {
    "beauty_contest": ("solvable",), "second_price_auction": ("solvable",), "english_auction": ("solvable",),
    "guessing_game": ("solvable", "scored", "replayable"), "el_farol_bar": ("scored", "replayable"),
    "divide_dollar": ("solvable", "scored", "replayable"), "public_goods": ("solvable", "scored", "replayable"),
    "diners_dilemma": ("solvable", "scored", "replayable"),
    "sealed_bid_auction": ("solvable", "scored", "replayable"), "battle_royale": ("scored", "replayable"),
    "pirate_game": ("solvable", "scored", "replayable"),
    "resource_exchange": ("replayable",), "ultimatum": ("replayable",), "buy_sell": ("replayable",),
    "bargaining": ("solvable", "replayable"), "negotiation": ("replayable",), "persuasion": ("replayable",),
    "fruit_trade": ("judged", "steerable"),
    "prisoners_dilemma": ("solvable",), "matching_pennies": ("solvable",),
}


class Coin(Game):
    """The smallest game: one seat says heads or tails and earns 1 for heads."""

    name: ClassVar[str] = "coin"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "one call"
    info: ClassVar[GameInfo] = GameInfo(title="Coin")
    Params: ClassVar[type[GameParams]] = GameParams
    action_key: ClassVar[str] = "call"
    history_key: ClassVar[str] = "call"

    def setup(self, params: GameParams, n_players: int, rng: np.random.Generator) -> Setup:
        return Setup(n_players, {})

    def initial_state(self, setup: Setup) -> Any:
        return None

    def to_move(self, state: Any) -> tuple[int, ...]:
        return (0,) if state is None else ()

    def action_spec(self, state: Any, player: int) -> ActionSpec:
        return ActionSpec((ActionField("call", "choice", choices=("heads", "tails")),))

    def observation(self, state: Any, player: int) -> dict[str, Any]:
        return {}

    def apply(self, state: Any, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> Any:
        return actions[0]

    def outcome(self, state: Any) -> Outcome:
        heads = state is not None and state["call"] == "heads"
        return Outcome((None if state is None else state["call"],), (state is not None,), (float(heads),),
                       (0,) if heads else (), False)


class HalfSolved(Coin):
    def equilibrium(self, setup: Setup) -> Outcome | None:
        return Outcome(("heads",), (True,), (1.0,), (0,), False)


class Solved(HalfSolved):
    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        return 0.0 if outcome.actions[player] == "heads" else 1.0


def test_every_built_in_game_has_the_core_and_its_capabilities() -> None:
    got = {name: capabilities(g) for name, g in GAMES.items() if name in EXPECTED}
    assert got == EXPECTED
    assert all(implements(g, Core) for g in GAMES.values())


def test_a_score_is_declared_exactly_where_it_is_written() -> None:
    for name in EXPECTED:
        assert implements(GAMES[name], Scored) is GAMES[name].info.score, name


def test_a_capability_is_every_method_written_not_the_defaults() -> None:
    assert capabilities(Coin()) == ()  # the core alone: every default kept
    assert not implements(HalfSolved(), Solvable)  # an equilibrium without a deviation is not the capability
    assert implements(Solved(), Solvable) and capabilities(Solved()) == ("solvable",)
    assert not implements(Solved(), Judged)


def test_the_protocols_are_structural_outside_game_too() -> None:
    class Lookalike:
        def equilibrium(self, setup: Setup) -> None:
            return None

        def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> None:
            return None

    assert implements(Lookalike(), Solvable) and not implements(Lookalike(), Core)
    assert not implements(object(), Solvable)


def test_each_protocol_names_the_methods_of_game_it_stands_for() -> None:
    assert members(Core) == ("setup", "initial_state", "to_move", "action_spec", "observation", "apply", "outcome")
    assert {k: members(p) for k, p in CAPABILITIES.items()} == {
        "solvable": ("equilibrium", "deviation"), "scored": ("score",), "replayable": ("from_reference",),
        "judged": ("needs_judge", "judge_requests", "judged_outcome"), "steerable": ("prompt_actions",)}
    for protocol in (Core, *CAPABILITIES.values()):
        for m in members(protocol):
            assert callable(getattr(Game, m)), m  # Game writes each (abstract in the core, a default else)
    assert set(members(Core)) == set(Game.__abstractmethods__)
