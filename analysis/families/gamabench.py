"""GAMA-Bench scores from run directories: the leaderboard table (``gamabench_scores.csv``) and the report's
GAMA-Bench section. Runs played here and runs imported from the reference's released results
(``econarena import gamabench``) are read alike: each complete run record carries the game's own 0-100
``score`` and its ``round_log``.

Definitions (those of the reference's ``board.py`` / ``scoring.ipynb``):

- Only games that declare ``family = "gamabench"`` and a score take part. A run's column is the game's
  name, or ``name[key=value]`` when its parameters match a later (unscored) entry of
  ``GameInfo.reference`` such as the explicit bar; only the first (leaderboard) setting counts for Overall.
- A ``[grid]`` cell is part of a label's identity: where the directory has a grid, each label's runs are kept
  apart per cell (``label [cell]``, the summary's name), so every number below is over the cell's runs only
  and the CSV gains a ``cell`` column (empty without a grid); nothing pools the cells.
- Cell (label x column): the mean of the scores of the complete runs the label played in (a run scores
  the whole table, so a run with several labels counts once for each); ``std`` is the sample standard
  deviation (ddof = 1) over those runs, empty with one run.
- Overall: the mean of the label's leaderboard cells, written only when the label has a cell for EVERY
  registered GAMA-Bench game (the leaderboard's eight). Its ``std`` is ddof = 1 over the per-run overall
  means: run k's mean over the games of the runs with the same (session, run) index (the reference's
  ``_v1_k`` files), using only indices present in every game; ``runs`` counts those indices.
"""

from __future__ import annotations

import io
import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...formats.csvcells import csv_text
from ...formats.files import open_regular
from ...formats.numbers import finite
from ...formats.rundir import RUNS, game_name
from ...games import GAMES
from ...games.base import Game
from ..cells import cell_of, grid_of
from ..scan import Base, Dir, key_of

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

FAMILY = "gamabench"
OVERALL = "overall"
CSV_COLUMNS = ("model", "game", "score", "std", "runs")
CELL_COLUMNS = ("model", "cell", "game", "score", "std", "runs")  # a study with a [grid]


def row_name(label: str, cell: str) -> str:
    """A row's identity: the label, with its ``[grid]`` cell as the summary names it (``label [cell]``)."""
    return f"{label} [{cell}]" if cell else label


def leaderboard_games(games: Mapping[str, Game] | None = None) -> list[str]:
    """The scored GAMA-Bench games, in registry order: Overall needs a cell for each."""
    return [name for name, g in (games or GAMES).items() if g.info.family == FAMILY and g.info.score]


def score_column(game: Game, params: Mapping[str, Any]) -> tuple[str, bool]:
    """(column, counts for Overall) of a run of ``game`` with these parameters."""
    ref = game.info.reference
    for i, (_folder, over) in enumerate(ref):
        if all(params.get(k) == v for k, v in over.items()):
            if i == 0:
                return game.name, True
            return f"{game.name}[{','.join(f'{k}={v}' for k, v in over.items())}]", False
    if ref:  # none of the declared settings: name the keys that differ from the leaderboard's
        over = ref[0][1]
        return f"{game.name}[{','.join(f'{k}={params.get(k)}' for k in over)}]", False
    return game.name, True


@dataclass(frozen=True)
class RunScore:
    label: str
    column: str
    leaderboard: bool
    session: int
    run: int
    score: float
    run_dir: str
    cell: str = ""  # the [grid] cell of the run's table ("" without a grid)


@dataclass
class Collected:
    """What the table and the report need, read once from the run directories."""

    scores: list[RunScore] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)  # column -> readable name
    curve_keys: dict[str, str] = field(default_factory=dict)  # column -> events key plotted per round
    curves: dict[str, dict[str, dict[int, list[float]]]] = field(default_factory=dict)  # column -> label -> round
    dirs: list[str] = field(default_factory=list)


