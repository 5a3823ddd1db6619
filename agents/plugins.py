"""Players of the user's own: a Python strategy found by a ``module:Class`` path in a ``[[players]]`` table.

``agent = "my_agents.shade:Shade"`` seats an instance of ``Shade(label)``. The module is imported from
``sys.path``, else from the experiment file's folder, else from the current folder (as a game's path is,
``games/plugins.py``). The class subclasses :class:`CustomAgent` and writes ``act(request)``: it sees what an
LLM would (the messages) and what a baseline would (``request.strategy(kind)``: the game's reference
actions; ``request.rng``: the decision's seeded generator), and returns the reply's JSON object or raw text,
which the Host judges and logs like any reply. Like a game path, this imports code by name: this module
and ``games/plugins.py`` are the only ones that do (``tests/test_layers.py``).
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

from .base import DecisionRequest, Reply

SPEC = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
_search: list[str] = []


class PluginError(ValueError):
    """An agent path that does not lead to a usable agent class; the message says what was expected."""


class CustomAgent:
    """A strategy of your own: override :meth:`act`. Stateless between decisions unless you keep state."""

    kind = "custom"

    def __init__(self, label: str) -> None:
        self.label = label
        self.model: str | None = None

    def act(self, request: DecisionRequest) -> dict[str, Any] | str:
        """The reply: a JSON-ready dict (sent as its JSON text) or the raw text itself."""
        raise NotImplementedError(f"{type(self).__name__}.act is not written")

    async def decide(self, request: DecisionRequest) -> Reply:
        out = self.act(request)
        return Reply(text=out if isinstance(out, str) else json.dumps(out))


def is_spec(name: str) -> bool:
    return bool(SPEC.fullmatch(name))


def add_search_dir(folder: str | Path) -> None:
    """Look for agent modules in ``folder`` too (an experiment file's folder), after ``sys.path``."""
    text = str(Path(folder).resolve())
    if text not in _search:
        _search.append(text)


def _import(module: str) -> Any:
    for folder in ["", *_search, str(Path.cwd())]:
        if folder and folder not in sys.path:
            sys.path.append(folder)
            importlib.invalidate_caches()
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (module == exc.name or module.startswith(exc.name + ".")):
                raise PluginError(f"module {module!r} was found but imports {exc.name!r}, which is not "
                                  "installed") from None
    raise PluginError(f"no module {module!r} on sys.path, in {', '.join(_search) or 'no experiment folder'} or "
                      f"in the current folder {Path.cwd()}")


def load_agent_class(spec: str) -> type[CustomAgent]:
    """The class at ``module:Class``; :class:`PluginError` names what is wrong."""
    if not is_spec(spec):
        raise PluginError(f"{spec!r}: expected an agent name or a path 'package.module:Class'")
    module, attr = spec.split(":")
    found = getattr(_import(module), attr, None)
    if found is None:
        raise PluginError(f"{spec}: module {module!r} has no {attr!r}")
    if not (inspect.isclass(found) and issubclass(found, CustomAgent)):
        raise PluginError(f"{spec}: expected a subclass of econarena.agents.plugins.CustomAgent, got "
                          f"{type(found).__name__} {getattr(found, '__name__', '')}".rstrip())
    if found.act is CustomAgent.act:
        raise PluginError(f"{spec}: {found.__name__} does not write act(request)")
    return found
