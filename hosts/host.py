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

from econarena.agents.base import Agent, DecisionRequest, Message, Reply
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


def planned_calls(exp: Experiment, done: set[tuple[str, int, int]] | None = None) -> dict[str, tuple[int, bool]]:
    """Decisions each label will make: (count, exact). English auctions give an upper bound.

    ``done`` holds the (lineup, session, run) already complete in the run directory (``--resume``).
    """
    rounds, exact = exp.game.max_moves(exp.params, exp.n_players())
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
        ne = self.game.equilibrium(setup)  # None when the game declares no equilibrium
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
                        seats: tuple[int, ...], ne: Outcome | None, past: list[dict[str, Any]],
                        counters: list[int]) -> dict[str, Any]:
        e = self.exp.experiment
        history = self._history(past) if e.history != "none" and past else None
        state = self.game.initial_state(setup)
        talk = Conversations(self.game.info.rounds)
        rnd = 0
        errors: list[str] = []
        round_log: list[dict[str, Any]] = []
        first_valid = [True] * len(seats)
        start_counters = list(counters)
        while movers := self.game.to_move(state):
            results = await asyncio.gather(*(
                self._decide(li, lineup, session, run, rnd, seat, seats[seat], state, counters, history,
                             len(past), talk)
                for seat in movers))
            errors = [r.error for r, _, _ in results if r.error]
            if errors:
                break
            actions = {seat: j.action for seat, (_, j, _) in zip(movers, results)}
            for seat, (_, _, first_ok) in zip(movers, results):
                first_valid[seat] = first_valid[seat] and first_ok
            chance = np.random.default_rng(np.random.SeedSequence(e.seed, spawn_key=(3, session, run, rnd)))
            after = self.game.apply(state, actions, chance)
            round_log.append({"round": rnd, "actions": [actions.get(i) for i in range(len(seats))],
                              "events": self.game.events(state, after, actions)})
            if talk.enabled:
                for seat in range(len(seats)):
                    fields = self.game.report(state, after, actions, seat)
                    if fields is not None:
                        talk.report(seat, self.template.report(fields, after, seat))
            state = after
            rnd += 1
        labels = [self.exp.players[i].label for i in seats]
        base = {"lineup": lineup.name, "environment": lineup.environment, "session": session, "run": run,
                "labels": labels, "agents": [self.exp.players[i].agent for i in seats],
                "models": [self.agents[i].model for i in seats], "params": setup.to_dict(),
                "private_values": setup.values.get("private_value")}
        if errors:
            counters[:] = start_counters  # the retried run will reuse the same decision indices
            return {**base, "complete": False, "error": errors[0], "rounds": rnd + 1}
        return {**base, **self.run_result(setup, state, ne, round_log, first_valid)}

    def run_result(self, setup: Setup, state: Any, ne: Outcome | None, round_log: list[dict[str, Any]],
                   first_valid: list[bool]) -> dict[str, Any]:
        """The finished run's record fields: outcome, equilibrium comparison, rounds, score, metrics."""
        out = self.game.outcome(state)
        n = len(out.payoffs)
        if ne is not None:
            dev = [self.game.deviation(setup, out, ne, i) for i in range(n)]
            ratio = [p / q if q else None for p, q in zip(out.payoffs, ne.payoffs)]
        return {"complete": True, "rounds": len(round_log), "actions": list(out.actions),
                "valid": list(out.valid), "first_valid": first_valid,
                "payoffs": list(out.payoffs), "winners": list(out.winners), "void": out.void,
                "ne_actions": list(ne.actions) if ne is not None else None,
                "ne_payoffs": list(ne.payoffs) if ne is not None else None,
                "payoff_ratio": ratio if ne is not None else [None] * n,
                "deviation": dev if ne is not None else [None] * n, "extra": dict(out.extra),
                "round_log": round_log, "score": self.game.score(setup, round_log),
                "metrics": self.game.metrics(setup, round_log)}

    async def _decide(self, li: int, lineup: Lineup, session: int, run: int, rnd: int, seat: int, entry: int,
                      state: Any, counters: list[int], history: list[dict[str, Any]] | None,
                      n_past: int, talk: Conversations) -> tuple[Reply, Judgement, bool]:
        """One decision, re-asked up to ``reask`` times; returns the last reply, its judgement and
        whether the FIRST attempt was valid (the paper metrics count first attempts)."""
        e = self.exp.experiment
        agent = self.agents[entry]
        fresh = self.template.render(state, seat, lineup.environment, e.prompt, history, n_past)
        messages = talk.request(seat, fresh, lambda: self.template.follow_up(state, seat, e.prompt))
        coords = {"lineup": lineup.name, "session": session, "run": run, "round": rnd, "seat": seat}
        first_ok = True
        logged_upto = talk.logged(seat)
        for attempt in range(e.reask + 1):
            index = counters[seat]
            counters[seat] += 1
            seed_key = (2, li, session, seat, run, rnd) + ((attempt,) if attempt else ())
            request = DecisionRequest(messages, seat, index, functools.partial(self.game.strategy, state, seat),
                                      e.seed, seed_key, coords)
            reply = await self._ask(agent, request)
            judgement = Judgement(None, None, None) if reply.error else self.game.judge(state, seat, reply.text)
            if attempt == 0:
                first_ok = judgement.valid or bool(reply.error)
            self._log_decision(lineup, session, run, rnd, seat, agent, index, attempt, messages[logged_upto:],
                               logged_upto, reply, judgement)
            logged_upto = len(messages) + 1  # the reply itself is this record's `response`
            if reply.error or judgement.valid or attempt == e.reask:
                break
            messages = (*messages, Message("assistant", reply.text),
                        Message("user", self.template.reask(judgement.detail or "", state, seat, e.prompt)))
        talk.answered(seat, messages, reply.text, logged_upto)
        return reply, judgement, first_ok

    async def _ask(self, agent: Agent, request: DecisionRequest) -> Reply:
        assert self._sem is not None
        async with self._sem:
            try:
                return await agent.decide(request)
            except Exception as exc:  # an agent bug must not take the whole experiment down
                return Reply(text="", model=agent.model, error=f"{type(exc).__name__}: {exc}")

    def _log_decision(self, lineup: Lineup, session: int, run: int, rnd: int, seat: int, agent: Agent,
                      index: int, attempt: int, new_messages: tuple[Message, ...], offset: int, reply: Reply,
                      judgement: Judgement) -> None:
        """One decision record. In a conversation only the messages new since the player's previous
        record are logged (``messages_from`` says where they start), so a 20-round run stays linear."""
        key = self.game.action_key
        self.decisions += 1
        self.dir.decision({
            "lineup": lineup.name, "session": session, "run": run, "round": rnd, "player": seat,
            "label": agent.label, "agent": agent.kind, "model": reply.model or agent.model,
            "template": self.template.id, "decision_index": index, "attempt": attempt,
            "messages": [m.to_dict() for m in new_messages], "messages_from": offset,
            "response": reply.text,
            "action": judgement.action.get(key) if judgement.action else None,
            "reply": judgement.action,
            "valid": judgement.valid and not reply.error, "violation": judgement.violation,
            "detail": judgement.detail, "extras": judgement.extras or None,
            "latency_s": round(reply.latency_s, 6), "tokens_in": reply.tokens_in,
            "tokens_out": reply.tokens_out, "cached": reply.cached, "error": reply.error,
        })


class Conversations:
    """Each player's conversation through one run (games that declare ``rounds``).

    A player's first request is the full prompt; each later one carries the round's report and the new
    request, after the player's own earlier replies. Games without rounds get a fresh prompt each time.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.history: dict[int, tuple[Message, ...]] = {}
        self.reports: dict[int, list[str]] = {}
        self._logged: dict[int, int] = {}

    def request(self, seat: int, fresh: tuple[Message, ...], follow_up: Any) -> tuple[Message, ...]:
        past = self.history.get(seat)
        if not self.enabled or past is None:
            return fresh
        text = "\n\n".join([*self.reports.pop(seat, []), follow_up()])
        return (*past, Message("user", text))

    def report(self, seat: int, text: str) -> None:
        if seat in self.history:  # a report only means something to a player who has spoken
            self.reports.setdefault(seat, []).append(text)

    def logged(self, seat: int) -> int:
        return self._logged.get(seat, 0) if self.enabled else 0

    def answered(self, seat: int, messages: tuple[Message, ...], reply: str, logged_upto: int) -> None:
        """Keep the conversation; ``logged_upto`` counts the messages already in decision records."""
        if self.enabled:
            self.history[seat] = (*messages, Message("assistant", reply))
            self._logged[seat] = logged_upto
