"""One test suite run over EVERY registered game: what any game must guarantee to the Host and analysis.

A new game joins these tests by being registered in ``econarena.games.GAMES``; it must also give its payoff
bounds: in ``BOUNDS`` below, or declared by the game itself (``Game.payoff_bounds``, which ``econarena check``
uses too); the test fails until it does, on purpose.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from econarena.formats.rundir import dumps_line
from econarena.games import GAMES, get_game
from econarena.games.base import PARSE_ERROR, RULE_VIOLATION, SCHEMA_ERROR, Game, Outcome, Setup
from econarena.hosts.contract import check_game

NAMES = sorted(GAMES)
SEEDS = range(40)
MAX_STEPS = 10_000


def _bc_bounds(setup: Setup, out: Outcome) -> None:
    prize = setup["prize"]
    assert all(0 <= p <= prize + 1e-9 for p in out.payoffs)
    assert sum(out.payoffs) == pytest.approx(prize if out.winners else 0.0)


def _auction_bounds(setup: Setup, out: Outcome) -> None:
    # a winner pays at most its own (legal) bid <= A, so it ends with at least v; a rule breaker A - fee
    for i, p in enumerate(out.payoffs):
        a, v, fee = setup["assets"][i], setup["private_value"][i], setup["entrance_fee"]
        assert min(a - fee, v) - 1e-9 <= p <= a + v + 1e-9
        if i not in out.winners:
            assert p == (a - fee if not out.valid[i] else a)


def _rounds_won_bounds(setup: Setup, out: Outcome) -> None:
    assert all(0 <= p <= setup["rounds"] for p in out.payoffs)


def _sealed_bid_bounds(setup: Setup, out: Outcome) -> None:
    # one item per round: a winner gains at most the top valuation; a legal (random) bid is at most
    # valuation_max, so it loses at most valuation_max - 0 per round
    vmax, k = setup["valuation_max"], setup["rounds"]
    assert all(-k * vmax - 1e-9 <= p <= k * vmax + 1e-9 for p in out.payoffs)


def _battle_bounds(setup: Setup, out: Outcome) -> None:
    # the survivors split a prize of 1; nobody is out without being hit, so someone always survives
    assert all(0 <= p <= 1 for p in out.payoffs)
    assert sum(out.payoffs) == pytest.approx(1.0)
    assert set(out.winners) == {i for i, p in enumerate(out.payoffs) if p > 0}


def _pirate_bounds(setup: Setup, out: Outcome) -> None:
    # a passed plan splits exactly the gold; without one nobody is paid
    gold = setup["gold"]
    assert all(0 <= p <= gold for p in out.payoffs)
    assert sum(out.payoffs) == pytest.approx(0.0 if out.void else gold)


def _bar_bounds(setup: Setup, out: Outcome) -> None:
    # a round pays a goer min or max, a stayer home, a rule breaker 0; 0 <= min <= home <= max
    assert all(0 <= p <= setup["max"] * setup["rounds"] for p in out.payoffs)


def _dollar_bounds(setup: Setup, out: Outcome) -> None:
    # a paid round pays each seat its bid and the bids sum to at most G, so the whole table gets <= G per round
    assert all(p >= 0 for p in out.payoffs)
    assert sum(out.payoffs) <= setup["golds"] * setup["rounds"] + 1e-9


def _goods_bounds(setup: Setup, out: Outcome) -> None:
    # T - c + R sum(c) / N lies in [0, T + R T] for c in [0, T]; a rule breaker earns 0
    t, r, k = setup["tokens"], setup["ratio"], setup["rounds"]
    assert all(-1e-9 <= p <= (t + r * t) * k + 1e-9 for p in out.payoffs)


def _diner_bounds(setup: Setup, out: Outcome) -> None:
    # worth - bill / N: the worth is at most the larger utility; the share is below the costly price
    top = max(setup["cheap_utility"], setup["exp_utility"])
    assert all(-setup["exp_cost"] * setup["rounds"] - 1e-9 <= p <= top * setup["rounds"] + 1e-9 for p in out.payoffs)


def _exchange_bounds(setup: Setup, out: Outcome) -> None:
    # counts move between the two players: zero-sum, and nobody gives more than both hold
    held = sum(setup["red_resources"].values()) + sum(setup["blue_resources"].values())
    assert out.payoffs[0] == -out.payoffs[1] and abs(out.payoffs[0]) <= held


def _bargaining_bounds(setup: Setup, out: Outcome) -> None:
    # an accepted split divides M, each part discounted by delta^(t-1) <= 1; no deal pays nothing
    assert all(0 <= p <= setup["money"] + 1e-9 for p in out.payoffs)
    assert sum(out.payoffs) <= setup["money"] * (1 + 1e-9)
    if out.void:
        assert out.payoffs == (0.0, 0.0)


def _ultimatum_bounds(setup: Setup, out: Outcome) -> None:
    total = setup["total"]
    assert all(0 <= p <= total for p in out.payoffs)
    assert sum(out.payoffs) == (0.0 if out.void else total)


def _buysell_bounds(setup: Setup, out: Outcome) -> None:
    # a sale moves the surplus value - cost between the two; the buyer never pays more than its money
    if out.void:
        assert out.payoffs == (0.0, 0.0)
        return
    assert sum(out.payoffs) == pytest.approx(setup["buyer_value"] - setup["seller_cost"])
    assert -setup["seller_cost"] <= out.payoffs[0] <= setup["buyer_money"] - setup["seller_cost"]


def _negotiation_bounds(setup: Setup, out: Outcome) -> None:
    # a trade at p pays (p - V_A, V_B - p), which sum to V_B - V_A; no trade pays nothing
    va, vb = setup["money"] * setup["seller_value"], setup["money"] * setup["buyer_value"]
    if out.void:
        assert out.payoffs == (0.0, 0.0)
    else:
        assert sum(out.payoffs) == pytest.approx(vb - va)
        assert 0 <= out.payoffs[0] + va <= setup["money"] * 1e3


def _persuasion_bounds(setup: Setup, out: Outcome) -> None:
    # the seller earns 1 per sale; the buyer M (v - 1) per good buy and M (c - 1) per bad one
    t, m = setup["rounds"], setup["money"]
    assert 0 <= out.payoffs[0] <= t and float(out.payoffs[0]).is_integer()
    assert t * m * (setup["value_low"] - 1) - 1e-9 <= out.payoffs[1] <= t * m * (setup["value_high"] - 1) + 1e-9


def _fruit_bounds(setup: Setup, out: Outcome) -> None:
    # the counted trade alone pays: sum_f v_i(f) (received - given), a seat gives at most what it holds
    # and receives at most what the other holds; no trade pays nothing
    deal = out.extra["deal"]
    if deal is None:
        assert out.payoffs == (0.0, 0.0) and out.void
        return
    e, v = setup["endowments"], setup["valuations"]
    gives = [deal["player_1_gives"], deal["player_2_gives"]]
    for i in (0, 1):
        assert all(n <= e[i][f] for f, n in gives[i].items())
        want = sum(v[i][f] * n for f, n in gives[1 - i].items()) - sum(v[i][f] * n for f, n in gives[i].items())
        assert out.payoffs[i] == want
        assert -sum(v[i][f] * e[i][f] for f in e[i]) <= want <= sum(v[i][f] * e[1 - i][f] for f in e[i])


def _dilemma_bounds(setup: Setup, out: Outcome) -> None:
    # every round pays each seat between S and T, and the two together at most 2R (2R > T + S, R > P)
    t, r, s, k = setup["temptation"], setup["reward"], setup["sucker"], setup["rounds"]
    assert all(s * k - 1e-9 <= p <= t * k + 1e-9 for p in out.payoffs)
    assert sum(out.payoffs) <= 2 * r * k + 1e-9


BOUNDS: dict[str, Callable[[Setup, Outcome], None]] = {
    "resource_exchange": _exchange_bounds,
    "ultimatum": _ultimatum_bounds,
    "buy_sell": _buysell_bounds,
    "bargaining": _bargaining_bounds,
    "negotiation": _negotiation_bounds,
    "persuasion": _persuasion_bounds,
    "fruit_trade": _fruit_bounds,
    "beauty_contest": _bc_bounds,
    "second_price_auction": _auction_bounds,
    "english_auction": _auction_bounds,
    "guessing_game": _rounds_won_bounds,
    "sealed_bid_auction": _sealed_bid_bounds,
    "battle_royale": _battle_bounds,
    "pirate_game": _pirate_bounds,
    "el_farol_bar": _bar_bounds,
    "divide_dollar": _dollar_bounds,
    "public_goods": _goods_bounds,
    "diners_dilemma": _diner_bounds,
    "prisoners_dilemma": _dilemma_bounds,
}

def within_bounds(game: Game, setup: Setup, out: Outcome) -> None:
    """The game's bounds here, else the ones it declares itself (a new family needs no edit of this file)."""
    if game.name in BOUNDS:
        BOUNDS[game.name](setup, out)
    declared = game.payoff_bounds(setup)
    if declared is not None:
        lo, hi = declared
        assert all(lo - 1e-9 <= p <= hi + 1e-9 for p in out.payoffs), (out.payoffs, declared)


