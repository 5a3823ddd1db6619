"""Steering experiments (``econarena steer``): CFR over prompt actions, with OpenSpiel.

Each session is one game. It is played once, unsteered, up to the steered seat's steered decision (the
*prefix*: fruit trade's opening proposal); from there it is played once per prompt action and LLM sample
(the *branches*), the action's instruction added to the steered request. Every branch is an ordinary run
record (``run = action_index * samples + sample``, with a ``steer`` key), so transcripts, rule breaks and
the report read them like any run. The branches' payoffs are the values of the steering subgame, which
OpenSpiel's CFR solves (:mod:`..games.steering`); one line per game goes to ``steering.jsonl``.

A game is atomic: its run records and steering line are written when every branch has finished. A game
stopped by an API error writes nothing and is replayed by ``--resume`` (the replies it already got come
back from the response cache: same coordinates, same sample). Branches run concurrently, so a local
model batches them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..formats.rundir import STEERING, ResumeState, scan_jsonl, set_aside
from ..games.steering.cfr import action_space, solve
from .config import Experiment, Lineup
from .host import Host, HostOptions
from .playthrough import Conversations, Decision, Playthrough, RunContext


class SteerHost(Host):
    def __init__(self, exp: Experiment, out: Path, options: HostOptions | None = None) -> None:
        if exp.steer is None:
            raise ValueError("a steering experiment needs a [steer] table")
        super().__init__(exp, out, options)
        self.steer = exp.steer
        self.space = action_space(exp.game, exp.steer.actions, exp.params)
        self.branches = len(self.space) * exp.steer.samples
        self.baseline = next(i for i, (label, _) in enumerate(self.space) if label == "any")
        self._steered: set[tuple[str, int]] = set()  # games whose steering line is written
        self._mute: set[tuple[str, int, int]] = set()  # decisions a resume must not log twice

    async def run(self) -> Any:
        from ..games.steering.cfr import require_openspiel

        require_openspiel()  # OpenSpiel missing: say so before any model is called
        return await super().run()

    async def _run_locked(self, total: int) -> Any:
        self._steered = self._read_steered()
        return await super()._run_locked(total)

    def _read_steered(self) -> set[tuple[str, int]]:
        """Games already steered (a resume); unreadable lines (a kill mid-write) are moved aside."""
        path = self.dir.path / STEERING
        good, bad = scan_jsonl(path)
        good = [r for r in good if isinstance(r.get("session"), int) and isinstance(r.get("lineup"), str)]
        if bad:
            set_aside(path, good, [b.to_record() for b in bad])
        return {(r["lineup"], r["session"]) for r in good}

    def session_finished(self, li: int, session: int, resume: ResumeState) -> bool:
        return (self.lineups[li].name, session) in self._steered

    # ---- one game ----
    async def _session(self, li: int, lineup: Lineup, session: int, resume: ResumeState) -> None:
        if (lineup.name, session) in self._steered:
            return
        setup, seats = self.session_setup(session, lineup, li)
        ne = self.game.equilibrium(setup)
        prior = {r["run"]: r for r in resume.session_runs(lineup.name, session)}
        if 0 in prior and "steer" in prior[0] and prior[0]["steer"] is None:  # an unsteerable game, kept
            await self._unsteerable(RunContext(li, lineup, session, 0, setup, seats, ne, []), None, prior)
            return
        if all(run in prior for run in range(self.branches)):  # killed before its steering line: no call
            await self._write_game(lineup, session, prior, prior)
            return
        if 0 in prior:
            self._mute.add((lineup.name, session, 0))  # the prefix's decisions are logged with run 0
        seat, turn = self.steer.seat, self.steer.turn
        play = Playthrough(self.game.initial_state(setup), Conversations(self.game.info.rounds), len(seats))
        ctx = RunContext(li, lineup, session, 0, setup, seats, ne, [0] * len(seats))
        while not (seat in self.game.to_move(play.state) and play.moves[seat] == turn):
            if not await self._advance(ctx, play):
                break
        if play.errors:
            self.incomplete += 1
            return
        if self.game.is_terminal(play.state):  # the game ended before the steered decision
            await self._unsteerable(ctx, play, prior)
            return
        prefix = list(ctx.counters)
        jobs = []
        for i, (label, text) in enumerate(self.space):
            for k in range(self.steer.samples):
                run = i * self.steer.samples + k
                if run not in prior:
                    jobs.append(self._branch(replace(ctx, run=run, counters=list(prefix)), play, prefix, text,
                                             {"action": label, "action_index": i, "sample": k, "seat": seat,
                                              "space": self._space_name()}))
        records = {**prior, **{r["run"]: r for r in await asyncio.gather(*jobs)}}
        if any(not r.get("complete", True) for r in records.values()):
            self.incomplete += 1  # nothing of this game is written: --resume replays it
            return
        await self._write_game(lineup, session, records, prior)

    async def _write_game(self, lineup: Lineup, session: int, records: dict[int, dict[str, Any]],
                          prior: dict[int, dict[str, Any]]) -> None:
        """The game's new run records, then its steering line (last: its presence marks the game done).
        CFR runs in a worker thread, so the other games' model calls go on meanwhile."""
        stop = threading.Event()
        try:
            line = await asyncio.to_thread(self._steering_record, lineup, session, records, stop.is_set)
        except asyncio.CancelledError:  # a stop signal: the solve ends at its next iteration, not its last
            stop.set()
            raise
        for run in sorted(records):
            if run not in prior:
                self.done += 1  # counted before the record leaves: a Ray worker ships both at once
                self.sink.run(records[run])
                self._progress.step(runs=1)
        self.sink.append(STEERING, line)
        self._steered.add((lineup.name, session))

    async def _branch(self, ctx: RunContext, prefix: Playthrough, prefix_counters: list[int], instruction: str,
                      steer: dict[str, Any]) -> dict[str, Any]:
        play = prefix.branch()
        more = await self._advance(ctx, play, {self.steer.seat: instruction} if instruction else None)
        while more:
            more = await self._advance(ctx, play)
        made = [c - (0 if ctx.run == 0 else p) for c, p in zip(ctx.counters, prefix_counters)]  # run 0: the prefix
        record = await self._finish(ctx, play, made)
        return {**record, "steer": steer}

    async def _unsteerable(self, ctx: RunContext, play: Playthrough | None, prior: dict[int, dict[str, Any]]) -> None:
        """A game over before the steered decision (an opening that broke a rule ends fruit trade) has
        nothing to steer: its one run is kept, and its steering line says why it has no values."""
        lineup, session = ctx.lineup, ctx.session
        if 0 not in prior and play is not None:
            record = await self._finish(ctx, play, ctx.counters)
            if not record.get("complete", True):
                self.incomplete += 1
                return
            self.done += self.branches  # the game is finished: its branches will never be played
            self.sink.run({**record, "steer": None})
        else:
            self.done += self.branches
        self._progress.step(runs=self.branches)
        self.sink.append(STEERING, {
            "lineup": lineup.name, "session": session, "seat": self.steer.seat, "space": self._space_name(),
            "actions": [label for label, _ in self.space], "skipped": "the game ended before the steered "
            "decision", "runs": [[0]]})
        self._steered.add((lineup.name, session))

    def _log_decision(self, d: Decision, *args: Any) -> None:
        if d.ctx.coords in self._mute:
            self.decisions += 1  # replayed from the cache for a resume: already in decisions.jsonl
            return
        super()._log_decision(d, *args)

    def _space_name(self) -> str:
        actions = self.steer.actions
        return actions if isinstance(actions, str) else "custom"

    def _steering_record(self, lineup: Lineup, session: int, records: dict[int, dict[str, Any]],
                         stop: Callable[[], bool] | None = None) -> dict[str, Any]:
        """Solve the game's steering subgame with OpenSpiel's CFR and summarise its branches."""
        s = self.steer
        n_actions = len(self.space)
        runs = [[i * s.samples + k for k in range(s.samples)] for i in range(n_actions)]
        values = [[[float(x) for x in records[r]["payoffs"]] for r in row] for row in runs]
        curve = solve(values, s.seat, self.baseline, s.iterations, s.every, stop)
        branches = [records[r] for row in runs for r in row]
        return {
            "lineup": lineup.name, "session": session, "seat": s.seat, "space": self._space_name(),
            "actions": [label for label, _ in self.space], "instructions": [text for _, text in self.space],
            "baseline": self.baseline, "samples": s.samples, "payoff": _payoff_mode(records[0]),
            "values": values, "runs": runs, "iterations": [c.to_dict() for c in curve],
            "report_iteration": s.report_at, "total_iterations": s.iterations,
            "branches": branch_shares(branches),
        }


def _payoff_mode(record: dict[str, Any]) -> str:
    return "llm" if (record.get("extra") or {}).get("judge_payoffs") is not None else "structured"


def branch_shares(branches: list[dict[str, Any]]) -> dict[str, Any]:
    """Shares over one game's branches (the paper's unit is a conversation branch): direct agreement,
    a non-zero payoff, at least one / both payoffs negative or positive, a rule break by any seat."""
    n = len(branches)

    def share(test: Any) -> float:
        return sum(1 for b in branches if test(b)) / n if n else 0.0

    return {
        "n": n,
        "agreement": share(lambda b: bool((b.get("metrics") or {}).get("agreement"))),
        "nonzero": share(lambda b: any(p != 0 for p in b["payoffs"])),
        "neg1": share(lambda b: any(p < 0 for p in b["payoffs"])),
        "neg2": share(lambda b: all(p < 0 for p in b["payoffs"])),
        "pos1": share(lambda b: any(p > 0 for p in b["payoffs"])),
        "pos2": share(lambda b: all(p > 0 for p in b["payoffs"])),
        "rule_breaks": share(lambda b: not all(b["valid"])),
    }

