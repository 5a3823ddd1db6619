"""The Host: expands an experiment into tables x sessions x runs and plays them through asyncio.

Seeds: a session's configuration is drawn from ``SeedSequence(seed, spawn_key=(0, session))``, shared by
every table (lineup) of that session, so in the rational and self environments each model faces the same
private values (a paired comparison). Each decision's generator comes from its coordinates, so results do
not depend on scheduling, concurrency or interruptions: a resumed experiment equals an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import numpy as np

from ..agents.base import Agent, AgentError, DecisionRequest, LazyGenerator, Message, Reply
from ..agents.baselines import StrategyAgent
from ..agents.calls import SPEND
from ..agents.llm import LLMAgent, RuntimeOptions, close_all, preflight, settings_problems
from ..agents.registry import create_agent
from ..formats.rundir import JUDGE_LOG, ResumeState, RunDirectory, RunDirectoryBusy, json_text, now_iso
from ..games.base import (
    TRUNCATED,
    ActionSpec,
    Game,
    GameError,
    Judgement,
    Outcome,
    Setup,
    is_plain_json,
    payoff_problem,
)
from ..games.schema import json_schema, reasoning_chars
from ..games.text import storable
from .config import Experiment, ExperimentSection, Lineup, resolved_toml
from .playthrough import Conversations, Decision, Playthrough, RunContext
from .progress import Progress
from .prompts import Template


@dataclass
class HostOptions:
    concurrency: int = 16
    resume: bool = False
    quiet: bool = False
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)
    # (input, output, echo) for human seats: the terminal, or a script file (--human-input)
    human_io: tuple[TextIO, TextIO, bool] | None = None
    # where sessions are played: None here, in this process; or an engine with ``async play(host, work,
    # resume)`` (hosts/ray_engine.py plays them on a Ray cluster; this process stays the only writer)
    engine: Any = None
    shard: tuple[int, int] | None = None  # (K, N): only the sessions of shard K of N (hosts/shards.py)
    # USD per million tokens by label or model (--prices): the progress bar's cost so far
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    # a spending limit shared by every experiment of a command (prices.Budget, ``bench --max-cost``): once
    # reached, no further call starts; the runs that wanted one end incomplete (their error says why) and
    # --resume plays them again
    budget: Any = None
    # with an engine (Ray), the worst-case USD of one session's capped calls: held against ``budget`` before the
    # session is handed out and freed once its replies are charged (the calls run where the budget is not)
    session_cost: float = 0.0
    # several Hosts side by side in one process (``bench``) share their providers (one local model, one
    # connection pool): the caller closes them once all are done, not each Host when it ends
    keep_providers: bool = False


@dataclass
class RunResult:
    path: Path
    status: str  # complete | incomplete | failed | interrupted
    runs_total: int
    runs_done: int
    runs_incomplete: int
    elapsed_s: float
    decisions: int
    stopped: tuple[str, ...] = ()  # why an engine left sessions unplayed (a lost Ray node), for --resume


# what a game's code never raises, so it is not called the game's failure: the run directory's and the
# players' own errors, and a game error said once already
_NOT_THE_GAME = (OSError, AgentError, RunDirectoryBusy, GameError)
MAX_ROUNDS = 100_000  # steps of one run: past this a game has not ended, whatever its max_moves says


def _llm_problems(exp: Experiment, check: Any) -> list[str]:
    problems = []
    for i, p in enumerate(exp.players):
        if p.llm is not None:
            problems += check(p.agent, p.llm, f"players[{i}] ({p.label})")
    if exp.judge is not None and exp.judge.llm is not None:
        problems += check(exp.judge.agent, exp.judge.llm, "judge")
    # a [grid.llm] cell sets what the file alone does not (reasoning_effort = ["low", "minimal"]): what only a
    # cell's settings make a problem is found here too, naming the cell
    seen = set(problems)
    for cell in exp.cells() if exp.axes else ():
        sub = exp.for_cell(cell)
        for i, p in enumerate(sub.players):
            if p.llm is not None:
                found = check(p.agent, p.llm, f"players[{i}] ({p.label})")
                problems += [f"{x} in grid cell {cell.index} ({cell.label})" for x in found if x not in seen]
    return problems


def preflight_experiment(exp: Experiment) -> list[str]:
    """Missing SDKs or keys for every LLM player, and OpenSpiel for a [steer] file, before anything starts."""
    problems = _llm_problems(exp, preflight)
    if exp.steer is not None:  # without it the run stopped at its start with a traceback
        from ..games.steering.cfr import OpenSpielMissing, require_openspiel

        try:
            require_openspiel()
        except OpenSpielMissing as exc:
            problems.append(f"[steer]: {exc}")
    return problems


@functools.lru_cache(maxsize=256)
def _reply_schema(spec: ActionSpec, mode: Literal["format", "strict"], reasoning: bool, chars: int) -> dict[str, Any]:
    """Schemas repeat across decisions (same spec, same mode): build each once."""
    return json_schema(spec, mode, reasoning, chars)


def reasoning_fields(reply: Reply) -> dict[str, Any]:
    """A decision record's reasoning keys, only for a reply that has reasoning (other records keep their
    shape): the text, whether it was withheld, and the provider's count of its tokens."""
    if not (reply.reasoning or reply.reasoning_hidden or reply.reasoning_tokens is not None):
        return {}
    out: dict[str, Any] = {"reasoning": storable(reply.reasoning), "reasoning_tokens": reply.reasoning_tokens}
    if reply.reasoning_hidden:
        out["reasoning_hidden"] = True
    return out


