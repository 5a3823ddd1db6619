"""Playing an experiment's sessions on a Ray cluster (``econarena run --ray``), the driver staying the only
writer of the run directory.

What runs where:
- the *driver* (the process that ran ``econarena run``) holds the run directory's lock, reads it for
  ``--resume``, hands out sessions and writes every record, exactly as the local engine does;
- :class:`SessionWorker` actors (one per CPU by default, ``--ray-workers N``) each play up to
  ``--concurrency`` sessions at once on their own event loop, with the experiment's Host and agents built
  once per worker; a session is the unit of work because its runs share history;
- the :class:`Ledger` actor, on the driver's machine, receives each finished run's records from the
  workers (its decisions and judge lines travel with its run record, so nothing of a run arrives without
  the rest) and hands them to the driver, which writes them;
- agents/cluster.py's services actor owns the providers' limits and the response cache for the cluster,
  and local models run as replica actors.

Faults. A worker ships a run with one ledger call as soon as the run is finished; the ledger is the only
way a record reaches the driver. A worker killed mid-session is restarted by Ray and the session's call
retried (Ray's actor restarts and task retries, ``max_restarts`` / ``max_task_retries``); the retried call
first asks the ledger what the dead attempt shipped and continues after its last finished run, so nothing
is lost or played twice. Each attempt holds an epoch; a stale attempt (a worker Ray gave up on that still
runs) has its calls refused. The driver killed: its actors die with it (Ray ties them to their owner), and
``--resume`` reads the run directory as after any kill.

Results do not depend on the number of workers, the concurrency or the order in which sessions finish:
every draw comes from the seed and the decision's coordinates (hosts/host.py), never from scheduling.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import os
import socket
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray

from .. import __version__
from ..rundir import JUDGE_LOG, ResumeState, encode_record, encode_run, loads_line, run_key

SHIP_S = 0.01  # a worker gathers finished runs this long before shipping them in one call
PLACE_WARN_S = 20.0  # workers not placed after this long: the cluster is busy, tell the user
MAX_RESTARTS = 4  # a worker killed more often than this fails its sessions (they stay for --resume)


class RayUnavailable(Exception):
    """The cluster named by --ray cannot be reached or started (a configuration problem: exit 2)."""


@dataclass
class _Session:
    epoch: int = 0
    runs: list[bytes] = field(default_factory=list)
    ended: bool = False


@ray.remote(num_cpus=0, max_concurrency=1000)
class Ledger:
    """What workers shipped, per session, until the driver has written it; and each session's progress,
    so that a retried call continues where its killed attempt stopped."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[Any, ...], _Session] = {}
        self.outbox: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.events: dict[int, asyncio.Event] = defaultdict(asyncio.Event)

    def begin(self, key: tuple[Any, ...]) -> tuple[int, list[bytes], bool]:
        """A new attempt at a session: its epoch, the runs earlier attempts shipped (their lines), whether
        it ended."""
        s = self.sessions.setdefault(key, _Session())
        s.epoch += 1
        return s.epoch, list(s.runs), s.ended

    def put(self, key: tuple[Any, ...], epoch: int, batch: dict[str, Any]) -> bool:
        s = self.sessions.get(key)
        if s is None or s.epoch != epoch:
            return False  # a stale attempt: its session went on elsewhere
        run = batch.get("run")
        if run is not None:
            s.runs.append(run)  # its JSON line: parsed only if the session must continue elsewhere
            s.ended = not batch["complete"]  # an incomplete run ends a session
        s.ended = s.ended or bool(batch.get("end"))
        self.outbox[key[0]].append(batch)
        self.events[key[0]].set()
        return True

    async def take(self, exp: int, timeout: float) -> list[dict[str, Any]]:
        """The batches of experiment ``exp`` not yet taken; waits up to ``timeout`` s for the first."""
        if not self.outbox[exp] and timeout > 0:
            event = self.events[exp]
            event.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(event.wait(), timeout)
        out = self.outbox.pop(exp, [])
        return out

    def put_many(self, items: list[tuple[tuple[Any, ...], int, dict[str, Any]]]) -> list[bool]:
        """Batches of several sessions in one call (a worker ships what finished in the last moments)."""
        return [self.put(key, epoch, batch) for key, epoch, batch in items]

    def close(self, keys: list[tuple[Any, ...]]) -> None:
        """The driver saw these sessions' calls return: forget them."""
        for key in keys:
            self.sessions.pop(key, None)

    def cpu_s(self) -> float:
        """CPU seconds this actor has used (the benchmark's projection of the ledger's ceiling)."""
        import time

        return time.process_time()


