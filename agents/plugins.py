"""Players of the user's own: a Python strategy found by a ``module:Class`` path in a ``[[players]]`` table.

``agent = "my_agents.shade:Shade"`` seats an instance of ``Shade(label)``. The module is imported only from a
folder the user names (:func:`trust`, the command line's ``--trust DIR``), never from ``sys.path``, the
current folder or an experiment's folder on their own, as a game's path is (``games/plugins.py``). The
class subclasses :class:`CustomAgent` and writes ``act(request)``: it sees what an LLM would (the
messages) and what a baseline would (``request.strategy(kind)``: the game's reference actions;
``request.rng``: the decision's seeded generator), and returns the reply's JSON object or raw text, which
the Host judges and logs like any reply. Like a game path, the module is imported by formats/trusted.py, the
one module that imports code by name (``tests/test_layers.py``).

What a run takes from such a player is bounded: ``act`` runs in a thread of its own (one call at a time per
player, as before), so the event loop goes on while it thinks: a blocking ``act`` ends in an error after
``timeout_s`` seconds (60 unless the class sets another), and SIGTERM and Ctrl-C still stop the run at once
(the thread is a daemon: it never holds the process open). A reply longer than :data:`MAX_REPLY_CHARS` is
refused with its length, not judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
from pathlib import Path
from typing import Any

from ..formats.trusted import PluginError, import_trusted, is_spec, trusted_folder
from .base import DecisionRequest, Reply

__all__ = ["AgentTimeout", "CustomAgent", "PluginError", "is_spec", "load_agent_class", "trust"]

MAX_REPLY_CHARS = 1 << 20  # a million characters: far past any game's reply, far below what stalls a judge
_trusted: list[Path] = []  # folders named with --trust DIR: the only places a path is imported from


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


def trust(folder: str | Path) -> Path:
    """Import player modules from ``folder`` (``--trust DIR``): what a received file names stays data."""
    path = trusted_folder(folder)
    if path not in _trusted:
        _trusted.append(path)
    return path


def _import(module: str) -> Any:
    """``module`` from the first trusted folder holding its file (the same rule as a game's path)."""
    return import_trusted(module, _trusted, "player")


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
