"""The Host: expands an experiment into tables x sessions x runs and plays them through asyncio.

Seeds: a session's configuration is drawn from ``SeedSequence(seed, spawn_key=(0, session))``, shared by
every table (lineup) of that session, so in the rational and self environments each model faces the same
private values (a paired comparison). Each decision's generator comes from its coordinates, so results do
not depend on scheduling, concurrency or interruptions: a resumed experiment equals an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from econarena.agents.base import Agent, DecisionRequest, Reply
from econarena.agents.llm import RuntimeOptions, close_all, preflight
from econarena.agents.registry import create_agent
from econarena.games.base import Judgement, Outcome, Setup
from econarena.hosts.config import Experiment, Lineup, resolved_toml
from econarena.hosts.prompts import Template
from econarena.hosts.records import ResumeState, RunDirectory, now_iso


@dataclass
class HostOptions:
    concurrency: int = 16
    resume: bool = False
    quiet: bool = False
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)


@dataclass
class RunResult:
    path: Path
    status: str  # complete | incomplete | failed | interrupted
    runs_total: int
    runs_done: int
    runs_incomplete: int
    elapsed_s: float
    decisions: int


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """What a long run is doing: runs and decisions done, decisions per second, time left.

    On a terminal one live line, redrawn at most 10 times a second. Elsewhere (CI, nohup, a log file) plain
    lines: the first at once, then after 2, 4, 8 ... seconds up to every LOG_EVERY_S, so a log shows the
    run started and how fast it goes without flooding. Rates count only this process's work, never the
    runs a resume found finished.
    """

    LOG_EVERY_S = 30.0
    FIRST_LOG_S = 2.0

    def __init__(self, total: int, label: str, enabled: bool, done_before: int = 0) -> None:
        self.total, self.label = total, label
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.before = done_before
        self.runs = 0
        self.decisions = 0
        self.start = time.perf_counter()
        self._last = self.start
        self._gap = self.FIRST_LOG_S
        if enabled and not self.tty:
            resumed = f", {done_before} already complete" if done_before else ""
            print(f"{label}: started, {total - done_before} of {total} runs to play{resumed}", file=sys.stderr,
                  flush=True)

    def line(self) -> str:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        done = self.before + self.runs
        left = ""
        if self.runs > 0 and done < self.total:
            left = f", about {_duration((self.total - done) * elapsed / self.runs)} left"
        return (f"{self.label}: {done}/{self.total} runs, {self.decisions} decisions "
                f"({self.decisions / elapsed:.1f}/s){left}")

    def step(self, runs: int = 0, decisions: int = 0) -> None:
        self.runs += runs
        self.decisions += decisions
        if not self.enabled:
            return
        now = time.perf_counter()
        finished = self.before + self.runs >= self.total
        if self.tty and (now - self._last > 0.1 or (runs and finished)):
            self._last = now
            sys.stderr.write("\r\033[K" + self.line())
            sys.stderr.flush()
        elif not self.tty and now - self._last >= self._gap:
            self._last = now
            self._gap = min(self._gap * 2, self.LOG_EVERY_S)
            print(self.line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\r\033[K" + self.line() + "\n")
            sys.stderr.flush()


def preflight_experiment(exp: Experiment) -> list[str]:
    """Missing SDKs or keys for every LLM player, before anything starts."""
    problems = []
    for i, p in enumerate(exp.players):
        if p.llm is not None:
            problems += preflight(p.agent, p.llm, f"players[{i}] ({p.label})")
    return problems


def planned_calls(exp: Experiment, done: set[tuple[str, int, int]] | None = None) -> dict[str, tuple[int, bool]]:
    """Decisions each label will make: (count, exact). English auctions give an upper bound.

    ``done`` holds the (lineup, session, run) already complete in the run directory (``--resume``).
    """
    exact = exp.game.name != "english_auction"
    rounds = 1 if exact else exp.params.model_dump().get("max_rounds", 1)
    out: dict[str, tuple[int, bool]] = {}
    for lineup in exp.lineups():
        finished = sum(1 for key in (done or ()) if key[0] == lineup.name)
        left = exp.experiment.sessions * exp.experiment.runs - finished
        for seat in lineup.seats:
            label = exp.players[seat].label
            out[label] = (out.get(label, (0, exact))[0] + left * rounds, exact)
    return out


class Host:
    def __init__(self, exp: Experiment, out: Path, options: HostOptions | None = None) -> None:
        self.exp = exp
        self.game = exp.game
        self.options = options or HostOptions()
        self.dir = RunDirectory(out)
        self.template = Template(exp.game, exp.prompts)
        self.lineups = exp.lineups()
        self.agents: list[Agent] = []
        self._sem: asyncio.Semaphore | None = None
        self.decisions = 0
        self.incomplete = 0
        self.done = 0
        self._progress = Progress(0, "", enabled=False)

    # ---- top level ----
    async def run(self) -> RunResult:
        e = self.exp.experiment
        total = len(self.lineups) * e.sessions * e.runs
        self.dir.lock()  # first: a second process on this directory stops here, before touching anything
        try:
            try:  # before the run directory is touched: a failure here leaves no manifest stuck at "running"
                self.agents = [create_agent(p.agent, p.label, responses=p.responses, k=p.k, llm=p.llm,
                                            options=self.options.runtime) for p in self.exp.players]
            except BaseException:
                await close_all()
                raise
            return await self._run_locked(total)
        finally:
            self.dir.unlock()

    async def _run_locked(self, total: int) -> RunResult:
        e = self.exp.experiment
        try:
            resume = self.dir.start(resolved_toml(self.exp), e.seed, e.name, self.options.resume)
        except BaseException:
            await close_all()
            raise
        self._sem = asyncio.Semaphore(self.options.concurrency)
        self.done = len(resume.runs)
        self._progress = progress = Progress(total, e.name, not self.options.quiet, self.done)
        start = time.perf_counter()
        status = "failed"
        try:
            # Lazily: (table, session) pairs are produced as workers ask, so memory does not grow with
            # the number of sessions (10**12 sessions start at once and run in constant memory).
            work = ((li, s) for s in range(e.sessions) for li in range(len(self.lineups)))
            n_workers = max(1, min(self.options.concurrency, e.sessions * len(self.lineups)))
            workers = [asyncio.create_task(self._worker(work, resume)) for _ in range(n_workers)]
            try:
                await asyncio.gather(*workers)
            except BaseException:
                for w in workers:
                    w.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise
            status = "complete" if self.incomplete == 0 else "incomplete"
        except (asyncio.CancelledError, KeyboardInterrupt):
            status = "interrupted"
            raise
        finally:
            progress.close()
            try:
                self.dir.close()
            finally:
                await close_all()
                self.dir.write_manifest(status=status, ended_at=now_iso(), runs_total=total,
                                        runs_complete=self.done, runs_incomplete=self.incomplete,
                                        elapsed_s=round(time.perf_counter() - start, 3))
        return RunResult(self.dir.path, status, total, self.done, self.incomplete,
                         time.perf_counter() - start, self.decisions)

    async def _worker(self, work: Iterator[tuple[int, int]], resume: ResumeState) -> None:
        for li, s in work:  # one shared generator: each pair goes to exactly one worker
            await self._session(li, self.lineups[li], s, resume)

    # ---- one session: a fixed configuration, several runs ----
    def session_setup(self, session: int, lineup: Lineup) -> tuple[Setup, tuple[int, ...]]:
        e = self.exp.experiment
        rng = np.random.default_rng(np.random.SeedSequence(e.seed, spawn_key=(0, session)))
        setup = self.game.setup(self.exp.params, len(lineup.seats), rng)
        seats = lineup.seats
        if e.shuffle_seats:
            perm = np.random.default_rng(np.random.SeedSequence(e.seed, spawn_key=(1, session))).permutation(len(seats))
            seats = tuple(seats[int(j)] for j in perm)
        return setup, seats

    async def _session(self, li: int, lineup: Lineup, session: int, resume: ResumeState) -> None:
        e = self.exp.experiment
        setup, seats = self.session_setup(session, lineup)
        ne = self.game.equilibrium(setup)
        prior = resume.session_runs(lineup.name, session)  # runs 0..k-1: resume keeps no gaps
        counters = [resume.decisions_per_seat.get((lineup.name, session, i), 0) for i in range(len(seats))]
        # only the last max_history runs are ever shown: memory stays flat however many runs a session has
        past: deque[dict[str, Any]] = deque(prior, maxlen=e.max_history)
        n_past = len(prior)
        for run in range(n_past, e.runs):
            record = await self._play_run(li, lineup, session, run, setup, seats, ne, past, n_past, counters)
            self.dir.run(record)
            if not record["complete"]:
                self.incomplete += 1
                return  # later runs need this run's history; --resume retries from here
            past.append(record)
            n_past += 1
            self.done += 1
            self._progress.step(runs=1)

    def _history(self, past: deque[dict[str, Any]]) -> list[dict[str, Any]]:
        mode = self.exp.experiment.history
        key = self.game.history_key
        out = []
        for rec in list(past)[-self.exp.experiment.max_history:]:
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
            if mode == "full" and rec.get("extra", {}).get("target") is not None:
                entry["target"] = rec["extra"]["target"]
            out.append(entry)
        return out

    async def _play_run(self, li: int, lineup: Lineup, session: int, run: int, setup: Setup,
                        seats: tuple[int, ...], ne: Outcome, past: deque[dict[str, Any]], n_past: int,
                        counters: list[int]) -> dict[str, Any]:
        e = self.exp.experiment
        history = self._history(past) if e.history != "none" and past else None
        state = self.game.initial_state(setup)
        rnd = 0
        errors = []
        start_counters = list(counters)
        while movers := self.game.to_move(state):
            results = await asyncio.gather(*(
                self._decide(li, lineup, session, run, rnd, seat, seats[seat], state, counters, history, n_past)
                for seat in movers))
            errors = [r.error for r, _ in results if r.error]
            if errors:
                break
            state = self.game.apply(state, {seat: j.action for seat, (_, j) in zip(movers, results)})
            rnd += 1
        labels = [self.exp.players[i].label for i in seats]
        base = {"lineup": lineup.name, "environment": lineup.environment, "session": session, "run": run,
                "labels": labels, "agents": [self.exp.players[i].agent for i in seats],
                "models": [self.agents[i].model for i in seats], "params": setup.to_dict(),
                "private_values": setup.values.get("private_value")}
        if errors:
            counters[:] = start_counters  # the retried run will reuse the same decision indices
            return {**base, "complete": False, "error": errors[0], "rounds": rnd + 1}
        out = self.game.outcome(state)
        dev = [self.game.deviation(setup, out, ne, i) for i in range(len(seats))]
        return {**base, "complete": True, "rounds": rnd, "actions": list(out.actions), "valid": list(out.valid),
                "payoffs": list(out.payoffs), "winners": list(out.winners), "void": out.void,
                "ne_actions": list(ne.actions), "ne_payoffs": list(ne.payoffs),
                # scored like the metrics: a rule break scores 0 (see analysis/metrics.py)
                "payoff_ratio": [(p if ok else 0.0) / q if q else None
                                 for p, q, ok in zip(out.payoffs, ne.payoffs, out.valid)],
                "deviation": dev, "extra": dict(out.extra),
                # decisions per seat in this run: resume derives the next decision indices from these
                "decisions": [c - s for c, s in zip(counters, start_counters)]}

    async def _decide(self, li: int, lineup: Lineup, session: int, run: int, rnd: int, seat: int, entry: int,
                      state: Any, counters: list[int], history: list[dict[str, Any]] | None,
                      n_past: int) -> tuple[Reply, Judgement]:
        e = self.exp.experiment
        agent = self.agents[entry]
        messages = self.template.render(state, seat, lineup.environment, e.prompt, history, n_past)
        index = counters[seat]
        counters[seat] += 1
        coords = {"lineup": lineup.name, "session": session, "run": run, "round": rnd, "seat": seat}
        request = DecisionRequest(messages, seat, index, functools.partial(self.game.strategy, state, seat),
                                  e.seed, (2, li, session, seat, run, rnd), coords)
        assert self._sem is not None
        async with self._sem:
            try:
                reply = await agent.decide(request)
            except Exception as exc:  # an agent bug must not take the whole experiment down
                reply = Reply(text="", model=agent.model, error=f"{type(exc).__name__}: {exc}")
        if reply.error:
            judgement = Judgement(None, None, None)
        else:
            try:
                judgement = self.game.judge(state, seat, reply.text)
            except Exception as exc:  # noqa: BLE001 - whatever a reply holds, it is a rule break, not a crash
                judgement = Judgement(None, "parse_error", f"the reply could not be judged ({type(exc).__name__})")
        key = self.game.action_key
        self.decisions += 1
        self._progress.step(decisions=1)
        self.dir.decision({
            "lineup": lineup.name, "session": session, "run": run, "round": rnd, "player": seat,
            "label": agent.label, "agent": agent.kind, "model": reply.model or agent.model,
            "template": self.template.id, "decision_index": index,
            "messages": [m.to_dict() for m in messages], "response": reply.text,
            "action": judgement.action.get(key) if judgement.action else None,
            "valid": judgement.valid and not reply.error, "violation": judgement.violation,
            "detail": judgement.detail, "extras": judgement.extras or None,
            "latency_s": round(reply.latency_s, 6), "tokens_in": reply.tokens_in,
            "tokens_out": reply.tokens_out, "cached": reply.cached, "error": reply.error,
        })
        return reply, judgement