class _ShipSink:
    """A Host's sink on a worker: a session's records, encoded here as the JSON lines the run directory
    holds (the workers do that work, not the driver), grouped by run and shipped to the ledger when the
    run's record is written (its decisions and judge lines with it); the rest when the session ends."""

    def __init__(self, view: Any, shipper: _Shipper, key: tuple[Any, ...], epoch: int) -> None:
        self.view, self.shipper, self.key, self.epoch = view, shipper, key, epoch
        self.decisions: dict[tuple[str, int, int], list[bytes]] = defaultdict(list)
        self.judged: dict[tuple[str, int, int], list[bytes]] = defaultdict(list)
        self.other: list[tuple[str, bytes]] = []
        self.shipped = (0, 0, 0)
        self.accepted: list[asyncio.Future[bool]] = []

    def decision(self, rec: dict[str, Any]) -> None:
        self.decisions[run_key(rec)].append(encode_record(rec))

    def append(self, name: str, rec: dict[str, Any]) -> None:
        if name == JUDGE_LOG:
            self.judged[run_key(rec)].append(encode_record(rec))
        else:
            self.other.append((name, encode_record(rec)))

    def run(self, rec: dict[str, Any]) -> None:
        k = run_key(rec)
        judged = b"".join(self.judged.pop(k, []))
        self._ship({"decisions": b"".join(self.decisions.pop(k, [])),
                    "appends": [(JUDGE_LOG, judged)] if judged else [],
                    "run": encode_run(rec), "complete": bool(rec.get("complete", True))})

    def end(self) -> None:
        """What no run record took along (a steering line; decisions of a game stopped by an error)."""
        decisions = b"".join(d for lines in self.decisions.values() for d in lines)
        judged = b"".join(j for lines in self.judged.values() for j in lines)
        appends = ([(JUDGE_LOG, judged)] if judged else []) + self.other
        self.decisions.clear()
        self.judged.clear()
        self.other = []
        self._ship({"decisions": decisions, "appends": appends, "run": None, "end": True})

    def _ship(self, batch: dict[str, Any]) -> None:
        v = self.view
        now = (v.done, v.incomplete, v.decisions)
        batch.update(exp=self.key[0], done=now[0] - self.shipped[0], incomplete=now[1] - self.shipped[1],
                     decisions_made=now[2] - self.shipped[2], usage=v._progress.drain())
        self.shipped = now
        self.accepted.append(self.shipper.ship(self.key, self.epoch, batch))


class _Shipper:
    """A worker's batches of every session it plays, sent to the ledger together every ``SHIP_S`` (one
    actor call for many runs: a call costs about a millisecond of CPU on each side). A batch still here when
    the worker dies was never shipped, so its runs are played again by the retried call: nothing is lost,
    nothing doubled."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger
        self.items: list[tuple[tuple[Any, ...], int, dict[str, Any]]] = []
        self.futures: list[asyncio.Future[bool]] = []
        self.task: asyncio.Task[None] | None = None

    def ship(self, key: tuple[Any, ...], epoch: int, batch: dict[str, Any]) -> asyncio.Future[bool]:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.items.append((key, epoch, batch))
        self.futures.append(future)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._send())
        return future

    async def _send(self) -> None:
        while self.items:
            await asyncio.sleep(SHIP_S)  # what else finishes meanwhile goes in the same call
            items, futures = self.items, self.futures
            self.items, self.futures = [], []
            try:
                results = await self.ledger.put_many.remote(items)
            except Exception as exc:  # noqa: BLE001 - the sessions waiting on it fail with it
                for f in futures:
                    f.set_exception(exc)
                continue
            for f, ok in zip(futures, results):
                f.set_result(ok)


class _Usage:
    """A worker view's progress: draws nothing, keeps each reply's tokens for the driver's bar (its cost)."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, str | None, int | None, int | None, bool]] = []

    def usage(self, label: str, model: str | None, tokens_in: int | None, tokens_out: int | None,
              cached: bool = False) -> None:
        self.replies.append((label, model, tokens_in, tokens_out, cached))

    def step(self, runs: int = 0, decisions: int = 0) -> None:
        pass

    def drain(self) -> list[tuple[str, str | None, int | None, int | None, bool]]:
        out, self.replies = self.replies, []
        return out


