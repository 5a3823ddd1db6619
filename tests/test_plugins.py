"""Games of one's own, without forking: the documented duopoly (docs/own-games.md) installed from a
temporary package (pip into a target folder, with its entry point) or found by a module:Class path in a
folder named with --trust DIR, then run through `check`, `run`, `summary` and `report` with no file of the
project edited.

Every CLI call runs in a child process, so no test here files a user's game into this process's GAMES.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from timing import budget

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
EXE = str(Path(sys.executable).with_name("econarena"))

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "my-games"
version = "0.1"

[project.entry-points."econarena.games"]
duopoly = "my_games.duopoly:Duopoly"

[tool.setuptools]
packages = ["my_games"]

[tool.setuptools.package-data]
my_games = ["*.toml"]
"""

EXPERIMENT = """[experiment]
name = "duopoly"
game = "{game}"
sessions = 3
runs = 2
seed = 1

[[players]]
agent = "rational"

[[players]]
agent = "random"
"""


def documented_files() -> dict[str, str]:
    """The game module and its template exactly as docs/own-games.md shows them (``save`` blocks)."""
    from test_docs import blocks

    saved = {b.says["save"]: b.text + "\n" for b in blocks(ROOT / "docs" / "own-games.md")
             if b.says.get("save", "").startswith("my_games/")}
    assert set(saved) == {"my_games/duopoly.py", "my_games/duopoly.toml"}
    return saved


def write_game(folder: Path, files: dict[str, str] | None = None) -> None:
    for name, text in (files or documented_files()).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def cli(*args: str, cwd: Path, site: Path | None = None, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)  # the PYTHONPATH this suite runs with picks the tree under test; site joins it
    env["PYTHONPATH"] = os.pathsep.join([str(site)] * (site is not None) + [p for p in env.get("PYTHONPATH", "")
                                                                             .split(os.pathsep) if p])
    proc = subprocess.run([EXE, *args], cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=budget(300))
    assert proc.returncode == code, f"econarena {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_the_documented_game_is_under_100_lines() -> None:
    assert len(documented_files()["my_games/duopoly.py"].splitlines()) < 100


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The duopoly as a package of its own, installed by pip into a target folder (not the project's venv)."""
    src, site = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("site")
    write_game(src)
    (src / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "--target", str(site), str(src)], capture_output=True, text=True, timeout=budget(300))
    assert proc.returncode == 0, proc.stderr
    assert (site / "my_games" / "duopoly.toml").is_file()
    assert list(site.glob("my_games-0.1.dist-info/entry_points.txt"))
    return site


def test_an_installed_package_game_runs_checks_and_reports_by_its_name(site: Path, tmp_path: Path) -> None:
    assert "duopoly" in cli("list", cwd=tmp_path, site=site).stdout
    check = cli("check", "duopoly", cwd=tmp_path, site=site).stdout
    assert "duopoly: 8 of 8 contract checks pass" in check
    assert "ok   equilibrium: declared in 20 of 20 draws" in check

    (tmp_path / "duopoly.toml").write_text(EXPERIMENT.format(game="duopoly"), encoding="utf-8")
    cli("run", "duopoly.toml", "--out", "runs/duopoly", "--quiet", cwd=tmp_path, site=site)
    runs = [json.loads(line) for line in (tmp_path / "runs/duopoly/runs.jsonl").read_text().splitlines()]
    assert len(runs) == 6
    # defaults a = 100, c = 10: q* = 30 each, price 40, each firm earns 30 x 30 = 900
    assert all(r["ne_payoffs"] == [900.0, 900.0] for r in runs)
    rational = [r for r in runs if r["labels"][0] == "rational"]
    assert rational and all(r["actions"][0] == 30.0 for r in rational)
    for r in runs:  # the payoffs follow the documented rules: q_i x (max(0, 100 - q1 - q2) - 10)
        q = r["actions"]
        price = max(0.0, 100 - q[0] - q[1])
        assert r["payoffs"] == pytest.approx([q[0] * (price - 10), q[1] * (price - 10)])
    summary = cli("summary", "runs/duopoly", cwd=tmp_path, site=site).stdout
    assert "rational" in summary and "900.00" in summary

    cli("report", "runs/duopoly", "--out", "report", cwd=tmp_path, site=site)
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "Cournot duopoly" in page  # the game's own title: the report read its declaration


