"""Steering as a game: prompt actions for the steered player, and the steering subgame for OpenSpiel.

The steering paper (spec section 3) lets one player pick a *prompt action* (a tone, a concrete offer) that
is inserted into its prompt before an LLM writes its message; the values of the actions come from sampled
continuations of the game, and counterfactual regret minimisation over those values picks the mix of
actions. This module holds the pure parts:

- the action spaces: tones for every game with messages, spaces a game declares itself
  (``Game.prompt_actions``, e.g. fruit trade's 24 one-for-one offers) and lists written in TOML; the
  uninformed ``any`` action (no instruction) is always part of a space, since CFR gain is measured
  against it;
- the subgame after the unsteered prefix as a real OpenSpiel game: the steered player picks an action,
  chance picks one of the LLM samples (uniformly), the payoffs are those the samples earned. OpenSpiel's
  own ``CFRSolver`` and ``nash_conv`` solve it, so the numbers are OpenSpiel's, not a re-implementation.

OpenSpiel is an optional dependency (``pip install econarena[steer]``), imported only when solving.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import Game, GameParams
from ..text import is_control

ANY = "any"
TONES = ("calm", "assertive", "submissive")
MAX_ACTIONS = 256  # a flat action space larger than this is not a prompt choice anyone can read
MAX_INSTRUCTION = 2000


def tone_instruction(tone: str) -> str:
    return f"Tone: be {tone} in what you write."


def tones() -> tuple[tuple[str, str], ...]:
    """The paper's four tone actions: calm, assertive, submissive, and ``any`` (no instruction)."""
    return (*((t, tone_instruction(t)) for t in TONES), (ANY, ""))


class SpaceError(ValueError):
    """An action space that cannot be used; the message names what was expected."""


def action_space(game: Game, spec: str | Sequence[Any], params: GameParams) -> tuple[tuple[str, str], ...]:
    """The (label, instruction) pairs of a space: ``"tones"``, a space the game declares, or a list.

    A list holds strings (each both label and instruction) or ``{label, instruction}`` tables; ``any``
    (the empty instruction) is added when the list does not name it, because CFR gain compares the
    solved mix with it.
    """
    if isinstance(spec, str):
        if spec == "tones":
            return tones()
        declared = game.prompt_actions(spec, params)
        if declared is None:
            offered = ["tones"] + [k for k in ("offers",) if game.prompt_actions(k, params) is not None]
            raise SpaceError(f"{game.name} has no action space {spec!r}; use one of {', '.join(offered)} "
                             "or a list of instructions")
        return tuple(declared)
    out: list[tuple[str, str]] = []
    for i, item in enumerate(spec):
        if isinstance(item, str):
            label, text = item.strip(), item.strip()
        elif isinstance(item, dict) and set(item) <= {"label", "instruction"} and "instruction" in item:
            given, named = item["instruction"], item.get("label", item["instruction"])
            if not isinstance(given, str) or not isinstance(named, str):
                raise SpaceError(f"actions[{i}]: label and instruction must be strings")
            text, label = given, named
            label, text = label.strip(), text.strip()
        else:
            raise SpaceError(f"actions[{i}]: expected a string or a table {{label = \"...\", instruction = "
                             f"\"...\"}}, got {str(item)[:60]!r}")
        if not label or len(label) > 200 or any(is_control(c) for c in label):
            raise SpaceError(f"actions[{i}]: a label of 1 to 200 characters without control characters")
        if len(text) > MAX_INSTRUCTION or "\x00" in text:
            raise SpaceError(f"actions[{i}]: an instruction of at most {MAX_INSTRUCTION} characters")
        if label.casefold() == ANY:
            if isinstance(item, dict) and text:  # dropping the text in silence would run another experiment
                raise SpaceError(f"actions[{i}]: 'any' is the uninformed baseline and carries no instruction "
                                 f"(got {text[:40]!r}); give this action another label")
            label, text = ANY, ""
        out.append((label, text))
    if not any(label == ANY for label, _ in out):
        out.append((ANY, ""))
    seen: set[str] = set()
    for label, _ in out:
        if label.casefold() in seen:
            raise SpaceError(f"actions: the label {label!r} appears twice")
        seen.add(label.casefold())
    if len(out) < 2:
        raise SpaceError("actions: at least one action besides 'any' is needed")
    if len(out) > MAX_ACTIONS:
        raise SpaceError(f"actions: at most {MAX_ACTIONS} actions (got {len(out)})")
    return tuple(out)