def _game_of(run_dir: Path, games: Mapping[str, Game]) -> Game | None:
    name = game_name(run_dir)
    game = games.get(name) if name is not None else None
    return game if game is not None and game.info.family == FAMILY and game.info.score else None




class Collector(Base):
    """The scan's consumer for :func:`collect`: per run of a scored GAMA-Bench game its score and round
    curve, kept per directory and taken in (lineup, session, run) order when the directory ends."""

    def __init__(self, games: Mapping[str, Game] | None = None) -> None:
        self.games = games or GAMES
        self.out = Collected()

    def begin(self, d: Dir) -> bool:
        game = self.games.get(d.game_name)
        if game is None or game.info.family != FAMILY or not game.info.score:
            return False
        self.game = game
        self.items: list[tuple[Any, ...]] = []  # per scored run: its key first, then what end() reads
        return True

    def run(self, d: Dir, number: int, r: dict[str, Any]) -> None:
        if not r.get("complete", True):
            return
        game = self.game
        params = r["params"] if isinstance(r.get("params"), dict) else {}
        column, lead = score_column(game, params)
        labels = list(dict.fromkeys(str(x) for x in r.get("labels") or []))
        curve = []
        key = game.info.round_curve
        if key and isinstance(r.get("round_log"), list):
            for k, rnd in enumerate(r["round_log"]):
                events = rnd.get("events") if isinstance(rnd, dict) else None
                value = finite(events.get(key)) if isinstance(events, dict) else None
                if value is not None:
                    curve.append((rnd.get("round", k) if isinstance(rnd.get("round", k), int) else k, value))
        self.items.append((key_of(r), column, lead, labels, finite(r.get("score")), key, curve,
                           bool(key and isinstance(r.get("round_log"), list))))

    # ------------------------------------------------------ the columnar copy (analysis/columnar.py)

    copy_name, copy_version = "gamabench", "1"

    def save(self, d: Dir, copy: Any) -> None:
        """Each run's score and round curve as read (a few numbers a run), as JSON text per run."""
        import orjson
        import pyarrow as pa

        try:
            texts = [orjson.dumps(item).decode("utf-8") for item in self.items]
        except (TypeError, ValueError):
            return
        copy.put(self.copy_name, self.copy_version, {"runs": pa.table({"item": pa.array(texts, pa.string())})}, {})

    def restore(self, d: Dir, copy: Any) -> None:
        import orjson

        self.items = []
        for text in copy.table(self.copy_name, "runs").column("item").to_pylist():
            key, column, lead, labels, score, curve_key, curve, logged = orjson.loads(text)
            self.items.append((tuple(key), column, lead, labels, score, curve_key, [tuple(p) for p in curve], logged))
        self.end(d)

    def end(self, d: Dir) -> None:
        out, used = self.out, False
        grid = grid_of(d)
        for (lineup, session, run), column, lead, labels, score, key, curve, logged in sorted(
                self.items, key=lambda x: x[0]):
            out.titles.setdefault(column, self.game.info.title + column[len(self.game.name):])
            cell = cell_of(lineup, grid)
            if score is not None:
                used = True
                out.scores += [RunScore(lab, column, lead, session, run, score, str(d.path), cell) for lab in labels]
            if not logged:
                continue
            out.curve_keys[column] = key
            for index, value in curve:
                for lab in labels:
                    out.curves.setdefault(column, {}).setdefault(row_name(lab, cell), {}).setdefault(
                        index, []).append(value)
        if used:
            out.dirs.append(str(d.path))
        self.items = []