def test_a_module_path_beside_the_experiment_is_found(tmp_path: Path) -> None:
    study, elsewhere = tmp_path / "study", tmp_path / "elsewhere"
    study.mkdir()
    elsewhere.mkdir()
    write_game(study)
    (study / "duopoly.toml").write_text(EXPERIMENT.format(game="my_games.duopoly:Duopoly"), encoding="utf-8")
    err = cli("validate", str(study / "duopoly.toml"), cwd=study, code=2).stderr  # no folder is trusted on its own
    assert "'my_games.duopoly' is not imported" in err and "--trust DIR" in err
    cli("validate", str(study / "duopoly.toml"), "--trust", str(study), cwd=elsewhere)  # the folder named
    cli("run", str(study / "duopoly.toml"), "--out", str(study / "runs/duopoly"), "--quiet", "--trust", str(study),
        cwd=elsewhere)
    decisions = [json.loads(x) for x in (study / "runs/duopoly/decisions.jsonl").read_text().splitlines()]
    assert len(decisions) == 12 and all(d["valid"] for d in decisions)
    out = cli("check", "my_games.duopoly:Duopoly", "--trust", ".", cwd=study).stdout  # from its own folder
    assert "8 of 8 contract checks pass" in out
    out = cli("check", "my_games/duopoly.py:Duopoly", "--seeds", "3", cwd=study).stdout  # the file's path
    assert "duopoly: 8 of 8 contract checks pass" in out
    for named in (study / "my_games" / "duopoly.py", Path("..") / "study" / "my_games" / "duopoly.py"):
        out = cli("check", f"{named}:Duopoly", "--seeds", "3", cwd=elsewhere).stdout  # an absolute path, or ../
        assert "duopoly: 8 of 8 contract checks pass" in out
    err = cli("check", f"{study / 'nope.py'}:Duopoly", cwd=elsewhere, code=2).stderr
    assert f"{study / 'nope.py'}: no such file" in err
    cli("report", "runs/duopoly", "--out", "report", "--trust", ".", cwd=study)
    assert "Cournot duopoly" in (study / "report" / "report.html").read_text(encoding="utf-8")
    cli("report", "runs/duopoly", "--out", "plain", cwd=study)  # untrusted: read from the records alone
    assert "Cournot duopoly" not in (study / "plain" / "report.html").read_text(encoding="utf-8")
    assert "my_games.duopoly:Duopoly" in (study / "plain" / "report.html").read_text(encoding="utf-8")


def test_a_bad_path_is_a_clear_error(tmp_path: Path) -> None:
    files = documented_files()
    write_game(tmp_path, files)
    cases = {
        "no_such.module:Game": "'no_such.module' is not imported: a game module is imported only from a folder",
        "my_games.duopoly:Nope": "module 'my_games.duopoly' has no 'Nope'",
        "my_games.duopoly:DuopolyParams": "expected a subclass of econarena.games.base.Game",
    }
    for spec, says in cases.items():
        (tmp_path / "x.toml").write_text(EXPERIMENT.format(game=spec), encoding="utf-8")
        err = cli("validate", "x.toml", "--trust", ".", cwd=tmp_path, code=2).stderr
        assert "x.toml: experiment.game:" in err and says in err, err
        assert "Traceback" not in err
    # a game without its template file beside it: the expected path is named, before anything runs
    (tmp_path / "my_games" / "duopoly.toml").unlink()
    (tmp_path / "x.toml").write_text(EXPERIMENT.format(game="my_games.duopoly:Duopoly"), encoding="utf-8")
    err = cli("validate", "x.toml", "--trust", ".", cwd=tmp_path, code=2).stderr
    assert "has no prompt template: expected " + str(tmp_path / "my_games" / "duopoly.toml") in err
    # a game that takes a built-in game's name is refused (its template and tables would be mixed up)
    write_game(tmp_path, {"my_games/clash.py": files["my_games/duopoly.py"].replace(
        'name: ClassVar[str] = "duopoly"', 'name: ClassVar[str] = "prisoners_dilemma"')})
    err = cli("check", "my_games.clash:Duopoly", "--trust", ".", cwd=tmp_path, code=2).stderr
    assert "the game's name 'prisoners_dilemma' is taken" in err
    cli("check", "chess", cwd=tmp_path, code=2)


