"""Ratings of a tournament's entrants across opponents (``econarena ratings``), from the run logs alone.

Why these methods, each answering its own question:

- **Plackett-Luce** (Bradley-Terry for two seats): who tends to finish above whom. Each session's seats are
  ranked by their payoff summed over the session's runs; a tie counts as every order of the tied entrants,
  each with the same weight (for two seats: half a win each way). Fitted by maximum likelihood (Newton's
  method on the concave log-likelihood); ratings are natural-log worths, the reference entrant at 0 (the
  rational baseline where it plays, otherwise the entrants' mean). Where the comparisons separate (a group
  of entrants finishes above everyone outside it every time) the maximum does not exist: those ratings are
  reported as ``inf``/``-inf`` and said, never pulled back by a prior.
- **A bootstrap over sessions** (session k of every lineup resampled together, which keeps the pairing of
  the draws) gives 95% intervals and each entrant's rank range (the best and worst rank it takes in the
  middle 95% of the replications).
- **The meta-game** P[i][j] (i's mean payoff against j, normalised to [0, 1]) and A = P - P^T: **Nash
  averaging** (Balduzzi et al. 2018: each entrant's payoff against the maximum-entropy Nash equilibrium of
  A, which a copy of an entrant joining the pool does not change) and **alpha-Rank** (OpenSpiel's
  ``alpharank.compute``: the mass of each entrant in the stationary distribution of an evolutionary process).
- **Cycles**: triples A beats B beats C beats A in P whose every step's 95% interval of A excludes 0.

Only numpy, scipy (the support of the maximum-entropy equilibrium, one linear program per entrant) and
OpenSpiel's alpha-Rank; nothing here imports the hosts or agents.
"""

from __future__ import annotations

import itertools
import math
import sys
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..formats import rundir
from ..formats.csvcells import csv_text as write_csv
from ..formats.files import CONFIG_BYTES, read_text
from ..formats.reading import read_errors_as
from ..games import GAMES
from ..games.base import Game, Setup

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ENVIRONMENT = "tournament"  # the environment a tournament's runs record (hosts/tournament.py)
COLUMNS = ("game", "entrant", "rating", "low", "high", "rank_low", "rank_high", "nash_average", "alpharank")
OVERALL = "overall"
N_BOOT = 1000
LEVEL = 0.95
MAX_ORDERS = 720  # orders of tied seats one session may expand into (6! : six seats tied)
ALPHARANK = {"m": 50, "alpha": 100.0, "use_local_selection_model": True}  # OpenSpiel's defaults, said in notes


class RatingsError(ValueError):
    """The directories hold no tournament, or one that cannot be rated; the message says which and why."""


# ---------------------------------------------------------------- reading the logs

@dataclass
class Session:
    """One lineup's session: its entrants seat by seat and each seat's payoff per run (the session's sum
    over its runs divided by their number, so sessions of different lengths weigh alike in P)."""

    unit: int  # the bootstrap unit: (experiment, session) -> index; every lineup's session k shares it
    entrants: tuple[int, ...]
    payoff: tuple[float, ...]
    total: tuple[float, ...]  # summed over the runs: what the ranking reads
    bounds: tuple[float, float] | None  # the game's declared per-run payoff bounds for this draw, if any