def collect(run_dirs: Iterable[str | Path], games: Mapping[str, Game] | None = None) -> Collected:
    """Per-run scores and per-round curves of the GAMA-Bench games among ``run_dirs`` (others ignored)."""
    from ..scan import scan

    c = Collector(games)
    scan([Path(d) for d in run_dirs], [c])
    return c.out


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _std(xs: Sequence[float]) -> float | None:
    """Sample standard deviation (ddof = 1), as pandas' ``std`` in the reference's notebook."""
    if len(xs) < 2:
        return None
    m = _mean(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def score_table(scores: Sequence[RunScore], games: Mapping[str, Game] | None = None) -> list[dict[str, Any]]:
    """Rows ``model, game, score, std, runs``: each label (and [grid] cell) x column, then its Overall (see
    module doc). ``model`` is the row's identity (:func:`row_name`); ``label`` and ``cell`` its parts."""
    board = leaderboard_games(games)
    cells: dict[str, dict[str, list[RunScore]]] = defaultdict(lambda: defaultdict(list))
    parts: dict[str, tuple[str, str]] = {}
    for s in scores:
        name = row_name(s.label, s.cell)
        parts.setdefault(name, (s.label, s.cell))
        cells[name][s.column].append(s)
    others = sorted({s.column for s in scores if s.column not in board})
    rows = []
    for label in sorted(cells):
        who = {"label": parts[label][0], "cell": parts[label][1]}
        for column in [c for c in board if c in cells[label]] + [c for c in others if c in cells[label]]:
            xs = [s.score for s in cells[label][column]]
            rows.append({"model": label, "game": column, "score": _mean(xs), "std": _std(xs), "runs": len(xs),
                         **who})
        if board and all(c in cells[label] for c in board):
            by_run: list[dict[tuple[int, int], list[float]]] = []
            for c in board:
                per: dict[tuple[int, int], list[float]] = defaultdict(list)
                for s in cells[label][c]:
                    per[(s.session, s.run)].append(s.score)
                by_run.append(per)
            common = set.intersection(*(set(p) for p in by_run))
            run_means = [_mean([_mean(p[k]) for p in by_run]) for k in sorted(common)]
            overall = _mean([_mean([s.score for s in cells[label][c]]) for c in board])
            rows.append({"model": label, "game": OVERALL, "score": overall, "std": _std(run_means),
                         "runs": len(run_means), **who})
    return rows


def gridded(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any row belongs to a [grid] cell (then tables show the cell beside the label)."""
    return any(r.get("cell") for r in rows)


def scores_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The CSV: one row per label, cell and column; with a grid ``model`` is the label and ``cell`` the cell."""
    if gridded(rows):
        return csv_text(CELL_COLUMNS, ([r.get("label", r["model"]), r.get("cell", ""),
                                        *("" if r[k] is None else r[k] for k in CELL_COLUMNS[2:])] for r in rows))
    return csv_text(CSV_COLUMNS, (["" if r[k] is None else r[k] for k in CSV_COLUMNS] for r in rows))


def _cell(r: Mapping[str, Any] | None, with_std: bool) -> str:
    if r is None:
        return "-"
    text = f"{r['score']:.1f}"
    return text + (f" ± {r['std']:.1f}" if with_std and r["std"] is not None else "")


def pivot(rows: Sequence[Mapping[str, Any]], games: Mapping[str, Game] | None = None
          ) -> tuple[list[str], list[str], dict[tuple[str, str], Mapping[str, Any]]]:
    """(labels, columns, cells): labels with an Overall first (best first), then the others by name."""
    board = leaderboard_games(games)
    cells = {(r["model"], r["game"]): r for r in rows}
    present = {r["game"] for r in rows}
    columns = ([OVERALL] if OVERALL in present else []) + [c for c in board if c in present] + sorted(
        c for c in present if c != OVERALL and c not in board)
    labels = sorted({r["model"] for r in rows},
                    key=lambda lab: (cells.get((lab, OVERALL)) is None,
                                     -(cells[(lab, OVERALL)]["score"] if (lab, OVERALL) in cells else 0), lab))
    return labels, columns, cells


def leaderboard_cells(rows: Sequence[Mapping[str, Any]], games: Mapping[str, Game] | None = None
                      ) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the leaderboard: one row per label, 1 decimal; Overall ± std."""
    labels, columns, cells = pivot(rows, games)
    head = ["model", *columns]
    return head, [[lab, *(_cell(cells.get((lab, c)), c == OVERALL) for c in columns)] for lab in labels]


def format_leaderboard(rows: Sequence[Mapping[str, Any]], games: Mapping[str, Game] | None = None) -> str:
    """The table as the reference's leaderboard prints it: one row per label, 1 decimal; Overall ± std."""
    head, body = leaderboard_cells(rows, games)
    widths = [max(len(x) for x in col) for col in zip(head, *body)]

    def line(cs: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cs, widths)))

    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(b) for b in body)])


