"""``econarena check``: the contract our own games are held to, run on any game (a user's own included).

The same guarantees ``tests/test_conformance.py`` asserts of every built-in game, as named checks a
person reads: the declaration, the prompt template, random play (with garbage replies) ending within the
declared payoff bounds, every baseline playing to the end, determinism, JSON round trips, and the
equilibrium where one is declared. Each check reports its first failure with the seed and seat count that
found it, so it can be replayed.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..games.base import PARSE_ERROR, RULE_VIOLATION, SCHEMA_ERROR, Game, Outcome, Setup, payoff_problem
from .prompts import Template, TemplateError, _check_round_texts

MAX_STEPS = 10_000
GARBAGE = ("", "no idea", "{", '{"x": 1}', '{"%s": "seven"}', '{"%s": 1e308}', '{"%s": -5}', '{"%s": true}')


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str = ""  # what was checked, or the first failure
    skipped: bool = False  # could not run on this game (``detail`` says why): neither a pass nor a failure


class Failed(AssertionError):
    """A broken guarantee; the message says which and where."""


def _seats(game: Game, seed: int) -> int:
    return game.info.n_players or 2 + seed % 5


def _plain(x: Any) -> Any:
    return json.loads(json.dumps(x, allow_nan=False))


def _within(game: Game, setup: Setup, out: Outcome, where: str) -> None:
    n = setup.n_players
    if not (len(out.payoffs) == len(out.valid) == len(out.actions) == n):
        raise Failed(f"{where}: the outcome has {len(out.payoffs)} payoffs, {len(out.valid)} valid flags and "
                     f"{len(out.actions)} actions for {n} seats")
    if not all(isinstance(p, float) for p in out.payoffs):
        raise Failed(f"{where}: payoffs must be finite floats, got {out.payoffs!r}")
    if not all(isinstance(w, int) and 0 <= w < n for w in out.winners) or len(set(out.winners)) != len(out.winners):
        raise Failed(f"{where}: winners {out.winners!r} are not distinct seats 0..{n - 1}")
    problem = payoff_problem(out.payoffs, game.payoff_bounds(setup))  # the same test ``run`` makes
    if problem:
        raise Failed(f"{where}: {problem}")


def play(game: Game, setup: Setup, seed: int, policy: Callable[[Any, int, np.random.Generator], str | None],
         garbage: float = 0.0) -> tuple[Any, list[Any], list[dict[str, Any]]]:
    """Play one run: ``policy`` gives a seat's reply text (None: the game's random strategy); a share
    ``garbage`` of replies is replaced by unusable text. Returns (end state, states, round log)."""
    rng, chance = np.random.default_rng(seed), np.random.default_rng(seed + 1000)
    state = game.initial_state(setup)
    states: list[Any] = [state]
    log: list[dict[str, Any]] = []
    for step in range(MAX_STEPS):
        movers = game.to_move(state)
        if not movers:
            return state, states, log
        if len(set(movers)) != len(movers) or not all(0 <= m < setup.n_players for m in movers):
            raise Failed(f"step {step}: to_move gave {movers!r} for {setup.n_players} seats")
        actions: dict[int, dict[str, Any] | None] = {}
        for seat in movers:
            if rng.random() < garbage:
                text = GARBAGE[int(rng.integers(len(GARBAGE)))].replace("%s", game.action_key)
                judged = game.judge(state, seat, text)
                if judged.violation not in (PARSE_ERROR, SCHEMA_ERROR, RULE_VIOLATION, None):
                    raise Failed(f"step {step}: the garbage reply {text!r} was judged {judged.violation!r}")
            else:
                text = policy(state, seat, rng) or json.dumps(game.strategy(state, seat, "random", rng=rng))
                judged = game.judge(state, seat, text)
                if not judged.valid:
                    raise Failed(f"step {step}, seat {seat}: the baseline's reply {text} was judged invalid: "
                                 f"{judged.detail}")
            actions[seat] = judged.action
        snapshot = copy.deepcopy(state)
        new = game.apply(state, actions, chance)
        if state != snapshot:
            raise Failed(f"step {step}: apply() changed the state it was given (states must be immutable)")
        events = game.events(state, new, actions)
        log.append(_plain({"round": len(log), "actions": [actions.get(i) for i in range(setup.n_players)],
                           "events": events}))
        if game.info.rounds:
            for seat in range(setup.n_players):
                _plain(game.report(state, new, actions, seat))
        state = new
        states.append(state)
    raise Failed(f"no end after {MAX_STEPS} moves: to_move never came back empty")


def _random(state: Any, seat: int, rng: np.random.Generator) -> str | None:
    return None


def _declaration(game: Game, seeds: range) -> str:
    for attr in ("version", "description", "action_key", "history_key"):
        if not getattr(game, attr, None):
            raise Failed(f"{type(game).__name__}.{attr} is empty")
    if not game.info.title:
        raise Failed("info.title is empty (it heads the game's tables)")
    if "random" not in game.policies():
        raise Failed(f"policies {game.policies()!r} lack 'random': every game offers a random baseline")
    doc = (sys.modules[type(game).__module__].__doc__ or "").lower()
    missing = [w for w in ("rules", "parameters", "equilibrium") if w not in doc]
    if missing:
        raise Failed(f"the module docstring of {type(game).__module__} does not state its {', '.join(missing)}")
    return f"{game.name} v{game.version}: {game.info.title}; policies {', '.join(game.policies())}"


def _template(game: Game, seeds: range) -> str:
    try:
        tpl = Template(game)
        setup = game.setup(game.Params(), _seats(game, 0), np.random.default_rng(0))
        state = game.initial_state(setup)
        for env in ("melee", "rational", "self"):
            for variant in ("default", "cot"):
                for hist in (None, [{"run": 1}]):
                    tpl.render(state, 0, env, variant, hist, 1)
        _check_round_texts(game, tpl, state)
    except TemplateError as exc:
        raise Failed(str(exc)) from None
    return f"{tpl.id}: every environment and variant renders"


def _random_play(game: Game, seeds: range) -> str:
    moves = 0
    for garbage in (0.0, 0.3):
        for seed in seeds:
            where = f"seed {seed}, {_seats(game, seed)} seats, garbage {garbage}"
            setup = game.setup(game.Params(), _seats(game, seed), np.random.default_rng(seed))
            try:
                end, states, _ = play(game, setup, seed, _random, garbage)
            except Failed as exc:
                raise Failed(f"{where}: {exc}") from None
            out = game.outcome(end)
            _within(game, setup, out, where)
            if not game.info.rounds and any(not out.valid[w] for w in out.winners):
                raise Failed(f"{where}: a seat that broke a rule won")
            moves = max(moves, len(states) - 1)
    if moves < 1:
        raise Failed("no run had a single move")
    bounds = "within the declared payoff bounds" if game.payoff_bounds(
        game.setup(game.Params(), _seats(game, 0), np.random.default_rng(0))) is not None else \
        "finite payoffs (declare payoff_bounds to check a range)"
    return f"{2 * len(seeds)} runs end (up to {moves} moves), {bounds}"


def _baselines(game: Game, seeds: range) -> str:
    kinds = [(p, {"k": k}) if p == "level_k" else (p, {}) for p in game.policies()
             for k in ((1, 2) if p == "level_k" else (0,))]
    for kind, kw in kinds:
        for seed in seeds[:5]:
            setup = game.setup(game.Params(), _seats(game, seed), np.random.default_rng(seed))

            def policy(state: Any, seat: int, rng: np.random.Generator, kind: str = kind,
                       kw: dict[str, Any] = kw) -> str:
                return json.dumps(game.strategy(state, seat, kind, rng=rng, **kw))

            try:
                end, _, _ = play(game, setup, seed, policy)
            except Failed as exc:
                raise Failed(f"{kind} (seed {seed}): {exc}") from None
            _within(game, setup, game.outcome(end), f"{kind} (seed {seed})")
    names = [kind + (f" k={kw['k']}" if kw else "") for kind, kw in kinds]
    return f"{', '.join(names)} play every seat to the end"


def _determinism(game: Game, seeds: range) -> str:
    for seed in seeds[:5]:
        n = _seats(game, seed)
        a = game.setup(game.Params(), n, np.random.default_rng(seed))
        b = game.setup(game.Params(), n, np.random.default_rng(seed))
        if a != b:
            raise Failed(f"seed {seed}: two draws from the same generator differ (global random state?)")
        end_a, _, log_a = play(game, a, seed, _random, 0.2)
        end_b, _, log_b = play(game, b, seed, _random, 0.2)
        if log_a != log_b or game.outcome(end_a) != game.outcome(end_b):
            raise Failed(f"seed {seed}: the same seed played twice gave different runs")
    return "the same seed draws and plays the same run"


def _json(game: Game, seeds: range) -> str:
    for seed in seeds[:10]:
        setup = game.setup(game.Params(), _seats(game, seed), np.random.default_rng(seed))
        if _plain(setup.to_dict()) != setup.to_dict():
            raise Failed(f"seed {seed}: the setup does not survive JSON unchanged (tuples? numpy numbers?)")
        end, states, log = play(game, setup, seed, _random, 0.3)
        for state in states:
            if not dataclasses.is_dataclass(state) or not state.__dataclass_params__.frozen:  # type: ignore[union-attr]  # on every dataclass; unstubbed
                raise Failed(f"seed {seed}: the state {type(state).__name__} is not a frozen dataclass")
            for seat in range(setup.n_players):
                _plain(game.observation(state, seat))
        for out in (game.outcome(end), game.equilibrium(setup)):
            if out is not None:
                d = dataclasses.asdict(out)
                if _plain(d) != json.loads(json.dumps(d)):
                    raise Failed(f"seed {seed}: the outcome {d} does not survive JSON")
        _plain(game.metrics(setup, log))
        score = game.score(setup, log)
        if score is not None and not -1e-9 <= score <= 100 + 1e-9:
            raise Failed(f"seed {seed}: score {score} is outside 0-100")
        if game.score(setup, _plain(log)) != score:
            raise Failed(f"seed {seed}: the score changes when its round log goes through JSON")
    return "setups, observations, events, outcomes, metrics and scores are plain JSON"


def _equilibrium(game: Game, seeds: range) -> str:
    declared = mixtures = 0
    for seed in seeds:
        n = _seats(game, seed)
        setup = game.setup(game.Params(), n, np.random.default_rng(seed))
        ne = game.equilibrium(setup)
        if ne is None:
            continue
        declared += 1
        where = f"seed {seed}, {n} seats"
        if ne.valid != (True,) * n or not ne.winners:
            raise Failed(f"{where}: the equilibrium must have every seat valid and a winner")
        _within(game, setup, ne, f"{where}, equilibrium")
        if game.equilibrium(setup) != ne:
            raise Failed(f"{where}: the equilibrium differs when asked twice")
        mixed = game.mixed_equilibrium(setup) is not None  # a mixture's payoffs are expected values: one
        mixtures += mixed  # drawn run does not reach them, so only the pure ones are compared with a run
        if "rational" in game.policies() and not mixed:
            end, _, _ = play(game, setup, seed,
                             lambda s, i, r: json.dumps(game.strategy(s, i, "rational", rng=r)))
            got = game.outcome(end).payoffs
            if not all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) for a, b in zip(got, ne.payoffs)):
                raise Failed(f"{where}: the rational baseline earns {got}, the declared equilibrium {ne.payoffs}")
        bad = [i for i in range(n) if game.deviation(setup, ne, ne, i) not in (0, 0.0, None)]
        if bad:
            raise Failed(f"{where}: the equilibrium's own deviation is not 0 for seat {bad[0]}")
    if not declared:
        return "no equilibrium declared (payoff ratio and deviation stay empty)"
    reached = ("its payoffs are the mixtures' expected values (tested by the deviation check)" if mixtures
               else "the rational baseline reaches it")
    return f"declared in {declared} of {len(seeds)} draws; {reached}; its deviation is 0"


class Skipped(Exception):
    """A check that cannot run on this game, and why: reported as a skip, never as a pass."""


GRID = 24  # points between a number field's bounds, before the bounds, the neighbours and the refinement
DEVIATION_SEEDS = 3  # drawn setups the unilateral deviations are searched on
DECISIONS = 2  # of each seat's decisions along the equilibrium path, the first this many are deviated at


def _number_grid(f: Any, at: float) -> list[float]:
    """Candidate values of a number field: the bounds, an even grid between them, the declared action's
    neighbours (one ``step``, one unit or a thousandth of the range either side)."""
    lo = f.low if f.low is not None else at - max(1.0, abs(at))
    hi = f.high if f.high is not None else at + max(1.0, abs(at))
    if f.integer and hi - lo <= 4 * GRID:
        return [float(v) for v in range(math.ceil(lo), math.floor(hi) + 1)]
    near = f.step or (1.0 if f.integer else (hi - lo) / 1000)
    values = {lo, hi, at - near, at + near, *(lo + (hi - lo) * k / GRID for k in range(GRID + 1))}
    return sorted(round(v) if f.integer else v for v in values if lo <= v <= hi)


def _refined(f: Any, values: list[float], best: float) -> list[float]:
    """Ten more points either side of the grid's best value, where the payoff moved most."""
    i = values.index(best)
    a, b = values[max(0, i - 1)], values[min(len(values) - 1, i + 1)]
    more = {a + (b - a) * k / 20 for k in range(21)}
    return sorted({round(v) for v in more} if f.integer else more)


