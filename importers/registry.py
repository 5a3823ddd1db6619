"""The importers, by the source name ``econarena import`` takes: lazy entries of the one registry type
(``formats/registry.py``), each checked on load against :class:`Importer`. Adding a source is one
line here."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..formats.registry import Registry

if TYPE_CHECKING:
    from .common import ImportResult


@runtime_checkable
class Importer(Protocol):
    """A source module, checked on load: the interface ``importers/common.py`` describes. Declared here, not
    there, so that naming the sources (the command line's choices) imports no importer."""

    NAME: str
    DESCRIPTION: str
    ITEMS: str
    OPTIONS: tuple[str, ...]

    def import_dir(self, src: str | Path, out: str | Path, **options: Any) -> ImportResult: ...


def _named(module: Any, source: str) -> ModuleType:
    """The module, refused where its NAME is not the source it is filed under."""
    if source != module.NAME:
        raise ValueError(f"NAME = {module.NAME!r}, expected {source!r} (the name it is filed under)")
    return module


IMPORTERS: Registry[ModuleType] = Registry("importer", {
    "gamabench": ".gamabench", "negotiationarena": ".negotiationarena", "glee": ".glee",
}, package=__package__, kind=Importer, check=_named)