# ----------------------------------------------------------------------------------------------- report

MAX_CHART_LABELS = 16
SCORES_TITLE = "GAMA-Bench scores per label and game"
ROUNDS_TITLE = "GAMA-Bench round by round"


def _chart_labels(labels: list[str]) -> tuple[list[str], int]:
    return labels[:MAX_CHART_LABELS], max(0, len(labels) - MAX_CHART_LABELS)


def report_section(run_dirs: Sequence[str | Path], figdir: Path, out: Path,
                   collected: tuple[Collected, list[dict[str, Any]]] | None = None
                   ) -> tuple[list[Any], list[tuple[str, str]], Any, Path] | None:
    """The GAMA-Bench section's figures, notes, table and CSV; None when no such runs are present.

    Returns (figures, skipped, table as a DataFrame of "mean ± std (n)" cells, CSV path).
    """
    import pandas as pd

    from .. import figures as F

    data, rows = collected if collected is not None else (collect(run_dirs), None)
    if not data.scores:
        return None
    rows = rows if rows is not None else score_table(data.scores)
    csv_path = out / "gamabench_scores.csv"
    csv_path.write_text(scores_csv(rows), encoding="utf-8")
    labels, columns, cells = pivot(rows)
    titles = {**data.titles, OVERALL: "Overall"}
    table = pd.DataFrame(
        [[(f"{_cell(cells[(lab, c)], True)} (n={cells[(lab, c)]['runs']})" if (lab, c) in cells else "-")
          for c in columns] for lab in labels],
        index=pd.Index(labels, name="label"), columns=[titles.get(c, c) for c in columns])
    figs, skipped = [], []
    for fn, title in ((_figure_scores, SCORES_TITLE), (_figure_rounds, ROUNDS_TITLE)):
        try:
            figs.append(fn(data, rows, figdir, F))
        except F.Skip as exc:
            skipped.append((title, str(exc)))
    return figs, skipped, table, csv_path


def _figure_scores(data: Collected, rows: list[dict[str, Any]], figdir: Path, F: Any) -> Any:
    """Grouped bars: labels across the games (and Overall), whiskers the std over runs."""
    import pandas as pd
    from matplotlib.patches import Patch

    labels, columns, cells = pivot(rows)
    shown, left_out = _chart_labels(labels)
    titles = {**data.titles, OVERALL: "Overall"}
    est = pd.DataFrame([{"column": titles.get(c, c), "label": lab, "value": cells[(lab, c)]["score"],
                         "low": cells[(lab, c)]["score"] - (cells[(lab, c)]["std"] or 0.0),
                         "high": cells[(lab, c)]["score"] + (cells[(lab, c)]["std"] or 0.0)}
                        for lab in shown for c in columns if (lab, c) in cells])
    xs = [titles.get(c, c) for c in columns]
    colors = dict(zip(shown, F._palette(len(shown))))
    fig, axes = F._subplots(1, 1, F._fig_size(len(xs), len(shown), 1))
    ax = axes[0, 0]
    F._grouped_bars(ax, est, xs, shown, colors, x="column", hue="label")
    ax.set_ylim(0, 105)
    ax.set_ylabel("score (0-100, higher is more rational)")
    ax.set_xlabel("game")
    ax.set_title("GAMA-Bench: score per game" + (" (Overall = mean of the games)" if OVERALL in columns else ""))
    F._legend_axis(ax, [Patch(color=colors[lab], label=lab) for lab in shown], "label (mean ± std over runs)")
    png, svg = F._save(fig, figdir, "gama_scores", data.dirs)
    note = f" {left_out} more label(s) are in the table only." if left_out else ""
    return F.Figure("gama_scores", SCORES_TITLE,
                    "Bars: mean per-run score (0-100) over the complete runs of each label, whiskers: standard "
                    "deviation over runs (ddof = 1). Overall: the mean of the eight leaderboard games, shown "
                    "only for labels with all of them; its whisker is the std of the per-run overall means "
                    "(the paper's ±). Columns with [key=value] are unscored modes." + note,
                    png, svg, data.dirs)


