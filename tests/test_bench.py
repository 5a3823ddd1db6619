"""``econarena bench`` and ``econarena leaderboard``: the suite file, the score rules by hand, a scripted model on
the loopback OpenAI-compatible server (scores computed by hand, the same score twice), the budget stop and its
resume, the leaderboard's refusals, and GAMA-Bench's subscore equal to the leaderboard's on imported results."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from econarena.analysis import benchmark as B
from econarena.analysis.families import gamabench
from econarena.cli import main
from econarena.formats.benchsuite import DEFAULT, TIERS, SuiteError, load_suite, parse_expression
from econarena.games import GAMES
from econarena.hosts import bench as H
from econarena.hosts.config import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent

# A small suite: one game per family, scored by hand below. Weights 1, 1, 2.
SMALL = """
[suite]
name = "test-bench"
version = "t1"
seed = 5
boot = 200

[tiers.quick]
description = "quick"
[tiers.standard]
description = "standard"
[tiers.full]
description = "full"

[llm]
max_tokens = 64

[families.gamabench]
title = "GAMA"
weight = 1
subscore = "mean of the games"
why = "the reference formula"
published = "gamabench_leaderboard"
published_tiers = ["standard"]

[families.econarena]
title = "EA"
weight = 1
subscore = "distance to the equilibrium action"
why = "best reply"

[families.negotiationarena]
title = "NA"
weight = 2
subscore = "share of the pie"
why = "the opponent accepts any split"

[[games]]
id = "guess"
family = "gamabench"
game = "guessing_game"
table = "copies"
seats = 3
protocol = { temperature = 1.0 }
params = { rounds = 2 }
sessions = { quick = 2, standard = 3, full = 4 }
score = "game"
why = "reference"

[[games]]
id = "beauty"
family = "econarena"
game = "beauty_contest"
table = "rational"
seats = 5
params = { upper_bound = 100, prize = 100 }
sessions = { quick = 2, standard = 3, full = 4 }
score = "equilibrium_action"
why = "0 is the equilibrium"

