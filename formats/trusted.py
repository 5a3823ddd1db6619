"""Code of the user's own, imported by a ``module:Class`` path from a folder the user trusts by name.

A game path (games/plugins.py) and a player path (agents/plugins.py) follow one rule, written here: the
module is imported only from a folder named with ``--trust DIR``, never from ``sys.path``, the current folder
or an experiment's folder on their own (a received run directory could name ``numpy.f2py.__main__:X`` or sit
beside an ``evilgame.py``), and a module of that name installed or imported from elsewhere is refused rather
than run in its place. This is the one module of the package that imports a module by name
(``tests/test_layers.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

SPEC = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


class PluginError(ValueError):
    """A game or player path that does not lead to what it should; the message says what was expected."""


def is_spec(key: str) -> bool:
    """Whether ``key`` is a ``module:Class`` path (a built-in game's or agent's name never holds a colon)."""
    return bool(SPEC.fullmatch(key))


def trusted_folder(folder: str | Path) -> Path:
    """``folder`` resolved, for ``--trust DIR``; :class:`PluginError` when it is no folder."""
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise PluginError(f"--trust {folder}: expected a folder that holds your game or player modules")
    return path


def module_file(module: str, folder: Path) -> Path | None:
    """The file ``module`` is in ``folder`` (``a/b.py`` or ``a/b/__init__.py``), looked up without running
    any code; None where the folder does not hold it."""
    base = folder.joinpath(*module.split("."))
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _inside(path: str | None, folder: Path) -> bool:
    return path is not None and Path(path).resolve().is_relative_to(folder)


def import_trusted(module: str, folders: list[Path], what: str, elsewhere: str = "") -> Any:
    """Import ``module`` from the first of ``folders`` that holds it, refusing one that another module of
    that name (installed, or imported already) would stand in for; :class:`PluginError` says why not.
    ``what`` names the kind of module in the message, ``elsewhere`` the other way in, if there is one."""
    top = module.split(".")[0]
    for folder in folders:
        if module_file(module, folder) is None:
            continue
        loaded = sys.modules.get(top)
        if loaded is not None and not (_inside(getattr(loaded, "__file__", None), folder)
                                       or any(_inside(p, folder) for p in getattr(loaded, "__path__", []))):
            raise PluginError(f"{module!r}: a module {top!r} is imported already from elsewhere, not from the "
                              f"trusted folder {folder}: rename your package")
        if str(folder) not in sys.path:
            sys.path.append(str(folder))
            importlib.invalidate_caches()
        spec = importlib.util.find_spec(top) if loaded is None else None
        if spec is not None and not (_inside(spec.origin, folder)
                                     or any(_inside(p, folder) for p in spec.submodule_search_locations or [])):
            raise PluginError(f"{module!r}: an installed module {top!r} ({spec.origin}) comes before the trusted "
                              f"folder {folder} on sys.path: rename your package")
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            raise PluginError(f"module {module!r} was found in {folder} but imports {exc.name!r}, which is not "
                              "installed") from None
        if not _inside(getattr(found, "__file__", None), folder):
            raise PluginError(f"{module!r} was imported from {getattr(found, '__file__', '?')}, not from the "
                              f"trusted folder {folder}: rename your package")
        return found
    where = ", ".join(map(str, folders)) if folders else "no folder is trusted"
    raise PluginError(f"{module!r} is not imported: a {what} module is imported only from a folder you name "
                      f"with --trust DIR ({where}){elsewhere}; a file never makes econarena import a module on "
                      "its own")