@dataclass
class Tournament:
    """The sessions of one game (one [grid] cell of it) across the directories read."""

    game: str
    entrants: list[str] = field(default_factory=list)
    rational: str | None = None  # the entrant label of the rational baseline, where one plays
    sessions: list[Session] = field(default_factory=list)
    units: list[tuple[str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _cell_text(cell: Any) -> str:
    if not isinstance(cell, dict) or not cell:
        return ""
    return ",".join(f"{str(k).split('.', 1)[-1]}={v}" for k, v in cell.items())


def _config(d: Path) -> dict[str, Any]:
    with read_errors_as(RatingsError, f"{d / rundir.CONFIG}: unreadable"):
        return tomllib.loads(read_text(d / rundir.CONFIG, CONFIG_BYTES))


def _tournament(gkey: str, sessions: dict[tuple[str, str, int], dict[str, Any]], game: Game | None,
                runs_wanted: int, twice: int) -> Tournament:
    """One game's tournament from its sessions' sums: the complete sessions, its entrants in order of
    appearance, each session's payoff bounds (none for any when one lacks them)."""
    t = Tournament(gkey)
    if twice:
        t.notes.append(f"{twice} run(s) met twice (a shard beside its merge?) counted once")
    index: dict[str, int] = {}
    units: dict[tuple[str, int], int] = {}
    dropped = 0
    bounds_missing = False
    for (name, _lineup, session), s in sorted(sessions.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
        if s["bad"] or s["runs"] < runs_wanted:
            dropped += 1
            continue
        for label, agent in itertools.zip_longest(s["labels"], s["agents"]):
            if label not in index:
                index[label] = len(index)
                t.entrants.append(label)
            if agent == "rational" and t.rational is None:
                t.rational = label
        unit = units.setdefault((name, session), len(units))
        bounds = None
        if game is not None:
            try:
                bounds = game.payoff_bounds(Setup(len(s["labels"]), s["params"]))
            except (KeyError, TypeError, ValueError):
                bounds = None
        bounds_missing |= bounds is None
        n = s["runs"]
        t.sessions.append(Session(unit, tuple(index[x] for x in s["labels"]),
                                  tuple(x / n for x in s["sum"]), tuple(s["sum"]),
                                  None if bounds is None else (float(bounds[0]), float(bounds[1]))))
    if bounds_missing:
        for i, kept in enumerate(t.sessions):
            t.sessions[i] = Session(kept.unit, kept.entrants, kept.payoff, kept.total, None)
    t.units = sorted(units, key=units.__getitem__)
    if dropped:
        t.notes.append(f"{dropped} session(s) left out: a run of theirs is missing or incomplete")
    if len(t.entrants) < 2 or not t.sessions:
        raise RatingsError(f"{gkey}: the tournament has {len(t.entrants)} entrant(s) in {len(t.sessions)} "
                           "complete session(s): nothing to rate")
    return t


def read_tournaments(dirs: Iterable[Path]) -> dict[str, Tournament]:
    """Every tournament's sessions in the run directories, by game (``game [cell]`` with a grid). A run met
    twice (a shard beside its merge) counts once; a session with a run missing or incomplete is left out and
    counted in the notes."""
    acc: dict[str, dict[tuple[str, str, int], dict[str, Any]]] = {}
    seen: set[tuple[str, str, int, int]] = set()
    games: dict[str, str] = {}
    runs_wanted: dict[str, int] = {}
    twice = 0
    for d in dirs:
        cfg = _config(d)
        exp = cfg["experiment"] if isinstance(cfg.get("experiment"), dict) else {}
        if "tournament" not in cfg:
            continue
        name, game = str(exp.get("name", d.name)), str(exp.get("game", ""))
        runs = exp.get("runs", 1)
        for _, rec in rundir.iter_records(d / rundir.RUNS, "runs"):
            if rec.get("environment") != ENVIRONMENT:
                continue
            key = (name, str(rec["lineup"]), int(rec["session"]), int(rec["run"]))
            if key in seen:
                twice += 1
                continue
            seen.add(key)
            cell = _cell_text(rec.get("cell"))
            gkey = f"{game} [{cell}]" if cell else game
            games[gkey] = game
            runs_wanted[gkey] = runs if isinstance(runs, int) else 1
            s = acc.setdefault(gkey, {}).setdefault((name, key[1], key[2]), {
                "labels": rec["labels"], "agents": rec.get("agents") or [], "runs": 0, "bad": False,
                "sum": [0.0] * len(rec["labels"]), "params": rec.get("params") or {}})
            pay = rec.get("payoffs")
            if not rec.get("complete", True) or not isinstance(pay, list) or any(
                    not isinstance(x, (int, float)) or isinstance(x, bool) for x in pay):
                s["bad"] = True
                continue
            s["runs"] += 1
            s["sum"] = [a + float(b) for a, b in zip(s["sum"], pay)]
    if not acc:
        raise RatingsError("no tournament in the directories given: a tournament is an experiment with a "
                           "[tournament] table (its runs record environment = \"tournament\")")
    return {gkey: _tournament(gkey, acc[gkey], GAMES.get(games[gkey]), runs_wanted[gkey], twice)
            for gkey in sorted(acc)}


# ---------------------------------------------------------------- Plackett-Luce

@dataclass
class Events:
    """Choice events: ``chosen`` was first among the entrants counted in ``alts`` (a row of seat counts per
    entrant), with weight ``w``, from bootstrap unit ``unit``."""

    chosen: np.ndarray
    alts: np.ndarray
    w: np.ndarray
    unit: np.ndarray

    @property
    def n(self) -> int:
        return int(self.alts.shape[1])


def _groups(total: Sequence[float]) -> list[list[int]]:
    """Seats grouped by equal payoff, best first (equal: within 1e-9 of the group's first)."""
    order = sorted(range(len(total)), key=lambda i: -total[i])
    out: list[list[int]] = []
    for i in order:
        if out and abs(total[out[-1][0]] - total[i]) <= 1e-9 * max(1.0, abs(total[i])):
            out[-1].append(i)
        else:
            out.append([i])
    return out


def session_events(entrants: Sequence[int], total: Sequence[float], n: int) -> list[tuple[int, tuple[int, ...], float]]:
    """(chosen, seat counts of the entrants still in the running, weight) of one session's ranking: the
    Plackett-Luce choices, first place among all, second among the rest, ...; ties expanded into every order
    of the tied seats with equal weight. Where that would be more than ``MAX_ORDERS`` orders, the last group
    of tied seats (usually those with nothing) stays unordered: it adds no choice."""
    groups = _groups(total)
    orders = math.prod(math.factorial(len(g)) for g in groups)
    if orders > MAX_ORDERS:
        groups = groups[:-1]
        orders = math.prod(math.factorial(len(g)) for g in groups)
        if orders > MAX_ORDERS:
            raise RatingsError(f"a session ties {max(len(g) for g in groups)} seats above the last place: more "
                               f"than {MAX_ORDERS} orders to split its ranking over")
    ranked = [i for g in groups for i in g]
    rest = [i for i in range(len(total)) if i not in ranked]
    counts: dict[tuple[int, tuple[int, ...]], float] = {}
    for perm in itertools.product(*(itertools.permutations(g) for g in groups)):
        seq = [i for p in perm for i in p]
        for k, seat in enumerate(seq):
            left = seq[k:] + rest
            if len(left) < 2:
                break
            row = [0] * n
            for j in left:
                row[entrants[j]] += 1
            key = (entrants[seat], tuple(row))
            counts[key] = counts.get(key, 0.0) + 1.0 / orders
    return [(c, row, w) for (c, row), w in counts.items()]


def build_events(t: Tournament) -> Events:
    """Every session's choice events (a lineup of copies of one entrant tells nothing about ratings)."""
    n = len(t.entrants)
    chosen, alts, w, unit = [], [], [], []
    for s in t.sessions:
        if len(set(s.entrants)) < 2:
            continue
        for c, row, wt in session_events(s.entrants, s.total, n):
            if sum(1 for x in row if x) < 2:
                continue  # only copies of the chosen one left: a certain choice
            chosen.append(c)
            alts.append(row)
            w.append(wt)
            unit.append(s.unit)
    return Events(np.asarray(chosen, dtype=np.int64), np.asarray(alts, dtype=np.float64).reshape(-1, n),
                  np.asarray(w, dtype=np.float64), np.asarray(unit, dtype=np.int64))


def _closure(ev: Events, w: np.ndarray) -> np.ndarray:
    """reach[i, j]: a chain of wins leads from i to j (i finished above someone who ... finished above j)."""
    n = ev.n
    onehot = np.zeros((len(ev.chosen), n))
    onehot[np.arange(len(ev.chosen)), ev.chosen] = (w > 0)
    beat = (onehot.T @ (ev.alts > 0)) > 0
    np.fill_diagonal(beat, True)
    reach = beat.copy()
    for k in range(n):
        reach |= reach[:, k:k + 1] & reach[k:k + 1, :]
    return reach


def _newton(chosen: np.ndarray, alts: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """The Plackett-Luce MLE of worths (log scale, entrant 0 at 0) on strongly connected comparisons."""
    theta = np.zeros(n)
    if n < 2:
        return theta
    onehot = np.zeros((len(chosen), n))
    onehot[np.arange(len(chosen)), chosen] = 1.0
    target = w @ onehot

    def loglik(th: np.ndarray) -> float:
        z = alts * np.exp(th - th.max())
        return float(w @ (th[chosen] - th.max() - np.log(z.sum(axis=1))))

    current = loglik(theta)
    for _ in range(200):
        z = alts * np.exp(theta - theta.max())
        q = z / z.sum(axis=1, keepdims=True)
        grad = target - w @ q
        hess = (q * w[:, None]).T @ q - np.diag(w @ q)  # the Hessian of the log-likelihood
        step = np.zeros(n)
        step[1:] = np.linalg.solve(hess[1:, 1:], -grad[1:])
        if np.max(np.abs(grad[1:])) < 1e-11 * max(1.0, float(w.sum())):
            break
        t = 1.0
        while t > 1e-8:
            new = theta + t * step
            value = loglik(new)
            if value >= current - 1e-12:
                theta, current = new, value
                break
            t /= 2
        else:
            break
    return theta


def fit(ev: Events, w: np.ndarray | None = None, reference: int | None = None) -> tuple[np.ndarray, bool]:
    """:func:`fit_ranked` without the ranks."""
    rating, _, separated = fit_ranked(ev, w, reference)
    return rating, separated


def fit_ranked(ev: Events, w: np.ndarray | None = None,
               reference: int | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """Ratings (natural-log worth, reference at 0) and whether the data separate. Separated: the strongly
    connected groups of the win graph (who finished above whom, through chains) are told apart; the largest
    (the reference's on a tie) keeps finite ratings, groups that finish above it get ``inf``, those below
    ``-inf``, those never compared with it ``nan``. The reference entrant is at 0 where it is in that group,
    otherwise the group's mean is. The ranks (1: best) read the same order: j is above i when j's rating is
    higher within the finite group, or when j's group finishes above i's (a chain of wins leads from j to i,
    none back), so separated data still rank entrants whose ratings are all ``-inf``."""
    w = ev.w if w is None else w
    n = ev.n
    reach = _closure(ev, w)
    comp = [-1] * n
    groups: list[list[int]] = []
    for i in range(n):
        if comp[i] < 0:
            members = [j for j in range(n) if reach[i, j] and reach[j, i]]
            for j in members:
                comp[j] = len(groups)
            groups.append(members)
    out = np.full(n, np.nan)
    # the finite ratings are those of the largest group (the reference's, on a tie); an unbounded
    # reference cannot anchor them, so then their mean does
    ref_group = max(range(len(groups)), key=lambda g: (len(groups[g]), reference in groups[g], -g))
    if reference is not None and reference not in groups[ref_group]:
        reference = None
    for g, members in enumerate(groups):
        if g == ref_group:
            continue
        a, b = members[0], groups[ref_group][0]
        out[members] = np.inf if reach[a, b] else -np.inf if reach[b, a] else np.nan
    members = groups[ref_group]
    pos = np.full(n, -1, dtype=np.int64)
    pos[members] = np.arange(len(members))
    keep = (pos[ev.chosen] >= 0) & (w > 0)
    alts = ev.alts[keep][:, members] if len(members) < n else ev.alts[keep]
    use = (alts > 0).sum(axis=1) >= 2
    theta = _newton(pos[ev.chosen[keep][use]], alts[use], w[keep][use], len(members))
    theta -= theta[pos[reference]] if reference is not None else theta.mean()
    out[members] = theta
    above = reach & ~reach.T  # j's group above i's: above[j, i]
    same = np.asarray(comp)[:, None] == np.asarray(comp)[None, :]
    finite = np.isfinite(out)
    higher = same & finite[:, None] & finite[None, :] & (out[:, None] > out[None, :] + 1e-9)
    rank = 1 + (above | higher).sum(axis=0)
    return out, rank.astype(np.int64), len(groups) > 1


def boot_weights(offsets: Sequence[tuple[int, int]], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(replications, units): how often each session unit is drawn, game by game (``offsets``: each game's
    first unit and number of units). Session k of every lineup is one unit, so the pairing is kept."""
    base = sum(u for _, u in offsets)
    out = np.zeros((n_boot, base))
    for b in range(n_boot):
        for start, u in offsets:
            out[b, start:start + u] = np.bincount(rng.integers(0, u, size=u), minlength=u)
    return out


def pl_boot(ev: Events, weights: np.ndarray, reference: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Each replication's ratings and ranks, refitted on the sessions it drew."""
    boot = np.empty((len(weights), ev.n))
    rank = np.empty((len(weights), ev.n), dtype=np.int64)
    for b, wt in enumerate(weights):
        boot[b], rank[b], _ = fit_ranked(ev, ev.w * wt[ev.unit], reference)
    return boot, rank


# ---------------------------------------------------------------- the meta-game

def normalised(t: Tournament) -> tuple[list[tuple[float, ...]], str]:
    """Each session's per-run payoffs on [0, 1]: by the game's declared bounds, else the tournament's
    observed range (said in the returned note)."""
    if all(s.bounds is not None for s in t.sessions):
        out = []
        for s in t.sessions:
            lo, hi = s.bounds  # type: ignore[misc]  # every session has bounds (tested above)
            out.append(tuple((x - lo) / (hi - lo) if hi > lo else 0.5 for x in s.payoff))
        return out, "payoffs normalised by the game's declared payoff bounds"
    lo = min(min(s.payoff) for s in t.sessions)
    hi = max(max(s.payoff) for s in t.sessions)
    out = [tuple((x - lo) / (hi - lo) if hi > lo else 0.5 for x in s.payoff) for s in t.sessions]
    return out, (f"the game declares no payoff bounds: payoffs normalised by the range observed in the "
                 f"tournament, {lo:g} to {hi:g} per run")


def _pair_sums(t: Tournament, norm: list[tuple[float, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per session unit, i's summed normalised payoff against j and the count (P's numerator and denominator):
    arrays (units, n, n), so a bootstrap replication is a weighted sum of them."""
    n, u = len(t.entrants), len(t.units)
    sums = np.zeros((u, n, n))
    counts = np.zeros((u, n, n))
    for s, pay in zip(t.sessions, norm):
        solo = len(set(s.entrants)) == 1
        for a, i in enumerate(s.entrants):
            for b, j in enumerate(s.entrants):
                if a == b or (i == j and not solo):
                    continue
                sums[s.unit, i, j] += pay[a]
                counts[s.unit, i, j] += 1
    return sums, counts, np.ones(u)


def meta_game(sums: np.ndarray, counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """P from the per-unit sums under unit weights (a bootstrap replication's counts); ``nan`` where a pair
    never met."""
    s = np.tensordot(weights, sums, axes=1)
    c = np.tensordot(weights, counts, axes=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.where(c > 0, c, 1), np.nan)


def filled(p: np.ndarray) -> np.ndarray:
    """P with pairs that never met (and a diagonal without self-play) at 0.5: an even game, A = 0 there."""
    return np.where(np.isnan(p), 0.5, p)


def maxent_nash(a: np.ndarray) -> np.ndarray:
    """The maximum-entropy Nash equilibrium of the symmetric zero-sum game with antisymmetric payoffs ``a``.

    Its support is the union of every equilibrium's support (one linear program per entrant: the most mass
    it can take in an equilibrium); on that support every equilibrium makes each supported strategy earn 0,
    so the maximum-entropy point solves max H(p) with a_SS p = 0, sum 1, whose dual is the smooth
    minimum of logsumexp(a_SS lam) (Newton's method, to 1e-12): p is proportional to exp(a_SS lam).
    """
    from scipy.optimize import linprog

    n = len(a)
    if n == 1:
        return np.ones(1)
    support = []
    for i in range(n):
        c = np.zeros(n)
        c[i] = -1.0
        res = linprog(c, A_ub=a, b_ub=np.zeros(n), A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0, 1)] * n,
                      method="highs")
        if res.status != 0:  # pragma: no cover - a symmetric zero-sum game always has an equilibrium
            raise RatingsError(f"the meta-game's equilibrium program failed: {res.message}")
        if -res.fun > 1e-9:
            support.append(i)
    s = np.asarray(support)
    sub = a[np.ix_(s, s)]
    lam = np.zeros(len(s))
    for _ in range(100):
        x = sub @ lam
        p = np.exp(x - x.max())
        p /= p.sum()
        grad = sub.T @ p
        if np.max(np.abs(grad)) < 1e-13:
            break
        hess = sub.T @ (np.diag(p) - np.outer(p, p)) @ sub
        lam -= np.linalg.lstsq(hess, grad, rcond=None)[0]
    out = np.zeros(n)
    x = sub @ lam
    p = np.exp(x - x.max())
    out[s] = p / p.sum()
    return out


def nash_averages(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each entrant's payoff in A against the maximum-entropy Nash of A, that Nash's mass)."""
    a = p - p.T
    nash = maxent_nash(a)
    return a @ nash, nash


def alpharank(p: np.ndarray) -> np.ndarray:
    """OpenSpiel's alpha-Rank of the single-population meta-game P (settings: ``ALPHARANK``)."""
    from open_spiel.python.egt import alpharank as ar

    with warnings.catch_warnings(), np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        _, _, pi, _, _ = ar.compute([p], **ALPHARANK)
    return np.asarray(pi, dtype=float)


# ---------------------------------------------------------------- the whole analysis

@dataclass
class Rated:
    """One game's (or the overall) table: rows in entrant order, and what was said about them."""

    game: str
    entrants: list[str]
    rating: np.ndarray
    low: np.ndarray
    high: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    nash_average: np.ndarray
    alpharank: np.ndarray
    p: np.ndarray
    cycles: list[tuple[str, str, str]]
    notes: list[str]

    def rows(self) -> list[dict[str, Any]]:
        return [{"game": self.game, "entrant": e, "rating": float(self.rating[i]), "low": float(self.low[i]),
                 "high": float(self.high[i]), "rank_low": int(self.rank_low[i]),
                 "rank_high": int(self.rank_high[i]), "nash_average": float(self.nash_average[i]),
                 "alpharank": float(self.alpharank[i])} for i, e in enumerate(self.entrants)]


def cycles_of(a_low: np.ndarray, names: Sequence[str]) -> list[tuple[str, str, str]]:
    """Triples i > j > k > i where each step's lower interval bound of A is above 0, each named once
    (starting from its first entrant in entrant order)."""
    beats = a_low > 0
    n = len(names)
    out = []
    for i, j, k in itertools.permutations(range(n), 3):
        if i < j and i < k and beats[i, j] and beats[j, k] and beats[k, i]:
            out.append((names[i], names[j], names[k]))
    return out


def _interval(x: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The middle ``level`` of bootstrap values, order statistics (no interpolation: safe with inf)."""
    tail = (1 - level) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return (np.nanquantile(x, tail, axis=0, method="lower"),
                np.nanquantile(x, 1 - tail, axis=0, method="higher"))


def _pooled(parts: Sequence[tuple[Tournament, Events, list[tuple[float, ...]], str]], entrants: list[str]
            ) -> tuple[Events, list[np.ndarray], list[np.ndarray], list[tuple[int, int]]]:
    """The games' comparisons as one set over ``entrants`` (each game's weighing 1 in all when there are
    several), with each game's pair sums and counts and its units' (first, count) among all units."""
    n = len(entrants)
    idx = {e: i for i, e in enumerate(entrants)}
    chosen: list[np.ndarray] = []
    alts: list[np.ndarray] = []
    w: list[np.ndarray] = []
    unit_of: list[np.ndarray] = []
    offsets: list[tuple[int, int]] = []
    sums: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    base = 0
    for t, ev, norm, _ in parts:
        remap = np.asarray([idx[e] for e in t.entrants], dtype=np.int64)
        a = np.zeros((len(ev.chosen), n))
        a[:, remap] = ev.alts
        chosen.append(remap[ev.chosen])
        alts.append(a)
        total = float(ev.w.sum())  # several games: each game's comparisons weigh 1 in all, however many
        w.append(ev.w / total if len(parts) > 1 and total > 0 else ev.w)
        unit_of.append(ev.unit + base)
        s, c, _ = _pair_sums(t, norm)
        full_s = np.zeros((len(t.units), n, n))
        full_c = np.zeros((len(t.units), n, n))
        full_s[:, remap[:, None], remap[None, :]] = s
        full_c[:, remap[:, None], remap[None, :]] = c
        sums.append(full_s)
        counts.append(full_c)
        offsets.append((base, len(t.units)))
        base += len(t.units)
    ev = Events(np.concatenate(chosen), np.concatenate(alts), np.concatenate(w), np.concatenate(unit_of))
    return ev, sums, counts, offsets


def rate(parts: Sequence[tuple[Tournament, Events, list[tuple[float, ...]], str]], name: str, entrants: list[str],
         reference: str | None, n_boot: int, rng: np.random.Generator) -> Rated:
    """Ratings, intervals, rank ranges, the meta-game, Nash averages, alpha-Rank and cycles over one or
    more games (several: each game's comparisons and its P weighted equally; resampled game by game)."""
    n = len(entrants)
    idx = {e: i for i, e in enumerate(entrants)}
    ev, sums, counts, offsets = _pooled(parts, entrants)
    base = sum(u for _, u in offsets)
    ref = idx.get(reference) if reference is not None else None
    rating, _, separated = fit_ranked(ev, reference=ref)
    notes = []
    if separated:
        unbounded = [f"{e} ({'inf' if rating[i] > 0 else '-inf' if rating[i] < 0 else 'not compared'})"
                     for i, e in enumerate(entrants) if not np.isfinite(rating[i])]
        notes.append("the comparisons separate (some entrants finish above, or below, everyone outside their "
                     "group in every session): the maximum likelihood does not exist for "
                     + ", ".join(unbounded) + "; their ratings are unbounded, not estimated")
    anchored = ref is not None and np.isfinite(rating[ref])
    notes.append("reference at 0: " + (f"{reference} (the rational baseline)" if anchored else
                                       f"the entrants' mean ({reference}, the rational baseline, is unbounded)"
                                       if reference is not None else "the entrants' mean")
                 + (", over the entrants with finite ratings" if separated else ""))

    def game_p(weights: np.ndarray) -> np.ndarray:
        ps = []
        for (b, u), s, c in zip(offsets, sums, counts):
            ps.append(meta_game(s, c, weights[b:b + u]))
        stack = np.stack(ps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(stack, axis=0)  # each game's P weighted equally where the pair met in it

    p = game_p(np.ones(base))
    never = [(entrants[i], entrants[j]) for i in range(n) for j in range(i + 1, n) if np.isnan(p[i, j])]
    if never:
        notes.append("pairs that never met, taken as an even game (P = 0.5) in the meta-game: "
                     + ", ".join(f"{a} and {b}" for a, b in never))
    pf = filled(p)
    nash_avg, nash = nash_averages(pf)
    alpha = alpharank(pf)
    weights = boot_weights(offsets, n_boot, rng)
    boot, rank_boot = pl_boot(ev, weights, ref)
    boot_separated = int(np.sum(np.any(np.isfinite(boot) != np.isfinite(rating), axis=1)))
    a_boot = np.empty((n_boot, n, n))
    for b in range(n_boot):
        pb = filled(game_p(weights[b]))
        a_boot[b] = pb - pb.T
    low, high = _interval(boot)
    rank_low, rank_high = _interval(rank_boot)
    a_low, _ = _interval(a_boot)
    if boot_separated:
        notes.append(f"{boot_separated} of {n_boot} bootstrap replications separate the entrants otherwise than "
                     "the data do: their unbounded ratings widen the intervals to inf/-inf where they fall in the "
                     "middle 95%")
    cycles = cycles_of(a_low, entrants)
    for x, y, z in cycles:
        notes.append(f"cycle: {x} beats {y}, {y} beats {z} and {z} beats {x} (each step's 95% interval of "
                     "P[i][j] - P[j][i] above 0): no strict order among them")
    notes.append("Nash averaging: the maximum-entropy Nash of A = P - P^T puts mass "
                 + ", ".join(f"{entrants[i]} {nash[i]:.3f}" for i in range(n) if nash[i] > 1e-9))
    notes.append("alpha-Rank: OpenSpiel open_spiel.python.egt.alpharank.compute on P, single population, "
                 + ", ".join(f"{k} = {v}" for k, v in ALPHARANK.items()))
    for t, _, _, note in parts:
        notes.append((f"{t.game}: " if len(parts) > 1 else "") + note)
        notes += [(f"{t.game}: " if len(parts) > 1 else "") + x for x in t.notes]
    return Rated(name, entrants, rating, low, high, rank_low.astype(int), rank_high.astype(int), nash_avg, alpha,
                 p, cycles, notes)


def ratings(dirs: Iterable[Path], n_boot: int = N_BOOT, seed: int = 0) -> tuple[dict[str, Rated], Rated | None]:
    """Per game and overall (every game weighted equally; None with one game, whose table it would repeat)."""
    tours = read_tournaments(dirs)
    parts = {}
    for g, t in tours.items():
        norm, note = normalised(t)
        parts[g] = (t, build_events(t), norm, note)
    rng = np.random.default_rng(seed)
    per = {g: rate([parts[g]], g, parts[g][0].entrants, parts[g][0].rational, n_boot, rng) for g in parts}
    overall = None
    if len(parts) > 1:
        entrants: list[str] = []
        for t, *_ in parts.values():
            entrants += [e for e in t.entrants if e not in entrants]
        rational = next((t.rational for t, *_ in parts.values() if t.rational is not None), None)
        overall = rate(list(parts.values()), OVERALL, entrants, rational, n_boot, rng)
    return per, overall


# ---------------------------------------------------------------- writing

def _number(x: float) -> float | str | None:
    """JSON has no infinity: ``"inf"``/``"-inf"`` as strings, ``None`` for not compared."""
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def csv_text(tables: Sequence[Rated]) -> str:
    """ratings.csv: one row per entrant and table, through the project's one CSV writer (a label cannot run
    as a spreadsheet formula); unbounded ratings are ``inf``/``-inf``, not compared ones blank."""
    rows = ([("" if isinstance(v, float) and math.isnan(v) else v) for v in (r[k] for k in COLUMNS)]
            for t in tables for r in t.rows())
    return write_csv(COLUMNS, rows)


def json_doc(per: dict[str, Rated], overall: Rated | None) -> dict[str, Any]:
    def rows(t: Rated) -> list[dict[str, Any]]:
        return [{k: _number(v) if isinstance(v, float) else v for k, v in r.items()} for r in t.rows()]

    cycles = [list(c) for t in per.values() for c in t.cycles]
    if overall is not None:
        cycles += [list(c) for c in overall.cycles if list(c) not in cycles]
    return {"games": {g: rows(t) for g, t in per.items()},
            "overall": rows(overall if overall is not None else next(iter(per.values()))),
            "cycles": cycles}


def heatmap(t: Rated, path: Path) -> Path:
    """The heat map of P (rows: the entrant, columns: its opponent) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(t.entrants)
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * n, 0.9 + 0.8 * n))
    im = ax.imshow(np.ma.masked_invalid(t.p), vmin=0, vmax=1, cmap="RdBu")
    ax.set_xticks(range(n), t.entrants, rotation=45, ha="right")
    ax.set_yticks(range(n), t.entrants)
    for i in range(n):
        for j in range(n):
            if not math.isnan(t.p[i, j]):
                ax.text(j, i, f"{t.p[i, j]:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xlabel("opponent")
    ax.set_ylabel("entrant")
    ax.set_title(f"{t.game}: mean normalised payoff against each opponent")
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def is_tournament(d: Path) -> bool:
    """Whether a run directory's config holds a [tournament] (cheap: its config.toml only)."""
    try:
        return "tournament" in _config(d)
    except RatingsError:
        return False


REPORT_KEY = "tournament-ratings"


def _cell(v: Any) -> str:
    """A table cell of the report: three decimals, ``inf``/``-inf``, blank for not compared."""
    if isinstance(v, float):
        return "" if math.isnan(v) else "inf" if v == math.inf else "-inf" if v == -math.inf else f"{v:.3f}"
    return str(v)


def report_section(dirs: Sequence[Path], figdir: Path, n_boot: int, seed: int) -> Any:
    """The report's section when the directories hold a tournament (None otherwise): the heat map of P per
    game as a figure, and the ratings table with what was said about it (the same numbers as ``econarena
    ratings`` with the report's bootstrap settings)."""
    from html import escape

    from . import figures as F
    from .page import Section

    tours = [Path(d) for d in dirs if is_tournament(Path(d))]
    if not tours:
        return None
    sec = Section("tournament", "Tournament: ratings across opponents")
    try:
        per, overall = ratings(tours, n_boot=n_boot, seed=seed)
    except RatingsError as exc:
        sec.skipped.append(("Tournament ratings", str(exc)))
        return sec
    figdir.mkdir(parents=True, exist_ok=True)
    tables = [*per.values(), *([overall] if overall is not None else [])]
    html = ["<p>Plackett-Luce ratings (natural-log worth, reference at 0) with session-bootstrap 95% intervals "
            "and rank ranges; the meta-game's Nash averages and alpha-Rank (see the ratings page of the "
            "documentation). <code>econarena ratings</code> writes the same as ratings.csv.</p>"]
    for k, t in enumerate(tables):
        stem = f"{REPORT_KEY}-{k + 1}"
        png, svg = heatmap(t, figdir / f"{stem}.png"), heatmap(t, figdir / f"{stem}.svg")
        sec.figures.append(F.Figure(stem, f"{t.game}: who does well against whom",
                                    "P[i][j]: the row entrant's mean payoff against the column entrant, "
                                    "normalised to [0, 1]; blank where two entrants never met.", png, svg,
                                    [str(d) for d in tours]))
        rows = "".join("<tr>" + "".join(f"<td>{escape(_cell(r[c]))}</td>" for c in COLUMNS[1:]) + "</tr>"
                       for r in t.rows())
        html.append(f"<h4>{escape(t.game)}</h4><div class='tablewrap'><table><tr>"
                    + "".join(f"<th>{c}</th>" for c in COLUMNS[1:]) + f"</tr>{rows}</table></div>"
                    + "".join(f"<p class='note'>{escape(n)}</p>" for n in t.notes))
    sec.detail = "".join(html)
    return sec