def _figure_rounds(data: Collected, rows: list[dict[str, Any]], figdir: Path, F: Any) -> Any:
    """Per game, its declared round quantity (``info.round_curve``) per round, one line per label."""
    from matplotlib.lines import Line2D

    columns = [c for c in pivot(rows)[1] if c in data.curves]
    if not columns:
        raise F.Skip("no GAMA-Bench game here declares a per-round curve with values in its round log.")
    ordered = pivot(rows)[0]
    labels = [lab for lab in ordered if any(lab in data.curves[c] for c in columns)]
    shown, left_out = _chart_labels(labels)
    colors = dict(zip(shown, F._palette(len(shown))))
    ncol = 2 if len(columns) > 1 else 1
    nrow = math.ceil(len(columns) / ncol)
    fig, axes = F._subplots(nrow, ncol, (5.2 * ncol + 2.4, 3.2 * nrow + 0.4))
    for ax in axes.flat[len(columns):]:
        ax.set_visible(False)
    for ax, c in zip(axes.flat, columns):
        for lab in shown:
            per = data.curves[c].get(lab)
            if not per:
                continue
            xs = sorted(per)
            ax.plot([x + 1 for x in xs], [_mean(per[x]) for x in xs], marker="o", ms=2.5, lw=1.3,
                    color=colors[lab], label=lab)
        ax.set_title(data.titles.get(c, c))
        ax.set_xlabel("round")
        ax.set_ylabel(f"{data.curve_keys[c].replace('_', ' ')} (per round)")
        ax.xaxis.set_major_locator(F.MaxNLocator(integer=True))
    F._legend_right(fig, [Line2D([], [], color=colors[lab], marker="o", ms=3, label=lab) for lab in shown],
                    "label (mean over runs)")
    png, svg = F._save(fig, figdir, "gama_rounds", data.dirs)
    note = f" {left_out} more label(s) are left out of the chart." if left_out else ""
    keys = ", ".join(f"{data.titles.get(c, c)}: {data.curve_keys[c]}" for c in columns)
    return F.Figure("gama_rounds", ROUNDS_TITLE,
                    f"Per game, the round quantity it declares ({keys}), averaged per round over every run and "
                    "session of each label; labels that sat at one table share its values (and their lines)." + note,
                    png, svg, data.dirs)


# ---------------------------------------------------------------------------------- scorecard and section

PUBLISHED = "gamabench_leaderboard"  # analysis/published/<this>.toml
TOLERANCE = 0.05  # the board rounds to one decimal: ours agrees when it rounds to the same number


def collector() -> Collector:
    """What the report's scan feeds for this family (``ctx.memo(FAMILY)`` holds it afterwards)."""
    return Collector()


def _collected(ctx: Any) -> tuple[Collected, list[dict[str, Any]]]:
    def make() -> Collector:
        from ..scan import scan

        c = Collector()
        scan([Path(d) for d in ctx.run_dirs], [c])
        return c
    c = ctx.memo(FAMILY, make)  # the report's scan provided it
    return ctx.memo(f"{FAMILY}/table", lambda: (c.out, score_table(c.out.scores)))


