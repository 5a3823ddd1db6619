"""The bench's floor (suite v2): trivial policies score clearly below the random baseline, none reaches 90 in
any game of the standard tier, a best reply still reaches 100 against the anchor opponents, and the trivial
baselines' rows equal what a model answering that way on a loopback server scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from econarena.cli import main
from econarena.formats.benchsuite import DEFAULT, load_suite
from econarena.games import GAMES
from econarena.games.negotiationarena.common import thaw


def _bench(name: str, out: Path, tier: str, *extra: str) -> dict[str, Any]:
    assert main(["bench", name, "--tier", tier, "--no-baselines", "--quiet", "--out", str(out), *extra]) == 0
    return json.loads((out / name / "bench.json").read_text(encoding="utf-8"))


def test_trivial_policies_score_clearly_below_random_in_the_standard_tier(tmp_path: Path) -> None:
    rows = {name: _bench(name, tmp_path, "standard") for name in ("random", "constant", "accept", "rational")}
    random = rows["random"]["overall"]["score"]
    for name in ("constant", "accept"):
        assert rows[name]["overall"]["score"] <= random - 3, (name, rows[name]["overall"]["score"], random)
        top = max(rows[name]["games"], key=lambda g: g["score"])
        assert top["score"] < 90, (name, top["id"], top["score"])
    # the equilibrium player stays far above the floor (it is no best reply where the opponent anchors: it
    # accepts any gain, so it takes the anchor in the negotiation and buy/sell buyer seats)
    assert rows["rational"]["overall"]["score"] >= random + 25


@pytest.mark.parametrize("game, seat, best_reply", [
    ("bargaining", 1, "bargaining"), ("negotiation", 1, "negotiation"), ("buy_sell", 1, "buy_sell")])
def test_a_best_reply_reaches_100_against_the_anchor_and_accepting_does_not(game: str, seat: int,
                                                                           best_reply: str) -> None:
    """Against the suite's anchor opponent a best reply (reject the anchor, propose the opponent's reservation)
    earns the seat's best payoff in every session; always accepting earns it only when the opening is fair."""
    suite = load_suite(DEFAULT)
    entry = next(g for g in suite.games if g.game == game and g.seat == seat)
    assert entry.opponent == {"agent": "policy", "policy": "anchor", "label": "opponent (anchor)"}
    g = GAMES[game]
    params = g.Params(**entry.params)
    anchored = 0
    for session in range(40):
        setup = g.setup(params, 2, np.random.default_rng(session))
        best = _best(entry, g, setup)
        for policy in ("best", "accept"):
            state = g.initial_state(setup)
            rng = np.random.default_rng(1000 + session)  # the opponent's draws: the same for both policies
            opened = None
            while not g.is_terminal(state):
                (mover,) = g.to_move(state)
                if mover == seat:
                    action = _reply(best_reply, g, state, seat, setup) if policy == "best" else \
                        g.reference(state, seat, "accept")
                else:
                    action = g.reference(state, mover, "anchor", rng)
                    opened = action if opened is None else opened
                state = g.apply(state, {mover: action}, np.random.default_rng(0))
            pay = g.outcome(state).payoffs[seat]
            if policy == "best":
                assert pay == pytest.approx(best, rel=1e-3), (session, pay, best)
            elif pay < 0.5 * best:
                anchored += 1
    assert 20 <= anchored <= 38  # 3 in 4 openings are anchors: accepting loses most of the surplus there


def _best(entry: Any, g: Any, setup: Any) -> float:
    scope = dict(setup.to_dict())
    ne = g.equilibrium(setup)
    if ne is not None:
        scope["ne_payoff"] = ne.payoffs[entry.seat]
    return entry.best.value(scope)


def _reply(kind: str, g: Any, state: Any, seat: int, setup: Any) -> dict[str, Any]:
    """A best reply against the anchor opponent, by hand."""
    if kind == "bargaining":  # the rational responder rejects less than its continuation and proposes the SPE
        return g.reference(state, seat, "rational")
    if kind == "negotiation":  # the buyer: accept only the seller's value, else offer it
        value = setup["money"] * setup["seller_value"]
        if state.phase == "respond":
            return {"decision": "accept" if state.price <= value + 1e-9 else "reject"}
        return {"product_price": value}
    cost = setup["seller_cost"]  # buy/sell: the buyer accepts the seller's cost, else proposes it
    if state.table is not None and g.price_of(thaw(state.table)) <= cost:
        return {"reason": "r", "message": "m", "decision": "accept", "price": 0}
    return {"reason": "r", "message": "m", "decision": "propose", "price": cost}


def test_the_trivial_baselines_equal_a_model_answering_so(server: Any, tmp_path: Path) -> None:
    """The rows of the `constant` and `accept` baselines are what a model that answers that way scores: the
    same policy played by a loopback server from each request's reply schema (tests/policyservers.py)."""
    from policyservers import policy_reply

    for policy in ("constant", "accept"):
        server.reset()
        server.reply = policy_reply(policy)
        model = tmp_path / f"{policy}.toml"
        model.write_text(f'agent = "openai"\nmodel = "fake-model"\nbase_url = "{server.url}/v1"\n'
                         f'label = "{policy}-server"\nstructured = "strict"\nmax_retries = 0\n', encoding="utf-8")
        out = tmp_path / policy
        assert main(["bench", str(model), "--no-baselines", "--quiet", "--out", str(out), "--cache-dir",
                     str(tmp_path / f"cache-{policy}")]) == 0
        served = json.loads((out / f"{policy}-server" / "bench.json").read_text(encoding="utf-8"))
        baseline = _bench(policy, out, "quick")
        assert [g["per_session"] for g in served["games"]] == [g["per_session"] for g in baseline["games"]]
        assert served["overall"]["score"] == baseline["overall"]["score"]
