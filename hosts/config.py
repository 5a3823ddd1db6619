"""TOML experiment files: parsing and validation, with errors that name the file and key.

Everything is checked before any game starts: syntax (file, line, column), unknown keys, types, game and
agent names (listing the valid ones), game parameters, prompt-template overrides. Nothing from a config
is ever evaluated; the one thing imported by name is a game or player path (``game =
"my_games.duopoly:Duopoly"``, ``games/plugins.py``), and only from a folder the user named with ``--trust
DIR``: an experiment's own folder, the current folder or a run directory's config.toml are never trusted.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..agents import plugins as agent_plugins
from ..agents.baselines import POLICY_AGENTS
from ..agents.llm import LLM_SETTING_KEYS, PROVIDERS, LLMSettings
from ..formats.files import TOML_UTF8, FileRefused, read_config_text
from ..games import GAMES, plugins
from ..games.text import is_control, name_problem
from ..games.trivial import TRIVIAL_POLICIES
from .experiment import (
    AGENT_KEYS,
    BASELINES,
    MAX_INT,
    MAX_LLM_CALLS,
    MAX_PERSONA,
    MAX_SEATS,
    PERSONAS,
    PLAYER_KEYS,
    Experiment,
    ExperimentSection,
    Lineup,
    PlayerEntry,
    SteerSection,
    TournamentSection,
    agent_names,
    cell_experiment,
    llm_call_bound,
)
from .grid import GridError, parse_grid
from .resolved import resolved_data, resolved_toml

__all__ = [
    "BASELINES", "MAX_INT", "MAX_SEATS", "ConfigError", "Experiment", "ExperimentSection", "Lineup",
    "PlayerEntry", "agent_names", "cell_experiment", "is_alias_file", "load_experiment", "parse_experiment",
    "read_toml", "resolved_data", "resolved_toml", "validate_alias_file",
]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """A problem in a TOML file; the message is meant for the user, not a traceback."""


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# the validation library's names of a union's branches in an error's location (``stop.list[str][1]``):
# the user wrote none of them, so an error names the key and the value given instead
_BRANCH = re.compile(r"(?:str|int|float|bool|none|[a-z][a-z-]*\[.*\])")
_BRANCH_NAMES = {"str": "a string", "list[str]": "a list of strings", "int": "an integer", "float": "a number",
                 "bool": "true or false", "list[int]": "a list of integers", "list[float]": "a list of numbers"}
SECRET_KEYS = ("base_url", "api_key_env")  # values never echoed: a base_url may hold a key, api_key_env may be one


def _branch_at(loc: tuple[Any, ...]) -> int | None:
    return next((i for i, p in enumerate(loc) if isinstance(p, str) and _BRANCH.fullmatch(p)), None)


def _union_errors(where: str, prefix: str, errors: list[Any]) -> list[str]:
    """One message per key of a union type (``str | list[str]``): what it expects and the value given,
    with the first bad entry of a list by its number."""
    groups: dict[tuple[Any, ...], list[tuple[str, tuple[Any, ...], Any]]] = {}
    for e in errors:
        i = _branch_at(e["loc"])
        assert i is not None
        groups.setdefault(tuple(e["loc"][:i]), []).append((e["loc"][i], tuple(e["loc"][i + 1:]), e))
    msgs = []
    for base, items in groups.items():
        key = ".".join(p for p in (prefix, _loc(base)) if p)
        secret = any(p in SECRET_KEYS for p in base)
        kinds = " or ".join(dict.fromkeys(_BRANCH_NAMES.get(t, t) for t, _, _ in items))
        whole = next((e.get("input") for _, rest, e in items if not rest), None)
        entry = next(((rest, e) for _, rest, e in items if rest and isinstance(rest[0], int)), None)
        detail = ""
        if entry is not None:
            rest, e = entry
            detail = f"; entry {rest[0] + 1}: {e['msg'].removeprefix('Value error, ')}"
            if not secret:
                detail += f" (got {e.get('input')!r})"
        got = "" if secret or whole is None or isinstance(whole, dict) else f" (got {whole!r})"
        msgs.append(f"{where}: '{key}': expected {kinds}{detail}{got}")
    return msgs


def _pyd_errors(where: str, prefix: str, err: ValidationError) -> list[str]:
    msgs = []
    errors = err.errors()
    unions = [e for e in errors if _branch_at(e["loc"]) is not None and e["type"] not in ("extra_forbidden", "missing")]
    if unions:
        msgs += _union_errors(where, prefix, unions)
    for e in errors:
        if any(e is u for u in unions):
            continue
        key = ".".join(p for p in (prefix, _loc(e["loc"])) if p)
        if e["type"] == "extra_forbidden":
            msgs.append(f"{where}: unknown key '{key}'")
        elif e["type"] == "missing":
            msgs.append(f"{where}: missing key '{key}'")
        else:
            got = e.get("input")
            # a base_url may hold a key (user:pass@, ?key=): its value is never echoed, nor a list holding it
            secret = any(p in SECRET_KEYS for p in (*key.split("."), *e["loc"]))
            got_s = "" if isinstance(got, dict) or secret else f" (got {got!r})"
            msg = e["msg"].removeprefix("Value error, ")
            msgs.append(f"{where}: '{key}': {msg}{got_s}")
    return msgs


def read_toml(path: Path) -> dict[str, Any]:
    try:
        text = read_config_text(path, "a TOML file", TOML_UTF8)
    except FileRefused as exc:
        raise ConfigError(str(exc)) from None
    if text.startswith("\ufeff"):
        raise ConfigError(f"{path}: starts with a byte order mark (U+FEFF: the editor saved it as 'UTF-8 with BOM'), "
                          "which TOML does not allow; save it as plain UTF-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}") from None


TOP_KEYS = {"experiment", "game", "players", "llm", "prompts", "grid", "steer", "judge", "tournament"}


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
    tour = data.get("tournament")
    if isinstance(tour, dict) and isinstance(tour.get("entrants"), list) and any(
            isinstance(p, dict) and "alias" in p for p in tour["entrants"]):
        # a tournament's entrants take aliases as players do: resolved as if they were [[players]]
        try:
            inner = resolve_aliases({k: v for k, v in data.items() if k not in ("players", "judge", "tournament")}
                                    | {"players": tour["entrants"]}, where, base, models)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(f"{where}: players[", f"{where}: tournament.entrants[", 1)) from None
        data = {**data, "tournament": {**tour, "entrants": inner["players"]}}
    players = data.get("players")
    judge = data.get("judge")
    judge_alias = isinstance(judge, dict) and "alias" in judge
    if not judge_alias and (not isinstance(players, list)
                            or not any(isinstance(p, dict) and "alias" in p for p in players)):
        return data
    exp = data["experiment"] if isinstance(data.get("experiment"), dict) else {}
    if models is not None:
        mpath = Path(models)
    elif isinstance(exp.get("models"), str):
        mpath = base / exp["models"]
    else:
        mpath = base / "models.toml"
    table = read_toml(mpath)
    if judge_alias and isinstance(judge, dict):  # (the second test narrows the type only)
        try:
            entry = follow_alias(table, judge["alias"], str(mpath))
        except ConfigError as exc:
            raise ConfigError(f"{where}: judge.alias: {exc}") from None
        data = {**data, "judge": {**entry, **{k: v for k, v in judge.items() if k != "alias"}}}
        data["judge"].setdefault("label", judge["alias"])
    if not isinstance(players, list):
        return data
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
    from .prompts import check_template_overrides

    errors: list[str] = []
    exp = _experiment_section(data, where, errors, path, seed, overrides)
    game = GAMES[exp.game]
    params = _game_params(data, game, where, errors)
    llm_raw = _llm_defaults(data, where, errors)
    players, players_raw, tournament, prefix = _players(data, where, exp, game, llm_raw, errors)
    _check_seats(players, players_raw, tournament, exp, where, prefix, errors)
    errors += _policy_problems(where, game, players, exp.environment, prefix)
    if (exp.environment == "rational" and players and not errors
            and not any(p.agent == "rational" for p in players)):
        if "rational" in {label_key(p.label) for p in players}:
            errors.append(f"{where}: players: the label 'rational' names the hard-coded rational opponents; "
                          "give that entry another label")
        players.append(PlayerEntry(agent="rational", label="rational"))  # the hard-coded opponents
    prompts = _prompts(data, where, errors)
    if errors:
        raise ConfigError("\n".join(errors))
    assert params is not None
    try:
        axes = parse_grid(data.get("grid"))
    except GridError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    steer, judge = _parse_steer_judge(data, where, game, params, players, exp, llm_raw, axes)
    experiment = Experiment(path, exp, game, params, players, dict(llm_raw), dict(prompts), raw=data, axes=axes,
                            steer=steer, judge=judge, tournament=tournament)
    _check_tournament(experiment, where)
    _check_cells(experiment, where)
    _check_history(experiment, where)
    _check_judge(experiment, where)
    _check_draws(experiment, where)  # first: the template check below draws a configuration too
    _check_llm_budget(experiment, where)
    problems = check_template_overrides(experiment)
    if problems:
        raise ConfigError("\n".join(f"{where}: {p}" for p in problems))
    return experiment


def _experiment_section(data: dict[str, Any], where: str, errors: list[str], path: Path | None, seed: int | None,
                        overrides: dict[str, Any] | None) -> ExperimentSection:
    """The [experiment] table with the command line's overrides, its game found; ConfigError (with the
    problems so far) when there is no experiment or no such game."""
    for key in data:
        if key not in TOP_KEYS:
            errors.append(f"{where}: unknown table '{key}' (expected {', '.join(sorted(TOP_KEYS))})")
    if not isinstance(data.get("experiment"), dict):
        if is_alias_file(data):  # `run models.toml`: the aliases file beside the experiments
            raise ConfigError(f"{where}: is a models file (aliases for [[players]] alias = ...), not an "
                              "experiment: run the experiment files beside it")
        raise ConfigError("\n".join(errors + [f"{where}: missing table [experiment]"]))
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
        if plugins.is_spec(exp.game):  # the user's own game (games/plugins.py): say why it was not found
            try:
                plugins.resolve(GAMES, exp.game)
            except plugins.PluginError as exc:
                raise ConfigError("\n".join(errors + [f"{where}: experiment.game: {exc}"])) from None
        else:
            raise ConfigError("\n".join(errors + [f"{where}: experiment.game: unknown game {exp.game!r}; "
                                                   f"known: {', '.join(sorted(GAMES))}, or a path "
                                                   "'package.module:Class' to a game of your own"]))
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._\-]*", exp.name) or len(exp.name) > 200:
        errors.append(f"{where}: experiment.name {exp.name!r}: a plain file name (letters, digits, '.', '_' "
                      "or '-', not starting with '.' or '-', at most 200 characters): it names the run directory")
    return exp


def _game_params(data: dict[str, Any], game: Any, where: str, errors: list[str]) -> Any:
    """The [game] table as the game's parameters; None (and the problems in ``errors``) when it is not."""
    game_raw = data.get("game") or {}
    params = None
    try:
        params = game.Params(**game_raw)
    except ValidationError as err:
        errors.extend(_pyd_errors(where, "game", err))
    except TypeError:
        errors.append(f"{where}: [game] must be a table")

    return params


