"""Steering experiments (spec 3.4-3.6) read back from ``steering.jsonl``: the table of NashConv, CFR gain and
the conversation shares per action space, the per-iteration curves and the mixed strategies CFR found.

Why a module of its own: a steering run directory is an ordinary one (its branches are runs.jsonl records)
plus one ``steering.jsonl`` line per game (the contract in hosts/steer.py), and every number here is
recomputed from those lines alone, so a reading can change without replaying a model.

Definitions (one table row per experiment name, lineup and action space, pooling run directories that
share the name):

- Iteration: the record's ``report_iteration`` (the paper's 20), or ``at`` when given. A game contributes
  the logged iteration equal to it, else the last logged one below it; the ``iteration`` column says which.
  A game that logged nothing at or below it is an error (nothing honest to report).
- NashConv and CFR gain: mean and sample standard deviation (ddof = 1, the usual reading of a paper's
  "mean ± sd"; none with one game) over games.
- Gain / NashConv, two readings: the paper's ratio of the means (mean CFR gain / mean NashConv), and the
  mean ± sd of the per-game ratios, leaving out (and counting) games whose NashConv is 0 (at most
  ``ZERO_NASH_CONV``: float noise of a converged strategy must not give a ratio of 1e15).
- Share of games with CFR gain > NashConv (strictly).
- Conversation shares (agreement after two messages, non-zero payoff, >= 1 / 2 negative, >= 1 / 2
  positive, rule breaks): the unit is a conversation branch (spec 3.5: 2.93 % is no multiple of 1/32), so
  each game's shares are weighted by its branch count ``n``: sum(n_g * share_g) / sum(n_g).
- Final mixed strategy of a game: the average strategy at its last logged iteration; the mean over games
  per action label (with its sd) is what the report's bar chart shows.
"""

from __future__ import annotations

import io
import json
import math
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...formats.csvcells import frame_csv
from ...formats.files import CONFIG_BYTES, FileRefused, open_regular, read_text
from ...formats.rundir import CONFIG, LogError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

STEERING = "steering.jsonl"
SHARES = ("agreement", "nonzero", "neg1", "neg2", "pos1", "pos2", "rule_breaks")
SHARE_TITLES = {"agreement": "agreement after 2 messages", "nonzero": "non-zero payoff",
                "neg1": ">= 1 negative payoff", "neg2": "2 negative payoffs", "pos1": ">= 1 positive payoff",
                "pos2": "2 positive payoffs", "rule_breaks": "rule breaks"}
ZERO_NASH_CONV = 1e-12
GROUP = ("experiment", "lineup", "space")


class SteeringError(ValueError):
    """A request the logged games cannot answer (an iteration before any that was logged)."""


@dataclass(frozen=True)
class Iterate:
    """One logged CFR iteration of a game."""

    iteration: int
    nash_conv: float
    cfr_gain: float
    strategy: tuple[float, ...]


@dataclass(frozen=True)
class SteeringGame:
    """One steering.jsonl line, checked; ``experiment`` and ``run_dir`` say where it came from."""

    run_dir: str
    experiment: str
    lineup: str
    session: int
    seat: int
    space: str
    actions: tuple[str, ...]
    baseline: int
    samples: int
    payoff: str
    iterations: tuple[Iterate, ...]
    report_iteration: int
    total_iterations: int
    branches: int
    shares: Mapping[str, float]

    def at(self, iteration: int) -> Iterate:
        """The logged iterate equal to ``iteration``, else the last one below it."""
        below = [it for it in self.iterations if it.iteration <= iteration]
        if not below:
            raise SteeringError(f"{self.run_dir}/{STEERING}: game {self.lineup}/{self.space}/session "
                                f"{self.session} logged no iteration <= {iteration} (first logged: "
                                f"{self.iterations[0].iteration})")
        return max(below, key=lambda it: it.iteration)

    @property
    def final(self) -> Iterate:
        return max(self.iterations, key=lambda it: it.iteration)


# ---------------------------------------------------------------------------------------------- reading

