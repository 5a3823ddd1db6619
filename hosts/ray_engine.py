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

A lost node (its raylet dead or cut off) is another matter: Ray can restart its workers only where a CPU
is free, and a call queued for a worker that is never placed again waits for ever. So the driver watches
(:class:`_Watch`): it asks Ray for the node table every ``NODE_POLL_S``, and a worker whose node is gone,
or whose call failed with Ray's actor errors, is *lost*: the sessions it held are sent at once to a live
worker (they continue after their last shipped run, as above; the ledger refuses the older attempt, by
the driver's attempt number, if Ray ever runs it), and a probe waits for Ray to place the worker again (a
node that joins). When no worker is live for ``stall_s`` seconds (``--ray-stall-timeout``), the run stops
with the lost node named and finished runs kept for ``--resume``: a run never hangs on a lost node.

Keys and settings for the workers (``--ray-env``): the values of the variables the experiment's players
read their keys from, and of any ``--ray-env NAME``, travel from the driver to the workers as the return
value of a services actor call, kept in memory only. Not through Ray's ``runtime_env``: Ray writes a
runtime environment's ``env_vars`` values, in clear, to ``runtime_env_agent.log`` on every node.

Results do not depend on the number of workers, the concurrency or the order in which sessions finish:
every draw comes from the seed and the decision's coordinates (hosts/host.py), never from scheduling.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import os
import re
import signal
import socket
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray

from .. import __version__
from ..agents.base import AgentError
from ..formats.rundir import JUDGE_LOG, ResumeState, encode_record, encode_run, loads_line, run_key

SHIP_S = 0.01  # a worker gathers finished runs this long before shipping them in one call
PLACE_WARN_S = 20.0  # workers not placed after this long: the cluster is busy, tell the user
MAX_RESTARTS = 4  # a worker killed more often than this fails its sessions (they stay for --resume)
NODE_POLL_S = 1.0  # how often the driver reads Ray's node table while sessions are in flight
STALL_S = 60.0  # default --ray-stall-timeout: no live worker for this long stops the run
MAX_MOVES = 4  # a session whose worker was lost this many times is left for --resume (it may be the cause)
GCS_SILENT_S = 10.0  # Ray's node table unanswered this long: the head (GCS) is gone, the cluster with it
GCS_ASK_S = 3.0  # after a lost ledger: the GCS unanswered this long is the head lost


class RayUnavailable(AgentError):
    """The cluster named by --ray cannot be reached or started, or could not start the session workers
    (a configuration problem: exit 2, one line)."""


@dataclass
class _Session:
    epoch: int = 0
    attempt: int = 0  # the driver's attempt number: an older one is refused (its session moved on)
    runs: list[bytes] = field(default_factory=list)
    ended: bool = False


@ray.remote(num_cpus=0, max_concurrency=1000)  # type: ignore[call-overload]  # stubs lack actor options
class Ledger:
    """What workers shipped, per session, until the driver has written it; and each session's progress,
    so that a retried call continues where its killed attempt stopped."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[Any, ...], _Session] = {}
        self.outbox: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.events: dict[int, asyncio.Event] = defaultdict(asyncio.Event)
        self.moved_done: set[tuple[Any, ...]] = set()  # finished sessions that had moved: never begin again

    def begin(self, key: tuple[Any, ...], attempt: int = 0) -> tuple[int, list[bytes], bool] | None:
        """A new attempt at a session: its epoch, the runs earlier attempts shipped (their lines), whether
        it ended; None for an attempt the driver replaced (a call to a lost worker that Ray ran late)."""
        if key in self.moved_done:
            return None
        s = self.sessions.setdefault(key, _Session())
        if attempt < s.attempt:
            return None
        s.attempt = attempt
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

    def close(self, keys: list[tuple[Any, ...]], moved: list[tuple[Any, ...]] | None = None) -> None:
        """The driver saw these sessions' calls return: forget them; those in ``moved`` (sent to another
        worker after a loss) are remembered, so that a late call to their lost worker plays nothing."""
        for key in keys:
            self.sessions.pop(key, None)
        self.moved_done.update(moved or ())

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
                    if not f.done():  # a session the driver cancelled no longer waits on its batch
                        f.set_exception(exc)
                continue
            for f, ok in zip(futures, results):
                if not f.done():
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

    def where(self) -> tuple[int, str]:
        """This worker's process and Ray node (the driver names a lost node by it)."""
        return os.getpid(), ray.get_runtime_context().get_node_id()

    @ray.method(max_task_retries=0)
    def probe(self) -> tuple[int, str]:
        """:meth:`where` without Ray's retries: the driver asks again itself (and Ray prints a line for each
        retry of an unreachable actor)."""
        return self.where()

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
        from ..agents.cluster import CacheProxy, ReplicaProvider, gate_key
        from ..agents.llm import PROVIDERS, LLMAgent, RuntimeOptions, provider_key, share_provider
        from ..agents.preflight import preflight
        from .host import HostOptions

        spec = await spec_ref
        host_cls, exp, concurrency, replicas, cache = spec
        # the driver's keys and --ray-env variables, in memory (never a runtime_env: Ray logs those values)
        os.environ.update(await self.services.forwarded_env.remote())
        for agent, llm in _llm_players(exp):
            key = provider_key(agent, llm)
            if agent == "hf":
                share_provider(agent, llm, ReplicaProvider(llm, replicas[key]))
                continue
            problems = preflight(agent, llm, f"{agent} player on {this_node()}")
            if problems:  # neither forwarded nor set on this node: say which node, and how to forward it
                raise AgentError("; ".join(problems) + " (the driver forwards the key variables it has, and "
                                 "any --ray-env NAME, to every worker)")
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

    async def play(self, exp_id: int, spec: list[Any], li: int, session: int, prior: list[dict[str, Any]],
                   attempt: int = 0) -> bool:
        """Play one session (from its ``prior`` runs, and what earlier attempts shipped); True when this
        attempt played it to its end. ``attempt`` counts the driver's moves of the session to another
        worker: an attempt older than the ledger's is not played (its session went on elsewhere)."""
        host = await self._host(exp_id, spec[0])
        lineup = host.lineups[li]
        key = (exp_id, lineup.name, session)
        begun = await self.ledger.begin.remote(key, attempt)
        if begun is None:
            return False
        epoch, shipped, ended = begun
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


