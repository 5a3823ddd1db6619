"""GAMA-Bench (5): the Diner's Dilemma, played for K rounds with a report after each.

Rules: each of N diners orders, at the same time, the ``cheap`` dish (price ``cheap_cost``, worth
``cheap_utility``) or the ``costly`` one (price ``exp_cost``, worth ``exp_utility``). The bill is split
equally: a diner's round payoff is the worth of their dish - (total bill) / N. A reply that breaks a rule
gets no dish (worth 0) but still pays its share of the bill of the valid orders, which is worse than
either dish. Recorded labels the reference accepted (it took any lower-cased string) come in as they are
through ``from_reference``; in the payoffs every label other than exactly "cheap" is the costly dish, as
in the reference.

Parameters (defaults as the leaderboard): ``cheap_cost`` 10, ``cheap_utility`` 15, ``exp_cost`` 20,
``exp_utility`` 20, ``rounds`` 20, ``scoring`` "code" (the reference code) or "paper".

Score (per run): mean over rounds of (1 - #cheap / N) x 100, i.e. the share of costly orders.
``scoring = "code"`` (the leaderboard): only the exact string "cheap" is cheap and EVERY other label is
costly ("cheap_dish", "chea" and "costly_or_cheap" all count as costly; Mixtral-8x7B's 76.4).
``scoring = "paper"`` canonicalises labels first: after keeping letters only, a label naming "cheap" but
not "costly" ("cheap_dish", "cheaper", "che`,`ap") is cheap, one naming "costly" but not "cheap" is
costly, a truncation of 3+ letters of one of the two words ("chea") is that word; anything else
("costly_or_cheap", "") is unreadable. Invalid replies never flatter: a rule-breaking reply (and an
unreadable label in paper scoring) counts as cheap, the choice that lowers the score.

Equilibrium: ordering costly is dominant when exp_utility - exp_cost / N >= cheap_utility - cheap_cost / N
(at the defaults for every N >= 2; at N = 2 both are best replies and costly is declared), otherwise cheap
is. The ``rational`` baseline orders it; ``random`` picks either with probability 1/2. Deviation: the share
of a seat's valid orders that were not the equilibrium dish.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..base import ActionField, GameInfo, GameParams, ImportedRun, Outcome, Setup, fmt_num
from ..repeated import RepeatedGame, RepeatedState
from .reference import as_label, reference_choices, reference_meta, replay

CHOICES = ("cheap", "costly")


class DinerParams(GameParams):
    cheap_cost: float = Field(default=10, ge=0, le=1_000_000)
    """The cheap dish's price."""
    cheap_utility: float = Field(default=15, ge=0, le=1_000_000)
    """What the cheap dish is worth to the diner."""
    exp_cost: float = Field(default=20, ge=0, le=1_000_000)
    """The costly dish's price."""
    exp_utility: float = Field(default=20, ge=0, le=1_000_000)
    """What the costly dish is worth to the diner."""
    rounds: int = Field(default=20, ge=1, le=1000)
    """Rounds per run, each with a report."""
    scoring: Literal["code", "paper"] = "code"
    """`code`: the released code's 0-100 score; `paper`: labels such as `cheap_dish` read as cheap."""


def paper_label(label: str) -> str | None:
    """The paper reading of a recorded label: "cheap", "costly" or None (unreadable); see the docstring."""
    letters = re.sub(r"[^a-z]", "", label.lower())
    cheap, costly = "cheap" in letters, "costly" in letters
    if cheap != costly:
        return "cheap" if cheap else "costly"
    if not cheap and len(letters) >= 3:
        for word in CHOICES:
            if word.startswith(letters):
                return word
    return None


def is_cheap(label: str | None, scoring: str) -> bool:
    """Whether one order counts as cheap in the score (rule breaks and unreadable labels do)."""
    if label is None:
        return True
    if scoring == "code":
        return label == "cheap"
    return paper_label(label) in ("cheap", None)


