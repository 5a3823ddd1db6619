"""GAMA-Bench (7): Battle Royale, a sequential shooting game with one shooter per turn.

Rules: player i hits with probability ``base_hit_rate + interval x i`` percent (so hit rates rise with the
id). Turns go to the survivors in ascending id, cycling: after the shooter, the next surviving id above it,
else the lowest surviving id. The shooter answers ``target``: the id of another surviving player, or null
(or -1) to miss on purpose. A shot hits with the shooter's hit rate, drawn from the turn's chance
generator, and a hit player is out. The game ends after ``max_turns`` turns or when one player is left.
Everyone still in the game (and a player hit in this turn) gets a report after every turn.

Rule breaks: naming oneself, an eliminated or unknown player, or an unusable reply is a rule break (the
reference accepted self and eliminated targets as wasted shots); the turn is lost as a miss and, like an
intentional miss, counts as a turn that was not correct.

Payoffs: the survivors at the end split a prize of 1 (a sole survivor gets 1), everyone else 0.

Parameters (defaults as the leaderboard): ``base_hit_rate`` 35, ``interval`` 5 (percent), ``max_turns`` 20.

Score (per run, the reference code): #correct turns / #turns x 100, where a turn is correct when its
shooter aimed at the surviving player with the highest hit rate other than itself (on equal rates, any of
the highest). Intentional misses and rule-breaking turns count as turns and are never correct. The paper
speaks of the "number of rounds played", so paper and code agree (spec, discrepancy 5) and there is no
``scoring`` switch. Each turn's events hold the shooter, its target, whether it hit and who was alive
before it, so the score is a pure function of the round log.

Equilibrium: none is declared (a stochastic many-player truel; shooting the strongest is not always an
equilibrium, and intentional misses can be better). The ``rational`` baseline plays what the score
rewards: aim at the strongest other survivor. ``random`` picks uniformly among the other survivors and the
intentional miss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from ..base import ActionField, ActionSpec, Game, GameInfo, GameParams, ImportedRun, Outcome, Setup, whole_number
from .reference import player_count


class BattleParams(GameParams):
    base_hit_rate: int = Field(default=35, ge=0, le=100)
    """Player 0's hit rate in percent; player i hits with base_hit_rate + interval x i."""
    interval: int = Field(default=5, ge=0, le=100)
    """How much each next player's hit rate rises, in percent."""
    max_turns: int = Field(default=20, ge=1, le=10_000)
    """The game ends after this many turns (or when one player is left)."""


@dataclass(frozen=True)
class Turn:
    shooter: int
    target: int | None  # None: intentional miss or a rule break
    valid: bool
    hit: bool
    alive: tuple[int, ...]  # survivors before the turn


@dataclass(frozen=True)
class BattleState:
    setup: Setup
    alive: tuple[int, ...]
    shooter: int
    turns: tuple[Turn, ...] = ()


def _next_shooter(alive: Sequence[int], after: int) -> int:
    later = [i for i in alive if i > after]
    return later[0] if later else alive[0]


def _strongest(rates: Sequence[float], alive: Sequence[int], shooter: int) -> list[int]:
    """The other survivors with the highest hit rate (the correct targets)."""
    others = [i for i in alive if i != shooter]
    if not others:
        return []
    best = max(rates[i] for i in others)
    return [i for i in others if rates[i] == best]


def _turn_events(setup: Setup, t: int, turn: Turn) -> dict[str, Any]:
    right = _strongest(setup["hit_rates"], turn.alive, turn.shooter)
    correct = turn.target is not None and turn.target in right
    return {"turn": t, "shooter": turn.shooter, "target": turn.target, "valid": turn.valid, "hit": turn.hit,
            "alive": list(turn.alive), "eliminated": turn.target if turn.hit else None,
            "strongest": right, "at_strongest": 1.0 if correct else 0.0}


