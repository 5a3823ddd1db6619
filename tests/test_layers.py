"""The one-way imports of ARCHITECTURE.md, the purity of game code, and no module naming a game.

Layers (the folders of the package; ARCHITECTURE.md draws them):
  cli (top) -> hosts, importers, analysis, agents, formats, games; hosts -> games, agents, formats;
  importers -> games, formats; analysis -> games, formats; agents -> agents, formats; formats -> (nothing
  but formats and the package's face: ``__init__``'s version numbers); games -> (nothing but games, and
  formats/registry.py: the lazy registry type, standard library only). The package's face (``__init__``)
  imports nothing of ours; ``__main__`` imports only the cli. Inside cli, the
  face (``cli/__init__``) loads the command groups; ``common`` (then ``terminal``) sits below every group, and
  no group imports another but ``experiments``, whose ``validate`` checks bench suites with ``bench``'s rule.
  Inside games, a family (``games/<family>/``) reads the contract (``games/*.py``) and its own family, never
  another family; the contract reads no family. Inside analysis, the shared modules never read a family
  module except the report, which assembles them.
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

from econarena.agents.providers import RECORDS

REPO = Path(__file__).resolve().parent.parent
SDKS = ("openai", "anthropic", "google", "zai", "zhipuai", "torch", "transformers", "aiohttp", "httpx")
SDKS = tuple(dict.fromkeys((*SDKS, *(m.split(".")[0] for r in RECORDS for m in r.sdk_modules))))  # a new one too
LAYERS = ("games", "agents", "hosts", "importers", "analysis", "formats", "cli")
# games/plugins.py finds games of the user's own packages (module:Class paths, entry points): it imports by
# name and looks at sys.path, and is the one module allowed to (it holds no rules, and only a Game comes out)
PLUGINS = REPO / "games" / "plugins.py"
# formats/registry.py imports the lazy ``module:attr`` entries the package lists in its own code and the
# entry points of installed distributions, never a name read from a file; games may read it (it imports
# nothing but the standard library and holds no rules), the one module outside games/ they may
REGISTRY = REPO / "formats" / "registry.py"
# the import itself, shared by games/plugins.py and agents/plugins.py (players of the user's own): the one
# module that calls import_module by a user's name, and the one other import of games/ from outside it
# (games/plugins.py loads code, it holds no rule of a game)
TRUSTED = REPO / "formats" / "trusted.py"
GAME_FILES = sorted(p for p in (REPO / "games").rglob("*.py") if p != PLUGINS)
FAMILIES = sorted(p.name for p in (REPO / "games").iterdir() if (p / "__init__.py").exists())
EVERYTHING = {"root", *LAYERS}
ALLOWED = {
    "games": {"games"},
    "formats": {"formats", "root"},
    "agents": {"agents", "formats", "root"},
    "hosts": {"hosts", "games", "agents", "formats", "root"},
    "importers": {"importers", "games", "formats", "root"},
    "analysis": {"analysis", "games", "formats", "root"},
    "cli": EVERYTHING,
    "main": {"cli"},
    "root": set(),
}
# inside cli: what each module may import of the others (the face, cli/__init__, may import them all)
CLI_ALLOWED = {
    "common": {"terminal"},
    "terminal": set(),
    "experiments": {"common", "terminal", "bench"},
    "reports": {"common", "terminal"},
    "bench": {"common", "terminal"},
    "__main__": {""},
}


def package_modules() -> list[Path]:
    out = sorted(REPO.glob("*.py"))
    for layer in LAYERS:
        out += sorted((REPO / layer).rglob("*.py"))
    return out


def module_name(path: Path) -> list[str]:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def layer_of(parts: list[str]) -> str:
    if not parts:
        return "root"
    if parts == ["__main__"]:
        return "main"
    return parts[0] if parts[0] in LAYERS else "root"


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
    heavy = {"openai", "anthropic", "google", "zai", "zhipuai", "torch", "transformers", "ray"}
    assert not loaded & heavy, loaded & heavy


@pytest.mark.parametrize("path", package_modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_imports_follow_the_layers(path: Path) -> None:
    here = layer_of(module_name(path))
    for ours, name, line in imports_of(path):
        if ours is None:
            continue
        there = layer_of(ours)
        if ours == ["formats", "registry"]:
            continue  # below every layer, games included (see REGISTRY)
        if path == PLUGINS and ours[:2] == ["formats", "trusted"]:
            continue
        assert there in ALLOWED[here] | {here}, f"{path.relative_to(REPO)}:{line}: {here} must not import {name}"


def test_nothing_loose_at_the_root() -> None:
    """The root holds the package's face only; every other module lives in the folder of its layer."""
    assert sorted(p.name for p in REPO.glob("*.py")) == ["__init__.py", "__main__.py"]
    assert layer_of(["rundir"]) == "root"  # a module back at the root would be judged as the face, and refused


@pytest.mark.parametrize("path", sorted((REPO / "cli").glob("*.py")), ids=lambda p: p.name)
def test_cli_modules_keep_their_order(path: Path) -> None:
    """The face loads the command groups; below them common and terminal; no group reads another's
    internals (experiments' validate borrows bench's suite check)."""
    me = module_name(path)
    if me == ["cli"]:
        return
    allowed = CLI_ALLOWED[me[1]]
    for ours, name, line in imports_of(path):
        if ours is None or ours[:1] != ["cli"]:
            continue
        module = len(ours) > 1 and (REPO / "cli" / f"{ours[1]}.py").is_file()
        theirs = ours[1] if module else ""  # "": the face (cli/__init__) or a name it holds
        assert theirs in allowed, f"{path.relative_to(REPO)}:{line}: cli.{me[1]} must not import {name}"


