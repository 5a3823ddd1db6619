"""NegotiationArena analyses (spec 2.6) over run directories, played here or imported from the released logs.

Every run of a ``family = "negotiationarena"`` game carries per-run ``metrics`` (the game's own
``metrics(setup, round_log)``): ``payoff`` [RED, BLUE], ``win`` [d1 > d2, d1 < d2], ``agreement``,
``first_offer``, ``first_response``, ``final_price`` and, for buy/sell, ``bad_counter_offer``. Here they are
aggregated, with the scenario being the game's name and player 1 the label in seat 0 (RED, who moves first):

- Win rate per ordered pair: w_i = mean(win_i) over the pair's games (ties count in neither); the correct
  rate is w_i / (w_1 + w_2). ``formula = "paper"`` reproduces the published notebooks, which overwrite the
  P1 rate before computing P2: r_1 = w_1 / (w_1 + w_2), r_2 = w_2 / (r_1 + w_2). P1 rates agree.
- Payoff per ordered pair: the mean payoff of each seat over all its games (ties and no deals included).
- Anchoring: over accepted games with a first offer, Spearman's rho (average ranks for ties) and Pearson's
  r between the first proposed price and the accepted one.
- Bad counter-offer rate: the share of buy/sell games whose buyer's first counter-price exceeds the
  seller's first price, with SE = sqrt(x (1 - x) / n).
- Acceptance curve: per first offered amount, the share of first responses that accept it.

A ``[grid]`` cell is part of every row's identity: where a directory has a grid, each aggregation is per
scenario and cell (its games only), the pair CSV gains a ``cell`` column and the card a table per cell.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...formats.csvcells import csv_text
from ...formats.numbers import finite
from ...formats.rundir import game_name
from ...games import GAMES
from ...games.base import Game
from .. import published
from ..cells import cell_of, cell_rank, grid_of, study_factors
from ..scan import Base, Dir, key_of

FAMILY = "negotiationarena"
FORMULAS = ("correct", "paper")
PAIR_COLUMNS = ("scenario", "p1_model", "p2_model", "games", "p1_win_rate", "p2_win_rate", "p1_payoff",
                "p2_payoff")
CELL_PAIR_COLUMNS = ("scenario", "cell", *PAIR_COLUMNS[1:])  # a study with a [grid]


@dataclass(frozen=True)
class GameRow:
    """One finished game, as the aggregations read it."""

    scenario: str
    p1: str
    p2: str
    payoff: tuple[float, float]
    win: tuple[bool, bool]
    agreement: bool
    first_offer: float | None = None
    first_response: str | None = None
    final_price: float | None = None
    bad_counter_offer: bool | None = None
    cell: str = ""  # the [grid] cell of the game's table ("" without a grid)


def win_rates(win1: Sequence[bool], win2: Sequence[bool], formula: str = "correct") -> tuple[float | None,
                                                                                             float | None]:
    """(P1, P2) win rates of one ordered pair; None when nobody ever won (all ties)."""
    if formula not in FORMULAS:
        raise ValueError(f"formula: expected one of {', '.join(FORMULAS)}, got {formula!r}")
    if not win1 or len(win1) != len(win2):
        raise ValueError("win1 and win2 must be equally long and not empty")
    w1 = sum(map(bool, win1)) / len(win1)
    w2 = sum(map(bool, win2)) / len(win2)
    if w1 + w2 == 0:
        return None, None
    r1 = w1 / (w1 + w2)
    r2 = w2 / (r1 + w2) if formula == "paper" else w2 / (w1 + w2)
    return r1, r2


def _ranks(x: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None with fewer than two points or a constant series."""
    if len(x) != len(y):
        raise ValueError("x and y must be equally long")
    n = len(x)
    if n < 2:
        return None
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the average ranks (as scipy.stats.spearmanr)."""
    if len(x) != len(y):
        raise ValueError("x and y must be equally long")
    return pearson(_ranks(x), _ranks(y))


def anchoring(rows: Iterable[GameRow]) -> dict[str, Any]:
    """First offer vs accepted price over the accepted games that have both."""
    pts = [(r.first_offer, r.final_price) for r in rows
           if r.agreement and r.first_offer is not None and r.final_price is not None]
    x = [float(a) for a, _ in pts]
    y = [float(b) for _, b in pts]
    return {"n": len(pts), "spearman": spearman(x, y) if pts else None, "pearson": pearson(x, y) if pts else None}


def bad_counter_offer_rate(rows: Iterable[GameRow]) -> dict[str, Any]:
    flags = [r.bad_counter_offer for r in rows if r.bad_counter_offer is not None]
    if not flags:
        return {"n": 0, "rate": None, "se": None}
    x = sum(flags) / len(flags)
    return {"n": len(flags), "rate": x, "se": math.sqrt(x * (1 - x) / len(flags))}


def acceptance_curve(rows: Iterable[GameRow]) -> dict[float, tuple[float, int]]:
    """First offered amount -> (share of first responses that accept, games)."""
    seen: dict[float, list[bool]] = defaultdict(list)
    for r in rows:
        if r.first_offer is not None and r.first_response is not None:
            seen[float(r.first_offer)].append(r.first_response == "accept")
    return {k: (sum(v) / len(v), len(v)) for k, v in sorted(seen.items())}


def pair_table(rows: Iterable[GameRow], formula: str = "correct") -> list[dict[str, Any]]:
    """One row per scenario, [grid] cell and ordered (p1, p2) pair: games, win rates and mean payoffs."""
    groups: dict[tuple[str, str, str, str], list[GameRow]] = defaultdict(list)
    for r in rows:
        groups[(r.scenario, r.cell, r.p1, r.p2)].append(r)
    out = []
    for (scenario, cell, p1, p2), rs in sorted(groups.items()):
        r1, r2 = win_rates([r.win[0] for r in rs], [r.win[1] for r in rs], formula)
        out.append({"scenario": scenario, "cell": cell, "p1_model": p1, "p2_model": p2, "games": len(rs),
                    "p1_win_rate": r1, "p2_win_rate": r2,
                    "p1_payoff": math.fsum(r.payoff[0] for r in rs) / len(rs),
                    "p2_payoff": math.fsum(r.payoff[1] for r in rs) / len(rs)})
    return out


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.12g}"
    return str(v)


def gridded(table: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any row belongs to a [grid] cell (then the cell is a column)."""
    return any(r.get("cell") for r in table)


