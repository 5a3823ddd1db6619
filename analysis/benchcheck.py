"""A bench.json that contradicts itself is refused, not ranked.

Why: the leaderboard ranked first a file whose overall score and subscores (99) contradicted its own per-game
scores, and took ``complete: true`` beside ``stopped: "budget"``, an interval with its low above its high, a
game's score of 1e6, games the suite does not have or one game twice. Everything that can be recomputed from
the file is recomputed here with the bench's own aggregation (``benchmark.combine``, imported, never copied),
and the structural invariants are checked; the first contradiction is named.

What can be recomputed depends on the suite: a file of a suite found among ``configs/bench/*.toml`` (by the
sha256 of its text, which bench.json records) has its games checked against the suite's and its subscores and
overall score recomputed from its per-game sessions; a file of another suite gets the checks that need none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import fields
from functools import lru_cache
from typing import Any

from ..formats.benchsuite import DEFAULT, Suite, SuiteError, load_suite
from ..formats.numbers import finite

TOLERANCE = 1e-6  # scores are written as floats by json: a recomputation agrees to far better than this


@lru_cache(maxsize=1)
def known_suites() -> dict[str, Suite]:
    """The suites shipped beside the default one, by the sha256 of their text."""
    out: dict[str, Suite] = {}
    for path in sorted(DEFAULT.parent.glob("*.toml")):
        try:
            suite = load_suite(path)
        except SuiteError:
            continue
        out[suite.digest] = suite
    return out




def _interval(where: str, entry: Mapping[str, Any]) -> str | None:
    """low <= score <= high where all three are given; a score from 0 to 100."""
    score, low, high = (finite(entry.get(k)) for k in ("score", "low", "high"))
    for k in ("score", "low", "high"):
        x = entry.get(k)
        if x is not None and (finite(x) is None or not 0.0 <= x <= 100.0):
            return f"{where}.{k}: {str(x)[:40]} is not a score from 0 to 100"
    if score is None and (low is not None or high is not None):
        return f"{where}: an interval [{low}, {high}] without a score"
    if score is not None and low is not None and high is not None and not low <= score <= high:
        return f"{where}: the interval [{low}, {high}] does not hold its score {score}"
    if low is not None and high is not None and low > high:
        return f"{where}: the interval's low {low} is above its high {high}"
    return None


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= TOLERANCE * max(1.0, abs(float(b)))


def contradiction(data: Mapping[str, Any], combine: Callable[..., dict[str, Any]], GameScore: type) -> str | None:  # noqa: N803
    """The first way ``data`` (a bench.json of the right shape) contradicts itself or its suite, or None.
    ``combine`` and ``GameScore`` are the bench's own (``analysis/benchmark.py``, which calls this: passed in,
    so that the two modules do not import each other)."""
    if data["complete"] is True and data.get("stopped") is not None:
        return f"complete: true, but stopped: {str(data.get('stopped'))[:40]!r} (a stopped bench is not complete)"
    if data["complete"] is False and data.get("stopped") is None:
        return "complete: false without a reason in 'stopped'"
    if (problem := _interval("overall", data["overall"])) is not None:
        return problem
    for name, sub in data["subscores"].items():
        if (problem := _interval(f"subscores.{name}", sub)) is not None:
            return problem
    games: list[Any] = []
    seen: set[str] = set()
    names = [f.name for f in fields(GameScore)]
    for i, g in enumerate(data["games"]):
        if not isinstance(g, dict) or not isinstance(g.get("id"), str):
            return f"games[{i}]: expected a game's entry with its 'id'"
        where = f"games[{i}] ({g['id'][:40]})"
        if g["id"] in seen:
            return f"{where}: the game is listed twice"
        seen.add(g["id"])
        if (problem := _interval(where, g)) is not None:
            return problem
        per = g.get("per_session")
        if not isinstance(per, list) or not all(finite(x) is not None and 0.0 <= x <= 100.0 for x in per):
            return f"{where}.per_session: expected the sessions' scores, each from 0 to 100"
        mean = math.fsum(per) / len(per) if per else None  # the game's score as score_game computes it
        if not _close(g.get("score"), mean):
            return f"{where}: its score {g.get('score')} is not the mean of its sessions' scores ({mean})"
        missing = [k for k in names if k not in g]
        if missing:
            return f"{where}: without '{missing[0]}'"
        games.append(GameScore(**{k: g[k] for k in names}))
    suite = known_suites().get(str(data["suite"].get("sha256", "")))
    if suite is None:
        return None
    want = [g.id for g in suite.games]
    if sorted(seen) != sorted(want):
        extra = sorted(seen - set(want))
        return (f"games: {extra[0][:40]!r} is no game of suite {suite.version}" if extra
                else f"games: {sorted(set(want) - seen)[0]!r} of suite {suite.version} is missing")
    family = {g.id: g.family for g in suite.games}
    for gs in games:
        if gs.family != family[gs.id]:
            return f"games ({gs.id}): family {gs.family!r}, but the suite puts it in {family[gs.id]!r}"
    again = combine(suite, games)
    for name, sub in again["subscores"].items():
        given = data["subscores"].get(name, {}).get("score") if isinstance(data["subscores"].get(name), dict) \
            else None
        if not _close(given, sub["score"]):
            return (f"subscores.{name}.score: {given} in the file, {sub['score']} from its own games' scores (edited "
                    "by hand?)")
    if not _close(data["overall"].get("score"), again["overall"]["score"]):
        return (f"overall.score: {data['overall'].get('score')} in the file, {again['overall']['score']} from its own "
                "games' scores (edited by hand?)")
    return None
