"""A received run directory never runs code: every command that reads one (summary, report, compare,
analyze, validate of its config.toml, run --resume --dry-run) imports nothing it names. The directory here
names modules that would write a marker file when imported: numpy's f2py command line and unittest's
(installed modules whose package numpy or unittest is loaded already), and an evilgame.py beside it in the
current folder. A game of one's own is imported only from a folder named with --trust DIR.

Every command runs in a child process (nothing is filed into this process's GAMES); each child imports the
tree under test through the PYTHONPATH this suite runs with.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from timing import budget

EXPERIMENT = """[experiment]
name = "bc"
game = "beauty_contest"
sessions = 2
runs = 1
seed = 1

[[players]]
agent = "rational"

[[players]]
agent = "random"
"""

# a module that says it ran: each import appends its name to the marker file
EVIL = """import pathlib
with open({marker!r}, "a", encoding="utf-8") as out:
    out.write(__name__ + "\\n")
from econarena.games.econarena import BeautyContest as X
"""

# sitecustomize runs first in every child: it makes an import of the named installed modules leave the
# marker too (their real code would start f2py's or unittest's command line)
HOOK = """import importlib.abc, sys

class _Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in ("numpy.f2py.__main__", "unittest.__main__"):
            with open({marker!r}, "a", encoding="utf-8") as out:
                out.write(name + "\\n")
        return None

sys.meta_path.insert(0, _Watch())
"""


def cli(*args: str, cwd: Path, hook: Path, code: int | None = 0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(hook), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    # as the console script starts: sys.path[0] is not the current folder (python -c would put it there)
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.path.pop(0); import numpy, unittest; "
                           "from econarena.cli import main; sys.exit(main())", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=budget(120))
    if code is not None:
        assert proc.returncode == code, f"{args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def received(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A run of a built-in game played here, then three copies whose config.toml names a hostile path."""
    root = tmp_path_factory.mktemp("received")
    marker, hook = root / "imported.txt", root / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK.format(marker=str(marker)), encoding="utf-8")
    (root / "bc.toml").write_text(EXPERIMENT, encoding="utf-8")
    cli("run", "bc.toml", "--out", "runs/bc", "--quiet", cwd=root, hook=hook)
    (root / "evilgame.py").write_text(EVIL.format(marker=str(marker)), encoding="utf-8")
    dirs = {}
    for name, path in {"f2py": "numpy.f2py.__main__:X", "unittest": "unittest.__main__:X",
                       "evil": "evilgame:X"}.items():
        d = root / "runs" / name
        d.mkdir()
        for f in (root / "runs" / "bc").iterdir():
            if f.is_file():
                text = f.read_text(encoding="utf-8")
                if f.name == "config.toml":
                    text = text.replace('game = "beauty_contest"', f'game = "{path}"')
                    assert path in text
                d.joinpath(f.name).write_text(text, encoding="utf-8")
        dirs[name] = d
    assert not marker.exists()
    return {"root": root, "marker": marker, "hook": hook, **dirs}


@pytest.mark.parametrize("name", ["f2py", "unittest", "evil"])
def test_reading_a_received_run_directory_imports_nothing_it_names(received: dict[str, Path], name: str) -> None:
    root, hook, marker, d = received["root"], received["hook"], received["marker"], received[name]
    out = cli("summary", str(d), cwd=root, hook=hook).stdout
    assert "rational" in out  # the numbers come from the records alone
    cli("summary", str(d), "--json", cwd=root, hook=hook)
    cli("report", str(d), "--out", str(root / f"rep-{name}"), cwd=root, hook=hook)
    page = (root / f"rep-{name}" / "report.html").read_text(encoding="utf-8")
    assert "rational" in page
    cli("compare", str(d), str(root / "runs" / "bc"), cwd=root, hook=hook)
    cli("analyze", "glee", str(d), "--out", str(root / f"an-{name}"), cwd=root, hook=hook, code=None)
    err = cli("validate", str(d / "config.toml"), cwd=root, hook=hook, code=2).stderr
    assert "experiment.game" in err and "is not imported" in err and "--trust DIR" in err
    err = cli("run", str(d / "config.toml"), "--out", str(d), "--resume", "--dry-run", cwd=root, hook=hook,
              code=2).stderr
    assert "is not imported" in err
    assert not marker.exists(), marker.read_text(encoding="utf-8")


def test_an_unknown_path_is_shown_by_its_name_with_its_tables(received: dict[str, Path]) -> None:
    root, hook, marker = received["root"], received["hook"], received["marker"]
    evil, plain = received["evil"], root / "runs" / "bc"
    summary = cli("summary", str(evil), "--json", cwd=root, hook=hook).stdout
    # the same records, the same numbers: the summary never needed the game's code
    assert summary.replace(str(evil), str(plain)) == cli("summary", str(plain), "--json", cwd=root, hook=hook).stdout
    cli("report", str(evil), "--out", str(root / "rep-named"), cwd=root, hook=hook)
    with open(root / "rep-named" / "metrics.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["game"] for r in rows} == {"evilgame:X"}  # its table rows, by its name
    payoff = {r["label"]: float(r["value"]) for r in rows if r["metric"] == "mean_payoff"}
    runs = [json.loads(x) for x in (evil / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    for seat, label in enumerate(["rational", "random"]):  # each label's mean of its logged payoffs
        assert payoff[label] == pytest.approx(sum(r["payoffs"][seat] for r in runs) / len(runs))
    assert not marker.exists()


def test_a_trusted_folder_is_the_one_way_in(received: dict[str, Path], tmp_path: Path) -> None:
    """--trust DIR imports the module from DIR, and from nowhere else: not a same-named module elsewhere."""
    root, hook, marker = received["root"], received["hook"], received["marker"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "evilgame.py").write_text(EVIL.format(marker=str(tmp_path / "mine.txt")), encoding="utf-8")
    cli("summary", str(received["evil"]), "--trust", str(mine), cwd=root, hook=hook)
    assert (tmp_path / "mine.txt").read_text(encoding="utf-8") == "evilgame\n"  # the trusted copy, once
    assert not marker.exists()  # the current folder's evilgame.py never ran
    # a trusted folder does not open the installed modules a directory names
    cli("summary", str(received["f2py"]), "--trust", str(mine), cwd=root, hook=hook)
    assert not marker.exists()
    # a trusted folder's module that an imported or installed one of its name would stand in for: refused
    (mine / "json.py").write_text(EVIL.format(marker=str(marker)), encoding="utf-8")
    d = received["evil"]
    (d / "config.toml").write_text((d / "config.toml").read_text(encoding="utf-8").replace("evilgame:X", "json:X"),
                                   encoding="utf-8")
    err = cli("validate", str(d / "config.toml"), "--trust", str(mine), cwd=root, hook=hook, code=2).stderr
    assert "'json': a module 'json' is imported already from elsewhere, not from the trusted folder" in err
    (d / "config.toml").write_text((d / "config.toml").read_text(encoding="utf-8").replace("json:X", "evilgame:X"),
                                   encoding="utf-8")
    assert not marker.exists()
    err = cli("summary", str(received["evil"]), "--trust", str(tmp_path / "none"), cwd=root, hook=hook,
              code=2).stderr
    assert "--trust" in err and "expected a folder" in err