def _llm_defaults(data: dict[str, Any], where: str, errors: list[str]) -> dict[str, Any]:
    """The [llm] table (every player's defaults), checked; {} when it is no table."""
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

    return llm_raw


def _players(data: dict[str, Any], where: str, exp: ExperimentSection, game: Any, llm_raw: dict[str, Any],
             errors: list[str]) -> tuple[list[PlayerEntry], list[Any], Any, str]:
    """The [[players]] (or a tournament's entrants) parsed: the entries, the raw tables, the tournament and
    the key they were read under."""
    players_raw = data.get("players")
    players: list[PlayerEntry] = []
    tournament = None
    prefix = "players"
    if "tournament" in data:
        tournament, players_raw = _parse_tournament(data, where, exp, game, errors)
        prefix = "tournament.entrants"
    elif not isinstance(players_raw, list) or not players_raw:
        errors.append(f"{where}: at least one [[players]] entry is needed (or a [tournament] with its "
                      "[[tournament.entrants]])")
        players_raw = []
    for i, raw in enumerate(players_raw):
        entry = _parse_player(raw, i, where, exp.environment, llm_raw, errors, prefix)
        if entry is not None:
            players.append(entry)

    return players, players_raw, tournament, prefix


def _check_seats(players: list[PlayerEntry], players_raw: list[Any], tournament: Any, exp: ExperimentSection,
                 where: str, prefix: str, errors: list[str]) -> None:
    """Labels distinct (ignoring case and surrounding spaces) and the seat counts the environment allows."""
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
        errors.append(f"{where}: {prefix}: duplicate label(s) {', '.join(dup)} (labels are compared ignoring "
                      "case and surrounding spaces); give each entry its own label")
    if tournament is not None:
        pass  # its seats and lineups are checked in _parse_tournament and _check_tournament
    elif players and len(players) == len(players_raw):
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