def plain_env_name(name: str) -> bool:
    """Whether ``name`` reads as a variable's name (HF_TOKEN, http_proxy), so that a message may show it. A
    token has the letters of a name too (hf_..., ghp_...: mixed case and long random parts), and a token
    typed where a NAME belongs was echoed by the 'not set' message."""
    return bool(re.fullmatch(r"[A-Z0-9_]+|[a-z0-9_]+", name)) and all(len(p) <= 16 for p in name.split("_"))


def node_name(node_id: str, info: dict[str, Any] | None = None) -> str:
    """A node as messages name it: Ray's node id (what `ray list nodes` and Ray's logs show) and its
    address (the host name too where it differs)."""
    if not info:
        return f"Ray node {node_id}"
    ip = info.get("NodeManagerAddress") or "?"
    port = info.get("NodeManagerPort")
    host = info.get("NodeManagerHostname") or ""
    where = f"{ip}:{port}" if port else ip
    return f"Ray node {node_id} ({host + ', ' if host and host != ip else ''}{where})"


def this_node() -> str:
    """The node this process runs on, named as :func:`node_name` does."""
    node_id = ray.get_runtime_context().get_node_id()
    with contextlib.suppress(Exception):
        for n in ray.nodes():
            if n.get("NodeID") == node_id:
                return node_name(node_id, n)
    return f"Ray node {node_id} ({socket.gethostname()})"


def _first_line(exc: BaseException) -> str:
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


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


class _Watch:
    """One ``play``'s view of the session workers, kept by a monitor task: it reads Ray's node table, marks
    the workers of a lost node (and workers whose calls failed with Ray's actor errors) lost, wakes the
    sessions waiting on them so that they move to a live worker, probes a lost worker until Ray has placed
    it again, and stops the run when no worker has been live for ``stall_s`` (or every one is gone for
    good). Engine-wide worker state lives on :class:`RayEngine` (several ``play`` calls of a suite share
    it); the events here belong to this play's event loop."""

    def __init__(self, engine: RayEngine) -> None:
        self.engine = engine
        n = len(engine.workers)
        self.calls: list[set[asyncio.Future[Any]]] = [set() for _ in range(n)]  # session calls in flight
        self.dropped: set[asyncio.Future[Any]] = set()  # calls cancelled because their worker was lost
        self.seen = list(engine.gen)
        self.live = asyncio.Event()
        self.stop = asyncio.Event()
        self.reason: str | None = None
        self.actor_lost = False
        self.last_progress = time.monotonic()
        self.probes: dict[int, asyncio.Task[None]] = {}
        self.given_up = 0
        self.moved: list[tuple[Any, ...]] = []
        self.sync()

    def progress(self) -> None:
        self.last_progress = time.monotonic()

    def sync(self) -> None:
        """Wake the sessions of every worker lost since the last look; note whether any worker is live."""
        e = self.engine
        for i, g in enumerate(e.gen):
            if g != self.seen[i]:
                self.seen[i] = g
                for call in self.calls[i]:  # their sessions go to a live worker (_session sees why)
                    if call.cancel():
                        self.dropped.add(call)
            if e.state[i] in ("lost", "pending") and (i not in self.probes or self.probes[i].done()):
                self.probes[i] = asyncio.ensure_future(e._probe(i, self))
        if any(st == "live" for st in e.state):
            self.live.set()
        else:
            self.live.clear()

    async def pick(self) -> int:
        """A live worker with the fewest sessions in flight; waits while there is none."""
        e = self.engine
        while True:
            live = [j for j, st in enumerate(e.state) if st == "live"]
            if live:
                return min(live, key=lambda j: (e._in_flight[j], j))
            await self.live.wait()

    def halt(self, reason: str, actor_lost: bool = False) -> None:
        """Stop the run for ``reason``; ``actor_lost``: one of the run's own actors is gone, which is the
        whole cluster when the GCS no longer answers (``play`` asks it)."""
        if self.reason is None:
            self.reason = reason
            self.actor_lost = actor_lost
        self.stop.set()

    async def monitor(self) -> None:
        e = self.engine
        asked: asyncio.Future[Any] | None = None
        answered = time.monotonic()
        while True:
            await asyncio.sleep(NODE_POLL_S)
            if asked is None:
                asked = _ask_nodes()
            if asked.done():
                table = None if asked.cancelled() or asked.exception() else asked.result()
                asked = None
                if table is not None:
                    answered = time.monotonic()
                    e._nodes_seen(table, self)
            elif time.monotonic() - answered > GCS_SILENT_S:  # the head node is gone, and the cluster with it
                e.cluster_lost = True
                self.halt(f"the Ray cluster's head (GCS at {e.address or 'local'}) stopped answering for "
                          f"{GCS_SILENT_S:g} s: its node was lost, and the cluster with it (restart it)")
            self.sync()
            if e.state and all(st == "dead" for st in e.state):
                self.halt(e._stuck(gone=True))
            elif not self.live.is_set() and time.monotonic() - self.last_progress > e.stall_s:
                self.halt(e._stuck(gone=False))

    def close(self) -> None:
        for t in self.probes.values():
            t.cancel()


