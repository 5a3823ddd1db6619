"""The game registry imports a family only when one of its games is played or named: the static list of
each family's games must match the families, and a one-game experiment's commands import one family."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from econarena import games


def test_the_static_list_is_each_familys_games_in_order() -> None:
    for family in games.FAMILY_NAMES:
        module = importlib.import_module(f"econarena.games.{family}")
        assert games.FAMILY_GAMES[family] == tuple(g.name for g in module.GAMES), family
    assert set(games.FAMILY_GAMES) == set(games.FAMILY_NAMES)
    # listing the registry gives every built-in game, families in order, as before it was lazy
    assert list(games.GAMES)[:len(games._BUILTIN)] == [n for f in games.FAMILY_NAMES for n in games.FAMILY_GAMES[f]]
    assert [f.__name__ for f in games.FAMILIES] == [f"econarena.games.{f}" for f in games.FAMILY_NAMES]


FAMILY_OF = """import sys
from econarena.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # --help
    code = exc.code
print(sorted(f for f in {FAMILIES} if "econarena.games." + f in sys.modules))
sys.exit(code)
"""


def test_a_one_game_experiment_imports_one_family(tmp_path: Path) -> None:
    (tmp_path / "bc.toml").write_text("""[experiment]
name = "bc"
game = "beauty_contest"
sessions = 2
seed = 1

[[players]]
agent = "rational"

[[players]]
agent = "random"
""", encoding="utf-8")
    script = FAMILY_OF.replace("{FAMILIES}", repr(games.FAMILY_NAMES))
    for argv in (["validate", "bc.toml"], ["run", "bc.toml", "--out", "runs/bc", "--quiet"], ["summary", "runs/bc"]):
        proc = subprocess.run([sys.executable, "-c", script, *argv], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)  # PYTHONPATH is passed through: the tree under test is imported
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip().splitlines()[-1] == "['econarena']", (argv, proc.stdout)
    proc = subprocess.run([sys.executable, "-c", script, "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]"
