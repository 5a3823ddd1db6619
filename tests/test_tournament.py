"""``[tournament]``: the designs' lineups counted by hand, the file's errors, and a tournament that plays paired
sessions, resumes exactly and runs once per [grid] cell."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

from econarena.cli import main
from econarena.hosts.config import ConfigError, load_experiment
from econarena.hosts.tournament import balanced, design_lineups, round_robin

# Two seats of the beauty contest: the lower guess is always nearer 2/3 of the mean, so it wins.
BASE = """\
[experiment]
name = "tour"
game = "beauty_contest"
sessions = 4
seed = 5

[game]
upper_bound = {{ uniform = [50, 100] }}

[tournament]
seats = 2
{extra}

[[tournament.entrants]]
agent = "scripted"
label = "low"
responses = ['{{"answer": 10}}']

[[tournament.entrants]]
agent = "scripted"
label = "mid"
responses = ['{{"answer": 30}}']

[[tournament.entrants]]
agent = "scripted"
label = "high"
responses = ['{{"answer": 45}}']

[[tournament.entrants]]
agent = "random"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tour.toml"
    path.write_text(text, encoding="utf-8")
    return path


def records(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines() if x.strip()]


def test_round_robin_is_every_ordered_pair_and_every_rotation() -> None:
    assert round_robin(3, 2) == [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]
    three = round_robin(4, 3)
    assert len(three) == 4 * 3  # C(4, 3) combinations x 3 rotations
    assert (0, 1, 2) in three and (1, 2, 0) in three and (2, 0, 1) in three
    for seat in range(3):  # every entrant sits C(3, 2) = 3 times in every seat
        assert Counter(t[seat] for t in three) == {0: 3, 1: 3, 2: 3, 3: 3}
    assert design_lineups(3, 2, "round_robin", None, True, 0)[-3:] == ((0, 0), (1, 1), (2, 2))


@pytest.mark.parametrize("n,seats,k", [(4, 2, 8), (5, 3, 10), (6, 2, 12), (7, 4, 14)])
def test_balanced_seats_everyone_equally_in_every_seat(n: int, seats: int, k: int) -> None:
    tables = balanced(n, seats, k, seed=1)
    assert len(tables) == k and all(len(set(t)) == seats for t in tables)
    for seat in range(seats):
        assert Counter(t[seat] for t in tables) == {i: k // n for i in range(n)}
    met = Counter(frozenset(p) for t in tables for p in itertools.combinations(t, 2))
    pairs = [met[frozenset(p)] for p in itertools.combinations(range(n), 2)]
    assert max(pairs) - min(pairs) <= 1  # as even as the numbers allow in these sizes
    assert balanced(n, seats, k, seed=1) == tables  # reproducible from the file alone


def test_a_tournament_parses_into_named_lineups(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, BASE.format(extra="")))
    names = [lu.name for lu in exp.lineups()]
    assert len(names) == 12 and names[0] == "low vs mid" and names[1] == "mid vs low"
    assert {lu.environment for lu in exp.lineups()} == {"tournament"}
    exp = load_experiment(write(tmp_path, BASE.format(extra='design = "balanced"\nlineups = 8\nself_play = true')))
    assert len(exp.lineups()) == 8 + 4 and exp.lineups()[-1].name == "random vs random"


@pytest.mark.parametrize("extra,text", [
    ('design = "balanced"', "tournament.lineups: the balanced design needs the number of lineups"),
    ('design = "balanced"\nlineups = 6', "tournament.lineups: 6 is not a multiple of the 4 entrants"),
    ("lineups = 4", "only the balanced design takes a number of lineups"),
    ('design = "swiss"', "tournament.design"),
    ("seats = 9", "tournament.seats: 9 seats need at least 9 entrants"),
    ("rounds = 3", "tournament.rounds"),
])
def test_tournament_errors_name_the_key(tmp_path: Path, extra: str, text: str) -> None:
    body = BASE.format(extra=extra).replace("seats = 2\nseats = 9", "seats = 9")
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path, body))
    assert text in str(info.value) and "tour.toml" in str(info.value)


def test_players_beside_a_tournament_and_counts_are_refused(tmp_path: Path) -> None:
    both = BASE.format(extra="") + '\n[[players]]\nagent = "random"\n'
    with pytest.raises(ConfigError, match=r"\[\[players\]\] and \[tournament\] together"):
        load_experiment(write(tmp_path, both))
    counted = BASE.format(extra="").replace('agent = "random"\n', 'agent = "random"\ncount = 2\n')
    with pytest.raises(ConfigError, match=r"tournament.entrants\[3\].count"):
        load_experiment(write(tmp_path, counted))
    one = BASE.format(extra="").split("[[tournament.entrants]]")[0] + '[[tournament.entrants]]\nagent = "random"\n'
    with pytest.raises(ConfigError, match="at least 2"):
        load_experiment(write(tmp_path, one))


