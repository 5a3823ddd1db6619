"""Bench scores from run directories (``econarena bench``, ``econarena leaderboard``): per-game 0-100 scores with
intervals, family subscores, the overall score, cost and score per dollar (``bench.json``), the scorecard page
and the leaderboard of many results.

Everything is computed from the run directories and the suite file kept beside them (``suite.toml``), by the
rules the suite declares (``formats/benchsuite.py``): nothing here names a game; what a rule needs (a game's 0-100
score, its scale, its equilibrium) is what the games declare and the Host wrote into each run record.

Intervals (``INTERVAL_METHOD``): Student-t intervals over SESSIONS (one run each: the independent unit). A
game's is its mean +- t(n - 1) x s / sqrt(n); a family's and the overall's combine the games' standard errors
with their weights and the covariance of their sessions of one index (played from one seed, so they may move
together), and their degrees of freedom by Welch-Satterthwaite (rounded down: wider). Every interval
is clipped to 0-100. Why not the percentile bootstrap of v1: with 5 or 10 sessions it is too narrow (it
resamples what it has: its spread is (n - 1) / n of the sample's, and the normal quantile stands for t's);
over 20 replications of the standard tier with a seeded random player, v1's per-game intervals held the
replication mean in 12-19 of 20, these in >= 18 (tests/test_bench_calibration.py). A game with one session
has no interval of its own and adds no spread (said in the page); a tier whose suite says ``intervals =
false`` (the quick smoke tier) prints none. No pandas or scipy: the bench runs on the core install.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..formats.benchsuite import TIERS, GameEntry, Suite
from ..formats.csvcells import csv_text
from ..formats.files import MANIFEST_BYTES, inside, read_text
from ..formats.numbers import finite
from ..formats.prices import cost_usd, price_of
from ..formats.reading import read_errors_as
from ..formats.rundir import RUNS, complete_runs, read_jsonl, write_atomic
from ..games import GAMES
from ..games.text import name_problem
from .findings import bench_findings
from .metrics import summarize

FORMAT = "econarena-bench/1"
BENCH_JSON = "bench.json"
SCORECARD = "scorecard.html"
LEADERBOARD_COLUMNS = ("rank", "tied", "label", "kind", "suite", "suite_sha256", "tier", "econarena", "rules_sha256",
                       "complete", "stopped", "overall", "low", "high", "cost_usd", "spent_usd", "score_per_usd",
                       "calls", "cached", "tokens_in", "tokens_out", "wall_s", "answered_by")


class BenchError(ValueError):
    """Results that cannot be scored or ranked as asked; the message says why (the CLI exits 2)."""


# ------------------------------------------------------------------------------------------- per run

def _seats(rec: Mapping[str, Any], label: str) -> list[int]:
    return [i for i, lab in enumerate(rec.get("labels") or []) if lab == label]





def _broke(rec: Mapping[str, Any], seat: int) -> bool:
    """A rule break in the seat's first attempts (``first_valid``; logs without it: ``valid``)."""
    flags = rec.get("first_valid") or rec.get("valid") or []
    return seat < len(flags) and not flags[seat]


def run_score(g: GameEntry, rec: Mapping[str, Any], seat: int) -> float | None:
    """One player-run's 0-100 score by the game's rule (``formats/benchsuite.py``); None when the rule cannot score
    it (a copies run without a score; nothing to gain: best <= 0; no scale)."""
    if g.score == "game":
        v = finite(rec.get("score"))
        if v is None:  # no reply of the run followed the rules, so the game has nothing to score: 0, as any rule
            # break (unscored, such a run left the family and the overall without a score: never ranked)
            labels = rec.get("labels") or []
            return 0.0 if any(_broke(rec, s) for s in range(len(labels))) else None
        return min(100.0, max(0.0, v))  # a reference formula outside its range (Guess 2/3 with min > 0: 200)
    if _broke(rec, seat):
        return 0.0
    params = rec["params"] if isinstance(rec.get("params"), dict) else {}
    if g.score == "equilibrium_action":
        a = finite((rec.get("actions") or [None] * (seat + 1))[seat])
        ne = rec.get("ne_actions") or []
        star = finite(ne[seat]) if seat < len(ne) else None
        key = GAMES[g.game].info.scale_key if g.game in GAMES else None
        scale = params.get(key) if key else None
        if isinstance(scale, list):
            scale = scale[seat] if seat < len(scale) else None
        scale = finite(scale)
        if a is None:
            return 0.0
        if star is None or scale is None or scale <= 0:
            return None
        return 100.0 * max(0.0, 1.0 - abs(a - star) / scale)
    u = finite((rec.get("payoffs") or [None] * (seat + 1))[seat])
    if u is None:
        return 0.0
    if g.score == "payoff_sign":
        return 50.0 * (1.0 + (u > 0) - (u < 0))
    assert g.best is not None
    ne = rec.get("ne_payoffs") or []
    scope = {**params, **({"ne_payoff": ne[seat]} if seat < len(ne) and ne[seat] is not None else {})}
    try:
        best = g.best.value(scope)
    except KeyError as exc:
        raise BenchError(f"{g.id}: best = {g.best.text!r}: no {exc.args[0]!r} in the run's parameters "
                         f"({', '.join(sorted(scope))})") from None
    except ValueError as exc:
        raise BenchError(f"{g.id}: best = {g.best.text!r}: {exc}") from None
    if best <= 0:
        return None
    return 100.0 * min(1.0, max(0.0, u / best))


# ------------------------------------------------------------------------------------------- per game

@dataclass
class GameScore:
    id: str
    family: str
    game: str
    rule: str
    score: float | None
    low: float | None
    high: float | None
    sessions: int  # sessions scored
    planned: int  # sessions the tier plays
    runs_complete: int
    unscored: int  # complete runs the rule could not score (best <= 0)
    rule_break_pct: float | None
    deal_rate: float | None
    per_session: list[float] = field(default_factory=list, repr=False)
    session_ids: list[int] = field(default_factory=list, repr=False)  # the session of each per_session value


