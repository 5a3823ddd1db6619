"""The documentation is tested like code: the site builds in strict mode, the references cover every key
and command, and every shell example and TOML snippet in docs/ and the README runs.

How a page's code blocks are run (the line right above a fence may say otherwise, as an HTML comment
``<!-- docs: ... -->`` that the site does not show; several instructions are separated by ``;``):

- ``sh``/``bash``/``console`` blocks run in order in one scratch folder per page (a copy of configs/, with
  ``econarena`` and ``.venv/bin/econarena`` on hand), with stdin closed and LLM providers pointed at the
  loopback OpenAI-compatible server (tests/fakeservers.py; a request with a reasoning effort is answered
  by its stand-in reasoning model, ``ThinkingServer``). Every command must exit 0 unless the block
  says ``exit N``. A ``make X`` line must name a Makefile target and is not run (the suite is one).
- ``toml`` blocks are experiments: validated, then played in the page's folder (``validate only (why)``
  to stop after validation, e.g. for the bundled model); ``file NAME`` saves the block under NAME for the
  page's later shell blocks; ``fragment of configs/X.toml`` merges the block over that file first;
  ``models`` and ``prices`` read it as a models or prices file; ``save NAME`` (any language) only writes
  the block under NAME, e.g. a game module and its prompt template (docs/own-games.md).
- ``data SOURCE DIR`` writes small released results of another tool (``gamabench``, ``negotiationarena``,
  ``glee``, as the importer tests make them: never the real files) into DIR first, so import examples run.
- ``output``: a ``text`` block is what the last command before it printed; each of its paragraphs must
  stand in that output verbatim (a page may show part of it), so a page's numbers and stars cannot drift.
- ``parse only (why)``: shell commands are only parsed by the CLI's own parser (flags and commands must
  exist); ``skip (why)``: not run at all (a cluster, an install). A reason is required; the tests count them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from timing import budget

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import econarena_docs  # noqa: E402

PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts) + [ROOT / "README.md"]
SHELL = {"sh", "bash", "console", "shell"}
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs:\s*(?P<body>.*?)\s*-->\s*$")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    says: dict[str, str]  # the instructions of the comment above the fence

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _instructions(body: str) -> dict[str, str]:
    out = {}
    parts = re.split(r";\s*(?![^()]*\))", body)  # a reason in parentheses may hold ';'
    for part in filter(None, (p.strip() for p in parts)):
        for key in ("skip", "parse only", "validate only", "file", "fragment of", "exit", "models", "prices",
                    "data", "save", "output"):
            if part == key or part.startswith(key + " "):
                out[key] = part[len(key):].strip()
                break
        else:
            raise AssertionError(f"unknown docs instruction {part!r} (expected skip, parse only, validate only, "
                                 "file, fragment of, exit, models, prices, data, save, output)")
    return out


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group("fence"), m.group("info").strip().split(" ")[0].strip("{}")
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        says = {}
        if i > 0 and (d := _DIRECTIVE.match(lines[i - 1])):
            says = _instructions(d.group("body"))
        indent = len(m.group("indent"))
        text = "\n".join(line[indent:] for line in lines[i + 1:j])
        out.append(Block(page, i + 1, lang, text, says))
        i = j + 1
    return out


ALL = [b for p in PAGES for b in blocks(p)]
TESTED = [b for b in ALL if b.lang in SHELL | {"toml"} or "save" in b.says or "output" in b.says]


def test_reasons_are_given_for_what_is_not_run():
    for b in TESTED:
        for key in ("skip", "parse only", "validate only"):
            if key in b.says:
                assert b.says[key].startswith("(") and len(b.says[key]) > 5, f"{b.where}: '{key}' needs a (reason)"


# ---------------------------------------------------------------- the site and the generated references


def test_site_builds_in_strict_mode(tmp_path):
    """Broken links, missing pages, pages outside the table of contents and undocumented keys all fail."""
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                           str(DOCS), str(tmp_path / "site")], capture_output=True, text=True,
                          timeout=budget(300))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "reference" / "toml.html").is_file()


def test_every_toml_key_has_a_description_and_appears_in_the_reference():
    assert econarena_docs.undocumented() == []
    text = econarena_docs.toml_reference()
    for title, _model, keys in econarena_docs._sections():
        for key in keys:
            assert f"| `{key}` |" in text, f"{title}.{key} missing from the TOML reference"


def test_the_cli_reference_has_every_command_and_flag():
    from econarena.cli import build_parser

    text = econarena_docs.cli_reference()
    for name, sub in econarena_docs._subcommands(build_parser()).items():
        assert f"## `econarena {name}`" in text
        for action in sub._actions:
            if action.help is None:  # the reference would show an empty meaning
                raise AssertionError(f"econarena {name} {action.option_strings or action.dest}: no help text")
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in text or f", {flag}" in text, f"econarena {name} {flag}"


def test_the_games_reference_has_every_game_and_agent():
    from econarena.agents.llm import PROVIDERS
    from econarena.games import GAMES
    from econarena.hosts.experiment import BASELINES

    text = econarena_docs.games_reference()
    for name in [*GAMES, *BASELINES, *PROVIDERS]:
        assert f"| `{name}` |" in text, name


def test_the_changelog_leads_with_the_package_version():
    from econarena import __version__

    # an "Unreleased" section on top collects changes until the next version is numbered
    first = re.search(r"^## (?!Unreleased\b)(\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), flags=re.M)
    assert first and first.group(1) == __version__, "CHANGELOG.md's newest entry is not econarena.__version__"


def test_every_table_row_has_as_many_cells_as_its_header():
    """A `|` inside a code span still splits a Markdown table's cell (write it `\\|`): a row that silently lost
    its text looks fine in the source and broken on the page."""
    for page in PAGES:
        header, fenced = None, False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith(("```", "~~~")):
                fenced, header = not fenced, None
            if fenced or not line.startswith("|"):
                header = None
                continue
            cells = len(re.split(r"(?<!\\)\|", line.strip())) - 2
            if header is None:
                header = cells
            assert cells == header, f"{page.relative_to(ROOT)}:{number}: {cells} cells in a table of {header}"


# ---------------------------------------------------------------- links from the README


def _slug(title: str) -> str:
    """MyST's anchor of a heading (GitHub's rule): lower case, punctuation dropped, spaces to dashes."""
    title = re.sub(r"`", "", title.strip().lower())
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+)$", text, flags=re.M)}


def test_readme_links_land_on_real_pages_and_sections():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [x for x in links if not re.match(r"[a-z]+:", x)]
    assert any(x.startswith("docs/") for x in local), "the README links into the documentation"
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else ROOT / "README.md"
        assert target.exists(), f"README links to {link}: no such file"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"README links to {link}: no such section"


# ---------------------------------------------------------------- running the examples


def _sandbox(tmp_path: Path) -> Path:
    box = tmp_path / "box"
    shutil.copytree(ROOT / "configs", box / "configs")
    (box / ".venv" / "bin").mkdir(parents=True)
    exe = Path(sys.executable).with_name("econarena")
    (box / ".venv" / "bin" / "econarena").symlink_to(exe)
    return box


def _env(box: Path, server) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
                "ECONARENA_CACHE_DIR": str(box / ".cache"), "HF_HUB_OFFLINE": "1",
                "OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-docs-example",
                "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-docs-example",
                "COLUMNS": "120"})
    return env


def _commands(text: str) -> list[str]:
    """The block's commands: prompts (`$ `) dropped, continuation lines joined, comments and output kept out."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not pending and not line.strip():
            continue
        if line.startswith("$ "):
            line = line[2:]
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if pending.strip() and not pending.lstrip().startswith("#"):
            out.append(pending.strip())
        pending = ""
    return out


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, flags=re.M))


