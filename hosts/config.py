"""TOML experiment files: parsing, validation with errors that name the file and key, and expansion.

Everything is checked before any game starts: syntax (file, line, column), unknown keys, types, game and
agent names (listing the valid ones), game parameters, prompt-template overrides. Nothing from a config
is ever evaluated or imported by name.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from econarena.agents.llm import LLM_SETTING_KEYS, PROVIDERS, LLMSettings
from econarena.games import GAMES, Game
from econarena.games.base import GameParams
from econarena.hosts.grid import Axis, Cell, GridError, count_cells, iter_cells, parse_grid

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """A problem in a TOML file; the message is meant for the user, not a traceback."""


BASELINES = {
    "rational": "plays the Nash equilibrium for its own private information",
    "random": "uniform over legal actions, reproducible from the seed",
    "scripted": "replays fixed raw replies (responses = [...]): test prompts, parsing and rule breaks",
    "level_k": "level-k reasoning with k (default 1): beauty contest upper/2 x ratio^k; auctions: value",
}


def agent_names() -> list[str]:
    return sorted(BASELINES) + sorted(PROVIDERS)


MAX_INT = 2**63 - 1  # the largest integer TOML can hold: config.toml must be able to write it back
MAX_SEATS = 1000  # players at one table: every decision renders and judges the whole table


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # TOML is typed: "5" or true is not a count


class ExperimentSection(_Strict):
    name: str = Field(min_length=1)
    game: str
    environment: Literal["melee", "rational", "self"] = "melee"
    players_per_game: int = Field(default=5, ge=2, le=1000)
    sessions: int = Field(default=1, ge=1, le=MAX_INT)
    runs: int = Field(default=1, ge=1, le=MAX_INT)
    seed: int = Field(default=0, ge=0, le=MAX_INT)  # numpy seeds are >= 0; TOML integers are 64-bit
    history: Literal["none", "actions", "full"] = "none"
    max_history: int = Field(default=3, ge=1)
    prompt: Literal["default", "cot"] = "default"
    reask: int = Field(default=0, ge=0, le=20)  # ask again after an unusable reply, at most this often
    shuffle_seats: bool = False
    description: str = ""
    models: str | None = None  # alias file for [[players]] alias = "..."; default: models.toml beside the file
    group: Literal["L", "M", "H"] | None = None  # configuration group (low/medium/high stakes), for reports


class PlayerEntry(_Strict):
    """One ``[[players]]`` entry after validation; ``settings`` holds LLM settings or baseline options."""

    agent: str
    label: str
    count: int = 1
    responses: list[str] = Field(default_factory=list)
    k: int = 1
    llm: LLMSettings | None = None

    @property
    def is_llm(self) -> bool:
        return self.agent in PROVIDERS


@dataclass(frozen=True)
class Lineup:
    """One table of players that plays every session: seat -> entry index."""

    name: str
    seats: tuple[int, ...]
    environment: str
    cell: dict[str, Any] | None = None  # the [grid] values of this table's cell, if any

    def __hash__(self) -> int:
        return hash((self.name, self.seats, self.environment))


@dataclass
class Experiment:
    path: Path | None
    experiment: ExperimentSection
    game: Game
    params: GameParams
    players: list[PlayerEntry]
    llm_defaults: dict[str, Any]
    prompts: dict[str, Any]
    raw: dict[str, Any] = field(default_factory=dict)
    axes: tuple[Axis, ...] = ()  # [grid]: one cell per combination of values

    @property
    def name(self) -> str:
        return self.experiment.name

    def lineups(self) -> list[Lineup]:
        """Expand the environment into tables of seats (indices into ``players``)."""
        e = self.experiment
        if e.environment == "melee":
            seats = tuple(i for i, p in enumerate(self.players) for _ in range(p.count))
            return [Lineup("melee", seats, "melee")]
        out = []
        for i, p in enumerate(self.players):
            if e.environment == "rational":
                if p.agent == "rational":
                    continue
                rational = next(j for j, q in enumerate(self.players) if q.agent == "rational")
                out.append(Lineup(p.label, (i,) + (rational,) * (e.players_per_game - 1), "rational"))
            else:
                out.append(Lineup(p.label, (i,) * e.players_per_game, "self"))
        return out

    def cells(self) -> Iterator[Cell]:
        return iter_cells(self.axes)

    def n_cells(self) -> int:
        return count_cells(self.axes)

    def for_cell(self, cell: Cell) -> Experiment:
        """This experiment with one grid cell's values set (itself when there is no grid)."""
        return self if not self.axes else cell_experiment(self, cell)

    def tables(self) -> list[tuple[Lineup, Experiment]]:
        """Every table to play, each with the experiment as its grid cell sets it. With a grid, a table's
        name carries its cell (``melee [ratio=0.5]``), so results of different cells never mix."""
        if not self.axes:
            return [(lineup, self) for lineup in self.lineups()]
        out = []
        for cell in self.cells():
            sub = self.for_cell(cell)
            for lu in sub.lineups():
                out.append((Lineup(f"{lu.name} [{cell.label}]", lu.seats, lu.environment, cell.to_dict()), sub))
        return out

    def total_runs(self) -> int:
        return sum(x.experiment.sessions * x.experiment.runs for _, x in self.tables())

    def n_players(self) -> int:
        return len(self.lineups()[0].seats)


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _pyd_errors(where: str, prefix: str, err: ValidationError) -> list[str]:
    msgs = []
    for e in err.errors():
        key = ".".join(p for p in (prefix, _loc(e["loc"])) if p)
        if e["type"] == "extra_forbidden":
            msgs.append(f"{where}: unknown key '{key}'")
        elif e["type"] == "missing":
            msgs.append(f"{where}: missing key '{key}'")
        else:
            got = e.get("input")
            got_s = "" if isinstance(got, dict) else f" (got {got!r})"
            msg = e["msg"].removeprefix("Value error, ")
            msgs.append(f"{where}: '{key}': {msg}{got_s}")
    return msgs