def score_game(g: GameEntry, run_dir: Path, label: str, planned: int) -> GameScore:
    """The game's score: the mean over sessions of the per-session mean of the model's run scores."""
    runs = complete_runs(read_jsonl(run_dir / RUNS, kind="runs")) if (run_dir / RUNS).is_file() else {}
    by_session: dict[int, list[float]] = {}
    unscored = broke = player_runs = 0
    deals: list[float] = []
    for (_lineup, session, _run), rec in sorted(runs.items()):
        seats = _seats(rec, label)
        if not seats:
            continue
        values = []
        for seat in (seats[:1] if g.score == "game" else seats):  # a whole-table score counts once per run
            v = run_score(g, rec, seat)
            if v is None:
                unscored += 1
            else:
                values.append(v)
        for seat in seats:
            player_runs += 1
            broke += _broke(rec, seat)
        if values:
            by_session.setdefault(session, []).extend(values)
        if g.deal:
            d = (rec.get("metrics") or {}).get(g.deal)
            if isinstance(d, (bool, int, float)) and not (isinstance(d, float) and math.isnan(d)):
                deals.append(float(d))
    per = [math.fsum(v) / len(v) for _, v in sorted(by_session.items())]
    ids = sorted(by_session)
    score = math.fsum(per) / len(per) if per else None
    return GameScore(g.id, g.family, g.game, g.score, score, None, None, len(per), planned, len(runs), unscored,
                     100.0 * broke / player_runs if player_runs else None,
                     math.fsum(deals) / len(deals) if deals else None, per, ids)


# -------------------------------------------------------------------------------------- the whole bench

INTERVAL_METHOD = ("Student-t over sessions: a game's mean +- t(n-1) x s/sqrt(n); families and overall combine the "
                   "games' standard errors by their weights with the covariance of sessions of one index (one "
                   "seed), degrees of freedom by Welch-Satterthwaite (rounded down, at most the fewest sessions "
                   "less one); clipped to 0-100")


def t_quantile(level: float, df: int) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom (2.776 for 0.95 and 4):
    bisection on the closed-form P(|T| <= t) for integer df (Abramowitz and Stegun 26.7.3-4)."""
    if df < 1:
        raise ValueError("t needs at least one degree of freedom")
    if df > 1000:  # the normal's, to 4 digits
        from statistics import NormalDist

        return NormalDist().inv_cdf(0.5 + level / 2)

    def inside(t: float) -> float:
        theta = math.atan(t / math.sqrt(df))
        c2, sin = math.cos(theta) ** 2, math.sin(theta)
        if df % 2:  # odd
            term, total = math.cos(theta), 0.0
            if df > 1:
                total = term
                for k in range(3, df - 1, 2):
                    term *= c2 * (k - 1) / k
                    total += term
            return 2 / math.pi * (theta + sin * total)
        term = total = 1.0
        for k in range(2, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        return sin * total

    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if inside(mid) < level else (lo, mid)
    return hi


def _t_interval(point: float, var: float, df: float, level: float) -> tuple[float, float]:
    """point +- t x sqrt(var), clipped to 0-100 (a point interval when nothing varies)."""
    if var <= 0 or not math.isfinite(var):
        return point, point
    half = t_quantile(level, max(1, math.floor(df + 1e-9))) * math.sqrt(var)
    return max(0.0, point - half), min(100.0, point + half)


def _combined(parts: list[tuple[float, GameScore]]) -> tuple[float, float]:
    """(variance, degrees of freedom) of sum(c_g x mean_g) over games (c_g, g). Session k of every game is
    played from the same seed, so games' sessions may move together (a random player's draws do): the
    covariance of two games' means is estimated from their sessions of one index, m of them, as
    m / (n_g n_h) x cov (ddof 1); a sum that comes out below the independent one keeps the independent one.
    Degrees of freedom: Welch-Satterthwaite's over the games, never above the fewest sessions less one."""
    own = {id(g): (float(np.var(g.per_session, ddof=1)) / len(g.per_session) if len(g.per_session) >= 2 else 0.0)
           for _, g in parts}
    independent = math.fsum(c * c * own[id(g)] for c, g in parts)
    cross = 0.0
    for i, (c, g) in enumerate(parts):
        ids_g = dict(zip(g.session_ids or range(len(g.per_session)), g.per_session))
        for c2, h in parts[i + 1:]:
            ids_h = dict(zip(h.session_ids or range(len(h.per_session)), h.per_session))
            common = sorted(set(ids_g) & set(ids_h))
            if len(common) < 2:
                continue
            a = np.asarray([ids_g[k] for k in common])
            b = np.asarray([ids_h[k] for k in common])
            cov = float(np.cov(a, b, ddof=1)[0, 1])
            cross += 2 * c * c2 * cov * len(common) / (len(g.per_session) * len(h.per_session))
    var = max(independent, independent + cross)
    varied = [(c, g) for c, g in parts if own[id(g)] > 0]
    if not varied:
        return var, 1.0
    denom = math.fsum((c * c * own[id(g)]) ** 2 / (len(g.per_session) - 1) for c, g in varied)
    ws = independent * independent / denom if denom > 0 else 1.0
    return var, min(ws, min(len(g.per_session) for _, g in varied) - 1)


