"""The experiment as the Host plays it: validated sections, player entries, tables (lineups) and grid cells.

Why apart from :mod:`.config`: reading and checking a TOML file is one job, the shape of a checked
experiment (and how it expands into tables and [grid] cells) is another that the Host and writers share.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..agents.llm import PROVIDERS, LLMSettings
from ..games import Game
from ..games.base import GameParams
from .grid import Axis, Cell, count_cells, iter_cells
from .tournament import design_lineups, lineup_names

BASELINES = {
    "rational": "plays the Nash equilibrium for its own private information",
    "random": "uniform over legal actions, reproducible from the seed",
    "scripted": "replays fixed raw replies (responses = [...]): test prompts, parsing and rule breaks",
    "level_k": "level-k reasoning with k (default 1) where the game has a rule: beauty contest, guessing game, "
               "auctions",
    "policy": "a strategy the game itself declares (policy = \"tit_for_tat\"; `econarena list` shows each "
              "game's), or a trivial one every game offers (\"constant\", \"accept\": games/trivial.py)",
    "human": "a person at the terminal: reads the prompt a model reads, types the reply (--human-input FILE "
             "scripts it)",
}
# The [[players]] keys every entry may have, and those only some agents take (an LLM provider takes the
# LLM keys, LLMSettings); config.py refuses any other key, and the docs' TOML reference lists these.
PLAYER_KEYS = ("agent", "label", "count", "persona", "alias")
AGENT_KEYS = {"scripted": ("responses",), "level_k": ("k",), "policy": ("policy",)}
PERSONAS = ("cunning", "desperate")  # built-in persona texts (hosts/templates/common.toml); others verbatim
MAX_PERSONA = 4000


def agent_names() -> list[str]:
    return sorted(BASELINES) + sorted(PROVIDERS)


MAX_INT = 2**63 - 1  # the largest integer TOML can hold: config.toml must be able to write it back
MAX_SEATS = 1000  # players at one table: every decision renders and judges the whole table
# Paid calls one experiment may make unless its file raises experiment.max_llm_calls: a million calls is
# thousands of dollars and days at an API's rate limits, more than any paper's experiment here needs (the
# largest shipped config's bound is far below), so a bound above it is taken for a typo in a round limit.
MAX_LLM_CALLS = 1_000_000


class _Strict(BaseModel):
    # strict: TOML is typed, so "5" or true is not a count. A string under a field is its entry in the
    # generated TOML reference (docs/), read from the source at build time, never at run time
    model_config = ConfigDict(extra="forbid", strict=True)


class ExperimentSection(_Strict):
    """``[experiment]``: what is played, how often, and what the players are told."""

    name: str = Field(min_length=1)
    """The run directory's name (`runs/<name>/`): letters, digits, `.`, `_`, `-`, not starting with `.` or `-`.
    Default: the file's name."""
    game: str
    """The game to play (see the games reference; `econarena list` prints them)."""
    environment: Literal["melee", "rational", "self"] = "melee"
    """`melee`: every entry (with its `count`) at one table. `rational`: for each non-rational entry, a table
    of it and `players_per_game - 1` rational agents, and its prompt says so. `self`: for each entry, a
    table of `players_per_game` copies of it."""
    players_per_game: int = Field(default=5, ge=2, le=1000)
    """Table size in the `rational` and `self` environments."""
    sessions: int = Field(default=1, ge=1, le=MAX_INT)
    """Independent sessions; each draws its own configuration (expanded lazily: memory does not grow)."""
    runs: int = Field(default=1, ge=1, le=MAX_INT)
    """Runs per session; they share the session's drawn configuration and its history."""
    seed: int = Field(default=0, ge=0, le=MAX_INT)  # numpy seeds are >= 0; TOML integers are 64-bit
    """Everything random derives from it and the decision's coordinates (`--seed` overrides it)."""
    history: Literal["none", "actions", "full"] = "none"
    """From the second run on, show the last `max_history` runs: `actions` (everyone's choices) or `full`
    (also private values, payoffs and winners). `full` is refused where it would show what the prompt says a
    player does not know (GLEE with `complete_information = false`, NegotiationArena's buy/sell and resource
    exchange, the fruit trade)."""
    max_history: int = Field(default=3, ge=1)
    """How many earlier runs the history shows."""
    prompt: Literal["default", "cot"] = "default"
    """`cot` asks the player to think step by step before the JSON answer."""
    reask: int = Field(default=0, ge=0, le=20)  # ask again after an unusable reply, at most this often
    """After an unusable reply (parse, schema or rule failure), ask again up to this many times with a
    reminder. Every attempt is logged; rule-breaking metrics count first attempts only."""
    shuffle_seats: bool = False
    """Permute the seats per session (seeded); ties go to the lowest seat otherwise."""
    description: str = ""
    """Free text, kept in the run directory's `config.toml`."""
    models: str | None = None  # alias file for [[players]] alias = "..."; default: models.toml beside the file
    """The alias file for `[[players]] alias = "..."`, relative to this file. Default: `models.toml` beside it."""
    group: Literal["L", "M", "H"] | None = None  # configuration group (low/medium/high stakes), for reports
    """EconArena's configuration group (low, medium, high stakes): reports compare groups."""
    # the most LLM calls the experiment may make (an upper bound, re-asks included); unset: MAX_LLM_CALLS
    max_llm_calls: int | None = Field(default=None, ge=1, le=MAX_INT)
    """The budget of paid calls: an experiment whose LLM players could make more (every decision at the
    round limit, every re-ask, the judge's calls) is refused before it runs. Default: 1,000,000."""