def _imported(run_dirs: Sequence[str]) -> set[str]:
    """Directories whose runs were imported from the reference's released results (not played here)."""
    out = set()
    for d in run_dirs:
        for line in io.TextIOWrapper(open_regular(Path(d) / RUNS), encoding="utf-8"):
            if '"imported"' in line:
                out.add(d)
            break
    return out


def scorecard(ctx: Any) -> Any:
    """Per label Overall and each game's score ± std (over runs), best Overall first; beside each cell the
    published leaderboard's value where the label is a published model."""
    from .. import page
    from .. import published as pub

    data, rows = _collected(ctx)
    if not rows:
        return None
    board = pub.table(PUBLISHED)
    labels, columns, cells = pivot(rows)
    columns = [c for c in columns if c == OVERALL or c in leaderboard_games()]
    titles = {**data.titles, OVERALL: "Overall"}
    short = {c: titles.get(c, c) for c in columns}
    imported_dirs = _imported(data.dirs)
    imported_labels = {row_name(s.label, s.cell) for s in data.scores if s.run_dir in imported_dirs}
    agreement = page.Agreement()
    split = gridded(rows)  # a [grid]: the cell beside the label, each row over its cell's runs
    parts = {r["model"]: (str(r.get("label", r["model"])), str(r.get("cell", ""))) for r in rows}
    body = []
    for lab in labels:
        plain, cell = parts.get(lab, (lab, ""))
        # a published model's number is for its default setting: a grid cell is compared with nothing
        name = board.published_name("model", lab) if board is not None and not cell else None
        sub = [page.esc(name)] if name and name != lab else []
        if lab in imported_labels:
            sub.append("<span class='tag'>imported</span>")
        who = page.esc(plain) + (f"<span class='sub'>{' &middot; '.join(sub)}</span>" if sub else "")
        row = [who, *([page.esc(cell)] if split else [])]
        for c in columns:
            r = cells.get((lab, c))
            cell = page.spread_cell(r["score"] if r else None, r["std"] if r else None)
            found = board.lookup(model=lab, game=c) if board is not None and name else None
            if found is not None:
                cell += page.published_mark(r["score"] if r else None, found.value, TOLERANCE, note=found.note,
                                            agreement=agreement, where=f"{lab}, {short[c]}")
            row.append(cell)
        body.append(row)
    head = ["model", *(["cell"] if split else []), *(short[c] for c in columns)]
    intro = ("0-100 per game (higher is more rational), mean &plusmn; sd over runs; Overall: the mean of the eight "
             "games, &plusmn; over per-run means. Best Overall first.")
    if split:
        intro += " A row per label and [grid] cell, each over the cell's runs only."
    if board is not None and agreement.compared:
        intro += (f" <span class='pub'>pub</span>: {page.esc(board.table)}, {page.esc(board.source)}; &#10003; "
                  "agrees to the published decimal, else the gap ours &minus; published; * a note on that cell "
                  "(hover).")
    other = sorted({c for c in pivot(rows)[1] if c not in columns})
    if other:
        intro += f" Unscored modes ({page.esc(', '.join(other))}) are in the detail below."
    return page.Card(FAMILY, "GAMA-Bench leaderboard", page.grid(head, body, numeric_from=2 if split else 1),
                     intro, len(data.dirs), agreement.verdict())


def section(ctx: Any) -> Any:
    """The figures (scores across games, round curves), the full table with unscored modes, the CSV."""
    from .. import page

    data, rows = _collected(ctx)
    if not rows:
        return None
    found = report_section(ctx.run_dirs, ctx.figdir, ctx.out, collected=(data, rows))
    assert found is not None
    figs, skipped, table, csv_path = found
    detail = ("<p>Every label and column, mean &plusmn; sd (n runs), unscored modes included. Also in <code>"
              + page.esc(csv_path.name) + "</code>.</p>" + page.table_html(table))
    return page.Section(FAMILY, "GAMA-Bench", figs, skipped, detail, [csv_path])
