"""LLM players on a Ray cluster: limits, pauses and the response cache for the whole cluster; local models
as Ray actors (one per replica).

Why actors: a provider's ``max_connections`` and ``requests_per_minute`` are the provider's limits, not a
worker's; four workers with their own semaphores of 8 would send 32 requests at once. So one
:class:`ClusterServices` actor owns, per provider, the slots (a request holds one while it is on the wire),
the request spacing and the pause a ``Retry-After`` asked for; each worker's provider gets a
:class:`RemoteGate` that asks it (two small actor calls per request, well under a millisecond each next
to a model's latency). A slot is a lease: a worker killed mid-request cannot keep it past the request's
own deadline (``timeout_s``), so a dead worker never shrinks the cluster's limit for good. The same actor
owns the response cache: the sqlite file lives on the driver's machine (the actor is placed there), so a
resumed or repeated experiment finds every answer however many machines asked for it.

A local Hugging Face model runs as :class:`ModelReplica` actors placed with Ray's resources (``num_gpus``):
each holds one copy of the model and batches the decisions of every session routed to it, exactly as the
local batcher does (agents/providers/hf.py); workers reach them through :class:`ReplicaProvider`, which
sends each call to the replica with the fewest calls in flight from that worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import ray

from .base import Message
from .calls import RateLimiter
from .settings import Generation, LLMSettings, Provider

LEASE_MARGIN_S = 5.0  # a slot outlives its request's deadline by this much before it is taken back


class _Gate:
    """One provider's limits inside the services actor."""

    def __init__(self, limit: int, rpm: float | None) -> None:
        self.limit = limit
        self.limiter = RateLimiter(rpm) if rpm else None
        self.cool_until = 0.0
        self.leases: dict[int, float] = {}  # ticket -> monotonic expiry
        self.changed = asyncio.Event()
        self.peak = 0
        self.granted = 0

    def reap(self) -> None:
        now = time.monotonic()
        for t in [t for t, until in self.leases.items() if until < now]:
            del self.leases[t]


@ray.remote(num_cpus=0)
class ClusterServices:
    """Cluster-wide provider limits and the response cache (an async actor: waiting callers cost nothing)."""

    def __init__(self) -> None:
        self.caches: dict[str, Any] = {}
        self.gates: dict[str, _Gate] = {}
        self._tickets = itertools.count(1)
        self._env: dict[str, str] = {}

    def forward_env(self, values: dict[str, str]) -> None:
        """Variables from the driver's environment (keys, --ray-env) for the workers: held in this process's
        memory only, never written, logged or returned to anyone but a worker that asks."""
        self._env.update(values)

    def forwarded_env(self) -> dict[str, str]:
        return dict(self._env)

    def open_cache(self, path: str) -> str | None:
        """Open the cache file ``path`` (the driver resolved it); why it cannot be opened, or None."""
        from .cache import open_cache

        try:
            self.caches[path] = open_cache(path)
        except Exception as exc:  # noqa: BLE001 - reported to the driver, which stops with it
            return f"cannot open the response cache ({exc}); use --no-cache or another path"
        return None

    async def acquire(self, key: str, limit: int, rpm: float | None, lease_s: float) -> tuple[int, str]:
        """Wait for a slot of provider ``key``; returns (ticket, key) for :meth:`release`."""
        gate = self.gates.get(key)
        if gate is None:
            gate = self.gates[key] = _Gate(limit, rpm)
        while True:
            gate.reap()
            if len(gate.leases) < gate.limit:
                break
            gate.changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(gate.changed.wait(), timeout=0.5)  # wakes on release, reaps on time
        ticket = next(self._tickets)
        gate.leases[ticket] = time.monotonic() + lease_s
        gate.peak = max(gate.peak, len(gate.leases))
        gate.granted += 1
        try:
            while gate.cool_until > time.monotonic():  # a Retry-After holds for every worker
                await asyncio.sleep(gate.cool_until - time.monotonic())
            if gate.limiter is not None:
                await gate.limiter.acquire()
        except BaseException:
            self.release((ticket, key))
            raise
        return ticket, key

    def release(self, slot: tuple[int, str]) -> None:
        ticket, key = slot
        gate = self.gates.get(key)
        if gate is not None and gate.leases.pop(ticket, None) is not None:
            gate.changed.set()

    def pause(self, key: str, seconds: float) -> None:
        gate = self.gates.get(key)
        if gate is not None:
            gate.cool_until = max(gate.cool_until, time.monotonic() + seconds)

    def cache_get(self, path: str, key: str) -> dict[str, Any] | None:
        cache = self.caches.get(path)
        return cache.get(key) if cache is not None else None

    def cache_put(self, path: str, key: str, fields: dict[str, Any]) -> None:
        cache = self.caches.get(path)
        if cache is not None:
            cache.put(key, **fields)

    def cpu_s(self) -> float:
        """CPU seconds this actor has used (the benchmark: its cost per request)."""
        return time.process_time()

    def stats(self) -> dict[str, dict[str, int]]:
        """Per provider: the most slots ever held at once, and slots granted (tests, the benchmark)."""
        return {k: {"peak": g.peak, "granted": g.granted, "held": len(g.leases)} for k, g in self.gates.items()}


