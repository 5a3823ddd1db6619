"""Play a repeated-round game from given replies, as the Host would, and keep its round log.

Shared by the GAMA-Bench game tests: score and rule tests feed hand-chosen replies round by round.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def play_rounds(game: Any, params: Any, key: str, per_round: list[list[Any]]) -> tuple[Any, Any, list[dict]]:
    """``per_round[r][seat]`` is the seat's value for ``key`` in round r (None: the reply broke a rule).
    Returns (setup, final state, round log in the Host's shape)."""
    setup = game.setup(params, len(per_round[0]), np.random.default_rng(0))
    state = game.initial_state(setup)
    log = []
    for r, values in enumerate(per_round):
        actions = {i: None if v is None else {key: v} for i, v in enumerate(values)}
        after = game.apply(state, actions)
        log.append({"round": r, "actions": [actions[i] for i in range(len(values))],
                    "events": game.events(state, after, actions)})
        state = after
    return setup, state, log


def play_turns(game: Any, setup: Any, replies: list[str]) -> tuple[Any, list[dict]]:
    """A sequential game, one mover per move: ``replies`` are the raw reply texts in order, judged as the
    Host judges them. Returns (final state, round log)."""
    state = game.initial_state(setup)
    log = []
    for r, text in enumerate(replies):
        seat = game.to_move(state)[0]
        action = game.judge(state, seat, text).action
        after = game.apply(state, {seat: action})
        log.append({"round": r, "actions": [action if i == seat else None for i in range(setup.n_players)],
                    "events": game.events(state, after, {seat: action})})
        state = after
    return state, log