GARBAGE = ["", "no idea", "{", '{"x": 1}', '{"%s": "seven"}', '{"%s": 1e308}', '{"%s": -5}', '{"%s": true}']


def seats(game: Game, n: int) -> int:
    """The seat count to test with: ``n``, or the one a fixed-size game (``info.n_players``) needs."""
    return game.info.n_players or n


def _normalise(x: Any) -> Any:
    """Tuples -> lists, the way JSON sees them."""
    return json.loads(json.dumps(x))


def _play(game: Game, setup: Setup, seed: int, garbage: float,
          log: list[dict[str, Any]] | None = None) -> tuple[Any, list[Any]]:
    """Random legal play, with a share of garbage replies judged like an LLM's. Returns (end, states).

    ``log`` collects the round records the Host would write (the input of ``score`` and ``metrics``)."""
    rng = np.random.default_rng(seed)
    chance = np.random.default_rng(seed + 1000)
    state = game.initial_state(setup)
    states = [state]
    for _ in range(MAX_STEPS):
        movers = game.to_move(state)
        if not movers:
            return state, states
        assert len(set(movers)) == len(movers) and all(0 <= m < setup.n_players for m in movers)
        actions: dict[int, dict[str, Any] | None] = {}
        for seat in movers:
            bad = rng.random() < garbage
            if bad:
                text = GARBAGE[int(rng.integers(len(GARBAGE)))].replace("%s", game.action_key)
            else:
                text = json.dumps(game.strategy(state, seat, "random", rng=rng))
            judged = game.judge(state, seat, text)
            if not bad:
                assert judged.valid, f"random legal action judged invalid: {text} -> {judged.detail}"
            assert judged.violation in (None, PARSE_ERROR, SCHEMA_ERROR, RULE_VIOLATION)
            actions[seat] = judged.action
        snapshot = copy.deepcopy(state)
        new = game.apply(state, actions, chance)
        assert state == snapshot, "apply() mutated the old state"
        assert new is not state
        events = game.events(state, new, actions)
        assert _normalise(events) == events or json.dumps(events, allow_nan=False)
        if log is not None:
            log.append(_normalise({"round": len(log), "actions": [actions.get(i) for i in range(setup.n_players)],
                                   "events": events}))
        if game.info.rounds:
            for seat in range(setup.n_players):
                fields = game.report(state, new, actions, seat)
                assert fields is None or json.dumps(fields)
        state = new
        states.append(state)
    raise AssertionError(f"{game.name}: no terminal state after {MAX_STEPS} moves")


