"""Mixed equilibria: a distribution over choices per seat, the distance to it, and the indifference test.

A game whose equilibrium is a mixture declares it with ``Game.mixed_equilibrium(setup)``: per seat, a
probability per choice of its stage game's one choice field. Deviation from such an equilibrium cannot be
read off one move (a seat that plays Heads half the time plays Heads or Tails on each move), so it is a
distance between the seat's empirical action frequencies f (the share of its moves on each choice, over
the moves pooled: the rounds of a run, or the runs of a session) and the mixture s:

    total variation  TV(f, s) = 1/2 * sum over choices a of |f(a) - s(a)|

from 0 (the frequencies are the mixture) to 1 (the seat only plays choices the mixture never does). With
two choices it is |f(a) - s(a)| for either choice a. Unusable replies are no choice and are left out.

The mixture is an equilibrium when, against the others' mixtures, every choice in a seat's support earns
the same expected payoff and none outside earns more (``mixed_problems`` tests exactly that on the stage
game played from the initial state).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SUPPORT = 1e-12  # a probability above this puts a choice in the support
TOLERANCE = 1e-9  # relative slack on expected payoffs (sums of products of floats)


def mixture_problem(mix: Mapping[str, float], choices: Sequence[str]) -> str | None:
    """Why ``mix`` is no distribution over ``choices`` (a key not a choice, a negative or non-finite
    probability, a sum other than 1), or None."""
    for a, p in mix.items():
        if a not in choices:
            return f"the mixture names {a!r}, not one of the choices {', '.join(choices)}"
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or p < 0:
            return f"the mixture's probability of {a!r} is {p!r}, not a number >= 0"
    total = math.fsum(mix.values())
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        return f"the mixture's probabilities sum to {total!r}, not 1"
    return None


def frequencies(moves: Iterable[str | None], choices: Sequence[str]) -> dict[str, float] | None:
    """The share of the usable moves on each choice; None when no move was usable."""
    counts = dict.fromkeys(choices, 0)
    for m in moves:
        if m is not None:
            counts[m] += 1
    n = sum(counts.values())
    return None if n == 0 else {a: c / n for a, c in counts.items()}


def total_variation(freq: Mapping[str, float], mix: Mapping[str, float]) -> float:
    """1/2 x the sum over choices of |f(a) - s(a)|: 0 on the mixture, at most 1."""
    keys = set(freq) | set(mix)
    return 0.5 * math.fsum(abs(freq.get(a, 0.0) - mix.get(a, 0.0)) for a in keys)


def mixed_problems(game: Any, setup: Any, mixtures: Sequence[Mapping[str, float]]) -> list[str]:
    """Where the declared mixtures are no equilibrium of the stage game at ``game.initial_state(setup)``:
    per seat, the expected payoff of each of its choices against the others' mixtures (every seat moves
    at once there, each with one choice field); a support choice that earns less than the best, or a
    choice outside the support that earns more than the support, is a problem naming seat, choice and gain.

    Expected payoffs are sums over the others' profiles of probability x the seat's payoff once that move is
    applied (``game.outcome`` of the state after it), so the stage game must be one simultaneous move."""
    state = game.initial_state(setup)
    movers = tuple(game.to_move(state))
    n = setup.n_players
    if sorted(movers) != list(range(n)):
        return [f"the mixed-equilibrium test needs every seat to move at once first; to_move gave {movers!r}"]
    fields = [game.action_spec(state, i).fields for i in range(n)]
    if any(len(f) != 1 or f[0].kind != "choice" for f in fields):
        return ["the mixed-equilibrium test needs one choice field per seat"]
    if len(mixtures) != n:
        return [f"the mixed equilibrium has {len(mixtures)} mixtures for {n} seats"]
    out = []
    for i in range(n):
        problem = mixture_problem(mixtures[i], fields[i][0].choices)
        if problem:
            out.append(f"seat {i}: {problem}")
    if out:
        return out

    def payoff(profile: Sequence[str], seat: int) -> float:
        actions = {j: {fields[j][0].name: profile[j]} for j in range(n)}
        return float(game.outcome(game.apply(state, actions, None)).payoffs[seat])

    for i in range(n):
        others = [j for j in range(n) if j != i]
        supports = [[(a, p) for a, p in mixtures[j].items() if p > SUPPORT] for j in others]
        earns = {}
        for a in fields[i][0].choices:
            total = []
            for combo in itertools.product(*supports):
                profile = [""] * n
                profile[i] = a
                weight = 1.0
                for j, (b, p) in zip(others, combo):
                    profile[j] = b
                    weight *= p
                total.append(weight * payoff(profile, i))
            earns[a] = math.fsum(total)
        support = [a for a in earns if mixtures[i].get(a, 0.0) > SUPPORT]
        value = max(earns[a] for a in support)
        slack = TOLERANCE * max(1.0, abs(value))
        for a in support:
            if earns[a] < value - slack:
                out.append(f"seat {i}: {a!r} is in the support but earns {earns[a]!r} against the others' mixture, "
                           f"less than {value!r}: moving its weight to the best choice gains {value - earns[a]!r}")
        for a in earns:
            if a not in support and earns[a] > value + slack:
                out.append(f"seat {i}: deviating to {a!r} (outside the support) earns {earns[a]!r} against the others' "
                           f"mixture, more than the support's {value!r}: a gain of {earns[a] - value!r}")
    return out