# ---- the steering subgame in OpenSpiel ----

GAME_NAME = "econarena_steering"


class OpenSpielMissing(RuntimeError):
    """OpenSpiel is not installed; the message says how to install it."""


def require_openspiel() -> Any:
    try:
        import pyspiel
    except ImportError:  # pragma: no cover - the [steer] extra is part of the test install
        raise OpenSpielMissing("steering solves its subgame with OpenSpiel, which is not installed: "
                               "pip install 'econarena[steer]' (or pip install open_spiel)") from None
    _register(pyspiel)
    return pyspiel


_registered = False
_register_lock = threading.Lock()  # games are solved in worker threads: register exactly once


def _register(pyspiel: Any) -> None:
    """Define and register the Python game once per process (OpenSpiel keeps a global registry)."""
    with _register_lock:
        _register_locked(pyspiel)


def _register_locked(pyspiel: Any) -> None:
    global _registered
    if _registered:
        return
    game_type = _game_type(pyspiel)
    pyspiel.register_game(game_type, _game_class(pyspiel, game_type, _state_class(pyspiel)))
    _registered = True


def _game_type(pyspiel: Any) -> Any:
    """The subgame's OpenSpiel type: sequential, explicit chance, imperfect information, general sum."""
    return pyspiel.GameType(
        short_name=GAME_NAME, long_name="EconArena steering subgame",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=16, min_num_players=1,
        provides_information_state_string=True, provides_information_state_tensor=False,
        provides_observation_string=True, provides_observation_tensor=False,
        parameter_specification={"values": "[[[0.0]]]", "player": 0})



def _game_class(pyspiel: Any, game_type: Any, state: Any) -> Any:
    """The subgame as a pyspiel.Game (a class made here: pyspiel is imported only when a subgame is solved)."""
    class SteeringGame(pyspiel.Game):
        """values[a][s][i]: seat i's payoff when the steered player chose action a and chance sample s."""

        def __init__(self, params: dict[str, Any] | None = None) -> None:
            params = params or {}
            self.values = np.asarray(json.loads(params.get("values", "[[[0.0]]]")), dtype=float)
            self.player = int(params.get("player", 0))
            n_actions, n_samples, n_players = self.values.shape
            info = pyspiel.GameInfo(
                num_distinct_actions=n_actions, max_chance_outcomes=n_samples, num_players=n_players,
                min_utility=float(min(self.values.min(), 0.0)), max_utility=float(max(self.values.max(), 0.0)),
                utility_sum=None, max_game_length=2)
            super().__init__(game_type, info, params)

        def new_initial_state(self) -> Any:
            return state(self)

        def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> Any:
            return _Observer()

    return SteeringGame


def _state_class(pyspiel: Any) -> Any:
    """The subgame's state: the steered player's action, then chance's sample, then the end."""
    class SteeringState(pyspiel.State):
        def __init__(self, game: Any) -> None:
            super().__init__(game)
            self.values = game.values
            self.steered = game.player
            self.action: int | None = None
            self.sample: int | None = None

        def current_player(self) -> int:
            if self.action is None:
                return self.steered
            if self.sample is None:
                return int(pyspiel.PlayerId.CHANCE)
            return int(pyspiel.PlayerId.TERMINAL)

        def _legal_actions(self, player: int) -> list[int]:
            return list(range(self.values.shape[0]))

        def chance_outcomes(self) -> list[tuple[int, float]]:
            n = self.values.shape[1]
            return [(s, 1.0 / n) for s in range(n)]

        def _apply_action(self, action: int) -> None:
            if self.action is None:
                self.action = action
            else:
                self.sample = action

        def _action_to_string(self, player: int, action: int) -> str:
            return f"sample {action}" if player == pyspiel.PlayerId.CHANCE else f"action {action}"

        def is_terminal(self) -> bool:
            return self.sample is not None

        def returns(self) -> list[float]:
            if self.action is None or self.sample is None:
                return [0.0] * self.values.shape[2]
            return [float(x) for x in self.values[self.action, self.sample]]

        def information_state_string(self, player: int) -> str:
            return _info_string(self)

        def observation_string(self, player: int) -> str:
            return _info_string(self)

        def __str__(self) -> str:
            return _info_string(self)

    return SteeringState


