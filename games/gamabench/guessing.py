"""GAMA-Bench (1): Guess 2/3 of the average, played for K rounds with a report after each.

Rules: each of N players picks a whole number in [min, max]. The winners of a round are the players whose
number is closest to ``ratio`` x the mean of the round's valid numbers (ties all win); a winner earns 1
point. Replies that break a rule (not a whole number, outside [min, max]) have no number that round.

Parameters (defaults as the leaderboard): ``min`` 0, ``max`` 100, ``ratio`` 2/3, ``rounds`` 20,
``scoring`` "code" (the reference code) or "paper".

Score (per run): A = mean over rounds of (the round's mean valid number - min), D = max - min.
ratio < 1: (max - A) / D x 100; ratio = 1: (1 - |2A - D| / D) x 100; ratio > 1: A / D x 100.
With min > 0 the reference's first branch can exceed 100 (it subtracts min once too few); ``scoring =
"paper"`` uses the intended (max - min - A) / D x 100 there. Rounds where nobody answered validly are left
out; a run with no valid number has no score.

Equilibrium: everyone picks min when ratio < 1 and max when ratio > 1 (ratio = 1 has a continuum, so none
is declared). Deviation: |mean chosen number - equilibrium| / D.

Baselines: ``rational`` picks the equilibrium number (the midpoint when ratio = 1); ``random`` a uniform
whole number; ``level_k`` (k >= 0) the classic level-k rule of this game (Nagel 1995; Camerer, Ho and Chong
2004): level 0 picks a naive reference number, level j the whole number nearest ratio x level j-1's number,
kept in [min, max] (the best response to a crowd of level j-1 players, one's own weight in the mean
ignored). The reference is the midpoint (min + max) / 2 in round 1 and, as in Nagel's reading of later
rounds, the previous round's mean afterwards (the last round that had one). With the defaults, round 1:
levels 0 to 9 pick 50, 33, 22, 15, 10, 7, 5, 3, 2, 1, and every higher level 1 (2/3 of 1 rounds to 1 again:
whole numbers stop the iteration one short of the equilibrium 0).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ..base import (
    MAX_GAME_NUMBER,
    ActionField,
    ForeignValue,
    GameInfo,
    GameParams,
    ImportedRun,
    Outcome,
    Setup,
    fmt_num,
    game_number,
    whole_number,
)
from ..repeated import RepeatedGame, RepeatedState, round_values
from .reference import judged, outside_rules, round_check


class GuessingParams(GameParams):
    min: int = Field(default=0, ge=0, le=1_000_000)
    """The smallest whole number a player may pick."""
    max: int = Field(default=100, ge=1, le=1_000_000)
    """The largest whole number a player may pick."""
    ratio: float = Field(default=2 / 3, gt=0, le=10)
    """The target is this ratio times the mean of the round's valid numbers."""
    rounds: int = Field(default=20, ge=1, le=1000)
    """Rounds per run, each with a report."""
    scoring: Literal["code", "paper"] = "code"
    """`code`: the 0-100 score of GAMA-Bench's released code; `paper`: the formula the paper intends when min
    > 0."""

    @model_validator(mode="after")
    def _range(self) -> GuessingParams:
        if self.max <= self.min:
            raise ValueError(f"max ({self.max}) must be greater than min ({self.min})")
        return self


