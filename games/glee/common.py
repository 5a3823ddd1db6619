"""Pieces shared by GLEE's three two-player families (bargaining, negotiation, persuasion).

Why a module of its own: the three games format money the same way, seat the same two players (Alice
moves first, Bob second) and bound the free-text message the same way; keeping that here keeps their
prompts and judging consistent. Not a game: it registers nothing and declares no parameters or
equilibrium of its own.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import AfterValidator, Field

from ..base import ActionField, Game, GameParams, P, S, Setup
from ..params import SHOWN_DECIMALS  # six: also the precision an offer must divide M with (1e-6)

NAMES = ("Alice", "Bob")
MESSAGE_CHARS = 1000  # a public message is bounded: a 20-round chat must stay a readable prompt
MAX_MONEY = 1e9
ANNOUNCED_MAX = 20  # GLEE tells the players the horizon only up to 20 rounds


def pretty(x: float) -> str:
    """Money and percentages as GLEE shows them: thousands separators, no trailing zeros (10000 -> "10,000",
    12.5 -> "12.5"), and as many decimals as the amount has, up to six: GLEE's two decimals showed a sum of
    0.004 as "0" and an offer of 0.333 as "0.33" while the payoffs were paid in those fractions."""
    text = f"{x:,.{SHOWN_DECIMALS}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def money_shown(value: float) -> float:
    """A ``money`` parameter the prompts can show as it is (a pydantic validator of the three games):
    one with more than six decimals would be shown rounded (1e-7 as "0$") while paid exactly."""
    if round(value, SHOWN_DECIMALS) != value:
        raise ValueError(f"{value!r} has more than {SHOWN_DECIMALS} decimals, which the prompts cannot show; "
                         f"use a multiple of 0.000001 (GLEE's sums are 100, 10,000 and 1,000,000)")
    return value


# the sum at stake in all three games: positive, at most MAX_MONEY, shown exactly in the prompts
Money = Annotated[float, Field(gt=0, le=MAX_MONEY), AfterValidator(money_shown)]


def hidden_by_incomplete_information(params: GameParams, what: str) -> str | None:
    """``Game.hidden_from_history`` of the three games: ``complete_information = false`` tells each player
    that it does not know ``what``, and the other seat's payoff in a full history would tell it."""
    if getattr(params, "complete_information", True):
        return None
    return f"game.complete_information = false tells each player it does not know {what}"


def two_seats(game: str, n_players: int) -> None:
    if n_players != 2:
        raise ValueError(f"{game} is a two-player game (Alice and Bob), got {n_players} players")


def proposer(t: int) -> int:
    """Alice proposes in odd rounds, Bob in even ones."""
    return (t - 1) % 2


class AlternatingOffers(Game[P, S]):
    """Bargaining and negotiation: in round t the proposer offers, then the other seat responds. The
    state class (``State``) has ``round`` (from 1) and ``phase`` ("offer", "respond", "done")."""

    State: ClassVar[type]

    def setup(self, params: GameParams, n_players: int, rng: np.random.Generator) -> Setup:
        two_seats(self.name, n_players)
        return Setup(2, params.model_dump())

    def initial_state(self, setup: Setup) -> Any:
        return self.State(setup)

    hidden: ClassVar[str]  # what complete_information = false keeps from a player (hidden_from_history)

    def hidden_from_history(self, params: GameParams) -> str | None:
        return hidden_by_incomplete_information(params, self.hidden)

    def to_move(self, state: Any) -> tuple[int, ...]:
        if state.phase == "offer":
            return (proposer(state.round),)
        if state.phase == "respond":
            return (1 - proposer(state.round),)
        return ()


def message_field(rival: str) -> ActionField:
    return ActionField("message", "text", f"the message you pass to {rival}", max_length=MESSAGE_CHARS)


def say(player: int, message: str | None, **public: Any) -> dict[str, Any]:
    """The public transcript entry of one move (the ``say`` event every language game logs)."""
    return {"player": player, "message": message, **public}


def set_at(values: tuple[Any, ...], i: int, value: Any) -> tuple[Any, ...]:
    return values[:i] + (value,) + values[i + 1:]


def reader_for(config: Any, games: Any) -> Game | None:
    """The registered GLEE game whose ``glee_game_type`` is the ``game_type`` of a released config.json."""
    kind = config.get("game_type") if isinstance(config, dict) else None
    for g in games.values():
        if getattr(g, "glee_game_type", None) == kind and kind is not None:
            return g
    return None