class RemoteGate:
    """A provider's gate on a worker (same shape as calls.LocalGate): slots and pauses from the services
    actor, so ``max_connections`` and Retry-After hold for the whole cluster."""

    def __init__(self, services: Any, key: str, settings: LLMSettings) -> None:
        self.services = services
        self.key = key
        self.limit = settings.max_connections
        self.rpm = settings.requests_per_minute
        self.lease_s = settings.timeout_s + LEASE_MARGIN_S

    @contextlib.asynccontextmanager
    async def slot(self) -> Any:
        held = await self.services.acquire.remote(self.key, self.limit, self.rpm, self.lease_s)
        try:
            yield
        finally:
            self.services.release.remote(held)

    def pause(self, seconds: float) -> None:
        self.services.pause.remote(self.key, seconds)


class CacheProxy:
    """The response cache seen from a worker: lookups are awaited (an ObjectRef), stores are sent and
    not waited for (a store lost with a killed worker only costs a repeated call)."""

    def __init__(self, services: Any, path: str) -> None:
        self.services, self.path = services, path

    def get(self, key: str) -> Any:
        return self.services.cache_get.remote(self.path, key)

    def put(self, key: str, **fields: Any) -> None:
        self.services.cache_put.remote(self.path, key, fields)


@ray.remote
class ModelReplica:
    """One copy of a local (hf) model; the decisions of every session routed here share its batches."""

    def __init__(self, settings: LLMSettings, services: str | None = None) -> None:
        from .providers.hf import HFProvider

        self.provider = HFProvider(settings)
        self.services = services  # the services actor's name: the driver's forwarded variables (HF_TOKEN...)

    def load(self) -> float:
        """Load the model now (the driver waits for every replica before any session starts)."""
        if self.services is not None:
            import os

            os.environ.update(ray.get(ray.get_actor(self.services).forwarded_env.remote()))
        self.provider.load()
        return float(self.provider.load_s or 0.0)

    async def generate(self, messages: Sequence[Message], settings: LLMSettings,
                       schema: dict[str, Any] | None = None) -> Generation:
        return await self.provider.generate(messages, settings, schema)

    def stats(self) -> dict[str, Any]:
        s = self.provider.stats
        return {"calls": s.calls, "requests": s.requests, "sizes": list(s.sizes)}


class ReplicaProvider(Provider):
    """A local model's replicas seen from a worker: each call goes to the replica with the fewest calls
    in flight from here (the replicas batch what they receive)."""

    name: ClassVar[str] = "hf"

    def __init__(self, settings: LLMSettings, replicas: Sequence[Any]) -> None:
        super().__init__(settings)
        from .providers.hf import DEFAULT_MODEL

        self.default_model = settings.model or DEFAULT_MODEL  # type: ignore[misc]  # this replica's own model
        self.replicas = list(replicas)
        self.in_flight = [0] * len(self.replicas)
        self._build: dict[str, Any] | None = None

    def build(self) -> dict[str, Any]:
        """The weights' identity as a local hf player names it, so a cache is shared with local runs."""
        if self._build is None or self._build.get("weights") is None:
            from .providers.hf import weights_identity

            self._build = weights_identity(self.settings.model)
        return dict(self._build)

    async def generate(self, messages: Sequence[Message], settings: LLMSettings,
                       schema: dict[str, Any] | None = None) -> Generation:
        i = min(range(len(self.replicas)), key=lambda j: (self.in_flight[j], j))
        self.in_flight[i] += 1
        try:
            return await self.replicas[i].generate.remote(tuple(messages), settings, schema)
        finally:
            self.in_flight[i] -= 1


def gate_key(provider_key: tuple[Any, ...]) -> str:
    """A provider's name for the services actor: a digest of its key (which may hold a base_url with a
    credential), so no secret travels or shows in stats."""
    import hashlib

    return hashlib.sha256(repr(provider_key).encode()).hexdigest()[:16]