def _gain(game: Game, setup: Setup, seed: int, seat: int, decision: int, action: dict[str, Any]) -> float | None:
    """Seat ``seat``'s payoff when it plays ``action`` at its ``decision``-th decision and the rational
    baseline everywhere else (every other seat throughout); None when the game refuses the action there."""
    count = [0]

    def policy(state: Any, i: int, rng: np.random.Generator) -> str:
        if i == seat:
            count[0] += 1
            if count[0] == decision + 1:
                if not game.judge_action(state, i, action).valid:
                    raise _Refused
                return json.dumps(action)
        return json.dumps(game.strategy(state, i, "rational", rng=rng))

    try:
        end, _, _ = play(game, setup, seed, policy)
    except _Refused:
        return None
    return game.outcome(end).payoffs[seat]


class _Refused(Exception):
    pass


def _candidates(spec: Any, declared: dict[str, Any]) -> list[tuple[str, Any, list[Any]]]:
    """Per choice or number field: (name, field, values to try), the other fields held as declared."""
    out = []
    for f in spec.fields:
        if f.kind == "choice":
            out.append((f.name, f, list(f.choices)))
        elif f.kind == "number" and isinstance(declared.get(f.name), (int, float)):
            out.append((f.name, f, _number_grid(f, float(declared[f.name]))))
    return out