def _resume_of(runs: list[dict[str, Any] | bytes]) -> ResumeState:
    """A session's ResumeState from its finished runs (from --resume and from earlier attempts)."""
    state = ResumeState()
    for r in runs:
        if isinstance(r, bytes):
            r = loads_line(r)
        if r.get("complete", True):
            state.runs.setdefault(run_key(r), r)
    for r in state.runs.values():
        for seat, n in enumerate(r.get("decisions") or ()):
            state.decisions_per_seat[(r.get("lineup", "melee"), int(r["session"]), seat)] += int(n)
    return state


@ray.remote(max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS)
class SessionWorker:
    """Plays sessions of any experiment the driver sends, many at once; an experiment's Host and agents
    are built on its first session here (again after a restart: the spec travels as an object ref)."""

    def __init__(self, ledger: str, services: str, driver_version: str) -> None:
        if driver_version != __version__:
            raise RuntimeError(f"econarena {__version__} on this Ray node, but {driver_version} on the driver: "
                               "install the same version on every node")
        # by name, not by handle: a restarted worker finds them again (handles as constructor arguments
        # would live in the object store, which Ray warns an actor restart may not find)
        self.ledger, self.services = ray.get_actor(ledger), ray.get_actor(services)
        self.shipper = _Shipper(self.ledger)
        self.hosts: dict[int, Any] = {}
        self._building: dict[int, asyncio.Future[Any]] = {}

    def pid(self) -> int:
        return os.getpid()

    def cpu_s(self) -> float:
        """CPU seconds this worker has used (the benchmark: how busy the workers were)."""
        import time

        return time.process_time()

    async def _host(self, exp_id: int, spec_ref: Any) -> Any:
        host = self.hosts.get(exp_id)
        if host is not None:
            return host
        if exp_id not in self._building:
            self._building[exp_id] = asyncio.ensure_future(self._build(exp_id, spec_ref))
        return await asyncio.shield(self._building[exp_id])

    async def _build(self, exp_id: int, spec_ref: Any) -> Any:
        from ..agents.base import AgentError
        from ..agents.cluster import CacheProxy, ReplicaProvider, gate_key
        from ..agents.llm import PROVIDERS, LLMAgent, RuntimeOptions, provider_key, share_provider
        from ..agents.preflight import preflight
        from .host import HostOptions

        spec = await spec_ref
        host_cls, exp, concurrency, replicas, cache = spec
        for agent, llm in _llm_players(exp):
            key = provider_key(agent, llm)
            if agent == "hf":
                share_provider(agent, llm, ReplicaProvider(llm, replicas[key]))
                continue
            problems = preflight(agent, llm, f"{agent} player on Ray node {socket.gethostname()}")
            if problems:  # keys are read from each node's environment: say which node lacks one
                raise AgentError("; ".join(problems))
            provider = PROVIDERS[agent].load()(llm)
            if hasattr(provider, "gate_factory"):
                provider.gate_factory = _gate_factory(self.services, gate_key(key))
            share_provider(agent, llm, provider)
        options = HostOptions(concurrency=concurrency, quiet=True, runtime=RuntimeOptions(cache=False))
        host = host_cls(exp, Path(os.devnull), options)
        host.agents = host._create_agents()
        from ..agents.registry import create_agent

        j = exp.judge
        if j is not None:
            host.judge = create_agent(j.agent, j.label, responses=j.responses, llm=j.llm, options=options.runtime)
        if cache is not None:
            proxy = CacheProxy(self.services, cache)
            for agent in [a for row in host.agents for a in row] + [host.judge]:
                if isinstance(agent, LLMAgent):
                    agent.cache = proxy
        host._sem = asyncio.Semaphore(concurrency)
        self.hosts[exp_id] = host
        return host

    async def play(self, exp_id: int, spec: list[Any], li: int, session: int, prior: list[dict[str, Any]]) -> bool:
        """Play one session (from its ``prior`` runs, and what earlier attempts shipped); True when this
        attempt played it to its end."""
        host = await self._host(exp_id, spec[0])
        lineup = host.lineups[li]
        key = (exp_id, lineup.name, session)
        epoch, shipped, ended = await self.ledger.begin.remote(key)
        if ended:
            return True
        view = copy.copy(host)  # shares agents, template, limits; its own counters and sink
        view.done = view.incomplete = view.decisions = 0
        view._progress = _Usage()
        view.sink = sink = _ShipSink(view, self.shipper, key, epoch)
        await view._session(li, lineup, session, _resume_of(prior + shipped))
        sink.end()
        return all(await asyncio.gather(*sink.accepted))  # the ledger holds it all before the call returns

    async def shutdown(self) -> None:
        """Close the providers' connections before the engine ends this worker."""
        from ..agents.llm import close_all

        await close_all()


