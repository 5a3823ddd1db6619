"""The bench suite's format (``econarena bench``): which games, tables, opponents, seeds and sessions per tier,
and how each game's 0-100 score is computed, read from a TOML file (``configs/bench/v2.toml``; v1.toml is kept so
that v1 results can be read and refused by name).

Why a root module: the suite is read by hosts (to build and play the experiments) and by analysis (to score
the run directories against the suite's rules), which may not import each other; this module imports nothing
of ours. It checks the file's shape and the score rules; whether a game, a parameter or an opponent exists is
checked where the experiments are built (hosts/bench.py), by the same code that checks any experiment file.

A score rule is one of:
- ``game``: the run's own 0-100 ``score`` (games that declare one: GAMA-Bench's reference formulas), clipped
  to 0-100 (a reference formula can leave it: Guess 2/3 with a lower bound above 0); a run the game cannot
  score because no reply followed the rules scores 0;
- ``equilibrium_action``: 100 x max(0, 1 - |a - a*| / s), a the model's action, a* its equilibrium action
  under the same draws (the run's ``ne_actions``), s the game's declared scale (``GameInfo.scale_key``);
- ``payoff_share``: 100 x min(1, max(0, u / best)), u the model's payoff, ``best`` an expression over the
  run's parameters and ``ne_payoff`` (the model seat's equilibrium payoff); runs where best <= 0 are not
  scored (nothing to gain) and counted;
- ``payoff_sign``: 50 x (1 + sign(u)): 100 for a gain, 50 for none, 0 for a loss.
Every rule scores a player-run with a rule break (an invalid first attempt) 0, as the metrics do.

A game may say ``attainable`` (the best score a known play reaches: a number, or "unknown"; 100 when left
out) with ``attainable_note`` (why): shown beside its score, so that 100 means the best play or the scale
says otherwise. A tier may say ``intervals = false`` (a smoke tier too small for a calibrated interval).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import FileRefused, read_config_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TIERS = ("quick", "standard", "full")
TABLES = ("copies", "rational", "versus")
RULES = ("game", "equilibrium_action", "payoff_share", "payoff_sign")
DEFAULT = Path(__file__).resolve().parent.parent / "configs" / "bench" / "v2.toml"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_SESSIONS = 100_000


class SuiteError(ValueError):
    """A suite file that does not follow the format; the message names the file and the key."""


@dataclass(frozen=True)
class Expression:
    """A sum of products of names and numbers (``money * buyer_value - money * seller_value``): the only
    arithmetic a suite file needs, parsed here, never evaluated by Python."""

    text: str
    terms: tuple[tuple[float, tuple[str | float, ...]], ...]  # (sign, factors)

    @property
    def names(self) -> set[str]:
        return {f for _, fs in self.terms for f in fs if isinstance(f, str)}

    def value(self, scope: dict[str, Any]) -> float:
        """The expression's value; KeyError naming a missing name, ValueError for a non-number."""
        total = 0.0
        for sign, factors in self.terms:
            product = 1.0
            for f in factors:
                if isinstance(f, str):
                    x = scope[f]
                    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                        raise ValueError(f"{f} = {x!r} is not a finite number")
                    f = float(x)
                product *= f
            total += sign * product
        return total


def parse_expression(text: str) -> Expression:
    """``a * b - c + 2``: names, numbers, ``+``, ``-``, ``*``; ValueError on anything else."""
    tokens = re.findall(r"\s*([A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|[-+*]|\S)", text)
    if not tokens:
        raise ValueError("empty expression")
    terms: list[tuple[float, tuple[str | float, ...]]] = []
    sign, want_factor = 1.0, True
    factors: list[str | float] = []
    for tok in tokens:
        if want_factor:
            if tok in "+-" and not factors:
                sign = sign * (-1.0 if tok == "-" else 1.0)
                continue
            if _NAME.fullmatch(tok):
                factors.append(tok)
            elif re.fullmatch(r"\d+(?:\.\d+)?", tok):
                factors.append(float(tok))
            else:
                raise ValueError(f"expected a name or a number, got {tok!r}")
            want_factor = False
        elif tok == "*":
            want_factor = True
        elif tok in "+-":
            terms.append((sign, tuple(factors)))
            sign, factors, want_factor = (-1.0 if tok == "-" else 1.0), [], True
        else:
            raise ValueError(f"expected +, - or *, got {tok!r}")
    if want_factor:
        raise ValueError("the expression ends with an operator")
    terms.append((sign, tuple(factors)))
    return Expression(text, tuple(terms))


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    weight: float
    subscore: str  # the formula, in words (documentation shown with the scores)
    why: str
    published: str | None = None  # a table in analysis/published/ this family's rows are set beside
    published_tiers: tuple[str, ...] = ()  # tiers that play the published protocol