class DinersDilemma(RepeatedGame[DinerParams]):
    name: ClassVar[str] = "diners_dilemma"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GAMA-Bench: K rounds of ordering cheap or costly on a shared bill; 0-100 score"
    Params = DinerParams
    action_key: ClassVar[str] = "chosen_dish"
    history_key: ClassVar[str] = "share of costly orders"
    info: ClassVar[GameInfo] = GameInfo(
        title="Diner's Dilemma", rounds=True, score=True, family="gamabench",
        reference=(("diner_dilemma", {}),), action_axis="share of costly orders",
        equilibrium_note="NE: everyone orders costly", deviation_note="share of orders off the NE dish",
        round_curve="costly_share")

    def setup(self, params: DinerParams, n_players: int, rng: np.random.Generator) -> Setup:
        return Setup(n_players, params.model_dump())

    def reply_field(self, state: RepeatedState, player: int) -> ActionField:
        return ActionField("chosen_dish", "choice", "the dish you order", choices=CHOICES)

    def round_extra(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                    rng: np.random.Generator | None) -> dict[str, Any]:
        cheap = sum(1 for c in choices if c == "cheap")
        costly = sum(1 for c in choices if c is not None and c != "cheap")
        bill = cheap * setup["cheap_cost"] + costly * setup["exp_cost"]
        n = setup.n_players
        return {"cheap": cheap, "costly": costly, "invalid": n - cheap - costly, "bill": bill, "share": bill / n,
                "costly_share": costly / n}

    def round_payoffs(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                      extra: Mapping[str, Any]) -> tuple[float, ...]:
        def worth(c: Any) -> float:
            return 0.0 if c is None else float(setup["cheap_utility"] if c == "cheap" else setup["exp_utility"])
        return tuple(worth(c) - extra["share"] for c in choices)

    def round_events(self, setup: Setup, round_: int, choices: tuple[Any, ...],
                     extra: Mapping[str, Any], payoffs: tuple[float, ...]) -> dict[str, Any]:
        return {**extra, "choices": list(choices), "payoffs": list(payoffs)}

    def observation(self, state: RepeatedState, player: int) -> dict[str, Any]:
        s = state.setup
        return {"n_players": s.n_players, "rounds": s["rounds"], "round": state.round + 1,
                **{k: fmt_num(s[k]) for k in ("cheap_cost", "cheap_utility", "exp_cost", "exp_utility")}}

    def report(self, before: RepeatedState, after: RepeatedState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any]:
        r = after.round - 1
        s = after.setup
        e = after.extra[r]
        mine = after.choices[r][player]
        worth = 0.0 if mine is None else s["cheap_utility"] if mine == "cheap" else s["exp_utility"]
        return {"round": r + 1, "n_costly": e["costly"], "n_cheap": e["cheap"],
                "invalid_note": f" and {e['invalid']} gave no valid order" if e["invalid"] else "",
                "bill_terms": f"{e['costly']} x {fmt_num(s['exp_cost'])} + {e['cheap']} x {fmt_num(s['cheap_cost'])}",
                "bill": fmt_num(e["bill"]), "share": fmt_num(e["share"]),
                "your_dish": "no valid dish" if mine is None
                else "the cheap dish" if mine == "cheap" else "the costly dish",
                "your_worth": fmt_num(worth), "your_payoff": fmt_num(after.payoffs[r][player])}

    # ---- capabilities ----
    @staticmethod
    def summary_action(values: Sequence[Any]) -> Any:
        """A seat's run in one number: the share of its valid orders that were costly."""
        seen = [v for v in values if v is not None]
        return sum(1 for v in seen if v != "cheap") / len(seen) if seen else None

    @staticmethod
    def _ne_dish(setup: Setup) -> str:
        n = setup.n_players
        costly = setup["exp_utility"] - setup["exp_cost"] / n >= setup["cheap_utility"] - setup["cheap_cost"] / n
        return "costly" if costly else "cheap"

    def equilibrium(self, setup: Setup) -> Outcome | None:
        n, k = setup.n_players, setup["rounds"]
        dish = self._ne_dish(setup)
        worth, cost = ((setup["exp_utility"], setup["exp_cost"]) if dish == "costly"
                       else (setup["cheap_utility"], setup["cheap_cost"]))
        pay = float(worth - cost) * k  # everyone orders the same dish, so each share is its price
        return Outcome(actions=(1.0 if dish == "costly" else 0.0,) * n, valid=(True,) * n, payoffs=(pay,) * n,
                       winners=tuple(range(n)), void=False)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        a = outcome.actions[player]
        return None if a is None else abs(a - ne.actions[player])

    def strategy(self, state: RepeatedState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        if kind == "rational":
            return {"chosen_dish": self._ne_dish(state.setup)}
        if kind == "random":
            assert rng is not None
            return {"chosen_dish": CHOICES[int(rng.integers(2))]}
        return super().strategy(state, player, kind, rng, **kw)

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        per_round = [[None if a is None else a["chosen_dish"] for a in r.get("actions", [])] for r in rounds]
        return diner_score(per_round, setup.values.get("scoring", "code"))

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        meta = reference_meta(raw)
        n, choices = reference_choices(raw, as_label)
        keys = ("cheap_cost", "cheap_utility", "exp_cost", "exp_utility")
        params = DinerParams(**{k: meta[k] for k in keys if k in meta}, rounds=len(choices))
        return replay(self, params, n, choices, raw, (("cheap_player", "cheap"), ("total_cost", "bill")))


def diner_score(per_round: Sequence[Sequence[str | None]], scoring: str = "code") -> float | None:
    """Share of costly orders x 100 from each round's labels per seat (None: a rule break)."""
    shares = [1 - sum(1 for c in r if is_cheap(c, scoring)) / len(r) for r in per_round if r]
    if not shares:
        return None
    return sum(shares) / len(shares) * 100
