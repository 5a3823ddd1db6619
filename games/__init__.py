"""Games: pure rules. Importing this package must never import an LLM SDK or torch.

The contract every game implements sits here (``base.py``: declarations, state, judging; ``fields.py``:
reply fields; ``params.py``: parameters and draws; ``schema.py``: JSON Schemas of replies); each family is
a subpackage that lists its games in ``GAMES``.
"""

from . import classic, econarena, gamabench, glee, negotiationarena, steering
from .base import Game

FAMILIES = (econarena, gamabench, negotiationarena, glee, steering, classic)
GAMES: dict[str, Game] = {g.name: g for family in FAMILIES for g in family.GAMES}


def get_game(name: str) -> Game:
    try:
        return GAMES[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known: {', '.join(sorted(GAMES))}") from None


__all__ = ["FAMILIES", "GAMES", "Game", "get_game"]
