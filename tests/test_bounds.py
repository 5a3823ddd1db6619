"""Work bounded by what the decisions need, not by the size of a number the user typed.

The English auction's clock jumps over the rounds in which only rational and level-k bidders are left and
all of them stay (each such round would be a decision that cannot change anything); where an LLM bids,
every round is a paid call, so ``validate`` and ``--dry-run`` show an upper bound of the calls and refuse
one that no budget allows.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from timing import budget

from econarena.cli import main
from econarena.games import GAMES
from econarena.games.econarena.auctions import EnglishAuction

EA = GAMES["english_auction"]
OUTCOME_KEYS = ("rounds", "actions", "valid", "payoffs", "winners", "void", "extra", "ne_actions", "ne_payoffs",
                "payoff_ratio", "deviation", "first_valid")


def test_a_huge_clock_with_rational_bidders_ends_at_once_with_the_hand_computed_outcome(arena, tmp_path: Path) -> None:
    """Values 1,000,000 and 999,999.50, increment 0.01, max_rounds 10^18: 10^8 clock rounds, a few steps."""
    doc = arena.experiment_dict("english_auction", [{"agent": "rational", "count": 2},
                                                    {"agent": "level_k", "label": "L3", "k": 3}],
                                {"private_value": [1_000_000, 999_999.5, 500_000], "assets": 1_000_000,
                                 "increment": 0.01, "max_rounds": 10**18}, sessions=2)
    start = time.perf_counter()
    result = arena.run_experiment(doc, tmp_path / "o")
    assert time.perf_counter() - start < budget(5) and result.status == "complete"
    run = arena.sorted_runs(tmp_path / "o")[0]
    # L3 drops at 500,000 (round 50,000,000), the second bidder at 999,999.50 (round 99,999,950): the first
    # bidder wins there and pays 999,999.50, the equilibrium exactly
    assert run["winners"] == [0] and run["extra"]["price"] == 999_999.5 and run["payoffs"][0] == 1_000_000.5
    assert run["rounds"] == 99_999_951 == run["extra"]["rounds"]
    assert run["payoff_ratio"] == [1.0, 1.0, 1.0]
    assert [(e["round"], e.get("through")) for e in run["round_log"]] == [
        (0, 49_999_999), (50_000_000, None), (50_000_001, 99_999_949), (99_999_950, None)]
    assert run["round_log"][0]["actions"] == [{"decision": "stay"}] * 3
    assert run["decisions"] == [2, 2, 1]  # only the rounds where someone drops were asked
    decisions = arena.sorted_decisions(tmp_path / "o")
    assert {d["round"] for d in decisions if d["session"] == 0} == {50_000_000, 99_999_950}
    # the baselines are sent no prompt (their records have none): the prompt a model would read at the jumped
    # clock is rendered from the state the Host reached there
    assert all(d["messages"] is None for d in decisions)
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.prompts import Template

    exp = parse_experiment(doc, "t.toml")
    setup = EA.setup(exp.params, 3, np.random.default_rng(0))
    skip = EA.fast_forward(EA.initial_state(setup), {i: ("rational", {}) for i in range(3)})
    assert skip is not None and skip.moves == 50_000_000
    request = Template(EA).render(skip.state, 2, "melee", "default")[-1].content
    assert "Round 50000001: the price is now 500000." in request


@pytest.mark.parametrize("seed", range(6))
def test_skipping_quiet_rounds_changes_no_outcome(seed: int, arena, tmp_path: Path, monkeypatch) -> None:
    """With and without the fast forward, every run ends alike; only the quiet rounds' records go."""
    rng = np.random.default_rng(seed)
    players = [{"agent": "rational"}, {"agent": "level_k", "label": "L1", "k": int(rng.integers(0, 4))},
               {"agent": "rational", "label": "R2", "count": int(rng.integers(1, 3))}]
    if seed % 2:  # a random bidder or a scripted one keeps the clock ticking while it is in
        players.append({"agent": "random"} if seed % 4 == 1 else
                       {"agent": "scripted", "label": "S", "responses": ['{"decision": "stay"}'] * 7 + ["drop"]})
    params = {"private_value": {"uniform": [1, 200]}, "assets": 200, "increment": float(rng.choice([0.5, 1, 3])),
              "start_price": float(rng.choice([0, 7])), "max_rounds": int(rng.choice([40, 1000])), "entrance_fee": 2}
    doc = arena.experiment_dict("english_auction", players, params, sessions=4, runs=2, seed=seed, history="full")
    arena.run_experiment(doc, tmp_path / "fast")
    monkeypatch.setattr(EnglishAuction, "fast_forward", lambda self, state, policies: None)
    arena.run_experiment(doc, tmp_path / "slow")
    fast, slow = arena.sorted_runs(tmp_path / "fast"), arena.sorted_runs(tmp_path / "slow")
    assert [{k: r[k] for k in OUTCOME_KEYS} for r in fast] == [{k: r[k] for k in OUTCOME_KEYS} for r in slow]
    assert all("through" not in e for r in slow for e in r["round_log"])
    assert any("through" in e for r in fast for e in r["round_log"]), "nothing was skipped: a test of nothing"
    for f, s in zip(fast, slow):  # the round log of the slow run, with each skipped stretch folded into one entry
        unfolded = [{**e, "round": k} for e in f["round_log"]
                    for k in range(e["round"], e.get("through", e["round"]) + 1)]
        assert [{k: v for k, v in e.items() if k != "through"} for e in unfolded] == s["round_log"]

    def key(d: dict) -> tuple:
        return d["session"], d["run"], d["round"], d["player"], d["response"], d["valid"]
    kept = {key(d) for d in arena.read_jsonl(tmp_path / "fast" / "decisions.jsonl")}
    assert kept <= {key(d) for d in arena.read_jsonl(tmp_path / "slow" / "decisions.jsonl")}


