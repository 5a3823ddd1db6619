"""Tournaments and ratings: the [tournament] designs, and every rating against a computation of its own.

The fitting code is tested on synthetic sessions built here (known worths, a rock-paper-scissors cycle, a
clone), the Plackett-Luce MLE against a maximisation of the likelihood written from its definition, the
maximum-entropy Nash against a general-purpose solver, alpha-Rank against OpenSpiel called directly; one
real tournament of baselines plays, resumes, shards and rates end to end.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from econarena.analysis import ratings as rt
from econarena.hosts.config import ConfigError, parse_experiment
from econarena.hosts.tournament import balanced, round_robin

# ---------------------------------------------------------------- the designs and the config


def doc(**tournament: Any) -> dict[str, Any]:
    entrants = [{"agent": "rational"}, {"agent": "random"}, {"agent": "level_k", "k": 1},
                {"agent": "policy", "policy": "constant"}]
    return {"experiment": {"name": "t", "game": "beauty_contest", "sessions": 2, "seed": 3},
            "tournament": {"seats": 2, "entrants": entrants, **tournament}}


def test_round_robin_seats_every_ordered_pair_and_rotates_larger_tables() -> None:
    assert round_robin(3, 2) == [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]
    three = round_robin(4, 3)
    assert len(three) == 4 * 3 and (0, 1, 2) in three and (1, 2, 0) in three and (2, 0, 1) in three
    for seat in range(3):  # every entrant sits in every seat equally often: C(3,2) = 3 times
        assert sorted(np.bincount([t[seat] for t in three]).tolist()) == [3, 3, 3, 3]


def test_balanced_design_sits_everyone_equally_in_every_seat_and_evens_the_pairs() -> None:
    lineups = balanced(6, 2, 30, seed=1)
    assert len(lineups) == 30 and all(a != b for a, b in lineups)
    for seat in range(2):
        assert np.bincount([t[seat] for t in lineups], minlength=6).tolist() == [5] * 6
    met = rt_pairs(lineups, 6)
    assert met.max() - met.min() <= 1  # 30 tables, 15 pairs: each pair twice, as the numbers allow
    assert balanced(6, 2, 30, seed=1) == lineups and balanced(6, 2, 30, seed=2) != lineups
    with pytest.raises(ValueError, match="multiple of the entrants"):
        balanced(6, 2, 31, seed=1)


def rt_pairs(lineups: Any, n: int) -> np.ndarray:
    met = np.zeros((n, n), dtype=int)
    for lu in lineups:
        for a, b in itertools.combinations(lu, 2):
            met[min(a, b), max(a, b)] += 1
    return met[np.triu_indices(n, 1)]


def test_tournament_lineups_are_named_by_their_seats_and_played_as_tables() -> None:
    exp = parse_experiment(doc(self_play=True), "t.toml")
    names = [lu.name for lu in exp.lineups()]
    assert len(names) == 4 * 3 + 4 and names[0] == "rational vs random" and names[1] == "random vs rational"
    assert "constant vs constant" in names and {lu.environment for lu in exp.lineups()} == {"tournament"}
    assert exp.total_runs() == 16 * 2
    grid = parse_experiment({**doc(), "grid": {"game": {"upper_bound": [50, 100]}}}, "t.toml")
    tables = [lu.name for lu, _ in grid.tables()]
    assert len(tables) == 24 and tables[0] == "rational vs random [upper_bound=50]"


@pytest.mark.parametrize("change, message", [
    ({"players": [{"agent": "random"}]}, "[[players]] and [tournament] together"),
    ({"tournament": {"seats": 2, "entrants": [{"agent": "random"}]}}, "at least 2 [[tournament.entrants]]"),
    ({"tournament": {"entrants": [{"agent": "random"}, {"agent": "rational"}]}}, "tournament.seats: beauty_contest"),
    ({"tournament": {"seats": 2, "design": "balanced", "lineups": 6,
                     "entrants": [{"agent": "random", "label": x} for x in "abcd"]}}, "not a multiple of the 4"),
    ({"tournament": {"seats": 2, "lineups": 4,
                     "entrants": [{"agent": "random", "label": x} for x in "ab"]}}, "only the balanced design"),
    ({"tournament": {"seats": 3, "entrants": [{"agent": "random", "label": x} for x in "ab"]}},
     "3 seats need at least 3 entrants"),
    ({"tournament": {"seats": 2, "entrants": [{"agent": "random", "count": 2}, {"agent": "rational"}]}},
     "tournament.entrants[0].count"),
    ({"tournament": {"seats": 2, "rounds": 3, "entrants": [{"agent": "random"}, {"agent": "rational"}]}},
     "tournament.rounds"),
    ({"tournament": {"seats": 2, "entrants": [{"agent": "random"}, {"agent": "nobody"}]}},
     "tournament.entrants[1].agent: unknown agent 'nobody'"),
    ({"tournament": {"seats": 2, "entrants": [{"agent": "random"}, {"agent": "random"}]}},
     "tournament.entrants: duplicate label"),
])
def test_a_bad_tournament_is_refused_naming_the_key(change: dict[str, Any], message: str) -> None:
    data = {**doc(), **change}
    with pytest.raises(ConfigError) as e:
        parse_experiment(data, "t.toml")
    assert message in str(e.value) and "t.toml" in str(e.value)


def test_config_toml_writes_the_tournament_back() -> None:
    import tomllib

    from econarena.hosts.resolved import resolved_toml

    exp = parse_experiment(doc(design="balanced", lineups=8), "t.toml")
    again = parse_experiment(tomllib.loads(resolved_toml(exp)), "config.toml")
    assert [lu.name for lu in again.lineups()] == [lu.name for lu in exp.lineups()]
    assert again.tournament == exp.tournament and "players" not in tomllib.loads(resolved_toml(exp))


# ---------------------------------------------------------------- synthetic tournaments

def tournament(names: list[str], sessions: list[tuple[int, tuple[int, ...], tuple[float, ...]]],
               rational: str | None = None) -> rt.Tournament:
    """A Tournament of (unit, entrants seat by seat, payoffs) sessions of one run each."""
    t = rt.Tournament("g", list(names), rational)
    t.sessions = [rt.Session(u, e, p, p, None) for u, e, p in sessions]
    t.units = [("e", u) for u in sorted({u for u, _, _ in sessions})]
    return t


def bt_sessions(theta: np.ndarray, units: int, rng: np.random.Generator) -> list[Any]:
    """Two-seat round-robin sessions whose winner is drawn by Bradley-Terry with worths exp(theta)."""
    out = []
    for u in range(units):
        for a, b in round_robin(len(theta), 2):
            win = rng.random() < 1 / (1 + math.exp(theta[b] - theta[a]))
            out.append((u, (a, b), (1.0, 0.0) if win else (0.0, 1.0)))
    return out


def test_bradley_terry_by_hand_ties_split_half_a_win_each_way() -> None:
    # A beats B twice, B beats A once, one tie: A has 2.5 wins, B 1.5, so theta_A - theta_B = log(2.5 / 1.5)
    t = tournament(["A", "B"], [(0, (0, 1), (1.0, 0.0)), (1, (1, 0), (0.0, 1.0)), (2, (0, 1), (0.0, 1.0)),
                                (3, (1, 0), (2.0, 2.0))], rational="B")
    theta, separated = rt.fit(rt.build_events(t), reference=1)
    assert not separated and theta[1] == 0 and theta[0] == pytest.approx(math.log(2.5 / 1.5), abs=1e-10)


def test_plackett_luce_equals_the_likelihood_maximised_from_its_definition() -> None:
    """Three- and two-seat sessions with ties, fitted two ways: ours, and scipy maximising the log-likelihood
    written from the definition (every order of tied seats, equal weight; product of first choices)."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(4)
    sessions = []
    for u in range(12):
        for seats in ((0, 1, 2), (2, 3, 0), (1, 3), (3, 2, 1)):
            pay = tuple(float(x) for x in rng.integers(0, 3, size=len(seats)))
            sessions.append((u, seats, pay))
    t = tournament(["a", "b", "c", "d"], sessions)
    theta, separated = rt.fit(rt.build_events(t))
    assert not separated

    def loglik(free: np.ndarray) -> float:
        th = np.concatenate([[0.0], free])
        total = 0.0
        for _, seats, pay in sessions:
            levels = sorted(set(pay), reverse=True)
            groups = [[i for i in range(len(seats)) if pay[i] == v] for v in levels]
            orders = list(itertools.product(*(itertools.permutations(g) for g in groups)))
            for perm in orders:
                seq = [seats[i] for p in perm for i in p]
                for k in range(len(seq) - 1):
                    total += (th[seq[k]] - math.log(sum(math.exp(th[j]) for j in seq[k:]))) / len(orders)
        return -total

    best = minimize(loglik, np.zeros(3), method="BFGS", options={"gtol": 1e-10})
    expected = np.concatenate([[0.0], best.x])
    assert theta == pytest.approx(expected - expected.mean(), abs=1e-5)