def settings_problems_of(exp: Experiment) -> list[str]:
    """What ``validate`` can find without keys or loading a model: structured modes, local model paths."""
    return _llm_problems(exp, settings_problems)


class Host:
    def __init__(self, exp: Experiment, out: Path, options: HostOptions | None = None) -> None:
        self.exp = exp
        self.game = exp.game
        self.options = options or HostOptions()
        self.dir = RunDirectory(out)
        # where records go: the run directory, or (a session played on a Ray worker) a buffer shipped to it
        self.sink: Any = self.dir
        self.template = Template(exp.game, exp.prompts)
        tables = exp.tables()  # one per lineup and [grid] cell, each with its cell's experiment
        self.lineups = [lu for lu, _ in tables]
        self.exps = [x for _, x in tables]
        self.agents: list[list[Agent]] = []  # per table, per player entry
        self.judge: Agent | None = None  # values runs of games whose payoffs come from a judge model
        self._sem: asyncio.Semaphore | None = None
        self.decisions = 0
        self.incomplete = 0
        self.done = 0
        self.stopped: list[str] = []  # an engine's reasons for sessions it could not play (the run is incomplete)
        self._direct_moves = 0  # moves played by baselines alone, without awaiting anything
        self._progress = Progress(0, "", enabled=False)

    # ---- top level ----
    def total_runs(self) -> int:
        if self.options.shard is not None:
            from .sharding import shard_sessions

            return sum(shard_sessions(x.experiment.sessions, li, len(self.exps), self.options.shard)
                       * x.runs_per_session() for li, x in enumerate(self.exps))
        return sum(x.experiment.sessions * x.runs_per_session() for x in self.exps)

    def work_items(self) -> Iterator[tuple[int, int]]:
        """(table, session) pairs in play order, lazily: memory does not grow with the number of sessions
        (10**12 sessions start at once and run in constant memory). With a shard, only its own pairs."""
        sessions = [x.experiment.sessions for x in self.exps]
        n = len(self.lineups)
        work = ((li, s) for s in range(max(sessions)) for li in range(n) if s < sessions[li])
        if self.options.shard is not None:
            from .sharding import in_shard

            k = self.options.shard
            work = ((li, s) for li, s in work if in_shard(li, s, n, k))
        return work

    def session_finished(self, li: int, session: int, resume: ResumeState) -> bool:
        """Whether a resume found the session finished (an engine then does not send it anywhere)."""
        return len(resume.session_runs(self.lineups[li].name, session)) >= self.exps[li].experiment.runs

    async def run(self) -> RunResult:
        total = self.total_runs()
        self.dir.lock()  # first: a second process on this directory stops here, before touching anything
        try:
            try:  # before the run directory is touched: a failure here leaves no manifest stuck at "running"
                self.agents = self._create_agents()
                j = self.exp.judge
                if j is not None:
                    self.judge = create_agent(j.agent, j.label, responses=j.responses, llm=j.llm,
                                              options=self.options.runtime)
            except BaseException:
                if not self.options.keep_providers:
                    await close_all()
                raise
            return await self._run_locked(total)
        finally:
            self.dir.unlock()

    def _create_agents(self) -> list[list[Agent]]:
        """One agent per player entry and distinct settings: grid cells that change no LLM setting share
        the same agents (and so their batching, rate limits and cache)."""
        made: dict[tuple[int, str], Agent] = {}
        out = []
        for x in self.exps:
            row = []
            for i, p in enumerate(x.players):
                key = (i, p.llm.model_dump_json() if p.llm is not None else "")
                if key not in made:
                    made[key] = create_agent(p.agent, p.label, responses=p.responses, k=p.k, policy=p.policy, llm=p.llm,
                                             options=self.options.runtime, human_io=self.options.human_io)
                row.append(made[key])
            out.append(row)
        return out

    async def _run_locked(self, total: int) -> RunResult:
        e = self.exp.experiment
        try:
            resume = self.dir.start(resolved_toml(self.exp), e.seed, e.name, self.options.resume)
        except BaseException:
            if not self.options.keep_providers:
                await close_all()
            raise
        if self.options.shard is not None:
            k, n = self.options.shard
            self.dir.write_manifest(shard={"index": k, "count": n})
        self._sem = asyncio.Semaphore(self.options.concurrency)
        self.done = len(resume.runs)
        # a live progress line would redraw over the prompt a person is reading
        human = any(p.agent == "human" for x in self.exps for p in x.players)
        self._progress = progress = Progress(total, e.name, not self.options.quiet and not human, self.done,
                                             self.options.prices)
        start = time.perf_counter()
        status = "failed"
        try:
            work = self.work_items()  # one shared generator: each pair goes to exactly one worker
            if self.options.engine is not None:
                await self.options.engine.play(self, work, resume)
            else:
                n_workers = max(1, min(self.options.concurrency, sum(x.experiment.sessions for x in self.exps)))
                if human:  # sessions one at a time: the same input file meets the same decisions in the same
                    n_workers = 1  # order every time (the seats of one move ask in seat order)
                workers = [asyncio.create_task(self._worker(work, resume)) for _ in range(n_workers)]
                try:
                    await asyncio.gather(*workers)
                except BaseException:
                    for w in workers:
                        w.cancel()
                    await asyncio.gather(*workers, return_exceptions=True)
                    raise
            status = "complete" if self.incomplete == 0 and not self.stopped else "incomplete"
        except (asyncio.CancelledError, KeyboardInterrupt):
            status = "interrupted"
            raise
        finally:
            progress.close()
            try:
                self.dir.close()
            finally:
                try:  # a second stop signal may cancel the closing of clients: the manifest is written anyway
                    if not self.options.keep_providers:
                        await close_all()
                finally:
                    self.dir.write_manifest(status=status, ended_at=now_iso(), runs_total=total,
                                            runs_complete=self.done, runs_incomplete=self.incomplete,
                                            elapsed_s=round(time.perf_counter() - start, 3),
                                            **({"stopped": self.stopped} if self.stopped else {}))
        return RunResult(self.dir.path, status, total, self.done, self.incomplete,
                         time.perf_counter() - start, self.decisions, tuple(self.stopped))

    async def _worker(self, work: Iterator[tuple[int, int]], resume: ResumeState) -> None:
        for li, s in work:  # one shared generator: each pair goes to exactly one worker
            await self._session(li, self.lineups[li], s, resume)

    # ---- one session: a fixed configuration, several runs ----
    def session_setup(self, session: int, lineup: Lineup, li: int = 0) -> tuple[Setup, tuple[int, ...]]:
        x = self.exps[li]
        e = x.experiment
        rng = np.random.default_rng(np.random.SeedSequence(e.seed, spawn_key=(0, session)))
        setup = self.game.setup(x.params, len(lineup.seats), rng)
        seats = lineup.seats
        if e.shuffle_seats:
            perm = np.random.default_rng(np.random.SeedSequence(e.seed, spawn_key=(1, session))).permutation(len(seats))
            seats = tuple(seats[int(j)] for j in perm)
        return setup, seats

    async def _session(self, li: int, lineup: Lineup, session: int, resume: ResumeState) -> None:
        e = self.exps[li].experiment
        try:
            setup, seats = self.session_setup(session, lineup, li)
            ne = self.game.equilibrium(setup)  # None when the game declares no equilibrium
        except _NOT_THE_GAME:
            raise
        except Exception as exc:  # noqa: BLE001 - the game's own code failed: said as the game's error
            raise self._game_error(lineup, session, None, "its setup", exc) from exc
        prior = resume.session_runs(lineup.name, session)  # runs 0..k-1: resume keeps no gaps
        counters = [resume.decisions_per_seat.get((lineup.name, session, i), 0) for i in range(len(seats))]
        # only the last max_history runs are ever shown: memory stays flat however many runs a session has
        past: deque[dict[str, Any]] = deque(prior, maxlen=e.max_history)
        n_past = len(prior)
        for run in range(n_past, e.runs):
            history = self._history(past, e) if e.history != "none" and past else None
            ctx = RunContext(li, lineup, session, run, setup, seats, ne, counters, history, n_past)
            record = await self._play_run(ctx)
            if not record["complete"]:
                self.incomplete += 1  # counted before the record leaves: a Ray worker ships both at once
                self.sink.run(record)
                return  # later runs need this run's history; --resume retries from here
            past.append(record)
            n_past += 1
            self.done += 1
            self.sink.run(record)
            self._progress.step(runs=1)

    def _game_error(self, lineup: Lineup, session: int, run: int | None, where: str, exc: BaseException | None,
                    what: str | None = None) -> GameError:
        """The error of a game that failed, naming the game and where; ``exc``: what its code raised."""
        said = what or f"{type(exc).__name__}: {exc}"
        at = f"session {session}" + (f", run {run}" if run is not None else "")
        return GameError(storable(f"the game {self.game.name} failed in lineup {lineup.name}, {at}, at {where}: "
                                  f"{said}"[:2000]))

    def _history(self, past: deque[dict[str, Any]], e: ExperimentSection) -> list[dict[str, Any]]:
        mode = e.history
        key = self.game.history_key
        out = []
        for rec in list(past)[-e.max_history:]:
            players = []
            for i, act in enumerate(rec["actions"]):
                item: dict[str, Any] = {"player": i, key: act if rec["valid"][i] else None}
                if not rec["valid"][i]:
                    item["note"] = "broke a rule"
                if mode == "full":
                    if rec.get("private_values") is not None:
                        item["private value"] = rec["private_values"][i]
                    item["payoff"] = rec["payoffs"][i]
                    item["winner"] = i in rec["winners"]
                players.append(item)
            entry: dict[str, Any] = {"run": rec["run"] + 1, "players": players}
            if mode == "full":  # the outcome facts the game declares worth showing (the beauty contest's target)
                extra = rec.get("extra") or {}
                entry.update({k: extra[k] for k in self.game.info.history_extra if extra.get(k) is not None})
            out.append(entry)
        return out

    async def _play_run(self, ctx: RunContext) -> dict[str, Any]:
        try:
            first = self.game.initial_state(ctx.setup)
            most = self.game.max_moves(self.exps[ctx.table].params, len(ctx.seats))[0]
        except _NOT_THE_GAME:
            raise
        except Exception as exc:  # noqa: BLE001 - the game's own code failed: said as the game's error
            raise self._game_error(ctx.lineup, ctx.session, ctx.run, "its first state", exc) from exc
        play = Playthrough(first, Conversations(self.game.info.rounds), len(ctx.seats))
        start_counters = list(ctx.counters)
        steps = 0  # moves played (a fast-forward's stretch is one): play.rnd counts the rounds it skipped too
        while True:
            try:
                if not await self._advance(ctx, play):
                    break
            except _NOT_THE_GAME:
                raise
            except Exception as exc:  # noqa: BLE001 - the game's own code failed: said as the game's error
                raise self._game_error(ctx.lineup, ctx.session, ctx.run, f"step {play.rnd}", exc) from exc
            steps += 1
            # a game that never ends; no seat has moved more often than there were steps, so this is one compare
            # per step until the steps pass what max_moves declares
            if steps > most and (max(play.moves, default=0) > most or steps > MAX_ROUNDS):
                raise self._game_error(ctx.lineup, ctx.session, ctx.run, f"step {play.rnd}", None,
                                       f"it has not ended after {steps} steps, {max(play.moves)} moves of one "
                                       f"seat, past the {most} its max_moves declares" if steps <= MAX_ROUNDS
                                       else f"it has not ended after {steps} steps")
        record = await self._finish(ctx, play, [c - s for c, s in zip(ctx.counters, start_counters)])
        if not record["complete"]:
            ctx.counters[:] = start_counters  # the retried run will reuse the same decision indices
        return record

    async def _advance(self, ctx: RunContext, play: Playthrough, steer: dict[int, str] | None = None) -> bool:
        """Play one move of a run; False when the game is over or a reply stopped it. ``steer`` maps a
        seat to an instruction added to its request at this move (``econarena steer``)."""
        movers = self._movers(ctx, play)
        if movers and not steer and self._fast_forward(ctx, play, movers):
            movers = self._movers(ctx, play)
        if not movers:
            return False
        state = play.state
        moves = [Decision(ctx, play.rnd, seat, state, play.talk, (steer or {}).get(seat)) for seat in movers]
        direct, entries = self._direct_entries[ctx.table], ctx.seats
        if all(direct[entries[seat]] for seat in movers):  # baselines only: no task, no await ...
            results = [self._decide_direct(d) for d in moves]
            self._direct_moves += 1
            if self._direct_moves % 64 == 0:  # ... but the loop must run now and then: Ctrl-C, SIGTERM and
                await asyncio.sleep(0)  # the other workers (an LLM seat's table) wait for it
        else:
            results = await asyncio.gather(*(self._decide(d) for d in moves))
        play.errors = [r.error for r, _, _ in results if r.error]
        if play.errors:
            return False
        actions = {seat: j.action for seat, (_, j, _) in zip(movers, results)}
        for seat, (_, judgement, first_ok) in zip(movers, results):
            play.first_valid[seat] = play.first_valid[seat] and first_ok
            play.moves[seat] += 1
            if judgement.violation == TRUNCATED:
                play.cut[seat] += 1
            elif not judgement.valid:
                play.own_break[seat] = True
        chance: Any = LazyGenerator(self.exps[ctx.table].experiment.seed, (3, ctx.session, ctx.run, play.rnd))
        after = self.game.apply(state, actions, chance)
        play.round_log.append({"round": play.rnd, "actions": [actions.get(i) for i in range(len(ctx.seats))],
                               "events": self.game.events(state, after, actions)})
        if play.talk.enabled:
            for seat in range(len(ctx.seats)):
                if self._direct(ctx, seat):  # a baseline reads no prompt, so no report is written for it
                    continue
                fields = self.game.report(state, after, actions, seat)
                if fields is not None:
                    play.talk.report(seat, self.template.report(fields, after, seat))
        play.state = after
        play.rnd += 1
        return True

    def _movers(self, ctx: RunContext, play: Playthrough) -> tuple[int, ...]:
        """The seats to move now, as the game says; a seat not at the table is the game's failure."""
        movers = self.game.to_move(play.state)
        if movers and (min(movers) < 0 or max(movers) >= len(ctx.seats)):  # what is no int fails where used
            raise ValueError(f"to_move named {movers!r}, not seats of the {len(ctx.seats)} at the table")
        return movers

    def _fast_forward(self, ctx: RunContext, play: Playthrough, movers: tuple[int, ...]) -> bool:
        """Let the game skip the moves in which its baseline seats change nothing (``Game.fast_forward``);
        only when every seat to move plays a known policy: a model's or a person's move is always asked.
        The skipped moves go into the round log as one entry; they are no decisions, so none is logged."""
        agents = self.agents[ctx.table]
        policies = {seat: policy for seat in movers if (policy := getattr(agents[ctx.seats[seat]], "policy", None))}
        if len(policies) < len(movers):
            return False
        skip = self.game.fast_forward(play.state, policies)
        if skip is None or skip.moves < 1:
            return False
        play.round_log.append({"round": play.rnd, "through": play.rnd + skip.moves - 1,
                               "actions": [skip.actions.get(i) for i in range(len(ctx.seats))], "events": {}})
        play.state = skip.state
        play.rnd += skip.moves
        return True

    async def _finish(self, ctx: RunContext, play: Playthrough, decisions: list[int]) -> dict[str, Any]:
        """The run record of a finished (or stopped) playthrough; a judge values it where the game asks."""
        lineup, session, run, setup, seats, ne = ctx.lineup, ctx.session, ctx.run, ctx.setup, ctx.seats, ctx.ne
        li = ctx.table
        labels = [self.exp.players[i].label for i in seats]
        base = {"lineup": lineup.name, "environment": lineup.environment, "session": session, "run": run,
                "labels": labels, "agents": [self.exp.players[i].agent for i in seats],
                "models": [self.agents[li][i].model for i in seats], "params": setup.to_dict(),
                "private_values": setup.values.get("private_value")}
        if lineup.cell is not None:
            base["cell"] = lineup.cell
        outcome = None
        if not play.errors:
            outcome, error = await self._judged(lineup, session, run, setup, play.state)
            if error:
                play.errors = [error]
        if play.errors:
            return {**base, "complete": False, "error": play.errors[0], "rounds": play.rnd + 1}
        record = {**base, **self.run_result(setup, play.state, ne, play.round_log, play.first_valid, decisions,
                                            outcome)}
        problem = payoff_problem(record["payoffs"], self.game.payoff_bounds(setup))
        if problem:  # never a silent null in the log: the game is broken, not the run
            raise GameError(f"game {self.game.name}, lineup {lineup.name}, session {session}, run {run}: {problem}; "
                            f"run `econarena check {self.game.name}` to find the rule that gives it")
        cut = play.truncated()
        if cut is not None:  # only then: the records of runs without a cut reply keep their shape
            record["truncated"] = cut
        return record

    async def _judged(self, lineup: Lineup, session: int, run: int, setup: Setup,
                      state: Any) -> tuple[Outcome | None, str | None]:
        """Ask the judge model to value a finished run for each seat (games with judged payoffs); the
        calls go to ``judge.jsonl``. Returns (outcome, None), (None, None) when the game scores itself,
        or (None, error) when the judge's API failed (the run is then incomplete, as for a player)."""
        requests = self.game.judge_requests(setup, state)
        if requests is None:
            return None, None
        if self.judge is None:  # config validation demands a [judge]; a game may still ask unexpectedly
            return None, f"{self.game.name} asked for a judge, but the experiment has no [judge]"
        judge = self.judge

        async def ask(seat: int, fields: dict[str, Any]) -> Reply:
            messages = self.template.judge(fields)
            coords = {"lineup": lineup.name, "session": session, "run": run, "judge": seat}
            request = DecisionRequest(messages, seat, seat, functools.partial(self.game.reference, state, seat),
                                      self.exp.experiment.seed, (4, session, run, seat), coords, None,
                                      self.game.name)
            reply = self._kept(await self._ask(judge, request))
            self.sink.append(JUDGE_LOG, {
                "lineup": lineup.name, "session": session, "run": run, "seat": seat, "label": judge.label,
                "model": reply.model or judge.model, "template": self.template.id,
                "messages": [m.to_dict() for m in messages], "response": reply.text, "error": reply.error,
                "latency_s": round(reply.latency_s, 6), "tokens_in": reply.tokens_in,
                "tokens_out": reply.tokens_out, "cached": reply.cached,
                **({"truncated": True} if reply.truncated else {}), **reasoning_fields(reply)})
            return reply

        seats = sorted(requests)
        answers = await asyncio.gather(*(ask(seat, requests[seat]) for seat in seats))  # one batch per run
        failed = next((r.error for r in answers if r.error), None)
        if failed:
            return None, f"judge: {failed}"
        replies: dict[int, str | None] = {seat: r.text for seat, r in zip(seats, answers)}
        return self.game.judged_outcome(setup, state, replies), None

    def run_result(self, setup: Setup, state: Any, ne: Outcome | None, round_log: list[dict[str, Any]],
                   first_valid: list[bool], decisions: list[int], outcome: Outcome | None = None) -> dict[str, Any]:
        """The finished run's record fields: outcome (the judge's, when given), equilibrium comparison,
        rounds, score, metrics."""
        out = outcome if outcome is not None else self.game.outcome(state)
        n = len(out.payoffs)
        if ne is not None:
            dev = [self.game.deviation(setup, out, ne, i) for i in range(n)]
            # scored like the metrics: a rule break scores 0 (see analysis/metrics.py)
            ratio = [(p if ok else 0.0) / q if q else None for p, q, ok in zip(out.payoffs, ne.payoffs, out.valid)]
        # a fast-forwarded stretch is one entry of the round log (``round`` to ``through``)
        rounds = sum(e.get("through", e["round"]) - e["round"] + 1 for e in round_log)
        return {"complete": True, "rounds": rounds, "actions": list(out.actions),
                "valid": list(out.valid), "first_valid": first_valid,
                "payoffs": list(out.payoffs), "winners": list(out.winners), "void": out.void,
                "ne_actions": list(ne.actions) if ne is not None else None,
                "ne_payoffs": list(ne.payoffs) if ne is not None else None,
                "payoff_ratio": ratio if ne is not None else [None] * n,
                "deviation": dev if ne is not None else [None] * n, "extra": dict(out.extra),
                "round_log": round_log, "score": self.game.score(setup, round_log),
                "metrics": self.game.metrics(setup, round_log),
                # decisions per seat in this run: resume derives the next decision indices from these
                "decisions": decisions}

    def charge(self, label: str, model: str | None, tokens_in: int | None, tokens_out: int | None,
               cached: bool = False) -> None:
        """Count a reply's cost against the budget (``HostOptions.budget``), if there is one."""
        if self.options.budget is not None:
            self.options.budget.charge(label, model, tokens_in, tokens_out, cached)

    def _direct(self, ctx: RunContext, seat: int) -> bool:
        """Whether the seat's player is a strategy baseline, asked for its action without a prompt."""
        return self._direct_entries[ctx.table][ctx.seats[seat]]

    @functools.cached_property
    def _direct_entries(self) -> list[list[bool]]:
        """Per table and player entry: a strategy baseline (known once the agents exist). The direct path
        judges actions with ``Game.judge_action``, so a game that reads replies its own way (its own
        ``judge``) sends every reply through it as text."""
        judged_as_objects = type(self.game).judge is Game.judge
        return [[judged_as_objects and isinstance(a, StrategyAgent) for a in row] for row in self.agents]

    def _decide_direct(self, d: Decision) -> tuple[Reply, Judgement, bool]:
        """A strategy baseline's decision: its action is asked for directly and judged as the object it is.

        The same attempts, decision indices, seeds and judgement as the text path (``_decide``) give, with
        the same record except ``messages`` and ``messages_from`` (None: no prompt was rendered). An action
        that its JSON text would not give back exactly (a tuple, a NaN, a numpy number) is judged as text.
        """
        ctx, seat, state = d.ctx, d.seat, d.state
        e = self.exps[ctx.table].experiment
        agent: StrategyAgent = self.agents[ctx.table][d.entry]  # type: ignore[assignment]  # a baseline's seat
        strategy = functools.partial(self.game.reference, state, seat)
        first_ok = True
        for attempt in range(e.reask + 1):
            index = ctx.counters[seat]
            ctx.counters[seat] += 1
            seed_key = (2, ctx.table, ctx.session, seat, ctx.run, d.rnd) + ((attempt,) if attempt else ())
            try:  # as _ask: a baseline's failure is an error of this decision, not of the experiment
                action = agent.act(strategy, LazyGenerator(e.seed, seed_key))
                reply = Reply(text=json_text(action))
            except Exception as exc:
                reply = Reply(text="", model=agent.model, error=f"{type(exc).__name__}: {exc}")
            if reply.error:
                judgement = Judgement(None, None, None)
            elif type(action) is dict and "```" not in reply.text and is_plain_json(action):
                judgement = self._judge(state, seat, action)
            else:
                judgement = self._judge(state, seat, reply.text)
            if attempt == 0:
                first_ok = judgement.valid or bool(reply.error)
            self._log_decision(d, agent, index, attempt, None, None, reply, judgement)
            if reply.error or judgement.valid:
                break
        return reply, judgement, first_ok

    async def _decide(self, d: Decision) -> tuple[Reply, Judgement, bool]:
        """One decision, re-asked up to ``reask`` times; returns the last reply, its judgement and
        whether the FIRST attempt was valid (the paper metrics count first attempts)."""
        ctx, seat, state, talk = d.ctx, d.seat, d.state, d.talk
        e = self.exps[ctx.table].experiment
        agent = self.agents[ctx.table][d.entry]
        if self._direct(ctx, seat):
            return self._decide_direct(d)
        messages = self._messages(d)
        coords = {"lineup": ctx.lineup.name, "session": ctx.session, "run": ctx.run, "round": d.rnd, "seat": seat}
        schema = self._schema(d)
        first_ok = True
        logged_upto = talk.logged(seat)
        for attempt in range(e.reask + 1):
            index = ctx.counters[seat]
            ctx.counters[seat] += 1
            seed_key = (2, ctx.table, ctx.session, seat, ctx.run, d.rnd) + ((attempt,) if attempt else ())
            request = DecisionRequest(messages, seat, index, functools.partial(self.game.reference, state, seat),
                                      e.seed, seed_key, coords, schema, self.game.name)
            reply = await self._ask(agent, request)
            judgement = Judgement(None, None, None) if reply.error else self._judge(state, seat, reply.text)
            # a reply cut at the limit is no rule break; one that ended inside its reasoning is never a move
            if reply.truncated and not reply.error and (not judgement.valid or reply.unfinished):
                judgement = self._cut(judgement, d, reply.unfinished)
            elif reply.unfinished and not reply.error and not judgement.valid:
                judgement = self._unclosed(judgement)
            reply = self._kept(reply)
            if attempt == 0:  # a reply cut at the token limit is no rule break of the model's
                first_ok = judgement.valid or bool(reply.error) or judgement.violation == TRUNCATED
            self._log_decision(d, agent, index, attempt, messages[logged_upto:], logged_upto, reply, judgement)
            logged_upto = len(messages) + 1  # the reply itself is this record's `response`
            if reply.error or judgement.valid or attempt == e.reask:
                notify = getattr(agent, "notify", None)  # a person learns their reply broke a rule
                if notify is not None and not reply.error and not judgement.valid:
                    notify(f"Your reply could not be used: {judgement.detail}. It is recorded as a rule break.")
                break
            messages = (*messages, Message("assistant", storable(reply.text)),
                        Message("user", self.template.reask(judgement.detail or "", state, seat, e.prompt)))
        talk.answered(seat, messages, reply.text, logged_upto)
        return reply, judgement, first_ok

    def _messages(self, d: Decision) -> tuple[Message, ...]:
        """What the seat is sent: its conversation so far and this move's request (the full prompt when it
        has none), with a steering instruction at the end."""
        ctx, seat, state, talk = d.ctx, d.seat, d.state, d.talk
        e = self.exps[ctx.table].experiment
        persona = self.exps[ctx.table].players[d.entry].persona
        fresh = self.template.render(state, seat, ctx.lineup.environment, e.prompt, ctx.history, ctx.n_past, persona)
        if talk.enabled and self.game.fresh_conversation(state, seat):
            talk.restart(seat)  # a player who remembers nothing of earlier rounds: the full prompt again
        messages = talk.request(seat, fresh, lambda: self.template.follow_up(state, seat, e.prompt))
        if d.steer:
            last = messages[-1]
            messages = (*messages[:-1], Message(last.role, f"{last.content}\n\n{d.steer}"))
        return messages

    def _cut(self, judgement: Judgement, d: Decision, unfinished: bool = False) -> Judgement:
        """An unusable reply the provider cut at the token limit: recorded as ``truncated``, not as the model's
        parse or schema error (the model was stopped before it could finish), with what was unusable."""
        llm = self.exps[d.ctx.table].players[d.entry].llm
        limit = f" (max_tokens = {llm.max_tokens})" if llm is not None else ""
        # the detail is also what a re-ask tells the model: no advice meant for the researcher (the CLI warns)
        why = "it ended inside its reasoning, before any answer" if unfinished else judgement.detail
        return Judgement(None, TRUNCATED, f"the reply was cut at the token limit{limit} before it ended, so it could "
                         f"not be used ({why})", judgement.extras)

    @staticmethod
    def _unclosed(judgement: Judgement) -> Judgement:
        """A reply whose reasoning block never closed though the server said the model stopped on its own:
        the model's own rule break, said as what happened, not as a token limit (raising max_tokens would
        not help)."""
        return Judgement(None, judgement.violation, "the reply ended inside a reasoning block that was never "
                         "closed, although the model stopped on its own (not at the token limit), and no usable "
                         f"answer came before it ({judgement.detail})", judgement.extras)

    def _schema(self, d: Decision) -> dict[str, Any] | None:
        """The reply's JSON Schema for an LLM seat with structured output on, else None."""
        llm = self.exps[d.ctx.table].players[d.entry].llm
        if llm is None or llm.structured == "off":
            return None
        cot = self.exps[d.ctx.table].experiment.prompt == "cot"
        return _reply_schema(self.game.action_spec(d.state, d.seat), llm.structured, cot,
                             reasoning_chars(llm.max_tokens))

    async def _ask(self, agent: Agent, request: DecisionRequest) -> Reply:
        assert self._sem is not None
        async with self._sem:
            budget = self.options.budget
            if budget is not None and isinstance(agent, LLMAgent) and not budget.allows():
                return Reply(text="", model=agent.model, error=f"budget reached: ${budget.spent:.4f} spent of the "
                             f"${budget.limit:g} allowed (--max-cost); resume with a higher limit to go on")
            # the call layer reserves each attempt's worst case against the cap before sending it
            token = SPEND.set((budget, agent.label)) if budget is not None and isinstance(agent, LLMAgent) else None
            try:
                return await agent.decide(request)
            except Exception as exc:  # an agent bug must not take the whole experiment down
                return Reply(text="", model=agent.model, error=storable(f"{type(exc).__name__}: {exc}"))
            finally:
                if token is not None:
                    SPEND.reset(token)

    @staticmethod
    def _kept(reply: Reply) -> Reply:
        """The reply as it is logged and goes on in the conversation: text that is not text (a lone surrogate,
        which the judge refused) is kept with visible escapes (games/text.py), so no later write, prompt,
        resume or report meets it."""
        text = storable(reply.text)
        if text is not reply.text:
            reply.text = text
        if reply.error:  # an error message may quote what a server sent, and so may its model name
            reply.error = storable(reply.error)
        if reply.model:
            reply.model = storable(reply.model)
        return reply

    def _judge(self, state: Any, seat: int, reply: str | dict[str, Any]) -> Judgement:
        """The judgement of a raw reply, or of a baseline's action object (see ``_decide_direct``)."""
        try:
            if isinstance(reply, dict):
                return self.game.judge_action(state, seat, reply)
            return self.game.judge(state, seat, reply)
        except Exception as exc:  # noqa: BLE001 - whatever a reply holds, it is a rule break, not a crash
            return Judgement(None, "parse_error", f"the reply could not be judged ({type(exc).__name__})")

    def _log_decision(self, d: Decision, agent: Agent, index: int, attempt: int,
                      new_messages: tuple[Message, ...] | None, offset: int | None, reply: Reply,
                      judgement: Judgement) -> None:
        """One decision record. In a conversation only the messages new since the player's previous
        record are logged (``messages_from`` says where they start), so a 20-round run stays linear; a
        strategy baseline's record has None for both (it is sent no prompt)."""
        player = self.exps[d.ctx.table].players[d.entry]
        structured = player.llm.structured if player.llm is not None else None
        key = self.game.action_key
        self.decisions += 1
        self._progress.step(decisions=1)
        if reply.tokens_in or reply.tokens_out:
            self._progress.usage(agent.label, reply.model or agent.model, reply.tokens_in, reply.tokens_out,
                                 reply.cached)
            self.charge(agent.label, reply.model or agent.model, reply.tokens_in, reply.tokens_out, reply.cached)
        self.sink.decision({
            "lineup": d.ctx.lineup.name, "session": d.ctx.session, "run": d.ctx.run, "round": d.rnd,
            "player": d.seat, "label": agent.label, "agent": agent.kind, "model": reply.model or agent.model,
            "template": self.template.id, "decision_index": index, "attempt": attempt,
            "messages": [m.to_dict() for m in new_messages] if new_messages is not None else None,
            "messages_from": offset,
            "response": reply.text,
            "action": judgement.action.get(key) if judgement.action else None,
            "reply": judgement.action,
            "valid": judgement.valid and not reply.error, "violation": judgement.violation,
            "detail": judgement.detail, "extras": judgement.extras or None,
            "latency_s": round(reply.latency_s, 6), "tokens_in": reply.tokens_in,
            "tokens_out": reply.tokens_out, "cached": reply.cached, "error": reply.error,
            "structured": structured, "persona": player.persona,
            **({"truncated": True} if reply.truncated else {}),  # the provider stopped it at max_tokens
            **reasoning_fields(reply),  # a reasoning model's thinking, apart from the judged response
            # the reasoning settings the seat played with: the analysis's axis (only when set)
            **({k: v for k, v in (("reasoning_effort", player.llm.reasoning_effort),
                                  ("reasoning_budget", player.llm.reasoning_tokens)) if v is not None}
               if player.llm is not None else {}),
        })