def test_lineups_play_paired_sessions_and_resume_exactly(tmp_path: Path) -> None:
    toml = write(tmp_path, BASE.format(extra=""))
    out = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    recs = records(out)
    assert len(recs) == 12 * 4 and {r["environment"] for r in recs} == {"tournament"}
    for s in range(4):  # session k draws the same upper bound in every lineup
        assert len({json.dumps(r["params"], sort_keys=True) for r in recs if r["session"] == s}) == 1
    assert len({json.dumps(r["params"], sort_keys=True) for r in recs}) == 4
    for r in recs:  # the lower guess wins: the prize goes to it
        if "random" not in r["labels"]:
            lo = min(range(2), key=lambda i: {"low": 10, "mid": 30, "high": 45}[r["labels"][i]])
            assert r["payoffs"][lo] > r["payoffs"][1 - lo]
    lines = (out / "runs.jsonl").read_text().splitlines(keepends=True)
    (out / "runs.jsonl").write_text("".join(lines[:30]))  # interrupted after 30 runs
    assert main(["run", str(toml), "--out", str(out), "--resume", "--quiet"]) == 0
    again = records(out)
    key = lambda r: (r["lineup"], r["session"], r["run"])  # noqa: E731
    assert sorted(map(key, again)) == sorted(map(key, recs))
    strip = lambda r: {k: v for k, v in r.items() if k not in ("time", "duration_s", "started", "wall_s")}  # noqa: E731
    assert sorted(json.dumps(strip(r), sort_keys=True) for r in again) == sorted(
        json.dumps(strip(r), sort_keys=True) for r in recs)


def test_a_grid_plays_a_tournament_per_cell(tmp_path: Path) -> None:
    text = BASE.format(extra="").replace("sessions = 4", "sessions = 2") + "\n[grid.game]\nratio = [0.5, 0.9]\n"
    toml = write(tmp_path, text.replace("upper_bound = { uniform = [50, 100] }\n", "upper_bound = 100\n"))
    out = tmp_path / "grid"
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    recs = records(out)
    assert len(recs) == 2 * 12 * 2
    cells = Counter(json.dumps(r["cell"], sort_keys=True) for r in recs)
    assert len(cells) == 2 and set(cells.values()) == {24}
    from econarena.analysis.ratings import OVERALL, ratings

    per, overall = ratings([out], n_boot=20)  # rated cell by cell, and over the cells weighted equally
    assert sorted(per) == ["beauty_contest [ratio=0.5]", "beauty_contest [ratio=0.9]"]
    assert overall is not None and overall.game == OVERALL and sorted(overall.entrants) == sorted(per[
        "beauty_contest [ratio=0.5]"].entrants)


def test_the_report_section_shows_the_heat_map_and_the_ratings(tmp_path: Path) -> None:
    from econarena.analysis.ratings import report_section

    toml = write(tmp_path, BASE.format(extra=""))
    out = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    sec = report_section([out], tmp_path / "fig", n_boot=50, seed=0)
    assert [f.key for f in sec.figures] == ["tournament-ratings-1"]
    assert sec.figures[0].png.stat().st_size > 1000 and sec.figures[0].svg.is_file()
    for label in ("low", "mid", "high", "random"):
        assert f"<td>{label}</td>" in sec.detail
    assert "reference at 0" in sec.detail
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.toml").write_text('[experiment]\nname = "x"\n', encoding="utf-8")
    assert report_section([plain], tmp_path / "fig", n_boot=50, seed=0) is None


def test_the_same_tournament_on_ray_gives_the_same_runs_and_ratings(tmp_path: Path, ray_cluster: object) -> None:
    from econarena.analysis.ratings import ratings

    toml = write(tmp_path, BASE.format(extra="").replace("sessions = 4", "sessions = 10"))
    here, there = tmp_path / "here", tmp_path / "ray"
    assert main(["run", str(toml), "--out", str(here), "--quiet"]) == 0
    assert main(["run", str(toml), "--out", str(there), "--quiet", "--ray", "--ray-workers", "2"]) == 0
    strip = lambda r: {k: v for k, v in r.items() if k not in ("time", "duration_s", "started", "wall_s")}  # noqa: E731
    assert sorted(json.dumps(strip(r), sort_keys=True) for r in records(there)) == sorted(
        json.dumps(strip(r), sort_keys=True) for r in records(here))
    a, _ = ratings([here], n_boot=100, seed=3)
    b, _ = ratings([there], n_boot=100, seed=3)
    assert a["beauty_contest"].rows() == b["beauty_contest"].rows()