def pairs_csv(table: Sequence[Mapping[str, Any]]) -> str:
    columns = CELL_PAIR_COLUMNS if gridded(table) else PAIR_COLUMNS
    return csv_text(columns, ([_cell(row.get(c, "")) for c in columns] for row in table))


def pairs_cells(table: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the pair table (a ``cell`` column where a study has a [grid])."""
    split = gridded(table)
    head = ["scenario", *(["cell"] if split else []), "P1 (RED)", "P2 (BLUE)", "games", "P1 win", "P2 win",
            "P1 payoff", "P2 payoff"]
    return head, [[str(r["scenario"]), *([str(r.get("cell", ""))] if split else []), str(r["p1_model"]),
                   str(r["p2_model"]), str(r["games"])]
                  + ["-" if r[k] is None else f"{r[k]:.3f}" for k in ("p1_win_rate", "p2_win_rate")]
                  + [f"{r['p1_payoff']:.2f}", f"{r['p2_payoff']:.2f}"] for r in table]


def format_pairs(table: Sequence[Mapping[str, Any]], formula: str = "correct") -> str:
    """The pair table as aligned text (win rates by the chosen formula)."""
    head, body = pairs_cells(table)
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = [f"NegotiationArena: win rates ({formula} formula) and mean payoffs by ordered pair"]
    lines += ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    return "\n".join(lines)


def _game_of(run_dir: Path, games: Mapping[str, Game]) -> Game | None:
    name = game_name(run_dir)
    game = games.get(name) if name is not None else None
    return game if game is not None and game.info.family == FAMILY else None




def row_of(scenario: str, record: Mapping[str, Any], reading: str | None = None, grid: bool = False
           ) -> GameRow | None:
    """A complete run record as a GameRow; None when it lacks the metrics (an older or foreign record).

    ``reading`` ("correct" or "paper"): for an imported run, score the payoffs by that per-game rule from
    the outcome its log records, whatever ``--metrics`` the import used; None: the run's own metrics.
    ``grid``: the directory has a [grid], so the row carries its table's cell."""
    m = record.get("metrics")
    labels = record.get("labels") or []
    if not isinstance(m, Mapping) or len(labels) != 2:
        return None
    pay, win = m.get("payoff"), m.get("win")
    imported = record["imported"] if isinstance(record.get("imported"), Mapping) else {}
    rec = imported["recorded"] if isinstance(imported.get("recorded"), Mapping) else None
    if reading in FORMULAS and rec is not None:
        pay = rec.get("payoff_paper" if reading == "paper" else "payoff")
        if isinstance(pay, list) and len(pay) == 2 and all(finite(x) is not None for x in pay):
            win = [pay[0] > pay[1], pay[0] < pay[1]]
    if not (isinstance(pay, list) and len(pay) == 2 and isinstance(win, list) and len(win) == 2):
        return None
    p = (finite(pay[0]), finite(pay[1]))
    if p[0] is None or p[1] is None:
        return None
    bad = m.get("bad_counter_offer")
    resp = m.get("first_response")
    return GameRow(scenario, str(labels[0]), str(labels[1]), (p[0], p[1]), (bool(win[0]), bool(win[1])),
                   bool(m.get("agreement")), finite(m.get("first_offer")), resp if isinstance(resp, str) else None,
                   finite(m.get("final_price")), bad if isinstance(bad, bool) else None,
                   cell_of(record.get("lineup", "melee"), grid))


class Collector(Base):
    """The scan's consumer for :func:`collect`: each complete run of a NegotiationArena game as a GameRow,
    kept per directory and taken in (lineup, session, run) order when the directory ends."""

    def __init__(self, games: Mapping[str, Game] | None = None, reading: str | None = None) -> None:
        self.games, self.reading = games or GAMES, reading
        self.rows: list[GameRow] = []

    def begin(self, d: Dir) -> bool:
        game = self.games.get(d.game_name)
        if game is None or game.info.family != FAMILY:
            return False
        self.game, self.grid = game, grid_of(d)
        self.items: list[tuple[Any, Any]] = []  # (sort key, row) per complete run
        return True

    def run(self, d: Dir, number: int, rec: dict[str, Any]) -> None:
        if rec.get("complete", True):
            row = row_of(self.game.name, rec, self.reading, self.grid)
            if row is not None:
                self.items.append((key_of(rec), row))

    def end(self, d: Dir) -> None:
        self.rows += self._sorted()
        self.items = []

    def _sorted(self) -> list[GameRow]:
        return [row for _, row in sorted(self.items, key=lambda x: x[0])]

    # ------------------------------------------------------ the columnar copy (analysis/columnar.py)

    copy_name = "negotiationarena"

    @property
    def copy_version(self) -> str:
        return f"2:{self.reading}"  # imported runs are scored by the reading asked for; 2: the cell kept

    def save(self, d: Dir, copy: Any) -> None:
        """The directory's games in (lineup, session, run) order, one column per field."""
        import pyarrow as pa

        rows = self._sorted()
        cols: dict[str, Any] = {
            "scenario": pa.array([r.scenario for r in rows], pa.string()),
            "p1": pa.array([r.p1 for r in rows], pa.string()), "p2": pa.array([r.p2 for r in rows], pa.string()),
            "pay1": pa.array([r.payoff[0] for r in rows], pa.float64()),
            "pay2": pa.array([r.payoff[1] for r in rows], pa.float64()),
            "win1": pa.array([r.win[0] for r in rows], pa.bool_()),
            "win2": pa.array([r.win[1] for r in rows], pa.bool_()),
            "agreement": pa.array([r.agreement for r in rows], pa.bool_()),
            "first_offer": pa.array([r.first_offer for r in rows], pa.float64()),
            "first_response": pa.array([r.first_response for r in rows], pa.string()),
            "final_price": pa.array([r.final_price for r in rows], pa.float64()),
            "bad_counter_offer": pa.array([r.bad_counter_offer for r in rows], pa.bool_()),
            "cell": pa.array([r.cell for r in rows], pa.string())}
        copy.put(self.copy_name, self.copy_version, {"games": pa.table(cols)}, {})

    def restore(self, d: Dir, copy: Any) -> None:
        t = copy.table(self.copy_name, "games").to_pydict()
        self.rows += [GameRow(sc, p1, p2, (a, b), (w1, w2), ag, fo, fr, fp, bad, cell) for sc, p1, p2, a, b, w1, w2, ag,
                      fo, fr, fp, bad, cell in zip(t["scenario"], t["p1"], t["p2"], t["pay1"], t["pay2"], t["win1"],
                                                   t["win2"], t["agreement"], t["first_offer"], t["first_response"],
                                                   t["final_price"], t["bad_counter_offer"], t["cell"])]


def collect(run_dirs: Iterable[str | Path], games: Mapping[str, Game] | None = None,
            reading: str | None = None) -> list[GameRow]:
    """Every complete run of a NegotiationArena game among ``run_dirs`` (other directories ignored)."""
    from ..scan import scan

    c = Collector(games, reading)
    scan([Path(d) for d in run_dirs], [c])
    return c.rows


# ---- the published Figure 3 beside the logs ----

PUBLISHED = "negotiationarena_figure3"
CHECK_COLUMNS = ("figure", "scenario", "p1_model", "p2_model", "metric", "games", "published", "from_logs",
                 "reproduced", "correct_from_logs", "correct_published", "note")


def published_check(rows_paper: Sequence[GameRow], rows_correct: Sequence[GameRow],
                    data: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each published cell whose model pair is present, beside the same number computed from the games:
    ``from_logs`` by the paper's own formula and per-game rule (what the authors' notebook gives on these
    games), ``reproduced`` when it rounds to the published value, and ``correct_from_logs`` by the correct
    formula and rule. ``rows_paper``/``rows_correct``: :func:`collect` with ``reading`` "paper"/"correct"."""
    data = data if data is not None else published.load(PUBLISHED)
    tables = {"paper": {(r["scenario"], r["p1_model"], r["p2_model"]): r for r in pair_table(rows_paper, "paper")},
              "correct": {(r["scenario"], r["p1_model"], r["p2_model"]): r
                          for r in pair_table(rows_correct, "correct")}}
    out = []
    per_pair = data.get("source", {}).get("games_per_pair")
    for c in data.get("cell", []):
        key = (c["scenario"], c["p1"], c["p2"])
        if key not in tables["paper"]:
            continue
        formula = c.get("formula", "paper")
        got = tables["paper" if formula == "paper" else "correct"][key][c["metric"]]
        right = tables["correct"][key][c["metric"]]
        tol = 0.5 * 10 ** -int(c.get("decimals", 2)) + 1e-9
        out.append({"figure": c["figure"], "scenario": c["scenario"], "p1_model": c["p1"], "p2_model": c["p2"],
                    "metric": c["metric"], "games": tables["paper"][key]["games"], "published": c["value"],
                    "from_logs": got, "reproduced": got is not None and abs(got - c["value"]) <= tol,
                    "correct_from_logs": right, "correct_published": c.get("correct"), "note": c.get("note", ""),
                    "published_games": per_pair})
    return out


def released_counts(data: Mapping[str, Any] | None = None) -> dict[str, int]:
    """Games per scenario in the released section-one logs, from the published data file."""
    data = data if data is not None else published.load(PUBLISHED)
    return {str(c["scenario"]): int(c["games"]) for c in data.get("count", [])}


def check_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    return csv_text(CHECK_COLUMNS, ([_cell(row[c]) if not isinstance(row[c], bool) else str(row[c]).lower()
                                     for c in CHECK_COLUMNS] for row in rows))


def format_check(rows: Sequence[Mapping[str, Any]]) -> str:
    """The published cells beside the logs' numbers, as aligned text, with the formula error noted."""
    if not rows:
        return "Published Figure 3: none of its model pairs is among these games"
    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.3f}"
    head = ["fig", "scenario", "P1 (RED)", "P2 (BLUE)", "metric", "games", "published", "from logs", "",
            "correct (logs)", "correct (spec)"]
    def verdict(r: Mapping[str, Any]) -> str:
        if r["reproduced"]:
            return "ok"
        full = r.get("published_games")
        return "DIFFERS" if full in (None, r["games"]) else f"differs ({r['games']} of the paper's {full} games)"
    body = [[r["figure"], r["scenario"], r["p1_model"], r["p2_model"], r["metric"], str(r["games"]),
             f(r["published"]), f(r["from_logs"]), verdict(r),
             f(r["correct_from_logs"]) + (" *" if r["note"] else ""), f(r["correct_published"])] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    done = sum(1 for r in rows if r["reproduced"])
    lines = [f"Published Figure 3 (NegotiationArena paper) beside these games: {done} of {len(rows)} cells "
             "reproduced by the paper's own formula from the recorded outcomes"]
    lines += ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    notes = sorted({r["note"] for r in rows if r["note"]})
    lines += [f"* {n}; 'correct' columns use w2 / (w1 + w2)" for n in notes]
    return "\n".join(lines)


# ---- the report's NegotiationArena section ----

def parts_of(rows: Iterable[GameRow], found: Sequence[Any] = ()) -> list[tuple[str, str]]:
    """The (scenario, [grid] cell) pairs the rows hold: scenarios by name, cells in their factors' natural
    order (``found``: the study's factors)."""
    return sorted({(r.scenario, r.cell) for r in rows}, key=lambda k: (k[0], cell_rank(k[1], found)))


def part_title(scenario: str, cell: str) -> str:
    """A scenario's title with its [grid] cell: ``Ultimatum [rounds=2]``."""
    return _title(scenario) + (f" [{cell}]" if cell else "")


def _title(scenario: str) -> str:
    game = GAMES.get(scenario)
    return game.info.title if game is not None else scenario


def _matrix(table: Sequence[Mapping[str, Any]], scenario: str, fmt: Any) -> Any:
    """Rows: player 1 (RED, moves first); columns: player 2 (BLUE); cells from ``fmt(row)``."""
    import pandas as pd

    rows = [r for r in table if r["scenario"] == scenario]
    p1s = sorted({r["p1_model"] for r in rows})
    p2s = sorted({r["p2_model"] for r in rows})
    cell = {(r["p1_model"], r["p2_model"]): fmt(r) for r in rows}
    return pd.DataFrame([[cell.get((a, b), "-") for b in p2s] for a in p1s],
                        index=pd.Index(p1s, name="P1 (RED) \\ P2 (BLUE)"), columns=p2s)


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def report_section(run_dirs: Sequence[str | Path], figdir: Path, formula: str = "correct",
                   rows: list[GameRow] | None = None, found: Sequence[Any] = ()) -> dict[str, Any] | None:
    """Per scenario (and [grid] cell, in ``found``'s natural order): win-rate and payoff matrices by ordered
    model pair, the anchoring scatter (first offer vs agreed price, with Spearman and Pearson), the ultimatum
    acceptance curve and the bad counter-offer rate. None when no NegotiationArena runs are present."""
    from .. import figures as F

    rows = collect(run_dirs) if rows is None else rows
    if not rows:
        return None
    table = pair_table(rows, formula)
    scenarios = parts_of(rows, found)
    out: dict[str, Any] = {"scenarios": [], "figures": [], "formula": formula}
    for sc, cell in scenarios:
        mine = [r for r in rows if r.scenario == sc and r.cell == cell]
        here = [r for r in table if r.get("cell", "") == cell]
        out["scenarios"].append({
            "name": sc, "cell": cell, "title": part_title(sc, cell), "games": len(mine),
            "wins": _matrix(here, sc, lambda r: f"{_rate(r['p1_win_rate'])} / {_rate(r['p2_win_rate'])} "
                                                 f"(n={r['games']})"),
            "payoffs": _matrix(here, sc, lambda r: f"{r['p1_payoff']:.2f} / {r['p2_payoff']:.2f}"),
            "anchoring": anchoring(mine), "bad_counter_offers": bad_counter_offer_rate(mine),
            "acceptance": acceptance_curve(mine)})
    try:
        out["figures"].append(_figure_offers(rows, scenarios, figdir, F))
    except F.Skip as exc:
        out["skipped"] = [("First offers, agreed prices and acceptance", str(exc))]
    return out


def _figure_offers(rows: Sequence[GameRow], scenarios: Sequence[tuple[str, str]], figdir: Path, F: Any) -> Any:
    """Per scenario (and [grid] cell: a facet each) with offers: the anchoring scatter, and for the ultimatum
    the acceptance curve."""
    panels = [(sc, cell) for sc, cell in scenarios
              if any(r.first_offer is not None for r in rows if r.scenario == sc and r.cell == cell)]
    if not panels:
        raise F.Skip("no game recorded a first offer")
    fig, axes = F._subplots(1, len(panels), (4.2 * len(panels), 3.6))
    for ax, (sc, cell) in zip(axes[0], panels):
        mine = [r for r in rows if r.scenario == sc and r.cell == cell]
        agreed = [(r.first_offer, r.final_price) for r in mine
                  if r.agreement and r.first_offer is not None and r.final_price is not None]
        a = anchoring(mine)
        if agreed:
            ax.scatter([x for x, _ in agreed], [y for _, y in agreed], s=14, alpha=0.7, color="#4292c6",
                       label="agreed games")
        curve = acceptance_curve(mine)
        if len(curve) > 1 and any(r.first_response is not None for r in mine):
            ax2 = ax.twinx()
            ax2.plot(list(curve), [v for v, _ in curve.values()], color="#d94801", marker="o", ms=3,
                     label="share accepting the first offer")
            ax2.set_ylim(-0.05, 1.05)
            ax2.set_ylabel("first offers accepted")
        rho = "-" if a["spearman"] is None else f"{a['spearman']:.2f}"
        r = "-" if a["pearson"] is None else f"{a['pearson']:.2f}"
        ax.set_title(f"{part_title(sc, cell)}: Spearman {rho}, Pearson {r} (n={a['n']})", fontsize=9)
        ax.set_xlabel("first offer")
        ax.set_ylabel("agreed price / trade")
    sources = sorted({f"{r.p1} vs {r.p2}" for r in rows})[:4]
    png, svg = F._save(fig, figdir, "na_offers", sources)
    return F.Figure("na_offers", "NegotiationArena: anchoring and acceptance",
                    "Dots: the first offer of a game against the price (or trade) agreed, for games that ended "
                    "in agreement; the title gives Spearman's and Pearson's correlation between them (the "
                    "anchoring effect). Line (where first offers differ): the share of first offers accepted at "
                    "each offered amount (the ultimatum's acceptance curve).", png, svg, sources)


# ---------------------------------------------------------------------------------- scorecard and section

TOLERANCES = {"win_rate": 0.005, "payoff": 0.05}  # where a published cell does not say its decimals


def collector() -> Collector:
    """What the report's scan feeds for this family (``ctx.memo(FAMILY)`` holds it afterwards)."""
    return Collector()


def _rows(ctx: Any) -> list[GameRow]:
    def make() -> Collector:
        from ..scan import scan

        c = Collector()
        scan([Path(d) for d in ctx.run_dirs], [c])
        return c
    return ctx.memo(FAMILY, make).rows


def _published_cell(board: Any, scenario: str, p1: str, p2: str, metric: str) -> Any:
    """The published cell for this scenario, ordered pair (coordinates ``p1`` and ``p2``, or ``pair`` as
    ``"P1 vs P2"``; each side by name or alias) and metric (``p1_win_rate`` ...; ``win_rate`` is player 1's)."""
    names = {metric, "win_rate"} if metric == "p1_win_rate" else {metric}
    for c in board.cells:
        at = c.at
        if at.get("metric") not in names or scenario not in board.names_of(at.get("scenario", "")) \
                and at.get("scenario") != _title(scenario):
            continue
        if "p1" in at:
            a, b = at["p1"], at.get("p2", "")
        else:
            a, sep, b = str(at.get("pair", "")).partition(" vs ")
            if not sep:
                continue
        if p1 in board.names_of(a.strip()) and p2 in board.names_of(b.strip()):
            return c
    return None


def _beside(page: Any, ours: float | None, c: Any, metric: str, digits: int, agreement: Any, where: str) -> str:
    """The published value under ours. Ours uses the correct formula: where the study's formula gave
    another number (a ``correct`` value is recorded), ours is judged against the corrected one and the
    published one is said in the hover note."""
    tol = c.tolerance if c.tolerance is not None else TOLERANCES["payoff" if "payoff" in metric else "win_rate"]
    if "correct" in c.more and c.more["correct"] != c.value:
        note = f"published {c.value:.{digits}f} by the study's own formula; corrected {c.more['correct']:.{digits}f}"
        note += f": {c.note}" if c.note else ""
        return page.published_mark(ours, c.more["correct"], tol, digits, note, agreement, where, label="pub corr.")
    return page.published_mark(ours, c.value, tol, digits, c.note, agreement, where)


def scorecard(ctx: Any) -> Any:
    """Per scenario the win-rate and payoff matrices (rows: player 1, columns: player 2), each cell with
    the published value beside it where a published table has that scenario and pair."""
    from .. import page
    from .. import published as pub

    rows = _rows(ctx)
    if not rows:
        return None
    table = pair_table(rows)
    board = pub.table(PUBLISHED)
    agreement = page.Agreement()
    parts = []
    found = study_factors(ctx.frames) if ctx.frames is not None else []
    for sc, where in parts_of(rows, found):  # a [grid] cell: its own tables, over its games only
        mine = [r for r in table if r["scenario"] == sc and r["cell"] == where]
        p1s = sorted({r["p1_model"] for r in mine}, key=lambda m: -max(
            (r["p1_win_rate"] or 0) for r in mine if r["p1_model"] == m))
        p2s = sorted({r["p2_model"] for r in mine})
        at = {(r["p1_model"], r["p2_model"]): r for r in mine}
        for kind, keys, digits in (("win rate", ("p1_win_rate", "p2_win_rate"), 2),
                                   ("payoff", ("p1_payoff", "p2_payoff"), 1)):
            body = []
            for a in p1s:
                line = [page.esc(a)]
                for b in p2s:
                    r = at.get((a, b))
                    if r is None:
                        line.append("<span class='na'>-</span>")
                        continue
                    vals = [r[k] for k in keys]
                    cell = ("<b>" + " / ".join(page.number(v, digits) for v in vals)
                            + f"</b><small>n={r['games']}</small>")
                    if board is not None and not where:  # a published number is for the default setting
                        for k, v in zip(keys, vals):
                            c = _published_cell(board, sc, a, b, k)
                            if c is not None:
                                cell += _beside(page, v, c, k, digits, agreement, f"{_title(sc)} {a} vs {b} {k}")
                    line.append(cell)
                body.append(line)
            caption = f"{page.esc(part_title(sc, where))}: {kind} P1 / P2 ({sum(r['games'] for r in mine)} games)"
            parts.append(page.grid(["P1 (RED) \\ P2 (BLUE)", *p2s], body, caption))
    intro = ("Rows: player 1 (RED, moves first); columns: player 2 (BLUE). Win rate: a player wins a game when "
             "its payoff change is larger than the opponent's (the correct formula); payoff: mean change per "
             "game. Strongest player 1 first.")
    if board is not None and agreement.compared:
        intro += (f" <span class='pub'>pub</span>: {page.esc(board.table)}, {page.esc(board.source)}; &#10003; "
                  "agrees to the printed decimals, else the gap ours &minus; published; <i>pub corr.</i>: the "
                  "published number recomputed with the correct formula (hover for the published one); * a note.")
        per_pair = published.load(PUBLISHED).get("source", {}).get("games_per_pair")
        fewest = min(r["games"] for r in table)
        if isinstance(per_pair, int) and fewest < per_pair:
            intro += (f" The published cells are over {per_pair} games per pair, some here over as few as {fewest}:"
                      " such cells need not agree.")
    dirs = {str(d) for d in ctx.run_dirs if _game_of(Path(d), GAMES) is not None}
    return page.Card(FAMILY, "NegotiationArena: who wins, who gains", "<div class='cards'>" + "".join(parts)
                     + "</div>", intro, len(dirs), agreement.verdict(2))


def section(ctx: Any) -> Any:
    """The anchoring and acceptance figure; bad counter-offers and anchoring numbers per scenario."""
    from .. import page

    rows = _rows(ctx)
    if not rows:
        return None
    factors = study_factors(ctx.frames) if ctx.frames is not None else []
    found = report_section(ctx.run_dirs, ctx.figdir, rows=rows, found=factors)
    assert found is not None
    parts = []
    for sc in found["scenarios"]:
        bad, a = sc["bad_counter_offers"], sc["anchoring"]
        bits = [f"{sc['games']} games"]
        if a["n"]:
            rho = "-" if a["spearman"] is None else f"{a['spearman']:.2f}"
            bits.append(f"anchoring over {a['n']} agreed games: Spearman {rho}")
        if bad["n"]:
            bits.append(f"bad counter-offers {bad['rate']:.1%} of {bad['n']} games (SE {bad['se']:.1%})")
        parts.append(f"<li><b>{page.esc(sc['title'])}</b>: {page.esc('; '.join(bits))}</li>")
    return page.Section(FAMILY, "NegotiationArena", found["figures"], found.get("skipped", []),
                        "<ul>" + "".join(parts) + "</ul>")
