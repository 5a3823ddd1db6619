"""One small registry for every table of named parts (game families, providers, importers, report sections,
import hooks): lazy ``module:attr`` entries, the entry points of installed distributions, and a check of
what each entry loads.

Why one type: a newcomer learns one shape, start-up stays lazy everywhere (an entry is a string until its
name is asked for, so ``--help`` imports no family and no SDK), and a broken entry fails the same way
everywhere, naming the registry, the entry and what was expected.

What may be imported: only the entries written in the package's own code (string literals beside the
registry) and the entry points of installed distributions, both code somebody chose to install. Nothing a
config file, a run directory or a command-line argument names is ever imported here: :meth:`Registry.load`
refuses a name that is not an entry. This module imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:  # importlib.metadata is imported when entry points are first read: start-up stays short
    from importlib.metadata import EntryPoint

T = TypeVar("T")

# "package.module" or "package.module:attr.sub", optionally relative (".module:attr") to the registry's package
TARGET = re.compile(r"\.*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?")


class RegistryError(LookupError):
    """An entry that is unknown, does not import, or loads the wrong kind of object; the message names the
    registry, the entry and what was expected."""

    def __str__(self) -> str:  # LookupError's str() would quote the message like a key
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Named entries of one kind, each imported on first use.

    ``entries`` maps a name to a target, ``"module:attr"`` (``attr`` may be dotted) or ``"module"`` alone
    (the module is the object); a target that starts with ``.`` is relative to ``package``. ``group`` names
    an entry-point group whose entries join after the built-ins (a built-in name is never replaced).
    ``kind`` is what every loaded object must be: a class (the object must be that class, a subclass of it,
    or an instance of it) or a ``runtime_checkable`` Protocol (the object must satisfy it); ``check(obj, name)`` may
    turn the loaded object into the one filed (it raises ``ValueError`` or ``TypeError`` to refuse it, and
    the registry puts the entry's name and target before the message).
    """

    def __init__(self, what: str, entries: Mapping[str, str], *, package: str | None = None,
                 group: str | None = None, kind: type | None = None,
                 check: Callable[[Any, str], T] | None = None) -> None:
        for name, target in entries.items():
            if not TARGET.fullmatch(target):
                raise RegistryError(f"{what} {name!r}: target {target!r} is not 'module' or 'module:attr'")
            if target.startswith(".") and package is None:
                raise RegistryError(f"{what} {name!r}: the relative target {target!r} needs the registry's package")
        self.what = what
        self.package = package
        self.group = group
        self.kind = kind
        self._check = check
        self._entries: dict[str, str] = dict(entries)
        self._loaded: dict[str, T] = {}
        self._from_group: dict[str, EntryPoint] | None = None

    # ----------------------------------------------------------------------------------------- names

    def _group(self) -> dict[str, EntryPoint]:
        """The entry points of ``group`` not shadowing a built-in, read once (asked only when needed)."""
        if self._from_group is None:
            found: dict[str, EntryPoint] = {}
            if self.group is not None:
                from importlib.metadata import entry_points

                for ep in entry_points(group=self.group):
                    if ep.name not in self._entries:
                        found.setdefault(ep.name, ep)
            self._from_group = found
        return self._from_group

    def builtin(self) -> tuple[str, ...]:
        """The names written in the package, in their order, without reading entry points."""
        return tuple(self._entries)

    def names(self) -> tuple[str, ...]:
        """Every name: the built-ins in their order, then the entry points in theirs."""
        return (*self._entries, *self._group())

    def target(self, name: str) -> str:
        """Where ``name`` comes from (``module:attr``), without importing it."""
        if name in self._entries:
            return self._entries[name]
        ep = self._group().get(name)
        if ep is None:
            raise self._unknown(name)
        return ep.value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._entries or name in self._group())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    # ----------------------------------------------------------------------------------------- loading

    def load(self, name: str) -> T:
        """The object of ``name``, imported and checked on first use (later calls return the same one)."""
        if name in self._loaded:
            return self._loaded[name]
        if name in self._entries:
            where = f"{self.what} {name!r} ({self._entries[name]})"
            obj = self._import(self._entries[name], where)
        else:
            ep = self._group().get(name)
            if ep is None:
                raise self._unknown(name)
            where = f"{self.what} {name!r} (entry point {ep.value!r} of group {self.group!r})"
            try:
                obj = ep.load()
            except Exception as exc:  # whatever a third-party package raises, said with the entry named
                raise RegistryError(f"{where}: does not load: {type(exc).__name__}: {exc}") from exc
        filed = self._checked(obj, name, where)
        self._loaded[name] = filed
        return filed

    __getitem__ = load

    def get(self, name: str, default: T | None = None) -> T | None:
        """The object of ``name``, or ``default`` when there is no such entry (a broken entry still raises)."""
        return self.load(name) if name in self else default

    def items(self) -> Iterator[tuple[str, T]]:
        """Every entry loaded, in :meth:`names` order."""
        return ((name, self.load(name)) for name in self.names())

    def values(self) -> Iterator[T]:
        return (obj for _, obj in self.items())

    def _import(self, target: str, where: str) -> Any:
        module, _, attr = target.partition(":")
        try:
            obj: Any = importlib.import_module(module, self.package)
        except ImportError as exc:
            raise RegistryError(f"{where}: module {module!r} does not import: {exc}") from exc
        for part in attr.split(".") if attr else ():
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise RegistryError(f"{where}: module {module!r} has no {attr!r}") from None
        return obj

    def _checked(self, obj: Any, name: str, where: str) -> T:
        kind = self.kind
        if kind is not None:
            is_protocol = getattr(kind, "_is_protocol", False)
            if is_protocol:
                ok = isinstance(obj, kind)
            else:
                ok = isinstance(obj, kind) or (isinstance(obj, type) and issubclass(obj, kind))
            if not ok:
                got = obj.__name__ if isinstance(obj, type) else type(obj).__name__
                expected = "an object with the members of" if is_protocol else "a subclass or instance of"
                raise RegistryError(f"{where}: expected {expected} {kind.__module__}.{kind.__qualname__}, "
                                    f"got {got}")
        if self._check is not None:
            try:
                return self._check(obj, name)
            except (TypeError, ValueError) as exc:
                raise RegistryError(f"{where}: {exc}") from exc
        return obj

    def _unknown(self, name: str) -> RegistryError:
        return RegistryError(f"unknown {self.what} {name!r}; known: {', '.join(sorted(self.names())) or 'none'}")

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {len(self._entries)} built-in)"
