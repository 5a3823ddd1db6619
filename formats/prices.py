"""Token prices (USD per million input and output tokens) by model name or label, from a TOML file::

    ["gpt-4o"]
    input_per_mtok = 2.5
    output_per_mtok = 10.0

Prices change and differ by contract, so none are built in; local models and baselines cost 0. Read by
the report's tokens-and-cost table and by the live progress line of a run (cost so far), so it sits at the
package root, below both.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .files import CONFIG_BYTES, read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Prices = dict[str, tuple[float, float]]
MAX_PER_MTOK = 1e9  # a thousand dollars a token: any cost stays a finite number


def load_prices(path: str | Path | None) -> Prices:
    """``{name: (input, output)}``; raises OSError, ValueError (tomllib's errors are ValueErrors) with the key."""
    if path is None:
        return {}
    data = tomllib.loads(read_text(path, CONFIG_BYTES))
    out = {}
    for name, v in data.items():
        if not isinstance(v, dict):
            raise ValueError(f"{name} = {v!r}: expected a table [\"{name}\"] with input_per_mtok and "
                             "output_per_mtok")
        unknown = sorted(set(v) - {"input_per_mtok", "output_per_mtok"})
        if unknown:  # a typo must not price a model at 0 in silence
            raise ValueError(f"[{name}] unknown key '{unknown[0]}' (expected input_per_mtok, output_per_mtok)")
        prices = []
        for key in ("input_per_mtok", "output_per_mtok"):
            x = v.get(key, 0.0)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
                raise ValueError(f"[{name}] {key}: expected a number >= 0 (got {x!r})")
            if x > MAX_PER_MTOK:  # 1e308 passed, and a cost of inf went into bench.json as Infinity
                raise ValueError(f"[{name}] {key}: {x!r} USD per million tokens is beyond any price (at most "
                                 f"{MAX_PER_MTOK:g})")
            prices.append(float(x))
        out[name] = (prices[0], prices[1])
    return out


def price_of(prices: Mapping[str, tuple[float, float]], label: str, models: Sequence[str]
             ) -> tuple[float, float] | None:
    """The price of a label (its own entry first, else its first model that has one)."""
    return prices.get(str(label)) or next((prices[m] for m in models if m in prices), None)


def cost_usd(price: tuple[float, float], tokens_in: float, tokens_out: float) -> float:
    return (tokens_in * price[0] + tokens_out * price[1]) / 1e6


class Budget:
    """A spending limit in USD over the calls of a whole command (``econarena bench --max-cost``): a cap.

    ``spent`` starts at what earlier invocations paid (read from their logs) and grows with every reply that
    was not answered from the response cache. Before each HTTP attempt the call layer (agents/calls.py)
    reserves (``reserve``) the attempt's worst-case cost (its prompt's tokens bounded from above, ``max_tokens`` out);
    ``settle`` frees the reservation when the attempt returns and holds its actual cost as ``pending`` until
    the Host charges (``charge``) the same reply. An attempt is sent only while spent + pending + reserved + its
    worst case stays within the limit, so calls in flight can never carry the spend past it. ``allows()`` is
    asked before each decision (a local model's calls, which the call layer does not see). A call whose
    label and model have no price costs 0 here: a budget needs a price (the CLI refuses --max-cost without
    one).
    """

    def __init__(self, limit: float, prices: Mapping[str, tuple[float, float]], spent: float = 0.0) -> None:
        self.limit = float(limit)
        self.prices = dict(prices)
        self.spent = float(spent)
        self.reserved = 0.0  # worst cases of the attempts in flight
        self.pending = 0.0  # actual costs of attempts returned but not yet charged by the Host
        self.refused = 0  # calls not started because the limit was reached
        self.last_worst = 0.0  # the worst case of the last attempt refused: what no longer fit

    def _price(self, label: str, model: str | None) -> tuple[float, float] | None:
        return price_of(self.prices, label, [model] if model else [])

    @property
    def committed(self) -> float:
        """What is spent, owed or held for calls in flight."""
        return self.spent + self.pending + self.reserved

    @property
    def busy(self) -> bool:
        """Calls in flight: room may open when they return (their worst case becomes their actual cost)."""
        return self.reserved > 1e-12

    def allows(self) -> bool:
        """Whether a decision may start: money spent or owed is below the limit. Reservations of calls in flight
        are not counted here (they counted once, stopping a bench at a third of its cap while its first wave
        of calls was in flight): the attempt's own reservation waits for them (agents/calls.py)."""
        if self.spent + self.pending < self.limit:
            return True
        self.refused += 1
        return False

    def reserve(self, label: str, model: str | None, tokens_in: int, tokens_out: int) -> float | None:
        """Hold the worst-case cost of one attempt; None (and nothing held) when it would pass the limit."""
        price = self._price(label, model)
        amount = cost_usd(price, tokens_in, tokens_out) if price is not None else 0.0
        return amount if self.hold(amount) else None

    def hold(self, amount: float) -> bool:
        """Hold ``amount`` USD (a whole session's worst case, ``--ray``: its calls are made on other nodes,
        where this budget is not) while it fits; False (nothing held) when it would pass the limit."""
        if self.committed + amount > self.limit:
            if not self.busy:
                self.refused += 1
                self.last_worst = amount
            return False
        self.reserved += amount
        return True

    def release(self, amount: float) -> None:
        """Free a ``hold`` once what it covered is charged."""
        self.reserved = max(0.0, self.reserved - amount)

    def settle(self, amount: float, label: str, model: str | None, tokens_in: int | None,
               tokens_out: int | None) -> None:
        """An attempt returned: free its reservation and hold its actual cost until ``charge``."""
        self.reserved = max(0.0, self.reserved - amount)
        price = self._price(label, model)
        if price is not None:
            self.pending += cost_usd(price, tokens_in or 0, tokens_out or 0)

    def charge(self, label: str, model: str | None, tokens_in: int | None, tokens_out: int | None,
               cached: bool = False) -> None:
        if cached:
            return
        price = self._price(label, model)
        if price is not None:
            cost = cost_usd(price, tokens_in or 0, tokens_out or 0)
            self.spent += cost
            self.pending = max(0.0, self.pending - cost)

    @property
    def reached(self) -> bool:
        """The limit stopped a call (or is spent): the result is incomplete on the budget."""
        return self.spent >= self.limit or self.refused > 0