async def _outcome(ref: Any) -> Any:
    return await ref


def _gcs_silent_now(timeout: float) -> bool:
    """:func:`_gcs_silent` outside an event loop."""
    import threading

    answered = threading.Event()

    def ask() -> None:
        with contextlib.suppress(Exception):
            ray.nodes()
        answered.set()

    threading.Thread(target=ask, name="econarena-ray-gcs", daemon=True).start()
    return not answered.wait(timeout)


async def _gcs_silent(timeout: float) -> bool:
    """Whether Ray's GCS (the head node) leaves the node table unanswered for ``timeout`` s."""
    try:
        await asyncio.wait_for(asyncio.shield(_ask_nodes()), timeout)
    except asyncio.TimeoutError:
        return True
    except Exception:  # noqa: BLE001 - it answered, with an error
        return False
    return False


def _ask_nodes() -> asyncio.Future[Any]:
    """Ray's node table, read in a daemon thread: ``ray.nodes()`` blocks for a minute when the GCS (the
    head node) is gone, and a thread of the loop's executor would hold the loop's shutdown, and the exit,
    that long."""
    import threading

    loop = asyncio.get_running_loop()
    answer: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, failed: bool) -> None:
        if not answer.done():
            (answer.set_exception if failed else answer.set_result)(value)

    def ask() -> None:
        try:
            value, failed = ray.nodes(), False
        except Exception as exc:  # noqa: BLE001 - told to the loop, which looks again later
            value, failed = exc, True
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, value, failed)

    threading.Thread(target=ask, name="econarena-ray-nodes", daemon=True).start()
    return answer


