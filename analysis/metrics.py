"""Metrics recomputed from a run directory alone, so a definition can change without re-running a model.

Per label (a label may hold several seats), over COMPLETE runs only:
- scored payoff: the game's payoff, except that a player-run with any rule break scores 0, in every game.
  The beauty contest already pays an invalid choice 0; in the auctions a rule breaker keeps its assets
  (minus ``entrance_fee``, 0 by default), so without this a player that never answered validly would
  score about the NE final asset and look rational. ``runs.jsonl`` keeps the game's own payoffs.
- payoff ratio r = mean scored payoff / mean NE payoff (the paper's eq. 1 and 4). Beauty contest NE payoff
  is prize / n; auctions: NE final asset.
- deviation d: auctions |final asset / NE asset - 1| (eq. 3); beauty contest |choice - 0| / upper bound
  (eq. 3 is undefined when the NE action is 0), averaged over player-runs WITHOUT a rule break; a label
  with none has no deviation (None), no deviation curve and no convergence run.
- win rate: share of player-runs the seat won (a shared beauty-contest prize counts as a win).
- rule-break rate: % of player-runs with at least one invalid reply; per kind and per decision too. With
  ``reask`` a re-asked reply may end valid, so a run counts as broken when any FIRST attempt was invalid
  (the record's ``first_valid``; logs written before it existed fall back to ``valid``).
- score / score_std (games that declare a 0-100 score): mean and sample std (ddof = 1) of the run score
  over the complete runs the label played in, each run once however many seats the label held; with
  every seat one label (GAMA-Bench) this is the reference's per-game number.
- convergence: mean deviation per run index, and the first run index whose mean is within 0.05 of NE.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..rundir import CONFIG, DECISIONS, RUNS, complete_runs, read_jsonl, run_key

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONVERGENCE_TOLERANCE = 0.05
VIOLATIONS = ("parse_error", "schema_error", "rule_violation")


def _mean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    # fsum is exact, so the mean does not depend on the order of runs.jsonl (concurrency, resume)
    return math.fsum(xs) / len(xs) if xs else None


def _std(xs: list[float | None]) -> float | None:
    """Sample standard deviation (ddof = 1) of the known values; None with fewer than two."""
    xs = [x for x in xs if isinstance(x, (int, float)) and math.isfinite(x)]
    if len(xs) < 2:
        return None
    m = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def broke(run: dict[str, Any], seat: int) -> bool:
    """Whether the seat broke a rule in this run, counting first attempts (``first_valid``) when logged."""
    first = run.get("first_valid")
    first_ok = bool(first[seat]) if isinstance(first, list) and seat < len(first) else True
    return not run["valid"][seat] or not first_ok


def _declares_score(path: Path) -> bool:
    """Whether the directory's game declares a 0-100 score (``GameInfo.score``)."""
    from ..games import GAMES

    try:
        cfg = tomllib.loads((path / CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    exp = cfg.get("experiment")
    game = GAMES.get(exp.get("game")) if isinstance(exp, dict) and isinstance(exp.get("game"), str) else None
    return game is not None and game.info.score


def _cell_suffix(run: dict[str, Any]) -> str:
    """`` [ratio=0.5]`` for a run of a [grid] cell (its table's name ends with the cell), else ``""``."""
    lineup = str(run.get("lineup", ""))
    if not run.get("cell") or " [" not in lineup:
        return ""
    return lineup[lineup.index(" ["):]


def summarize(run_dir: str | Path) -> dict[str, Any]:
    """Summary of one run directory (see the module docstring for definitions)."""
    path = Path(run_dir)
    runs_all = read_jsonl(path / RUNS, warn=True, kind="runs", strict=True)
    complete = complete_runs(runs_all)
    runs = list(complete.values())
    keys = set(complete)
    decisions = [d for d in read_jsonl(path / DECISIONS, warn=True, kind="decisions", strict=True)
                 if run_key(d) in keys]
    per: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "payoffs": [], "ne": [], "dev": [], "wins": 0, "player_runs": 0, "broke": 0,
        "dev_by_run": defaultdict(list), "decisions": 0, "violations": defaultdict(int),
        "tokens_in": 0, "tokens_out": 0, "cached": 0, "latency": [], "scores": [],
    })
    scored = _declares_score(path)
    cell_of = {r.get("lineup", "melee"): _cell_suffix(r) for r in runs}  # a [grid] cell is its own row
    for r in runs:
        for i, label in enumerate(r["labels"]):
            a = per[label + cell_of[r.get("lineup", "melee")]]
            valid = bool(r["valid"][i])
            a["player_runs"] += 1
            a["payoffs"].append(r["payoffs"][i] if valid else 0.0)  # a rule break scores 0
            a["ne"].append(r["ne_payoffs"][i] if r.get("ne_payoffs") else None)  # None: no equilibrium
            dev = r["deviation"][i] if valid else None  # no valid strategy: no distance to the equilibrium
            a["dev"].append(dev)
            a["dev_by_run"][r["run"]].append(dev)
            a["wins"] += i in r["winners"]
            a["broke"] += broke(r, i)
        if scored:
            for label in set(r["labels"]):
                per[label + cell_of[r.get("lineup", "melee")]]["scores"].append(r.get("score"))
    for d in decisions:
        a = per[d["label"] + cell_of.get(d.get("lineup", "melee"), "")]
        a["decisions"] += 1
        if d.get("violation"):
            a["violations"][d["violation"]] += 1
        a["tokens_in"] += d.get("tokens_in") or 0
        a["tokens_out"] += d.get("tokens_out") or 0
        a["cached"] += bool(d.get("cached"))
        a["latency"].append(d.get("latency_s"))
    labels = {}
    for label in sorted(per):
        a = per[label]
        mp, mne = _mean(a["payoffs"]), _mean(a["ne"])
        curve = {str(k): _mean(v) for k, v in sorted(a["dev_by_run"].items())}
        converged = next((int(k) for k, v in curve.items() if v is not None and v <= CONVERGENCE_TOLERANCE), None)
        n_viol = sum(a["violations"].values())
        labels[label] = {
            "player_runs": a["player_runs"],
            "decisions": a["decisions"],
            "mean_payoff": mp,
            "mean_ne_payoff": mne,
            "payoff_ratio": mp / mne if mp is not None and mne else None,
            "mean_deviation": _mean(a["dev"]),
            "win_rate": a["wins"] / a["player_runs"] if a["player_runs"] else None,
            "rule_break_rate_pct": 100 * a["broke"] / a["player_runs"] if a["player_runs"] else None,
            "violations_per_decision_pct": 100 * n_viol / a["decisions"] if a["decisions"] else None,
            "violations": {k: a["violations"].get(k, 0) for k in VIOLATIONS},
            "deviation_by_run": curve,
            "converged_at_run": converged,
            "tokens_in": a["tokens_in"],
            "tokens_out": a["tokens_out"],
            "cached_decisions": a["cached"],
            "mean_latency_s": _mean(a["latency"]),
            "score": _mean(a["scores"]) if scored else None,
            "score_std": _std(a["scores"]) if scored else None,
        }
    return {
        "run_dir": str(path),
        "runs_complete": len(runs),
        "runs_incomplete": sum(not r.get("complete", True) for r in runs_all),
        "convergence_tolerance": CONVERGENCE_TOLERANCE,
        "labels": labels,
    }