def _parse_cli(command: str, where: str) -> None:
    from econarena.cli import build_parser

    argv = shlex.split(command, comments=True)
    assert argv and argv[0].endswith("econarena"), f"{where}: not an econarena command: {command}"
    try:
        build_parser().parse_args(argv[1:])
    except SystemExit as exc:
        raise AssertionError(f"{where}: the CLI does not parse {command!r}") from exc


def _run_toml(b: Block, box: Path, env: dict[str, str]) -> None:
    from econarena.hosts.config import load_experiment, read_toml, validate_alias_file

    name = b.says.get("file") or f"example-{b.line}.toml"
    # a fragment is saved beside its base, so the base's relative paths (models.toml) still hold
    path = (box / b.says["fragment of"]).parent / name if "fragment of" in b.says else box / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = b.text + "\n"
    if "fragment of" in b.says:
        base = tomllib.loads((box / b.says["fragment of"]).read_text(encoding="utf-8"))
        merged = _merge(base, tomllib.loads(text))
        import tomli_w

        text = tomli_w.dumps(merged)
    path.write_text(text, encoding="utf-8")
    if "models" in b.says:
        validate_alias_file(read_toml(path), str(path))
        return
    if "prices" in b.says:
        from econarena.formats.prices import load_prices

        assert load_prices(path), f"{b.where}: no prices"
        return
    data = tomllib.loads(text)
    paths = [data.get("experiment", {}).get("game", "")] + [p.get("agent", "") for p in data.get("players", [])]
    if any(":" in str(x) for x in paths):  # of the user's own: imported in a child, never into this process
        proc = subprocess.run(["econarena", "validate", str(path), "--trust", str(box)], cwd=box, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=budget(120))
        assert proc.returncode == 0, f"{b.where}: econarena validate exited {proc.returncode}\n{proc.stderr[-3000:]}"
    else:
        cwd = Path.cwd()
        try:
            os.chdir(box)
            load_experiment(path)
        finally:
            os.chdir(cwd)
    if "validate only" in b.says or "file" in b.says:
        return  # a saved file is played by the page's own commands
    proc = subprocess.run(["econarena", "run", str(path), "--out", str(box / "runs" / path.stem), "--quiet"],
                          cwd=box, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=budget(240))
    assert proc.returncode == 0, f"{b.where}: econarena run exited {proc.returncode}\n{proc.stderr[-3000:]}"


