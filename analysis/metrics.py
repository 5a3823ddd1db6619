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
- bid deviation (games whose equilibrium action is dominant and equals the private value: the second-price
  and English auctions): mean |bid - value| / value over valid player-runs; the paper's deviation above is
  measured on the final asset, where a losing underbid changes nothing (``tally.bid_gap``).
- convergence: mean deviation per run index, and the first run index whose mean is within 0.05 of NE.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..formats.csvcells import csv_text
from ..formats.files import CONFIG_BYTES, FileRefused, read_text
from ..formats.gridcells import Factor, factors
from ..formats.rundir import CONFIG, DECISIONS, RUNS, iter_jsonl
from ..formats.tally import CONVERGENCE_TOLERANCE, VIOLATIONS, Tally, broke

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["CONVERGENCE_TOLERANCE", "SCALARS", "VIOLATIONS", "broke", "format_table", "summarize", "summary_csv",
           "write_summary"]


def _declares(path: Path) -> tuple[bool, bool, list[Factor]]:
    """Whether the directory's game declares (a 0-100 score, ``GameInfo.score``; its equilibrium action
    dominant and equal to the private value, ``GameInfo.dominant_value``), and its [grid] factors (which
    order the summary's cells)."""
    from ..games import GAMES

    try:
        cfg = tomllib.loads(read_text(path / CONFIG, CONFIG_BYTES))
    except FileRefused:
        raise
    except (OSError, UnicodeDecodeError, ValueError):
        return False, False, []
    exp = cfg.get("experiment")
    game = GAMES.get(name) if isinstance(exp, dict) and isinstance(name := exp.get("game"), str) else None
    return (game is not None and game.info.score, game is not None and game.info.dominant_value, factors(cfg))


def summarize(run_dir: str | Path, tally: Tally | None = None) -> dict[str, Any]:
    """Summary of one run directory (see the module docstring for definitions).

    ``tally``: the directory's records counted as they were written (``RunDirectory.tally``), which gives
    the same summary without reading the logs back; without it the logs are read.
    """
    path = Path(run_dir)
    if tally is None:
        tally = Tally()
        # runs first: a decision of a run known complete is counted at once, so only the decisions of
        # incomplete runs wait; both logs are read a line at a time
        from .scan import Names, differing_twice

        names = Names()  # the one name rule: a label with ESC or U+009B never reaches the terminal
        twice: dict[tuple[Any, Any, Any], tuple[int, dict[str, Any]]] = {}
        for number, r in enumerate(iter_jsonl(path / RUNS, warn=True, kind="runs", strict=True), 1):
            if not names.issuperset(r["labels"]):
                for i, label in enumerate(r["labels"]):
                    names.check(path / RUNS, f"record {number}", f"labels[{i}]", label)
            if tally.complete is not None and r.get("complete", True):
                key = (r.get("lineup", "melee"), r.get("session"), r.get("run"))
                if key in tally.complete:  # counted once, as the report counts it; said, as the report says it
                    twice.setdefault(key, (number, r))
            tally.run(r)
        if twice:
            print(f"econarena: warning: {path / RUNS}: {len(twice)} run(s) recorded twice; each is counted once "
                  "(the first record)", file=sys.stderr)
            if (differs := differing_twice(path / RUNS, twice)) is not None:
                print(f"econarena: warning: {differs}", file=sys.stderr)
        for d in iter_jsonl(path / DECISIONS, warn=True, kind="decisions", strict=True):
            tally.decision(d)
        for label in list(tally.labels):
            if label not in names:  # a decision's label the runs do not name: checked once, not per line
                names.check(path / DECISIONS, "a record", "label", label)
    scored, dominant, found = _declares(path)
    return tally.summary(str(path), scored, dominant, found)


SCALARS = ("player_runs", "decisions", "mean_payoff", "mean_ne_payoff", "payoff_ratio", "mean_deviation",
           "win_rate", "rule_break_rate_pct", "violations_per_decision_pct", "converged_at_run",
           "tokens_in", "tokens_out", "cached_decisions", "mean_latency_s", "score", "score_std")