def read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a TOML file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); TOML files must be UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}") from None


TOP_KEYS = {"experiment", "game", "players", "llm", "prompts", "grid"}


def load_experiment(path: str | Path, *, seed: int | None = None, overrides: dict[str, Any] | None = None,
                    models: str | Path | None = None) -> Experiment:
    """Load one experiment file. ``models`` overrides the alias file (``--models``)."""
    path = Path(path)
    data = read_toml(path)
    data = resolve_aliases(data, str(path), path.parent, models)
    return parse_experiment(data, str(path), path=path, seed=seed, overrides=overrides)


def resolve_aliases(data: dict[str, Any], where: str, base: Path, models: str | Path | None) -> dict[str, Any]:
    """Replace ``alias = "GPT4"`` in [[players]] by that alias's table from a models file.

    The file maps alias -> table of player keys (agent, model, base_url, ...). Keys set on the player
    itself win. The file is the one given (``--models``), else ``experiment.models`` relative to the
    experiment file, else ``models.toml`` beside it.
    """
    players = data.get("players")
    if not isinstance(players, list) or not any(isinstance(p, dict) and "alias" in p for p in players):
        return data
    exp = data.get("experiment") if isinstance(data.get("experiment"), dict) else {}
    if models is not None:
        mpath = Path(models)
    elif isinstance(exp.get("models"), str):
        mpath = base / exp["models"]
    else:
        mpath = base / "models.toml"
    table = read_toml(mpath)
    out = []
    for i, p in enumerate(players):
        if not isinstance(p, dict) or "alias" not in p:
            out.append(p)
            continue
        try:
            entry = follow_alias(table, p["alias"], str(mpath))
        except ConfigError as exc:
            raise ConfigError(f"{where}: players[{i}].alias: {exc}") from None
        merged = {**entry, **{k: v for k, v in p.items() if k != "alias"}}
        merged.setdefault("label", p["alias"])
        out.append(merged)
    return {**data, "players": out}


def follow_alias(table: dict[str, Any], alias: Any, mpath: str) -> dict[str, Any]:
    """The player table an alias stands for; an alias may name another alias, and a loop is refused."""
    chain: list[str] = []
    merged: dict[str, Any] = {}
    while True:
        entry = table.get(alias) if isinstance(alias, str) else None
        if not isinstance(entry, dict):
            known = ", ".join(sorted(k for k, v in table.items() if isinstance(v, dict)))
            raise ConfigError(f"{alias!r} is not defined in {mpath} (known: {known})")
        if alias in chain:
            raise ConfigError(f"alias loop in {mpath}: {' -> '.join([*chain, alias])}")
        chain.append(alias)
        merged = {**{k: v for k, v in entry.items() if k != "alias"}, **merged}
        if "alias" not in entry:
            return merged
        alias = entry["alias"]


