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
    """A spending limit in USD over the calls of a whole command (``econarena bench --max-cost``).

    ``spent`` starts at what earlier invocations paid (read from their logs) and grows with every reply that
    was not answered from the response cache; ``allows()`` is asked before each call, so no call starts once
    the limit is reached (calls already in flight finish and are counted). A call whose label and model
    have no price costs 0 here: a budget needs a price (the CLI refuses --max-cost without one).
    """

    def __init__(self, limit: float, prices: Mapping[str, tuple[float, float]], spent: float = 0.0) -> None:
        self.limit = float(limit)
        self.prices = dict(prices)
        self.spent = float(spent)
        self.refused = 0  # calls not started because the limit was reached

    def allows(self) -> bool:
        if self.spent < self.limit:
            return True
        self.refused += 1
        return False

    def charge(self, label: str, model: str | None, tokens_in: int | None, tokens_out: int | None,
               cached: bool = False) -> None:
        if cached:
            return
        price = price_of(self.prices, label, [model] if model else [])
        if price is not None:
            self.spent += cost_usd(price, tokens_in or 0, tokens_out or 0)

    @property
    def reached(self) -> bool:
        return self.spent >= self.limit
