"""EconArena's scorecard: per game, player and setting the paper's four numbers with their intervals.

The paper's figures (``analysis/figures.py``) draw the same metrics in detail; this card is the answer a
reader looks for first: how close to the Nash-equilibrium payoff each model gets (the headline, best
first), how far its play is from the equilibrium, how often it wins and how often it breaks the rules.
It covers the experiments no other family module analyses (the report passes them as ``ctx.core``).
"""

from __future__ import annotations

from typing import Any

FAMILY = "econarena"
CARD_METRICS = ("payoff_ratio", "mean_deviation", "win_rate", "rule_break_rate_pct")
HEAD = ("payoff / NE payoff", "deviation from NE", "win rate", "rule breaks %")


def _setting(row: Any) -> str:
    bits = [str(row["environment"])]
    if row["history"] != "none":
        bits.append(f"history: {row['history']}")
    if row["prompt"] != "default":
        bits.append(str(row["prompt"]).upper() if row["prompt"] == "cot" else str(row["prompt"]))
    return ", ".join(bits)


def scorecard(ctx: Any) -> Any:
    """One table per game: a row per label and setting (environment, history, prompt), sorted by the
    payoff ratio; intervals are 95% session bootstraps, equilibrium opponents left out."""
    from .. import page
    from ..cells import cell_rank, study_factors
    from ..figures import game_title
    from ..stats import Estimate
    from ..tables import metric_table

    frames = ctx.core
    if frames is None or frames.players.empty:
        return None
    # a [grid] cell is part of each row's identity: a row per label, setting and cell, its sessions counted
    # and bootstrapped within the cell (the cell column appears only where a game has a grid)
    by: tuple[str, ...] = ("game", "environment", "history", "prompt", "label", "cell")
    if "cell" not in frames.players.columns:
        by = by[:-1]
    table = metric_table(frames, CARD_METRICS, by, n_boot=ctx.n_boot, seed=ctx.seed)
    if table.empty:
        return None
    found = study_factors(ctx.frames)
    parts = []
    for game, g in table.groupby("game", sort=True):
        rows: dict[tuple[str, str, str], dict[str, Estimate]] = {}
        for _, r in g.iterrows():
            rows.setdefault((str(r["label"]), _setting(r), str(r.get("cell") or "")), {})[r["metric"]] = Estimate(
                r["value"], r["ci_low"], r["ci_high"], int(r["n"]), int(r["sessions"]))

        def headline(key: tuple[str, str, str], rows: dict[tuple[str, str, str], dict[str, Estimate]] = rows
                     ) -> tuple[Any, ...]:
            e = rows[key].get("payoff_ratio")
            v = e.value if e is not None and e.value == e.value else float("-inf")
            return (-v, key[1], key[0], cell_rank(key[2], found))

        gridded = any(key[2] for key in rows)
        body = []
        for key in sorted(rows, key=headline):
            cells = rows[key]
            body.append([page.esc(key[0]), page.esc(key[1]), *([page.esc(key[2])] if gridded else []),
                         *(page.estimate_cell(cells[m], 1 if m == "rule_break_rate_pct" else 2)
                           if m in cells else "<span class='na'>-</span>" for m in CARD_METRICS)])
        head = ("model", "setting", *(("cell",) if gridded else ()), *HEAD)
        parts.append(page.grid(head, body, page.esc(game_title(str(game))), numeric_from=3 if gridded else 2))
    intro = ("Payoff as a multiple of the Nash-equilibrium payoff (1 = equilibrium; a rule break scores 0), "
             "deviation of play from the equilibrium (0 = equilibrium play), share of runs won, and % of runs "
             "with a rule break; each with its 95% interval (bootstrap over sessions). Best payoff first.")
    return page.Card(FAMILY, "EconArena: payoff, equilibrium play, wins, rule breaks", "".join(parts), intro,
                     frames.experiments["run_dir"].nunique())