def _merge(base: dict, over: dict) -> dict:
    """A fragment's tables merge into the base's; its [[players]] (arrays of tables) join the base's."""
    out = dict(base)
    for k, v in over.items():
        old = out.get(k)
        if isinstance(v, dict) and isinstance(old, dict):
            out[k] = _merge(old, v)
        elif isinstance(v, list) and isinstance(old, list) and all(isinstance(x, dict) for x in v + old):
            out[k] = old + v
        else:
            out[k] = v
    return out


# What an example may run in the scratch folder; anything else (pip, ray start, sbatch, a server) must be
# marked `skip (why)` or `parse only (why)`: an unmarked `ray start --head` once started a cluster here.
RUNNABLE = {"econarena", ".venv/bin/econarena", "printf", "echo", "cat", "ls", "head", "tail", "grep", "wc",
            "test", "mkdir", "cp", "export", "cd", "sleep", "true"}


def _check_runnable(command: str, where: str) -> None:
    for part in re.split(r"&&|\|\||;|\|", command):
        words = shlex.split(part, comments=True)
        words = [w for w in words if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]  # VAR=value prefixes
        assert not words or words[0] in RUNNABLE, (
            f"{where}: `{words[0]}` is not run by the docs test: mark the block `skip (why)` or `parse only (why)`")


def _released_data(source: str, root: Path) -> None:
    """Small made-up released results in the source's own format (the importer tests' writers)."""
    if source == "gamabench":
        from test_gama_import import guess_file, write

        for model, runs in {"gpt-4o": [[[40, 20], [30, 10]], [[25, 12], [20, 8]]],
                            "llama-3.1-8b": [[[50, 45], [60, 40]], [[55, 30], [45, 35]]]}.items():
            for k, records in enumerate(runs, 1):
                write(root / "guessing_game" / f"{model}_guessing_game_v1_{k}.json", guess_file(records))
    elif source == "negotiationarena":
        from test_na_import import fixture_logs

        fixture_logs(root)
    elif source == "glee":
        from test_glee_import import write_data

        write_data(root)
    else:
        raise AssertionError(f"no made-up released results of {source!r}")


def _check_output(b: Block, printed: str) -> None:
    """An ``output`` block is what the page's last command printed: each of its paragraphs (a page may show
    part of the output) stands in the printed text, verbatim but for trailing spaces, numbers and stars too."""
    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())

    got = norm(printed)
    for para in (p for p in re.split(r"\n\s*\n", b.text) if p.strip()):
        assert norm(para) in got, f"{b.where}: the page shows\n{norm(para)}\nbut the command printed\n{got}"


