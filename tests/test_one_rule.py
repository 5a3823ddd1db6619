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

    # formats/registry.py imports too, but only the lazy entries the package lists in its own code: no name a
    # user or a file gives
    calls = [c for c in calls_of("import_module") if not c.startswith("formats/registry.py:")]
    assert all(c.startswith("formats/trusted.py:") for c in calls), calls
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


def test_one_control_character_rule() -> None:
    """What counts as a control character in one-line text, by hand (Unicode's Cc, Zl and Zp); the names'
    check, a steering label and a base_url read it from games/text.py."""
    import unicodedata

    from econarena.games.steering.cfr import SpaceError, action_space
    from econarena.games.text import is_control, name_problem
    from econarena.hosts.config import _url_problem

    controls = ["\x00", "\t", "\n", "\x1b", "\x7f", "\x85", "\x9b", "\u2028", "\u2029"]
    texts = ["a", " ", "\u00a0", "\u200b", "\ufeff", "é", "\u0378"]
    assert [is_control(c) for c in controls] == [True] * 9
    assert [is_control(c) for c in texts] == [False] * 7
    every = [chr(i) for i in range(0x3000) if not 0xD800 <= i <= 0xDFFF]
    assert [c for c in every if is_control(c)] == [c for c in every if unicodedata.category(c) in ("Cc", "Zl",
                                                                                                      "Zp")]
    assert all(name_problem(f"x{c}") is not None for c in controls)
    assert "U+009B" in str(_url_problem("http://127.0.0.1:8000/v1\x9b"))
    from econarena.games import GAMES

    game = GAMES["ultimatum"]
    try:
        action_space(game, [{"label": "a\u2028b", "instruction": "say yes"}, "c"], game.Params())
    except SpaceError:
        pass
    else:
        raise AssertionError("a steering label with a line separator was taken")
    # the rule stated once: no other module spells the control characters out (their code points, or "Cc")
    spelled = [str(p.relative_to(REPO)) for p in package_files() if p.name != "text.py" and any(
        x in p.read_text(encoding="utf-8") for x in ('"Cc"', "\\x7f-\\x9f", "127 <= ord(c) <= 159"))]
    assert not spelled, spelled


def test_one_mapping_of_read_errors(tmp_path: Path) -> None:
    """A file nested past Python's stack is a read error like any other: the ratings' config reader and the
    published tables' reader said RecursionError with a traceback; now their own error names the file."""
    import pytest

    from econarena.analysis import ratings
    from econarena.analysis.published import PublishedError
    from econarena.analysis.published import read as read_published

    deep = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"
    (tmp_path / "config.toml").write_text(deep, encoding="utf-8")
    with pytest.raises(ratings.RatingsError, match="config.toml: unreadable"):
        ratings._config(tmp_path)
    with pytest.raises(PublishedError, match="config.toml: cannot read"):
        read_published(tmp_path / "config.toml")
    from econarena.formats.reading import READ_ERRORS, read_errors_as

    gone = pytest.raises(RuntimeError, match=r"^f.json: gone \(\[Errno 2\] No such file")
    with gone, read_errors_as(RuntimeError, "f.json: gone"):
        (tmp_path / "nowhere").read_text()
    assert set(READ_ERRORS) == {OSError, UnicodeDecodeError, ValueError, RecursionError}