def _info_string(state: Any) -> str:
    """The steered player decides once, before any sample is drawn: one information set, named so."""
    return "steer" if state.action is None else f"after {state.action}"


class _Observer:
    """What OpenSpiel's Python-game wrapper asks of an observer; there is nothing hidden to encode."""

    def __init__(self) -> None:
        self.tensor = np.zeros(0, np.float32)
        self.dict: dict[str, Any] = {}

    def set_from(self, state: Any, player: int) -> None:
        pass

    def string_from(self, state: Any, player: int) -> str:
        return _info_string(state)


@dataclass(frozen=True)
class Iteration:
    """The solver's state after ``iteration`` CFR iterations, as logged and reported."""

    iteration: int
    nash_conv: float
    cfr_gain: float
    strategy: tuple[float, ...]  # the average strategy over the actions

    @property
    def ratio(self) -> float | None:
        return self.cfr_gain / self.nash_conv if self.nash_conv > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"iteration": self.iteration, "nash_conv": self.nash_conv, "cfr_gain": self.cfr_gain,
                "ratio": self.ratio, "strategy": list(self.strategy)}


def solve(values: Any, player: int, baseline: int, iterations: int, every: int,
          stop: Callable[[], bool] | None = None) -> list[Iteration]:
    """Run OpenSpiel's CFR on the steering subgame; metrics every ``every`` iterations and at the end.

    ``stop`` is asked before each iteration: when it says so the solve ends there (a partial curve), so a
    run stopped by a signal does not wait for a solve in a worker thread that nobody will read.

    ``values[a][s][i]``: seat i's payoff after action a and sample s. NashConv is OpenSpiel's
    ``nash_conv`` of the average policy (only the steered player decides, so it is max_a u(a) - u(avg));
    CFR gain is the steered player's expected return under the average policy minus under ``baseline``
    (the ``any`` action), both from OpenSpiel's ``expected_returns``.
    """
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 3 or min(arr.shape) < 1:
        raise ValueError(f"values must be actions x samples x players, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("values must be finite numbers")
    if not 0 <= player < arr.shape[2] or not 0 <= baseline < arr.shape[0]:
        raise ValueError("player or baseline out of range")
    if iterations < 1 or every < 1:
        raise ValueError("iterations and every must be >= 1")
    pyspiel = require_openspiel()
    game = pyspiel.load_game(GAME_NAME, {"values": json.dumps(arr.tolist()), "player": player})
    tree = pyspiel.convert_to_cached_tree(game)
    solver = pyspiel.CFRSolver(tree)
    root = tree.new_initial_state()
    key = root.information_state_string(player)
    fixed = pyspiel.TabularPolicy({key: [(baseline, 1.0)]})
    base = pyspiel.expected_returns(root, fixed, -1, True)[player]
    out = []
    for it in range(1, iterations + 1):
        if stop is not None and stop():
            break
        solver.evaluate_and_update_policy()
        if it % every and it != iterations:
            continue
        avg = solver.average_policy()
        probs = dict(avg.get_state_policy(root))
        strategy = tuple(float(probs.get(a, 0.0)) for a in range(arr.shape[0]))
        value = pyspiel.expected_returns(root, avg, -1, True)[player]
        out.append(Iteration(it, _clean(pyspiel.nash_conv(tree, avg)), _clean(value - base), strategy))
    return out


def _clean(x: float) -> float:
    """Round away float dust (1e-17 for an exact 0) so logs read as the numbers they are."""
    return 0.0 if abs(x) < 1e-12 else float(round(x, 12)) if math.isfinite(x) else x