@pytest.mark.parametrize("increment", [1e-300, 5e-324, 1e-200])
def test_an_increment_too_small_for_the_values_ends_at_the_round_limit_without_hanging(increment: float) -> None:
    """Found by trying: with value / increment past what a float holds (or where k * increment no longer
    changes with k) the search for the next drop never ended, in the equilibrium too (every English auction
    with such a file hung at its first session, SIGTERM unanswered), and the round bound was a traceback."""
    params = EA.Params(private_value=[50, 60.5], assets=100, increment=increment, max_rounds=300)
    assert EA.max_moves(params, 2) == (300, False)
    setup = EA.setup(params, 2, np.random.default_rng(0))
    ne = EA.equilibrium(setup)  # the price never reaches a value: the clock runs out, no sale
    assert ne.extra == {"price": None, "rounds": 300, "end": "max_rounds reached"} and ne.winners == ()
    state = EA.initial_state(setup)
    skip = EA.fast_forward(state, {0: ("rational", {}), 1: ("rational", {})})
    assert skip is not None and skip.state.round == 299
    slow = state  # every round played: the same end
    while not slow.done:
        slow = EA.apply(slow, {i: EA.strategy(slow, i, "rational") for i in EA.to_move(slow)})
    assert EA.outcome(slow) == ne
    huge = EA.Params(private_value=[50, 60.5], assets=100, increment=increment, max_rounds=10**18)
    assert EA.equilibrium(EA.setup(huge, 2, np.random.default_rng(0))).extra["rounds"] == 10**18


def test_a_seat_that_must_be_asked_is_never_skipped() -> None:
    setup = EA.setup(EA.Params(private_value=[50, 60], assets=100), 2, np.random.default_rng(0))
    state = EA.initial_state(setup)
    assert EA.fast_forward(state, {0: ("rational", {})}) is None  # seat 1 is a model, a person or a script
    assert EA.fast_forward(state, {0: ("rational", {}), 1: ("random", {})}) is None
    skip = EA.fast_forward(state, {0: ("rational", {}), 1: ("level_k", {"k": 5})})
    assert skip is not None and skip.moves == 50 and skip.state.round == 50  # price 50: seat 0 drops there
    assert EA.fast_forward(skip.state, {0: ("rational", {}), 1: ("rational", {})}) is None  # a drop: play it


