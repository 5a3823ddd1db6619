"""The one-way imports of ARCHITECTURE.md, the purity of game code, and no module naming a game.

Layers (folders of the package, plus the root modules):
  cli, cli_reports (top) -> hosts, analysis; hosts -> games, agents, rundir; analysis -> games, rundir;
  agents -> (nothing of ours but agents); games -> (nothing but games); rundir -> (the package root only);
  the package root (``__init__``: version numbers) may be read by every layer but games.
Imports inside the package are relative; they are resolved here so the rules read the same either way.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SDKS = ("openai", "anthropic", "google", "zai", "zhipuai", "torch", "transformers", "aiohttp", "httpx")
LAYERS = ("games", "agents", "hosts", "analysis")
GAME_FILES = sorted((REPO / "games").glob("*.py"))
ALLOWED = {
    "games": {"games"},
    "agents": {"agents", "root"},
    "hosts": {"hosts", "games", "agents", "rundir", "root"},
    "analysis": {"analysis", "games", "rundir", "root"},
    "rundir": {"root"},
    "cli": {"root", "cli", "cli_reports", "hosts", "analysis", "agents", "games", "rundir"},
    "cli_reports": {"root", "cli", "cli_reports", "hosts", "analysis", "agents", "games", "rundir"},
    "root": set(),
}


def package_modules() -> list[Path]:
    out = [p for p in REPO.glob("*.py")]
    for layer in LAYERS:
        out += sorted((REPO / layer).rglob("*.py"))
    return out


def module_name(path: Path) -> list[str]:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def layer_of(parts: list[str]) -> str:
    if not parts:
        return "root"
    return parts[0] if parts[0] in LAYERS or parts[0] in ("rundir", "cli", "cli_reports") else "root"


def imports_of(path: Path, *, top_level_only: bool = False) -> list[tuple[list[str] | None, str, int]]:
    """(our module as parts, or None for an outside module, its dotted name, line) for every import."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path)[:-1]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    if top_level_only:  # also imports under `if TYPE_CHECKING:` / version checks at module level
        nodes = [n for top in tree.body for n in ast.walk(top)
                 if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    out: list[tuple[list[str] | None, str, int]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                ours = parts[1:] if parts[0] == "econarena" else None
                out.append((ours, a.name, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                target = base + (node.module.split(".") if node.module else [])
                names = [target + [a.name] for a in node.names] if not node.module else [target]
                for t in names:
                    out.append((t, ".".join(["econarena", *t]), node.lineno))
            elif node.module:
                parts = node.module.split(".")
                ours = parts[1:] if parts[0] == "econarena" else None
                out.append((ours, node.module, node.lineno))
    return out


def imported_after(code: str) -> set[str]:
    """Top-level module names imported by running ``code`` in a fresh interpreter."""
    script = f"import sys\nbefore = set(sys.modules)\n{code}\nimport json\n" \
             "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_games_import_no_sdk() -> None:
    loaded = imported_after("import econarena.games")
    assert not loaded & set(SDKS), loaded & set(SDKS)


def test_core_host_and_baselines_import_no_sdk() -> None:
    loaded = imported_after("import econarena.cli, econarena.hosts.host, econarena.agents.registry, "
                            "econarena.analysis.metrics")
    heavy = {"openai", "anthropic", "google", "zai", "zhipuai", "torch", "transformers"}
    assert not loaded & heavy, loaded & heavy


@pytest.mark.parametrize("path", package_modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_imports_follow_the_layers(path: Path) -> None:
    here = layer_of(module_name(path))
    for ours, name, line in imports_of(path):
        if ours is None:
            continue
        there = layer_of(ours)
        assert there in ALLOWED[here] | {here}, f"{path.relative_to(REPO)}:{line}: {here} must not import {name}"


def test_package_imports_are_relative() -> None:
    """ARCHITECTURE.md: siblings are imported relatively, so every tool can follow the layers."""
    for path in package_modules():
        text = path.read_text(encoding="utf-8")
        hits = [i for i, line in enumerate(text.splitlines(), 1) if re.match(r"\s*from econarena[. ]", line)]
        assert not hits, f"{path.relative_to(REPO)}: absolute econarena imports on lines {hits}"


def test_no_import_cycles_between_modules() -> None:
    """Module-level imports form no cycle (lazy imports inside functions are not import-time edges)."""
    graph: dict[str, set[str]] = {}
    names = {".".join(module_name(p)) for p in package_modules()}
    for path in package_modules():
        me = ".".join(module_name(path))
        edges = set()
        for ours, _, _ in imports_of(path, top_level_only=True):
            if ours is None:
                continue
            target = ".".join(ours)
            while target and target not in names:  # `from .x import name` names a module or a member
                target = target.rpartition(".")[0]
            if target != me and target in names:
                edges.add(target)
        graph[me] = edges
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                raise AssertionError("import cycle: " + " -> ".join(c or "econarena" for c in cycle))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


@pytest.mark.parametrize("path", GAME_FILES, ids=lambda p: p.name)
def test_game_code_is_pure(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            assert name not in ("print", "open", "input", "eval", "exec", "__import__", "seed"), \
                f"{path.name}:{node.lineno}: {name}()"
            # numpy's global random state: np.random.normal(...) and friends (np.random.default_rng is fine)
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "random":
                assert f.attr in ("default_rng", "Generator", "SeedSequence"), f"{path.name}:{node.lineno}"
        # the standard `random` module only as a local, seeded Random (the sealed-bid valuations of the
        # reference); its global functions would be hidden state
        if isinstance(node, ast.Import):
            assert all(a.name != "random" for a in node.names), f"{path.name}:{node.lineno}: import random"
        if isinstance(node, ast.ImportFrom) and node.module == "random":
            assert [a.name for a in node.names] == ["Random"], f"{path.name}:{node.lineno}"
    for ours, name, line in imports_of(path):
        top = name.split(".")[0]
        assert top not in SDKS + ("os", "sys", "io", "pathlib", "logging", "asyncio", "subprocess"), name
        if ours is not None:
            assert layer_of(ours) == "games", f"{path.name}:{line}: games must not import {name}"


def test_no_module_outside_games_names_a_game() -> None:
    """Hosts, agents, analysis and the CLI read what games declare; only games/ (and tests) name them."""
    from econarena.games import GAMES

    names = sorted(GAMES, key=len, reverse=True)
    alternatives = "|".join(re.escape(n) for n in names)
    pattern = re.compile("[\"'](" + alternatives + ")[\"']")
    for path in package_modules():
        if layer_of(module_name(path)) == "games":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = pattern.search(line)
            assert m is None, f"{path.relative_to(REPO)}:{number} names the game {m.group(1)}"


def test_nothing_is_imported_by_name() -> None:
    for path in package_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call):
                f = node.func  # the builtins, and importlib's import_module (a model's .eval() is fine)
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                builtin = isinstance(f, ast.Name) and name in ("eval", "exec", "__import__")
                assert not builtin and name != "import_module", f"{path}:{node.lineno}"