class SteerSection(_Strict):
    """``[steer]``: steer one seat's decision with prompt actions chosen by CFR (``econarena steer``).

    Each session is one game: played once up to the steered decision, then once per action and sample.
    """

    seat: int = Field(default=1, ge=0, le=MAX_SEATS)
    """The steered seat (fruit trade: 1, the one who replies to the offer)."""
    turn: int = Field(default=0, ge=0, le=1000)
    """Which of the seat's decisions is steered (0: its first)."""
    actions: str | list[str | dict[str, str]] = "tones"
    """The prompt actions: `"tones"`, an action space the game declares (`"offers"`), or a list of
    instructions (strings, or tables with `name` and `instruction`)."""
    samples: int = Field(default=2, ge=1, le=64)
    """LLM samples per action: the chance node of the steering subgame."""
    iterations: int = Field(default=100, ge=1, le=1_000_000)
    """CFR iterations."""
    every: int = Field(default=5, ge=1, le=1_000_000)
    """Log NashConv, the CFR gain and the strategy every this many iterations."""
    report_at: int = Field(default=20, ge=1, le=1_000_000)
    """The iteration whose figures the tables report."""


class TournamentSection(_Strict):
    """``[tournament]``: entrants and a design; every lineup of the design plays every session (paired: session
    k draws the same game parameters in every lineup), so ratings compare entrants across opponents."""

    entrants: list[dict[str, Any]] = Field(default_factory=list)
    """`[[tournament.entrants]]`: the entrants, each any `[[players]]` table (a model, a baseline, a policy, a
    scripted or a human seat; `count` excepted). A file with a tournament has no `[[players]]`."""
    seats: int | None = Field(default=None, ge=2, le=1000)
    """Seats at each table. Default: the game's number of players (a game of any size needs it set)."""
    design: Literal["round_robin", "balanced"] = "round_robin"
    """`round_robin`: for two seats every ordered pair of distinct entrants (each plays each role against each
    other), for N seats every combination of N entrants in each of its N seat rotations. `balanced`: `lineups`
    seeded tables in which every entrant sits equally often in every seat and pairs meet as evenly as possible."""
    lineups: int | None = Field(default=None, ge=1, le=100_000)
    """`balanced` only: the number of tables, a multiple of the number of entrants."""
    self_play: bool = False
    """Add one table per entrant where it plays every seat against copies of itself."""


class PlayerEntry(_Strict):
    """One ``[[players]]`` entry after validation; ``settings`` holds LLM settings or baseline options."""

    agent: str
    """Who decides: a baseline (`rational`, `random`, `scripted`, `level_k`, `policy`), `human`, or an
    LLM provider (`econarena list` names them) that takes the LLM keys."""
    label: str
    """How results name the player; unique per file ignoring case and surrounding spaces. Default: the
    agent's name (`agent/model` for an LLM)."""
    count: int = 1
    """Seats for this entry in a melee (at most 1000 at a table)."""
    responses: list[str] = Field(default_factory=list)
    """`scripted` only: raw replies; the k-th decision of a session gets `responses[k mod len]`."""
    k: int = 1
    """`level_k` only: the reasoning depth (0 to 1000) where the game has a level-k rule."""
    policy: str | None = None  # agent = "policy": the game-declared strategy this seat plays
    """`policy` only: a strategy the game declares (e.g. `tit_for_tat`; `econarena list` shows each game's)."""
    llm: LLMSettings | None = None
    persona: str | None = None  # appended to this player's system prompt (NegotiationArena's personas)
    """Appended to this player's system prompt: `"cunning"`, `"desperate"` (NegotiationArena's built-in
    texts) or any text, used verbatim."""

    @property
    def is_llm(self) -> bool:
        return self.agent in PROVIDERS