SCALARS = ("player_runs", "decisions", "mean_payoff", "mean_ne_payoff", "payoff_ratio", "mean_deviation",
           "win_rate", "rule_break_rate_pct", "violations_per_decision_pct", "converged_at_run",
           "tokens_in", "tokens_out", "cached_decisions", "mean_latency_s", "score", "score_std")


def summary_csv(summary: dict[str, Any]) -> str:
    runs = sorted({k for v in summary["labels"].values() for k in v["deviation_by_run"]}, key=int)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["label", *SCALARS, *VIOLATIONS, *(f"deviation_run_{k}" for k in runs)])
    for label, v in summary["labels"].items():
        w.writerow([label, *(v[k] for k in SCALARS), *(v["violations"][k] for k in VIOLATIONS),
                    *(v["deviation_by_run"].get(k) for k in runs)])
    return buf.getvalue()


def write_summary(run_dir: str | Path) -> dict[str, Any]:
    from ..rundir import write_atomic

    path = Path(run_dir)
    summary = summarize(path)
    write_atomic(path / "summary.json", json.dumps(summary, indent=2) + "\n")
    write_atomic(path / "summary.csv", summary_csv(summary))
    return summary


def _f(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def summary_cells(summary: dict[str, Any]) -> tuple[list[str], list[list[str]], str]:
    """(header, rows, footer) of the summary table: what the plain text and the terminal table show."""
    head = ["label", "runs", "payoff", "NE payoff", "ratio", "deviation", "win rate", "rule breaks %",
            "converged at"]
    rows = [[label, _f(v["player_runs"]), _f(v["mean_payoff"], 2), _f(v["mean_ne_payoff"], 2),
             _f(v["payoff_ratio"]), _f(v["mean_deviation"]), _f(v["win_rate"]), _f(v["rule_break_rate_pct"], 1),
             _f(v["converged_at_run"])] for label, v in summary["labels"].items()]
    if any(v.get("score") is not None for v in summary["labels"].values()):  # games with a 0-100 score
        head.append("score (std)")
        for row, v in zip(rows, summary["labels"].values()):
            row.append("-" if v.get("score") is None else _f(v["score"], 1)
                       + ("" if v.get("score_std") is None else f" ({v['score_std']:.1f})"))
    footer = (f"complete runs: {summary['runs_complete']}"
              + (f", incomplete: {summary['runs_incomplete']}" if summary["runs_incomplete"] else ""))
    return head, rows, footer


def format_table(summary: dict[str, Any]) -> str:
    head, rows, footer = summary_cells(summary)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    lines = [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    lines.append(footer)
    return "\n".join(lines)
