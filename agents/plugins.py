"""Players of the user's own: a Python strategy found by a ``module:Class`` path in a ``[[players]]`` table.

``agent = "my_agents.shade:Shade"`` seats an instance of ``Shade(label)``. The module is imported only from a
folder the user names (:func:`trust`, the command line's ``--trust DIR``), never from ``sys.path``, the
current folder or an experiment's folder on their own, as a game's path is (``games/plugins.py``). The
class subclasses :class:`CustomAgent` and writes ``act(request)``: it sees what an LLM would (the
messages) and what a baseline would (``request.strategy(kind)``: the game's reference actions;
``request.rng``: the decision's seeded generator), and returns the reply's JSON object or raw text, which
the Host judges and logs like any reply. Like a game path, this imports code by name: this module and
``games/plugins.py`` are the only ones that do (``tests/test_layers.py``).

What a run takes from such a player is bounded: ``act`` runs in a thread of its own (one call at a time per
player, as before), so the event loop goes on while it thinks: a blocking ``act`` ends in an error after
``timeout_s`` seconds (60 unless the class sets another), and SIGTERM and Ctrl-C still stop the run at once
(the thread is a daemon: it never holds the process open). A reply longer than :data:`MAX_REPLY_CHARS` is
refused with its length, not judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

from .base import DecisionRequest, Reply

MAX_REPLY_CHARS = 1 << 20  # a million characters: far past any game's reply, far below what stalls a judge
SPEC = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
_trusted: list[Path] = []  # folders named with --trust DIR: the only places a path is imported from


class PluginError(ValueError):
    """An agent path that does not lead to a usable agent class; the message says what was expected."""


class AgentTimeout(TimeoutError):
    """A player's ``act`` took longer than its ``timeout_s``."""


class CustomAgent:
    """A strategy of your own: override :meth:`act`. Stateless between decisions unless you keep state."""

    kind = "custom"
    timeout_s: float = 60.0  # the longest one act() may take; a subclass sets its own

    def __init__(self, label: str) -> None:
        self.label = label
        self.model: str | None = None

    def act(self, request: DecisionRequest) -> dict[str, Any] | str:
        """The reply: a JSON-ready dict (sent as its JSON text) or the raw text itself."""
        raise NotImplementedError(f"{type(self).__name__}.act is not written")

    async def decide(self, request: DecisionRequest) -> Reply:
        lock = self.__dict__.get("_act_lock")
        if lock is None:  # made here, inside the running loop; act() calls stay one at a time, as before
            lock = self.__dict__["_act_lock"] = asyncio.Lock()
        async with lock:
            out = await _in_thread(self.act, request, self.timeout_s, type(self).__name__)
        text = out if isinstance(out, str) else json.dumps(out)
        if len(text) > MAX_REPLY_CHARS:
            raise ValueError(f"{type(self).__name__}.act returned a reply of {len(text):,} characters, more "
                             f"than the {MAX_REPLY_CHARS:,} a reply may have")
        return Reply(text=text)


async def _in_thread(act: Any, request: DecisionRequest, timeout_s: float, name: str) -> Any:
    """``act(request)`` in a daemon thread, awaited up to ``timeout_s``: the loop (and its signal handlers)
    runs meanwhile, and a thread that never returns is left behind, never joined."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)

    def work() -> None:
        try:
            value, error = act(request), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task as its exception
            value, error = None, exc
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"econarena-act-{name}", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(done), timeout_s)
    except asyncio.TimeoutError:
        raise AgentTimeout(f"{name}.act did not return within timeout_s = {timeout_s:g} s (left running in "
                           "its thread; set timeout_s on the class for a slower player)") from None


def is_spec(name: str) -> bool:
    return bool(SPEC.fullmatch(name))


def trust(folder: str | Path) -> Path:
    """Import player modules from ``folder`` (``--trust DIR``): what a received file names stays data."""
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise PluginError(f"--trust {folder}: expected a folder that holds your game or player modules")
    if path not in _trusted:
        _trusted.append(path)
    return path


def _inside(path: str | None, folder: Path) -> bool:
    return path is not None and Path(path).resolve().is_relative_to(folder)


def _import(module: str) -> Any:
    """``module`` from the first trusted folder holding its file (the same rule as a game's path)."""
    top = module.split(".")[0]
    for folder in _trusted:
        base = folder.joinpath(*module.split("."))
        if not (base.with_name(base.name + ".py").is_file() or (base / "__init__.py").is_file()):
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
            return importlib.import_module(module)
        except ModuleNotFoundError as exc:
            raise PluginError(f"module {module!r} was found in {folder} but imports {exc.name!r}, which is not "
                              "installed") from None
    where = ", ".join(map(str, _trusted)) if _trusted else "no folder is trusted"
    raise PluginError(f"{module!r} is not imported: a player module is imported only from a folder you name "
                      f"with --trust DIR ({where}); a file never makes econarena import a module on its own")


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
