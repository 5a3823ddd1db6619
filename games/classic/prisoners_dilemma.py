"""The Prisoner's Dilemma, repeated for an announced number of rounds with a report after each.

Rules: two players play ``rounds`` (K) rounds, and both know K from the start. In every round each chooses,
at the same time as the other, ``cooperate`` or ``defect`` (reply key ``action``). Both cooperate: each
earns the reward R. Both defect: each earns the punishment P. One defects on a cooperator: the defector
earns the temptation T, the cooperator the sucker's payoff S. After each round both players are told both
choices and both round payoffs. A run's payoff is the sum over its rounds. A reply that cannot be used is
played as ``defect`` (nothing is cooperation unless a player says so): the opponent is paid as against a
defector, and the seat is marked invalid (the analysis then scores its run 0, as in every game).

Parameters: ``temptation`` T (5), ``reward`` R (3), ``punishment`` P (1), ``sucker`` S (0), ``rounds`` K
(10, from 1 to 1000). They must satisfy T > R > P > S (defecting is strictly better whatever the other
does, and mutual defection is worse than mutual cooperation) and 2R > T + S (taking turns exploiting each
other earns less than cooperating); a file that breaks either is refused with the key that breaks it.
S >= 0: payoffs are non-negative, so the payoff ratio against the equilibrium's P per round is defined
(adding a constant to every payoff changes no incentive, so any dilemma can be written this way).

Equilibrium: defection strictly dominates cooperation in the stage game, so in the last round both defect
whatever happened before; given that, nothing done in round K - 1 changes round K, so both defect there
too, and so on back to round 1 (backward induction). The unique subgame-perfect equilibrium defects in
every round, and every Nash equilibrium has that path as well (a defection in any round gains now and
cannot be punished below P, the worst a player can be held to). Equilibrium payoff: P x K per player.
The declared equilibrium actions are cooperation rates of 0.

A run's action per seat is its cooperation rate (the share of the K rounds it played ``cooperate``; an
unusable reply counts as a defection), the number the history, figures and deviation read. Deviation:
that cooperation rate, i.e. its distance from the equilibrium's 0. It measures the seat's own departure
from the equilibrium; |payoff - P K| / (K (T - P)) was the alternative, but a payoff also moves with what
the opponent does (a cooperator facing a defector earns S < P), so it would blame a seat for its opponent.

Metrics per run (from the round log alone): ``cooperation_rate`` and ``payoff`` (totals) per seat,
``mutual_cooperation_rate`` (share of rounds C/C), ``mutual_defection_rate`` (D/D), ``sucker_rate`` per
seat (share of rounds it cooperated while the other defected), ``first_defection`` per seat (the first
round it defected, 1-based; None if it never did: the end-game effect shows here), ``reciprocity`` per seat
(share of rounds 2..K in which it repeated the other's previous move: 1 for tit for tat; None when K = 1),
``invalid_rounds`` per seat.

Baselines (policies): ``rational`` defects every round (the equilibrium); ``random`` picks each round's
move uniformly; ``tit_for_tat`` cooperates in round 1 and then plays the other's previous move (an unusable
reply counts as the defection it was played as). ``tit_for_tat`` is offered by ``strategy`` like
persuasion's ``commitment``; an experiment file seats only the agents ``rational``, ``random``, ... .
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from ..base import ActionField, ActionSpec, Game, GameInfo, GameParams, Outcome, Setup, fmt_num

COOPERATE, DEFECT = "cooperate", "defect"
MAX_PAYOFF = 1e9  # K x T stays at most 1e12, the contract's largest game number
ORDER = (("temptation", "T"), ("reward", "R"), ("punishment", "P"), ("sucker", "S"))


class DilemmaParams(GameParams):
    temptation: float = Field(default=5.0, ge=0, le=MAX_PAYOFF)
    """T: what a defector earns against a cooperator (T > R > P > S and 2R > T + S are required)."""
    reward: float = Field(default=3.0, ge=0, le=MAX_PAYOFF)
    """R: what each earns when both cooperate."""
    punishment: float = Field(default=1.0, ge=0, le=MAX_PAYOFF)
    """P: what each earns when both defect (the equilibrium's payoff per round)."""
    sucker: float = Field(default=0.0, ge=0, le=MAX_PAYOFF)
    """S: what a cooperator earns against a defector."""
    rounds: int = Field(default=10, ge=1, le=1000)
    """K: the announced number of rounds."""

    @model_validator(mode="after")
    def _a_dilemma(self) -> DilemmaParams:
        values = [(key, sym, float(getattr(self, key))) for key, sym in ORDER]
        for (hi, hs, a), (lo, ls, b) in zip(values, values[1:]):
            if not a > b:
                raise ValueError(f"{lo} ({fmt_num(b)}) must be below {hi} ({fmt_num(a)}): a Prisoner's Dilemma "
                                 f"needs temptation > reward > punishment > sucker ({hs} > {ls} in T > R > P > S)")
        t, r, s = self.temptation, self.reward, self.sucker
        if not 2 * r > t + s:
            raise ValueError(f"reward ({fmt_num(r)}) is too small: the repeated dilemma needs 2 x reward > temptation "
                             f"+ sucker (2R > T + S), here 2 x {fmt_num(r)} = {fmt_num(2 * r)} is not above "
                             f"{fmt_num(t)} + {fmt_num(s)} = {fmt_num(t + s)}; otherwise taking turns exploiting "
                             "each other pays more than cooperating")
        return self


@dataclass(frozen=True)
class DilemmaState:
    setup: Setup
    replies: tuple[tuple[str | None, str | None], ...] = ()  # per finished round, each seat's choice (None: unusable)

    @property
    def round(self) -> int:
        """Rounds finished so far."""
        return len(self.replies)


def played(reply: str | None) -> str:
    """The move a reply is played as: an unusable reply (None) is a defection."""
    return COOPERATE if reply == COOPERATE else DEFECT


def stage_payoffs(table: Mapping[str, Any], a: str, b: str) -> tuple[float, float]:
    """One round's payoffs for the played moves ``a`` (seat 0) and ``b`` (seat 1)."""
    t, r, p, s = (float(table[k]) for k, _ in ORDER)
    return {(COOPERATE, COOPERATE): (r, r), (COOPERATE, DEFECT): (s, t),
            (DEFECT, COOPERATE): (t, s), (DEFECT, DEFECT): (p, p)}[(a, b)]


def equilibrium_payoff(table: Mapping[str, Any]) -> float:
    """Each player's payoff in the subgame-perfect equilibrium: P in every one of the K rounds."""
    return float(table["punishment"]) * int(table["rounds"])


def cooperation_rate(moves: Sequence[Sequence[str]], seat: int) -> float | None:
    """Share of the rounds in which ``seat`` played cooperate; None before any round."""
    return sum(1 for m in moves if m[seat] == COOPERATE) / len(moves) if moves else None


class PrisonersDilemma(Game[DilemmaParams, DilemmaState]):
    name: ClassVar[str] = "prisoners_dilemma"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "Classic: the Prisoner's Dilemma repeated for an announced number of rounds"
    Params = DilemmaParams
    action_key: ClassVar[str] = "action"
    history_key: ClassVar[str] = "cooperation rate"
    info: ClassVar[GameInfo] = GameInfo(
        title="Prisoner's Dilemma (repeated)", rounds=True, family="classic", n_players=2,
        policies=("rational", "random", "tit_for_tat"), action_axis="cooperation rate",
        equilibrium_note="SPE: defect in every round (backward induction), P x rounds each",
        deviation_note="share of rounds cooperated", round_curve="cooperation")

    def setup(self, params: DilemmaParams, n_players: int, rng: np.random.Generator) -> Setup:
        if n_players != 2:
            raise ValueError(f"{self.name} is a two-player game, got {n_players} players")
        return Setup(2, params.model_dump())

    def initial_state(self, setup: Setup) -> DilemmaState:
        return DilemmaState(setup)

    def to_move(self, state: DilemmaState) -> tuple[int, ...]:
        return () if state.round >= int(state.setup["rounds"]) else (0, 1)

    def action_spec(self, state: DilemmaState, player: int) -> ActionSpec:
        return ActionSpec((ActionField("action", "choice", "your move this round", choices=(COOPERATE, DEFECT)),))

    def apply(self, state: DilemmaState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> DilemmaState:
        assert self.to_move(state), "apply() on a finished game"
        a0, a1 = actions.get(0), actions.get(1)
        pair = (None if a0 is None else str(a0["action"]), None if a1 is None else str(a1["action"]))
        return replace(state, replies=state.replies + (pair,))

    def _moves(self, state: DilemmaState) -> list[tuple[str, str]]:
        return [(played(a), played(b)) for a, b in state.replies]

    def outcome(self, state: DilemmaState) -> Outcome:
        moves = self._moves(state)
        pays = [stage_payoffs(state.setup.values, a, b) for a, b in moves]
        totals = tuple(math.fsum(p[i] for p in pays) for i in (0, 1))
        best = max(totals)
        return Outcome(actions=tuple(cooperation_rate(moves, i) for i in (0, 1)),
                       valid=tuple(all(r[i] is not None for r in state.replies) for i in (0, 1)),
                       payoffs=totals, winners=tuple(i for i in (0, 1) if totals[i] == best) if moves else (),
                       void=False, extra={"rounds": state.round})

    def events(self, before: DilemmaState, after: DilemmaState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        replies = after.replies[-1]
        moves = [played(x) for x in replies]
        return {"choices": list(replies), "moves": moves,
                "payoffs": list(stage_payoffs(after.setup.values, *moves)),
                "cooperation": sum(1 for m in moves if m == COOPERATE) / 2}

    # ---- prompts ----
    def observation(self, state: DilemmaState, player: int) -> dict[str, Any]:
        s = state.setup
        return {"rounds": s["rounds"], "round": state.round + 1, "temptation": fmt_num(s["temptation"]),
                "reward": fmt_num(s["reward"]), "punishment": fmt_num(s["punishment"]),
                "sucker": fmt_num(s["sucker"])}

    def report(self, before: DilemmaState, after: DilemmaState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any]:
        other = 1 - player
        replies = after.replies[-1]
        moves = [played(x) for x in replies]
        pay = stage_payoffs(after.setup.values, *moves)
        totals = self.outcome(after).payoffs

        def said(seat: int) -> str:
            return moves[seat] if replies[seat] is not None else "no usable reply (played as defect)"

        return {"round": after.round, "your_choice": said(player), "other_choice": said(other),
                "your_payoff": fmt_num(pay[player]), "other_payoff": fmt_num(pay[other]),
                "your_total": fmt_num(totals[player]), "other_total": fmt_num(totals[other])}

    # ---- capabilities ----
    def max_moves(self, params: DilemmaParams, n_players: int) -> tuple[int, bool]:
        return int(params.rounds), True

    def equilibrium(self, setup: Setup) -> Outcome:
        pay = equilibrium_payoff(setup.values)
        return Outcome(actions=(0.0, 0.0), valid=(True, True), payoffs=(pay, pay), winners=(0, 1), void=False,
                       extra={"rounds": int(setup["rounds"])})

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        rate = outcome.actions[player]
        return None if rate is None else abs(rate - ne.actions[player])

    def strategy(self, state: DilemmaState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        if kind not in self.info.policies or not self.to_move(state):
            return super().strategy(state, player, kind, rng, **kw)
        if kind == "random":
            assert rng is not None
            return {"action": (COOPERATE, DEFECT)[int(rng.integers(2))]}
        if kind == "tit_for_tat":
            return {"action": played(state.replies[-1][1 - player]) if state.replies else COOPERATE}
        return {"action": DEFECT}  # rational: the subgame-perfect equilibrium

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return dilemma_metrics([r["events"] for r in rounds])


def dilemma_metrics(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's metrics from its round events (see the module docstring)."""
    moves = [tuple(e["moves"]) for e in events]
    k = len(moves)

    def share(test: Any) -> float | None:
        return sum(1 for m in moves if test(m)) / k if k else None

    def first_defection(seat: int) -> int | None:
        return next((t + 1 for t, m in enumerate(moves) if m[seat] == DEFECT), None)

    def reciprocity(seat: int) -> float | None:
        if k < 2:
            return None
        return sum(1 for t in range(1, k) if moves[t][seat] == moves[t - 1][1 - seat]) / (k - 1)

    return {
        "cooperation_rate": [cooperation_rate(moves, i) for i in (0, 1)],
        "payoff": [math.fsum(float(e["payoffs"][i]) for e in events) for i in (0, 1)],
        "mutual_cooperation_rate": share(lambda m: m == (COOPERATE, COOPERATE)),
        "mutual_defection_rate": share(lambda m: m == (DEFECT, DEFECT)),
        "sucker_rate": [share(lambda m, i=i: m[i] == COOPERATE and m[1 - i] == DEFECT) for i in (0, 1)],
        "first_defection": [first_defection(i) for i in (0, 1)],
        "reciprocity": [reciprocity(i) for i in (0, 1)],
        "invalid_rounds": [sum(1 for e in events if e["choices"][i] is None) for i in (0, 1)],
    }
