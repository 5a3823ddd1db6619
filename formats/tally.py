"""The summary's numbers, accumulated one record at a time.

One implementation serves both ways of summarising a run directory: ``analysis/metrics.py`` feeds it the
records it reads back from the files, and the run directory (``rundir.py``) feeds it each record as it is
written, so ``econarena run`` has its summary the moment the last run ends, without parsing the logs it
has just written. The definitions of every metric are in ``analysis/metrics.py``; this module only counts.

Why it can stream: a decision counts only once its run is known to be complete, so decisions wait, per
run, until the run record arrives (a handful of runs at a time: those in flight). Means use exact sums
(:class:`ExactSum`, the same value ``math.fsum`` of all the numbers gives), so the result does not depend
on the order of the records (concurrency, resume) and equals a summary recomputed from the files bit for
bit, in memory that does not grow with the number of decisions or, for the Host's own records, of runs.
Only the per-run scores of games with a 0-100 score are kept as a list (their standard deviation needs the
mean first): one number per run.

A ``[grid]`` cell is part of a label (``level_k [ratio=0.5]``), except that a baseline's label leaves out the
``[grid.llm]`` factors, which change the LLM seats only: its runs in those cells are one row, pooled over
them (``pooled_over``), named as the report's figures name it (``gridcells.shown_cell``). Labels are listed
by name, then their cells in the factors' natural order (``gridcells.cell_rank``).

This module imports nothing of ours but ``gridcells.py``, so hosts (through the run directory) and analysis
may both use it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .gridcells import BASELINE_AGENTS, Factor, cell_rank, llm_only, record_factors, shown_cell

CONVERGENCE_TOLERANCE = 0.05
VIOLATIONS = ("parse_error", "schema_error", "rule_violation")  # the model's own errors
TRUNCATED = "truncated"  # a reply cut at the token limit: counted apart (the settings' fault, not the model's)
_FOLD = 1024  # numbers buffered before an ExactSum folds them into its exact partials


def _exact_parts(values: list[float]) -> list[float] | None:
    """Floats whose exact sum is the exact sum of ``values`` (a few: each is ``fsum`` of what the previous
    ones left), or None when that sum is not finite (then nothing is folded)."""
    rest = list(values)
    parts: list[float] = []
    try:
        s = math.fsum(rest)
        while s != 0.0:
            if not math.isfinite(s):
                return None
            parts.append(s)
            rest.append(-s)
            s = math.fsum(rest)  # the rounding error of the parts so far, itself rounded: shrinks by 2**-53
    except (OverflowError, ValueError):  # an intermediate overflow, or inf - inf
        return None
    return parts


class ExactSum:
    """A count and an exact sum of numbers, ``None`` and NaN skipped: ``value()`` equals ``math.fsum`` of all
    of them whatever their order, while memory stays a few floats (numbers are folded in batches).

    :meth:`add` folds ``buf`` into the exact partials once it is long enough; a hot loop may append to
    ``buf`` itself (unfiltered, the cheapest thing Python does) and call :meth:`fold` now and then.
    """

    __slots__ = ("buf", "n", "parts")

    def __init__(self) -> None:
        self.parts: list[float] = []
        self.buf: list[Any] = []
        self.n = 0  # numbers folded into parts

    def add(self, x: Any) -> None:
        self.buf.append(x)
        if len(self.buf) >= _FOLD:
            self.fold()

    def fold(self) -> None:
        values = _numbers(self.buf)
        parts = _exact_parts(self.parts + values)
        self.parts = parts if parts is not None else self.parts + values  # not finite: keep them all
        self.n += len(values)
        self.buf = []

    def value(self) -> float:
        return math.fsum(self.parts + _numbers(self.buf))

    def mean(self) -> float | None:
        values = _numbers(self.buf)
        n = self.n + len(values)
        return math.fsum(self.parts + values) / n if n else None


def _numbers(xs: list[Any]) -> list[Any]:
    return [x for x in xs if x is not None and x == x]  # None and NaN are no numbers here


def sample_std(xs: list[Any]) -> float | None:
    """Sample standard deviation (ddof = 1) of the finite numbers; None with fewer than two."""
    xs = [x for x in xs if isinstance(x, (int, float)) and math.isfinite(x)]
    if len(xs) < 2:
        return None
    m = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def broke(run: dict[str, Any], seat: int) -> bool:
    """Whether the seat broke a rule in this run, counting first attempts (``first_valid``) when logged. A seat
    whose only unusable replies were cut at the token limit (the record's ``truncated``) broke none."""
    first = run.get("first_valid")
    first_ok = bool(first[seat]) if isinstance(first, list) and seat < len(first) else True
    return not first_ok or (not run["valid"][seat] and not cut_only(run, seat))


def cut_only(run: dict[str, Any], seat: int) -> bool:
    """Whether the seat's unusable moves in this run were all replies cut at the token limit."""
    cut = run.get("truncated")
    return isinstance(cut, list) and seat < len(cut) and cut[seat] is True


def bid_gap(action: Any, value: Any) -> float | None:
    """|bid - value| / value of a valid seat-run, the deviation of the action itself where bidding one's value
    is dominant (the paper's asset deviation misses a losing underbid); None without a positive value."""
    if isinstance(action, bool) or isinstance(value, bool) or not isinstance(action, (int, float)) \
            or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
        return None
    return abs(action - value) / value


def cell_suffix(run: dict[str, Any]) -> str:
    """`` [ratio=0.5]`` for a run of a [grid] cell (its table's name ends with the cell), else ``""``."""
    lineup = str(run.get("lineup", ""))
    if not run.get("cell") or " [" not in lineup:
        return ""
    return lineup[lineup.index(" ["):]


def baseline_suffix(run: dict[str, Any], suffix: str) -> tuple[str, tuple[str, ...]]:
    """A baseline seat's :func:`cell_suffix` without the run's ``[grid.llm]`` factors (its record's ``cell``
    names them), which do not change how it plays (``""`` when no factor is left), and the factors left out."""
    if not suffix.endswith("]"):
        return suffix, ()
    cell, found = suffix[2:-1], record_factors(run.get("cell"))
    kept = shown_cell(cell, found, True)
    if kept == cell:
        return suffix, ()
    drop = llm_only(found)
    return (f" [{kept}]" if kept else ""), tuple(f.key for f in found if f.key in drop)


class _Label:
    """What the summary needs of one label (and [grid] cell)."""

    __slots__ = ("bid", "broke", "cached", "cut_decisions", "cut_runs", "decisions", "dev", "dev_by_run", "latency",
                 "ne", "payoffs", "player_runs", "scores", "tokens_in", "tokens_out", "violations", "wins")

    def __init__(self) -> None:
        self.payoffs, self.ne, self.dev, self.latency = ExactSum(), ExactSum(), ExactSum(), ExactSum()
        self.bid = ExactSum()  # |bid - value| / value of valid seat-runs with a private value (bid_gap)
        self.dev_by_run: dict[Any, ExactSum] = {}
        self.player_runs = self.wins = self.broke = self.decisions = self.cut_decisions = self.cut_runs = 0
        self.tokens_in = self.tokens_out = self.cached = 0
        self.violations: dict[str, int] = defaultdict(int)
        self.scores: list[Any] = []

    def fold(self) -> None:
        """Fold every sum, called when the payoffs have grown long: the other sums of a label grow with
        its player-runs too (latency with its decisions), so memory stays bounded by the batch size."""
        for x in (self.payoffs, self.ne, self.dev, self.latency, self.bid, *self.dev_by_run.values()):
            if x.buf:
                x.fold()


class Tally:
    """Runs and decisions of one run directory, counted as they come (see the module docstring).

    Records are read with ``.get`` as the files' readers do; a run record must have the shape
    ``rundir.record_problem`` accepts. ``trusted``: the records come from the one process writing the
    directory (``RunDirectory``), which writes each run once and every decision before its run; the tally
    then keeps no set of the runs it has seen, so its memory does not grow with the number of runs.
    Otherwise (records read back from files, which may have been edited) the first record of a run counts
    and a decision may come before or after its run.
    """

    def __init__(self, trusted: bool = False) -> None:
        self.labels: dict[str, _Label] = defaultdict(_Label)
        self.complete: set[tuple[Any, Any, Any]] | None = None if trusted else set()
        self.cells: dict[Any, str] = {}
        self.keys: dict[tuple[Any, Any], str] = {}  # (lineup, label) -> a baseline's summary label (pooled)
        self.parts: dict[str, tuple[str, str]] = {}  # summary label -> (label, cell text): the listing order
        # a pooled baseline's summary label -> (the cells it pools, the [grid.llm] factors left out)
        self.pooled: dict[str, tuple[dict[str, None], dict[str, None]]] = {}
        self._fixed: dict[Any, tuple[str, str, tuple[str, ...]]] = {}  # lineup -> (suffix, baseline_suffix())
        self.pending: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = {}
        self.runs_complete = 0
        self.runs_incomplete = 0

    def decision(self, d: dict[str, Any]) -> None:
        key = (d.get("lineup", "melee"), d.get("session"), d.get("run"))
        if self.complete is not None and key in self.complete:  # a decision logged after its run record
            self._count(key[0], d)
            return
        waiting = self.pending.get(key)
        if waiting is None:
            self.pending[key] = [d]
        else:
            waiting.append(d)

    def run(self, r: dict[str, Any]) -> None:
        lineup = r.get("lineup", "melee")
        key = (lineup, r.get("session"), r.get("run"))
        if not r.get("complete", True):
            self.runs_incomplete += 1
            if self.complete is None:  # its decisions will never count here: a resume replays the run
                self.pending.pop(key, None)
            return
        if self.complete is not None:
            if key in self.complete:  # a second record of a run that is already counted: the first one wins
                return
            self.complete.add(key)
        self.runs_complete += 1
        cell = self.cells[lineup] = cell_suffix(r)
        agents: Any = ()
        fixed: tuple[str, str, tuple[str, ...]] = (cell, cell, ())
        if cell:
            known = self._fixed.get(lineup)
            if known is None or known[0] != cell:  # worked out once per table
                known = self._fixed[lineup] = (cell, *baseline_suffix(r, cell))
            fixed = known
            if fixed[2]:  # a [grid.llm] factor a baseline's label leaves out
                agents = r.get("agents")
                agents = agents if isinstance(agents, list) else ()
        ne = r.get("ne_payoffs")
        payoffs, valids, devs, winners, run = r["payoffs"], r["valid"], r["deviation"], r["winners"], r["run"]
        first = r.get("first_valid")
        first = first if isinstance(first, list) else ()
        score = r.get("score")
        found = r.get("private_values")
        values: list[Any] = found if isinstance(found, list) else []
        actions = r.get("actions") if values else None
        actions = actions if isinstance(actions, list) else None
        labels = self.labels
        touched: list[_Label] = []
        for i, label in enumerate(r["labels"]):
            if not cell:
                a = labels[label]
            elif i < len(agents) and isinstance(agents[i], str) and agents[i] in BASELINE_AGENTS:
                a = labels[self._baseline_key(lineup, label, fixed)]
            else:
                name = label + cell
                if name not in self.parts:
                    self.parts[name] = (label, cell[2:-1] if cell.endswith("]") else cell[2:])
                a = labels[name]
            if a not in touched:
                touched.append(a)
                if score is not None:  # each run once per label, however many seats it held (None: no score)
                    a.scores.append(score)
            valid = bool(valids[i])
            a.player_runs += 1
            a.payoffs.buf.append(payoffs[i] if valid else 0.0)  # a rule break scores 0
            a.ne.buf.append(ne[i] if ne else None)  # None: no equilibrium
            dev = devs[i] if valid else None  # no valid strategy: no distance to the equilibrium
            a.dev.buf.append(dev)
            by_run = a.dev_by_run.get(run)
            if by_run is None:
                by_run = a.dev_by_run[run] = ExactSum()
            by_run.buf.append(dev)
            if actions is not None and valid and i < len(actions) and i < len(values):
                a.bid.buf.append(bid_gap(actions[i], values[i]))
            if i in winners:
                a.wins += 1
            if i < len(first) and not first[i]:  # broke(): first attempts count
                a.broke += 1
            elif not valid:
                if cut_only(r, i):
                    a.cut_runs += 1
                else:
                    a.broke += 1
        for a in touched:
            if len(a.payoffs.buf) >= _FOLD:
                a.fold()
        for d in self.pending.pop(key, ()):
            self._count(lineup, d)

    def _baseline_key(self, lineup: Any, label: str, fixed: tuple[str, str, tuple[str, ...]]) -> str:
        """A baseline seat's summary label (its cell without the [grid.llm] factors), noted once per table
        (its decisions count under it too, and the summary says which cells and factors it pools)."""
        key = self.keys.get((lineup, label))
        if key is None:
            cell, kept, dropped = fixed
            key = self.keys[(lineup, label)] = label + kept
            self.parts[key] = (label, kept[2:-1])
            cells, over = self.pooled.setdefault(key, ({}, {}))
            cells[cell[2:-1]] = None
            over.update(dict.fromkeys(dropped))
        return key

    def _count(self, lineup: Any, d: dict[str, Any]) -> None:
        label = d["label"]
        key = self.keys.get((lineup, label)) if self.keys else None
        a = self.labels[key if key is not None else label + self.cells.get(lineup, "")]
        a.decisions += 1
        violation = d.get("violation")
        if violation == TRUNCATED:
            a.cut_decisions += 1
        elif violation:
            a.violations[violation] += 1
        a.tokens_in += d.get("tokens_in") or 0
        a.tokens_out += d.get("tokens_out") or 0
        a.cached += bool(d.get("cached"))
        a.latency.buf.append(d.get("latency_s"))  # folded with the label's payoffs (_Label.fold)

    def order(self, found: Sequence[Factor] = ()) -> list[str]:
        """The summary's labels by name, each one's cells in their factors' natural order (``found``: the
        directory's [grid] factors as declared; without them, cells by their text)."""
        parts = self.parts
        return sorted(self.labels, key=lambda k: (parts[k][0], cell_rank(parts[k][1], found), k) if k in parts
                      else (k, cell_rank("", found), k))

    def summary(self, run_dir: str, scored: bool = False, dominant: bool = False,
                found: Sequence[Factor] = ()) -> dict[str, Any]:
        """The summary dict (``summary.json``); ``scored``: the game declares a 0-100 score
        (``GameInfo.score``), else the score columns are None; ``dominant``: its equilibrium action is the
        private value (``GameInfo.dominant_value``), which adds ``bid_deviation`` (the mean of
        :func:`bid_gap`; None without a valid bid); ``found``: the [grid] factors that order the cells
        (:meth:`order`). A baseline pooled over [grid.llm] cells says so: ``pooled_over`` (the factors left
        out) and ``pooled_cells`` (how many cells). Definitions: ``analysis/metrics.py``."""
        labels: dict[str, dict[str, Any]] = {}
        for label in self.order(found):
            a = self.labels[label]
            mp, mne = a.payoffs.mean(), a.ne.mean()
            curve = {str(k): v.mean() for k, v in sorted(a.dev_by_run.items())}
            converged = next((int(k) for k, v in curve.items() if v is not None and v <= CONVERGENCE_TOLERANCE),
                             None)
            n_viol = sum(a.violations.values())
            scores = ExactSum()
            for x in a.scores:
                scores.add(x)
            labels[label] = {
                "player_runs": a.player_runs,
                "decisions": a.decisions,
                "mean_payoff": mp,
                "mean_ne_payoff": mne,
                "payoff_ratio": mp / mne if mp is not None and mne else None,
                "mean_deviation": a.dev.mean(),
                "win_rate": a.wins / a.player_runs if a.player_runs else None,
                "rule_break_rate_pct": 100 * a.broke / a.player_runs if a.player_runs else None,
                "violations_per_decision_pct": 100 * n_viol / a.decisions if a.decisions else None,
                "violations": {k: a.violations.get(k, 0) for k in VIOLATIONS},
                "deviation_by_run": curve,
                "converged_at_run": converged,
                "tokens_in": a.tokens_in,
                "tokens_out": a.tokens_out,
                "cached_decisions": a.cached,
                "mean_latency_s": a.latency.mean(),
                "score": scores.mean() if scored else None,
                "score_std": sample_std(a.scores) if scored else None,
            }
            if dominant:  # only these games: every other summary keeps its keys
                labels[label]["bid_deviation"] = a.bid.mean()
            if a.cut_decisions or a.cut_runs:  # replies cut at max_tokens: apart from the model's own errors
                labels[label]["truncated_replies"] = a.cut_decisions
                labels[label]["truncated_runs"] = a.cut_runs
            if label in self.pooled:  # a baseline's runs of several [grid.llm] cells, one row
                cells, over = self.pooled[label]
                labels[label]["pooled_over"] = list(over)
                labels[label]["pooled_cells"] = len(cells)
        return {
            "run_dir": run_dir,
            "runs_complete": self.runs_complete,
            "runs_incomplete": self.runs_incomplete,
            "convergence_tolerance": CONVERGENCE_TOLERANCE,
            "labels": labels,
        }
