"""The importers, by the source name ``econarena import`` takes: lazy entries of the one registry type
(``formats/registry.py``), each checked on load against :class:`.common.Importer`. Adding a source is one
line here."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..formats.registry import Registry
from .common import Importer


def _named(module: Any, source: str) -> ModuleType:
    """The module, refused where its NAME is not the source it is filed under."""
    if source != module.NAME:
        raise ValueError(f"NAME = {module.NAME!r}, expected {source!r} (the name it is filed under)")
    return module  # type: ignore[no-any-return]


IMPORTERS: Registry[ModuleType] = Registry("importer", {
    "gamabench": ".gamabench", "negotiationarena": ".negotiationarena", "glee": ".glee",
}, package=__package__, kind=Importer, check=_named)
