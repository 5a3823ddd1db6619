"""The shard rule of ``run --shard K/N``: which shard plays which session, the same in every process.

Pure arithmetic, apart from ``shards.py`` (which reads and merges shard directories) so that the dry run's
counts (``experiment.planned_calls``) use the very rule the Host deals sessions by.
"""

from __future__ import annotations

import math
import re


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` with 1 <= K <= N; ValueError with the reason otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise ValueError(f"expected K/N (shard K of N, e.g. 3/8), got {text!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"{text!r}: K must be from 1 to N (shard 1/{max(n, 1)} ... {max(n, 1)}/{max(n, 1)})")
    return k, n


def shard_of(li: int, session: int, tables: int, n: int) -> int:
    """The shard (1..n) that plays table ``li``'s session ``session``."""
    return (session * tables + li) % n + 1


def in_shard(li: int, session: int, tables: int, shard: tuple[int, int]) -> bool:
    return shard_of(li, session, tables, shard[1]) == shard[0]


def shard_sessions(sessions: int, li: int, tables: int, shard: tuple[int, int]) -> int:
    """How many of a table's ``sessions`` fall in ``shard``, without enumerating them (10**12 is fine)."""
    k, n = shard
    g = math.gcd(tables, n)
    period = n // g  # s -> (s * tables + li) % n repeats every `period` sessions
    if (k - 1 - li) % g:
        return 0
    # the one s in [0, period) with s * tables = k - 1 - li (mod n): solved, not searched (N may be 10**20)
    first = (k - 1 - li) // g * pow(tables // g, -1, period) % period if period > 1 else 0
    full, rest = divmod(sessions, period)
    return full + (1 if first < rest else 0)


__all__ = ["in_shard", "parse_shard", "shard_of", "shard_sessions"]
