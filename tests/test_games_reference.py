"""The games reference is readable in the repository: docs/reference/games.md is generated and checked in."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))


def test_the_checked_in_games_reference_is_current() -> None:
    from econarena_docs import games_page

    page = (ROOT / "docs" / "reference" / "games.md").read_text(encoding="utf-8")
    assert page == games_page(), "docs/reference/games.md is stale: run python docs/_ext/econarena_docs.py"
    assert "| `prisoners_dilemma` |" in page and "| `matching_pennies` |" in page
