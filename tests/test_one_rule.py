"""Rules the package once wrote twice or more, kept to one helper each: a second copy fails here, naming
where it is (the helper says why the rule is what it is)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("agents", "analysis", "formats", "games", "hosts", "importers")


def package_files() -> list[Path]:
    return sorted([*REPO.glob("*.py"), *(p for f in FOLDERS for p in (REPO / f).rglob("*.py"))])


def calls_of(name: str) -> list[str]:
    """``file:line`` of every call to an attribute or function called ``name`` in the package."""
    out = []
    for path in package_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if called == name:
                    out.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return out


def test_one_lock() -> None:
    """A folder's lock is taken in formats/locks.py only (its holder line, its release on death)."""
    assert all(c.startswith("formats/locks.py:") for c in calls_of("flock")), calls_of("flock")


def test_one_import_by_path_and_one_error_class() -> None:
    """A game's path and a player's path are imported by one helper (formats/trusted.py), and a refused
    path raises one PluginError, whichever layer asked."""
    from econarena.agents import plugins as agent_plugins
    from econarena.formats import trusted
    from econarena.games import plugins

    assert all(c.startswith("formats/trusted.py:") for c in calls_of("import_module")), calls_of("import_module")
    assert plugins.PluginError is agent_plugins.PluginError is trusted.PluginError
    classes = [f"{p.relative_to(REPO)}" for p in package_files()
               for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef) and node.name == "PluginError"]
    assert classes == ["formats/trusted.py"], classes


def test_one_finite_number() -> None:
    """What counts as a number read from JSON, by hand; an int too large for a float is none (it stopped
    the bench result's check with an OverflowError), and the callers use the one helper."""
    from econarena.analysis import benchmark as B
    from econarena.formats.numbers import finite

    assert [finite(x) for x in (3, 2.5, -0.0, True, "4", None, float("nan"), float("inf"), 10**400)] == \
        [3.0, 2.5, -0.0, None, None, None, None, None, None]
    data = {"suite": {"version": "v", "sha256": "s"}, "tier": "quick", "model": {"label": "m"},
            "overall": {"score": 10**400, "low": None, "high": None}, "subscores": {}, "games": [],
            "complete": True}
    assert B._shape_problem(data) == f"overall.score: {10**400!r} is not a score from 0 to 100 (or null)"