def _run_shell(b: Block, box: Path, env: dict[str, str]) -> str:
    """Run the block's commands; what the last one printed (for an ``output`` block after it)."""
    printed = ""
    targets = _make_targets()
    if "data" in b.says:
        source, folder = b.says["data"].split()
        _released_data(source, box / folder)
    want = int(b.says.get("exit", "0") or 0)
    for command in _commands(b.text):
        if command.startswith("make "):
            for target in command.split("#")[0].split()[1:]:
                assert target in targets, f"{b.where}: no Makefile target {target!r}"
            continue
        if "parse only" in b.says:
            _parse_cli(command, b.where)
            continue
        _check_runnable(command, b.where)
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=box, env=env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=budget(300))
        assert proc.returncode == want, (f"{b.where}: `{command}` exited {proc.returncode} (expected {want})\n"
                                         f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        printed = proc.stdout
    return printed


PAGES_WITH_CODE = sorted({b.page for b in TESTED})


@pytest.fixture(scope="module")
def server():
    """The loopback server the examples' ``openai`` players reach: the plain fake server's reply (``{"answer":
    7}``), and for a request that sets a ``reasoning_effort`` the stand-in reasoning model that plays closer to
    the equilibrium the harder it thinks (``ThinkingServer``, as ``python tests/fakeservers.py --thinking``
    serves it to a reader of docs/tutorial/reasoning-effort.md)."""
    from fakeservers import ThinkingServer

    srv = ThinkingServer(spread=10).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_of_the_page_runs(page, tmp_path, server):
    box = _sandbox(tmp_path)
    env = _env(box, server)
    printed = ""
    for b in (b for b in TESTED if b.page == page):
        if "skip" in b.says:
            continue
        if "output" in b.says:
            _check_output(b, printed)
            continue
        if "save" in b.says:  # a file the page's later commands use (a game module, its template): as written
            target = box / b.says["save"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.text + "\n", encoding="utf-8")
        elif b.lang == "toml":
            _run_toml(b, box, env)
        else:
            printed = _run_shell(b, box, env)


def test_an_output_block_that_drifted_from_what_was_printed_fails(tmp_path):
    """The comparison is strict about numbers and stars, and lets a page show part of the output."""
    page = tmp_path / "p.md"
    printed = "A = x\n\n== ratio\nlevel-2   2.750 [2.000, 3.500]  *   \nrandom-1  0.000\n\n== other\nz 1\n"
    page.write_text("<!-- docs: output -->\n```text\n== ratio\nlevel-2   2.750 [2.000, 3.500]  *\n"
                    "random-1  0.000\n```\n", encoding="utf-8")
    (ok,) = blocks(page)
    assert ok.says == {"output": ""}
    _check_output(ok, printed)  # part of it, trailing spaces aside
    for wrong in ("level-2   2.833 [2.000, 3.500]  *", "level-2   2.750 [2.000, 3.500]"):
        page.write_text(f"<!-- docs: output -->\n```text\n== ratio\n{wrong}\nrandom-1  0.000\n```\n",
                        encoding="utf-8")
        (bad,) = blocks(page)
        bad.page = ROOT / "docs" / "index.md"  # where the message names it
        with pytest.raises(AssertionError, match="the page shows"):
            _check_output(bad, printed)


OUTPUT_PAGES = sorted((DOCS / "tutorial").glob("*.md")) + [DOCS / "getting-started.md", ROOT / "README.md"]


def test_every_printed_output_on_the_first_pages_is_compared():
    """What the tutorial, getting-started and the README show a command printing is compared with what it
    prints (an ``output`` block): a ``text`` block there without it could drift from the code unnoticed."""
    unchecked = [b.where for p in OUTPUT_PAGES for b in blocks(p)
                 if b.lang in ("text", "") and "output" not in b.says and "skip" not in b.says]
    assert not unchecked, f"text blocks not compared with what the command prints: {unchecked}"
    for b in (b for p in OUTPUT_PAGES for b in blocks(p) if "output" in b.says):
        assert b in TESTED, b.where  # and each is one the page test compares
