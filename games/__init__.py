"""Games: pure rules. Importing this package must never import an LLM SDK or torch.

The contract every game implements sits here (``base.py``: declarations, state, judging; ``fields.py``:
reply fields; ``params.py``: parameters and draws; ``schema.py``: JSON Schemas of replies); each family is
a subpackage that lists its games in ``GAMES``. Games of a user's own package join the registry on first
use of their key (``plugins.py``: a ``module:Class`` path, or an ``econarena.games`` entry point).
"""

from . import classic, econarena, gamabench, glee, negotiationarena, steering
from .base import Game

FAMILIES = (econarena, gamabench, negotiationarena, glee, steering, classic)


class Registry(dict[str, Game]):
    """The games by name. A key that is not a built-in game is looked up once among the user's own games
    (:func:`.plugins.find`), so every layer that reads ``GAMES`` finds them without knowing the route."""

    def __missing__(self, key: str) -> Game:
        from .plugins import find

        found = find(self, key) if isinstance(key, str) else None
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Game | None = None) -> Game | None:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


GAMES: Registry = Registry({g.name: g for family in FAMILIES for g in family.GAMES})


def get_game(name: str) -> Game:
    try:
        return GAMES[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known: {', '.join(sorted(GAMES))}") from None


__all__ = ["FAMILIES", "GAMES", "Game", "get_game"]