def test_check_fails_a_game_that_breaks_the_contract(tmp_path: Path) -> None:
    """The checks can fail: a duopoly whose rational baseline misses its declared equilibrium, and whose
    payoffs leave its declared bounds, is caught by name with the seed that found it."""
    files = documented_files()
    game = files["my_games/duopoly.py"]
    off = game.replace('return {"quantity": (state.setup["demand"] - state.setup["cost"]) / 3}',
                       'return {"quantity": 10}')
    assert off != game
    write_game(tmp_path, {"my_games/duopoly.py": off, "my_games/duopoly.toml": files["my_games/duopoly.toml"]})
    out = cli("check", "my_games.duopoly:Duopoly", "--seeds", "5", "--trust", ".", cwd=tmp_path, code=1).stdout
    # 10 each: price 100 - 20 = 80, profit 10 x (80 - 10) = 700, not the equilibrium's 900
    assert "FAIL equilibrium: seed 0, 2 seats: the rational baseline earns (700.0, 700.0), the declared " \
           "equilibrium (900.0, 900.0)" in out
    # and 10 is no equilibrium: against 10, producing 40 sells at 100 - 50 = 50 for 40 x (50 - 10) = 1600
    assert "FAIL equilibrium survives unilateral deviations: seed 0, 2 seats: seat 0 gains 700 by playing " \
           "quantity=40.0 at its decision 1 instead of 10 (earning 1600, the equilibrium 900)" in out
    assert "6 of 8 contract checks pass; failing: equilibrium, equilibrium survives unilateral deviations" in out

    narrow = game.replace("return -float(a * c), float((a - c) ** 2) / 4", "return 0.0, 1000.0")
    assert narrow != game
    write_game(tmp_path, {"my_games/narrow.py": narrow.replace('"duopoly"', '"narrow"'),
                          "my_games/narrow.toml": files["my_games/duopoly.toml"]})
    out = cli("check", "my_games.narrow:Duopoly", "--seeds", "5", "--trust", ".", cwd=tmp_path, code=1).stdout
    assert "FAIL random play within bounds: seed " in out and "outside the declared bounds [0.0, 1000.0]" in out
    assert "ok   equilibrium" in out  # 900 lies within [0, 1000]: only what is broken fails


# ---- a player of one's own (agents/plugins.py) ----

NOISY = '''import random

from econarena.agents.plugins import CustomAgent


class Noisy(CustomAgent):
    def act(self, request):
        return {"bid": random.random()}  # the global generator: not reproducible
'''

BABBLE = '''from econarena.agents.plugins import CustomAgent


class Babble(CustomAgent):
    def act(self, request):
        return "I would rather not say"
'''


def documented_agent() -> str:
    from test_docs import blocks

    [text] = [b.text + "\n" for b in blocks(ROOT / "docs" / "own-games.md")
              if b.says.get("save") == "my_agents/shade.py"]
    return text


