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