def test_known_order_is_recovered_with_separated_intervals() -> None:
    theta = np.array([1.5, 0.5, -0.5, -1.5])
    t = tournament(["w", "x", "y", "z"], bt_sessions(theta, 150, np.random.default_rng(0)))
    r = rt.rate([(t, rt.build_events(t), rt.normalised(t)[0], "")], "g", t.entrants, None, 300,
                np.random.default_rng(1))
    assert r.rank_low.tolist() == r.rank_high.tolist() == [1, 2, 3, 4]
    assert all(r.low[i] > r.high[i + 1] for i in range(3))  # each interval wholly above the next one's
    assert r.rating == pytest.approx(theta - theta.mean(), abs=0.25)


def test_fixed_policies_separate_and_are_still_ranked() -> None:
    """A higher choice always wins: every comparison is decided, the maximum likelihood does not exist, and
    the ratings say so (inf/-inf around the reference) while the ranks keep the order."""
    choice = [30.0, 20.0, 10.0, 0.0]
    sessions = [(u, (a, b), (choice[a], choice[b])) for u in range(5) for a, b in round_robin(4, 2)]
    t = tournament(["top", "second", "third", "last"], sessions, rational="second")
    r = rt.rate([(t, rt.build_events(t), rt.normalised(t)[0], "")], "g", t.entrants, "second", 50,
                np.random.default_rng(0))
    assert r.rating.tolist() == [math.inf, 0.0, -math.inf, -math.inf]
    assert r.rank_low.tolist() == r.rank_high.tolist() == [1, 2, 3, 4]
    assert any("maximum likelihood does not exist" in n and "top (inf)" in n for n in r.notes)
    csv = rt.csv_text([r])
    assert "g,top,inf,inf,inf,1,1," in csv and "g,last,-inf,-inf,-inf,4,4," in csv