def _gate_factory(services: Any, key: str) -> Any:
    from ..agents.cluster import RemoteGate

    return lambda settings: RemoteGate(services, key, settings)


def _llm_players(exp: Any) -> Iterator[tuple[str, Any]]:
    seen = set()
    for x in [exp] + [exp.for_cell(c) for c in exp.cells()] if exp.axes else [exp]:
        entries = list(x.players) + ([x.judge] if x.judge is not None else [])
        for p in entries:
            if p.llm is not None:
                key = (p.agent, p.llm.model_dump_json())
                if key not in seen:
                    seen.add(key)
                    yield p.agent, p.llm


class RayEngine:
    """The driver's side: connects to Ray (or starts it), creates the actors, sends sessions, writes what
    comes back. One engine may serve several experiments, one after another or side by side (``suite``)."""

    def __init__(self, address: str | None = None, workers: int | None = None, *, replicas: int = 1,
                 gpus_per_replica: float | None = None, num_cpus: int | None = None,
                 cpus_per_worker: float | None = None) -> None:
        self.address = address
        self.workers_wanted = workers
        self.cpus_per_worker = cpus_per_worker  # None: one CPU each, shared out when workers outnumber CPUs
        self.replicas_wanted = replicas
        self.gpus_per_replica = gpus_per_replica
        self.num_cpus = num_cpus  # a local instance's CPUs (tests); None: the machine's
        self.started = False  # whether this engine started Ray (and so shuts it down)
        self.workers: list[Any] = []
        self.pids: list[int] = []
        self.ledger: Any = None
        self.services: Any = None
        self.replicas: dict[tuple[Any, ...], list[Any]] = {}
        self._ids = itertools.count(1)
        self._in_flight: list[int] = []
        self._locks: dict[int, asyncio.Lock] = {}  # one per event loop (each `run` file has its own)

    # ---- setting up ----
    def describe(self) -> dict[str, Any]:
        return {"engine": "ray", "address": self.address or "local", "workers": len(self.workers)}

    def connect(self) -> None:
        """Join the cluster (or start the local instance) before any run directory is touched; a cluster
        that cannot be reached is a :class:`RayUnavailable` naming the address, not a minutes-long hang."""
        if ray.is_initialized():
            return
        address = self.address
        if address not in (None, "local", "auto") and not address.startswith("ray://"):
            host, _, port = address.rpartition(":")
            try:
                socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
            except (OSError, ValueError) as exc:
                raise RayUnavailable(f"--ray {address}: no Ray cluster answers there "
                                     f"({getattr(exc, 'strerror', None) or exc}); start one with `ray start "
                                     "--head` and give its address (host:6379), or --ray alone for one on this "
                                     "machine") from None
        try:
            self._connect()
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayUnavailable(f"--ray {address or ''}: cannot start or join Ray: "
                                 f"{str(exc).splitlines()[0][:300]}") from None

    def _connect(self) -> None:
        if ray.is_initialized():
            return
        import logging

        kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                                  "log_to_driver": True}
        if self.address in (None, "local"):
            if self.num_cpus is not None:
                kwargs["num_cpus"] = self.num_cpus
            ray.init(**kwargs)
        else:
            kwargs.pop("include_dashboard")
            ray.init(address=self.address, **kwargs)
        self.started = True

    async def _start(self, host: Any) -> None:
        lock = self._locks.setdefault(id(asyncio.get_running_loop()), asyncio.Lock())
        async with lock:
            if self.workers:
                return
            self._connect()
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            from ..agents.cluster import ClusterServices

            here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
            names = [f"econarena-{part}-{os.getpid()}-{id(self):x}" for part in ("ledger", "services")]
            self.ledger = Ledger.options(scheduling_strategy=here, name=names[0]).remote()
            self.services = ClusterServices.options(scheduling_strategy=here, name=names[1]).remote()
            cpus = float(ray.cluster_resources().get("CPU", 1.0))
            n = self.workers_wanted or max(1, int(cpus))
            per_worker = self.cpus_per_worker if self.cpus_per_worker is not None else min(1.0, cpus / n)
            max_sessions = max(1, host.options.concurrency) + 8
            self.workers = [SessionWorker.options(num_cpus=per_worker, max_concurrency=max_sessions)
                            .remote(names[0], names[1], __version__) for _ in range(n)]
            self._in_flight = [0] * n
            pids = asyncio.ensure_future(asyncio.gather(*(w.pid.remote() for w in self.workers)))
            try:
                done, _ = await asyncio.wait([pids], timeout=PLACE_WARN_S)
                if not done:  # a busy cluster: Ray queues the workers until their CPUs are free; say so
                    free = ray.available_resources().get("CPU", 0.0)
                    print(f"econarena: waiting for Ray to place {n} session worker(s) of {per_worker:g} CPU "
                          f"each ({free:g} CPU free of {cpus:g}); fewer with --ray-workers", file=sys.stderr,
                          flush=True)
                self.pids = list(await pids)
            except BaseException:  # a stop signal while the workers start: the gathered calls end with a
                pids.cancel()      # CancelledError that nobody awaits; retrieve it, or asyncio prints a traceback
                pids.add_done_callback(lambda f: f.cancelled() or f.exception())
                raise

    async def _replicas_for(self, exp: Any) -> dict[tuple[Any, ...], list[Any]]:
        """One set of replica actors per distinct local (hf) model of the experiment, loaded before any
        session starts (a model that cannot load stops the run here, with its reason)."""
        from ..agents.cluster import ModelReplica
        from ..agents.llm import provider_key

        made = []
        for agent, llm in _llm_players(exp):
            key = provider_key(agent, llm)
            if agent != "hf" or key in self.replicas:
                continue
            gpus = self.gpus_per_replica
            if gpus is None:
                gpus = 1.0 if (llm.device or "cpu").startswith("cuda") else 0.0
            self.replicas[key] = [ModelReplica.options(num_gpus=gpus, num_cpus=0 if gpus else 1,
                                                       max_concurrency=4096).remote(llm)
                                  for _ in range(max(1, self.replicas_wanted))]
            made += self.replicas[key]
        await asyncio.gather(*(r.load.remote() for r in made))
        return {k: v for k, v in self.replicas.items()}

    # ---- playing ----
    async def play(self, host: Any, work: Iterator[tuple[int, int]], resume: ResumeState) -> None:
        """Play ``work`` (table, session pairs) on the cluster; ``host`` writes what comes back."""
        await self._start(host)
        replicas = await self._replicas_for(host.exp)
        exp_id = next(self._ids)
        cache = None
        if host.options.runtime.cache:  # the driver's cache file, opened by the services actor beside it
            from ..agents.cache import resolve_cache_path

            cache = str(resolve_cache_path(host.options.runtime.cache_path).resolve())
            problem = await self.services.open_cache.remote(cache)
            if problem:
                from ..agents.base import AgentError

                raise AgentError(problem)
        spec = [ray.put((type(host), host.exp, host.options.concurrency, replicas, cache))]
        host.dir.write_manifest(engine=self.describe())
        stop = asyncio.Event()
        finished: list[tuple[Any, ...]] = []  # sessions whose calls returned: the ledger may forget them

        async def drain() -> None:
            while True:
                final = stop.is_set()
                batches = await self.ledger.take.remote(exp_id, 0.0 if final else 0.2)
                for b in batches:
                    _write(host, b)
                if finished:
                    self.ledger.close.remote(finished[:])
                    finished.clear()
                if final and not batches:
                    return

        async def feed() -> None:
            for li, s in work:  # one shared generator: each session goes to exactly one call
                if host.session_finished(li, s, resume):
                    continue
                budget = host.options.budget
                if budget is not None and not budget.allows():  # spent: the session is left for --resume
                    host.incomplete += 1
                    continue
                lineup = host.lineups[li]
                i = min(range(len(self.workers)), key=lambda j: (self._in_flight[j], j))
                self._in_flight[i] += 1
                try:
                    await self.workers[i].play.remote(exp_id, spec, li, s, resume.session_runs(lineup.name, s))
                except ray.exceptions.RayTaskError as exc:  # the worker's own error: raise it as it was
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, Exception):
                        raise cause from None
                    raise
                except ray.exceptions.RayActorError as exc:  # restarted more than MAX_RESTARTS times
                    host.incomplete += 1
                    print(f"econarena: warning: session {s} of {lineup.name} lost its Ray worker too often "
                          f"({str(exc).splitlines()[0][:200]}); --resume plays it again", file=sys.stderr)
                finally:
                    self._in_flight[i] -= 1
                    finished.append((exp_id, lineup.name, s))

        drainer = asyncio.create_task(drain())
        n = max(1, len(self.workers) * max(1, host.options.concurrency))
        feeders = [asyncio.create_task(feed()) for _ in range(n)]
        try:
            await asyncio.gather(*feeders)
        except BaseException:
            for f in feeders:
                f.cancel()
            await asyncio.gather(*feeders, return_exceptions=True)
            raise
        finally:
            stop.set()  # what the ledger holds is written, whatever stopped the run
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(drainer), 30)

    # ---- ending ----
    def close(self) -> None:
        """Kill this engine's actors; disconnect from Ray, and stop it when this engine started it."""
        if not ray.is_initialized():
            return
        with contextlib.suppress(Exception):  # connections closed cleanly, not torn down by the kill
            ray.get([w.shutdown.remote() for w in self.workers], timeout=10)
        for actor in [*self.workers, *(r for rs in self.replicas.values() for r in rs), self.ledger, self.services]:
            if actor is not None:
                with contextlib.suppress(Exception):
                    ray.kill(actor)
        self.workers, self.replicas, self.ledger, self.services = [], {}, None, None
        if self.started:
            ray.shutdown()
            self.started = False


def _write(host: Any, b: dict[str, Any]) -> None:
    """One batch into the run directory: a run's decisions and judge lines, then its record (the order a
    local run writes them in, so --resume reads a Ray run directory like any other)."""
    host.dir.lines(b["decisions"], b["appends"], b["run"])
    host.done += b["done"]
    host.incomplete += b["incomplete"]
    host.decisions += b["decisions_made"]
    for reply in b["usage"]:
        host._progress.usage(*reply)
        host.charge(*reply)  # the budget (bench --max-cost) lives here, on the driver
    host._progress.step(runs=b["done"], decisions=b["decisions_made"])
