"""The documentation's references, generated from the code at build time (a Sphinx extension).

Three directives render Markdown that MyST parses like any page, so the references cannot drift from the
tool: ``econarena-toml`` (every TOML key: its type, default, bounds and the string under the field in the
configuration models), ``econarena-cli`` (every command and flag, from the argument parser) and
``econarena-games`` (the game and agent registries). A key added in code appears here without editing a
page; a key added without a description fails the docs test (tests/test_docs.py).

Descriptions are the attribute docstrings of the pydantic models, read from their source with ``ast`` here,
so the package pays nothing for them at run time.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import textwrap
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

# ---------------------------------------------------------------- reading the models


@cache
def _class_field_docs(cls: type) -> dict[str, str]:
    """The strings under the annotated fields of ``cls`` itself (not its bases)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    out: dict[str, str] = {}
    for stmt, nxt in zip(body.body, body.body[1:]):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)):
            out[stmt.target.id] = inspect.cleandoc(nxt.value.value)
    return out


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Each field's description: the string under it in the model or the nearest base that has one."""
    out: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            out.update(_class_field_docs(cls))
    return {k: " ".join(v.split()) for k, v in out.items() if k in model.model_fields}


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if tp is Any:
        return "number, list or distribution"
    if tp is type(None):
        return "none"
    if origin is typing.Literal:
        return " | ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args)
    if origin in (list, tuple):
        (arg, *_) = typing.get_args(tp) or (Any,)
        return f"list of {_type_name(arg)}" if arg is not Any else "list"
    if origin is dict:
        k, v = typing.get_args(tp)
        return f"table of {_type_name(k)} -> {_type_name(v)}"
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def _bounds(info: FieldInfo) -> str:
    parts = []
    for m in info.metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{sym} {_num(v)}")
        if getattr(m, "min_length", None):
            parts.append(f"at least {m.min_length} character(s)")
    return ", ".join(parts)


