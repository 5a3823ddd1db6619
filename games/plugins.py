"""Games of the user's own, without forking: a ``module:Class`` path or an installed entry point.

Two routes lead a game into :data:`econarena.games.GAMES`, both on first use of its key:

- a path ``"my_games.duopoly:Duopoly"`` (in an experiment's ``game``, or ``econarena check``): the module is
  imported from ``sys.path``, else from the folders registered with :func:`add_search_dir` (the experiment
  file's own folder), else from the current folder; the attribute must be a :class:`Game` subclass (or an
  instance of one). The game is filed under the path itself, so a run directory that names it finds it again.
- an entry point in the group ``econarena.games`` of an installed distribution (``pyproject.toml``:
  ``[project.entry-points."econarena.games"] duopoly = "my_games.duopoly:Duopoly"``), filed under the
  game's ``name``, so ``game = "duopoly"`` works like a built-in.

This is the one module of the package that imports code by name (``tests/test_layers.py`` allows it here
and nowhere else): only what a user names, and only a Game comes out of it. Naming a module runs its code,
like any Python script: run only experiment files you trust. The rules themselves stay pure; finding them
is code loading, not I/O of data.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import inspect
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .base import Game

GROUP = "econarena.games"
SPEC = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")

_search: list[str] = []
_failed: dict[str, str] = {}  # path -> why it could not be loaded (asked once, not on every lookup)
_entry_points: list[Game] | None = None
entry_point_errors: list[str] = []  # entry points that failed to load, with why


class PluginError(ValueError):
    """A game path or entry point that does not lead to a game; the message says what was expected."""


def is_spec(key: str) -> bool:
    """Whether ``key`` is a ``module:Class`` path (a built-in game's name never holds a colon)."""
    return bool(SPEC.fullmatch(key))


def add_search_dir(folder: str | Path) -> None:
    """Look for game modules in ``folder`` too (an experiment file's folder), after ``sys.path``."""
    text = str(Path(folder).resolve())
    if text not in _search:
        _search.append(text)
        _failed.clear()  # a path not found before may be found there


def _missing_itself(module: str, exc: ModuleNotFoundError) -> bool:
    """Whether ``exc`` says ``module`` (or a package above it) is missing, not something it imports."""
    return exc.name is not None and (module == exc.name or module.startswith(exc.name + "."))


def _import(module: str) -> Any:
    for folder in ["", *_search, str(Path.cwd())]:
        if folder and folder not in sys.path:
            sys.path.append(folder)
            importlib.invalidate_caches()
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not _missing_itself(module, exc):
                raise PluginError(f"module {module!r} was found but imports {exc.name!r}, which is not "
                                  "installed") from None
    raise PluginError(f"no module {module!r} on sys.path, in {', '.join(_search) or 'no experiment folder'} "
                      f"or in the current folder {Path.cwd()}: put the file beside the experiment, install its "
                      "package, or add its folder to PYTHONPATH")


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


def _near(module: str) -> bool:
    """Whether ``module``'s top package is imported already or lies in the current folder or an experiment's
    folder: found without running any of its code (``PathFinder`` only looks at the files)."""
    top = module.split(".")[0]
    if top in sys.modules:
        return True
    return any(importlib.machinery.PathFinder.find_spec(top, [folder]) is not None
               for folder in [*_search, str(Path.cwd())])


def find(registry: dict[str, Game], key: str) -> Game | None:
    """:func:`resolve`, or None where there is no such game (a lookup that only asks).

    A lookup that only asks comes from anywhere (a report reading a run directory someone sent), so a
    path is imported here only when its module sits in the current folder or an experiment's folder (or
    was imported already): a run directory never makes this process import an installed module by
    name. The experiment's own reading (``resolve``) and ``econarena check`` look on sys.path too."""
    if is_spec(key) and not _near(key.split(":")[0]):
        if _entry_points is None:
            load_entry_points(registry)
        return dict.get(registry, key)
    try:
        return resolve(registry, key)
    except PluginError:
        return None
