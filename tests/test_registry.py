"""The one registry type (formats/registry.py): entries stay strings until asked for, entry points join after
the built-ins, and a bad entry fails naming the registry, the entry and what was expected; and the tables
of the package (game families, importers, report sections, import hooks) are entries of it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pytest

from econarena.formats.registry import Registry, RegistryError

Base = ValueError  # the base class the entries must derive from: one the test's modules can import as-is


@runtime_checkable
class HasGames(Protocol):
    GAMES: tuple[Any, ...]


def write_module(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path with two modules and one installed distribution's entry points."""
    write_module(tmp_path, "reg_parts_a", """
        class Good(ValueError):
            pass

        class Stray:
            pass

        GAMES = (1, 2)
        """)
    write_module(tmp_path, "reg_parts_b", """
        class FromEntryPoint(ValueError):
            pass

        class Shadow(ValueError):
            pass
        """)
    info = tmp_path / "reg_parts-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reg-parts\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[econarena.test_registry]\nextra = reg_parts_b:FromEntryPoint\ngood = reg_parts_b:Shadow\n"
        "broken = reg_parts_missing:Nothing\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("reg_parts_a", "reg_parts_b"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def test_entries_are_imported_only_when_asked_for(plugin_dir: Path) -> None:
    reg: Registry[type[Base]] = Registry("part", {"good": "reg_parts_a:Good"}, kind=Base)
    assert "good" in reg and list(reg) == ["good"] and reg.target("good") == "reg_parts_a:Good"
    assert "reg_parts_a" not in sys.modules  # naming, listing and asking where: nothing imported
    got = reg.load("good")
    assert got.__name__ == "Good" and "reg_parts_a" in sys.modules
    assert reg["good"] is got  # loaded once, the same object after


def test_a_module_alone_is_an_entry_and_a_protocol_is_checked(plugin_dir: Path) -> None:
    reg: Registry[Any] = Registry("family", {"a": "reg_parts_a", "b": "reg_parts_b"}, kind=HasGames)
    assert reg.load("a").GAMES == (1, 2)
    with pytest.raises(RegistryError, match=r"^family 'b' \(reg_parts_b\): expected an object with the members "
                                            r"of .*HasGames, got module$"):
        reg.load("b")


def test_entry_points_join_after_the_builtins_and_never_replace_one(plugin_dir: Path) -> None:
    reg: Registry[type[Base]] = Registry("part", {"good": "reg_parts_a:Good"}, group="econarena.test_registry",
                                         kind=Base)
    assert reg.builtin() == ("good",)
    assert reg.names() == ("good", "extra", "broken")  # the entry point named "good" does not replace it
    assert reg.load("extra").__name__ == "FromEntryPoint" and reg.load("good").__name__ == "Good"
    with pytest.raises(RegistryError, match=r"^part 'broken' \(entry point 'reg_parts_missing:Nothing' of group "
                                            r"'econarena.test_registry'\): does not load: ModuleNotFoundError"):
        reg.load("broken")


def test_a_bad_entry_names_the_registry_the_entry_and_what_was_expected(plugin_dir: Path) -> None:
    reg: Registry[type[Base]] = Registry("part", {
        "good": "reg_parts_a:Good", "stray": "reg_parts_a:Stray", "gone": "reg_parts_a:Gone",
        "nomodule": "reg_parts_nowhere:Good"}, kind=Base)
    with pytest.raises(RegistryError, match=r"^part 'stray' \(reg_parts_a:Stray\): expected a subclass or instance "
                                            r"of builtins\.ValueError, got Stray$"):
        reg.load("stray")
    with pytest.raises(RegistryError, match=r"^part 'gone' \(reg_parts_a:Gone\): module 'reg_parts_a' has no "
                                            r"'Gone'$"):
        reg.load("gone")
    with pytest.raises(RegistryError, match=r"^part 'nomodule' \(reg_parts_nowhere:Good\): module "
                                            r"'reg_parts_nowhere' does not import"):
        reg.load("nomodule")
    with pytest.raises(RegistryError, match=r"^unknown part 'os'; known: gone, good, nomodule, stray$"):
        reg.load("os")  # a name that is not an entry is never imported
    assert reg.get("os") is None
    with pytest.raises(RegistryError, match=r"part 'x': target 'os; rm' is not 'module' or 'module:attr'"):
        Registry("part", {"x": "os; rm"})
    with pytest.raises(RegistryError, match=r"part 'x': the relative target '.a:B' needs the registry's package"):
        Registry("part", {"x": ".a:B"})


def test_a_check_files_what_it_returns_and_its_refusal_names_the_entry(plugin_dir: Path) -> None:
    def games_of(obj: Any, name: str) -> tuple[Any, ...]:
        if name != "a":
            raise ValueError(f"only 'a' may be filed, not {name!r}")
        return tuple(obj.GAMES)

    reg: Registry[tuple[Any, ...]] = Registry("family", {"a": "reg_parts_a", "b": "reg_parts_a"}, check=games_of)
    assert reg.load("a") == (1, 2)
    with pytest.raises(RegistryError, match=r"^family 'b' \(reg_parts_a\): only 'a' may be filed, not 'b'$"):
        reg.load("b")


def test_the_game_families_are_entries_of_the_registry() -> None:
    from econarena import games

    assert games._modules.builtin() == games.FAMILY_NAMES
    assert [f.__name__ for f in games.FAMILIES] == [f"econarena.games.{f}" for f in games.FAMILY_NAMES]


def test_every_importer_loads_checked_and_has_its_hook() -> None:
    from econarena.cli.reports import _AFTER_IMPORT
    from econarena.importers.registry import IMPORTERS, Importer

    assert IMPORTERS.builtin()[:3] == ("gamabench", "negotiationarena", "glee") == _AFTER_IMPORT.builtin()[:3]
    assert set(_AFTER_IMPORT.builtin()) <= set(IMPORTERS.builtin())  # a hook without its importer is a typo
    for name, module in IMPORTERS.items():
        assert isinstance(module, Importer) and name == module.NAME
    assert all(callable(hook) for hook in _AFTER_IMPORT.values())


def test_an_importer_whose_name_differs_is_refused(plugin_dir: Path) -> None:
    from econarena.importers import registry

    write_module(plugin_dir, "reg_parts_importer", """
        NAME = "other"
        DESCRIPTION = "a source"
        ITEMS = "files"
        OPTIONS = ()

        def import_dir(src, out, **options):
            raise AssertionError("not called")
        """)
    reg = Registry("importer", {"mine": "reg_parts_importer"}, kind=registry.Importer, check=registry._named)
    with pytest.raises(RegistryError, match=r"^importer 'mine' \(reg_parts_importer\): NAME = 'other', expected "
                                            r"'mine' \(the name it is filed under\)$"):
        reg.load("mine")


def test_every_report_section_loads_in_report_order() -> None:
    from econarena.analysis import report

    names = [name for name, _ in report._sections()]
    assert names[:5] == ["econarena", "gamabench", "negotiationarena", "glee", "steering"]  # a new one follows
    assert names[0] == report.REST
    for name, module in report._sections():
        assert isinstance(module, report.ReportSection) and name == module.FAMILY
        assert name == report.REST or callable(module.section)