class RayEngine:
    """The driver's side: connects to Ray (or starts it), creates the actors, sends sessions, writes what
    comes back. One engine may serve several experiments, one after another or side by side (``suite``)."""

    def __init__(self, address: str | None = None, workers: int | None = None, *, replicas: int = 1,
                 gpus_per_replica: float | None = None, num_cpus: int | None = None,
                 cpus_per_worker: float | None = None, stall_s: float = STALL_S,
                 env: tuple[str, ...] | list[str] = ()) -> None:
        self.address = address
        self.workers_wanted = workers
        self.cpus_per_worker = cpus_per_worker  # None: one CPU each, shared out when workers outnumber CPUs
        self.replicas_wanted = replicas
        self.gpus_per_replica = gpus_per_replica
        self.num_cpus = num_cpus  # a local instance's CPUs (tests); None: the machine's
        self.stall_s = stall_s
        self.env_names = list(env)  # --ray-env: variables the workers get from the driver
        self.asked = address  # --ray as the user gave it ("auto" stays "auto"), for the --resume command
        self.started = False  # whether this engine started Ray (and so shuts it down)
        self.cluster_lost = False  # the GCS stopped answering: no Ray call may wait on it any more
        self.workers: list[Any] = []
        self.pids: list[int] = []
        self.node_of: list[str] = []  # each worker's Ray node (its last known one while it is lost)
        self.state: list[str] = []  # each worker: live | lost (Ray may place it again) | dead (for good)
        self.gen: list[int] = []  # bumped each time a worker is lost: its sessions' calls are then moved
        self.why: list[str] = []  # why a worker is lost or dead, for the messages
        self.nodes: dict[str, dict[str, Any]] = {}  # Ray's node table as last read: id -> its entry
        self.lost_nodes: dict[str, str] = {}  # id -> name, of every node lost while this engine ran
        self.ledger: Any = None
        self.services: Any = None
        self._services_name: str | None = None
        self.replicas: dict[tuple[Any, ...], list[Any]] = {}
        self._ids = itertools.count(1)
        self._in_flight: list[int] = []
        self._locks: dict[int, asyncio.Lock] = {}  # one per event loop (each `run` file has its own)

    # ---- setting up ----
    def resume_flags(self) -> str:
        """The options a --resume command needs to continue on the same cluster."""
        ray_flag = " --ray" if self.asked in (None, "local") else f" --ray {self.asked}"
        return ray_flag + "".join(f" --ray-env {n}" for n in self.env_names)

    def describe(self) -> dict[str, Any]:
        return {"engine": "ray", "address": self.address or "local", "workers": len(self.workers)}

    def connect(self) -> None:
        """Join the cluster (or start the local instance) before any run directory is touched; a cluster
        that cannot be reached is a :class:`RayUnavailable` naming the address, not a minutes-long hang."""
        missing = [(i, name) for i, name in enumerate(self.env_names) if name not in os.environ]
        if missing:
            i, name = missing[0]
            shown = name if plain_env_name(name) else (
                f"#{i + 1} (a name of {len(name)} characters, not shown: it looks like a key given for its name)")
            raise RayUnavailable(f"--ray-env {shown}: not set in this environment (the driver's); set it "
                                 "here, or leave --ray-env out for a variable each node sets itself")
        if ray.is_initialized():
            return
        if self.address == "auto":
            self.address = _auto_address()
        address = self.address
        if address not in (None, "local") and not address.startswith("ray://"):
            host, _, port = address.rpartition(":")
            if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
                # "no Ray cluster answers there (invalid literal for int())" blamed a cluster for a typo
                came = " (from RAY_ADDRESS)" if self.asked == "auto" else ""
                raise RayUnavailable(f"--ray {address}{came}: expected a cluster's address as HOST:PORT (the "
                                     "head's GCS port, e.g. 10.0.0.7:6379), ray://HOST:PORT, or auto")
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
            try:  # "local": a new instance even where `ray start` recorded one (ray.init() alone joins that)
                ray.init(address="local", **kwargs)
            except BaseException:  # a stop signal (ray.init's own SIGTERM handler) or a failure mid-start
                stop_local_ray()
                raise
            self.started = True
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
            self._services_name = names[1]
            ledger: Any = Ledger  # ray actor classes, which ray's stubs type as the plain classes
            services: Any = ClusterServices
            self.ledger = ledger.options(scheduling_strategy=here, name=names[0]).remote()
            self.services = services.options(scheduling_strategy=here, name=names[1]).remote()
            cpus = float(ray.cluster_resources().get("CPU", 1.0))
            n = self.workers_wanted or max(1, int(cpus))
            # a cluster whose CPUs have not joined yet (a head started with --num-cpus 0): one CPU each,
            # placed as nodes join, never 0 (a worker of 0 CPU lands on the head and stays there)
            share = min(1.0, cpus / n) if cpus > 0 else 1.0
            per_worker = self.cpus_per_worker if self.cpus_per_worker is not None else share
            max_sessions = max(1, host.options.concurrency) + 8
            worker: Any = SessionWorker  # a ray actor class, which ray's stubs type as the plain class
            self.workers = [worker.options(num_cpus=per_worker, max_concurrency=max_sessions)
                            .remote(names[0], names[1], __version__) for _ in range(n)]
            self._in_flight = [0] * n
            self.pids, self.node_of = [0] * n, [""] * n
            self.state, self.gen, self.why = ["pending"] * n, [0] * n, [""] * n
            asked = [asyncio.ensure_future(_outcome(w.where.remote())) for w in self.workers]
            for f in asked:  # those still waiting when the run starts are looked at by the watch's probes
                f.add_done_callback(lambda f: f.cancelled() or f.exception())
            try:
                # the run starts with the first worker placed; Ray places the others as CPUs free up or
                # nodes join (a worker that never fits does not hold the run back)
                done, _ = await asyncio.wait(asked, timeout=PLACE_WARN_S, return_when=asyncio.FIRST_COMPLETED)
                if not done:  # a busy cluster: Ray queues the workers until their CPUs are free; say so
                    free = ray.available_resources().get("CPU", 0.0)
                    print(f"econarena: waiting for Ray to place {n} session worker(s) of {per_worker:g} CPU "
                          f"each ({free:g} CPU free of {cpus:g}); fewer with --ray-workers", file=sys.stderr,
                          flush=True)
                    done, _ = await asyncio.wait(asked, timeout=max(0.0, self.stall_s - PLACE_WARN_S),
                                                 return_when=asyncio.FIRST_COMPLETED)
                for f in done:
                    f.result()  # Ray cancelled them: the cluster stops (below)
            except ray.exceptions.RayActorError as exc:  # Ray cancelled them: the cluster stops, or went away
                failure: BaseException | None = RayUnavailable(
                    f"--ray {self.address or ''}: Ray could not start the session workers ({_first_line(exc)}); "
                    "is the cluster stopping? `ray status` on the head node shows its nodes")
            except BaseException as exc:  # a stop signal while the workers start
                failure = exc
            else:
                failure = None if done else RayUnavailable(
                    f"--ray {self.address or ''}: Ray placed none of the {n} session workers of {per_worker:g} "
                    f"CPU in {max(self.stall_s, PLACE_WARN_S):g} s ({ray.available_resources().get('CPU', 0.0):g} "
                    f"CPU free of {cpus:g}); fewer with --ray-workers, or a node with free CPUs")
            if failure is not None:
                for f in asked:
                    f.cancel()
                for w in self.workers:
                    with contextlib.suppress(Exception):
                        ray.kill(w)
                self.workers = []
                if isinstance(failure, RayUnavailable):
                    raise failure from None
                raise failure
            for i, f in enumerate(asked):
                if f.done() and not f.cancelled() and f.exception() is None:
                    self.pids[i], self.node_of[i] = f.result()
                    self.state[i] = "live"
                else:
                    f.cancel()
            with contextlib.suppress(Exception):
                self._nodes_seen(ray.nodes(), None)

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
            replica: Any = ModelReplica  # a ray actor class, which ray's stubs type as the plain class
            self.replicas[key] = [replica.options(num_gpus=gpus, num_cpus=0 if gpus else 1,
                                                  max_concurrency=4096).remote(llm, self._services_name)
                                  for _ in range(max(1, self.replicas_wanted))]
            made += self.replicas[key]
        await asyncio.gather(*(r.load.remote() for r in made))
        return {k: v for k, v in self.replicas.items()}

    def forwarded(self, exp: Any) -> dict[str, str]:
        """The variables the workers get from the driver for ``exp``: every key variable its LLM players
        (and judge) read that is set here, and each --ray-env NAME. Values never leave memory."""
        from ..agents.keys import key_envs

        names = list(self.env_names)
        for agent, llm in _llm_players(exp):
            names += [n for n in key_envs(agent, llm) if n not in names]
        # a name the user gave goes as it is set here, empty included (the node's own value must not stay);
        # a key variable the players read goes only when it holds a key
        return {n: os.environ[n] for n in names if n in os.environ and (os.environ[n] or n in self.env_names)}

    # ---- nodes and workers lost ----
    def _nodes_seen(self, table: list[dict[str, Any]], watch: _Watch | None) -> None:
        """Ray's node table read again: a node that was alive and is not (or is gone from the table) is
        lost, with its workers; a node that joins after a loss is said."""
        now = {n["NodeID"]: n for n in table if n.get("NodeID")}
        before = dict(self.nodes)
        self.nodes.update(now)
        for node_id, old in before.items():  # losses first: a node that replaces a lost one is then news
            if old.get("Alive") and not now.get(node_id, {}).get("Alive"):
                self.nodes[node_id] = {**old, **now.get(node_id, {}), "Alive": False}
                self._node_lost(node_id, self.nodes[node_id], watch)
        for node_id, n in now.items():
            was = before.get(node_id)
            if n.get("Alive") and (was is None or not was.get("Alive")) and self.lost_nodes and watch is not None:
                print(f"econarena: {node_name(node_id, n)} joined the cluster", file=sys.stderr, flush=True)

    def _node_lost(self, node_id: str, info: dict[str, Any], watch: _Watch | None) -> None:
        name = node_name(node_id, info)
        self.lost_nodes[node_id] = name
        hit = [i for i, nd in enumerate(self.node_of) if nd == node_id and self.state[i] != "dead"]
        if watch is not None and any(self.state[i] == "live" for i in hit):
            watch.progress()  # the stall bound counts from the loss of the last live worker
        for i in hit:
            self._lose(i, f"its node was lost: {name}")
        live = sum(st == "live" for st in self.state)
        why = info.get("DeathReasonMessage")
        said = f"{name} was lost" + (f" (Ray: {why})" if why else "")
        if not hit:
            print(f"econarena: warning: {said}; none of this run's session workers ran there", file=sys.stderr,
                  flush=True)
        elif live:
            print(f"econarena: warning: {said}; the sessions of its {len(hit)} session worker(s) go on on the "
                  f"{live} live worker(s) left", file=sys.stderr, flush=True)
        else:
            print(f"econarena: warning: {said} with {len(hit)} session worker(s), and no live worker is left: "
                  f"waiting up to {self.stall_s:g} s for Ray to place them again (a node joining) before the "
                  "run stops for --resume", file=sys.stderr, flush=True)

    def node_named(self, node_id: str) -> str:
        return node_name(node_id, self.nodes.get(node_id))

    def _lose(self, i: int, why: str, dead: bool = False) -> None:
        """Worker ``i`` is lost (its calls are moved and a probe waits for it) or, ``dead``, gone for good."""
        if self.state[i] == "live":
            self.gen[i] += 1
            self.why[i] = why
        if dead:
            self.state[i] = "dead"
            self.why[i] = why
        elif self.state[i] == "live":
            self.state[i] = "lost"

    async def _probe(self, i: int, watch: _Watch) -> None:
        """Wait for Ray to place lost worker ``i`` again (a node joining, CPUs freed); it is then live."""
        while self.state[i] in ("lost", "pending"):
            try:
                pid, node = await asyncio.wait_for(_outcome(self.workers[i].probe.remote()), 30)
            except ray.exceptions.ActorDiedError as exc:  # restarts used up, or cancelled: gone for good
                self._lose(i, _first_line(exc), dead=True)
                watch.sync()
                return
            except (ray.exceptions.RayError, asyncio.TimeoutError):
                await asyncio.sleep(NODE_POLL_S)
                continue
            self.pids[i], self.node_of[i], self.state[i] = pid, node, "live"
            watch.progress()
            watch.sync()
            return

    def _stuck(self, gone: bool) -> str:
        """Why the run stops: the nodes lost (from Ray's node table) or whose workers stopped answering
        (Ray's table says so only after its health checks, some 15 s), and what is left."""
        lost = list(dict.fromkeys(self.lost_nodes.values()))
        quiet = list(dict.fromkeys(self.node_named(self.node_of[i]) for i, st in enumerate(self.state)
                                   if st in ("lost", "dead") and self.node_of[i]
                                   and self.node_of[i] not in self.lost_nodes))
        parts = [f"{' and '.join(lost)} {'was' if len(lost) == 1 else 'were'} lost"] if lost else []
        parts += [f"the session worker(s) on {' and '.join(quiet)} stopped answering"] if quiet else []
        lead = "; ".join(parts) or "no Ray session worker was live"
        if gone:
            dead = next((self.why[i] for i, st in enumerate(self.state) if st == "dead"), "")
            return f"{lead}, and every session worker of this run is gone for good ({dead}): no session can run"
        free = ray.available_resources().get("CPU", 0.0) if ray.is_initialized() else 0.0
        return (f"{lead}, and no node left could run the session workers for {self.stall_s:g} s (0 of "
                f"{len(self.workers)} live; {free:g} CPU free in the cluster)")

    # ---- playing ----
    async def play(self, host: Any, work: Iterator[tuple[int, int]], resume: ResumeState) -> None:
        """Play ``work`` (table, session pairs) on the cluster; ``host`` writes what comes back."""
        exp_id, spec = await self._prepare(host)
        stop = asyncio.Event()
        finished: list[tuple[Any, ...]] = []  # sessions whose calls returned: the ledger may forget them
        held: list[float] = []  # budget holds of sessions whose calls returned, freed once their replies are charged
        watch = _Watch(self)

        async def drain() -> None:
            while True:
                final = stop.is_set()
                ready = len(held)  # sessions that returned before this take: their last batches come with it
                try:
                    batches = await self.ledger.take.remote(exp_id, 0.0 if final else 0.2)
                except ray.exceptions.RayError as exc:  # the ledger's node is this driver's: it went away
                    watch.halt(f"the Ray node of this driver was lost with its ledger actor (Ray: "
                               f"{_first_line(exc)})", actor_lost=True)
                    return
                for b in batches:
                    _write(host, b)
                if ready and host.options.budget is not None:
                    host.options.budget.release(sum(held[:ready]))
                    del held[:ready]
                if batches:
                    watch.progress()
                if finished:
                    moved = [k for k in watch.moved if k in set(finished)]
                    self.ledger.close.remote(finished[:], moved)
                    finished.clear()
                if final and not batches:
                    return

        async def feed() -> None:
            for li, s in work:  # one shared generator: each session goes to exactly one call
                if host.session_finished(li, s, resume):
                    continue
                budget = host.options.budget
                cost = host.options.session_cost
                if budget is not None:  # the session's worst case is held before it is handed out: a cap is a cap
                    ok = budget.hold(cost)
                    while not ok and budget.busy:  # sessions in flight may leave room when they are charged
                        await asyncio.sleep(0.05)
                        ok = budget.hold(cost)
                    if not ok:  # spent: the session is left for --resume
                        host.incomplete += 1
                        continue
                lineup = host.lineups[li]
                try:
                    await self._session(watch, host, exp_id, spec, li, s, resume.session_runs(lineup.name, s))
                finally:
                    finished.append((exp_id, lineup.name, s))
                    if budget is not None:
                        held.append(cost)
                    watch.progress()

        drainer = asyncio.create_task(drain())
        monitor = asyncio.create_task(watch.monitor())
        halted = asyncio.ensure_future(watch.stop.wait())
        n = max(1, len(self.workers) * max(1, host.options.concurrency))
        feeders = [asyncio.create_task(feed()) for _ in range(n)]
        everything = asyncio.ensure_future(asyncio.gather(*feeders))
        everything.add_done_callback(lambda f: f.cancelled() or f.exception())
        try:
            either: list[asyncio.Future[Any]] = [everything, halted]
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if everything.done():
                everything.result()  # a feeder's error, as it was
        finally:
            for f in [*feeders, monitor, halted]:
                f.cancel()
            await asyncio.gather(*feeders, monitor, halted, return_exceptions=True)
            watch.close()
            stop.set()  # what the ledger holds is written, whatever stopped the run
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(drainer), 30)
        await self._say_why_stopped(host, watch)

    async def _prepare(self, host: Any) -> tuple[int, list[Any]]:
        """The cluster's side of one experiment, before any session is handed out: the workers, the
        environment they read, the model replicas and the driver's cache; returns its id and spec."""
        await self._start(host)
        await self.services.forward_env.remote(self.forwarded(host.exp))  # before any replica or worker reads it
        replicas = await self._replicas_for(host.exp)
        exp_id = next(self._ids)
        cache = None
        if host.options.runtime.cache:  # the driver's cache file, opened by the services actor beside it
            from ..agents.cache import resolve_cache_path

            cache = str(resolve_cache_path(host.options.runtime.cache_path).resolve())
            problem = await self.services.open_cache.remote(cache)
            if problem:
                raise AgentError(problem)
        spec = [ray.put((type(host), host.exp, host.options.concurrency, replicas, cache))]
        host.dir.write_manifest(engine=self.describe())
        return exp_id, spec

    async def _say_why_stopped(self, host: Any, watch: _Watch) -> None:
        """Tell ``host`` why the run stopped early, if it did: the watch's reason (the cluster's head
        named when it was that) and the sessions given up after too many lost workers."""
        if watch.reason is not None:
            if watch.actor_lost and await _gcs_silent(GCS_ASK_S):  # the head itself: say so
                self.cluster_lost = True
                watch.reason = (f"the Ray cluster's head (GCS at {self.address or 'local'}) was lost, and the "
                                "cluster with it (restart it)")
            host.stopped.append(watch.reason)
        if watch.given_up:
            host.stopped.append(f"{watch.given_up} session(s) lost their Ray session worker {MAX_MOVES + 1} "
                                "times and were left unplayed")

    async def _session(self, watch: _Watch, host: Any, exp_id: int, spec: list[Any], li: int, s: int,
                       prior: list[dict[str, Any]]) -> None:
        """One session's call, sent again to a live worker each time its worker is lost (at most
        ``MAX_MOVES`` times: a session that kills every worker it lands on is left for --resume)."""
        moves = 0
        key = (exp_id, host.lineups[li].name, s)
        while True:
            i = await watch.pick()
            gen = self.gen[i]
            self._in_flight[i] += 1
            ref = self.workers[i].play.remote(exp_id, spec, li, s, prior, moves)
            call = asyncio.ensure_future(_outcome(ref))
            watch.calls[i].add(call)
            try:
                await call
                return
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):  # Ray need not run it any more; not its children: the
                    ray.cancel(ref, recursive=False)  # worker's shipper sends other sessions' batches too
                task = asyncio.current_task()
                if call not in watch.dropped or (task is not None and task.cancelling()):
                    raise  # the run stops (a signal, the stall bound), not a lost worker
            except ray.exceptions.RayTaskError as exc:  # the worker's own error: raise it as it was
                cause = getattr(exc, "cause", None)
                if isinstance(cause, (ray.exceptions.RayActorError, ray.exceptions.RaySystemError)):
                    # an actor the worker needs (the ledger, the services, a model replica) was lost with its node
                    watch.halt(f"a session worker lost a Ray actor it needs, with its node (Ray: "
                               f"{_first_line(cause)})", actor_lost=True)
                    return
                if isinstance(cause, Exception):
                    raise cause from None
                raise
            except ray.exceptions.RayActorError as exc:
                if self.gen[i] == gen:  # the first to see it: its other sessions move too
                    self._lose(i, _first_line(exc))
                    watch.progress()
                    watch.sync()
                    live = sum(st == "live" for st in self.state)
                    print(f"econarena: warning: a session worker on {self.node_named(self.node_of[i])} stopped "
                          f"answering (Ray: {_first_line(exc)[:160]}); its sessions go on on "
                          f"{f'the {live} live worker(s) left' if live else 'the first worker Ray places again'}",
                          file=sys.stderr, flush=True)
            finally:
                self._in_flight[i] -= 1
                watch.calls[i].discard(call)
                watch.dropped.discard(call)
            moves += 1
            if moves == 1:
                watch.moved.append(key)
            if moves > MAX_MOVES:
                watch.given_up += 1
                if watch.given_up == 1:
                    print(f"econarena: warning: session {s} of {host.lineups[li].name} lost its Ray session worker "
                          f"{moves} times (last: {self.why[i] or 'unknown'}); it is left for --resume",
                          file=sys.stderr, flush=True)
                return

    # ---- ending ----
    def close(self) -> None:
        """Kill this engine's actors; disconnect from Ray, and stop it (every process of it) when this
        engine started it."""
        if not ray.is_initialized():
            return
        if self.workers and not self.cluster_lost and _gcs_silent_now(GCS_ASK_S):
            self.cluster_lost = True
        if self.cluster_lost:  # every call would wait a minute on the dead GCS (the CLI then leaves at once)
            self.workers, self.replicas, self.ledger, self.services = [], {}, None, None
            return
        live = [w for w, st in zip(self.workers, self.state) if st == "live"]
        with contextlib.suppress(Exception):  # connections closed cleanly, not torn down by the kill
            ray.get([w.shutdown.remote() for w in live], timeout=10)
        for actor in [*self.workers, *(r for rs in self.replicas.values() for r in rs), self.ledger, self.services]:
            if actor is not None:
                with contextlib.suppress(Exception):
                    ray.kill(actor)
        self.workers, self.replicas, self.ledger, self.services = [], {}, None, None
        if self.started:
            if self.address in (None, "local"):
                stop_local_ray()
            else:
                ray.shutdown()
            self.started = False


