"""The importers, by the source name ``econarena import`` takes. Each module follows the interface in
``importers/common.py`` (NAME, DESCRIPTION, OPTIONS, ITEMS, ``import_dir``); adding a source is one line here."""

from __future__ import annotations

from types import ModuleType

from . import gamabench, glee, negotiationarena

IMPORTERS: dict[str, ModuleType] = {m.NAME: m for m in (gamabench, negotiationarena, glee)}