def _int(x: Any, low: int = 0) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= low


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _problem(rec: Any) -> str | None:
    """Why ``rec`` is not a steering record of the contract, or None (only what is read here is checked)."""
    if not isinstance(rec, dict):
        return f"expected a JSON object, got {type(rec).__name__}"
    for key in ("lineup", "space", "payoff"):
        if not isinstance(rec.get(key), str):
            return f"'{key}' must be a string"
    for key, low in (("session", 0), ("seat", 0), ("samples", 1), ("report_iteration", 0),
                     ("total_iterations", 0), ("baseline", 0)):
        if not _int(rec.get(key), low):
            return f"'{key}' must be an integer >= {low} (got {json.dumps(rec.get(key))[:40]})"
    actions = rec.get("actions")
    if not isinstance(actions, list) or not actions or not all(isinstance(a, str) for a in actions):
        return "'actions' must be a non-empty list of strings"
    if rec["baseline"] >= len(actions):
        return f"'baseline' {rec['baseline']} is no index of the {len(actions)} actions"
    its = rec.get("iterations")
    if not isinstance(its, list) or not its:
        return "'iterations' must be a non-empty list"
    for k, it in enumerate(its):
        if not isinstance(it, dict) or not _int(it.get("iteration"), 1):
            return f"iterations[{k}]: 'iteration' must be an integer >= 1"
        for key in ("nash_conv", "cfr_gain"):
            if not _num(it.get(key)):
                return f"iterations[{k}]: '{key}' must be a finite number (got {json.dumps(it.get(key))[:40]})"
        strat = it.get("strategy")
        if not isinstance(strat, list) or len(strat) != len(actions) or not all(_num(p) for p in strat):
            return f"iterations[{k}]: 'strategy' must hold one number per action ({len(actions)})"
    b = rec.get("branches")
    if not isinstance(b, dict) or not _int(b.get("n"), 1):
        return "'branches' must be an object with 'n' an integer >= 1"
    for key in SHARES:
        if not _num(b.get(key)) or not 0 <= b[key] <= 1:
            return f"branches.{key} must be a share in [0, 1] (got {json.dumps(b.get(key))[:40]})"
    return None


def experiment_name(run_dir: str | Path) -> str:
    """The ``[experiment] name`` of config.toml, else the folder's name (as the other tables say it)."""
    try:
        cfg = tomllib.loads(read_text(Path(run_dir) / CONFIG, CONFIG_BYTES))
    except FileRefused:
        raise
    except (OSError, UnicodeDecodeError, ValueError):
        cfg = {}
    exp = cfg.get("experiment")
    name = exp.get("name") if isinstance(exp, dict) else None
    return name if isinstance(name, str) and name else Path(run_dir).name


def read_steering(run_dir: str | Path) -> list[SteeringGame]:
    """The games of one run directory ([] without steering.jsonl).

    A line that is not JSON or not of the contract's shape raises :class:`LogError` naming the file and
    line: a game silently skipped would change every mean. A torn last line (the process died writing it)
    is no game yet and is left out, as everywhere. A game logged twice counts once (the first line).
    """
    path = Path(run_dir) / STEERING
    experiment = experiment_name(run_dir)
    out: list[SteeringGame] = []
    seen: set[tuple[str, str, int, int]] = set()
    for number, rec in _lines(path):
        if isinstance(rec, dict) and isinstance(rec.get("skipped"), str):
            continue  # a game over before the steered decision: counted by ``unsteerable``, no values
        problem = _problem(rec)
        if problem:
            raise LogError(f"{path}: line {number}: not a steering record: {problem}; fix or delete the line")
        key = (rec["lineup"], rec["space"], rec["session"], rec["seat"])
        if key in seen:
            continue
        seen.add(key)
        its = sorted((Iterate(int(it["iteration"]), float(it["nash_conv"]), float(it["cfr_gain"]),
                              tuple(float(p) for p in it["strategy"])) for it in rec["iterations"]),
                     key=lambda it: it.iteration)
        b = rec["branches"]
        out.append(SteeringGame(
            run_dir=str(run_dir), experiment=experiment, lineup=rec["lineup"], session=rec["session"],
            seat=rec["seat"], space=rec["space"], actions=tuple(rec["actions"]), baseline=rec["baseline"],
            samples=rec["samples"], payoff=rec["payoff"], iterations=tuple(its),
            report_iteration=rec["report_iteration"], total_iterations=rec["total_iterations"],
            branches=int(b["n"]), shares={k: float(b[k]) for k in SHARES}))
    return out


