"""GAMA-Bench (8): the Pirate Game, sequential proposals and votes over a pot of gold.

Rules: N pirates are ranked by seniority, player 0 the most senior. The most senior survivor proposes an
``allocation`` of all ``gold`` coins (whole numbers) over the survivors; then every other survivor votes
``accept`` or ``reject`` at the same time (the proposer's own vote is an automatic accept). The plan passes
when accepts / survivors >= 1/2 and everyone gets their share; otherwise the proposer is thrown overboard
and the next survivor proposes. A pirate left alone takes everything, so there are at most N proposals.
Each proposal and each vote is one move of the round log; survivors get a report after every vote.

Rule breaks: a proposer whose plan is unusable (wrong keys, not summing to the gold, fractions) is thrown
overboard without a vote, and the proposal counts with the worst distance (200) in the score; an unusable
vote counts as no accept for the plan and as a wrong vote in the score. A lone pirate with an unusable
plan ends the game with nobody paid.

Payoffs: the gold each pirate gets from the plan that passed (0 when thrown overboard or none passed).

Parameters (defaults as the leaderboard): ``gold`` 100, ``scoring`` "code" or "paper".

Score (per run, the reference code): for the k-th proposal over n survivors, L1_k = sum_j |g_j x 100 / gold -
opt_j| against the 100-gold optimal plan opt = [100 - floor((n - 1) / 2), 0, 1, 0, 1, ...] (proposer first).
Vote accuracy pools every non-proposer vote of every proposal: a vote at relative position j (1 = next in
rank) on an offer of g coins is correct if g >= 2 and accept, g = 0 and reject, or g = 1, j even and
accept; with ``scoring = "code"`` a vote on g = 1 at odd j is never correct (as the reference computes),
with ``scoring = "paper"`` reject is correct there (as the paper states). Score = (200 - mean L1) / 200 x
50 + 50 x accuracy; a run without any vote has accuracy 0.

Equilibrium (backward induction, a pirate rejects when indifferent): the senior pirate offers 1 coin to
every pirate at an even relative position and keeps gold - floor((N - 1) / 2); those pirates accept, the
plan passes with exactly half or more, and nobody is thrown overboard. It needs gold >= floor((N - 1) /
2); with less gold no equilibrium is declared. The ``rational`` baseline proposes that plan (over the
current survivors, giving the coins to as many even positions as the gold allows) and votes per the
score's rule (accept g >= 2 and even-position single coins, reject the rest). Deviation: |gold received -
equilibrium gold| / gold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ..base import (
    ActionField,
    ActionSpec,
    Game,
    GameInfo,
    GameParams,
    ImportedRun,
    Outcome,
    ReplayCheck,
    Setup,
    foreign_move_problem,
    game_number,
    whole_number,
)
from .reference import outside_rules, player_count

MAX_PIRATES = 200  # the 100-gold optimum needs 100 - floor((n - 1) / 2) >= 0


class PirateParams(GameParams):
    gold: int = Field(default=100, ge=1, le=1_000_000)
    """The coins the proposer divides."""
    scoring: Literal["code", "paper"] = "code"
    """`code`: the released code's 0-100 score; `paper`: rejecting a 1-gold offer at an odd position counts as
    correct."""


@dataclass(frozen=True)
class PirateState:
    setup: Setup
    alive: tuple[int, ...]  # in seniority order; alive[0] proposes
    phase: Literal["propose", "vote", "done"] = "propose"
    proposal: tuple[int, ...] | None = None  # gold per survivor, aligned with ``alive``, during the vote
    proposals: int = 0  # proposals made so far
    paid: tuple[float, ...] | None = None  # per seat, once a plan passed
    broke: frozenset[int] = frozenset()  # seats that broke a rule
    last: tuple[Any, ...] = ()  # per seat, its last valid reply value (None: none yet)


def optimal_plan(n: int, gold: int) -> list[int]:
    """The proposer-first optimal plan for n pirates: [gold - floor((n - 1) / 2), 0, 1, 0, 1, ...]."""
    return [gold - (n - 1) // 2] + [1 if j % 2 == 0 else 0 for j in range(1, n)]


def rational_plan(n: int, gold: int) -> list[int]:
    """The optimal plan, or with too little gold one coin to each of the first even positions."""
    plan = [0] * n
    coins = gold
    for j in range(2, n, 2):
        if coins == 0:
            break
        plan[j] = 1
        coins -= 1
    plan[0] = coins
    return plan


def vote_correct(g: float, j: int, vote: str | None, scoring: str = "code") -> bool:
    """Whether the vote of the pirate at relative position j on an offer of g coins is right."""
    if vote is None:
        return False
    if g >= 2:
        return vote == "accept"
    if g == 0:
        return vote == "reject"
    if g == 1:
        if j % 2 == 0:
            return vote == "accept"
        return scoring == "paper" and vote == "reject"
    return False  # fractions between 0 and 2 other than 1 (imported plans only)


def _set(values: tuple[Any, ...], i: int, value: Any) -> tuple[Any, ...]:
    return values[:i] + (value,) + values[i + 1:]


def _plan_text(alive: Sequence[int], plan: Sequence[int]) -> str:
    return ", ".join(f"player {i}: {g}" for i, g in zip(alive, plan))


class PirateGame(Game[PirateParams, PirateState]):
    name: ClassVar[str] = "pirate_game"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GAMA-Bench: pirates propose and vote on splitting gold; 0-100 score"
    Params = PirateParams
    action_key: ClassVar[str] = "allocation"
    history_key: ClassVar[str] = "last reply"
    info: ClassVar[GameInfo] = GameInfo(
        title="Pirate game", moves="sequential", rounds=True, score=True, family="gamabench",
        reference=(("pirate_game", {}),),
        action_axis="gold received / gold", scale_key="gold",
        equilibrium_note="NE: senior keeps gold - floor((N-1)/2), 1 coin to every second pirate",
        deviation_note="|gold received - NE gold| / gold", round_curve="proposer_share")

    def setup(self, params: PirateParams, n_players: int, rng: np.random.Generator) -> Setup:
        if not 2 <= n_players <= MAX_PIRATES:
            raise ValueError(f"the pirate game needs 2 to {MAX_PIRATES} players, got {n_players}")
        return Setup(n_players, params.model_dump())

    def initial_state(self, setup: Setup) -> PirateState:
        return PirateState(setup, tuple(range(setup.n_players)), last=(None,) * setup.n_players)

    def to_move(self, state: PirateState) -> tuple[int, ...]:
        if state.phase == "propose":
            return (state.alive[0],)
        if state.phase == "vote":
            return state.alive[1:]
        return ()

    def action_spec(self, state: PirateState, player: int) -> ActionSpec:
        if state.phase == "vote":
            return ActionSpec((ActionField("vote", "choice", "whether you accept the proposed plan",
                                           choices=("accept", "reject")),))
        return ActionSpec((ActionField("allocation", "allocation", "how many coins each surviving pirate gets",
                                       items=tuple(str(i) for i in state.alive),
                                       total=float(state.setup["gold"]), integer=True),))

    def apply(self, state: PirateState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> PirateState:
        assert self.to_move(state), "apply() on a finished game"
        alive = state.alive
        if state.phase == "propose":
            proposer = alive[0]
            plan = self._plan(state, actions.get(proposer))
            if plan is None:
                rest = alive[1:]
                return replace(state, alive=rest, proposals=state.proposals + 1, broke=state.broke | {proposer},
                               phase="propose" if rest else "done")
            last = _set(state.last, proposer, actions[proposer]["allocation"])  # type: ignore[index]  # a plan: it is there
            if len(alive) == 1:
                return replace(state, proposals=state.proposals + 1, phase="done", proposal=tuple(plan),
                               paid=self._paid(state.setup.n_players, alive, plan), last=last)
            return replace(state, phase="vote", proposal=tuple(plan), proposals=state.proposals + 1, last=last)
        votes = [actions.get(i) for i in alive[1:]]
        last = state.last
        broke = set(state.broke)
        for i, v in zip(alive[1:], votes):
            if v is None:
                broke.add(i)
            else:
                last = _set(last, i, v["vote"])
        accepts = 1 + sum(1 for v in votes if v is not None and v["vote"] == "accept")
        assert state.proposal is not None
        if accepts / len(alive) >= 0.5:
            return replace(state, phase="done", paid=self._paid(state.setup.n_players, alive, state.proposal),
                           last=last, broke=frozenset(broke))
        return replace(state, alive=alive[1:], phase="propose", proposal=None, last=last, broke=frozenset(broke))

    @staticmethod
    def _plan(state: PirateState, action: dict[str, Any] | None) -> list[int] | None:
        if action is None:
            return None
        alloc = action.get("allocation")
        if not isinstance(alloc, Mapping) or set(alloc) != {str(i) for i in state.alive}:
            return None
        plan = [alloc[str(i)] for i in state.alive]
        ok = all(isinstance(g, int) and g >= 0 for g in plan) and sum(plan) == state.setup["gold"]
        return plan if ok else None

    @staticmethod
    def _paid(n: int, alive: Sequence[int], plan: Sequence[int]) -> tuple[float, ...]:
        share = dict(zip(alive, plan))
        return tuple(float(share.get(i, 0)) for i in range(n))

    def outcome(self, state: PirateState) -> Outcome:
        n = state.setup.n_players
        paid = state.paid or (0.0,) * n
        best = max(paid)
        winners = tuple(i for i in range(n) if paid[i] == best) if state.paid is not None and best > 0 else ()
        return Outcome(actions=state.last,
                       valid=tuple(i not in state.broke for i in range(n)), payoffs=paid, winners=winners,
                       void=state.paid is None,
                       extra={"proposals": state.proposals, "survivors": list(state.alive),
                              "passed": state.paid is not None})

    def events(self, before: PirateState, after: PirateState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        gold = before.setup["gold"]
        alive = list(before.alive)
        base = {"proposal_no": after.proposals - 1, "proposer": alive[0], "alive": alive}
        if before.phase == "propose":
            plan = None if after.proposal is None else list(after.proposal)
            return {**base, "phase": "propose", "proposal": plan, "valid": plan is not None,
                    "passed": True if after.phase == "done" and after.paid is not None else None,
                    "proposer_share": plan[0] / gold if plan else None}
        assert before.proposal is not None
        votes: list[str | None] = ["accept"]
        votes += [None if (a := actions.get(i)) is None else a["vote"] for i in alive[1:]]
        return {**base, "phase": "vote", "proposal": list(before.proposal), "votes": votes,
                "accepts": sum(1 for v in votes if v == "accept"), "passed": after.paid is not None,
                "proposer_share": before.proposal[0] / gold}

    # ---- prompts ----
    def observation(self, state: PirateState, player: int) -> dict[str, Any]:
        s = state.setup
        gold = s["gold"]
        if state.phase == "vote" and state.proposal is not None and player in state.alive:
            mine = dict(zip(state.alive, state.proposal))[player]
            request = (f"Player {state.alive[0]} proposes this split: {_plan_text(state.alive, state.proposal)}. "
                       f"You would get {mine} coin(s). Do you accept or reject the plan?")
        elif state.phase == "propose" and state.alive and state.alive[0] == player:
            request = f"You are the most senior pirate still aboard: propose how the {gold} coins are split."
        else:
            request = "You have nothing to decide right now."
        return {"n_players": s.n_players, "gold": gold, "rank": player + 1, "n_alive": len(state.alive),
                "alive_list": ", ".join(f"player {i}" for i in state.alive),
                "proposal_no": state.proposals + (state.phase == "propose"),
                "request": request}

    def report(self, before: PirateState, after: PirateState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any] | None:
        if player not in before.alive:
            return None
        proposer = before.alive[0]
        if before.phase == "propose":
            if after.phase == "vote":
                return None  # the voters read the plan in their request
            if after.paid is None:
                what = f"player {proposer} made no usable proposal and was thrown overboard."
            else:
                what = f"player {proposer}, the last pirate aboard, keeps all {before.setup['gold']} coins."
            return {"proposal_no": after.proposals, "what": what}
        ev = self.events(before, after, actions)
        what = (f"{ev['accepts']} of {len(before.alive)} pirates (the proposer included) accepted the plan of "
                f"player {proposer} ({_plan_text(before.alive, before.proposal or ())}). ")
        if after.paid is not None:
            what += f"It passed: you get {after.paid[player]:g} coin(s)."
        else:
            what += f"It failed: player {proposer} is thrown overboard" + (" (that is you)." if player == proposer
                                                                           else ".")
        return {"proposal_no": after.proposals, "what": what}

    # ---- capabilities ----
    def max_moves(self, params: GameParams, n_players: int) -> tuple[int, bool]:
        return n_players, False  # a pirate votes on every earlier proposal and proposes at most once

    def equilibrium(self, setup: Setup) -> Outcome | None:
        n, gold = setup.n_players, setup["gold"]
        if gold < (n - 1) // 2:
            return None
        plan = tuple(float(g) for g in optimal_plan(n, gold))
        best = max(plan)
        actions = ({str(i): g for i, g in enumerate(optimal_plan(n, gold))},) + tuple(
            "accept" if j % 2 == 0 else "reject" for j in range(1, n))
        return Outcome(actions=actions, valid=(True,) * n, payoffs=plan,
                       winners=tuple(i for i in range(n) if plan[i] == best), void=False)

    def deviation(self, setup: Setup, outcome: Outcome, ne: Outcome, player: int) -> float | None:
        return abs(outcome.payoffs[player] - ne.payoffs[player]) / setup["gold"]

    def strategy(self, state: PirateState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        gold = state.setup["gold"]
        if state.phase == "vote":
            if kind == "rational":
                j = state.alive.index(player)
                g = state.proposal[j] if state.proposal is not None else 0
                return {"vote": "accept" if vote_correct(g, j, "accept") else "reject"}
            if kind == "random":
                assert rng is not None
                return {"vote": ("accept", "reject")[int(rng.integers(2))]}
        elif state.phase == "propose":
            n = len(state.alive)
            if kind == "rational":
                plan = rational_plan(n, gold)
                return {"allocation": {str(i): g for i, g in zip(state.alive, plan)}}
            if kind == "random":
                assert rng is not None
                counts = rng.multinomial(gold, [1 / n] * n)
                return {"allocation": {str(i): int(g) for i, g in zip(state.alive, counts)}}
        return super().strategy(state, player, kind, rng, **kw)

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        return pirate_score([r["events"] for r in rounds], setup["gold"], setup.values.get("scoring", "code"))

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        ev = [r["events"] for r in rounds]
        return {"proposals": sum(1 for e in ev if e["phase"] == "propose"),
                "passed": any(e.get("passed") for e in ev)}

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        meta = raw["meta"]
        records = raw["round_records"]
        n = player_count(raw)
        gold = whole_number(meta.get("gold", 100), "meta.gold")
        setup = self.setup(PirateParams(gold=gold), n, np.random.default_rng(0))
        log: list[dict[str, Any]] = []
        problems: list[str] = []  # plans our rules refuse; the reference checked none (any JSON object of numbers)
        for k, rec in enumerate(records):
            alive = list(range(k, n))  # every failed plan throws its proposer, the most senior, overboard
            plan = [_gold(g, k) for g in rec["gold_distribution"]]
            if len(plan) != len(alive):
                problems.append(f"round {k + 1}: a plan for {len(plan)} pirates, {len(alive)} alive")
            elif (problem := foreign_move_problem(self, PirateState(setup, tuple(alive)), alive[0],
                                                  {"allocation": {str(i): g for i, g in zip(alive, plan)}})):
                problems.append(f"round {k + 1}, player {alive[0]}: {problem[1]}")
            votes = ["accept" if "accept" in str(v).lower() else "reject" for v in rec["responses"]]
            votes[0] = "accept"
            accepts = votes.count("accept")
            passed = accepts / len(alive) >= 0.5
            base = {"proposal_no": k, "proposer": alive[0], "alive": alive, "proposal": plan,
                    "proposer_share": plan[0] / gold}
            log.append({"round": len(log), "actions": [{"allocation": {str(i): g for i, g in zip(alive, plan)}}
                                                       if i == alive[0] else None for i in range(n)],
                        "events": {**base, "phase": "propose", "valid": True, "passed": None}})
            acts: list[dict[str, Any] | None] = [None] * n
            for i, v in zip(alive[1:], votes[1:]):
                acts[i] = {"vote": v}
            log.append({"round": len(log), "actions": acts,
                        "events": {**base, "phase": "vote", "votes": votes, "accepts": accepts,
                                   "passed": passed}})
        payoffs = None
        if records:
            alive = list(range(len(records) - 1, n))
            share = dict(zip(alive, log[-1]["events"]["proposal"])) if log[-1]["events"]["passed"] else {}
            payoffs = [float(share.get(i, 0)) for i in range(n)]
        players = raw["player_data"][:n]
        messages = [list(p["prompt"]) for p in players] if all("prompt" in p for p in players) else None
        return ImportedRun({"gold": gold}, n, log, payoffs, messages, check=outside_rules(_plan_check(log), problems))


def _gold(value: Any, k: int) -> int | float:
    """One share of a recorded plan: a finite number (whole numbers as ints); ForeignValue ``bad_move`` else."""
    x = game_number(value, f"round {k + 1}: gold_distribution", "bad_move")
    return int(x) if x.is_integer() else x


def _plan_check(log: Sequence[Mapping[str, Any]]) -> ReplayCheck | None:
    """The reference went on to a next proposal only after a plan failed, so every plan but its last failed
    and the last passed; our vote rule (half of the living, the proposer included) must say the same."""
    passed = [bool(r["events"]["passed"]) for r in log if r["events"]["phase"] == "vote"]
    if not passed:
        return None
    recorded = [False] * (len(passed) - 1) + [True]
    if passed == recorded:
        return ReplayCheck(True, recorded, passed)
    wrong = [i + 1 for i, (a, b) in enumerate(zip(recorded, passed)) if a != b]
    return ReplayCheck(False, recorded, passed, ("vote_rule_differs",), "rule difference",
                       f"proposal(s) {', '.join(map(str, wrong))}: the reference went on (or stopped) where our "
                       "vote rule says the plan " + ("passed" if passed[wrong[0] - 1] else "failed"))


def pirate_score(events: Sequence[Mapping[str, Any]], gold: float, scoring: str = "code") -> float | None:
    """(200 - mean L1) / 200 x 50 + 50 x vote accuracy (see the module docstring); None without proposals."""
    dists = []
    right = total = 0
    for e in events:
        n = len(e["alive"])
        if e["phase"] == "propose":
            plan = e["proposal"]
            if plan is None:
                dists.append(200.0)
            else:
                opt = optimal_plan(n, 100)
                dists.append(math.fsum(abs(g * 100 / gold - o) for g, o in zip(plan, opt)))
        elif e["phase"] == "vote":
            for j in range(1, n):
                total += 1
                right += vote_correct(e["proposal"][j], j, e["votes"][j], scoring)
    if not dists:
        return None
    accuracy = right / total if total else 0.0
    return (200 - math.fsum(dists) / len(dists)) / 200 * 50 + 50 * accuracy