class GuessingGame(RepeatedGame[GuessingParams]):
    name: ClassVar[str] = "guessing_game"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GAMA-Bench: K rounds of guessing ratio x the average; 0-100 score"
    Params = GuessingParams
    action_key: ClassVar[str] = "chosen_number"
    history_key: ClassVar[str] = "mean number"
    info: ClassVar[GameInfo] = GameInfo(
        title="Guess 2/3 of the average", rounds=True, score=True, family="gamabench",
        policies=("rational", "random", "level_k"),
        action_axis="mean number / max", scale_key="max", equilibrium_note="NE: min",
        deviation_note="|mean number - NE| / (max - min)", round_curve="mean",
        reference=(("guessing_game", {}),))

    def setup(self, params: GuessingParams, n_players: int, rng: np.random.Generator) -> Setup:
        return Setup(n_players, params.model_dump())

    def reply_field(self, state: RepeatedState, player: int) -> ActionField:
        s = state.setup
        return ActionField("chosen_number", "number", "the number you choose", float(s["min"]), float(s["max"]),
                           integer=True)

    def round_payoffs(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                      extra: Mapping[str, Any]) -> tuple[float, ...]:
        winners = set(extra["winners"])
        return tuple(1.0 if i in winners else 0.0 for i in range(setup.n_players))

    def round_extra(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                    rng: np.random.Generator | None) -> dict[str, Any]:
        valid = [c for c in choices if c is not None]
        if not valid:
            return {"mean": None, "target": None, "winners": []}
        mean = math.fsum(valid) / len(valid)
        target = setup["ratio"] * mean
        best = min(abs(c - target) for c in valid)
        winners = [i for i, c in enumerate(choices) if c is not None and abs(c - target) - best <= 1e-9]
        return {"mean": mean, "target": target, "winners": winners}

    def round_events(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                     extra: Mapping[str, Any], payoffs: tuple[float, ...]) -> dict[str, Any]:
        return {**extra, "choices": list(choices)}

    def observation(self, state: RepeatedState, player: int) -> dict[str, Any]:
        s = state.setup
        ratio = s["ratio"]
        words = "2/3 of" if abs(ratio - 2 / 3) < 1e-12 else f"{fmt_num(ratio)} times"
        return {"n_players": s.n_players, "min": s["min"], "max": s["max"], "ratio_words": words,
                "rounds": s["rounds"], "round": state.round + 1}

    def report(self, before: RepeatedState, after: RepeatedState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any]:
        r = after.round - 1
        extra = after.extra[r]
        mine = after.choices[r][player]
        return {"round": r + 1, "mean": fmt_num(extra["mean"]), "target": fmt_num(extra["target"]),
                "winning": ", ".join(sorted({fmt_num(after.choices[r][i]) for i in extra["winners"]})) or "none",
                "your_number": "no valid number" if mine is None else fmt_num(mine),
                "result": "won" if player in extra["winners"] else "did not win"}

    # ---- capabilities ----
    def _ne_number(self, setup: Setup) -> float | None:
        if setup["ratio"] < 1:
            return float(setup["min"])
        if setup["ratio"] > 1:
            return float(setup["max"])
        return None

    def equilibrium(self, setup: Setup) -> Outcome | None:
        ne = self._ne_number(setup)
        if ne is None:
            return None
        n = setup.n_players
        return Outcome(actions=(ne,) * n, valid=(True,) * n, payoffs=(float(setup["rounds"]),) * n,
                       winners=tuple(range(n)), void=False)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        a = outcome.actions[player]
        return None if a is None else abs(a - ne.actions[player]) / (setup["max"] - setup["min"])

    def strategy(self, state: RepeatedState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        s = state.setup
        if kind == "rational":
            ne = self._ne_number(s)
            return {"chosen_number": int(ne if ne is not None else (s["min"] + s["max"]) // 2)}
        if kind == "random":
            assert rng is not None
            return {"chosen_number": int(rng.integers(s["min"], s["max"] + 1))}
        if kind == "level_k":
            means = [e["mean"] for e in state.extra if e.get("mean") is not None]
            anchor = means[-1] if means else (s["min"] + s["max"]) / 2
            return {"chosen_number": level_k_number(anchor, int(kw.get("k", 1)), s["ratio"], s["min"], s["max"])}
        return super().strategy(state, player, kind, rng, **kw)

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        return guessing_score(round_values(rounds, "chosen_number"), setup["min"], setup["max"],
                              setup["ratio"], setup.values.get("scoring", "code"))

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        """A GAMA-Bench ``guessing_game`` result: seat i's numbers are ``player_data[i].records`` (the
        ``round_records`` responses were shuffled in place by the reference, so only their totals are kept
        there). Meta keys missing from old files take the reference's defaults (0, 100, 2/3)."""
        meta = raw.get("meta") or {}
        players = raw.get("player_data")
        if not isinstance(players, list) or not players or not all(isinstance(p, Mapping) for p in players):
            raise ValueError("player_data must be a non-empty list of player objects")
        rounds_raw = raw.get("round_records")
        n_rounds = len(rounds_raw) if isinstance(rounds_raw, list) and rounds_raw else int(meta.get("round_id", 0))
        if n_rounds < 1:
            raise ValueError("no rounds: round_records is empty and meta.round_id is missing")
        params = GuessingParams(min=whole_number(meta.get("min", 0), "meta.min"),
                                max=whole_number(meta.get("max", 100), "meta.max"),
                                ratio=game_number(meta.get("ratio", 2 / 3), "meta.ratio", "bad_parameter"),
                                rounds=n_rounds)
        setup = self.setup(params, len(players), np.random.default_rng(0))  # draws nothing
        state = self.initial_state(setup)
        log = []
        problems: list[str] = []
        for k in range(n_rounds):
            actions = {i: _reference_number(p.get("records"), k, i) for i, p in enumerate(players)}
            problems += judged(self, state, actions, k)  # 101 or -5: the reference took it, our rules do not
            after = self.apply(state, actions)
            log.append({"round": k, "actions": [actions[i] for i in range(len(players))],
                        "events": self.events(state, after, actions)})
            state = after
        messages = [list(p["prompt"]) if isinstance(p.get("prompt"), list) else [] for p in players]
        return ImportedRun(params=params.model_dump(), n_players=len(players), round_log=log,
                           payoffs=list(self.outcome(state).payoffs),
                           messages=messages if any(messages) else None,
                           check=outside_rules(round_check(raw, log, (("mean", "mean"), ("mean_ratio", "target"))),
                                               problems))


def level_k_number(anchor: float, k: int, ratio: float, lo: int, hi: int) -> int:
    """Level k's whole number: level 0 rounds ``anchor``, each level the nearest whole number to ratio x the
    level below (halves rounded up), kept in [lo, hi]. Iterated, not ratio**k x anchor: a large k must not
    overflow, and it stops at the fixed point (lo, or hi when ratio > 1) after a few dozen steps."""
    def whole(x: float) -> int:
        return min(hi, max(lo, math.floor(x + 0.5)))

    number = whole(anchor)
    for _ in range(k):
        nxt = whole(ratio * number)
        if nxt == number:
            break
        number = nxt
    return number


def _reference_number(records: Any, k: int, seat: int) -> dict[str, Any] | None:
    """Round k's number of one seat, or None where the file has none (the reference stores ints; a numeric
    string is read too); :class:`ForeignValue` for a value that is not a number (NaN, text, true)."""
    if not isinstance(records, list) or k >= len(records):
        return None
    x = records[k]
    if isinstance(x, str):
        with contextlib.suppress(ValueError):
            x = float(x.strip())
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ForeignValue("bad_move", f"round {k + 1}, player {seat}: {str(x)[:40]!r} is not a number")
    return {"chosen_number": int(x) if x == int(x) and abs(x) <= MAX_GAME_NUMBER else x}


def guessing_score(per_round: Sequence[Sequence[float]], lo: float, hi: float, ratio: float,
                   scoring: str = "code") -> float | None:
    """The per-run score from each round's valid numbers (see the module docstring)."""
    means = [math.fsum(r) / len(r) - lo for r in per_round if r]
    if not means:
        return None
    a = math.fsum(means) / len(means)
    d = hi - lo
    if ratio < 1:
        return ((hi - a) if scoring == "code" else (d - a)) / d * 100
    if ratio == 1:
        return (1 - abs(2 * a - d) / d) * 100
    return a / d * 100