def _lines(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed JSON) of every complete non-blank line; a torn last line is left out (the
    process died writing it: no game yet), a line that is not JSON raises :class:`LogError`."""
    if not path.is_file():
        return []
    out = []
    with io.TextIOWrapper(open_regular(path), encoding="utf-8", errors="surrogateescape") as fh:
        for number, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                break  # torn (or an empty file's nothing)
            if not line.strip():
                continue
            try:
                out.append((number, json.loads(line)))
            except (ValueError, RecursionError):
                raise LogError(f"{path}: line {number}: not a steering record: not JSON; fix or delete the "
                               "line") from None
    return out


def steering_dirs(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """Run directories named directly or found one level below a folder of them, that hold steering.jsonl."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: list[Path] = []
    for p in map(Path, paths):
        if (p / STEERING).is_file():
            out.append(p)
        elif p.is_dir():
            out += sorted(c for c in p.iterdir() if c.is_dir() and (c / STEERING).is_file())
    seen: set[Path] = set()
    return [p for p in out if not (p.resolve() in seen or seen.add(p.resolve()))]  # type: ignore[func-returns-value]  # add: None


def unsteerable(run_dirs: str | Path | Iterable[str | Path]) -> dict[tuple[str, str, str], int]:
    """Games per (experiment, lineup, space) that ended before the steered decision (an opening that broke
    a rule): they have no action values, so the means leave them out, and the table says how many."""
    out: dict[tuple[str, str, str], int] = {}
    for d in steering_dirs(run_dirs):
        name = experiment_name(d)
        for _, rec in _lines(Path(d) / STEERING):
            if isinstance(rec, dict) and isinstance(rec.get("skipped"), str):
                key = (name, str(rec.get("lineup")), str(rec.get("space")))
                out[key] = out.get(key, 0) + 1
    return out


def collect(run_dirs: str | Path | Iterable[str | Path]) -> list[SteeringGame]:
    """Every game of every steering run directory among ``run_dirs`` (folders of them are searched)."""
    return [g for d in steering_dirs(run_dirs) for g in read_steering(d)]


# ---------------------------------------------------------------------------------------------- numbers

def mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    """(mean, sample sd with ddof = 1); NaN for what is undefined (no value; one value's sd)."""
    if not xs:
        return math.nan, math.nan
    return statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else math.nan


def _groups(games: Iterable[SteeringGame]) -> dict[tuple[str, str, str], list[SteeringGame]]:
    out: dict[tuple[str, str, str], list[SteeringGame]] = {}
    for g in games:
        out.setdefault((g.experiment, g.lineup, g.space), []).append(g)
    return dict(sorted(out.items()))


def _iteration_note(targets: set[int], used: Sequence[int]) -> str:
    """What the iteration column says: the one used, or which were used for which asked iteration."""
    counts: dict[int, int] = {}
    for u in used:
        counts[u] = counts.get(u, 0) + 1
    asked = ", ".join(map(str, sorted(targets)))
    if set(counts) == targets and len(targets) == 1:
        return asked
    parts = ", ".join(f"{u} in {c} game{'s' if c > 1 else ''}" for u, c in sorted(counts.items()))
    return f"{parts} (asked {asked}: the last logged at or below)"