CUT_KEYS = ("truncated_replies", "truncated_runs")  # replies cut at max_tokens (formats/tally.py), when there are any
POOL_KEYS = ("pooled_over", "pooled_cells")  # a baseline's row pooled over [grid.llm] cells, when there is one
POOLED = " (pooled over cells)"  # beside such a row's label in the table


def summary_csv(summary: dict[str, Any]) -> str:
    runs = sorted({k for v in summary["labels"].values() for k in v["deviation_by_run"]}, key=int)
    cut = [k for k in CUT_KEYS if any(k in v for v in summary["labels"].values())]  # only when a reply was cut
    bid = [k for k in ("bid_deviation",) if any(k in v for v in summary["labels"].values())]  # auctions only
    pool = [k for k in POOL_KEYS if any(k in v for v in summary["labels"].values())]  # a [grid.llm] only
    return csv_text(["label", *SCALARS, *bid, *VIOLATIONS, *cut, *pool, *(f"deviation_run_{k}" for k in runs)],
                    ([label, *(v[k] for k in SCALARS), *(v.get(k) for k in bid),
                      *(v["violations"][k] for k in VIOLATIONS),
                      *(v.get(k, 0) for k in cut), *(_pooled_cell(v.get(k)) for k in pool),
                      *(v["deviation_by_run"].get(k) for k in runs)]
                     for label, v in summary["labels"].items()))


def _pooled_cell(x: Any) -> Any:
    """A pooled row's CSV cell: the factors left out as one text (``reasoning_effort;temperature``)."""
    return ";".join(map(str, x)) if isinstance(x, list) else x


def write_summary(run_dir: str | Path, tally: Tally | None = None) -> dict[str, Any]:
    """Write ``summary.json`` and ``summary.csv``; ``tally`` as for :func:`summarize`."""
    from ..formats.rundir import write_atomic

    path = Path(run_dir)
    summary = summarize(path, tally)
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
    rows = [[label + (POOLED if "pooled_over" in v else ""), _f(v["player_runs"]), _f(v["mean_payoff"], 2),
             _f(v["mean_ne_payoff"], 2),
             _f(v["payoff_ratio"]), _f(v["mean_deviation"]), _f(v["win_rate"]), _f(v["rule_break_rate_pct"], 1),
             _f(v["converged_at_run"])] for label, v in summary["labels"].items()]
    if any("bid_deviation" in v for v in summary["labels"].values()):  # bidding one's value is dominant
        head.insert(head.index("deviation") + 1, "bid deviation")
        for row, v in zip(rows, summary["labels"].values()):
            row.insert(head.index("bid deviation"), _f(v.get("bid_deviation")))
    if any(v.get("score") is not None for v in summary["labels"].values()):  # games with a 0-100 score
        head.append("score (std)")
        for row, v in zip(rows, summary["labels"].values()):
            row.append("-" if v.get("score") is None else _f(v["score"], 1)
                       + ("" if v.get("score_std") is None else f" ({v['score_std']:.1f})"))
    if any("truncated_replies" in v for v in summary["labels"].values()):  # not the model's errors: apart
        # shares of the replies, side by side: a player whose every reply was cut reads 100.0 + 0.0, where its
        # rule-break rate alone (0: a cut is no rule break) read as a clean run
        head += ["cut at max_tokens %", "invalid %"]
        for row, v in zip(rows, summary["labels"].values()):
            decisions = int(v.get("decisions") or 0)
            row.append(_f(100 * int(v.get("truncated_replies", 0)) / decisions, 1) if decisions else "-")
            row.append(_f(v.get("violations_per_decision_pct"), 1))
    footer = (f"complete runs: {summary['runs_complete']}"
              + (f", incomplete: {summary['runs_incomplete']}" if summary["runs_incomplete"] else ""))
    over = list(dict.fromkeys(k for v in summary["labels"].values() for k in v.get("pooled_over") or ()))
    if over:  # say once why a baseline has one row where an LLM player has one per cell
        footer += (f"; pooled over cells: a baseline plays alike in every {', '.join(map(str, over))} cell "
                   "([grid.llm] changes the LLM seats only)")
    return head, rows, footer


def format_table(summary: dict[str, Any]) -> str:
    head, rows, footer = summary_cells(summary)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    lines = [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    lines.append(footer)
    return "\n".join(lines)