[[games]]
id = "ultimatum"
family = "negotiationarena"
game = "ultimatum"
table = "versus"
seat = 0
opponent = { agent = "rational" }
params = { total = 100, turns = 4 }
sessions = { quick = 2, standard = 3, full = 4 }
score = "payoff_share"
best = "total"
deal = "agreement"
why = "keep it all"
"""


def small_suite(tmp_path: Path, text: str = SMALL, name: str = "small.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def scripted_reply(protocol: str, body: Any) -> str:
    """The scripted model: 30 in Guess 2/3, 20 in the beauty contest, RED gives 10 in the ultimatum."""
    text = " ".join(m.get("content") or "" for m in body["messages"])
    if "red_gives" in text:
        return json.dumps({"reason": "r", "message": "ten for you", "decision": "propose", "red_gives": 10})
    if "chosen_number" in text:
        return '{"chosen_number": 30}'
    return '{"understanding": "u", "popular answer": 30, "answer": 20, "reason": "r"}'


# By hand: Guess 2/3 with everyone at 30 scores (100 - 30) / 100 x 100 = 70 in every session; the beauty contest
# at 20 of 100 scores 100 x (1 - 20 / 100) = 80; RED keeping 90 of 100 against a responder who accepts any split
# scores 90. Overall = (70 + 80 + 2 x 90) / 4 = 82.5.
BY_HAND = {"guess": 70.0, "beauty": 80.0, "ultimatum": 90.0}
OVERALL = (70.0 + 80.0 + 2 * 90.0) / 4


def prices_file(tmp_path: Path, per_mtok: float = 1e6) -> Path:
    """Prices for the fake model: 1e6 USD per million tokens is one dollar per token (word, on the server)."""
    path = tmp_path / "prices.toml"
    path.write_text(f'["fake-model"]\ninput_per_mtok = {per_mtok}\noutput_per_mtok = {per_mtok}\n', encoding="utf-8")
    return path


def bench_args(server: Any, suite: Path, out: Path, *extra: str) -> list[str]:
    return ["bench", f"fake-model@{server.url}/v1", "--suite", str(suite), "--out", str(out), "--label", "fake",
            "--quiet", "--cache-dir", str(out.parent / "cache"), *extra]


# ------------------------------------------------------------------------------------------- the suite file

def test_the_shipped_suite_builds_for_every_tier_and_baseline() -> None:
    suite = load_suite(DEFAULT)
    assert suite.version == "v2" and len(suite.games) == 19
    assert set(suite.families) == {"gamabench", "econarena", "glee", "negotiationarena", "steering"}
    for tier in TIERS:
        for name in H.PLAYABLE_BASELINES:
            exps = H.build(suite, tier, H.model_specs(name)[0])
            assert [e.name for e in exps] == [g.id for g in suite.games]
    spec = H.model_specs("hf")[0]
    for e, g in zip(H.build(suite, "standard", spec), suite.games):  # an LLM: the protocol's keys win
        me = next(p for p in e.players if p.label == spec.label)
        assert me.llm is not None and me.llm.structured == "strict"
        assert me.llm.temperature == g.protocol.get("temperature")


def test_standard_tier_plays_gamabench_with_the_published_parameters() -> None:
    """The standard tier's GAMA-Bench games are the shipped leaderboard experiments (configs/gamabench/): the
    games' default parameters, ten copies of the model, temperature 1, 5 runs. The prompts are our wording and
    the re-asks stop at 3, so no tier claims the published protocol (suite v2): never ranked among its rows."""
    suite = load_suite(DEFAULT)
    assert suite.families["gamabench"].published_tiers == ()
    assert "directly comparable" not in suite.text
    games = suite.games_of("gamabench")
    assert sorted(g.game for g in games) == sorted(gamabench.leaderboard_games())
    spec = H.model_specs("openai:gpt-4o-mini")[0]
    for exp, g in zip(H.build(suite, "standard", spec), suite.games):
        if g.family != "gamabench":
            continue
        shipped = tomllib.loads((REPO / "configs" / "gamabench" / f"{g.game}.toml").read_text(encoding="utf-8"))
        assert exp.params.model_dump() == GAMES[g.game].Params(**shipped["game"]).model_dump() == \
            GAMES[g.game].Params().model_dump()
        assert exp.experiment.sessions == shipped["experiment"]["sessions"] == 5
        assert exp.players[0].count == 10 and exp.players[0].llm.temperature == 1.0
        assert exp.experiment.environment == "melee"


@pytest.mark.parametrize("change, message", [
    (("seed = 5", "seed = 5\ncolour = 1"), "unknown key 'colour'"),
    (('score = "game"', 'score = "vibes"'), "games[0].score: expected one of"),
    (('best = "total"', 'best = "total / 2"'), "games[2].best: expected +, - or *"),
    (('id = "beauty"', 'id = "guess"'), "games[1].id: 'guess' is used twice"),
    (("table = \"versus\"", "table = \"copies\""), "games[2].opponent: only a 'versus' table"),
    (("weight = 2", "weight = -1"), "families.negotiationarena.weight"),
    (('version = "t1"', 'version = "t 1"'), "suite.version"),
])
def test_suite_errors_name_the_file_and_key(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    path = small_suite(tmp_path, SMALL.replace(*change, 1))
    with pytest.raises(SuiteError) as exc:
        load_suite(path)
    assert message in str(exc.value) and str(path) in str(exc.value)


def test_expressions_by_hand() -> None:
    e = parse_expression("money * buyer_value - money * seller_value + 2")
    assert e.value({"money": 100, "buyer_value": 1.2, "seller_value": 0.8}) == pytest.approx(42.0)
    assert parse_expression("-total").value({"total": 7}) == -7
    for bad in ("", "a +", "a / b", "__import__('os')", "a ** 2"):
        with pytest.raises(ValueError):
            parse_expression(bad)
    with pytest.raises(KeyError):
        e.value({"money": 1})


# ------------------------------------------------------------------------------------------- score rules

def _entry(tmp_path: Path, gid: str) -> Any:
    return next(g for g in load_suite(small_suite(tmp_path)).games if g.id == gid)


def test_run_scores_by_hand(tmp_path: Path) -> None:
    beauty, ult = _entry(tmp_path, "beauty"), _entry(tmp_path, "ultimatum")
    rec = {"labels": ["m", "r", "r", "r", "r"], "actions": [25.0, 0, 0, 0, 0], "ne_actions": [0.0] * 5,
           "params": {"upper_bound": 50.0}, "first_valid": [True] * 5, "payoffs": [0, 20, 20, 20, 20]}
    assert B.run_score(beauty, rec, 0) == pytest.approx(50.0)  # 100 x (1 - 25 / 50)
    assert B.run_score(beauty, {**rec, "actions": [80.0, 0, 0, 0, 0]}, 0) == 0.0  # beyond the scale: 0, not < 0
    assert B.run_score(beauty, {**rec, "first_valid": [False] + [True] * 4}, 0) == 0.0  # a rule break
    spa = {"labels": ["m", "r"], "actions": [60.0, 40.0], "ne_actions": [50.0, 40.0],
           "params": {"private_value": [50.0, 40.0]}, "first_valid": [True, True]}
    g = type(beauty)(**{**beauty.__dict__, "game": "second_price_auction"})
    assert B.run_score(g, spa, 0) == pytest.approx(80.0)  # a per-player scale: 100 x (1 - 10 / 50)
    u = {"labels": ["m", "o"], "payoffs": [65.0, 35.0], "params": {"total": 100}, "first_valid": [True, True]}
    assert B.run_score(ult, u, 0) == pytest.approx(65.0)
    assert B.run_score(ult, {**u, "payoffs": [140.0, 0]}, 0) == 100.0  # clipped
    assert B.run_score(ult, {**u, "params": {"total": 0}}, 0) is None  # nothing to gain: not scored
    ne = type(ult)(**{**ult.__dict__, "best": parse_expression("ne_payoff")})
    assert B.run_score(ne, {**u, "ne_payoffs": [80.0, 20.0]}, 0) == pytest.approx(100 * 65 / 80)
    sign = type(ult)(**{**ult.__dict__, "score": "payoff_sign", "best": None})
    assert [B.run_score(sign, {**u, "payoffs": [x, 0]}, 0) for x in (3, 0, -1)] == [100.0, 50.0, 0.0]
    with pytest.raises(B.BenchError, match="no 'total'"):
        B.run_score(ult, {**u, "params": {}}, 0)


def test_combine_means_and_intervals_by_hand(tmp_path: Path) -> None:
    suite = load_suite(small_suite(tmp_path))
    games = [B.GameScore("guess", "gamabench", "guessing_game", "game", 60.0, None, None, 2, 2, 2, 0, 0, None,
                         [50.0, 70.0]),
             B.GameScore("beauty", "econarena", "beauty_contest", "equilibrium_action", 80.0, None, None, 1, 2, 1, 0,
                         0, None, [80.0]),
             B.GameScore("ultimatum", "negotiationarena", "ultimatum", "payoff_share", 90.0, None, None, 2, 2, 2, 0,
                         0, 1.0, [90.0, 90.0])]
    out = B.combine(suite, games)
    assert out["overall"]["score"] == pytest.approx((60 + 80 + 2 * 90) / 4)
    assert out["subscores"]["gamabench"]["score"] == 60.0
    # only Guess 2/3 varies: Student's t with 1 degree of freedom (12.706) x its standard error sqrt(200 / 2) = 10
    # covers 0-100 (clipped); overall: the same error x 1/4 (its weight share) = 2.5, still 1 degree of freedom
    assert (games[0].low, games[0].high) == (0.0, 100.0)
    assert out["overall"]["low"] == pytest.approx(80.0 - 12.7062047 * 2.5)  # (60 + 80 + 2 x 90) / 4 = 80
    assert out["overall"]["high"] == 100.0
    assert B.t_quantile(0.95, 4) == pytest.approx(2.7764451) and B.t_quantile(0.95, 9) == pytest.approx(2.2621572)
    assert games[1].low is None  # one session: no interval of its own
    five = B.GameScore("guess", "gamabench", "guessing_game", "game", 60.0, None, None, 5, 5, 5, 0, 0, None,
                       [40.0, 50.0, 60.0, 70.0, 80.0])
    B.combine(suite, [five, games[1], games[2]])
    # by hand: s^2 = 250, standard error sqrt(250 / 5) = 7.0711, t(4) = 2.7764: 60 -+ 19.632
    assert (five.low, five.high) == pytest.approx((60 - 19.6322, 60 + 19.6322), abs=1e-3)
    games[2].score = None  # a family without its game: no subscore, no overall
    out = B.combine(suite, games)
    assert out["subscores"]["negotiationarena"]["score"] is None and out["overall"]["score"] is None


# ---------------------------------------------------------------------------------------------- models

def test_model_specs(tmp_path: Path) -> None:
    spec = H.model_specs("openai:gpt-4o-mini")[0]
    assert (spec.label, spec.entry) == ("openai/gpt-4o-mini", {"agent": "openai", "model": "gpt-4o-mini"})
    spec = H.model_specs("llama@http://127.0.0.1:8000/v1")[0]
    assert spec.entry == {"agent": "openai", "model": "llama", "base_url": "http://127.0.0.1:8000/v1"}
    assert H.model_specs("hf")[0].entry == {"agent": "hf", **H.SHORTHAND["hf"]}
    assert H.model_specs("random", label="r")[0].label == "r"
    one = tmp_path / "one.toml"
    one.write_text('agent = "anthropic"\nmodel = "claude-x"\nlabel = "claude"\nmax_tokens = 300\n', encoding="utf-8")
    assert H.model_specs(str(one))[0].entry == {"agent": "anthropic", "model": "claude-x", "max_tokens": 300}
    many = tmp_path / "models.toml"
    many.write_text('["a"]\nagent = "hf"\n["b"]\nalias = "a"\nlabel = "B"\n', encoding="utf-8")
    assert [s.label for s in H.model_specs(str(many))] == ["a", "B"]
    for bad, message in (("http://127.0.0.1:9/v1", "MODEL@URL"), ("gpt-5", "not a model"),
                         ("level_k", "not a model"), (str(tmp_path / "none.toml"), "no such file")):
        with pytest.raises(ConfigError, match=message):
            H.model_specs(bad)


# ------------------------------------------------------------------------------------ the loopback model

def test_scripted_model_scores_as_computed_by_hand_and_again(server: Any, tmp_path: Path, capsys) -> None:
    server.reset()
    server.reply = scripted_reply
    suite = small_suite(tmp_path)
    prices = prices_file(tmp_path, per_mtok=2.0)
    assert main(bench_args(server, suite, tmp_path / "a", "--prices", str(prices))) == 0
    result = json.loads((tmp_path / "a" / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert {g["id"]: g["score"] for g in result["games"]} == pytest.approx(BY_HAND)
    assert result["overall"]["score"] == pytest.approx(OVERALL)
    assert result["complete"] and result["stopped"] is None
    assert result["overall"]["low"] == pytest.approx(OVERALL)  # every session the same: a point interval
    ult = next(g for g in result["games"] if g["id"] == "ultimatum")
    assert ult["deal_rate"] == 1.0 and ult["rule_break_pct"] == 0.0 and ult["sessions"] == 2
    # calls: Guess 2/3 3 seats x 2 rounds x 2 sessions, the beauty contest 1 x 2, the ultimatum 1 x 2 (accepted)
    assert result["calls"] == 12 + 2 + 2
    assert result["cost_usd"] == pytest.approx((result["tokens_in"] + result["tokens_out"]) * 2.0 / 1e6)
    assert result["score_per_usd"] == pytest.approx(OVERALL / result["cost_usd"])
    assert result["model"]["settings"]["base_url"].startswith("http://127.0.0.1")
    page = (tmp_path / "a" / "fake" / "scorecard.html").read_text(encoding="utf-8")
    assert "GPT-4o-0806" in page and "does not play the published protocol" in page  # quick: orientation only
    assert "random (baseline)" in page and "rational (baseline)" in page
    out = capsys.readouterr().out
    assert "82.5" in out and "written:" in out
    # the same model, suite and seed: the same scores and settings digest, from a fresh directory and cache
    assert main(bench_args(server, suite, tmp_path / "b")) == 0
    again = json.loads((tmp_path / "b" / "fake" / "bench.json").read_text(encoding="utf-8"))
    for key in ("overall", "subscores", "settings_digest"):
        assert again[key] == result[key]
    assert [g["per_session"] for g in again["games"]] == [g["per_session"] for g in result["games"]]
    # running it again continues (nothing to play) and does not change the result
    n = server.count()
    assert main(bench_args(server, suite, tmp_path / "b")) == 0 and server.count() == n
    assert json.loads((tmp_path / "b" / "fake" / "bench.json").read_text(encoding="utf-8"))["overall"] == \
        result["overall"]


def test_budget_stop_resume_and_leaderboard(server: Any, tmp_path: Path, capsys) -> None:
    server.reset()
    server.reply = scripted_reply
    suite = small_suite(tmp_path)
    prices = prices_file(tmp_path)  # a dollar a token
    whole = tmp_path / "whole" / "runs"  # its own cache: what the whole bench costs
    assert main(bench_args(server, suite, whole, "--prices", str(prices))) == 0
    cost = json.loads((whole / "fake" / "bench.json").read_text(encoding="utf-8"))["cost_usd"]
    cap = round(cost / 2)
    out = tmp_path / "runs"
    n0 = server.count()
    assert main(bench_args(server, suite, out, "--prices", str(prices), "--max-cost", str(cap))) == 3
    stopped = json.loads((out / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert not stopped["complete"] and stopped["stopped"] == "budget"
    assert 0 < stopped["spent_usd"] <= cap  # a cap is a cap: v1 passed it by the calls in flight
    assert served_usd(server, n0) == pytest.approx(stopped["spent_usd"])  # what the server served
    assert "--max-cost" in capsys.readouterr().err
    calls = server.count()
    # the same limit again: what is left cannot pay for the next call's worst case, so no call at all
    assert main(bench_args(server, suite, out, "--prices", str(prices), "--max-cost", str(cap))) == 3
    assert server.count() == calls
    # the leaderboard lists it, unranked
    assert main(["leaderboard", str(out)]) == 0
    table = capsys.readouterr().out
    assert "incomplete, not ranked" in table
    # a higher limit finishes it, with the scores of an unbudgeted run
    assert main(bench_args(server, suite, out, "--prices", str(prices), "--max-cost", "1000000")) == 0
    done = json.loads((out / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert done["complete"] and done["overall"]["score"] == pytest.approx(OVERALL)
    assert done["spent_usd"] >= stopped["spent_usd"]
    log = (out / "fake" / "bench-log.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(log) == 3
    # leaderboard outputs
    files = {k: tmp_path / f"lb.{k}" for k in ("csv", "json", "html")}
    outputs = [x for k, p in files.items() for x in (f"--{k}", str(p))]
    assert main(["leaderboard", str(out), "--baselines", *outputs]) == 0
    rows = list(csv.DictReader(io.StringIO(files["csv"].read_text(encoding="utf-8"))))
    # best overall first: the rational baseline plays every equilibrium here (100), then random, then the trivial
    # floor (accept and constant answer 50 and split 50/50 everywhere: by hand (50 + 50 + 2 x 0) / 4 = 25)
    assert [r["label"] for r in rows] == ["rational", "fake", "random", "accept", "constant"]
    assert float(rows[3]["overall"]) == float(rows[4]["overall"]) == 25.0
    assert rows[1]["rank"] == "2" and float(rows[1]["overall"]) == pytest.approx(OVERALL)
    assert json.loads(files["json"].read_text(encoding="utf-8"))[1]["label"] == "fake"
    assert "<table>" in files["html"].read_text(encoding="utf-8")


def served_usd(server: Any, since: int = 0) -> float:
    """The cost of what the loopback server served since request ``since``, at a dollar a token, counted by
    the server (its own usage numbers: the prompt's words and the scripted reply's), not by the bench."""
    from fakeservers import _words

    return float(sum(server._prompt_tokens(s.protocol, s.body) + _words(scripted_reply(s.protocol, s.body))
                     for s in server.seen[since:]))


@pytest.mark.parametrize("share", [0.1, 0.35, 0.7])
def test_a_cap_is_a_cap_measured_at_the_server(server: Any, tmp_path: Path, share: float) -> None:
    """Many calls in flight (16 at a time, each answered after 20 ms) and a cap at a share of the whole
    bench's cost: what the server served never passes the cap (v1 spent up to 6x it: only money already spent
    was checked, so a wave of calls in flight overshot)."""
    server.reset()
    server.reply = scripted_reply
    server.latency = 0.02
    suite = small_suite(tmp_path)
    prices = prices_file(tmp_path)
    assert main(bench_args(server, suite, tmp_path / "whole" / "runs", "--prices", str(prices))) == 0
    cost = json.loads((tmp_path / "whole" / "runs" / "fake" / "bench.json").read_text(encoding="utf-8"))["cost_usd"]
    assert served_usd(server) == pytest.approx(cost)  # the server's count and the bench's agree
    cap = share * cost
    n0 = server.count()
    assert main(bench_args(server, suite, tmp_path / "runs", "--prices", str(prices), "--max-cost", str(cap),
                           "--concurrency", "16")) == 3
    result = json.loads((tmp_path / "runs" / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert server.count() > n0 or share < 0.2  # some calls fit under all but the smallest cap
    assert served_usd(server, n0) <= cap
    assert result["spent_usd"] <= cap and result["stopped"] == "budget"


def test_max_cost_needs_a_price(server: Any, tmp_path: Path, capsys) -> None:
    assert main(bench_args(server, small_suite(tmp_path), tmp_path / "x", "--max-cost", "1")) == 2
    assert "--max-cost needs the price" in capsys.readouterr().err


def test_another_bench_in_the_directory_is_refused(tmp_path: Path, capsys) -> None:
    suite = small_suite(tmp_path)
    args = ["bench", "rational", "--suite", str(suite), "--out", str(tmp_path / "o"), "--quiet", "--no-baselines"]
    assert main(args) == 0
    assert main([*args, "--tier", "standard"]) == 2
    assert "holds another bench (tier: 'quick' != 'standard')" in capsys.readouterr().err


def test_leaderboard_refuses_mixed_tiers_and_suites(tmp_path: Path, capsys) -> None:
    suite = small_suite(tmp_path)
    base = ["bench", "rational", "--suite", str(suite), "--quiet", "--no-baselines"]
    assert main([*base, "--out", str(tmp_path / "q")]) == 0
    assert main([*base, "--out", str(tmp_path / "s"), "--tier", "standard"]) == 0
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "q"), str(tmp_path / "s")]) == 2
    msg = capsys.readouterr().err
    assert "not ranked together" in msg and "tier quick" in msg and "tier standard" in msg
    assert main(["leaderboard", str(tmp_path / "q"), str(tmp_path / "s"), "--tier", "standard"]) == 0
    other = small_suite(tmp_path, SMALL.replace('version = "t1"', 'version = "t2"'), "other.toml")
    assert main([*base[:3], str(other), *base[4:], "--out", str(tmp_path / "v")]) == 0
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "q"), str(tmp_path / "v")]) == 2
    assert "suite t1" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path / "nowhere")]) == 2


def test_dry_run_counts_calls_by_hand(server: Any, tmp_path: Path, capsys) -> None:
    prices = prices_file(tmp_path, per_mtok=1.0)
    assert main(bench_args(server, small_suite(tmp_path), tmp_path / "d", "--prices", str(prices), "--dry-run")) == 0
    out = capsys.readouterr().out
    # quick: Guess 2/3 3 x 2 rounds x 2 sessions = 12, the beauty contest 2, the ultimatum 2 moves x 2 = 4: 18
    # (no re-asks in this suite); standard 3 sessions: 27; full 4: 36
    for tier, calls in (("quick", 18), ("standard", 27), ("full", 36)):
        line = next(x for x in out.splitlines() if x.startswith(tier))
        assert f" {calls} ({calls})" in line and "$" in line
        # the expected cost beside the bound, below it
        (bin_, bout), (ein, eout) = [(int(a.replace(",", "")), int(b.replace(",", "")))
                                     for a, b in re.findall(r"([\d,]+) / ([\d,]+)", line)]
        assert 0 < ein < bin_ and 0 < eout <= bout
        assert line.count("$") == 3  # expected, at most, at most without re-asks
    assert not (tmp_path / "d").exists()  # nothing was run or written


# --------------------------------------------------------------------------------------- GAMA-Bench rows

def test_gamabench_subscore_equals_the_leaderboard_on_imported_results(tmp_path: Path) -> None:
    """Released results in the reference's format, imported, scored by the bench's rule: the same cells and
    Overall as the importer's leaderboard (the code that reproduces the 13 published rows, spec section 5)."""
    spec = importlib.util.spec_from_file_location("gamabench_corpus", REPO / "bench" / "gamabench_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    corpus.write_tree(tmp_path / "raw", models=2, runs=5, rounds=3)
    assert main(["import", "gamabench", str(tmp_path / "raw"), "--out", str(tmp_path / "imp")]) == 0
    suite = load_suite(DEFAULT)
    board = {(r["model"], r["game"]): r["score"] for r in
             gamabench.score_table(gamabench.collect(sorted((tmp_path / "imp").iterdir())).scores)}
    for model in corpus.MODELS[:2]:
        games = []
        for g in suite.games_of("gamabench"):
            folder = GAMES[g.game].info.reference[0][0].replace("/", "-")
            run_dir = next(d for d in (tmp_path / "imp").iterdir() if d.name == f"{folder}--{model}")
            games.append(B.score_game(g, run_dir, model, 5))
            assert games[-1].score == pytest.approx(board[(model, g.game)])
        subscore = sum(gs.score for gs in games) / len(games)
        assert subscore == pytest.approx(board[(model, "overall")])
    table, rows = B.published_rows(suite, "gamabench")
    assert len(rows) == 13 and rows[0]["model"] == "Gemini-1.5-Pro" and rows[0]["overall"] == 69.8


def test_shards_merge_into_the_unsharded_result(tmp_path: Path, capsys) -> None:
    """--shard K/N plays shard K of every game; merged with `econarena merge` they score as one run."""
    suite = small_suite(tmp_path)
    base = ["bench", "random", "--suite", str(suite), "--quiet", "--no-baselines", "--tier", "standard"]
    assert main([*base, "--out", str(tmp_path / "whole")]) == 0
    for k in (1, 2):
        assert main([*base, "--out", str(tmp_path / "parts"), "--shard", f"{k}/2"]) == 0
    assert "merge each game's shards" in capsys.readouterr().out
    for g in load_suite(suite).games:
        shards = [str(tmp_path / "parts" / f"random-shard-{k}-of-2" / g.id) for k in (1, 2)]
        assert main(["merge", *shards, "--out", str(tmp_path / "parts" / "random" / g.id), "--quiet"]) == 0
    assert main([*base, "--out", str(tmp_path / "parts")]) == 0
    whole, merged = (json.loads((tmp_path / d / "random" / "bench.json").read_text(encoding="utf-8"))
                     for d in ("whole", "parts"))
    assert merged["complete"] and merged["overall"] == whole["overall"]
    assert [g["per_session"] for g in merged["games"]] == [g["per_session"] for g in whole["games"]]


def test_reask_may_differ_per_tier(tmp_path: Path) -> None:
    text = SMALL.replace('score = "game"', 'score = "game"\nreask = { quick = 0, standard = 3, full = 3 }')
    suite = load_suite(small_suite(tmp_path, text))
    spec = H.model_specs("random")[0]
    assert [H.build(suite, t, spec)[0].experiment.reask for t in TIERS] == [0, 3, 3]
    with pytest.raises(SuiteError, match="reask: missing key 'full'"):
        load_suite(small_suite(tmp_path, SMALL.replace('score = "game"', 'score = "game"\nreask = { quick = 0 }')))


def test_validate_checks_a_suite_file(tmp_path: Path, capsys) -> None:
    assert main(["validate", str(DEFAULT)]) == 0
    assert "ok (bench suite v2: 19 games in 5 families" in capsys.readouterr().out
    bad = small_suite(tmp_path, SMALL.replace('total = 100, turns = 4', 'total = -5, turns = 4'))
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "[games ultimatum]" in err and "game.total" in err


def test_api_errors_leave_it_incomplete_and_a_rerun_finishes(server: Any, tmp_path: Path, capsys) -> None:
    from fakeservers import status

    server.reset()
    server.reply = scripted_reply
    server.script(*(status(400) for _ in range(3)))  # a client error is not retried: three runs stop
    model = tmp_path / "model.toml"
    model.write_text(f'agent = "openai"\nmodel = "fake-model"\nbase_url = "{server.url}/v1"\n'
                     f'label = "fake"\nmax_retries = 0\n', encoding="utf-8")
    args = ["bench", str(model), "--suite", str(small_suite(tmp_path)), "--out", str(tmp_path / "o"), "--quiet",
            "--no-baselines", "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 3
    result = json.loads((tmp_path / "o" / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert not result["complete"] and result["stopped"] == "errors"
    assert "API errors" in capsys.readouterr().err
    assert main(args) == 0
    assert json.loads((tmp_path / "o" / "fake" / "bench.json").read_text(encoding="utf-8"))["overall"]["score"] == \
        pytest.approx(OVERALL)


def test_a_cap_holds_with_ray_measured_at_the_server(server: Any, tmp_path: Path, ray_cluster: Any) -> None:
    """With --ray the calls run in session workers, away from the budget: each session's worst case is held
    before it is handed out (v1 checked only the money already spent, so every session of a wave started).
    Measured at the server: a cap below a session's worst case serves nothing; a cap above the whole bench's
    worst case plays it all; neither passes the cap."""
    server.reset()
    server.reply = scripted_reply
    suite = small_suite(tmp_path)
    prices = prices_file(tmp_path)
    assert main(bench_args(server, suite, tmp_path / "whole" / "runs", "--prices", str(prices))) == 0
    cost = json.loads((tmp_path / "whole" / "runs" / "fake" / "bench.json").read_text(encoding="utf-8"))["cost_usd"]
    n0 = server.count()
    assert main(bench_args(server, suite, tmp_path / "low", "--prices", str(prices), "--max-cost", str(cost / 2),
                           "--ray", "--ray-workers", "1")) == 3
    assert served_usd(server, n0) <= cost / 2 and server.count() == n0
    result = json.loads((tmp_path / "low" / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert result["stopped"] == "budget"
    n1 = server.count()
    assert main(bench_args(server, suite, tmp_path / "high", "--prices", str(prices), "--max-cost", "1e7",
                           "--ray", "--ray-workers", "1")) == 0
    assert served_usd(server, n1) == pytest.approx(cost)


def test_replies_from_the_cache_are_said_and_the_model_that_played_is_named(server: Any, tmp_path: Path,
                                                                            capsys) -> None:
    server.reset()
    server.reply = scripted_reply
    suite = small_suite(tmp_path)
    assert main(bench_args(server, suite, tmp_path / "a")) == 0
    first = json.loads((tmp_path / "a" / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert first["cached"] == 0 and first["model"]["answered_by"] == ["fake-model"]
    assert first["model"]["played_by"] == {"model": "fake-model"}
    gen = first["comparability"]["generation"]
    assert set(gen) == {"guess", "beauty", "ultimatum"} and gen["guess"]["temperature"] == 1.0
    assert gen["beauty"]["max_tokens"] == 64 and "base_url" not in gen["beauty"]  # transport keys left out
    capsys.readouterr()
    assert main(bench_args(server, suite, tmp_path / "b")) == 0  # a fresh directory, the same cache
    again = json.loads((tmp_path / "b" / "fake" / "bench.json").read_text(encoding="utf-8"))
    assert again["cached"] == again["decisions"] > 0
    assert f"from the response cache: {again['cached']:,} of {again['decisions']:,} replies" in capsys.readouterr().out
    assert "came from the response cache" in (tmp_path / "b" / "fake" / "scorecard.html").read_text(encoding="utf-8")
    assert "came from the response cache" not in (tmp_path / "a" / "fake" / "scorecard.html").read_text(
        encoding="utf-8")


def test_the_leaderboard_names_the_model_that_played(tmp_path: Path, capsys) -> None:
    """`bench hf` names no model (its label is the provider's, "hf"): its row goes by the bundled model that
    played, which bench.json records; a label the user chose, or one naming a model, stays as it is."""
    suite = small_suite(tmp_path)
    assert main(["bench", "rational", "--suite", str(suite), "--quiet", "--no-baselines",
                 "--out", str(tmp_path / "q")]) == 0
    path = tmp_path / "q" / "rational" / "bench.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    played = {"model": "SmolLM2-135M-Instruct", "weights": "w.gguf", "weights_sha256": "ab" * 32}
    data["model"].update({"label": "hf", "agent": "hf", "model": None, "played_by": played})
    path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "q"), "--json", str(tmp_path / "lb.json")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("1 "))
    assert row.split()[:2] == ["1", "SmolLM2-135M-Instruct"], out
    assert json.loads((tmp_path / "lb.json").read_text(encoding="utf-8"))[0]["label"] == "SmolLM2-135M-Instruct"
    hf = {"agent": "hf", "model": None, "played_by": played}
    assert B._row_label({**hf, "label": "hf [effort=high]", "reasoning": {"reasoning_effort": "high"}}) == \
        "SmolLM2-135M-Instruct [effort=high]"
    assert B._row_label({**hf, "label": "mine"}) == "mine"
    assert B._row_label({"label": "openai/gpt-4o-mini", "agent": "openai", "model": "gpt-4o-mini",
                         "played_by": {"model": "gpt-4o-mini"}}) == "openai/gpt-4o-mini"
    assert B._row_label({"label": "hf", "agent": "hf", "model": None, "played_by": None}) == "hf"