def table_rows(games: Sequence[SteeringGame], at: int | None = None,
               skipped: Mapping[tuple[str, str, str], int] | None = None) -> list[dict[str, Any]]:
    """The table's rows as plain dicts (numbers, NaN where undefined); see the module docstring.
    ``skipped``: games without a steered decision per (experiment, lineup, space), see ``unsteerable``."""
    rows = []
    for (experiment, lineup, space), part in _groups(games).items():
        targets = {at if at is not None else g.report_iteration for g in part}
        picked = [g.at(at if at is not None else g.report_iteration) for g in part]
        nc = [it.nash_conv for it in picked]
        gain = [it.cfr_gain for it in picked]
        ratios = [c / n for n, c in zip(nc, gain) if n > ZERO_NASH_CONV]
        nc_mean, nc_sd = mean_sd(nc)
        gain_mean, gain_sd = mean_sd(gain)
        r_mean, r_sd = mean_sd(ratios)
        n_branches = sum(g.branches for g in part)
        rows.append({
            "experiment": experiment, "lineup": lineup, "space": space,
            "payoff": ", ".join(sorted({g.payoff for g in part})),
            "actions": max(len(g.actions) for g in part), "games": len(part),
            "iteration": _iteration_note(targets, [it.iteration for it in picked]),
            "nash_conv_mean": nc_mean, "nash_conv_sd": nc_sd, "cfr_gain_mean": gain_mean, "cfr_gain_sd": gain_sd,
            "ratio_of_means": gain_mean / nc_mean if nc_mean > ZERO_NASH_CONV else math.nan,
            "ratio_mean": r_mean, "ratio_sd": r_sd, "ratio_games": len(ratios),
            "ratio_left_out": len(part) - len(ratios),
            "gain_above_nash_conv": sum(c > n for n, c in zip(nc, gain)) / len(part),
            "branches": n_branches,
            **{k: math.fsum(g.branches * g.shares[k] for g in part) / n_branches for k in SHARES},
            "unsteerable": (skipped or {}).get((experiment, lineup, space), 0),
        })
    covered = {(r["experiment"], r["lineup"], r["space"]) for r in rows}
    for (experiment, lineup, space), n in sorted((skipped or {}).items()):
        if (experiment, lineup, space) not in covered:  # every game ended before the steered decision
            rows.append({"experiment": experiment, "lineup": lineup, "space": space, "payoff": "-", "actions": 0,
                         "games": 0, "iteration": "-", "ratio_games": 0, "ratio_left_out": 0, "branches": 0,
                         "unsteerable": n, **{k: math.nan for k in ("nash_conv_mean", "nash_conv_sd",
                         "cfr_gain_mean", "cfr_gain_sd", "ratio_of_means", "ratio_mean", "ratio_sd",
                         "gain_above_nash_conv", *SHARES)}})
    return rows


TABLE_COLUMNS = ("experiment", "lineup", "space", "payoff", "actions", "games", "iteration", "nash_conv_mean",
                 "nash_conv_sd", "cfr_gain_mean", "cfr_gain_sd", "ratio_of_means", "ratio_mean", "ratio_sd",
                 "ratio_games", "ratio_left_out", "gain_above_nash_conv", "branches", *SHARES, "unsteerable")


def steering_table(run_dirs: str | Path | Iterable[str | Path], at: int | None = None) -> Any:
    """One row per (experiment name, lineup, action space) as a pandas DataFrame (columns TABLE_COLUMNS);
    empty when no directory holds steering.jsonl. ``at`` overrides the records' report iteration."""
    import pandas as pd

    return pd.DataFrame(table_rows(collect(run_dirs), at, unsteerable(run_dirs)), columns=list(TABLE_COLUMNS))


def _pm(mean: float, sd: float, digits: int = 4) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean:.{digits}f}" + ("" if math.isnan(sd) else f" ± {sd:.{digits}f}")


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.2f} %"