@dataclass(frozen=True)
class Lineup:
    """One table of players that plays every session: seat -> entry index."""

    name: str
    seats: tuple[int, ...]
    environment: str
    cell: dict[str, Any] | None = field(default=None, hash=False)  # the [grid] values of its cell, if any


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
    steer: SteerSection | None = None  # [steer]: a steering experiment
    judge: PlayerEntry | None = None  # [judge]: the model that values runs of games with judged payoffs
    tournament: TournamentSection | None = None  # [tournament]: players are its entrants, lineups its design

    @property
    def name(self) -> str:
        return self.experiment.name

    def lineups(self) -> list[Lineup]:
        """Expand the environment into tables of seats (indices into ``players``)."""
        e = self.experiment
        if self.tournament is not None:
            t = self.tournament
            assert t.seats is not None  # the parser fills in the game's own
            tables = design_lineups(len(self.players), t.seats, t.design, t.lineups, t.self_play, e.seed)
            names = lineup_names(tables, [p.label for p in self.players])
            return [Lineup(name, seats, "tournament") for name, seats in zip(names, tables)]
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
        keys = self._sent_keys() if any(a.key == "base_url" for a in self.axes) else []
        for cell in self.cells():
            sub = self.for_cell(cell)
            shown = _public_cell(cell, keys)
            # masked, two cells may read alike (?key=A and ?key=B): the cell's index keeps their tables apart
            name = shown.label if shown.values == cell.values else f"cell {cell.index}: {shown.label}"
            for lu in sub.lineups():
                out.append((Lineup(f"{lu.name} [{name}]", lu.seats, lu.environment, shown.to_dict()), sub))
        return out

    def _sent_keys(self) -> list[str | None]:
        """The API keys this experiment's players send (a proxy's base_url may hold one in its path)."""
        from ..agents.keys import key_value

        return [key_value(p.agent, p.llm.api_key_env) for p in [*self.players, self.judge]
                if p is not None and p.llm]

    def runs_per_session(self) -> int:
        """Runs a session plays: ``runs``, or with [steer] one per prompt action and sample (branches)."""
        if self.steer is None:
            return self.experiment.runs
        from ..games.steering.cfr import action_space

        return len(action_space(self.game, self.steer.actions, self.params)) * self.steer.samples

    def total_runs(self) -> int:
        return sum(x.experiment.sessions * x.runs_per_session() for _, x in self.tables())

    def n_players(self) -> int:
        return len(self.lineups()[0].seats)


def cell_experiment(exp: Experiment, cell: Cell) -> Experiment:
    """Apply one cell's values; raises ValidationError for a value its table refuses."""
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


def planned_calls(exp: Experiment, done: set[tuple[str, int, int]] | None = None,
                  shard: tuple[int, int] | None = None) -> dict[str, tuple[int, bool]]:
    """Decisions each label will make: (count, exact). English auctions give an upper bound.

    ``done`` holds the (lineup, session, run) already complete in the run directory (``--resume``);
    ``shard`` (K, N) counts only the sessions that shard plays, as the Host deals them.
    """
    from .sharding import shard_sessions

    out: dict[str, tuple[int, bool]] = {}
    finished: dict[str, int] = {}
    for key in done or ():
        finished[key[0]] = finished.get(key[0], 0) + 1
    tables = exp.tables()
    for li, (lineup, x) in enumerate(tables):
        rounds, exact = x.game.max_moves(x.params, len(lineup.seats))
        sessions = x.experiment.sessions if shard is None else shard_sessions(x.experiment.sessions, li,
                                                                                len(tables), shard)
        left = sessions * x.runs_per_session() - finished.get(lineup.name, 0)
        for seat in lineup.seats:
            label = x.players[seat].label
            count, was_exact = out.get(label, (0, True))
            # steering replays each game's prefix once per branch in this count: an upper bound
            out[label] = (count + left * rounds, was_exact and exact and x.steer is None)
        if x.judge is not None:
            count, was_exact = out.get(x.judge.label, (0, True))
            out[x.judge.label] = (count + left * len(lineup.seats), False)  # only games the judge must value
    return out


def llm_call_bound(exp: Experiment) -> dict[str, int]:
    """Per LLM label (the judge included), the most calls it can make: every decision of every run, each
    asked again as often as ``reask`` allows. What ``validate`` and ``--dry-run`` hold against the budget."""
    out: dict[str, int] = {}
    for lineup, x in exp.tables():
        rounds, _ = x.game.max_moves(x.params, len(lineup.seats))
        runs = x.experiment.sessions * x.runs_per_session()
        for seat in lineup.seats:
            p = x.players[seat]
            if p.llm is not None:
                out[p.label] = out.get(p.label, 0) + runs * rounds * (1 + x.experiment.reask)
        if x.judge is not None and x.judge.llm is not None:
            out[x.judge.label] = out.get(x.judge.label, 0) + runs * len(lineup.seats)
    return out


def _public_cell(cell: Cell, keys: list[str | None]) -> Cell:
    """The cell as runs record it (its values and the table's name): a base_url on a grid axis with its
    credentials masked as config.toml masks them, since every record of the run carries the table's name."""
    if not any(path.endswith(".base_url") for path, _ in cell.values):
        return cell
    from ..agents.calls import public_urls

    return Cell(cell.index, tuple((path, public_urls(v, keys) if path.endswith(".base_url") else v)
                                  for path, v in cell.values))