def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        v = int(v)
    if isinstance(v, int) and abs(v) >= 10_000:
        return f"{v:,}" if v < 2**62 else f"2^{v.bit_length()} - 1" if v == 2**v.bit_length() - 1 else str(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    value = info.default_factory() if info.default_factory is not None else info.default  # type: ignore[call-arg]
    return f"`{_toml(value)}`"


def _toml(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float):
        return _num(value) if value.is_integer() else f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def model_table(model: type[BaseModel], keys: list[str] | None = None,
                defaults: dict[str, str] | None = None) -> list[str]:
    """A Markdown table of a model's keys: key, type, default, allowed values, meaning."""
    docs = field_docs(model)
    defaults = defaults or {}
    rows = ["| key | type | default | bounds | meaning |", "|---|---|---|---|---|"]
    for name in keys if keys is not None else list(model.model_fields):
        info = model.model_fields[name]
        default = defaults.get(name) or _default(info)
        rows.append(f"| `{name}` | {_cell(_type_name(info.annotation))} | {_cell(default)} | "
                    f"{_cell(_bounds(info))} | {_cell(docs.get(name, ''))} |")
    return rows


def undocumented() -> list[str]:
    """Every TOML key the configuration models declare without a description (the docs test wants none)."""
    missing = []
    for title, model, keys in _sections():
        docs = field_docs(model)
        missing += [f"{title}.{k}" for k in keys if not docs.get(k)]
    return missing


def _sections() -> list[tuple[str, type[BaseModel], list[str]]]:
    from econarena.agents.settings import LLMSettings
    from econarena.games import GAMES
    from econarena.hosts.experiment import (
        AGENT_KEYS,
        PLAYER_KEYS,
        ExperimentSection,
        PlayerEntry,
        SteerSection,
        TournamentSection,
    )

    player_keys = [k for k in PLAYER_KEYS if k in PlayerEntry.model_fields]
    player_keys += [k for ks in AGENT_KEYS.values() for k in ks]
    out = [("experiment", ExperimentSection, list(ExperimentSection.model_fields)),
           ("players", PlayerEntry, player_keys),
           ("llm", LLMSettings, list(LLMSettings.model_fields)),
           ("steer", SteerSection, list(SteerSection.model_fields)),
           ("tournament", TournamentSection, list(TournamentSection.model_fields))]
    out += [(f"game ({name})", g.Params, list(g.Params.model_fields)) for name, g in sorted(GAMES.items())]
    return out


# ---------------------------------------------------------------- the TOML reference

ALIAS_DOC = ("Take the entry's keys from the models file (`experiment.models`, default `models.toml` beside the "
             "experiment); keys set on the player win; an alias may name another alias, a loop is an error.")


def toml_reference() -> str:
    from econarena.agents.settings import LLMSettings
    from econarena.games import FAMILIES
    from econarena.hosts.config import TOP_KEYS
    from econarena.hosts.experiment import (
        AGENT_KEYS,
        PLAYER_KEYS,
        ExperimentSection,
        PlayerEntry,
        SteerSection,
        TournamentSection,
    )
    from econarena.hosts.grid import FIXED_EXPERIMENT_KEYS, GRID_SECTIONS, MAX_CELLS
    from econarena.hosts.prompts import PROMPT_KEYS

    out = [f"An experiment file has the tables {', '.join(f'`[{k}]`' for k in sorted(TOP_KEYS))}. "
           "Every key below is checked before anything runs: an unknown key, a wrong type or a value out of "
           "bounds is an error that names the file and the key path.", ""]
    out += ["## `[experiment]`", "", *model_table(ExperimentSection, defaults={"name": "the file's name"}),
            ""]
    out += ["## `[[players]]`", "",
            "Every entry takes the keys below; `agent` decides which others it may have. An LLM provider "
            f"({_providers()}) takes the LLM keys of `[llm]` as well.", ""]
    docs = field_docs(PlayerEntry) | {"alias": ALIAS_DOC}
    rows = ["| key | for | type | default | meaning |", "|---|---|---|---|---|"]
    for key in PLAYER_KEYS:
        info = PlayerEntry.model_fields.get(key)
        kind = _type_name(info.annotation) if info else "string"
        default = _default(info) if info else "unset"
        rows.append(f"| `{key}` | every agent | {_cell(kind)} | {_cell(default)} | {_cell(docs.get(key, ''))} |")
    for agent, keys in AGENT_KEYS.items():
        for key in keys:
            info = PlayerEntry.model_fields[key]
            rows.append(f"| `{key}` | `{agent}` | {_cell(_type_name(info.annotation))} | {_cell(_default(info))} | "
                        f"{_cell(docs.get(key, ''))} |")
    out += [*rows, ""]
    out += ["## `[llm]`", "",
            "Defaults for every LLM player, merged in this order: built-in defaults < provider < `[llm]` < the "
            "player's own keys. The same keys are accepted in a player entry and in `[judge]`.", "",
            *model_table(LLMSettings), ""]
    out += ["## `[judge]`", "",
            "The LLM that values a run when the game's payoff is judged (the fruit trade with `payoff = "
            "\"llm\"`): one player entry (`agent`, the LLM keys, `label`, `alias`).", ""]
    out += ["## `[prompts]`", "",
            "Overrides pieces of the game's prompt template; placeholders such as `{upper_bound}` are filled "
            "from the game's observation and an unknown placeholder is an error. An overridden template gets a "
            "new template id in the logs. The keys:", "",
            ", ".join(f"`{k}`" for k in sorted(PROMPT_KEYS)) + ", and `describe_<key>` for one reply key's "
            "description.", ""]
    out += ["## `[grid]`", "",
            f"Lists of values under {', '.join(f'`[grid.{s}]`' for s in GRID_SECTIONS)} expand into their "
            f"cartesian product (at most {MAX_CELLS:,} cells); each cell plays every table of the file. These "
            f"`[experiment]` keys cannot vary within a file: "
            f"{', '.join(f'`{k}`' for k in sorted(FIXED_EXPERIMENT_KEYS))}.", ""]
    out += ["## `[steer]`", "", "A steering experiment (`econarena steer`).", "", *model_table(SteerSection), ""]
    out += ["## `[tournament]`", "",
            "A tournament (rated with `econarena ratings`, see the ratings page): `[[tournament.entrants]]` "
            "tables take every `[[players]]` key but `count`, and a file with a tournament has no "
            "`[[players]]`. Every lineup of the design plays every session; session k draws the same game "
            "parameters in every lineup.", "", *model_table(TournamentSection), ""]
    out += ["## `[game]`", "",
            "Each game's parameters. A number typed *number, list or distribution* may be a number, a "
            "per-player list, or a distribution drawn once per session: `{ normal = [mean, sd] }` or "
            "`{ uniform = [low, high] }` (drawn values are rounded to 2 decimals).", ""]
    for family in FAMILIES:
        for g in family.GAMES:
            out += [f"### `{g.name}`", "", f"{g.info.title}. Family: `{g.info.family}`.", "",
                    *model_table(g.Params), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- the CLI reference


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | meaning |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction, argparse._VersionAction)):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                meta = action.metavar or action.dest.upper()
                name += f" {' '.join(meta) if isinstance(meta, tuple) else meta}"
        else:
            name = action.metavar or action.dest
            if isinstance(name, tuple):
                name = " ".join(name)
        text = (action.help or "") % {"default": action.default, "prog": parser.prog} if action.help else ""
        if action.choices and not isinstance(action.choices, dict):
            text += f" (one of: {', '.join(map(str, action.choices))})"
        rows.append(f"| `{name}` | {_cell(text)} |")
    return rows if len(rows) > 2 else []