def display_rows(table: Any) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(column headers, [(metric, cells)]): the table turned as the paper prints it, one column per
    (experiment, lineup, space) and one row per metric, numbers formatted."""
    heads, cols = [], []
    for _, r in table.iterrows():
        heads.append(f"{r['experiment']} / {r['lineup']} / {r['space']}")
        ratio_pm = _pm(r["ratio_mean"], r["ratio_sd"], 2)
        left = int(r["ratio_left_out"])
        cols.append([
            str(r["payoff"]), str(int(r["actions"])), str(int(r["games"])), str(r["iteration"]),
            _pm(r["nash_conv_mean"], r["nash_conv_sd"]), _pm(r["cfr_gain_mean"], r["cfr_gain_sd"]),
            "-" if math.isnan(r["ratio_of_means"]) else f"{r['ratio_of_means']:.2f}",
            ratio_pm + (f" ({left} game{'s' if left > 1 else ''} with NashConv 0 left out)" if left else ""),
            _pct(r["gain_above_nash_conv"]), str(int(r["branches"])),
            *(_pct(r[k]) for k in SHARES), str(int(r["unsteerable"]))])
    names = ["payoff", "actions", "games", "iteration", "NashConv (mean ± sd)", "CFR gain (mean ± sd)",
             "gain/NashConv (of means)", "gain/NashConv (per game, mean ± sd)", "games with gain > NashConv",
             "branches", *(SHARE_TITLES[k] for k in SHARES), "games without a steered decision"]
    return heads, [(name, [c[i] for c in cols]) for i, name in enumerate(names)]


def display_table(table: Any) -> Any:
    """The formatted table as a DataFrame (metrics as rows) for the HTML report."""
    import pandas as pd

    heads, rows = display_rows(table)
    return pd.DataFrame([cells for _, cells in rows], index=pd.Index([n for n, _ in rows], name="metric"),
                        columns=heads)


def format_table(table: Any) -> str:
    """Plain text for the CLI: metrics as rows, one column per (experiment, lineup, space)."""
    if table is None or len(table) == 0:
        return "no steering games (no steering.jsonl in the given run directories)"
    heads, rows = display_rows(table)
    first = max(len("metric"), *(len(n) for n, _ in rows))
    widths = [max(len(h), *(len(cells[j]) for _, cells in rows)) for j, h in enumerate(heads)]
    lines = ["  ".join(["metric".ljust(first), *(h.ljust(w) for h, w in zip(heads, widths))]).rstrip()]
    lines.append("  ".join("-" * w for w in (first, *widths)))
    for name, cells in rows:
        lines.append("  ".join([name.ljust(first), *(c.ljust(w) for c, w in zip(cells, widths))]).rstrip())
    lines.append("sd: sample standard deviation over games (ddof = 1); shares pooled over conversation branches.")
    return "\n".join(lines)


def curves(games: Sequence[SteeringGame]) -> Any:
    """Per (experiment, lineup, space) and logged iteration: games, mean and sd of NashConv and CFR gain
    over the games that logged it."""
    import pandas as pd

    rows = []
    for (experiment, lineup, space), part in _groups(games).items():
        by_it: dict[int, list[Iterate]] = {}
        for g in part:
            for it in g.iterations:
                by_it.setdefault(it.iteration, []).append(it)
        for iteration, its in sorted(by_it.items()):
            nc, gain = mean_sd([i.nash_conv for i in its]), mean_sd([i.cfr_gain for i in its])
            rows.append({"experiment": experiment, "lineup": lineup, "space": space, "iteration": iteration,
                         "games": len(its), "nash_conv_mean": nc[0], "nash_conv_sd": nc[1],
                         "cfr_gain_mean": gain[0], "cfr_gain_sd": gain[1]})
    return pd.DataFrame(rows, columns=[*GROUP, "iteration", "games", "nash_conv_mean", "nash_conv_sd",
                                       "cfr_gain_mean", "cfr_gain_sd"])


def final_strategies(games: Sequence[SteeringGame]) -> Any:
    """One row per game and action: the average strategy at the game's last logged iteration."""
    import pandas as pd

    rows = [{"experiment": g.experiment, "lineup": g.lineup, "space": g.space, "run_dir": g.run_dir,
             "session": g.session, "seat": g.seat, "iteration": g.final.iteration, "index": i, "action": a,
             "baseline": i == g.baseline, "probability": p}
            for g in games for i, (a, p) in enumerate(zip(g.actions, g.final.strategy))]
    return pd.DataFrame(rows, columns=[*GROUP, "run_dir", "session", "seat", "iteration", "index", "action",
                                       "baseline", "probability"])