def _drawn(game: Game, seeds: range) -> Iterator[tuple[int, int, Setup]]:
    """The setups both equilibrium checks search: the first draws, each with its seed and seat count."""
    for seed in seeds[:DEVIATION_SEEDS]:
        n = _seats(game, seed)
        yield seed, n, game.setup(game.Params(), n, np.random.default_rng(seed))


def _mixed(game: Game, seeds: range) -> str | None:
    """A declared mixed equilibrium (games/mixed.py): on drawn setups, every choice in a seat's support
    earns the same against the others' mixtures and none outside earns more. None: no mixture declared."""
    from ..games.mixed import mixed_problems

    searched = 0
    for seed, n, setup in _drawn(game, seeds):
        mixtures = game.mixed_equilibrium(setup)
        if mixtures is None:
            continue
        searched += 1
        problems = mixed_problems(game, setup, mixtures)
        if problems:
            raise Failed(f"seed {seed}, {n} seats: {problems[0]}")
    if not searched:
        return None
    return (f"mixed: on {searched} drawn setups every support choice earns the same against the others' "
            "mixtures and none outside earns more")


def _unilateral(game: Game, seeds: range) -> str:
    """No seat gains by a unilateral deviation from the declared equilibrium, searched over its action spec
    at its first decisions along the equilibrium path (the others playing the rational baseline)."""
    why = game.equilibrium_unchecked
    if why:
        raise Skipped(why)
    mixed = _mixed(game, seeds)
    if mixed is not None:
        return mixed
    if "rational" not in game.policies():
        raise Skipped("no rational baseline plays the declared equilibrium, so there is no path to deviate from")
    searched = tried = 0
    for seed, n, setup in _drawn(game, seeds):
        ne = game.equilibrium(setup)
        if ne is None:
            continue
        searched += 1
        end, states, _ = play(game, setup, seed, lambda s, i, r: json.dumps(game.strategy(s, i, "rational", rng=r)))
        for seat in range(n):
            path = [st for st in states[:-1] if seat in game.to_move(st)][:DECISIONS]
            for k, state in enumerate(path):
                declared = game.strategy(state, seat, "rational", rng=np.random.default_rng(seed))
                fields = _candidates(game.action_spec(state, seat), declared)
                if not fields:
                    raise Skipped(f"seat {seat}'s action has no choice or number field to deviate in")
                target = ne.payoffs[seat]
                tol = 1e-6 * max(1.0, abs(target))
                for name, f, values in fields:
                    best, best_gain = None, -math.inf
                    for rounds in (0, 1):
                        for v in values:
                            got = _gain(game, setup, seed, seat, k, {**declared, name: v})
                            tried += 1
                            if got is not None and got - target > best_gain:
                                best, best_gain = v, got - target
                        if best is None or f.kind != "number" or rounds:
                            break
                        values = _refined(f, values, best)
                    if best_gain > tol:
                        raise Failed(f"seed {seed}, {n} seats: seat {seat} gains {best_gain:.6g} by playing "
                                     f"{name}={best!r} at its decision {k + 1} instead of {declared.get(name)!r} "
                                     f"(earning {target + best_gain:.6g}, the equilibrium {target:.6g})")
    if not searched:
        raise Skipped("no equilibrium declared")
    return (f"no seat gains by a unilateral deviation on {searched} drawn setups "
            f"({tried} deviations at each seat's first {DECISIONS} decisions)")


