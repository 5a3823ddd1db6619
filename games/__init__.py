"""Games: pure rules. Importing this package must never import an LLM SDK or torch.

The contract every game implements sits here (``base.py``: declarations, state, judging; ``fields.py``:
reply fields; ``params.py``: parameters and draws; ``schema.py``: JSON Schemas of replies); each family is
a subpackage that lists its games in ``GAMES``. Games of a user's own package join the registry on first
use of their key (``plugins.py``: a ``module:Class`` path, or an ``econarena.games`` entry point).
"""

from collections.abc import Iterator
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from ..formats.registry import Registry as Shared
from .base import Game

# each family's games, so that a family is imported only when one of its games is played or named (a
# one-game experiment's validate, run and summary import one family); tests check this against GAMES
FAMILY_GAMES: dict[str, tuple[str, ...]] = {
    "econarena": ("beauty_contest", "second_price_auction", "english_auction"),
    "gamabench": ("guessing_game", "el_farol_bar", "divide_dollar", "public_goods", "diners_dilemma",
                  "sealed_bid_auction", "battle_royale", "pirate_game"),
    "negotiationarena": ("resource_exchange", "ultimatum", "buy_sell"),
    "glee": ("bargaining", "negotiation", "persuasion"),
    "steering": ("fruit_trade",),
    "classic": ("prisoners_dilemma", "matching_pennies"),
}
FAMILY_NAMES = tuple(FAMILY_GAMES)  # in the order above: the order of listings, reports and the reference


class Registry(dict[str, Game]):
    """The games by name, each family imported on first use of one of its games. Listing the registry
    (iterating, ``len``, ``items``) imports every family, in :data:`FAMILY_NAMES` order. A key that is not
    a built-in game is looked up once among the user's own games (:func:`.plugins.find`), so every layer
    that reads ``GAMES`` finds them without knowing the route."""

    def __init__(self, lazy: dict[str, str] | None = None) -> None:
        super().__init__()
        self._lazy = dict(lazy or {})  # game name -> family module not imported yet

    def _load(self, family: str) -> None:
        module = _modules[family]
        for g in module.GAMES:
            old = dict.get(self, g.name)
            if old is not None and type(old) is not type(g):
                from .plugins import PluginError

                raise PluginError(f"game {g.name!r} of {type(old).__module__} has the name of a built-in game "
                                  f"({type(g).__module__}): rename it")
            dict.__setitem__(self, g.name, g)
        self._lazy = {k: v for k, v in self._lazy.items() if v != family}

    def load_all(self) -> None:
        """Every family imported, the built-ins first in family order, then the user's own games."""
        if not self._lazy:
            return
        for family in dict.fromkeys(self._lazy.values()):
            self._load(family)
        own = {k: v for k, v in dict.items(self) if k not in _BUILTIN}
        dict.clear(self)
        for family in FAMILY_NAMES:
            for name in FAMILY_GAMES[family]:
                dict.__setitem__(self, name, _modules[family].GAMES[FAMILY_GAMES[family].index(name)])
        dict.update(self, own)

    def __missing__(self, key: str) -> Game:
        if isinstance(key, str) and key in self._lazy:
            self._load(self._lazy[key])
            return dict.__getitem__(self, key)
        from .plugins import find

        found = find(self, key) if isinstance(key, str) else None
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Game | None = None) -> Game | None:  # type: ignore[override]  # by name only
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        return super().__iter__()

    def __len__(self) -> int:
        self.load_all()
        return super().__len__()

    def keys(self) -> Any:
        self.load_all()
        return super().keys()

    def values(self) -> Any:
        self.load_all()
        return super().values()

    def items(self) -> Any:
        self.load_all()
        return super().items()

    def copy(self) -> dict[str, Game]:
        self.load_all()
        return dict(super().items())

    def __eq__(self, other: object) -> bool:
        self.load_all()
        return super().__eq__(other)

    __hash__ = None

    def __repr__(self) -> str:
        self.load_all()
        return super().__repr__()


_BUILTIN = {name for names in FAMILY_GAMES.values() for name in names}


@runtime_checkable
class Family(Protocol):
    """What a family module gives: its games, in order (and a card in its docstring)."""

    GAMES: tuple[Game, ...]


# the family modules, each imported on first use; the targets are written out (nothing is imported by a
# name computed or read from a file)
_modules: Shared[ModuleType] = Shared("game family", {
    "econarena": ".econarena", "gamabench": ".gamabench", "negotiationarena": ".negotiationarena",
    "glee": ".glee", "steering": ".steering", "classic": ".classic",
}, package=__name__, kind=Family)
GAMES: Registry = Registry({name: family for family, names in FAMILY_GAMES.items() for name in names})


def __getattr__(name: str) -> Any:
    """``FAMILIES`` (every family module, imported on first use) and each family by its name."""
    if name == "FAMILIES":
        return tuple(_modules[f] for f in FAMILY_NAMES)
    if name in FAMILY_NAMES:
        return _modules[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_game(name: str) -> Game:
    try:
        return GAMES[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known: {', '.join(sorted(GAMES))}") from None


__all__ = ["FAMILIES", "GAMES", "Game", "get_game"]