def test_the_round_bound_follows_the_assets() -> None:
    """Staying above one's assets is a rule break that drops the bidder: no auction outlasts the round whose
    price passes the largest assets (floor((A - start) / increment) + 1), one round more for rounding."""
    assert EA.max_moves(EA.Params(), 5) == (103, False)  # assets 100, increment 1: round 101 at the latest
    assert EA.max_moves(EA.Params(assets={"uniform": [10, 50]}, increment=2, start_price=4), 3) == (26, False)
    assert EA.max_moves(EA.Params(assets=[30, 80], max_rounds=20), 2) == (20, False)
    assert EA.max_moves(EA.Params(assets={"normal": [100, 5]}), 2) == (200, False)  # no largest draw
    assert EA.max_moves(EA.Params(start_price=500), 2) == (1, False)
    # scripted bidders that always stay: the clock stops where the rule breaks begin, within the bound
    setup = EA.setup(EA.Params(), 3, np.random.default_rng(1))
    state, rounds = EA.initial_state(setup), 0
    while movers := EA.to_move(state):
        state = EA.apply(state, {i: EA.judge(state, i, '{"decision": "stay"}').action for i in movers})
        rounds += 1
    assert rounds == 102 <= EA.max_moves(EA.Params(), 3)[0]  # rounds 0 to 101: at 101 every stay breaks


LLM_AUCTION = """\
[experiment]
name = "costly"
game = "english_auction"
sessions = 2
{extra}

[game]
private_value = 1000000
assets = 1000000
increment = 0.01
max_rounds = 9000000000000000000

[[players]]
agent = "openai"
model = "gpt-4o-mini"

[[players]]
agent = "rational"
"""


def test_a_number_of_paid_calls_no_budget_allows_is_refused_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "costly.toml"
    toml.write_text(LLM_AUCTION.format(extra=""))
    for args in (["validate", str(toml)], ["run", str(toml), "--dry-run"], ["run", str(toml)]):
        assert main(args) == 2
        err = capsys.readouterr().err
        # 2 sessions x (floor(10^6 / 0.01) + 3) rounds: the assets end the clock long before max_rounds
        assert ("the LLM players could make up to 200,000,006 calls (openai/gpt-4o-mini: 200,000,006), more "
                "than the limit of 1,000,000 per experiment") in err
        assert "raise experiment.max_llm_calls" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()
    toml.write_text(LLM_AUCTION.format(extra="max_llm_calls = 300_000_000  # we mean it"))
    assert main(["validate", str(toml)]) == 0
    assert "at most 200,000,006 LLM calls, re-asks included (limit 300,000,000)" in capsys.readouterr().out
    toml.write_text(LLM_AUCTION.format(extra="max_llm_calls = 1000").replace("max_rounds = 9000000000000000000",
                                                                             "max_rounds = 600"))
    assert main(["validate", str(toml)]) == 2
    assert "up to 1,200 calls (openai/gpt-4o-mini: 1,200), more than experiment.max_llm_calls = 1,000" in \
        capsys.readouterr().err


def test_the_bound_counts_re_asks_and_the_dry_run_shows_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "g.toml"
    text = LLM_AUCTION.format(extra="reask = 2")
    toml.write_text(text.replace("max_rounds = 9000000000000000000", "max_rounds = 50"))
    assert main(["run", str(toml), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "openai/gpt-4o-mini             at most 100 LLM calls" in out  # decisions: 2 sessions x 50 rounds
    assert "in all: at most 300 LLM calls, re-asks included (limit 1,000,000)" in out  # each asked up to 3 times
    grid = toml.read_text() + "\n[grid.experiment]\nmax_llm_calls = [10, 20]\n"
    toml.write_text(grid)
    assert main(["validate", str(toml)]) == 2
    assert "max_llm_calls" in capsys.readouterr().err  # one limit per file, not per cell


def test_baseline_only_experiments_have_no_call_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "b.toml"
    text = LLM_AUCTION.format(extra="").replace("sessions = 2", "sessions = 1000000000000")
    toml.write_text(text.replace('agent = "openai"\nmodel = "gpt-4o-mini"', 'agent = "random"'))
    assert main(["validate", str(toml)]) == 0
    out = capsys.readouterr().out
    assert "LLM calls" not in out and "1000000000000 session(s)" in out