def test_a_rock_paper_scissors_cycle_is_named_and_claims_no_strict_rank() -> None:
    rng = np.random.default_rng(2)
    beats = {(0, 1), (1, 2), (2, 0)}  # rock beats scissors beats paper beats rock
    sessions = []
    for u in range(60):
        for a, b in round_robin(3, 2):
            win = rng.random() < (0.8 if (a, b) in beats else 0.2)
            sessions.append((u, (a, b), (1.0, 0.0) if win else (0.0, 1.0)))
    t = tournament(["rock", "scissors", "paper"], sessions)
    r = rt.rate([(t, rt.build_events(t), rt.normalised(t)[0], "")], "g", t.entrants, None, 300,
                np.random.default_rng(3))
    assert r.cycles == [("rock", "scissors", "paper")]
    assert all(lo == 1 and hi >= 2 for lo, hi in zip(r.rank_low, r.rank_high))
    assert any(n.startswith("cycle: rock beats scissors, scissors beats paper and paper beats rock") for n in r.notes)
    assert r.nash_average == pytest.approx([0, 0, 0], abs=1e-9)


def test_maxent_nash_by_hand_and_against_a_general_solver() -> None:
    from scipy.optimize import minimize

    rps = np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], dtype=float)
    assert rt.maxent_nash(rps) == pytest.approx([1 / 3] * 3, abs=1e-12)
    transitive = np.array([[0, 1, 1], [-1, 0, 1], [-1, -1, 0]], dtype=float)
    assert rt.maxent_nash(transitive) == pytest.approx([1, 0, 0], abs=1e-12)
    rng = np.random.default_rng(5)
    for _ in range(5):
        p = rng.random((5, 5))
        a = p - p.T
        ours = rt.maxent_nash(a)
        cons = [{"type": "ineq", "fun": lambda x, a=a: -(a @ x)}, {"type": "eq", "fun": lambda x: x.sum() - 1}]
        ref = minimize(lambda x: float(np.sum(x * np.log(np.maximum(x, 1e-300)))), np.full(5, 0.2), method="SLSQP",
                       bounds=[(0, 1)] * 5, constraints=cons, options={"ftol": 1e-14, "maxiter": 1000})
        assert ours == pytest.approx(ref.x, abs=1e-4) and np.all(a @ ours <= 1e-9)