@pytest.fixture(params=NAMES)
def game(request: pytest.FixtureRequest) -> Game:
    return GAMES[request.param]


def test_registry_is_consistent() -> None:
    assert {"beauty_contest", "english_auction", "second_price_auction", "guessing_game", "sealed_bid_auction",
            "battle_royale", "pirate_game"} <= set(NAMES)
    assert all(get_game(name).name == name for name in NAMES)
    with pytest.raises(KeyError, match="known: .*beauty_contest, .*english_auction"):
        get_game("chess")


def test_the_contract_check_passes(game: Game) -> None:
    """The checks ``econarena check`` runs for a user's game (hosts/contract.py), on every built-in one: the
    declaration, template, random play with garbage replies, baselines, determinism, JSON round trips,
    the equilibrium and its unilateral deviations. A skip is allowed only with the game's stated reason."""
    for c in check_game(game, seeds=20):
        assert c.ok, f"{c.name}: {c.detail}"
        assert not c.skipped or c.detail, c.name


def test_every_game_has_bounds(game: Game) -> None:
    declared = game.payoff_bounds(game.setup(game.Params(), seats(game, 3), np.random.default_rng(0)))
    assert game.name in BOUNDS or declared is not None, \
        f"add payoff bounds for {game.name} to BOUNDS, or declare them (Game.payoff_bounds)"


