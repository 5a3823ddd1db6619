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

BASELINES = {
    "rational": "plays the Nash equilibrium for its own private information",
    "random": "uniform over legal actions, reproducible from the seed",
    "scripted": "replays fixed raw replies (responses = [...]): test prompts, parsing and rule breaks",
    "level_k": "level-k reasoning with k (default 1) where the game has a rule: beauty contest, guessing game, "
               "auctions",
    "policy": "a strategy the game itself declares (policy = \"tit_for_tat\"; `econarena list` shows each "
              "game's)",
    "human": "a person at the terminal: reads the prompt a model reads, types the reply (--human-input FILE "
             "scripts it)",
}
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
    # the most LLM calls the experiment may make (an upper bound, re-asks included); unset: MAX_LLM_CALLS
    max_llm_calls: int | None = Field(default=None, ge=1, le=MAX_INT)


class SteerSection(_Strict):
    """``[steer]``: steer one seat's decision with prompt actions chosen by CFR (``econarena steer``).

    Each session is one game: played once up to the steered decision, then once per action and sample.
    """

    seat: int = Field(default=1, ge=0, le=MAX_SEATS)  # the steered seat (fruit trade: 1, the reply)
    turn: int = Field(default=0, ge=0, le=1000)  # which of its decisions is steered (0: its first)
    actions: str | list[str | dict[str, str]] = "tones"  # "tones", a space the game declares, or a list
    samples: int = Field(default=2, ge=1, le=64)  # LLM samples per action: the chance node
    iterations: int = Field(default=100, ge=1, le=1_000_000)
    every: int = Field(default=5, ge=1, le=1_000_000)  # log the metrics every this many iterations
    report_at: int = Field(default=20, ge=1, le=1_000_000)  # the iteration the tables report


class PlayerEntry(_Strict):
    """One ``[[players]]`` entry after validation; ``settings`` holds LLM settings or baseline options."""

    agent: str
    label: str
    count: int = 1
    responses: list[str] = Field(default_factory=list)
    k: int = 1
    policy: str | None = None  # agent = "policy": the game-declared strategy this seat plays
    llm: LLMSettings | None = None
    persona: str | None = None  # appended to this player's system prompt (NegotiationArena's personas)

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


def planned_calls(exp: Experiment, done: set[tuple[str, int, int]] | None = None) -> dict[str, tuple[int, bool]]:
    """Decisions each label will make: (count, exact). English auctions give an upper bound.

    ``done`` holds the (lineup, session, run) already complete in the run directory (``--resume``).
    """
    out: dict[str, tuple[int, bool]] = {}
    finished: dict[str, int] = {}
    for key in done or ():
        finished[key[0]] = finished.get(key[0], 0) + 1
    for lineup, x in exp.tables():
        rounds, exact = x.game.max_moves(x.params, len(lineup.seats))
        left = x.experiment.sessions * x.runs_per_session() - finished.get(lineup.name, 0)
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