def test_a_documented_agent_plays_by_its_path_and_its_moves_follow_its_code(tmp_path: Path) -> None:
    (tmp_path / "my_agents").mkdir()
    (tmp_path / "my_agents" / "shade.py").write_text(documented_agent(), encoding="utf-8")
    (tmp_path / "shade.toml").write_text("""[experiment]
name = "shade"
game = "second_price_auction"
sessions = 4
runs = 1
seed = 2

[[players]]
agent = "my_agents.shade:Shade"

[[players]]
agent = "rational"
""", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    err = cli("run", str(tmp_path / "shade.toml"), "--out", str(tmp_path / "runs"), "--quiet", cwd=tmp_path,
              code=2).stderr  # neither the experiment's folder nor the current one is trusted on its own
    assert "players[0].agent: 'my_agents.shade' is not imported: a player module" in err
    cli("run", str(tmp_path / "shade.toml"), "--out", str(tmp_path / "runs"), "--quiet", "--trust", str(tmp_path),
        cwd=elsewhere)
    runs = [json.loads(x) for x in (tmp_path / "runs" / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 4
    for r in runs:  # the rational bidder bids its value (second price); Shade bids half of its own value
        shade = r["labels"].index("Shade")
        rational = 1 - shade
        assert r["actions"][shade] == pytest.approx(0.5 * r["private_values"][shade])
        assert r["actions"][rational] == pytest.approx(r["private_values"][rational])
    decisions = [json.loads(x) for x in (tmp_path / "runs" / "decisions.jsonl").read_text().splitlines()]
    assert {d["agent"] for d in decisions} == {"custom", "rational"}  # the kind; config.toml keeps the path
    assert all(d["valid"] for d in decisions)
    out = cli("check", "--agent", "my_agents.shade:Shade", "second_price_auction", "--seeds", "5", "--trust", ".",
              cwd=tmp_path).stdout
    assert "my_agents.shade:Shade in second_price_auction: 3 of 3 checks pass" in out


def test_check_fails_an_agent_that_is_not_reproducible_or_never_valid(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "noisy.py").write_text(NOISY, encoding="utf-8")
    (tmp_path / "bad" / "babble.py").write_text(BABBLE, encoding="utf-8")
    out = cli("check", "--agent", "bad.noisy:Noisy", "second_price_auction", "--seeds", "3", "--trust", ".",
              cwd=tmp_path, code=1).stdout
    assert "FAIL determinism: the same seeds gave different replies" in out
    out = cli("check", "--agent", "bad.babble:Babble", "beauty_contest", "--seeds", "3", "--trust", ".", cwd=tmp_path,
              code=1).stdout
    assert "FAIL replies the game accepts: 0 of 3 valid" in out
    (tmp_path / "x.toml").write_text(EXPERIMENT.format(game="beauty_contest").replace(
        'agent = "random"', 'agent = "bad.noisy:random"'), encoding="utf-8")
    err = cli("validate", "x.toml", "--trust", ".", cwd=tmp_path, code=2).stderr
    assert "players[1].agent: bad.noisy:random: expected a subclass of econarena.agents.plugins.CustomAgent" in err


def test_a_scorer_of_ones_own_subclasses_a_built_in_game_and_scores_by_hand(tmp_path: Path) -> None:
    from test_docs import blocks

    [code] = [b.text + "\n" for b in blocks(ROOT / "docs" / "own-games.md")
              if b.says.get("save") == "my_scores/closeness.py"]
    write_game(tmp_path, {"my_scores/closeness.py": code})  # no template file: the parent's is used
    (tmp_path / "c.toml").write_text(EXPERIMENT.format(game="my_scores.closeness:Closeness")
                                     .replace('agent = "rational"', 'agent = "level_k"'), encoding="utf-8")
    out = cli("check", "my_scores.closeness:Closeness", "--seeds", "5", "--trust", ".", cwd=tmp_path).stdout
    assert "closeness: 8 of 8 contract checks pass" in out and "prompt template: beauty_contest/v1" in out
    cli("run", "c.toml", "--out", "runs/c", "--quiet", "--trust", ".", cwd=tmp_path)
    runs = [json.loads(x) for x in (tmp_path / "runs/c/runs.jsonl").read_text().splitlines()]
    assert len(runs) == 6
    for r in runs:  # 100 - 100 x |closest answer - 2/3 x mean| / upper bound, from the logged answers
        answers = [a for a, ok in zip(r["actions"], r["valid"]) if ok]
        target = 2 / 3 * sum(answers) / len(answers)
        assert r["score"] == pytest.approx(100 * (1 - min(abs(a - target) for a in answers) / 100))
    assert "score (std)" in cli("summary", "runs/c", "--trust", ".", cwd=tmp_path).stdout


def test_reading_a_run_directory_never_imports_an_installed_module_it_names(tmp_path: Path) -> None:
    """A run directory may come from someone else: `report` and `summary` import a game path only from a
    folder named with --trust, never a module found on sys.path by the name it holds."""
    site, study = tmp_path / "site", tmp_path / "study"
    files = documented_files()
    marker = tmp_path / "imported.txt"
    code = files["my_games/duopoly.py"].replace(
        "from __future__ import annotations\n",
        f"from __future__ import annotations\n\nimport pathlib\n\npathlib.Path({str(marker)!r}).write_text('x')\n", 1)
    write_game(site, {"my_games/duopoly.py": code, "my_games/duopoly.toml": files["my_games/duopoly.toml"]})
    study.mkdir()
    (study / "d.toml").write_text(EXPERIMENT.format(game="my_games.duopoly:Duopoly"), encoding="utf-8")
    err = cli("run", "d.toml", "--out", "runs/d", "--quiet", cwd=study, site=site, code=2).stderr
    assert "'my_games.duopoly' is not imported" in err and not marker.exists()  # sys.path is not trusted
    cli("run", "d.toml", "--out", "runs/d", "--quiet", "--trust", str(site), cwd=study, site=site)  # named: imported
    assert marker.exists()
    marker.unlink()
    cli("summary", "runs/d", cwd=study, site=site)
    cli("report", "runs/d", "--out", "rep", cwd=study, site=site)
    assert not marker.exists()
    assert (study / "rep" / "report.html").is_file()  # the report is built from the records alone