def test_formats_read_only_themselves() -> None:
    """formats/ is what every layer above games shares: it reads nothing of the package outside it but the
    face's version numbers (rundir's manifest records them)."""
    for path in sorted((REPO / "formats").rglob("*.py")):
        for ours, name, line in imports_of(path):
            if ours is None:
                continue
            assert ours[:1] == ["formats"] or ours in (["SCHEMA_VERSION"], ["__version__"]), \
                f"{path.relative_to(REPO)}:{line}: formats must not import {name}"


def test_package_imports_are_relative() -> None:
    """ARCHITECTURE.md: siblings are imported relatively, so every tool can follow the layers."""
    for path in package_modules():
        text = path.read_text(encoding="utf-8")
        hits = [i for i, line in enumerate(text.splitlines(), 1) if re.match(r"\s*from econarena[. ]", line)]
        assert not hits, f"{path.relative_to(REPO)}: absolute econarena imports on lines {hits}"


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports anywhere in its file (deferred imports included)."""
    graph: dict[str, set[str]] = {}
    names = {".".join(module_name(p)) for p in package_modules()}
    for path in package_modules():
        me = ".".join(module_name(path))
        edges = set()
        for ours, _, _ in imports_of(path):
            if ours is None:
                continue
            target = ".".join(ours)
            while target and target not in names:  # `from .x import name` names a module or a member
                target = target.rpartition(".")[0]
            if target != me and target in names:
                edges.add(target)
        graph[me] = edges
    return graph


def test_no_import_cycles_at_all() -> None:
    """No cycle among modules, counting every import in a file (inside functions too): a deferred import
    that closes a loop is still a tangle, so the types both sides need live in a module below both."""
    graph = import_graph()
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                raise AssertionError("import cycle: " + " -> ".join(c or "econarena" for c in cycle))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_the_cycle_check_sees_deferred_imports() -> None:
    """The check above is not vacuous: imports inside functions are edges (the CLI loads its report
    commands, and the bench the local model's module, only when asked)."""
    graph = import_graph()
    assert "cli.reports" in graph["cli"]
    assert "agents.providers.hf" in graph["hosts.bench"]


def family_of(parts: list[str]) -> str | None:
    """The family a games module belongs to (``games/<family>/...``), or None for the contract."""
    return parts[1] if len(parts) > 2 and parts[0] == "games" and parts[1] in FAMILIES else (
        parts[1] if len(parts) == 2 and parts[0] == "games" and parts[1] in FAMILIES else None)


@pytest.mark.parametrize("path", GAME_FILES, ids=lambda p: str(p.relative_to(REPO / "games")))
def test_a_family_reads_only_the_contract_and_itself(path: Path) -> None:
    here = module_name(path)
    mine = family_of(here)
    for ours, name, line in imports_of(path):
        if ours is None or ours[:1] != ["games"] or here == ["games"]:
            continue  # games/__init__ is the registry: it lists every family
        theirs = family_of(ours)
        where = f"{path.relative_to(REPO)}:{line}"
        if mine is None:
            assert theirs is None, f"{where}: the games contract must not import the family module {name}"
        else:
            assert theirs in (None, mine), f"{where}: family {mine} must not import another family ({name})"


def test_shared_analysis_reads_no_family_but_in_the_report() -> None:
    for path in sorted((REPO / "analysis").glob("*.py")):
        if path.name in ("report.py", "__init__.py"):
            continue
        for ours, name, line in imports_of(path):
            assert ours is None or ours[:2] != ["analysis", "families"], \
                f"{path.relative_to(REPO)}:{line}: shared analysis imports the family module {name}"


def test_every_family_has_a_card_and_lists_its_games() -> None:
    from econarena.games import FAMILIES as families
    from econarena.games import GAMES

    assert {f.__name__.rsplit(".", 1)[-1] for f in families} == set(FAMILIES)
    listed = [g.name for f in families for g in f.GAMES]
    assert sorted(listed) == sorted(GAMES) and len(listed) == len(set(listed))
    for f in families:
        assert f.__doc__ and len(f.__doc__.splitlines()) >= 3, f"{f.__name__}: no card in its docstring"


@pytest.mark.parametrize("path", GAME_FILES, ids=lambda p: str(p.relative_to(REPO / "games")))
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
        if ours is not None and ours != ["formats", "registry"]:
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
        if path in (TRUSTED, REGISTRY):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call):
                f = node.func  # the builtins, and importlib's import_module (a model's .eval() is fine)
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                builtin = isinstance(f, ast.Name) and name in ("eval", "exec", "__import__")
                assert not builtin and name != "import_module", f"{path}:{node.lineno}"


def test_every_package_folder_is_installed() -> None:
    """setup.cfg lists packages by hand (the repository root is the package): a new folder must be listed,
    or `pip install .` would leave it out while the editable install of the tests still finds it."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    found = {"econarena"} | {
        "econarena." + ".".join(p.parent.relative_to(REPO).parts)
        for layer in LAYERS for p in (REPO / layer).rglob("__init__.py")}
    assert found <= listed, f"add to setup.cfg [options] packages: {sorted(found - listed)}"