class BattleRoyale(Game[BattleParams, BattleState]):
    name: ClassVar[str] = "battle_royale"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "GAMA-Bench: survival shooting game, one shooter per turn; 0-100 score"
    Params = BattleParams
    action_key: ClassVar[str] = "target"
    history_key: ClassVar[str] = "share of shots at the strongest"
    info: ClassVar[GameInfo] = GameInfo(
        title="Battle Royale", moves="sequential", rounds=True, score=True, family="gamabench",
        reference=(("battle_royale", {}),),
        action_axis="share of own turns aimed at the strongest", equilibrium_note="no equilibrium declared",
        round_curve="at_strongest")

    def setup(self, params: BattleParams, n_players: int, rng: np.random.Generator) -> Setup:
        if n_players < 2:
            raise ValueError("Battle Royale needs at least 2 players")
        top = params.base_hit_rate + params.interval * (n_players - 1)
        if top > 100:
            raise ValueError(f"hit rates base_hit_rate + interval x (players - 1) reach {top}%, above 100%")
        rates = [params.base_hit_rate + params.interval * i for i in range(n_players)]
        return Setup(n_players, {**params.model_dump(), "hit_rates": rates})

    def initial_state(self, setup: Setup) -> BattleState:
        return BattleState(setup, tuple(range(setup.n_players)), 0)

    def to_move(self, state: BattleState) -> tuple[int, ...]:
        if len(state.alive) <= 1 or len(state.turns) >= state.setup["max_turns"]:
            return ()
        return (state.shooter,)

    def action_spec(self, state: BattleState, player: int) -> ActionSpec:
        targets = tuple(i for i in state.alive if i != player)
        return ActionSpec((ActionField("target", "target", "the id of the player you shoot at, or null to miss "
                                       "on purpose", targets=targets, allow_none=True),))

    def apply(self, state: BattleState, actions: Mapping[int, dict[str, Any] | None],
              rng: np.random.Generator | None = None) -> BattleState:
        assert self.to_move(state), "apply() on a finished game"
        shooter = state.shooter
        action = actions.get(shooter)
        target = None if action is None else action.get("target")
        if target is not None and (target == shooter or target not in state.alive):
            action, target = None, None  # the judge refuses these; a hand-made action is refused here too
        hit = False
        if target is not None:
            if rng is None:
                raise ValueError("Battle Royale needs the turn's chance generator to resolve a shot")
            hit = bool(rng.random() < state.setup["hit_rates"][shooter] / 100)
        turn = Turn(shooter, target, action is not None, hit, state.alive)
        alive = tuple(i for i in state.alive if not (hit and i == target))
        nxt = _next_shooter(alive, shooter) if alive else shooter
        return replace(state, alive=alive, shooter=nxt, turns=state.turns + (turn,))

    def outcome(self, state: BattleState) -> Outcome:
        n = state.setup.n_players
        share = 1.0 / len(state.alive) if state.alive else 0.0
        payoffs = tuple(share if i in state.alive else 0.0 for i in range(n))
        valid = tuple(all(t.valid for t in state.turns if t.shooter == i) for i in range(n))
        actions = []
        for i in range(n):
            mine = [t for t in state.turns if t.shooter == i]
            right = [t.target is not None and t.target in _strongest(state.setup["hit_rates"], t.alive, i)
                     for t in mine]
            actions.append(sum(right) / len(right) if right else None)
        return Outcome(actions=tuple(actions), valid=valid, payoffs=payoffs, winners=tuple(state.alive),
                       void=False, extra={"turns": len(state.turns), "survivors": list(state.alive)})

    def events(self, before: BattleState, after: BattleState,
               actions: Mapping[int, dict[str, Any] | None]) -> dict[str, Any]:
        return _turn_events(after.setup, len(after.turns) - 1, after.turns[-1])

    # ---- prompts ----
    def _describe(self, turn: Turn) -> str:
        if not turn.valid:
            return f"player {turn.shooter} gave no usable answer, so the turn was lost."
        if turn.target is None:
            return f"player {turn.shooter} missed on purpose."
        if turn.hit:
            return f"player {turn.shooter} shot at player {turn.target} and hit: player {turn.target} is out."
        return f"player {turn.shooter} shot at player {turn.target} and missed."

    def observation(self, state: BattleState, player: int) -> dict[str, Any]:
        s = state.setup
        rates = s["hit_rates"]
        so_far = "\n".join(f"- Turn {k + 1}: {self._describe(t)}" for k, t in enumerate(state.turns))
        return {"n_players": s.n_players, "max_turns": s["max_turns"], "turn": len(state.turns) + 1,
                "players_table": "\n".join(f"- player {i}: hit rate {rates[i]}%" for i in range(s.n_players)),
                "alive_list": ", ".join(f"player {i} ({rates[i]}%)" for i in state.alive),
                "n_alive": len(state.alive), "your_rate": rates[player],
                "so_far": so_far or "- Nothing yet: no turn has been played."}

    def report(self, before: BattleState, after: BattleState,
               actions: Mapping[int, dict[str, Any] | None], player: int) -> dict[str, Any] | None:
        if player not in before.alive:
            return None
        turn = after.turns[-1]
        you = " You are out of the game." if turn.hit and turn.target == player else ""
        return {"turn": len(after.turns), "what": self._describe(turn) + you, "n_left": len(after.alive)}

    # ---- capabilities ----
    def max_moves(self, params: BattleParams, n_players: int) -> tuple[int, bool]:
        # a survivor never shoots twice in a row while another survivor is left
        return math.ceil(params.max_turns / 2), False

    def strategy(self, state: BattleState, player: int, kind: str, rng: np.random.Generator | None = None,
                 **kw: Any) -> dict[str, Any]:
        if kind == "rational":
            right = _strongest(state.setup["hit_rates"], state.alive, player)
            return {"target": right[-1] if right else None}
        if kind == "random":
            assert rng is not None
            options: list[int | None] = [i for i in state.alive if i != player] + [None]
            return {"target": options[int(rng.integers(len(options)))]}
        return super().strategy(state, player, kind, rng, **kw)

    def score(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        return battle_score(setup["hit_rates"], [r["events"] for r in rounds])

    def metrics(self, setup: Setup, rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        ev = [r["events"] for r in rounds]
        return {"turns": len(ev), "intentional_misses": sum(1 for e in ev if e["valid"] and e["target"] is None),
                "rule_breaks": sum(1 for e in ev if not e["valid"]), "hits": sum(1 for e in ev if e["hit"])}

    def from_reference(self, raw: Mapping[str, Any]) -> ImportedRun:
        meta = raw["meta"]
        records = raw["round_records"]
        n = player_count(raw)
        base = whole_number(meta.get("base_hit_rate", 35), "meta.base_hit_rate")
        step = whole_number(meta.get("interval", 5), "meta.interval")
        setup = Setup(n, {"hit_rates": [base + step * i for i in range(n)]})
        log = []
        for t, rec in enumerate(records):
            shooter = whole_number(rec["player_shooting"], f"turn {t + 1}: player_shooting", "bad_move")
            alive = tuple(sorted(int(str(p[0]).rsplit("_", 1)[-1]) for p in rec["initial_players"]))
            shot = str(rec.get("shot_player", "null"))
            target = int(shot) if rec.get("action") == "shoot" and shot.lstrip("-").isdigit() else None
            if target is not None and (target == shooter or target not in alive):
                valid, target = False, None  # a wasted shot here, a rule break in our terms
            else:
                valid = True
            turn = Turn(shooter, target, valid, bool(rec.get("out", False)) and target is not None, alive)
            action = {"target": target} if valid else None
            log.append({"round": t, "actions": [action if i == shooter else None for i in range(n)],
                        "events": _turn_events(setup, t, turn)})
        params = {"base_hit_rate": base, "interval": step, "max_turns": max(20, len(records))}
        return ImportedRun(params, n, log, None, _messages(raw, n))


def _messages(raw: Mapping[str, Any], n: int) -> list[list[dict[str, Any]]] | None:
    players = raw["player_data"][:n]
    return [list(p["prompt"]) for p in players] if all("prompt" in p for p in players) else None


def battle_score(rates: Sequence[float], events: Sequence[Mapping[str, Any]]) -> float | None:
    """#correct turns / #turns x 100 (see the module docstring); None for a run without turns."""
    if not events:
        return None
    correct = sum(1 for e in events
                  if e["target"] is not None and e["target"] in _strongest(rates, e["alive"], e["shooter"]))
    return correct / len(events) * 100
