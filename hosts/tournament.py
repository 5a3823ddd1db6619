"""``[tournament]``: the lineups of a tournament, each a table that plays every session of the experiment.

Why a module of its own: the designs are pure combinatorics (which entrant sits in which seat of which
table), shared by the Host (which plays them as lineups) and by ``validate``/``--dry-run`` (which count them),
and they must be reproducible from the file alone, so resuming or sharding a tournament finds the same tables.

- ``round_robin``: every ordered pair of distinct entrants for two seats (each plays each role against each
  other); for N seats, every combination of N distinct entrants, seated in each of its N rotations.
- ``balanced``: ``lineups = K`` tables, K a multiple of the number of entrants, built in blocks of one table
  per entrant: a seeded permutation of the entrants read at a set of distinct offsets, so that in every block
  each entrant sits exactly once in every seat; the offsets and the permutation of each block are chosen
  (among seeded candidates) to even out how often each pair of entrants meets.
- ``self_play``: one more table per entrant, every seat its own copy.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

DESIGNS = ("round_robin", "balanced")
SEP = " vs "  # a lineup's name: its seats' labels in seat order
BALANCED_CANDIDATES = 1024  # seeded candidate blocks tried per block of a balanced design (at most)
BALANCED_WORK = 25_000  # candidates tried in all (about 2 s): a design of many lineups tries fewer per block


def round_robin(n: int, seats: int) -> list[tuple[int, ...]]:
    """Every combination of ``seats`` distinct entrants out of ``n``, in each of its rotations (for two
    seats: every ordered pair)."""
    out = []
    for combo in itertools.combinations(range(n), seats):
        for r in range(seats):
            out.append(combo[r:] + combo[:r])
    return out


def _pair_counts(lineups: list[tuple[int, ...]], n: int) -> np.ndarray:
    met = np.zeros((n, n), dtype=np.int64)
    for lu in lineups:
        for a, b in itertools.combinations(lu, 2):
            met[a, b] += 1
            met[b, a] += 1
    return met


def balanced(n: int, seats: int, k: int, seed: int) -> list[tuple[int, ...]]:
    """``k`` lineups (``k`` a multiple of ``n``, ``seats <= n``) in which every entrant sits ``k / n`` times in
    every seat and the pairs meet as evenly as the seeded search finds; the same for the same arguments."""
    if k % n or seats > n:
        raise ValueError(f"balanced design: lineups ({k}) must be a multiple of the entrants ({n}), and seats "
                         f"({seats}) at most the entrants")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(5,)))
    out: list[tuple[int, ...]] = []
    met = np.zeros((n, n), dtype=np.int64)
    iu = np.triu_indices(n, 1)
    tries = max(8, min(BALANCED_CANDIDATES, BALANCED_WORK // max(1, k // n)))
    for _ in range(k // n):
        best: tuple[float, list[tuple[int, ...]], np.ndarray] | None = None
        for _ in range(tries):
            perm = rng.permutation(n)
            offsets = (0, *sorted(rng.choice(np.arange(1, n), size=seats - 1, replace=False).tolist()))
            block = [tuple(int(perm[(j + d) % n]) for d in offsets) for j in range(n)]
            after = met + _pair_counts(block, n)
            pairs = after[iu]
            spread = float(pairs.max() - pairs.min()) * 1e6 + float(pairs.var()) if pairs.size else 0.0
            if best is None or spread < best[0]:
                best = (spread, block, after)
            if pairs.size == 0 or pairs.max() - pairs.min() <= 1:
                break  # as even as whole numbers allow so far
        assert best is not None
        out += best[1]
        met = best[2]
    return out


@functools.lru_cache(maxsize=64)
def design_lineups(n: int, seats: int, design: str, k: int | None, self_play: bool,
                   seed: int) -> tuple[tuple[int, ...], ...]:
    """The tables of a tournament as tuples of entrant indices, seat by seat, in play order (cached: the
    Host and the checks ask for them often; the result is a tuple, so no caller can change the cached one)."""
    out = round_robin(n, seats) if design == "round_robin" else balanced(n, seats, k or 0, seed)
    if self_play:
        out += [(i,) * seats for i in range(n)]
    return tuple(out)


def lineup_names(tables: tuple[tuple[int, ...], ...], labels: list[str]) -> list[str]:
    """Each table's name (``A vs B``); a balanced design may seat one lineup twice: the repeat is ``A vs B (2)``."""
    seen: dict[str, int] = {}
    out = []
    for t in tables:
        name = SEP.join(labels[i] for i in t)
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out