def parse_experiment(data: dict[str, Any], where: str, *, path: Path | None = None, seed: int | None = None,
                     overrides: dict[str, Any] | None = None) -> Experiment:
    """Validate a parsed TOML document; collects every problem it can before raising."""
    from econarena.hosts.prompts import PROMPT_KEYS, check_template_overrides

    errors: list[str] = []
    for key in data:
        if key not in TOP_KEYS:
            errors.append(f"{where}: unknown table '{key}' (expected {', '.join(sorted(TOP_KEYS))})")
    if not isinstance(data.get("experiment"), dict):
        raise ConfigError(f"{where}: missing table [experiment]")
    exp_raw = dict(data["experiment"])
    exp_raw.update(overrides or {})
    if seed is not None:
        exp_raw["seed"] = seed
    if "name" not in exp_raw and path is not None:
        exp_raw["name"] = path.stem
    try:
        exp = ExperimentSection(**exp_raw)
    except ValidationError as err:
        raise ConfigError("\n".join(errors + _pyd_errors(where, "experiment", err))) from None
    if exp.game not in GAMES:
        raise ConfigError(f"{where}: experiment.game: unknown game {exp.game!r}; "
                          f"known: {', '.join(sorted(GAMES))}")
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._\-]*", exp.name) or len(exp.name) > 200:
        errors.append(f"{where}: experiment.name {exp.name!r}: a plain file name (letters, digits, '.', '_' "
                      "or '-', not starting with '.' or '-', at most 200 characters): it names the run directory")
    game = GAMES[exp.game]

    game_raw = data.get("game") or {}
    params = None
    try:
        params = game.Params(**game_raw)
    except ValidationError as err:
        errors.extend(_pyd_errors(where, "game", err))
    except TypeError:
        errors.append(f"{where}: [game] must be a table")

    llm_raw = data.get("llm") or {}
    if not isinstance(llm_raw, dict):
        errors.append(f"{where}: [llm] must be a table")
        llm_raw = {}
    try:
        defaults = LLMSettings(**llm_raw)
        if defaults.base_url is not None and (problem := _url_problem(defaults.base_url)):
            errors.append(f"{where}: 'llm.base_url': {problem}")
    except ValidationError as err:
        errors.extend(_pyd_errors(where, "llm", err))

    players_raw = data.get("players")
    players: list[PlayerEntry] = []
    if not isinstance(players_raw, list) or not players_raw:
        errors.append(f"{where}: at least one [[players]] entry is needed")
        players_raw = []
    for i, raw in enumerate(players_raw):
        entry = _parse_player(raw, i, where, exp.environment, llm_raw, errors)
        if entry is not None:
            players.append(entry)

    labels = [p.label for p in players]
    # "A" and "a " would be two rows in a table that readers (and spreadsheets) take for one player
    seen: dict[str, str] = {}
    dup = []
    for x in labels:
        key = label_key(x)
        if key in seen:
            dup.append(repr(x) if seen[key] == x else f"{seen[key]!r} and {x!r}")
        seen.setdefault(key, x)
    if dup:
        errors.append(f"{where}: players: duplicate label(s) {', '.join(dup)} (labels are compared ignoring "
                      "case and surrounding spaces); give each entry its own label")
    if players and len(players) == len(players_raw):
        if exp.environment == "melee":
            total = sum(p.count for p in players)
            if total < 2:
                errors.append(f"{where}: a melee needs at least 2 players in all (counts add up to {total})")
            if total > MAX_SEATS:
                errors.append(f"{where}: a melee seats at most {MAX_SEATS} players (counts add up to {total})")
        elif exp.environment == "rational" and not any(p.agent != "rational" for p in players):
            errors.append(f"{where}: environment 'rational' needs at least one player that is not 'rational'")
        if exp.environment != "melee":
            for i, p in enumerate(players):
                if p.count != 1:
                    errors.append(f"{where}: players[{i}].count: only a melee seats several copies of an "
                                  f"entry; in '{exp.environment}' players_per_game sets the table size")

    if (exp.environment == "rational" and players and not errors
            and not any(p.agent == "rational" for p in players)):
        if "rational" in {label_key(x) for x in labels}:
            errors.append(f"{where}: players: the label 'rational' names the hard-coded rational opponents; "
                          "give that entry another label")
        players.append(PlayerEntry(agent="rational", label="rational"))  # the hard-coded opponents

    prompts = data.get("prompts") or {}
    if not isinstance(prompts, dict):
        errors.append(f"{where}: [prompts] must be a table")
        prompts = {}
    for key in prompts:
        if key not in PROMPT_KEYS and not key.startswith("describe_"):
            errors.append(f"{where}: unknown key 'prompts.{key}' (known: {', '.join(sorted(PROMPT_KEYS))})")
    if errors:
        raise ConfigError("\n".join(errors))
    assert params is not None
    try:
        axes = parse_grid(data.get("grid"))
    except GridError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    experiment = Experiment(path, exp, game, params, players, dict(llm_raw), dict(prompts), raw=data, axes=axes)
    _check_cells(experiment, where)
    _check_draws(experiment, where)  # first: the template check below draws a configuration too
    problems = check_template_overrides(experiment)
    if problems:
        raise ConfigError("\n".join(f"{where}: {p}" for p in problems))
    return experiment