def _auto_address() -> str:
    """What ``--ray auto`` joins: RAY_ADDRESS, else the cluster `ray start` recorded on this machine. Never
    Ray's own fallback, a scan for any Ray process here: that joins another program's private instance,
    whose end then cancels our workers ("The actor never ran")."""
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env:
        return env
    recorded = None
    with contextlib.suppress(Exception):
        from ray._private.utils import read_ray_address

        recorded = read_ray_address()
    if recorded:
        return recorded
    raise RayUnavailable("--ray auto: no cluster to join (RAY_ADDRESS is not set and no `ray start` cluster is "
                         "recorded on this machine); start one with `ray start --head`, set RAY_ADDRESS, give its "
                         "address (--ray HOST:6379), or use --ray alone for one on this machine")


def _ray_processes() -> list[Any]:
    """The processes of the local Ray instance this process started: its descendants that are Ray's
    (raylet, GCS, agents, workers), and any process holding a file in its session directory, which Ray
    names after the starting process (``session_<time>_<pid>``): an agent whose raylet died is no longer
    a descendant, but still writes its logs there."""
    try:
        import psutil  # Ray ships it (ray/thirdparty_files)
    except ImportError:
        return []
    import re

    me = os.getpid()
    mine = re.compile(rf"[/\\]session_[0-9_-]+_{me}([/\\]|$)")
    root = os.path.dirname(ray.__file__)
    found: dict[int, Any] = {}
    with contextlib.suppress(psutil.Error):
        for p in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                name, cmd = p.name(), " ".join(p.cmdline())
                if name.startswith(("ray::", "raylet", "gcs_server")) or root in cmd or "ray::" in cmd:
                    found[p.pid] = p
    for p in psutil.process_iter():
        if p.pid == me or p.pid in found:
            continue
        with contextlib.suppress(psutil.Error):
            if p.uids().real == os.getuid() and any(mine.search(f.path) for f in p.open_files()):
                found[p.pid] = p
    return list(found.values())


def stop_local_ray(grace_s: float = 1.0) -> None:
    """Stop the local Ray instance this process started, every process of it: ``ray.shutdown()``, then a
    SIGKILL for what is left after ``grace_s``. Found by trying: a SIGTERM while ray.init was starting the
    instance left its dashboard and runtime-env agents running for good (they ignore SIGTERM, and their
    raylet was gone before it could stop them)."""
    before = _ray_processes()
    with contextlib.suppress(Exception):
        ray.shutdown()
    try:
        import psutil
    except ImportError:
        return
    _, alive = psutil.wait_procs(before, timeout=grace_s)
    left = {p.pid: p for p in [*alive, *_ray_processes()]}  # again: an agent started while Ray stopped
    for p in left.values():
        with contextlib.suppress(psutil.Error):
            p.send_signal(signal.SIGKILL)
    psutil.wait_procs(list(left.values()), timeout=5)


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
