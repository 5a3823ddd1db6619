"""Games of the user's own, without forking: a ``module:Class`` path or an installed entry point.

Two routes lead a game into :data:`econarena.games.GAMES`, both on first use of its key:

- a path ``"my_games.duopoly:Duopoly"`` (in an experiment's ``game``, or ``econarena check``): the module is
  imported only from a folder the user trusts by name (:func:`trust`, the command line's ``--trust DIR``);
  the attribute must be a :class:`Game` subclass (or an instance of one). The game is filed under the path
  itself, so a run directory that names it finds it again when its folder is trusted.
- an entry point in the group ``econarena.games`` of an installed distribution (``pyproject.toml``:
  ``[project.entry-points."econarena.games"] duopoly = "my_games.duopoly:Duopoly"``), filed under the
  game's ``name``, so ``game = "duopoly"`` works like a built-in.

The import itself is formats/trusted.py's, shared with the players' paths: only what a user names, only
from a folder the user named, and only a Game comes out of it. A run directory, an experiment file, the
current folder or ``sys.path`` never make it import a module on their own: a received run directory could
name ``numpy.f2py.__main__:X`` or sit beside an ``evilgame.py``. The rules themselves stay pure; finding
them is code loading, not I/O of data.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# the rule of a path imported from a trusted folder is one, shared with the players' paths: the one import
# of games/ from outside it (tests/test_layers.py says why)
from ..formats.trusted import PluginError, import_trusted, is_spec, module_file, trusted_folder
from .base import Game

__all__ = ["PluginError", "as_game", "entry_point_games", "find", "is_spec", "load_entry_points", "load_spec",
           "module_file", "resolve", "trust", "trusted"]

GROUP = "econarena.games"

_trusted: list[Path] = []  # folders named by the user (--trust DIR): the only places a path is imported from
_failed: dict[str, str] = {}  # path -> why it could not be loaded (asked once, not on every lookup)
_entry_points: list[Game] | None = None
entry_point_errors: list[str] = []  # entry points that failed to load, with why


def trust(folder: str | Path) -> Path:
    """Import game modules from ``folder`` (the command line's ``--trust DIR``): the one way a path's code
    runs, so that what a received file names stays data."""
    path = trusted_folder(folder)
    if path not in _trusted:
        _trusted.append(path)
        _failed.clear()  # a path refused before may be found there
    return path


def trusted() -> list[Path]:
    """The folders trusted so far, in the order named."""
    return list(_trusted)


def _import(module: str) -> Any:
    return import_trusted(module, _trusted, "game", ", or installed with an entry point")


def as_game(obj: Any, where: str) -> Game:
    """The game ``obj`` stands for: a Game instance, or a Game subclass built with no arguments."""
    if inspect.isclass(obj) and issubclass(obj, Game):
        if inspect.isabstract(obj):
            missing = ", ".join(sorted(obj.__abstractmethods__))
            raise PluginError(f"{where}: {obj.__name__} leaves abstract methods unwritten: {missing}")
        obj = obj()
    if not isinstance(obj, Game):
        raise PluginError(f"{where}: expected a subclass of econarena.games.base.Game, got {type(obj).__name__}")
    for attr in ("name", "version", "description", "info", "Params", "action_key", "history_key"):
        if not hasattr(obj, attr):
            raise PluginError(f"{where}: the game declares no {attr!r} (see econarena.games.base.Game)")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", obj.name):
        raise PluginError(f"{where}: name {obj.name!r}: expected lower-case letters, digits and '_' "
                          "(it names the prompt template file and the game in tables)")
    return obj


def load_spec(spec: str) -> Game:
    """Import the game at ``module:Class``; :class:`PluginError` names what is wrong."""
    if not is_spec(spec):
        raise PluginError(f"{spec!r}: expected a game name or a path 'package.module:Class'")
    if spec in _failed:
        raise PluginError(_failed[spec])
    module, attr = spec.split(":")
    try:
        found = getattr(_import(module), attr, None)
        if found is None:
            raise PluginError(f"{spec}: module {module!r} has no {attr!r}")
        return as_game(found, spec)
    except PluginError as exc:
        _failed[spec] = str(exc)
        raise


def entry_point_games() -> list[Game]:
    """Every game of the ``econarena.games`` entry points of the installed distributions (loaded once).

    An entry point names a Game class or instance, or a module (or object) with a ``GAMES`` tuple, the way
    a family package lists its games."""
    global _entry_points
    if _entry_points is None:
        found: list[Game] = []
        for ep in importlib.metadata.entry_points(group=GROUP):
            where = f"entry point {ep.name} = {ep.value!r} ({GROUP})"
            try:
                obj = ep.load()
                items: Iterable[Any] = getattr(obj, "GAMES", None) or (obj,)
                found += [as_game(x, where) for x in items]
            except Exception as exc:  # a broken package must not break every other game: said by `check`
                entry_point_errors.append(f"{where}: {type(exc).__name__}: {exc}")
        _entry_points = found
    return _entry_points


def resolve(registry: dict[str, Game], key: str) -> Game:
    """The game for ``key`` outside the built-ins, filed into ``registry``; :class:`PluginError` says why
    there is none."""
    if _entry_points is None:
        load_entry_points(registry)
        if dict.__contains__(registry, key):
            return dict.__getitem__(registry, key)
    if not is_spec(key):
        raise PluginError(f"unknown game {key!r}")
    game = load_spec(key)
    if game.name in getattr(registry, "_lazy", {}):  # a built-in name whose family is not imported yet
        registry[game.name]
    named = dict.get(registry, game.name)
    if named is not None and type(named) is not type(game):
        raise PluginError(f"{key}: the game's name {game.name!r} is taken by {type(named).__module__}."
                          f"{type(named).__name__}: choose another name")
    _file(registry, key, game, key)
    return game


def load_entry_points(registry: dict[str, Game]) -> list[str]:
    """File every entry point game into ``registry`` (``econarena list`` shows them); returns the entry
    points that failed to load, with why."""
    for game in entry_point_games():
        _file(registry, game.name, game, f"entry point game {game.name!r}")
    return list(entry_point_errors)


def _file(registry: dict[str, Game], key: str, game: Game, where: str) -> None:
    old = dict.get(registry, key)
    if old is not None and type(old) is not type(game):
        raise PluginError(f"{where} ({type(game).__module__}) has the name of another game "
                          f"({type(old).__module__}): rename one")
    dict.__setitem__(registry, key, game)


def _in_trusted(module: str) -> bool:
    """Whether a trusted folder holds ``module``'s file (looked at, not run)."""
    return any(module_file(module, folder) is not None for folder in _trusted)


def find(registry: dict[str, Game], key: str) -> Game | None:
    """:func:`resolve`, or None where there is no such game (a lookup that only asks).

    A lookup that only asks comes from anywhere (a report reading a run directory someone sent), so a
    path is imported here only when a trusted folder holds its module: an unknown path is a name, never
    an import. Entry points are installed code, loaded as ``econarena list`` loads them."""
    if is_spec(key) and not _in_trusted(key.split(":")[0]):
        if _entry_points is None:
            load_entry_points(registry)
        return dict.get(registry, key)
    try:
        return resolve(registry, key)
    except PluginError:
        return None
