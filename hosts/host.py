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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from econarena.agents.base import Agent, DecisionRequest, Reply
from econarena.agents.llm import RuntimeOptions, close_all, preflight, settings_problems
from econarena.agents.registry import create_agent
from econarena.games.base import ActionSpec, Judgement, Outcome, Setup
from econarena.games.schema import json_schema, reasoning_chars
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


class Progress:
    """A one-line bar on a terminal; elsewhere (CI, nohup, a log file) a plain line every LOG_EVERY_S."""

    LOG_EVERY_S = 30.0

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.total, self.label = total, label
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.done = 0
        self.start = time.perf_counter()
        self._last = self.start

    def step(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        rate = self.done / max(now - self.start, 1e-9)
        if self.tty and (now - self._last > 0.1 or self.done == self.total):
            self._last = now
            frac = self.done / self.total if self.total else 1.0
            bar = "#" * int(frac * 30)
            sys.stderr.write(f"\r{self.label} [{bar:<30}] {self.done}/{self.total} runs {rate:.1f}/s")
            sys.stderr.flush()
        elif not self.tty and now - self._last >= self.LOG_EVERY_S:
            self._last = now
            print(f"{self.label}: {self.done}/{self.total} runs ({rate:.2f}/s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


def preflight_experiment(exp: Experiment) -> list[str]:
    """Missing SDKs or keys for every LLM player, before anything starts."""
    problems = []
    for i, p in enumerate(exp.players):
        if p.llm is not None:
            problems += preflight(p.agent, p.llm, f"players[{i}] ({p.label})")
    return problems


@functools.lru_cache(maxsize=256)
def _reply_schema(spec: ActionSpec, mode: str, reasoning: bool, chars: int) -> dict[str, Any]:
    """Schemas repeat across decisions (same spec, same mode): build each once."""
    return json_schema(spec, mode, reasoning, chars)  # type: ignore[arg-type]


def settings_problems_of(exp: Experiment) -> list[str]:
    """What ``validate`` can find without keys or loading a model: structured modes, local model paths."""
    problems = []
    for i, p in enumerate(exp.players):
        if p.llm is not None:
            problems += settings_problems(p.agent, p.llm, f"players[{i}] ({p.label})")
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

    # ---- top level ----
    async def run(self) -> RunResult:
        e = self.exp.experiment
        total = len(self.lineups) * e.sessions * e.runs
        try:  # before the run directory is touched: a failure here leaves no manifest stuck at "running"
            self.agents = [create_agent(p.agent, p.label, responses=p.responses, k=p.k, llm=p.llm,
                                        options=self.options.runtime) for p in self.exp.players]
        except BaseException:
            await close_all()
            raise
        resume = self.dir.start(resolved_toml(self.exp), e.seed, e.name, self.options.resume)
        self._sem = asyncio.Semaphore(self.options.concurrency)
        progress = Progress(total, e.name, not self.options.quiet)
        self.done = len(resume.runs)
        progress.step(self.done)
        self._progress = progress
        start = time.perf_counter()
        status = "failed"
        try:
            queue: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
            for s in range(e.sessions):
                for li in range(len(self.lineups)):
                    queue.put_nowait((li, s))
            workers = [asyncio.create_task(self._worker(queue, resume))
                       for _ in range(min(self.options.concurrency, queue.qsize()) or 1)]
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
            self.dir.close()
            await close_all()
            self.dir.write_manifest(status=status, ended_at=now_iso(), runs_total=total,
                                    runs_complete=self.done, runs_incomplete=self.incomplete,
                                    elapsed_s=round(time.perf_counter() - start, 3))
        return RunResult(self.dir.path, status, total, self.done, self.incomplete,
                         time.perf_counter() - start, self.decisions)

    async def _worker(self, queue: asyncio.Queue[tuple[int, int]], resume: ResumeState) -> None:
        while True:
            try:
                li, s = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
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
        past = resume.session_runs(lineup.name, session)
        counters = [resume.decisions_per_seat.get((lineup.name, session, i), 0) for i in range(len(seats))]
        done_runs = {r["run"] for r in past}
        for run in range(e.runs):
            if run in done_runs:
                continue
            record = await self._play_run(li, lineup, session, run, setup, seats, ne, past, counters)
            self.dir.run(record)
            if not record["complete"]:
                self.incomplete += 1
                return  # later runs need this run's history; --resume retries from here
            past.append(record)
            self.done += 1
            self._progress.step()

    def _history(self, past: list[dict[str, Any]]) -> list[dict[str, Any]]:
        mode = self.exp.experiment.history
        key = self.game.history_key
        out = []
        for rec in past[-self.exp.experiment.max_history:]:
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
                        seats: tuple[int, ...], ne: Outcome, past: list[dict[str, Any]],
                        counters: list[int]) -> dict[str, Any]:
        e = self.exp.experiment
        history = self._history(past) if e.history != "none" and past else None
        state = self.game.initial_state(setup)
        rnd = 0
        errors = []
        start_counters = list(counters)
        while movers := self.game.to_move(state):
            results = await asyncio.gather(*(
                self._decide(li, lineup, session, run, rnd, seat, seats[seat], state, counters, history, len(past))
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
                "payoff_ratio": [p / q if q else None for p, q in zip(out.payoffs, ne.payoffs)],
                "deviation": dev, "extra": dict(out.extra)}

    async def _decide(self, li: int, lineup: Lineup, session: int, run: int, rnd: int, seat: int, entry: int,
                      state: Any, counters: list[int], history: list[dict[str, Any]] | None,
                      n_past: int) -> tuple[Reply, Judgement]:
        e = self.exp.experiment
        agent = self.agents[entry]
        messages = self.template.render(state, seat, lineup.environment, e.prompt, history, n_past)
        index = counters[seat]
        counters[seat] += 1
        coords = {"lineup": lineup.name, "session": session, "run": run, "round": rnd, "seat": seat}
        llm = self.exp.players[entry].llm
        structured = llm.structured if llm is not None else None
        schema = None
        if llm is not None and llm.structured != "off":
            schema = _reply_schema(self.game.action_spec(state, seat), llm.structured, e.prompt == "cot",
                                   reasoning_chars(llm.max_tokens))
        request = DecisionRequest(messages, seat, index, functools.partial(self.game.strategy, state, seat),
                                  e.seed, (2, li, session, seat, run, rnd), coords, schema)
        assert self._sem is not None
        async with self._sem:
            try:
                reply = await agent.decide(request)
            except Exception as exc:  # an agent bug must not take the whole experiment down
                reply = Reply(text="", model=agent.model, error=f"{type(exc).__name__}: {exc}")
        if reply.error:
            judgement = Judgement(None, None, None)
        else:
            judgement = self.game.judge(state, seat, reply.text)
        key = self.game.action_key
        self.decisions += 1
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
            "structured": structured,
        })
        return reply, judgement