def combine(suite: Suite, games: list[GameScore]) -> dict[str, Any]:
    """Family subscores and the overall score, with Student-t intervals (see the module docstring). A family
    is scored when every one of its games has a score; the overall score when every weighted family has."""
    level = suite.level
    for gs in games:
        if gs.score is None or len(gs.per_session) < 2:
            continue
        x = np.asarray(gs.per_session, dtype=float)
        gs.low, gs.high = _t_interval(gs.score, float(np.var(x, ddof=1)) / len(x), len(x) - 1, level)
    subscores: dict[str, Any] = {}
    fam_parts: dict[str, list[tuple[float, GameScore]]] = {}
    for name, fam in suite.families.items():
        mine = [gs for gs in games if gs.family == name]
        scored = [gs for gs in mine if gs.score is not None]
        entry: dict[str, Any] = {"title": fam.title, "weight": fam.weight, "formula": fam.subscore,
                                 "games": len(mine), "games_scored": len(scored), "score": None, "low": None,
                                 "high": None}
        if mine and len(scored) == len(mine):
            entry["score"] = math.fsum(gs.score for gs in scored if gs.score is not None) / len(scored)
            fam_parts[name] = [(1.0 / len(scored), gs) for gs in scored]
            if any(gs.sessions >= 2 for gs in scored):
                entry["low"], entry["high"] = _t_interval(entry["score"], *_combined(fam_parts[name]), level)
        subscores[name] = entry
    weighted = {n: f.weight for n, f in suite.families.items() if f.weight > 0}
    overall: dict[str, Any] = {"score": None, "low": None, "high": None, "level": level, "method": INTERVAL_METHOD}
    if all(subscores[n]["score"] is not None for n in weighted):
        total = math.fsum(weighted.values())
        overall["score"] = math.fsum(subscores[n]["score"] * w for n, w in weighted.items()) / total
        if any(gs.sessions >= 2 for gs in games if gs.score is not None):
            parts = [(w / total * c, g) for n, w in weighted.items() for c, g in fam_parts[n]]
            overall["low"], overall["high"] = _t_interval(overall["score"], *_combined(parts), level)
    return {"subscores": subscores, "overall": overall}


def drop_intervals(games: list[GameScore], combined: dict[str, Any]) -> None:
    """A tier whose intervals are not calibrated (one or two sessions a game) prints none: every bound None."""
    for gs in games:
        gs.low = gs.high = None
    for entry in [*combined["subscores"].values(), combined["overall"]]:
        entry["low"] = entry["high"] = None
    combined["overall"]["method"] = "none: this tier is a smoke test (too few sessions for a calibrated interval)"


def answered_by(run_dirs: Sequence[Path], label: str) -> list[str]:
    """The model names the label's replies came with (what the server says answered: a dated snapshot, the
    bundled model's name), from the decisions logs."""
    from ..formats.rundir import DECISIONS, iter_jsonl

    names: set[str] = set()
    for d in run_dirs:
        if (d / DECISIONS).is_file():
            for rec in iter_jsonl(d / DECISIONS):
                if rec.get("label") == label and isinstance(rec.get("model"), str) and rec.get("agent") != "baseline":
                    names.add(rec["model"])
    return sorted(names)


def usage(run_dirs: Sequence[Path], label: str) -> dict[str, int]:
    """The label's decisions, cached replies and tokens over the complete runs (``summary`` numbers)."""
    out = {"decisions": 0, "cached": 0, "tokens_in": 0, "tokens_out": 0}
    for d in run_dirs:
        if not (d / RUNS).is_file():
            continue
        s = summarize(d)["labels"].get(label)
        if s is None:
            continue
        out["decisions"] += s.get("decisions") or 0
        out["cached"] += s.get("cached_decisions") or 0
        out["tokens_in"] += s.get("tokens_in") or 0
        out["tokens_out"] += s.get("tokens_out") or 0
    return out