CHECKS: tuple[tuple[str, Callable[[Game, range], str]], ...] = (
    ("declaration", _declaration),
    ("prompt template", _template),
    ("random play within bounds", _random_play),
    ("every baseline plays to the end", _baselines),
    ("determinism", _determinism),
    ("JSON round trips", _json),
    ("equilibrium", _equilibrium),
    ("equilibrium survives unilateral deviations", _unilateral),
)


def check_game(game: Game, seeds: int = 20) -> list[Check]:
    """Every contract check on ``game``; a check that raises anything fails with what it raised."""
    out = []
    for name, fn in CHECKS:
        try:
            out.append(Check(name, True, fn(game, range(seeds))))
        except Failed as exc:
            out.append(Check(name, False, str(exc)))
        except Skipped as exc:
            out.append(Check(name, True, str(exc), skipped=True))
        except Exception as exc:  # the game's own code raised: that is the finding
            out.append(Check(name, False, f"{type(exc).__name__}: {exc}"))
    return out


# ---- a player of the user's own (agents/plugins.py): econarena check --agent module:Class GAME ----


def _agent_runs(game: Game, agent: Any, seeds: range) -> list[tuple[list[str], list[bool]]]:
    """Per seed, one run with ``agent`` in seat 0 and the game's random baseline elsewhere: the agent's
    reply texts and whether each was valid. The agent sees what an LLM would (the rendered messages) and
    what a baseline would (the game's reference strategies, a seeded generator)."""
    import asyncio

    from ..agents.base import DecisionRequest

    tpl = Template(game)

    async def one(seed: int) -> tuple[list[str], list[bool]]:
        setup = game.setup(game.Params(), _seats(game, seed), np.random.default_rng(seed))
        rng, chance = np.random.default_rng(seed), np.random.default_rng(seed + 1000)
        state = game.initial_state(setup)
        texts: list[str] = []
        valid: list[bool] = []
        for step in range(MAX_STEPS):
            movers = game.to_move(state)
            if not movers:
                return texts, valid
            actions: dict[int, dict[str, Any] | None] = {}
            for seat in movers:
                if seat != 0:
                    actions[seat] = game.judge_action(state, seat, game.strategy(state, seat, "random", rng=rng)).action
                    continue

                def strategy(kind: str, state: Any = state, seat: int = seat, **kw: Any) -> dict[str, Any]:
                    return game.strategy(state, seat, kind, **kw)

                request = DecisionRequest(tpl.render(state, seat, "melee", "default"), seat, len(texts), strategy,
                                          seed, (seed, step, seat), game=game.name)
                reply = await agent.decide(request)
                if not isinstance(reply.text, str):
                    raise Failed(f"seed {seed}, step {step}: decide() returned {type(reply.text).__name__} text, "
                                 "expected a string")
                judged = game.judge(state, seat, reply.text)
                texts.append(reply.text)
                valid.append(judged.valid)
                actions[seat] = judged.action
            state = game.apply(state, actions, chance)
        raise Failed(f"seed {seed}: no end after {MAX_STEPS} moves")

    async def every() -> list[tuple[list[str], list[bool]]]:
        return [await one(seed) for seed in seeds]

    return asyncio.run(every())


