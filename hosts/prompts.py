"""Prompt rendering: the game's observation and action spec, poured into versioned templates.

Templates live in ``hosts/templates/`` (one TOML per game, plus ``common.toml`` for the sentences the Host
adds the same way for every game: environment, history, chain of thought, answer format). Any key can be
overridden from an experiment's ``[prompts]`` table; the template id logged with each decision then says
so (``.../v1+custom-<hash>``), so results made with different wording never mix silently.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import string
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..agents.base import Message
from ..games.base import ActionField, Game

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from .experiment import Experiment

PROMPT_KEYS = frozenset({
    "system", "rules", "fee_rule", "status", "keys_default", "keys_cot", "keys_history", "history_note",
    "action_description", "env_rational", "env_self", "private", "format_default", "format_cot",
    "format_history", "history", "report", "reask", "request", "persona_cunning", "persona_desperate",
    "judge_system", "judge",
})
TEXT_KEYS = PROMPT_KEYS - {"keys_default", "keys_cot", "keys_history"}


@cache
def _builtin(name: str) -> dict[str, Any]:
    text = resources.files("econarena.hosts").joinpath("templates", f"{name}.toml").read_text("utf-8")
    return tomllib.loads(text)


def game_template(game: Game) -> dict[str, Any]:
    """The game's own template: a built-in one (``hosts/templates/<name>.toml``), or for a game of the
    user's own (``games/plugins.py``) the file ``<name>.toml`` beside the module that defines it; a subclass
    of a built-in game without a file of its own (a scorer of one's own) keeps its parent's."""
    if type(game).__module__.startswith("econarena."):
        return _builtin(game.name)
    beside = Path(inspect.getfile(type(game))).with_name(f"{game.name}.toml")
    if not beside.exists():  # a built-in game subclassed (its own score or metrics): the parent's template
        parent = next((c for c in type(game).__mro__[1:] if c.__module__.startswith("econarena.games.")
                       and isinstance(getattr(c, "name", None), str)), None)
        if parent is not None:
            return _builtin(parent.name)  # type: ignore[attr-defined]  # a str: checked in the search
    return _beside(inspect.getfile(type(game)), game.name)


@cache
def _beside(module_file: str, name: str) -> dict[str, Any]:
    path = Path(module_file).with_name(f"{name}.toml")
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise TemplateError(f"the game {name!r} has no prompt template: expected {path} (the keys of "
                            "hosts/templates/prisoners_dilemma.toml: id, system, rules, status, private, keys_*, ...)"
                            ) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TemplateError(f"{path}: cannot read the prompt template ({exc})") from None
    if not isinstance(data.get("id"), str):
        raise TemplateError(f"{path}: the template needs an id, e.g. id = \"{name}/v1\" (logged with each decision)")
    unknown = sorted(k for k in data if k != "id" and k not in PROMPT_KEYS and not k.startswith("describe_"))
    if unknown:
        raise TemplateError(f"{path}: unknown template key(s) {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(PROMPT_KEYS))} and describe_<field>")
    return data


class TemplateError(ValueError):
    """A template that cannot be filled; names the template key and the placeholder."""


class _Fields(dict):
    def __missing__(self, key: str) -> str:
        raise KeyError(key)


class Template:
    """A merged template for one game: built-in common + game text, then the experiment's overrides."""

    def __init__(self, game: Game, overrides: dict[str, Any] | None = None) -> None:
        own = game_template(game)
        base = {**_builtin("common"), **own}
        self.parts: dict[str, Any] = {**base, **(overrides or {})}
        game_id = own["id"]
        if overrides:
            digest = hashlib.sha256(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:8]
            self.id = f"{game_id}+custom-{digest}"
        else:
            self.id = game_id
        self.game = game
        self._checked: set[str] = set()

    def _fill(self, key: str, fields: dict[str, Any]) -> str:
        text = str(self.parts[key])
        if key not in self._checked:  # the texts are fixed per experiment: check each once, not per decision
            try:
                # "{x.attr}" / "{x[0]}" would reach into Python objects from a config file: plain names only
                bad = next((f for _, f, _, _ in string.Formatter().parse(text) if f and re.search(r"[.\[]", f)),
                           None)
            except ValueError as exc:
                raise TemplateError(f"prompts.{key}: malformed template text ({exc})") from None
            if bad is not None:
                raise TemplateError(f"prompts.{key}: placeholder {{{bad}}}: use a plain name such as "
                                    f"{{{re.split(r'[.[]', bad)[0]}}}; available: {', '.join(sorted(fields))}")
            # "{upper_bound:>50000000}" would pad every prompt to 50 MB: a placeholder is filled as written
            spec = next(((f, fs, cv) for _, f, fs, cv in string.Formatter().parse(text)
                         if f is not None and (fs or cv)), None)
            if spec is not None:
                name, fs, cv = spec
                raise TemplateError(f"prompts.{key}: placeholder {{{name}{'!' + cv if cv else ''}"
                                    f"{':' + fs if fs else ''}}}: format specs and conversions are not allowed; "
                                    f"write {{{name}}}")
            self._checked.add(key)
        try:
            return text.format_map(_Fields(fields))
        except KeyError as exc:
            raise TemplateError(f"prompts.{key}: unknown placeholder {{{exc.args[0]}}}; available: "
                                f"{', '.join(sorted(fields))}") from None
        except (ValueError, IndexError, AttributeError, TypeError) as exc:
            raise TemplateError(f"prompts.{key}: malformed template text ({exc})") from None

    def _key_lines(self, variant: str, actions: tuple[ActionField, ...]) -> list[str]:
        lines = []
        for item in self.parts[f"keys_{variant}"]:
            if item == "{action}":
                for f in actions:
                    hint = "" if f.kind == "number" or (f.kind == "text" and not f.max_length) \
                        else f" ({f.format_hint()})"
                    lines.append(f"- {f.name}: {f.type_name()}{hint}, {self._describe(f)}")
            else:
                key, typ, desc = item
                lines.append(f"- {key}: {typ}, {desc}")
        return lines

    def _describe(self, f: ActionField) -> str:
        """A field's description: the template's ``describe_<name>``, the main key's
        ``action_description``, else the game's own words."""
        if f"describe_{f.name}" in self.parts:
            return str(self.parts[f"describe_{f.name}"])
        if f.name == self.game.action_key and "action_description" in self.parts:
            return str(self.parts["action_description"])
        return f.description

    def _fields(self, state: Any, player: int) -> dict[str, Any]:
        fields = dict(self.game.observation(state, player))
        fields["player_id"] = player
        return fields

    def _format_block(self, state: Any, player: int, keys: str, fields: dict[str, Any]) -> str:
        actions = self.game.action_spec(state, player).fields
        return "\n".join([self._fill(f"format_{keys}", fields), *self._key_lines(keys, actions)])

    def follow_up(self, state: Any, player: int, variant: str) -> str:
        """A later round's request inside a conversation: the new status and the answer format."""
        fields = self._fields(state, player)
        key = "request" if "request" in self.parts else "status"
        parts = [self._fill(key, fields)] if key in self.parts else []
        return "\n\n".join([*parts, self._format_block(state, player, variant, fields)])

    def report(self, fields: dict[str, Any], state: Any, player: int) -> str:
        """The report a player reads after a round (games that declare rounds); ``state`` is the state
        after the round, whose observation fields the report may use too."""
        return self._fill("report", {**self._fields(state, player), **fields})

    def reask(self, detail: str, state: Any, player: int, variant: str) -> str:
        """The reminder after an unusable reply (``reask``): what was wrong, then the format again."""
        fields = {**self._fields(state, player), "detail": detail}
        actions = self.game.action_spec(state, player).fields
        keys = "cot" if variant == "cot" else "default"
        return "\n".join([self._fill("reask", fields), *self._key_lines(keys, actions)])

    def judge(self, fields: dict[str, Any]) -> tuple[Message, ...]:
        """The judge model's question for one seat of a finished run (games with judged payoffs): the
        template's ``judge_system`` and ``judge`` texts, filled with ``Game.judge_requests`` fields."""
        if "judge" not in self.parts:
            raise TemplateError(f"the {self.game.name} template has no 'judge' text, so no judge can score it")
        return (Message("system", self._fill("judge_system", fields)), Message("user", self._fill("judge", fields)))

    def persona_text(self, persona: str) -> str:
        """A persona's sentence: the template's ``persona_<name>`` for a named one, else the text itself
        (verbatim, never filled: a person's own wording may hold braces)."""
        return str(self.parts.get(f"persona_{persona}", persona))

    def render(self, state: Any, player: int, environment: str, variant: str,
               history: list[dict[str, Any]] | None = None, n_past: int = 0,
               persona: str | None = None) -> tuple[Message, ...]:
        """Messages for one decision. ``history`` is the visible record of earlier runs, if any; a
        ``persona`` (NegotiationArena's social behaviours) is appended to the system prompt."""
        fields = self._fields(state, player)
        parts = [self._fill("rules", fields)]
        if "fee_rule" in self.parts and float(fields.get("entrance_fee", "0")) > 0:
            parts[0] += "\n" + self._fill("fee_rule", fields)
        if environment in ("rational", "self"):
            parts[0] += "\n" + self._fill(f"env_{environment}", fields)
        if history:
            fields["n_past"] = n_past
            fields["history_json"] = "[\n" + ",\n".join(json.dumps(h) for h in history) + "\n]"
            block = self._fill("history", fields)
            if "history_note" in self.parts:
                block += "\n" + self._fill("history_note", fields)
            parts.append(block)
        if "status" in self.parts:
            parts.append(self._fill("status", fields))
        parts.append(self._fill("private", fields))
        keys = "history" if history and variant == "default" else variant
        parts.append(self._format_block(state, player, keys, fields))
        system = self._fill("system", fields)
        if persona:
            system += "\n" + self.persona_text(persona)
        return (Message("system", system), Message("user", "\n\n".join(parts)))


def check_template_overrides(exp: Experiment) -> list[str]:
    """Render every variant once with a real draw, so a bad override fails before any game starts."""
    problems = []
    for key, value in exp.prompts.items():
        if (key in TEXT_KEYS or key.startswith("describe_")) and not isinstance(value, str):
            problems.append(f"prompts.{key}: expected a string")
        if key.startswith("keys_"):
            ok = isinstance(value, list) and all(
                v == "{action}" or (isinstance(v, list) and len(v) == 3 and all(isinstance(x, str) for x in v))
                for v in value)
            if not ok or "{action}" not in value:
                problems.append(f"prompts.{key}: expected a list of [key, type, description] triples that "
                                "includes the string \"{action}\" where the action keys go")
    if problems:
        return problems
    try:
        tpl = Template(exp.game, exp.prompts)
    except TemplateError as exc:  # a game of the user's own without its template file beside it
        return [str(exc)]
    setup = exp.game.setup(exp.params, exp.n_players(), np.random.default_rng(0))
    state = exp.game.initial_state(setup)
    sample_history = [{"run": 1}]
    for env in ("melee", "rational", "self"):
        for variant in ("default", "cot"):
            for hist in (None, sample_history):
                try:
                    tpl.render(state, 0, env, variant, hist, 1)
                except TemplateError as exc:
                    return [str(exc)]
    try:
        _check_round_texts(exp.game, tpl, state)
    except TemplateError as exc:
        return [str(exc)]
    return []


def _check_round_texts(game: Game, tpl: Template, state: Any) -> None:
    """Play one move with the game's random policy and render what a later round shows."""
    if not game.info.rounds or "random" not in game.policies():
        return
    rng = np.random.default_rng(0)
    movers = game.to_move(state)
    actions = {i: game.strategy(state, i, "random", rng=rng) for i in movers}
    after = game.apply(state, actions, rng)
    for seat in movers:
        fields = game.report(state, after, actions, seat)
        if fields is not None:
            tpl.report(fields, after, seat)
    for seat in game.to_move(after):
        for variant in ("default", "cot"):
            tpl.follow_up(after, seat, variant)
            tpl.reask("a sample problem", after, seat, variant)