def mean_strategies(games: Sequence[SteeringGame]) -> Any:
    """Per (experiment, lineup, space) and action label, in the order the games list them: the mean and sd
    (ddof = 1) of the final probability over the games that offer the label."""
    import pandas as pd

    rows = []
    for (experiment, lineup, space), part in _groups(games).items():
        probs: dict[str, list[float]] = {}
        base: set[str] = set()
        finals = ", ".join(map(str, sorted({g.final.iteration for g in part})))
        for g in part:
            base.add(g.actions[g.baseline])
            for a, p in zip(g.actions, g.final.strategy):
                probs.setdefault(a, []).append(p)
        for a, ps in probs.items():
            m, s = mean_sd(ps)
            rows.append({"experiment": experiment, "lineup": lineup, "space": space, "action": a,
                         "baseline": a in base, "games": len(ps), "mean": m, "sd": s, "final_iteration": finals})
    return pd.DataFrame(rows, columns=[*GROUP, "action", "baseline", "games", "mean", "sd", "final_iteration"])


# ---------------------------------------------------------------------------------------------- report

@dataclass
class Section:
    """The report's Steering section: the formatted table, its figures and exports."""

    table: Any
    display: Any
    figures: list[Any]
    skipped: list[tuple[str, str]]
    files: list[Path]


CURVES_TITLE = "Steering: NashConv and CFR gain over CFR iterations"
STRATEGIES_TITLE = "Steering: final mixed strategies"


def report_section(run_dirs: Sequence[str | Path], figdir: Path, out: Path) -> Section | None:
    """None when no run directory holds steering.jsonl; else the table (also ``steering.csv`` and, per
    action label, ``steering_strategies.csv``) and the two figures."""
    from .. import figures as F

    games = collect(run_dirs)
    if not games:
        return None
    import pandas as pd

    table = pd.DataFrame(table_rows(games), columns=list(TABLE_COLUMNS))
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "steering.csv", out / "steering_strategies.csv"]
    frame_csv(table, files[0])
    strategies = mean_strategies(games)
    frame_csv(strategies, files[1])
    figs, skipped = [], []
    for fn, title, data in ((F.figure_steering_curves, CURVES_TITLE, curves(games)),
                            (F.figure_steering_strategies, STRATEGIES_TITLE, strategies)):
        try:
            figs.append(fn(data, _report_iterations(games), sorted({g.run_dir for g in games}), figdir))
        except F.Skip as exc:
            skipped.append((title, str(exc)))
    return Section(table, display_table(table), figs, skipped, files)


def _report_iterations(games: Sequence[SteeringGame]) -> dict[tuple[str, str, str], list[int]]:
    """Per group, the report iterations its records name (one, unless the records disagree)."""
    out: dict[tuple[str, str, str], list[int]] = {}
    for key, part in _groups(games).items():
        out[key] = sorted({g.report_iteration for g in part})
    return out


# ---------------------------------------------------------------------------------- scorecard and section

FAMILY = "steering"
MAX_STATES = 200  # information states listed per configuration (the CSV has every game)


def _games(ctx: Any) -> list[SteeringGame]:
    return ctx.memo(FAMILY, lambda: collect(ctx.run_dirs))


def scorecard(ctx: Any) -> Any:
    """Per configuration (experiment, lineup, action space): games, NashConv and CFR gain (mean ± sd) at the
    report iteration and their ratio; the largest CFR gain first."""
    from .. import page

    games = _games(ctx)
    if not games:
        return None
    rows = sorted(table_rows(games), key=lambda r: -(r["cfr_gain_mean"] if not math.isnan(r["cfr_gain_mean"])
                                                     else -math.inf))
    body = [[page.esc(f"{r['experiment']} / {r['space']}") + (f"<small>{page.esc(r['lineup'])}</small>"
                                                                if r["lineup"] != "melee" else ""),
             str(r["games"]), page.esc(r["iteration"]),
             page.spread_cell(r["nash_conv_mean"], r["nash_conv_sd"], 4),
             page.spread_cell(r["cfr_gain_mean"], r["cfr_gain_sd"], 4),
             page.number(r["ratio_of_means"], 2), page.number(100 * r["agreement"], 1)] for r in rows]
    intro = ("NashConv: what the steered player would still gain by its best single prompt action (near 0: the "
             "CFR mix is a best response); CFR gain: what the mix earns over the uninformed prompt; mean &plusmn; "
             "sd over games at the report iteration. Largest gain first.")
    head = ("configuration", "games", "iteration", "NashConv", "CFR gain", "gain / NashConv", "agreement %")
    return page.Card(FAMILY, "Steering: NashConv and CFR gain", page.grid(head, body), intro,
                     len({g.run_dir for g in games}))