def test_a_clone_leaves_nash_averages_unchanged_while_plackett_luce_shifts() -> None:
    rng = np.random.default_rng(6)
    p = rng.random((4, 4))
    p = (p + (1 - p.T)) / 2  # a constant-sum meta-game: P + P^T = 1
    before, _ = rt.nash_averages(p)
    idx = [0, 1, 2, 3, 1]  # entrant 1 and its clone
    after, _ = rt.nash_averages(p[np.ix_(idx, idx)])
    assert after[:4] == pytest.approx(before, abs=1e-6) and after[4] == pytest.approx(before[1], abs=1e-6)
    # Plackett-Luce with the mean as reference: the clone's games move the others' ratings
    theta = np.array([0.8, 0.3, -0.2, -0.9])
    base = bt_sessions(theta, 40, np.random.default_rng(7))
    t = tournament(list("abcd"), base)
    cloned = bt_sessions(theta[idx], 40, np.random.default_rng(7))
    t2 = tournament(list("abcd") + ["b2"], cloned)
    r1, _ = rt.fit(rt.build_events(t))
    r2, _ = rt.fit(rt.build_events(t2))
    assert np.max(np.abs(r1 - r2[:4])) > 0.05


def test_intervals_cover_the_truth_in_at_least_93_of_100_replications() -> None:
    theta = np.array([0.0, 0.6, -0.4])  # entrant 0 is the reference, so the truth is theta itself
    covered = 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        t = tournament(["ref", "b", "c"], bt_sessions(theta, 30, rng), rational="ref")
        ev = rt.build_events(t)
        boot, _ = rt.pl_boot(ev, rt.boot_weights([(0, len(t.units))], 200, rng), 0)
        low, high = rt._interval(boot)
        covered += bool(low[1] <= theta[1] <= high[1])
    assert covered >= 93


def test_meta_game_and_alpharank_against_hand_values_and_openspiel() -> None:
    from open_spiel.python.egt import alpharank

    # A gets 8 of 10 against B in one seat order and 6 of 10 in the other: P[A][B] = 0.7 by the observed range
    t = tournament(["A", "B", "C"], [(0, (0, 1), (8.0, 2.0)), (0, (1, 0), (4.0, 6.0)), (0, (0, 2), (10.0, 0.0)),
                                     (0, (2, 0), (5.0, 5.0)), (0, (1, 2), (3.0, 7.0)), (0, (2, 1), (9.0, 1.0))])
    norm, note = rt.normalised(t)
    assert "range observed" in note and "0 to 10" in note
    sums, counts, ones = rt._pair_sums(t, norm)
    p = rt.meta_game(sums, counts, ones)
    assert p[0, 1] == pytest.approx(0.7) and p[1, 0] == pytest.approx(0.3) and p[0, 2] == pytest.approx(0.75)
    assert p[2, 1] == pytest.approx(0.8) and math.isnan(p[0, 0])
    pf = rt.filled(p)
    _, _, pi, _, _ = alpharank.compute([pf], m=50, alpha=100.0, use_local_selection_model=True)
    assert rt.alpharank(pf) == pytest.approx(pi, abs=1e-12)
    r = rt.rate([(t, rt.build_events(t), norm, note)], "g", t.entrants, None, 20, np.random.default_rng(0))
    assert r.alpharank == pytest.approx(pi, abs=1e-12)