def cli_reference() -> str:
    from econarena import __version__
    from econarena.cli import build_parser

    parser = build_parser()
    out = [f"`econarena` {__version__}. Exit codes: 0 success, 1 an optional extra is not installed, 2 bad input "
           "(one message per problem, no traceback), 3 some runs stopped on API errors (resume later), "
           "130 interrupted (Ctrl-C, SIGTERM, SIGHUP).", "",
           "```text", parser.format_usage().strip(), "```", ""]
    subs = _subcommands(parser)  # in the order of `econarena --help`
    grouped = [(title, [n for n in subs if n in names]) for title, names in CLI_TASKS]
    rest = [n for n in subs if not any(n in names for _, names in CLI_TASKS)]
    if rest:  # a new command is never left out: it shows here until it joins a task
        grouped.append(("Other commands", rest))
    groups = [(title, names) for title, names in grouped if names]
    groups.sort(key=lambda g: list(subs).index(g[1][0]))  # tasks in the order their first command appears
    for title, names in groups:
        out += [f"## {title}", ""]
        for name in names:
            sub = subs[name]
            out += [f"### `econarena {name}`", ""]
            if sub.description:
                out += [sub.description.replace("%%", "%"), ""]
            out += ["```text", sub.format_usage().strip(), "```", "", *_flags(sub), ""]
    return "\n".join(out)


# The CLI reference's sections: what a user wants to do, then the commands that do it
CLI_TASKS = (
    ("Run experiments", ("run", "steer", "merge", "suite")),
    ("Check before you run", ("validate", "check", "list")),
    ("Read the results", ("summary", "report", "compare", "analyze")),
    ("Import other tools' released results", ("import",)),
    ("Score a model: the benchmark", ("bench", "leaderboard")),
)


# ---------------------------------------------------------------- games and agents


def _providers() -> str:
    """The providers' names from their records, so a new provider needs no edit here."""
    from econarena.agents.providers import PROVIDERS

    return ", ".join(f"`{name}`" for name in PROVIDERS)


def games_reference() -> str:
    from econarena.agents.baselines import POLICY_AGENTS
    from econarena.agents.llm import PROVIDERS
    from econarena.games import FAMILIES
    from econarena.games.capabilities import capabilities
    from econarena.hosts.experiment import BASELINES

    out = [*_contract_reference(), "## Games", "",
           "The baselines each game has a rule for (`scripted` and `human` seats play every game), the "
           "strategies it declares itself (`agent = \"policy\"`) and the capabilities it implements "
           "(see the contract above).", ""]
    for family in FAMILIES:
        first = (family.__doc__ or "").strip().split("\n\n")[0]
        out += [f"### Family `{family.__name__.rsplit('.', 1)[-1]}`", "", " ".join(first.split()), "",
                "| game | title | players | moves | rounds | capabilities | baselines | policies |",
                "|---|---|---|---|---|---|---|---|"]
        for g in family.GAMES:
            info = g.info
            base = [k for k in g.policies() if k in POLICY_AGENTS]
            own = [k for k in g.policies() if k not in POLICY_AGENTS]
            players = str(info.n_players) if info.n_players else "any"
            out.append(f"| `{g.name}` | {_cell(info.title)} | {players} | {info.moves} | "
                       f"{'yes' if info.rounds else 'no'} | {', '.join(capabilities(g)) or '-'} | "
                       f"{', '.join(base) or '-'} | {', '.join(own) or '-'} |")
        out.append("")
    out += ["## Agents", "", "| agent | kind | what it is |", "|---|---|---|"]
    out += [f"| `{name}` | baseline | {_cell(desc)} |" for name, desc in sorted(BASELINES.items())]
    for name, info in sorted(PROVIDERS.items()):
        keys = f" Key: {' or '.join(f'`{k}`' for k in info.key_envs)}." if info.key_envs else ""
        out.append(f"| `{name}` | LLM provider | {_cell(info.description)}; `pip install 'econarena[{info.extra}]'`."
                   f"{keys} |")
    return "\n".join(out) + "\n"