def _url_problem(url: str) -> str | None:
    """Why a base_url cannot be used (never echoing it: it may hold a key), or None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "expected an http:// or https:// URL with a host"
    return None


def label_key(label: str) -> str:
    """What makes two labels the same player: case and surrounding spaces do not count."""
    return label.strip().casefold()


def _check_draws(exp: Experiment, where: str) -> None:
    """Draw one configuration now, so impossible parameters fail before any game starts."""
    import numpy as np

    try:
        exp.game.setup(exp.params, exp.n_players(), np.random.default_rng(0))
    except (ValueError, OverflowError) as exc:  # numpy: a uniform range too wide for a double
        raise ConfigError(f"{where}: [game]: {exc}") from None


def _parse_player(raw: Any, i: int, where: str, environment: str, llm_defaults: dict[str, Any],
                  errors: list[str]) -> PlayerEntry | None:
    key = f"players[{i}]"
    if not isinstance(raw, dict):
        errors.append(f"{where}: {key} must be a table")
        return None
    agent = raw.get("agent")
    if not isinstance(agent, str):
        errors.append(f"{where}: {key}.agent is missing; choose one of {', '.join(agent_names())}")
        return None
    if agent not in BASELINES and agent not in PROVIDERS:
        errors.append(f"{where}: {key}.agent: unknown agent {agent!r}; known: {', '.join(agent_names())}")
        return None
    common = {"agent", "label", "count"}
    allowed = common | ({"responses"} if agent == "scripted" else {"k"} if agent == "level_k"
                        else set(LLM_SETTING_KEYS) if agent in PROVIDERS else set())
    bad = [k for k in raw if k not in allowed]
    for k in bad:
        errors.append(f"{where}: unknown key '{key}.{k}' for agent '{agent}'"
                      f" (allowed: {', '.join(sorted(allowed))})")
    if bad:
        return None
    count = raw.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SEATS:
        errors.append(f"{where}: '{key}.count': expected an integer from 1 to {MAX_SEATS} (got {count!r})")
        return None
    llm = None
    if agent in PROVIDERS:
        settings = {k: v for k, v in raw.items() if k in LLM_SETTING_KEYS}
        try:
            llm = LLMSettings(**{**llm_defaults, **settings})
        except ValidationError as err:
            errors.extend(_pyd_errors(where, key, err))
            return None
    label = raw.get("label")
    if label is None:
        label = agent if llm is None or not llm.model else f"{agent}/{llm.model}"
    if not isinstance(label, str) or not label.strip():
        errors.append(f"{where}: '{key}.label': expected a non-empty string")
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in label) or len(label) > 200:
        errors.append(f"{where}: '{key}.label': {label[:40]!r}: at most 200 characters and no control characters "
                      "(tabs, newlines): a label is a row and a column name in every table")
        return None
    if llm is not None and llm.base_url is not None and (problem := _url_problem(llm.base_url)):
        errors.append(f"{where}: '{key}.base_url': {problem}")
        return None
    responses = raw.get("responses", [])
    if agent == "scripted" and (not isinstance(responses, list) or not responses
                                or not all(isinstance(r, str) for r in responses)):
        errors.append(f"{where}: '{key}.responses': expected a non-empty list of strings "
                      "(the raw replies, e.g. ['{\"answer\": 10}'])")
        return None
    k = raw.get("k", 1)
    if agent == "level_k" and (isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 1000):
        errors.append(f"{where}: '{key}.k': expected an integer from 0 to 1000 (got {k!r})")
        return None
    return PlayerEntry(agent=agent, label=label, count=count, responses=list(responses), k=k, llm=llm)


def is_alias_file(data: dict[str, Any]) -> bool:
    """A models file: no [experiment], and every top-level entry is a table naming an agent."""
    return ("experiment" not in data and bool(data)
            and all(isinstance(v, dict) and ("agent" in v or "alias" in v) for v in data.values()))


def validate_alias_file(data: dict[str, Any], where: str) -> list[str]:
    """Check every alias as a player entry would be checked, so a typo fails at validate time."""
    errors: list[str] = []
    for alias, entry in data.items():
        try:
            entry = follow_alias(data, alias, where)
        except ConfigError as exc:
            errors.append(f"{where} [{alias}]: {exc}")
            continue
        _parse_player({**entry, "label": entry.get("label", alias)}, 0, f"{where} [{alias}]", "melee", {},
                      errors)
    return [e.replace("players[0]", alias) for e in errors]


# ---- writing the resolved experiment back out (config.toml in the run directory) ----

def resolved_data(exp: Experiment) -> dict[str, Any]:
    """The experiment with every default filled in, as TOML data. Never a key: only variable names, and
    a base_url with its credentials masked."""
    from econarena.agents.calls import public_url

    def masked(llm: dict[str, Any]) -> dict[str, Any]:
        return {k: public_url(v) if k == "base_url" and isinstance(v, str) else v for k, v in llm.items()}

    doc: dict[str, Any] = {"experiment": exp.experiment.model_dump(exclude_none=True),
                           "game": exp.params.model_dump()}
    if exp.llm_defaults:
        doc["llm"] = masked(exp.llm_defaults)
    if exp.prompts:
        doc["prompts"] = dict(exp.prompts)
    players = []
    for p in exp.players:
        entry: dict[str, Any] = {"agent": p.agent, "label": p.label, "count": p.count}
        if p.agent == "scripted":
            entry["responses"] = list(p.responses)
        if p.agent == "level_k":
            entry["k"] = p.k
        if p.llm is not None:
            entry.update(masked(p.llm.model_dump(exclude_none=True)))
        players.append(entry)
    doc["players"] = players
    if exp.axes:
        grid: dict[str, dict[str, Any]] = {}
        for a in exp.axes:
            values = [public_url(v) if a.key == "base_url" and isinstance(v, str) else v for v in a.values]
            grid.setdefault(a.section, {})[a.key] = values
        doc["grid"] = grid
    return doc


def resolved_toml(exp: Experiment) -> str:
    """config.toml: :func:`resolved_data` written by tomli-w, which escapes every control character (a
    hand-written writer let a carriage return or a NUL make the file unreadable for report and suite)."""
    import tomli_w

    return "# Resolved by econarena: every default filled in.\n" + tomli_w.dumps(resolved_data(exp))


# ---- [grid] cells ----

def cell_experiment(exp: Experiment, cell: Cell) -> Experiment:
    """Apply one cell's values; raises ValidationError for a value its table refuses."""
    import dataclasses

    section = ExperimentSection(**{**exp.experiment.model_dump(), **cell.section("experiment")})
    game_raw = exp.raw.get("game") or {}
    params = exp.game.Params(**{**game_raw, **cell.section("game")}) if cell.section("game") else exp.params
    llm_cell = cell.section("llm")
    players = exp.players
    if llm_cell:
        players = [p if p.llm is None else p.model_copy(update={"llm": LLMSettings(**{
            **p.llm.model_dump(exclude_unset=True), **llm_cell})}) for p in exp.players]
    return dataclasses.replace(exp, experiment=section, params=params, players=players,
                               llm_defaults={**exp.llm_defaults, **llm_cell}, axes=())


def _check_cells(exp: Experiment, where: str) -> None:
    """Every cell's values are checked by their own tables now, so cell 900 cannot fail mid-run."""
    if not exp.axes:
        return
    errors: list[str] = []
    for cell in exp.cells():
        try:
            sub = cell_experiment(exp, cell)
        except ValidationError as err:
            sections = {path.split(".", 1)[0] for path, _ in cell.values}
            title = err.title  # the pydantic model that refused: ExperimentSection, a Params or LLMSettings
            prefix = ("grid.experiment" if title == "ExperimentSection" else "grid.llm" if title == "LLMSettings"
                      else "grid.game" if "game" in sections else "grid")
            errors += [f"{m} in grid cell {cell.index} ({cell.label})"
                       for m in _pyd_errors(where, prefix, err)]
        else:
            if cell.section("game"):
                try:
                    _check_draws(sub, where)
                except ConfigError as exc:
                    errors.append(f"{exc} in grid cell {cell.index} ({cell.label})")
        if len(errors) >= 10:
            break
    if errors:
        raise ConfigError("\n".join(errors))