@dataclass(frozen=True)
class GameEntry:
    id: str
    family: str
    game: str
    table: str  # copies: the model in every seat; rational: the model + rational players; versus: 2 seats
    seats: int
    seat: int  # versus: the model's seat
    opponent: dict[str, Any]  # versus: the fixed opponent's player table
    reask: dict[str, int]  # per tier: times an unusable reply is asked again
    protocol: dict[str, Any]  # LLM settings the suite fixes (they win over the model's)
    params: dict[str, Any]
    tier_params: dict[str, dict[str, Any]]
    sessions: dict[str, int]
    score: str
    best: Expression | None
    deal: str | None  # the run metrics' key of a deal (reported beside the score)
    why: str
    # the best score a known play reaches (100 unless the file says otherwise; None: unknown) and why
    attainable: float | None = 100.0
    attainable_note: str | None = None

    def params_for(self, tier: str) -> dict[str, Any]:
        return {**self.params, **self.tier_params.get(tier, {})}


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    version: str
    seed: int
    boot: int
    level: float
    title: str
    tiers: dict[str, str]  # tier -> description
    intervals: dict[str, bool]  # tier -> whether its intervals are printed (a smoke tier's are not)
    llm: dict[str, Any]  # defaults for the model's LLM settings (its own keys win)
    families: dict[str, Family]
    games: tuple[GameEntry, ...]
    text: str = field(repr=False, default="")

    @property
    def digest(self) -> str:
        """sha256 of the file's bytes: two results of one version but an edited file never rank together."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def games_of(self, family: str) -> list[GameEntry]:
        return [g for g in self.games if g.family == family]


def _check_keys(where: str, table: Any, allowed: set[str], required: frozenset[str] | set[str] = frozenset()
                ) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise SuiteError(f"{where}: expected a table")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise SuiteError(f"{where}: unknown key '{unknown[0]}' (allowed: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(table))
    if missing:
        raise SuiteError(f"{where}: missing key '{missing[0]}'")
    return table


def _any_table(where: str, x: Any) -> dict[str, Any]:
    """A table whose keys are checked elsewhere (a game's parameters, LLM settings); a number or a list where
    it belongs stopped ``load_suite`` with a TypeError."""
    if not isinstance(x, dict):
        raise SuiteError(f"{where}: expected a table, got {x!r}")
    return x


def _text(where: str, x: Any) -> str:
    if not isinstance(x, str) or not x.strip():
        raise SuiteError(f"{where}: expected non-empty text, got {x!r}")
    return x


def _int(where: str, x: Any, low: int, high: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not low <= x <= high:
        raise SuiteError(f"{where}: expected an integer from {low} to {high}, got {x!r}")
    return x


def _number(where: str, x: Any, low: float, high: float) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not (math.isfinite(x) and low <= x <= high):
        raise SuiteError(f"{where}: expected a number from {low} to {high}, got {x!r}")
    return float(x)


def load_suite(path: str | Path = DEFAULT) -> Suite:
    """Read and check a suite file; SuiteError (file and key named) on any problem."""
    path = Path(path)
    try:
        text = read_config_text(path, "a suite TOML file")
    except FileRefused as exc:
        raise SuiteError(str(exc)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"{path}: TOML syntax error: {exc}") from None
    return parse_suite(data, path, text)


def parse_suite(data: dict[str, Any], path: Path, text: str = "") -> Suite:
    w = str(path)
    _check_keys(w, data, {"suite", "tiers", "llm", "families", "games"}, {"suite", "tiers", "families", "games"})
    head = _check_keys(f"{w}: [suite]", data["suite"], {"name", "version", "seed", "boot", "level", "title"},
                       {"name", "version", "seed"})
    version = _text(f"{w}: suite.version", head["version"])
    if not _ID.fullmatch(version):
        raise SuiteError(f"{w}: suite.version: {version!r}: letters, digits, '.', '_' or '-' (it names results)")
    tiers = _check_keys(f"{w}: [tiers]", data["tiers"], set(TIERS), set(TIERS))
    tier_text, intervals = {}, {}
    for t in TIERS:
        table = _check_keys(f"{w}: [tiers.{t}]", tiers[t], {"description", "intervals"}, {"description"})
        tier_text[t] = _text(f"{w}: tiers.{t}.description", table["description"])
        intervals[t] = table.get("intervals", True)
        if not isinstance(intervals[t], bool):
            raise SuiteError(f"{w}: tiers.{t}.intervals: expected true or false, got {intervals[t]!r}")
    llm = _any_table(f"{w}: [llm]", data.get("llm", {}))  # its keys are the player's LLM keys (checked by hosts)
    families: dict[str, Family] = {}
    for name, f in _any_table(f"{w}: [families]", data["families"]).items():
        where = f"{w}: families.{name}"
        f = _check_keys(where, f, {"title", "weight", "subscore", "why", "published", "published_tiers"},
                        {"title", "weight", "subscore", "why"})
        pub_tiers = f.get("published_tiers", [])
        if not isinstance(pub_tiers, list) or any(t not in TIERS for t in pub_tiers):
            raise SuiteError(f"{where}.published_tiers: expected a list of tiers ({', '.join(TIERS)})")
        families[name] = Family(name, _text(f"{where}.title", f["title"]),
                                _number(f"{where}.weight", f["weight"], 0.0, 1e6),
                                _text(f"{where}.subscore", f["subscore"]),
                                _text(f"{where}.why", f["why"]),
                                _text(f"{where}.published", f["published"]) if "published" in f else None,
                                tuple(pub_tiers))
    if not families or not any(f.weight > 0 for f in families.values()):
        raise SuiteError(f"{w}: [families]: at least one family with a weight above 0")
    raw_games = data["games"]
    if not isinstance(raw_games, list) or not raw_games:
        raise SuiteError(f"{w}: games: expected a non-empty list of [[games]] tables")
    games, seen = [], set()
    for i, g in enumerate(raw_games):
        games.append(_game(f"{w}: games[{i}]", g, families))
        if games[-1].id in seen:
            raise SuiteError(f"{w}: games[{i}].id: {games[-1].id!r} is used twice")
        seen.add(games[-1].id)
    for name in families:
        if not any(g.family == name for g in games):
            raise SuiteError(f"{w}: families.{name}: no game of the suite belongs to it")
    return Suite(path, _text(f"{w}: suite.name", head["name"]), version,
                 _int(f"{w}: suite.seed", head["seed"], 0, 2**63 - 1),
                 _int(f"{w}: suite.boot", head.get("boot", 2000), 100, 1_000_000),
                 _number(f"{w}: suite.level", head.get("level", 0.95), 0.5, 0.999),
                 _text(f"{w}: suite.title", head.get("title", head["name"])), tier_text, intervals, dict(llm), families,
                 tuple(games), text)


def _game(where: str, g: Any, families: dict[str, Family]) -> GameEntry:
    g = _check_keys(where, g, {"id", "family", "game", "table", "seats", "seat", "opponent", "reask", "protocol",
                               "params", "tier_params", "sessions", "score", "best", "deal", "why", "attainable",
                               "attainable_note"},
                    {"id", "family", "game", "table", "sessions", "score", "why"})
    gid = _text(f"{where}.id", g["id"])
    if not _ID.fullmatch(gid):
        raise SuiteError(f"{where}.id: {gid!r}: letters, digits, '.', '_' or '-' (it names a run directory)")
    if not isinstance(g["family"], str) or g["family"] not in families:
        raise SuiteError(f"{where}.family: {g['family']!r} is not in [families] ({', '.join(families)})")
    table = g["table"]
    if table not in TABLES:
        raise SuiteError(f"{where}.table: expected one of {', '.join(TABLES)}, got {table!r}")
    seats = _int(f"{where}.seats", g.get("seats", 2), 2, 1000)
    seat = _int(f"{where}.seat", g.get("seat", 0), 0, seats - 1)
    opponent = g.get("opponent")
    if table == "versus":
        if seats != 2:
            raise SuiteError(f"{where}.seats: a 'versus' table has two seats (the model and the opponent)")
        opponent = _check_keys(f"{where}.opponent", _any_table(f"{where}.opponent", opponent), set(opponent),
                               {"agent"})
    elif opponent is not None:
        raise SuiteError(f"{where}.opponent: only a 'versus' table has a fixed opponent")
    for key in ("protocol", "params"):
        _any_table(f"{where}.{key}", g.get(key, {}))
    tier_params = _check_keys(f"{where}.tier_params", g.get("tier_params", {}), set(TIERS))
    for t, over in tier_params.items():
        _any_table(f"{where}.tier_params.{t}", over)
    sessions = _check_keys(f"{where}.sessions", g["sessions"], set(TIERS), set(TIERS))
    sessions = {t: _int(f"{where}.sessions.{t}", sessions[t], 1, MAX_SESSIONS) for t in TIERS}
    rule = g["score"]
    if rule not in RULES:
        raise SuiteError(f"{where}.score: expected one of {', '.join(RULES)}, got {rule!r}")
    best = None
    if rule == "payoff_share":
        try:
            best = parse_expression(_text(f"{where}.best", g.get("best")))
        except ValueError as exc:
            raise SuiteError(f"{where}.best: {exc}") from None
    elif "best" in g:
        raise SuiteError(f"{where}.best: only the payoff_share rule has a best payoff")
    if rule == "game" and table != "copies":
        raise SuiteError(f"{where}.score: 'game' scores a whole table, so the model must hold every seat "
                         "(table = \"copies\")")
    deal = g.get("deal")
    if deal is not None:
        _text(f"{where}.deal", deal)
    attainable = g.get("attainable", 100.0)
    if attainable == "unknown":
        attainable = None
    elif isinstance(attainable, str):
        raise SuiteError(f"{where}.attainable: expected a score from 0 to 100 or \"unknown\", got {attainable!r}")
    else:
        attainable = _number(f"{where}.attainable", attainable, 0.0, 100.0)
    note = _text(f"{where}.attainable_note", g["attainable_note"]) if "attainable_note" in g else None
    if note is None and attainable != 100.0:
        raise SuiteError(f"{where}.attainable_note: a game whose best known score is not 100 says why")
    return GameEntry(gid, g["family"], _text(f"{where}.game", g["game"]), table, seats, seat, dict(opponent or {}),
                     _reask(f"{where}.reask", g.get("reask", 0)), dict(g.get("protocol", {})),
                     dict(g.get("params", {})), {t: dict(v) for t, v in tier_params.items()}, sessions, rule, best,
                     deal, _text(f"{where}.why", g["why"]), attainable, note)


def _reask(where: str, x: Any) -> dict[str, int]:
    """``reask``: one count for every tier, or a table of one per tier."""
    if isinstance(x, dict):
        _check_keys(where, x, set(TIERS), set(TIERS))
        return {t: _int(f"{where}.{t}", x[t], 0, 20) for t in TIERS}
    n = _int(where, x, 0, 20)
    return {t: n for t in TIERS}


def canonical(obj: Any) -> str:
    """JSON with sorted keys and no spaces: what settings digests are computed over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(obj: Any) -> str:
    return hashlib.sha256(canonical(obj).encode("utf-8")).hexdigest()