def _prompts(data: dict[str, Any], where: str, errors: list[str]) -> dict[str, Any]:
    """The [prompts] table, its keys checked; {} when it is no table."""
    from .prompts import PROMPT_KEYS

    prompts = data.get("prompts") or {}
    if not isinstance(prompts, dict):
        errors.append(f"{where}: [prompts] must be a table")
        prompts = {}
    for key in prompts:
        if key not in PROMPT_KEYS and not key.startswith("describe_"):
            errors.append(f"{where}: unknown key 'prompts.{key}' (known: {', '.join(sorted(PROMPT_KEYS))})")
    return prompts


def _parse_steer_judge(data: dict[str, Any], where: str, game: Any, params: Any, players: list[PlayerEntry],
                       exp: ExperimentSection, llm_raw: dict[str, Any], axes: Any) -> tuple[Any, Any]:
    """``[steer]`` and ``[judge]``: checked against the game, the seats and each other."""
    errors: list[str] = []
    judge = None
    raw_judge = data.get("judge")
    if raw_judge is not None:
        if not isinstance(raw_judge, dict):
            raise ConfigError(f"{where}: [judge] must be a table of player keys (agent, model, ...)")
        judge = _parse_player({**raw_judge, "label": raw_judge.get("label", "judge")}, 0, where, "melee",
                              llm_raw, errors)
        errors = [e.replace("players[0]", "judge") for e in errors]
        if judge is not None and judge.agent not in PROVIDERS and judge.agent != "scripted":
            errors.append(f"{where}: judge.agent: a judge reads a dialogue and answers in words: use a model "
                          f"provider ({', '.join(sorted(PROVIDERS))}) or 'scripted' (got {judge.agent!r})")
    if game.needs_judge(params) and judge is None and not axes:  # a [grid]: each cell is checked
        errors.append(_NO_JUDGE.format(where=where, game=game.name))
    steer = None
    raw = data.get("steer")
    if raw is not None:
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: [steer] must be a table")
        from ..games.steering.cfr import SpaceError, action_space  # only a [steer] file needs the family

        try:
            steer = SteerSection(**raw)
        except ValidationError as err:
            raise ConfigError("\n".join(errors + _pyd_errors(where, "steer", err))) from None
        try:
            n_actions = len(action_space(game, steer.actions, params))
        except SpaceError as exc:
            errors.append(f"{where}: steer.actions: {exc}")
        else:
            work = steer.iterations * n_actions * steer.samples
            if work > MAX_CFR_WORK:  # about a microsecond per leaf and iteration on this machine
                errors.append(f"{where}: steer.iterations x actions x samples = {steer.iterations} x {n_actions} x "
                              f"{steer.samples} = {work:,}, more than {MAX_CFR_WORK:,} (minutes of CFR per game); "
                              "use fewer iterations, actions or samples (the paper: 100 x 25 x 2)")
        n_seats = exp.players_per_game if exp.environment != "melee" else sum(p.count for p in players)
        if game.info.n_players is not None:
            n_seats = game.info.n_players
        if steer.seat >= n_seats:
            errors.append(f"{where}: steer.seat: {steer.seat} is not a seat of this {n_seats}-player game "
                          f"(seats 0 to {n_seats - 1})")
        most, _ = game.max_moves(params, n_seats)  # an upper bound: a turn at or past it never comes
        if steer.turn >= most:
            errors.append(f"{where}: steer.turn: {steer.turn} is beyond the game: in {game.name} with these "
                          f"parameters a seat decides at most {most} time(s) per game (turn 0 to {most - 1}), so "
                          "the steered decision would never come and nothing would be steered")
        if game.info.moves != "sequential":
            errors.append(f"{where}: [steer]: {game.name} is played in simultaneous moves; steering branches a "
                          "sequential game after its unsteered opening (fruit_trade, bargaining, ...)")
        points = -(-steer.iterations // steer.every)
        if points > MAX_LOGGED_ITERATIONS:  # each point is a strategy in the game's ONE steering.jsonl line
            errors.append(f"{where}: steer.every: {steer.every} with steer.iterations = {steer.iterations} logs "
                          f"{points} points per game; at most {MAX_LOGGED_ITERATIONS} (a larger every)")
        if steer.report_at > steer.iterations:
            errors.append(f"{where}: steer.report_at: {steer.report_at} is beyond steer.iterations "
                          f"({steer.iterations})")
        if axes:
            errors.append(f"{where}: [steer] and [grid] cannot be combined: one steering experiment per file")
        if exp.runs != 1:
            errors.append(f"{where}: experiment.runs: a steering experiment plays each game once per action and "
                          "sample (steer.samples); set sessions for the number of games, and leave runs at 1")
    if errors:
        raise ConfigError("\n".join(errors))
    return steer, judge


def _check_llm_budget(exp: Experiment, where: str) -> None:
    """Refuse an experiment whose LLM calls could exceed what any budget allows (``MAX_LLM_CALLS``, or the
    file's own ``experiment.max_llm_calls``): a round limit typed as 10**9 is a typo found here, not on the
    invoice. The bound counts every decision of every run at the game's round limit, re-asks included."""
    bounds = llm_call_bound(exp)
    total = sum(bounds.values())
    own = exp.experiment.max_llm_calls
    limit = own if own is not None else MAX_LLM_CALLS
    if total <= limit:
        return
    worst = ", ".join(f"{label}: {n:,}" for label, n in sorted(bounds.items(), key=lambda kv: -kv[1])[:3])
    raise ConfigError(
        f"{where}: the LLM players could make up to {total:,} calls ({worst}), more than "
        + (f"experiment.max_llm_calls = {limit:,}" if own is not None else f"the limit of {limit:,} per experiment")
        + "; lower sessions, runs, reask or the game's round limit (for an ascending auction: max_rounds, or "
        "a larger increment), or, if you mean it, raise experiment.max_llm_calls")


def _policy_problems(where: str, game: Any, players: list[PlayerEntry], environment: str,
                     prefix: str = "players") -> list[str]:
    """A baseline the game has no rule for is a configuration error, found before anything runs (it used
    to fail every decision at run time, reported as API errors)."""
    offered = [k for k in game.policies() if k in POLICY_AGENTS]
    known = ", ".join(offered) or "none"
    own = [k for k in game.policies() if k not in POLICY_AGENTS] + list(TRIVIAL_POLICIES)  # every game's
    out = []
    for i, p in enumerate(players):
        if p.agent in POLICY_AGENTS and p.agent not in offered:
            out.append(f"{where}: {prefix}[{i}].agent: {game.name} has no {p.agent!r} rule; its baselines are "
                       f"{known} (scripted and human seats play every game)")
        if p.agent == "policy" and p.policy not in own:
            hint = (f"use agent = {p.policy!r}" if p.policy in offered else
                    f"its own policies are {', '.join(own)}" if own else f"{game.name} declares no policy of its own")
            out.append(f"{where}: {prefix}[{i}].policy: {game.name} has no policy {p.policy!r}; {hint}")
    if environment == "rational" and "rational" not in offered:
        out.append(f"{where}: experiment.environment: 'rational' seats rational opponents, but {game.name} has no "
                   f"rational baseline (its baselines: {known})")
    return out


_NO_JUDGE = ("{where}: this {game} setting takes its payoffs from a judge model: add a [judge] table (agent, "
             "model, ... like a player), or use the game's structured payoffs")
MAX_LOGGED_ITERATIONS = 1000  # CFR metrics points per steered game (the paper logs 20)
MAX_CFR_WORK = 10**8  # iterations x actions x samples of one game's CFR: about 100 s on a 2-core machine


def _check_history(exp: Experiment, where: str) -> None:
    """``history = "full"`` shows every seat's payoff (and private value) of the session's earlier runs, whose
    draw is the same: refused where the game's prompt tells the players they do not know what that shows
    (``Game.hidden_from_history``). A researcher asking for both gets a prompt that contradicts itself; with
    ``history = "actions"`` the earlier runs' moves are shown and nothing hidden is."""
    if exp.experiment.history != "full" and not any(a.path == "experiment.history" for a in exp.axes):
        return
    subs = [(None, exp)] if not exp.axes else ((c, exp.for_cell(c)) for c in exp.cells())
    errors = []
    for cell, sub in subs:
        if sub.experiment.history != "full":
            continue
        hidden = exp.game.hidden_from_history(sub.params)
        if hidden:
            at = f" in grid cell {cell.index} ({cell.label})" if cell is not None else ""
            errors.append(f"{where}: experiment.history = \"full\" shows every player's payoffs of earlier runs, but "
                          f"{hidden}{at}: the history would reveal it; use history = \"actions\" (the earlier "
                          "runs' moves only)")
            if len(errors) >= 10:
                break
    if errors:
        raise ConfigError("\n".join(errors))


def _check_judge(exp: Experiment, where: str) -> None:
    """A [judge] that no setting asks for is refused: it would never be called, and whoever added it
    believes the payoffs are judged. (Grid cells that need a judge are checked in ``_check_cells``.)"""
    if exp.judge is None:
        return
    cells = [exp.params] if not exp.axes else [exp.for_cell(c).params for c in exp.cells()]
    if not any(exp.game.needs_judge(p) for p in cells):
        raise ConfigError(f"{where}: [judge] is never asked: {exp.game.name} takes its payoffs from a judge "
                          "only in settings that say so (fruit_trade: payoff = \"llm\"); set that, or remove "
                          "the [judge] table")


_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _key_problem(agent: str, llm: LLMSettings, raw: dict[str, Any], where: str) -> str | None:
    """Why a player's settings would put a key where it is written down, never echoing it: ``api_key_env``
    that is no variable name (a key typed in its place was printed in the run's error), or a value of the
    player's table (a model name, a label, a system prompt) that holds the key its variable holds."""
    from ..agents.keys import key_value

    if llm.api_key_env is not None and not _VARIABLE.fullmatch(llm.api_key_env):
        return (f"{where}.api_key_env': expected the name of an environment variable that holds the key (letters, "
                "digits and _, e.g. \"MY_PROXY_KEY\"); what was given is not shown, as it may be a key itself")
    secret = key_value(agent, llm.api_key_env)
    if not secret or len(secret) < 8:
        return None
    for name, value in {**llm.model_dump(exclude_none=True), **raw}.items():
        if name != "base_url" and isinstance(value, str) and secret in value:
            return (f"{where}.{name}': holds the value of the player's API key; a key is never written in a config "
                    "(it would reach every file of the run): name its variable in api_key_env")
    return None


def _url_problem(url: str | list[str]) -> str | None:
    """Why a base_url (or a list of them: several endpoints) cannot be used (never echoing it: it may hold
    a key), or None."""
    from urllib.parse import urlsplit

    if isinstance(url, list):
        if not url:
            return "expected a URL or a non-empty list of URLs (several endpoints of one model)"
        for i, u in enumerate(url):
            if (problem := _url_problem(u)) is not None:
                return f"entry {i + 1}: {problem}"
        if len(set(url)) < len(url):
            return "the same URL is listed twice"
        return None

    bad = next((i for i, c in enumerate(url) if c.isspace() or is_control(c)), None)
    if bad is not None:  # urlsplit drops CR, LF and tabs in silence; the SDK sends them and every call fails
        return (f"holds a space or a control character (U+{ord(url[bad]):04X}, a CR or LF from a pasted line?) at "
                f"character {bad}: no URL holds one (the value is not shown: it may hold a key)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "expected an http:// or https:// URL with a host"
    return None


def _parse_tournament(data: dict[str, Any], where: str, exp: ExperimentSection, game: Any,
                      errors: list[str]) -> tuple[TournamentSection | None, list[Any]]:
    """``[tournament]``: its keys, and its entrants for the player parser. Refuses what a tournament cannot
    mean: [[players]] beside it (which would seat whom?), an environment other than melee (the design sets the
    tables), shuffled seats (the design already rotates them), a count (an entrant is one seat of a lineup)."""
    raw = data["tournament"]
    if not isinstance(raw, dict):
        errors.append(f"{where}: [tournament] must be a table")
        return None, []
    if "players" in data:
        errors.append(f"{where}: [[players]] and [tournament] together: a tournament seats its "
                      "[[tournament.entrants]]; move the players there")
    if exp.environment != "melee":
        errors.append(f"{where}: experiment.environment = {exp.environment!r} with a [tournament]: the "
                      "tournament's design sets the tables; remove experiment.environment")
    if exp.shuffle_seats:
        errors.append(f"{where}: experiment.shuffle_seats with a [tournament]: the design already seats every "
                      "entrant in every seat; remove shuffle_seats")
    entrants = raw.get("entrants")
    if not isinstance(entrants, list) or len(entrants) < 2:
        errors.append(f"{where}: tournament.entrants: at least 2 [[tournament.entrants]] tables are needed "
                      f"(got {len(entrants) if isinstance(entrants, list) else repr(entrants)})")
        entrants = entrants if isinstance(entrants, list) else []
    for i, e in enumerate(entrants):
        if isinstance(e, dict) and "count" in e:
            errors.append(f"{where}: tournament.entrants[{i}].count: an entrant sits once per lineup; "
                          "use self_play = true for tables of copies")
    entrants = [{k: v for k, v in e.items() if k != "count"} if isinstance(e, dict) else e for e in entrants]
    try:
        section = TournamentSection(**{k: v for k, v in raw.items() if k != "entrants"})
    except ValidationError as err:
        errors.extend(_pyd_errors(where, "tournament", err))
        return None, entrants
    seats = section.seats if section.seats is not None else game.info.n_players
    if seats is None:
        errors.append(f"{where}: tournament.seats: {game.name} plays at any table size; say how many seats "
                      "each lineup has (seats = 2, ...)")
        return None, entrants
    if game.info.n_players is not None and seats != game.info.n_players:
        errors.append(f"{where}: tournament.seats: {game.name} is a {game.info.n_players}-player game "
                      f"(got seats = {seats})")
    n = len(entrants)
    if section.design == "balanced":
        if section.lineups is None:
            errors.append(f"{where}: tournament.lineups: the balanced design needs the number of lineups "
                          f"(a multiple of the {n} entrants)")
        elif n and section.lineups % n:
            errors.append(f"{where}: tournament.lineups: {section.lineups} is not a multiple of the {n} entrants "
                          "(each must sit equally often in every seat); use "
                          f"{max(n, section.lineups // n * n)} or {(section.lineups // n + 1) * n}")
    elif section.lineups is not None:
        errors.append(f"{where}: tournament.lineups: only the balanced design takes a number of lineups "
                      "(round_robin plays every one)")
    if n >= 2 and seats > n and not section.self_play:
        errors.append(f"{where}: tournament.seats: {seats} seats need at least {seats} entrants for lineups "
                      f"of distinct entrants (got {n})")
    elif n >= 2 and seats > n:
        errors.append(f"{where}: tournament.seats: {seats} seats need at least {seats} entrants: self_play adds "
                      "tables of copies, but the design still needs lineups of distinct entrants "
                      f"(got {n})")
    return section.model_copy(update={"seats": seats}), entrants


MAX_TOURNAMENT_LINEUPS = 100_000  # tables of one tournament (per grid cell): each is a lineup of every session


def _check_tournament(exp: Experiment, where: str) -> None:
    """The design's lineups exist, are not too many, and have names no two share (a lineup's name keys its
    runs on resume)."""
    t = exp.tournament
    if t is None:
        return
    import math

    assert t.seats is not None
    n = len(exp.players)
    count = math.comb(n, t.seats) * t.seats if t.design == "round_robin" else t.lineups or 0
    if count + (n if t.self_play else 0) > MAX_TOURNAMENT_LINEUPS:
        raise ConfigError(f"{where}: [tournament]: the {t.design} design of {n} entrants in {t.seats} seats has "
                          f"{count:,} lineups, more than {MAX_TOURNAMENT_LINEUPS:,}; use design = \"balanced\" "
                          "with fewer lineups")
    names = [lu.name for lu in exp.lineups()]
    if len(set(names)) != len(names):
        dup = next(x for x in names if names.count(x) > 1)
        raise ConfigError(f"{where}: tournament.entrants: two lineups would both be named {dup!r} (a label "
                          "contains ' vs ' or ends in a number in brackets); give the entrants other labels")


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
                  errors: list[str], prefix: str = "players") -> PlayerEntry | None:
    key = f"{prefix}[{i}]"
    if not isinstance(raw, dict):
        errors.append(f"{where}: {key} must be a table")
        return None
    agent = raw.get("agent")
    if not isinstance(agent, str):
        errors.append(f"{where}: {key}.agent is missing; choose one of {', '.join(agent_names())}")
        return None
    if (problem := _agent_problem(agent, key, where)) is not None:
        errors.append(problem)
        return None
    # alias was replaced by its table before (resolve_aliases)
    allowed = {k for k in PLAYER_KEYS if k != "alias"} | set(
        LLM_SETTING_KEYS if agent in PROVIDERS else AGENT_KEYS.get(agent, ()))
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
    policy = raw.get("policy")
    if agent == "policy" and (not isinstance(policy, str) or not policy.strip()):
        errors.append(f"{where}: '{key}.policy': expected the name of a strategy the game declares, e.g. "
                      "\"tit_for_tat\" (`econarena list` shows each game's)")
        return None
    label = raw.get("label")
    if label is None:
        label = policy if agent == "policy" else agent.split(":")[-1] if agent_plugins.is_spec(agent) else \
            agent if llm is None or not llm.model else f"{agent}/{llm.model}"
    responses, k, persona = raw.get("responses", []), raw.get("k", 1), raw.get("persona")
    if (problem := _player_problem(agent, raw, label, llm, key, where)) is not None:
        errors.append(problem)
        return None
    assert isinstance(label, str)  # _player_problem refused any other
    return PlayerEntry(agent=agent, label=label, count=count, responses=list(responses), k=k, policy=policy,
                       llm=llm, persona=persona)


def _agent_problem(agent: str, key: str, where: str) -> str | None:
    """Why ``agent`` names no agent (a baseline, a provider or a path to a strategy of the user's own)."""
    if agent_plugins.is_spec(agent):  # a strategy of the user's own (agents/plugins.py)
        try:
            agent_plugins.load_agent_class(agent)
        except agent_plugins.PluginError as exc:
            return f"{where}: {key}.agent: {exc}"
    elif agent not in BASELINES and agent not in PROVIDERS:
        return (f"{where}: {key}.agent: unknown agent {agent!r}; known: {', '.join(agent_names())}, or a "
                "path 'package.module:Class' to a strategy of your own")
    return None


def _player_problem(agent: str, raw: dict[str, Any], label: Any, llm: LLMSettings | None, key: str,
                    where: str) -> str | None:
    """The first problem of a player's label, model, key, URL and baseline settings, or None."""
    if not isinstance(label, str) or not label.strip():
        return f"{where}: '{key}.label': expected a non-empty string"
    if name_problem(label) is not None or len(label) > 200:
        return (f"{where}: '{key}.label': {label[:40]!r}: at most 200 characters and no control characters "
                "(C0 such as tabs and newlines, DEL, C1 such as U+009B): a label is a row and a column name "
                "in every table")
    if llm is not None and llm.model and (problem := name_problem(llm.model)) is not None:
        return f"{where}: '{key}.model': {problem}"
    if llm is not None and (problem := _key_problem(agent, llm, raw, f"{where}: '{key}")) is not None:
        return problem
    if llm is not None and llm.base_url is not None and (problem := _url_problem(llm.base_url)):
        return f"{where}: '{key}.base_url': {problem}"
    responses = raw.get("responses", [])
    if agent == "scripted" and (not isinstance(responses, list) or not responses
                                or not all(isinstance(r, str) for r in responses)):
        return (f"{where}: '{key}.responses': expected a non-empty list of strings "
                "(the raw replies, e.g. ['{\"answer\": 10}'])")
    k = raw.get("k", 1)
    if agent == "level_k" and (isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 1000):
        return f"{where}: '{key}.k': expected an integer from 0 to 1000 (got {k!r})"
    persona = raw.get("persona")
    if persona is not None and (not isinstance(persona, str) or not persona.strip() or len(persona) > MAX_PERSONA
                                or "\x00" in persona):
        return (f"{where}: '{key}.persona': expected {' or '.join(repr(p) for p in PERSONAS)}, or your own "
                f"text (a non-empty string of at most {MAX_PERSONA} characters) appended to the player's "
                f"system prompt (got {persona!r:.60})")
    return None


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two config documents first differ, as ``key.path: A != B`` (what the user changed)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            if a.get(key) != b.get(key):
                return first_difference(a.get(key), b.get(key), f"{path}.{key}" if path else key)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path or 'the document'}: {a!r} != {b!r}"[:200]


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
        mine: list[str] = []  # each alias's messages name that alias's keys, not the last alias's
        _parse_player({**entry, "label": entry.get("label", alias)}, 0, f"{where} [{alias}]", "melee", {}, mine)
        errors += [e.replace("players[0]", alias) for e in mine]
    return errors


# ---- [grid] cells ----

def _check_cells(exp: Experiment, where: str) -> None:
    """Every cell's values are checked by their own tables now, so cell 900 cannot fail mid-run."""
    if not exp.axes:
        return
    llm_axes = [a.path for a in exp.axes if a.section == "llm"]
    if llm_axes and not any(p.llm is not None for p in exp.players):  # [grid.llm] sets LLM players only
        raise ConfigError(f"{where}: {', '.join('grid.' + a for a in llm_axes)}: [grid.llm] varies settings of LLM "
                          "players, but no player of this experiment is one (a [judge] keeps its own settings): every "
                          "cell would play the same games, its results split by a setting nothing reads; remove "
                          "[grid.llm], or seat an LLM player")
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
                if exp.judge is None and exp.game.needs_judge(sub.params):
                    errors.append(_NO_JUDGE.format(where=where, game=exp.game.name)
                                  + f" in grid cell {cell.index} ({cell.label})")
        if len(errors) >= 10:
            break
    if errors:
        raise ConfigError("\n".join(errors))
