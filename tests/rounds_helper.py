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