def _openings(run_dir: str) -> dict[tuple[str, int], str]:
    """What the steered player saw before its decision, per (lineup, session): the first public move."""
    from ...formats.rundir import RUNS, read_jsonl

    out: dict[tuple[str, int], str] = {}
    for r in read_jsonl(Path(run_dir) / RUNS, kind="runs"):
        key = (str(r.get("lineup", "")), r.get("session", 0))
        if key in out or not isinstance(r.get("round_log"), list) or not r["round_log"]:
            continue
        events = r["round_log"][0].get("events") if isinstance(r["round_log"][0], dict) else None
        say = events.get("say") if isinstance(events, dict) else None
        if isinstance(say, dict):
            bits = [str(say.get("message") or "").strip()]
            bits += [f"{k}: {json.dumps(v)}" for k, v in say.items() if k not in ("player", "message") and v]
            out[key] = " | ".join(b for b in bits if b)
    return out


def strategy_tables(games: Sequence[SteeringGame]) -> list[tuple[str, list[str], list[list[str]]]]:
    """Per configuration: (title, header, rows), one row per information state (a game: the opening the
    steered player answers), its CFR average strategy at the report iteration, NashConv and CFR gain."""
    out = []
    openings: dict[str, dict[tuple[str, int], str]] = {}
    for (experiment, lineup, space), part in _groups(games).items():
        actions = list(dict.fromkeys(a for g in part for a in g.actions))
        rows = []
        for g in sorted(part, key=lambda g: g.session)[:MAX_STATES]:
            if g.run_dir not in openings:
                openings[g.run_dir] = _openings(g.run_dir)
            it = g.at(g.report_iteration)
            probs = dict(zip(g.actions, it.strategy))
            best = max(probs.values()) if probs else 0.0
            cells = [("<b>" if probs.get(a) == best and best > 0 else "") + f"{probs[a]:.2f}"
                     + ("</b>" if probs.get(a) == best and best > 0 else "") if a in probs else "-" for a in actions]
            seen = openings[g.run_dir].get((g.lineup, g.session), "")
            rows.append([f"game {g.session}", seen, *cells, f"{it.nash_conv:.4f}", f"{it.cfr_gain:.4f}"])
        title = f"{experiment} / {lineup} / {space}: {len(part)} information state(s)" + (
            f", first {MAX_STATES} shown" if len(part) > MAX_STATES else "")
        out.append((title, ["state", "what the steered player saw", *actions, "NashConv", "CFR gain"], rows))
    return out


def section(ctx: Any) -> Any:
    """The curves and mean-strategy figures; the full table and the strategy per information state."""
    from .. import page

    games = _games(ctx)
    if not games:
        return None
    sec = report_section(ctx.run_dirs, ctx.figdir, ctx.out)
    assert sec is not None
    files = ", ".join(f"<code>{page.esc(p.name)}</code>" for p in sec.files)
    detail = [f"<h4>All steering metrics</h4><p>Also in {files}.</p>", page.table_html(sec.display)]
    detail.append("<h4>Strategy per information state</h4><p>Each game is one information state of the steered "
                  "player: the opening it answers (and its private values). Cells: the CFR average strategy's "
                  "probability of each prompt action at the report iteration, the largest in bold.</p>")
    for title, head, rows in strategy_tables(games):
        body = [[page.esc(x) if i != 1 else f"<span class='said'>{page.esc(x[:160])}</span>"
                 for i, x in enumerate(r[:2])] + [x if x.startswith("<b>") else page.esc(x) for x in r[2:]]
                for r in rows]
        detail.append(f"<details><summary>{page.esc(title)}</summary>{page.grid(head, body, numeric_from=2)}"
                      "</details>")
    return page.Section(FAMILY, "Steering", sec.figures, sec.skipped, "".join(detail), sec.files)