# ---------------------------------------------------------------- a real tournament, end to end

TOUR = """
[experiment]
name = "tour"
game = "beauty_contest"
sessions = {sessions}
seed = 11

[tournament]
seats = 2

[[tournament.entrants]]
agent = "rational"
[[tournament.entrants]]
agent = "random"
[[tournament.entrants]]
agent = "level_k"
k = 1
[[tournament.entrants]]
agent = "policy"
policy = "constant"
"""


def runs_of(d: Path) -> list[str]:
    return sorted(json.dumps(json.loads(x), sort_keys=True) for x in (d / "runs.jsonl").read_text().splitlines())


def test_a_four_entrant_tournament_plays_resumes_shards_and_rates(tmp_path: Path, monkeypatch: Any,
                                                                  capsys: Any) -> None:
    """100 sessions per lineup of 4 baselines (12 lineups, 1,200 games) play and rate in under a minute;
    a resumed and a sharded run give the same runs, so the same ratings."""
    from econarena.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.toml").write_text(TOUR.format(sessions=100))
    start = time.perf_counter()
    assert main(["run", "t.toml", "--out", "full", "--quiet"]) == 0
    assert main(["ratings", "full", "--out", "rated", "--json", "r.json", "--boot", "200"]) == 0
    elapsed = time.perf_counter() - start
    assert elapsed < 60, f"played and rated in {elapsed:.1f} s"
    out = capsys.readouterr().out
    assert "beauty_contest: ratings" in out and "alpha-Rank: OpenSpiel" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    rows = {r["entrant"]: r for r in doc["games"]["beauty_contest"]}
    assert rows["rational"]["rating"] == "inf" and rows["rational"]["rank_low"] == 1  # it never loses here
    assert set(rows) == {"rational", "random", "level_k", "constant"} and doc["cycles"] == []
    assert (tmp_path / "rated" / "ratings.csv").read_text().splitlines()[0] == ",".join(rt.COLUMNS)
    assert (tmp_path / "rated" / "metagame_beauty_contest.png").stat().st_size > 1000
    # resume: the second half of the sessions removed, then played again
    half = tmp_path / "half"
    half.mkdir()
    for name in ("config.toml", "manifest.json"):
        (half / name).write_bytes((tmp_path / "full" / name).read_bytes())
    for name in ("runs.jsonl", "decisions.jsonl"):
        keep = [x for x in (tmp_path / "full" / name).read_text().splitlines() if json.loads(x)["session"] < 50]
        (half / name).write_text("\n".join(keep) + "\n")
    assert main(["run", "t.toml", "--out", "half", "--resume", "--quiet"]) == 0
    assert runs_of(half) == runs_of(tmp_path / "full")
    # shards, merged
    for k in (1, 2):
        assert main(["run", "t.toml", "--shard", f"{k}/2", "--out", f"s{k}", "--quiet"]) == 0
    assert main(["merge", "s1", "s2", "--out", "merged"]) == 0
    assert runs_of(tmp_path / "merged") == runs_of(tmp_path / "full")
    per, _ = rt.ratings([tmp_path / "merged"], n_boot=50)
    again, _ = rt.ratings([tmp_path / "full"], n_boot=50)
    assert per["beauty_contest"].rows() == again["beauty_contest"].rows()


def test_ratings_refuses_directories_without_a_tournament(tmp_path: Path, capsys: Any) -> None:
    from econarena.cli import main

    d = tmp_path / "plain"
    d.mkdir()
    (d / "config.toml").write_text('[experiment]\nname = "x"\ngame = "beauty_contest"\n')
    (d / "runs.jsonl").write_text("")
    assert main(["ratings", str(d)]) == 2
    assert "no tournament in the directories given" in capsys.readouterr().err
