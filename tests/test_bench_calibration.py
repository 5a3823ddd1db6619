"""Calibration of the bench's intervals: 20 replications of the shipped standard tier played by the seeded
``random`` baseline, each interval checked against the mean of the 20 replications (the best estimate of the
true mean there is). The replications are one bench run with 20 times the tier's sessions, cut into 20
disjoint blocks of the tier's size: every session is seeded apart, so the blocks are independent replications,
and one run costs one start-up instead of twenty. Within a block the games' sessions pair by position, as a
real run's pair by index (one seed: a random player's draws move together across games, which the family and
overall intervals must carry: without the covariance, GAMA-Bench's held the mean in 16 of 20)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from econarena.analysis import benchmark as B
from econarena.cli import main
from econarena.formats.benchsuite import DEFAULT, load_suite

REPLICATIONS = 20


def test_standard_tier_intervals_cover_the_replication_mean(tmp_path: Path) -> None:
    suite = load_suite(DEFAULT)
    text = suite.text
    for g in suite.games:  # every game's standard sessions x 20 (the table's lines are unique per count)
        n = g.sessions["standard"]
        text = text.replace(f"standard = {n}, full", f"standard = {n * REPLICATIONS}, full")
    big = tmp_path / "suite.toml"
    big.write_text(text, encoding="utf-8")
    assert main(["bench", "random", "--suite", str(big), "--tier", "standard", "--no-baselines", "--quiet",
                 "--out", str(tmp_path / "o")]) == 0
    result = json.loads((tmp_path / "o" / "random" / "bench.json").read_text(encoding="utf-8"))
    per = {g["id"]: g["per_session"] for g in result["games"]}
    reps = []
    for k in range(REPLICATIONS):
        games = []
        for g in suite.games:
            n = g.sessions["standard"]
            block = per[g.id][k * n:(k + 1) * n]
            assert len(block) == n
            games.append(B.GameScore(g.id, g.family, g.game, g.score, math.fsum(block) / n, None, None, n, n, n, 0,
                                     None, None, block))
        reps.append((games, B.combine(suite, games)))
    mean = math.fsum(c["overall"]["score"] for _, c in reps) / REPLICATIONS
    covered = sum(c["overall"]["low"] <= mean <= c["overall"]["high"] for _, c in reps)
    assert covered >= 0.9 * REPLICATIONS, (covered, mean, [(c["overall"]["low"], c["overall"]["high"])
                                                          for _, c in reps])
    # every game's interval, on average over the 19 games (one game may miss more by chance, not all)
    game_cover = []
    for i in range(len(suite.games)):
        m = math.fsum(games[i].score for games, _ in reps) / REPLICATIONS
        game_cover.append(sum(games[i].low - 1e-9 <= m <= games[i].high + 1e-9 for games, _ in reps) / REPLICATIONS)
    assert sum(game_cover) / len(game_cover) >= 0.9, dict(zip([g.id for g in suite.games], game_cover))
    for name in suite.families:
        m = math.fsum(c["subscores"][name]["score"] for _, c in reps) / REPLICATIONS
        cover = sum(c["subscores"][name]["low"] <= m <= c["subscores"][name]["high"] for _, c in reps)
        assert cover >= 0.85 * REPLICATIONS, (name, cover)


def test_the_quick_tier_prints_no_interval(tmp_path: Path) -> None:
    """One or two sessions a game cannot give a calibrated interval (v1's "95%" held the mean in 80% of 20
    replications): the smoke tier prints none, in bench.json and on the terminal."""
    assert main(["bench", "random", "--no-baselines", "--quiet", "--out", str(tmp_path / "q")]) == 0
    result = json.loads((tmp_path / "q" / "random" / "bench.json").read_text(encoding="utf-8"))
    assert result["overall"]["low"] is None and result["overall"]["method"].startswith("none")
    assert all(g["low"] is None for g in result["games"])
    assert all(s["low"] is None for s in result["subscores"].values())
