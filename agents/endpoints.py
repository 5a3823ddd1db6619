"""Several endpoints for one player: ``base_url = ["http://a/v1", "http://b/v1"]``.

Replicas of a vLLM or SGLang server (or several API gateways) serve one player. A session stays on one
endpoint while it lives, so its growing conversation keeps hitting that server's prefix cache; a new
session goes to the endpoint with the fewest calls in flight. An endpoint that refuses connections, drops
them, times out or answers 5xx is set aside for ``SET_ASIDE_S`` seconds (one warning per endpoint, the URL masked) and
the call goes to another at once, within the provider's usual retry budget (agents/calls.py). When every
endpoint is set aside, the one due back first is tried.

Which session a call belongs to travels in the context variable :data:`AFFINITY` (set by the LLM agent
from the decision's coordinates), so no provider signature changes for it.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from contextvars import ContextVar

AFFINITY: ContextVar[Hashable | None] = ContextVar("econarena_affinity", default=None)
SET_ASIDE_S = 30.0
MAX_STICKY = 65536  # sessions remembered; the oldest are forgotten (they are over, or start afresh)


class EndpointPool:
    """The endpoints of one provider: who is in flight where, which are set aside, and session affinity."""

    def __init__(self, urls: Sequence[str], shown: Sequence[str] | None = None) -> None:
        if not urls:
            raise ValueError("an endpoint pool needs at least one URL")
        self.urls = list(urls)
        self.shown = list(shown) if shown is not None else ["<endpoint>"] * len(self.urls)  # masked, for messages
        n = len(self.urls)
        self.in_flight = [0] * n
        self.served = [0] * n  # successful calls per endpoint
        self.aside_until = [0.0] * n
        self._sticky: OrderedDict[Hashable, int] = OrderedDict()
        self._warned: set[int] = set()

    def up(self, i: int, now: float | None = None) -> bool:
        return self.aside_until[i] <= (time.monotonic() if now is None else now)

    def choose(self, affinity: Hashable | None = None) -> int:
        """The endpoint for the next call of ``affinity``'s session (None: no session)."""
        now = time.monotonic()
        if affinity is not None:
            i = self._sticky.get(affinity)
            if i is not None and self.up(i, now):
                self._sticky.move_to_end(affinity)
                return i
        up = [i for i in range(len(self.urls)) if self.up(i, now)]
        if not up:
            return min(range(len(self.urls)), key=lambda i: self.aside_until[i])
        i = min(up, key=lambda j: (self.in_flight[j], j))
        if affinity is not None:
            self._sticky[affinity] = i
            self._sticky.move_to_end(affinity)
            if len(self._sticky) > MAX_STICKY:
                self._sticky.popitem(last=False)
        return i

    def set_aside(self, i: int, why: str) -> bool:
        """Set endpoint ``i`` aside; True when another endpoint is up to take the call."""
        now = time.monotonic()
        self.aside_until[i] = now + SET_ASIDE_S
        other = any(self.up(j, now) for j in range(len(self.urls)) if j != i)
        if i not in self._warned:
            self._warned.add(i)
            then = ("its calls go to the other endpoint(s)" if other else
                    "and no other endpoint is up: calls wait and retry (max_retries) on the one due back first")
            print(f"econarena: warning: endpoint {self.shown[i]} failed ({why.split(' (')[0][:200]}); "
                  f"set aside for {SET_ASIDE_S:g} s, {then}", file=sys.stderr, flush=True)
        return other