def check_agent(agent_cls: type, game: Game, seeds: int = 20) -> list[Check]:
    """A player of the user's own in ``game``: it answers every decision to the end of each run, the same
    seeds give the same replies, and (what a person reads) how many of its replies the game accepts."""
    out = []
    try:
        first = _agent_runs(game, agent_cls("check"), range(seeds))
    except Failed as exc:
        return [Check("plays to the end", False, str(exc))]
    except Exception as exc:  # the agent's own code raised: that is the finding
        return [Check("plays to the end", False, f"{type(exc).__name__}: {exc}")]
    decisions = sum(len(t) for t, _ in first)
    out.append(Check("plays to the end", decisions > 0, f"{seeds} runs of {game.name}, {decisions} decisions"
                     if decisions else "it was never asked (seat 0 never moved)"))
    again = _agent_runs(game, agent_cls("check"), range(seeds))
    same = [t for t, _ in first] == [t for t, _ in again]
    out.append(Check("determinism", same, "the same seeds give the same replies" if same else
                     "the same seeds gave different replies: draw from request.rng, not a global generator"))
    ok = sum(sum(v) for _, v in first)
    out.append(Check("replies the game accepts", ok > 0, f"{ok} of {decisions} valid" + (
        "" if ok else ": every reply broke a rule or could not be read (see the game's reply keys: "
        "request.strategy('random') shows one valid reply)")))
    return out