def _contract_reference() -> list[str]:
    """The game contract from its protocols (games/capabilities.py): the core, then each capability with
    the methods it names, so the page cannot drift from the code."""
    import inspect

    from econarena.games import capabilities as C

    def first(obj: object) -> str:
        return " ".join((inspect.getdoc(obj) or "").split("\n\n")[0].split()).replace("``", "`")

    out = ["## The game contract", "", first(C.Core), "",
           "Declarations: " + ", ".join(f"`{k}`" for k in C.Core.__annotations__) + ".", "",
           "| core method | what it does |", "|---|---|"]
    out += [f"| `{m}` | {_cell(first(getattr(C.Core, m)))} |" for m in C.members(C.Core)]
    out += ["", "A game may add capabilities; each is a protocol of the methods the game writes itself "
            "(`econarena.games.capabilities.implements(game, protocol)`; a method kept from `Game` says "
            "\"none\").", "", "| capability | protocol | methods | what it gives |", "|---|---|---|---|"]
    for name, proto in C.CAPABILITIES.items():
        methods = ", ".join(f"`{m}`" for m in C.members(proto))
        out.append(f"| {name} | `{proto.__name__}` | {methods} | {_cell(first(proto))} |")
    return out + [""]


GAMES_PAGE_HEAD = ("# Games and agents\n\nGenerated from the game and agent registries by "
                   "`python docs/_ext/econarena_docs.py` and checked in, so it reads the same in the repository as "
                   "on the site (tests/test_games_reference.py fails when it is stale).\n\n")


def games_page() -> str:
    """docs/reference/games.md as checked in: the heading, then the games and agents reference."""
    return GAMES_PAGE_HEAD + games_reference()


GENERATORS = {"econarena-toml": toml_reference, "econarena-cli": cli_reference, "econarena-games": games_reference}


def setup(app: Any) -> dict[str, Any]:
    from docutils import nodes
    from docutils.parsers.rst import Directive
    from docutils.statemachine import StringList

    def directive(generate: Any) -> type:
        class Generated(Directive):
            has_content = False

            def run(self) -> list[Any]:
                text = generate()
                if generate is toml_reference:
                    for key in undocumented():  # a warning fails the strict build: every key is described
                        self.state.document.reporter.warning(f"TOML key {key} has no description (a string "
                                                             "under its field in the model)")
                holder = nodes.section()
                holder.document = self.state.document
                self.state.nested_parse(StringList(text.splitlines(), source="(generated)"), self.content_offset,
                                        holder, match_titles=True)
                return holder.children

        return Generated

    for name, generate in GENERATORS.items():
        app.add_directive(name, directive(generate))
    app.add_js_file("econarena-search.js", priority=100)  # before searchtools.js: its Scorer is ours
    app.connect("build-finished", write_page_texts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


MAX_PAGE_TEXT = 60_000  # characters of a page kept for search snippets


def page_texts(env: Any) -> dict[str, str]:
    """Every page's plain text (whitespace folded), for the search page's snippets."""
    import re

    out = {}
    for docname in sorted(env.found_docs):
        text = env.get_doctree(docname).astext()
        out[docname] = re.sub(r"\s+", " ", text).strip()[:MAX_PAGE_TEXT]
    return out


def write_page_texts(app: Any, exception: Exception | None) -> None:
    """``_static/econarena-pages.js``: the texts the search page cuts snippets from (see
    ``_static/econarena-search.js``: a browser refuses the page fetches Sphinx uses from file://)."""
    import json
    from pathlib import Path

    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    data = json.dumps(page_texts(app.env), ensure_ascii=True).replace("</", "<\\/")
    (static / "econarena-pages.js").write_text(f"window.ECONARENA_PAGES = {data};\n", encoding="utf-8")


if __name__ == "__main__":  # regenerate the checked-in games reference
    (Path(__file__).resolve().parents[1] / "reference" / "games.md").write_text(games_page(), encoding="utf-8")