def test_ratings_csv_always_has_the_overall_rows_and_safe_cells(tmp_path: Path) -> None:
    import csv

    import numpy as np

    from econarena.analysis import ratings as rt

    toml = write(tmp_path, BASE.format(extra=""))
    out = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out), "--quiet"]) == 0
    assert main(["ratings", str(out), "--out", str(tmp_path / "rt"), "--boot", "20"]) == 0
    with open(tmp_path / "rt" / "ratings.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    game = [{k: v for k, v in r.items() if k != "game"} for r in rows if r["game"] == "beauty_contest"]
    overall = [{k: v for k, v in r.items() if k != "game"} for r in rows if r["game"] == "overall"]
    assert len(game) == 4 and overall == game  # one game: the aggregate is that game
    one = np.array([1.0])
    t = rt.Rated("g", ["=HYPERLINK(1)"], np.array([-np.inf]), np.array([np.nan]), one, np.array([1]),
                 np.array([2]), one, one, np.eye(1), [], [])
    line = rt.csv_text([t]).splitlines()[1]
    assert line == "g,'=HYPERLINK(1),-inf,,1.0,1,2,1.0,1.0"


def test_a_human_is_an_entrant_like_any_other(tmp_path: Path) -> None:
    text = BASE.format(extra="").replace("sessions = 4", "sessions = 1").replace(
        'agent = "scripted"\nlabel = "high"\nresponses = [\'{"answer": 45}\']', 'agent = "human"\nlabel = "me"')
    toml = write(tmp_path, text)
    script = tmp_path / "replies.txt"
    script.write_text('{"answer": 5}\n' * 6, encoding="utf-8")  # "me" sits in 6 of the 12 lineups, once each
    out = tmp_path / "out"
    assert main(["run", str(toml), "--out", str(out), "--quiet", "--human-input", str(script)]) == 0
    mine = [r for r in records(out) if "me" in r["labels"]]
    assert len(mine) == 6
    for r in mine:  # 5 is below every other guess but random's: against the scripted it always wins
        other = r["labels"][1 - r["labels"].index("me")]
        if other != "random":
            assert r["payoffs"][r["labels"].index("me")] > r["payoffs"][1 - r["labels"].index("me")]


def test_list_and_validate_show_the_tournament(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "tournaments ([tournament]" in out and "round_robin" in out and "balanced" in out
    toml = write(tmp_path, BASE.format(extra='design = "balanced"\nlineups = 8'))
    assert main(["validate", str(toml)]) == 0
    assert "(beauty_contest, balanced tournament, 8 table(s) x 4 session(s)" in capsys.readouterr().out
    assert main(["run", str(toml), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "tour: beauty_contest, balanced tournament" in out and "low " in out


def test_overall_weighs_every_game_equally() -> None:
    import math

    import numpy as np

    from econarena.analysis import ratings as rt

    def part(game: str, rows: list[tuple[int, tuple[int, int], tuple[float, float]]]) -> tuple:
        t = rt.Tournament(game, ["A", "B"])
        t.sessions = [rt.Session(u, e, p, p, (0.0, 1.0)) for u, e, p in rows]
        t.units = [(game, u) for u in sorted({u for u, _, _ in rows})]
        norm, note = rt.normalised(t)
        return t, rt.build_events(t), norm, note

    win, lose = (1.0, 0.0), (0.0, 1.0)
    # g1: one lineup, A wins 3 of 4; g2: both seat orders, A wins 2 of 8 (twice the comparisons)
    g1 = part("g1", [(0, (0, 1), win), (1, (0, 1), win), (2, (0, 1), win), (3, (0, 1), lose)])
    a_won = {(0, (0, 1)), (1, (1, 0))}  # (unit, lineup) where A wins; B wins the other six
    g2 = part("g2", [(u, lu, (win if lu[0] == 0 else lose) if (u, lu) in a_won else (lose if lu[0] == 0 else win))
                     for u in range(4) for lu in ((0, 1), (1, 0))])
    a_wins = sum(1 for s in g2[0].sessions if s.total[s.entrants.index(0)] > 0.5)
    assert a_wins == 2 and len(g2[0].sessions) == 8
    r = rt.rate([g1, g2], rt.OVERALL, ["A", "B"], None, 20, np.random.default_rng(0))
    # A's share: 3/4 in g1 and 2/8 in g2, each game weighing 1: 1.0 win each way, so equal ratings
    assert r.rating[0] == pytest.approx(0.0, abs=1e-9) and r.rating[1] == pytest.approx(0.0, abs=1e-9)
    # P: A's mean payoff against B is 3/4 in g1 and 2/8 in g2; their mean is 1/2
    assert r.p[0, 1] == pytest.approx(0.5) and r.p[1, 0] == pytest.approx(0.5)
    one = rt.rate([g1], "g1", ["A", "B"], None, 20, np.random.default_rng(0))
    assert one.rating[0] - one.rating[1] == pytest.approx(math.log(3), abs=1e-9)