@pytest.mark.parametrize("garbage", [0.0, 0.3])
def test_random_play_keeps_the_games_own_bounds(game: Game, garbage: float) -> None:
    """What check_game cannot know: each game's own payoff invariants (BOUNDS: sums, fees, prizes), and
    that a one-shot game without a winner is void."""
    for seed in SEEDS:
        n = seats(game, 2 + seed % 5)
        setup = game.setup(game.Params(), n, np.random.default_rng(seed))
        end, _ = _play(game, setup, seed, garbage)
        out = game.outcome(end)
        if not game.info.rounds:  # one-shot games: no sale / no winner is "void"
            assert out.void == (not out.winners)
        within_bounds(game, setup, out)


def test_the_equilibrium_keeps_the_games_own_bounds(game: Game) -> None:
    for seed in SEEDS:
        setup = game.setup(game.Params(), seats(game, 2 + seed % 5), np.random.default_rng(seed))
        ne = game.equilibrium(setup)
        if ne is not None:
            within_bounds(game, setup, ne)


def test_host_records_round_trip_through_json(game: Game, tmp_path, arena) -> None:
    players = [{"agent": "random", "count": 2},
               {"agent": "scripted", "responses": ['{"reason": NaN, "x": [-Infinity], "y": 1e999}', "garbage", "{}"]},
               {"agent": "rational"}]
    if game.info.n_players == 2:  # a two-player game: a lineup of exactly two
        players = [players[1], players[2]]
    # the fullest history the game allows (a full one is refused where it would reveal hidden values)
    history = "full" if game.hidden_from_history(game.Params()) is None else "actions"
    doc = arena.experiment_dict(game.name, players, sessions=3, runs=2, seed=5, history=history)
    result = arena.run_experiment(doc, tmp_path)
    assert result.status == "complete" and result.runs_done == 6
    run_keys = {"session", "run", "params", "private_values", "labels", "actions", "valid", "payoffs", "winners",
                "void", "ne_actions", "ne_payoffs", "payoff_ratio", "deviation"}
    decision_keys = {"session", "run", "round", "player", "label", "agent", "model", "messages", "response",
                     "action", "valid", "violation", "detail", "latency_s", "tokens_in", "tokens_out", "cached",
                     "error"}
    for name, keys in (("runs.jsonl", run_keys), ("decisions.jsonl", decision_keys)):
        lines = (tmp_path / name).read_text(encoding="utf-8").splitlines()
        assert lines
        for line in lines:
            rec = json.loads(line)
            assert keys <= set(rec), keys - set(rec)
            assert dumps_line(rec) == (line + "\n").encode()  # the record as written: it round-trips
            json.dumps(rec, allow_nan=False)  # strict JSON: no NaN or Infinity
    scripted = [d for d in arena.read_jsonl(tmp_path / "decisions.jsonl") if d["agent"] == "scripted"]
    assert scripted and all(d["violation"] == PARSE_ERROR and not d["valid"] for d in scripted)