def bench_result(suite: Suite, tier: str, model: Mapping[str, Any], run_dirs: Mapping[str, Path], *,
                 settings_digest: str, prices: Mapping[str, tuple[float, float]] | None = None,
                 wall_s: float = 0.0, spent_usd: float | None = None, stopped: str | None = None,
                 comparability: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What ``bench.json`` holds (see the README): scores, intervals, usage, cost, provenance."""
    label = str(model["label"])
    games = [score_game(g, run_dirs[g.id], label, g.sessions[tier]) for g in suite.games]
    combined = combine(suite, games)
    if not suite.intervals.get(tier, True):
        drop_intervals(games, combined)
    use = usage(list(run_dirs.values()), label)
    llm = bool(model.get("llm"))
    price = price_of(prices or {}, label, [str(model["model"])] if model.get("model") else [])
    cost = cost_usd(price, use["tokens_in"], use["tokens_out"]) if (price is not None and llm) else (
        0.0 if not llm else None)
    complete = all(gs.runs_complete >= gs.planned for gs in games) and stopped is None
    overall = combined["overall"]["score"]
    return {
        "format": FORMAT,
        "suite": {"name": suite.name, "version": suite.version, "title": suite.title, "sha256": suite.digest},
        "tier": tier,
        "tier_description": suite.tiers[tier],
        "model": {**model, "answered_by": answered_by(list(run_dirs.values()), label) if llm else []},
        "complete": complete,
        "stopped": stopped if stopped else (None if complete else "unfinished"),
        "overall": combined["overall"],
        "subscores": combined["subscores"],
        "games": [asdict(gs) for gs in games],
        "calls": use["decisions"] if llm else 0,
        "decisions": use["decisions"],
        "cached": use["cached"],
        "tokens_in": use["tokens_in"],
        "tokens_out": use["tokens_out"],
        "cost_usd": cost,
        "score_per_usd": (overall / cost if overall is not None and cost else None),
        "spent_usd": spent_usd,
        "wall_s": round(wall_s, 3),
        "settings_digest": settings_digest,
        "comparability": dict(comparability or {}),
        "attainable": attainable(suite),
        "econarena_version": __version__,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def attainable(suite: Suite) -> dict[str, Any]:
    """The best overall a known play reaches and what the overall means (printed wherever it is): 100 only
    when every game's best known play scores 100; the exceptions named."""
    weighted = {n: f.weight for n, f in suite.families.items() if f.weight > 0}
    total = math.fsum(weighted.values())
    known = True
    best = 0.0
    for name, w in weighted.items():
        games = suite.games_of(name)
        if any(g.attainable is None for g in games):
            known = False
        best += w / total * math.fsum(100.0 if g.attainable is None else g.attainable for g in games) / len(games)
    exceptions = {g.id: {"attainable": g.attainable, "note": g.attainable_note} for g in suite.games
                  if g.attainable != 100.0}
    meaning = ("overall = the weighted mean of the family subscores (each the mean of its games' 0-100 scores, 100 "
               "= the best play against the fixed opponents or the game's reference formula at its best). "
               + ("No known play reaches 100 overall: " if exceptions else "")
               + "; ".join(f"{gid} tops out at {'an unknown score' if e['attainable'] is None else e['attainable']} "
                           f"({e['note']})" for gid, e in exceptions.items())
               + (f". The best known overall is {'at most ' if not known else ''}{best:.1f}" if exceptions else "")
               + ". The trivial policies' rows (constant, accept) and random are the floor.")
    return {"overall": round(best, 4), "known": known, "exceptions": exceptions, "meaning": meaning}


def write_bench(out: Path, result: Mapping[str, Any]) -> Path:
    path = out / BENCH_JSON
    write_atomic(path, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return path


def read_bench(path: Path) -> dict[str, Any]:
    """One bench.json; BenchError naming the file when it is not one."""
    with read_errors_as(BenchError, f"{path}: not a readable bench result"):
        data = json.loads(read_text(path, MANIFEST_BYTES))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BenchError(f"{path}: not a bench result (expected \"format\": \"{FORMAT}\")")
    for key in ("suite", "tier", "model", "overall", "subscores", "games", "complete"):
        if key not in data:
            raise BenchError(f"{path}: bench result without '{key}'")
    if (problem := _shape_problem(data)) is not None:
        raise BenchError(f"{path}: not a bench result as econarena writes it: {problem} (edited by hand? run the "
                         "bench command again to write it anew)")
    from .benchcheck import contradiction  # recomputes what the file's own numbers give

    if (problem := contradiction(data, combine, GameScore)) is not None:
        raise BenchError(f"{path}: contradicts itself: {problem}; run the bench command again to write it anew")
    return data


# the largest cost, count or duration a bench result may hold: far beyond any bench played (a full tier is a
# few thousand calls and dollars), far below where sums and ratios of them lose their meaning
AMOUNT_MAX = 1e12


def _shape_problem(data: Mapping[str, Any]) -> str | None:
    """What the leaderboard reads, checked (a hand-edited file may hold a NaN, a score of 1e300 or
    "complete": "false"); None when every value has its type."""
    def score(where: str, x: Any) -> str | None:
        if x is None or (finite(x) is not None and 0.0 <= x <= 100.0):
            return None
        return f"{where}: {x!r} is not a score from 0 to 100 (or null)"

    def amount(where: str, x: Any) -> str | None:
        # at most AMOUNT_MAX: a cost of 1e308 USD was ranked (and its score per dollar, 0, beside it)
        if x is None or (finite(x) is not None and 0 <= x <= AMOUNT_MAX):
            return None
        return f"{where}: {x!r} is not a number from 0 to {AMOUNT_MAX:.0e}"

    def named(where: str, x: Any) -> str | None:  # a label is a row of the terminal, a CSV cell, an HTML cell
        problem = name_problem(x) if isinstance(x, str) else None
        return None if problem is None else f"{where}: {problem}"

    suite, model, overall, subs = data["suite"], data["model"], data["overall"], data["subscores"]
    checks: list[str | None] = [
        None if isinstance(suite, dict) and isinstance(suite.get("version"), str) and isinstance(
            suite.get("sha256", ""), str) else "suite: expected {\"version\": \"...\", \"sha256\": \"...\"}",
        None if data["tier"] in TIERS else f"tier: {data['tier']!r} is not one of {', '.join(TIERS)}",
        None if isinstance(model, dict) and isinstance(model.get("label"), str) and model["label"].strip()
        else "model: expected {\"label\": \"...\"}",
        named("model.label", model.get("label")) if isinstance(model, dict) else None,
        named("model.model", model.get("model")) if isinstance(model, dict) else None,
        named("model.played_by.model", model["played_by"].get("model"))
        if isinstance(model, dict) and isinstance(model.get("played_by"), dict) else None,
        None if isinstance(data["complete"], bool) else f"complete: {data['complete']!r} is not true or false",
        None if isinstance(data["games"], list) else "games: expected a list",
    ]
    if not isinstance(overall, dict):
        checks.append("overall: expected {\"score\": ..., \"low\": ..., \"high\": ...}")
    else:
        checks += [score(f"overall.{k}", overall.get(k)) for k in ("score", "low", "high")]
    if not isinstance(subs, dict) or not all(isinstance(v, dict) for v in subs.values()):
        checks.append("subscores: expected {family: {\"score\": ...}}")
    else:
        checks += [score(f"subscores.{k}.score", v.get("score")) for k, v in subs.items()]
    checks += [amount(k, data.get(k)) for k in ("cost_usd", "score_per_usd", "calls", "tokens_in", "tokens_out",
                                                "wall_s")]
    return next((c for c in checks if c is not None), None)


# ----------------------------------------------------------------------------------------- leaderboard

def find_results(paths: Sequence[str | Path]) -> list[Path]:
    """bench.json files: each argument is one, or a folder searched (three levels deep) for them."""
    found: list[Path] = []
    for arg in paths:
        p = Path(arg)
        if p.is_file():
            found.append(p)
            continue
        if not p.is_dir():
            raise BenchError(f"{arg}: no such file or directory")
        here = sorted({*p.glob(BENCH_JSON), *p.glob(f"*/{BENCH_JSON}"), *p.glob(f"*/*/{BENCH_JSON}"),
                       *p.glob(f"*/*/*/{BENCH_JSON}")})
        here = [q for q in here if inside(q, p)]  # never through a link out of the folder, nor into /proc
        if not here:
            raise BenchError(f"{arg}: holds no {BENCH_JSON} (written by econarena bench)")
        found += here
    return list(dict.fromkeys(q.resolve() for q in found))


# suite versions whose results never rank beside a later one's, and why (said when they are mixed)
RETIRED = {"v1": "suite v1's fixed opponents let always-accept score 100 in three seats and it claimed GAMA-Bench "
                 "comparability it did not have; v2 changed both (and pins temperature, intervals and the rules' "
                 "digest): play the model again with the current suite"}


def comparability_key(r: Mapping[str, Any]) -> tuple[str, str, str, str, str]:
    """What must match for two results to rank together: suite version and file, tier, econarena version and
    the digest of the games' rules and prompt templates ("-" where a result predates recording it)."""
    c = r["comparability"] if isinstance(r.get("comparability"), dict) else {}
    return (str(r["suite"].get("version")), str(r["suite"].get("sha256", "")), str(r["tier"]),
            str(c.get("econarena") or "-"), str(c.get("rules_sha256") or "-"))


def comparable_problem(results: Sequence[tuple[Path, Mapping[str, Any]]]) -> str | None:
    """Why these results cannot be ranked together (suite versions, edited suite files, tiers, econarena
    versions, games' rules or prompt templates), or None."""
    groups: dict[tuple[str, ...], list[Path]] = {}
    for path, r in results:
        groups.setdefault(comparability_key(r), []).append(path)
    if len(groups) <= 1:
        return None
    lines = []
    for (version, sha, tier, version_of, rules), paths in sorted(groups.items()):
        shown = ", ".join(str(p.parent) for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        lines.append(f"suite {version} (file {sha[:12]}), tier {tier}, econarena {version_of}, rules and prompts "
                     f"{rules[:12]}: {shown}")
    retired = sorted({k[0] for k in groups} & set(RETIRED))
    why = "".join(f"\n{v}: {RETIRED[v]}" for v in retired if len({k[0] for k in groups}) > 1)
    return ("results of different suite versions, suite files, tiers, econarena versions or game rules and prompts "
            "are not ranked together:\n  " + "\n  ".join(lines) + why
            + "\nname the directories of one suite and tier (or pass --tier)")


def one_row_per_model(results: Sequence[tuple[Path, Mapping[str, Any]]]
                      ) -> tuple[list[tuple[Path, Mapping[str, Any]]], str | None]:
    """(the results with one row per model label, why not or None). Copies of one result (the same settings
    digest and scores: a directory copied, the baselines of two --out folders) count once; two different
    results under one label are refused, naming the files (they were ranked as two rows of one model)."""
    groups: dict[str, list[tuple[Path, Mapping[str, Any]]]] = {}
    for path, r in results:  # a model at two reasoning settings is two rows, even under one label
        reasoning = json.dumps(r["model"].get("reasoning"), sort_keys=True)
        groups.setdefault(str(r["model"]["label"]).strip().casefold() + "|" + reasoning, []).append((path, r))

    def fingerprint(r: Mapping[str, Any]) -> Any:
        return (r.get("settings_digest"), r["complete"], r["overall"].get("score"),
                sorted((k, v.get("score")) for k, v in r["subscores"].items()))

    clashes = [g for g in groups.values() if len({json.dumps(fingerprint(r)) for _, r in g}) > 1]
    if clashes:
        lines = [f"{g[0][1]['model']['label']!r}: " + ", ".join(str(p) for p, _ in g) for g in clashes]
        return [], ("one model label, several different results (a leaderboard has one row per model):\n  "
                    + "\n  ".join(lines) + "\nname the directories of one result per model")
    firsts = {id(g[0][1]) for g in groups.values()}
    return [(p, r) for p, r in results if id(r) in firsts], None


def _row_name(model: Mapping[str, Any]) -> Any:
    """The name a row goes by: its label, unless the label is only the provider's name (``bench hf`` names no
    model, and plays the bundled one): then the model that played, which bench.json records in ``played_by``."""
    label, played = model.get("label"), model.get("played_by")
    if not isinstance(label, str) or not isinstance(played, Mapping) or not isinstance(played.get("model"), str):
        return label
    base, bracket, rest = label.partition(" [")  # the default label may carry the reasoning settings
    if model.get("model") or base != model.get("agent"):
        return label
    return played["model"] + bracket + rest


def _row_label(model: Mapping[str, Any]) -> Any:
    """A row's name, with its reasoning settings when the name does not say them already."""
    label, reasoning = _row_name(model), model.get("reasoning")
    if not isinstance(reasoning, Mapping) or not reasoning or not isinstance(label, str):
        return label
    said = ", ".join(f"{'effort' if k == 'reasoning_effort' else k}={v}" for k, v in sorted(reasoning.items()))
    return label if said in label else f"{label} [{said}]"


def _above(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether row a ranks above row b: its interval lies wholly above b's (both printed), else its point."""
    if None not in (a["low"], a["high"], b["low"], b["high"]):
        return a["low"] > b["high"]
    return a["overall"] > b["overall"]


def leaderboard(results: Sequence[tuple[Path, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Rows, best first: complete results ranked by overall score, with ties where intervals overlap (a row's
    rank is 1 + the rows whose interval lies wholly above its own: 90.7 [87.7, 93.7] and 92.9 [89.9, 95.9] share
    rank 1); incomplete ones after them, unranked, with what they spent. Each row carries its per-family and
    per-game scores with intervals, the suite version and file digest, the econarena version and the rules'
    digest (what a paper's table needs to say what it compares)."""
    rows = []
    for path, r in results:
        c = r["comparability"] if isinstance(r.get("comparability"), dict) else {}
        rows.append({
            "label": _row_label(r["model"]), "kind": r["model"].get("kind", "model"),
            "suite": r["suite"].get("version"), "suite_sha256": r["suite"].get("sha256"), "tier": r["tier"],
            "econarena": c.get("econarena") or r.get("econarena_version"), "rules_sha256": c.get("rules_sha256"),
            "complete": bool(r["complete"]), "stopped": r.get("stopped"),
            "overall": r["overall"].get("score"), "low": r["overall"].get("low"), "high": r["overall"].get("high"),
            "cost_usd": r.get("cost_usd"), "spent_usd": r.get("spent_usd"), "score_per_usd": r.get("score_per_usd"),
            "calls": r.get("calls"), "cached": r.get("cached"),
            "tokens_in": r.get("tokens_in"), "tokens_out": r.get("tokens_out"), "wall_s": r.get("wall_s"),
            "answered_by": " ".join(r["model"].get("answered_by") or []) or None,
            "generation": c.get("generation"),
            "subscores": {k: v.get("score") for k, v in r["subscores"].items()},
            "families": {k: {"score": v.get("score"), "low": v.get("low"), "high": v.get("high")}
                         for k, v in r["subscores"].items()},
            "games": {g["id"]: {"score": g.get("score"), "low": g.get("low"), "high": g.get("high")}
                      for g in r["games"] if isinstance(g, dict) and "id" in g},
            "family_titles": {k: v.get("title", k) for k, v in r["subscores"].items()},
            "path": str(path),
        })
    ranked = sorted((x for x in rows if x["complete"] and x["overall"] is not None),
                    key=lambda x: (-x["overall"], str(x["label"])))
    rest = sorted((x for x in rows if not (x["complete"] and x["overall"] is not None)), key=lambda x: str(x["label"]))
    for x in ranked:
        x["rank"] = 1 + sum(_above(y, x) for y in ranked if y is not x)
    for x in ranked:
        x["tied"] = sum(y["rank"] == x["rank"] for y in ranked) > 1
    for x in rest:
        x["rank"], x["tied"] = None, False
    return ranked + rest


def generation_note(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Rows that played with other generation settings than the rest (any setting the suite leaves to the
    model: max_tokens, structured output, a reasoning effort...), named: flagged beside the table, not hidden."""
    seen: dict[str, list[str]] = {}
    for r in rows:
        if r.get("generation"):
            seen.setdefault(json.dumps(r["generation"], sort_keys=True), []).append(str(r["label"]))
    if len(seen) <= 1:
        return None
    parts = []
    for key, labels in seen.items():
        g = json.loads(key)
        flat = sorted({f"{k}={v}" for per in g.values() for k, v in per.items()})
        parts.append(f"{', '.join(labels)}: {' '.join(flat)}")
    return "generation settings differ between rows (each model played with its own; compare with care):\n  " + \
        "\n  ".join(parts)


def _f(x: Any, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _interval(low: Any, high: Any) -> str:
    return "" if low is None or high is None else f"[{low:.1f}, {high:.1f}]"


def leaderboard_cells(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    families = list(dict.fromkeys(k for r in rows for k in r["subscores"]))
    titles = {k: t for r in rows for k, t in r["family_titles"].items()}
    head = ["rank", "model", "overall", "95% interval", *(titles.get(f, f) for f in families), "cost $", "score/$",
            "status"]
    body = []
    for r in rows:
        rank = (_f(r["rank"]) + ("=" if r.get("tied") else "")) if r["rank"] else "-"
        status = ("complete" if r["overall"] is not None else "complete, no overall score: not ranked") \
            if r["complete"] else "incomplete, not ranked" + (
                f" (spent ${r['spent_usd']:.4f})" if r.get("spent_usd") is not None else "")
        body.append([rank, str(r["label"]) + (" (baseline)" if r["kind"] == "baseline"
                                              else ""),
                     _f(r["overall"]), _interval(r["low"], r["high"]), *(_f(r["subscores"].get(f)) for f in families),
                     "-" if r["cost_usd"] is None else f"{r['cost_usd']:.4f}",
                     "-" if r["score_per_usd"] is None else f"{r['score_per_usd']:.4g}", status])
    return head, body


def format_rows(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]

    def line(cs: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cs, widths)))

    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(b) for b in body)])


def leaderboard_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The leaderboard as CSV, through the project's one CSV writer (a label such as ``=HYPERLINK(...)`` is
    written as text, never as a formula): the row's columns, then per family its score (the column named as
    the family, as before), low and high, then per game the same."""
    families = list(dict.fromkeys(k for r in rows for k in r["subscores"]))
    games = list(dict.fromkeys(k for r in rows for k in r.get("games", {})))
    head = [*LEADERBOARD_COLUMNS, *(c for f in families for c in (f, f"{f}_low", f"{f}_high")),
            *(c for g in games for c in (f"game:{g}", f"game:{g}_low", f"game:{g}_high"))]

    def triple(x: Mapping[str, Any] | None) -> list[Any]:
        x = x or {}
        return [x.get("score"), x.get("low"), x.get("high")]

    body = []
    for r in rows:
        cells = [*(r.get(c) for c in LEADERBOARD_COLUMNS),
                 # a row without intervals per family (an older row shape) still gives its family scores
                 *(v for f in families for v in triple(r.get("families", {}).get(f)
                                                       or {"score": r["subscores"].get(f)})),
                 *(v for g in games for v in triple(r.get("games", {}).get(g)))]
        body.append(["" if x is None else x for x in cells])
    return csv_text(head, body)


def leaderboard_json(rows: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps([{k: v for k, v in r.items() if k != "family_titles"} for r in rows], indent=2,
                      ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------------------------- HTML

_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:24px;max-width:1240px;color:#222}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 6px}.meta{color:#666;font-size:13px}
table{border-collapse:collapse;margin:6px 0 10px}th,td{padding:4px 9px;border-bottom:1px solid #e3e3e3;
text-align:right;white-space:nowrap}th{background:#f5f5f5}td.l,th.l{text-align:left}tr.me td{background:#fff4c2;
font-weight:600}tr.pub td{color:#555}small{color:#777;margin-left:4px}.big{font-size:30px;font-weight:700}
.tag{font-size:11px;border:1px solid #bbb;border-radius:3px;padding:0 4px;margin-left:6px;color:#555}
.warn{background:#fdecea;border:1px solid #f5c2bd;padding:8px 12px;border-radius:4px}
.ok{background:#eaf6ec;border:1px solid #bfe3c6;padding:8px 12px;border-radius:4px}"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _cell(score: Any, low: Any = None, high: Any = None) -> str:
    if score is None:
        return "<span class='meta'>-</span>"
    return f"{score:.1f}" + (f"<small>[{low:.1f}, {high:.1f}]</small>" if low is not None and high is not None else "")


def _table(head: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]], left: int = 1) -> str:
    th = "".join(f"<th class='l'>{_e(h)}</th>" if i < left else f"<th>{_e(h)}</th>" for i, h in enumerate(head))
    trs = []
    for cls, cells in rows:
        tds = "".join(f"<td class='l'>{c}</td>" if i < left else f"<td>{c}</td>" for i, c in enumerate(cells))
        trs.append(f"<tr class='{cls}'>{tds}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(trs)}</tbody></table>"


def published_rows(suite: Suite, family: str) -> tuple[Any, list[dict[str, Any]]]:
    """(the published table, rows {model, overall, game -> value}) for a family that names one; else (None, [])."""
    from . import published as pub

    fam = suite.families[family]
    table = pub.table(fam.published) if fam.published else None
    if table is None:
        return None, []
    rows: dict[str, dict[str, Any]] = {}
    for c in table.cells:
        rows.setdefault(c.at["model"], {"model": c.at["model"]})[c.at["game"]] = c.value
    return table, sorted(rows.values(), key=lambda r: -(r.get("overall") or 0))


def scorecard_html(suite: Suite, result: Mapping[str, Any], baselines: Sequence[Mapping[str, Any]] = ()) -> str:
    """The scorecard page: the answer first (overall, subscores beside the baselines), then per family the
    games, with GAMA-Bench's row among the published rows (labelled comparable or not), then definitions."""
    model = result["model"]
    label = str(model["label"])
    tier = result["tier"]
    parts = [f"<h1>{_e(label)} <span class='tag'>{_e(suite.title)}, tier {_e(tier)}</span></h1>",
             f"<p class='meta'>{_e(result['tier_description'])}</p>"]
    o = result["overall"]
    if result["complete"]:
        how = (f"{round(100 * o['level'])}% interval from the sessions" if o.get("low") is not None
               else "no interval: a smoke tier")
        parts.append(f"<p><span class='big'>{_cell(o['score'], o['low'], o['high'])}</span> overall "
                     f"(0-100; {how})</p>")
    else:
        parts.append(f"<p class='warn'>Incomplete ({_e(result.get('stopped'))}): scores below cover the sessions "
                     "played so far and are not ranked; run the same command again to finish.</p>"
                     + (f"<p>overall so far: {_cell(o['score'], o['low'], o['high'])}</p>" if o["score"] is not None
                        else ""))
    parts.append("<ul class='findings'>" + "".join(f"<li>{_e(x)}</li>" for x in bench_findings(result, baselines))
                 + "</ul>")  # the answer in words (analysis/findings.py)
    best = result.get("attainable") or {}
    if best.get("meaning"):
        parts.append(f"<p class='meta'>{_e(best['meaning'])}</p>")
    if o.get("method"):
        parts.append(f"<p class='meta'>Intervals: {_e(o['method'])}.</p>")
    played = [*([model["played_by"]["model"] + (f" (weights {model['played_by']['weights']}, sha256 "
                                                 f"{str(model['played_by']['weights_sha256'])[:16]})"
                                                 if model["played_by"].get("weights") else "")]
                if isinstance(model.get("played_by"), dict) else [])]
    answered = [m for m in model.get("answered_by") or [] if m not in played]
    if played or answered:
        parts.append(f"<p class='meta'>Played by {_e(', '.join(played + answered))}"
                     + (f" (the server answered as {_e(', '.join(answered))})" if answered and played else "")
                     + ".</p>")
    if result.get("cached"):
        parts.append(f"<p class='warn'>{result['cached']:,} of {result.get('decisions', 0):,} replies came from the "
                     "response cache: answered before, by whichever run asked first, not by this invocation.</p>")
    single = [g["id"] for g in result["games"] if g["sessions"] == 1]
    if single and o["low"] is not None:
        parts.append(f"<p class='meta'>{len(single)} game(s) played one session ({_e(', '.join(single))}): they "
                     "have no interval of their own and add no spread to the others.</p>")
    cost = result.get("cost_usd")
    parts.append("<p class='meta'>" + " &middot; ".join(x for x in [
        f"{result.get('calls', 0):,} model calls" if model.get("llm") else "a baseline: no model calls",
        f"{result.get('tokens_in', 0):,} tokens in, {result.get('tokens_out', 0):,} out",
        f"cost ${cost:.4f}" if cost is not None else "cost: no price given (--prices)",
        f"score per dollar {result['score_per_usd']:.4g}" if result.get("score_per_usd") else "",
        f"wall time {result.get('wall_s', 0):.0f} s", f"settings digest {_e(result['settings_digest'][:16])}"] if x)
        + "</p>")
    others = list(baselines)
    floor = [str(b["model"]["label"]) for b in others if b["model"]["label"] in ("random", "constant", "accept")]
    if floor:
        parts.append(f"<p class='meta'>The floor: {_e(', '.join(floor))} (baselines). constant answers 50 and the "
                     "first option everywhere, accept accepts every offer: a score near theirs measures no "
                     "understanding of the game.</p>")
    head = ["family", label, *(str(b["model"]["label"]) + " (baseline)" for b in others)]
    rows = []
    for name, s in result["subscores"].items():
        rows.append(("", [_e(s["title"]), _cell(s["score"], s["low"], s["high"]),
                          *(_cell(b["subscores"].get(name, {}).get("score")) for b in others)]))
    rows.append(("me", ["overall", _cell(o["score"], o["low"], o["high"]),
                        *(_cell(b["overall"].get("score")) for b in others)]))
    parts += ["<h2>Subscores</h2>", _table(head, rows)]
    parts += _families_html(suite, result, others, label, best)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>" + _e(f"{label}: {suite.title}")
            + f"</title><style>{_CSS}</style></head><body>" + "".join(parts) + "</body></html>\n")


def _families_html(suite: Suite, result: Mapping[str, Any], others: Sequence[Mapping[str, Any]], label: str,
                   best: Mapping[str, Any]) -> list[str]:
    """The scorecard's part per family (its games beside the baselines, the published rows), then how the
    scores are defined and what the result was played with."""
    parts: list[str] = []
    by_family: dict[str, list[Mapping[str, Any]]] = {}
    for g in result["games"]:
        by_family.setdefault(g["family"], []).append(g)
    base_games = [{g["id"]: g for g in b["games"]} for b in others]
    for name, games in by_family.items():
        fam = suite.families[name]
        parts.append(f"<h2>{_e(fam.title)}</h2><p class='meta'>Subscore: {_e(fam.subscore)}.</p>")
        if fam.published:
            parts.append(_published_block(suite, name, result, games))
        head = ["game", "rule", label, "best known", *(str(b["model"]["label"]) for b in others), "sessions",
                "rule breaks %", "deal rate"]
        rows = [("", [_e(g["id"]), _e(g["rule"]), _cell(g["score"], g["low"], g["high"]), _best_known(best, g["id"]),
                      *(_cell(bg.get(g["id"], {}).get("score")) for bg in base_games),
                      f"{g['sessions']}/{g['planned']}", _f(g["rule_break_pct"]),
                      "-" if g["deal_rate"] is None else f"{100 * g['deal_rate']:.0f}%"]) for g in games]
        parts.append(_table(head, rows))
    parts.append("<h2>How the scores are defined</h2>")
    for fam in suite.families.values():
        parts.append(f"<p><b>{_e(fam.title)}</b> (weight {fam.weight:g}): {_e(fam.subscore)}. {_e(fam.why)}</p>")
    parts.append("<p class='meta'>Per game: " + " ".join(f"<b>{_e(g.id)}</b>: {_e(g.why)}" for g in suite.games)
                 + "</p>")
    parts.append(f"<p class='meta'>Suite {_e(suite.version)} (sha256 {_e(suite.digest[:16])}), econarena "
                 f"{_e(result.get('econarena_version'))}, written {_e(result.get('written_at'))}.</p>")
    return parts


def _best_known(best: Mapping[str, Any], gid: str) -> str:
    """A game's best known score for the scorecard: 100, or the exception's and why."""
    exceptions = best.get("exceptions") or {}
    if gid not in exceptions:
        return "100"
    x = exceptions[gid]["attainable"]
    return ("unknown" if x is None else f"{x:g}") + f"<small>{_e(exceptions[gid]['note'])}</small>"


def _published_block(suite: Suite, family: str, result: Mapping[str, Any], games: Sequence[Mapping[str, Any]]) -> str:
    """The model's row among the published rows; said to be comparable only in the tiers that play the
    published protocol."""
    table, rows = published_rows(suite, family)
    if table is None:
        return ""
    fam = suite.families[family]
    same = result["tier"] in fam.published_tiers
    mine = {"model": str(result["model"]["label"]), "overall": result["subscores"][family]["score"],
            **{g["game"]: g["score"] for g in games}, "me": True}
    order = [g["game"] for g in games]
    every = sorted([*rows, mine], key=lambda r: -(o if (o := r.get("overall")) is not None else -1))
    note = (f"<p class='ok'>Same protocol as the published rows ({_e(table.source)}): this row ranks among them.</p>"
            if same else
            f"<p class='warn'>Tier {_e(result['tier'])} does not play the published protocol (published tiers: "
            f"{_e(', '.join(fam.published_tiers) or 'none')}): the published rows ({_e(table.source)}) are shown for "
            "orientation only; this row does not rank among them. What differs: the prompts are our own wording "
            "(GAMA-Bench's paper shows scores move with the template), an unusable reply is asked again at most 3 "
            "times (GAMA-Bench asks until it parses), and the quick tier plays one round without re-asks.</p>")
    titles = {g.game: GAMES[g.game].info.title if g.game in GAMES else g.game for g in suite.games_of(family)}
    head = ["model", "Overall", *(titles.get(x, x) for x in order)]
    tag = "<span class='tag'>published</span>"
    if not same:  # our row first, apart: the published rows keep their own order and no place is implied
        every = [mine, *rows]
    body = [("me" if r.get("me") else "pub", [_e(r["model"]) + ("" if r.get("me") else tag), _cell(r.get("overall")),
                                             *(_cell(r.get(x)) for x in order)]) for r in every]
    return note + _table(head, body)


def leaderboard_html(rows: Sequence[Mapping[str, Any]], title: str) -> str:
    head, body = leaderboard_cells(rows)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>" + _e(title) + f"</title><style>{_CSS}</style>"
            f"</head><body><h1>{_e(title)}</h1>"
            + _table(head, [("" if r["complete"] else "pub", [_e(c) for c in cells]) for r, cells in zip(rows, body)],
                     left=2)
            + "<p class='meta'>Incomplete results (a budget stop, API errors, an interrupted run) are listed after "
            "the ranked ones and never ranked.</p></body></html>\n")
