"""The layout is the architecture: the command line loads only the command it runs, ``python -m econarena``
works, and ARCHITECTURE.md's tree names every module of the package (and nothing that is not there)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def loaded_by(argv: list[str]) -> list[str]:
    """The package's modules a fresh interpreter has imported once ``econarena ARGV`` has parsed."""
    script = ("import json, sys\nfrom econarena.cli import main\ntry:\n    main(json.loads(sys.argv[1]))\n"
              "except SystemExit:\n    pass\n"
              "print(json.dumps(sorted(m for m in sys.modules if m.startswith('econarena'))), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(argv)], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(proc.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_and_version_import_no_command_module(argv: list[str]) -> None:
    assert loaded_by(argv) == ["econarena", "econarena.cli"]


def test_a_command_imports_its_group_only() -> None:
    mods = set(loaded_by(["report", "--help"]))
    assert "econarena.cli.reports" in mods
    assert not mods & {"econarena.cli.experiments", "econarena.cli.bench"}, sorted(mods)
    mods = set(loaded_by(["leaderboard", "--help"]))
    assert "econarena.cli.bench" in mods and not mods & {"econarena.cli.experiments", "econarena.cli.reports"}


def help_lines(parser: argparse.ArgumentParser) -> dict[str, str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {c.dest: str(c.help) for c in sub._choices_actions}


def test_the_face_says_what_each_group_says() -> None:
    """The help line of each command in the face's table is the one its group registers, in the same order."""
    from econarena.cli import COMMANDS, build_parser

    full = help_lines(build_parser())
    assert list(full) == list(COMMANDS)
    assert full == {name: line for name, (_, line) in COMMANDS.items()}
    assert help_lines(build_parser(["--help"])) == full  # the stubs list the same commands and lines


def test_the_named_command_gets_its_arguments() -> None:
    from econarena.cli import build_parser
    from econarena.cli.bench import cmd_leaderboard
    from econarena.cli.reports import cmd_report

    args = build_parser(["report", "runs/x"]).parse_args(["report", "runs/x", "--trust", "mine"])
    assert args.func is cmd_report and args.run_dirs == ["runs/x"] and args.trust == ["mine"]
    args = build_parser(["leaderboard", "d"]).parse_args(["leaderboard", "d", "--tier", "quick"])
    assert args.func is cmd_leaderboard and args.tier == "quick"


@pytest.mark.parametrize("module", ["econarena", "econarena.cli"])
def test_python_m_runs_the_command_line(module: str) -> None:
    from econarena import __version__

    proc = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"econarena {__version__}"


def tree_entries() -> list[tuple[int, list[str]]]:
    """ARCHITECTURE.md's tree as (indent, the names an entry line gives): an entry line starts with names
    (``x.py`` or ``folder/``) separated by one space; a line that starts otherwise continues a description."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("## The tree", 1)[1].split("```", 2)[1]
    out = []
    for line in block.splitlines():
        stripped = line.lstrip(" ")
        head = re.split(r" {2,}", stripped, maxsplit=1)[0]
        words = head.split(" ")
        if stripped and all(re.fullmatch(r"[\w.]+\.py|\w+/", w) for w in words):
            out.append((len(line) - len(stripped), words))
    return out


def named_in_tree() -> tuple[set[Path], set[Path]]:
    """(the files the tree names, the folders it names with no entry under them: each stands for all it holds)."""
    files: set[Path] = set()
    whole: set[Path] = set()
    stack: list[tuple[int, Path]] = []  # (indent, folder) of the open folders
    entries = tree_entries()
    for i, (indent, words) in enumerate(entries):
        while stack and stack[-1][0] >= indent:
            stack.pop()
        assert indent == (stack[-1][0] + 2 if stack else 0), f"ARCHITECTURE.md: {words} indented {indent}"
        base = stack[-1][1] if stack else Path()
        children = i + 1 < len(entries) and entries[i + 1][0] > indent
        for w in words:
            if w.endswith("/"):
                folder = base / w.rstrip("/")
                if children and w == words[-1]:
                    stack.append((indent, folder))
                else:
                    whole.add(folder)
            else:
                files.add(base / w)
    return files, whole


def package_modules() -> set[Path]:
    """Every module installed with the package: the root's and those of every folder setup.cfg lists."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    folders = [Path(*name.split(".")[1:]) for name in cfg["options"]["packages"].split()]
    return {p.relative_to(REPO) for f in folders for p in (REPO / f).glob("*.py")}


def test_every_module_is_in_the_architecture_tree() -> None:
    files, whole = named_in_tree()
    missing = sorted(str(m) for m in package_modules()
                     if m not in files and not any(w in m.parents for w in whole)
                     and not (m.name == "__init__.py" and m.parent != Path()))  # a folder's entry is its card
    assert not missing, f"ARCHITECTURE.md's tree does not name: {', '.join(missing)}"


def test_the_architecture_tree_names_nothing_missing() -> None:
    files, whole = named_in_tree()
    gone = sorted(str(p) for p in files if not (REPO / p).is_file())
    gone += sorted(f"{p}/" for p in whole if not (REPO / p).is_dir())
    assert not gone, f"ARCHITECTURE.md's tree names what is not there: {', '.join(gone)}"
    assert Path("cli/experiments.py") in files and Path("formats/rundir.py") in files  # the parse saw the tree


def test_the_tree_check_sees_a_missing_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: a module left out of the tree, or a name in it with no file, is found."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "  benchcheck.py   " in text
    (tmp_path / "ARCHITECTURE.md").write_text(text.replace("  benchcheck.py   ", "  benchchecks.py  "),
                                              encoding="utf-8")
    (tmp_path / "setup.cfg").write_text((REPO / "setup.cfg").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    files, _ = named_in_tree()
    assert Path("analysis/benchchecks.py") in files and Path("analysis/benchcheck.py") not in files