def test_secret_notes_never_reach_the_opponent(game: Game) -> None:
    """A secret field (``secret=True``) is logged in the actions but never appears in events, reports or
    observations: every game with secret notes is played with marked notes and searched for the mark."""
    for seed in range(10):
        setup = game.setup(game.Params(), seats(game, 3), np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        state = game.initial_state(setup)
        for step in range(MAX_STEPS):
            movers = game.to_move(state)
            if not movers:
                break
            actions = {}
            for seat in movers:
                reply = game.strategy(state, seat, "random", rng=rng)
                for f in game.action_spec(state, seat).fields:
                    if f.secret:
                        reply[f.name] = f"SECRET{seed}x{step}"
                judged = game.judge(state, seat, json.dumps(reply))
                assert judged.valid, judged.detail
                actions[seat] = judged.action
            new = game.apply(state, actions, np.random.default_rng(seed))
            shown = [game.events(state, new, actions)]
            shown += [game.report(state, new, actions, seat) for seat in range(setup.n_players)]
            shown += [game.observation(new, seat) for seat in range(setup.n_players)]
            assert "SECRET" not in json.dumps(shown), game.name
            state = new


# ---- secret notes: a reply field declared secret=True never reaches another seat ----

def _secret_leaks(game: Game, seeds: range) -> list[str]:
    """Play random games, every secret text field filled with a distinctive string; return each place a
    secret shows up where another seat (or the public record) could read it."""
    leaks: list[str] = []
    for seed in seeds:
        setup = game.setup(game.Params(), seats(game, 2 + seed % 3), np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        state = game.initial_state(setup)
        planted: list[tuple[int, str]] = []  # (owner seat, secret text) so far in this run
        for step in range(MAX_STEPS):
            movers = game.to_move(state)
            if not movers:
                break
            actions: dict[int, dict[str, Any] | None] = {}
            fresh: list[tuple[int, str]] = []
            for seat in movers:
                reply = game.strategy(state, seat, "random", rng=rng)
                for f in game.action_spec(state, seat).fields:
                    if f.kind == "text" and f.secret:
                        token = f"zq{seed}x{step}x{seat}x{f.name}qz"[: f.max_length or None]
                        reply[f.name] = token
                        fresh.append((seat, token))
                judged = game.judge(state, seat, json.dumps(reply))
                assert judged.valid, judged.detail
                actions[seat] = judged.action
            planted += fresh
            after = game.apply(state, actions, np.random.default_rng(seed + step))
            events = json.dumps(game.events(state, after, actions))
            for owner, token in planted:
                if token in events:
                    leaks.append(f"seed {seed} step {step}: events carry seat {owner}'s secret")
                for other in range(setup.n_players):
                    if other == owner:
                        continue
                    if token in json.dumps(game.report(state, after, actions, other)):
                        leaks.append(f"seed {seed} step {step}: seat {other}'s report carries seat {owner}'s secret")
                    if token in json.dumps(game.observation(after, other)):
                        leaks.append(f"seed {seed} step {step}: seat {other}'s observation carries seat {owner}'s "
                                     "secret")
            state = after
    return leaks


def test_secret_fields_never_reach_another_seat(game: Game) -> None:
    assert _secret_leaks(game, range(12)) == []


def test_the_secret_check_catches_a_leak() -> None:
    """The check above can fail: a game that copies a secret note into its events and reports is caught."""
    from econarena.games.base import ActionField, ActionSpec
    from econarena.games.glee.bargaining import Bargaining

    class Leaky(Bargaining):
        def action_spec(self, state: Any, player: int) -> ActionSpec:
            spec = super().action_spec(state, player)
            return ActionSpec((*spec.fields, ActionField("note", "text", "private", max_length=200, secret=True)))

        def events(self, before: Any, after: Any, actions: Any) -> dict[str, Any]:
            notes = [a.get("note") for a in actions.values() if a]
            return {**super().events(before, after, actions), "notes": notes}

    leaks = _secret_leaks(Leaky(), range(2))
    assert leaks and all("events carry" in x for x in leaks)


def test_a_baselines_action_judged_as_an_object_equals_its_text_judged(game: Game) -> None:
    """The Host judges a strategy baseline's action as the object it is (no JSON text round trip): the
    judgement, extras and action included, must be exactly what the action's JSON text gets, at every state
    random play reaches, for every policy the game offers (level-k at several depths), garbage included."""
    from econarena.games.base import is_plain_json

    checked = 0
    for seed in range(6):
        setup = game.setup(game.Params(), seats(game, 3 + seed % 3), np.random.default_rng(seed))
        _, states = _play(game, setup, seed, 0.3)
        for state in states:
            for seat in game.to_move(state):
                for policy, kw in [(p, {"k": k}) if p == "level_k" else (p, {})
                                   for p in game.policies() for k in ((1, 2, 3) if p == "level_k" else (0,))]:
                    action = game.strategy(state, seat, policy, rng=np.random.default_rng(seed), **kw)
                    text = json.dumps(action)
                    assert type(action) is dict and is_plain_json(action) and "```" not in text, action
                    assert game.judge_action(state, seat, action) == game.judge(state, seat, text)
                    checked += 1
                for garbage in ({"x": 1}, {game.action_key: "seven"}, {game.action_key: -5, "note": [1, {"a": None}]},
                                {game.action_key: True}, {}):
                    assert game.judge_action(state, seat, garbage) == game.judge(state, seat, json.dumps(garbage))
    assert checked > 0


def test_is_plain_json_is_exactly_what_a_json_round_trip_returns_unchanged() -> None:
    from econarena.games.base import is_plain_json

    plain = [{}, {"a": 1, "b": [1.5, "x", None, True, {"c": -0.0}]}, {"big": 10 ** 30}, {"s": "\ud800"}]
    for value in plain:
        assert is_plain_json(value) and json.loads(json.dumps(value)) == value
    for value in ({"a": (1, 2)}, {1: "a"}, {"a": float("nan")}, {"a": float("inf")}, {"a": np.float64(1.5)},
                  {"a": np.int64(2)}, {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}):
        assert not is_plain_json(value)
