"""Hostile use of steering: configurations and run histories a careless or adversarial user
produces. Each test failed on the code before its fix (or is marked xfail with the open design question)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from econarena.games import GAMES
from econarena.games.steering.cfr import SpaceError, action_space
from econarena.hosts.config import ConfigError, parse_experiment

sys.path.insert(0, str(Path(__file__).parent))
from fakeservers import FakeLLMServer, status  # noqa: E402

ZERO = {"apple": 0, "banana": 0, "orange": 0}


def fruit(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"experiment": {"name": "h", "game": "fruit_trade", "sessions": 1, "seed": 1},
                           "players": [{"agent": "rational"}, {"agent": "random"}]}
    doc.update(extra)
    return doc


# ---- [steer] actions ----

def test_an_any_action_with_an_instruction_is_refused_not_silently_emptied() -> None:
    """``{label = "any", instruction = "be rude"}`` used to become the empty baseline, the text dropped
    without a word: the user believed one action said "be rude"."""
    game = GAMES["fruit_trade"]
    with pytest.raises(SpaceError, match="'any' is the uninformed baseline"):
        action_space(game, ["calm", {"label": "Any", "instruction": "be very rude"}], game.Params())
    # the plain forms still name the baseline: a bare "any" string, or a table with no instruction text
    assert action_space(game, ["calm", "ANY"], game.Params())[-1] == ("any", "")
    assert action_space(game, ["calm", {"label": "any", "instruction": ""}], game.Params())[-1] == ("any", "")


@pytest.mark.parametrize("label", ["a\x7fb", "line\u2028break", "next\u0085line", "para\u2029x"])
def test_labels_with_non_ascii_control_or_line_breaking_characters_are_refused(label: str) -> None:
    """DEL, NEL and the Unicode line/paragraph separators passed the ``ord(c) < 32`` check and broke the
    one-line tables and CSV rows that show labels."""
    game = GAMES["bargaining"]
    with pytest.raises(SpaceError, match="without control characters"):
        action_space(game, [label, "other"], game.Params())
    assert action_space(game, ["ｃａｌｍ 😀", "Straße"], game.Params())[0][0] == "ｃａｌｍ 😀"  # plain unicode is fine


def test_millions_of_logged_iterations_are_refused() -> None:
    """iterations = 1000000 with every = 1 logged a million strategies in ONE steering.jsonl line per game
    (hundreds of MB; 2000 iterations of the offers space already write 1.4 MB)."""
    with pytest.raises(ConfigError, match="steer.every: .* logs 1000000 points per game"):
        parse_experiment(fruit(steer={"iterations": 1_000_000, "every": 1, "report_at": 1}), "h.toml")
    parse_experiment(fruit(steer={"iterations": 1_000_000, "every": 1000, "report_at": 1000}), "h.toml")


def test_a_steering_subgame_too_large_to_solve_is_refused() -> None:
    actions = [f"a{i}" for i in range(255)]
    doc = fruit(steer={"actions": actions, "samples": 64, "iterations": 1_000_000, "every": 1000,
                       "report_at": 1000})
    with pytest.raises(ConfigError, match=r"steer.iterations x actions x samples = 1000000 x 256 x 64"):
        parse_experiment(doc, "h.toml")


# ---- [judge] ----

def test_a_judge_that_no_setting_asks_for_is_refused() -> None:
    """[judge] with payoff = "structured" was accepted and never called (the dry run even counted its calls):
    someone who uncommented [judge] but left payoff alone believed the paper's judge valued the trades."""
    doc = fruit(game={"payoff": "structured"}, judge={"agent": "scripted", "responses": ["3"]},
                steer={"samples": 1})
    with pytest.raises(ConfigError, match=r"\[judge\] is never asked"):
        parse_experiment(doc, "h.toml")


def test_a_grid_cell_with_judged_payoffs_needs_a_judge() -> None:
    """[grid] game.payoff = ["structured", "llm"] without [judge] validated, then every llm cell ended
    'incomplete ... stopped on API errors', and --resume could never finish it."""
    doc = fruit(grid={"game": {"payoff": ["structured", "llm"]}})
    with pytest.raises(ConfigError, match=r"add a \[judge\].*grid cell 1"):
        parse_experiment(doc, "h.toml")
    doc["judge"] = {"agent": "scripted", "responses": ["3"]}
    parse_experiment(doc, "h.toml")  # one cell uses the judge: it is no stray table


# ---- resume ----

def judged_trader(protocol: str, body: Any) -> str:
    """Player 1 offers an apple for a banana, player 2 accepts; the judge answers 4."""
    text = "".join(m["content"] for m in body["messages"])
    if "referee a fruit trade" in text:
        return "4"
    if "You are Player 2" in text:
        return json.dumps({"message": "Deal.", "decision": "accept", "give": ZERO, "receive": ZERO})
    return json.dumps({"message": "An apple for a banana?", "give": {**ZERO, "apple": 1},
                       "receive": {**ZERO, "banana": 1}})


def test_resume_after_a_judge_api_error_leaves_judge_log_equal_to_an_uninterrupted_run(tmp_path: Path) -> None:
    """A judge's 500 stops a steered game; --resume replays it. judge.jsonl kept the failed attempt's calls
    (and the calls of branches never written) next to the replayed ones: 2 games x 8 branches x 2 seats =
    32 calls became 40+. Resume now moves the calls of runs it does not keep to judge.discarded.jsonl."""
    from econarena.agents.llm import RuntimeOptions
    from econarena.hosts.host import HostOptions
    from econarena.hosts.steer import SteerHost

    srv = FakeLLMServer(reply=judged_trader).start()
    try:
        calls = {"n": 0}

        def flaky(protocol: str, body: Any) -> str:
            text = "".join(m["content"] for m in body["messages"])
            if "referee a fruit trade" in text:
                calls["n"] += 1
                if calls["n"] == 9:  # seat 0 of a branch is judged: seat 1's call, the next one, gets a 500
                    srv.script(status(500))
            return judged_trader(protocol, body)

        def doc() -> dict[str, Any]:
            return {"experiment": {"name": "j", "game": "fruit_trade", "environment": "self",
                                   "players_per_game": 2, "sessions": 2, "seed": 4},
                    "game": {"payoff": "llm", "endowment_range": [2, 2]},
                    "players": [{"agent": "openai", "label": "fake", "model": "fake", "base_url": f"{srv.url}/v1"}],
                    "judge": {"agent": "openai", "model": "judge", "base_url": f"{srv.url}/v1", "max_retries": 0},
                    "steer": {"samples": 2, "iterations": 10, "every": 5, "report_at": 10}}

        def run(out: Path, resume: bool = False) -> Any:
            options = HostOptions(concurrency=1, quiet=True, resume=resume,
                                  runtime=RuntimeOptions(cache=True, cache_path=str(out.parent / "cache")))
            return asyncio.run(SteerHost(parse_experiment(doc(), "j.toml"), out, options).run())

        assert run(tmp_path / "a" / "run").status == "complete"
        srv.reply = flaky
        assert run(tmp_path / "b" / "run").status == "incomplete"
        srv.reply = judged_trader
        assert run(tmp_path / "b" / "run", resume=True).status == "complete"

        def judged(d: Path) -> list[str]:
            return sorted(json.dumps({k: v for k, v in json.loads(line).items() if k not in ("latency_s", "cached")},
                                     sort_keys=True) for line in (d / "judge.jsonl").read_text().splitlines())

        a, b = judged(tmp_path / "a" / "run"), judged(tmp_path / "b" / "run")
        assert len(a) == 2 * 8 * 2 and b == a
        for name in ("runs.jsonl", "steering.jsonl"):
            assert sorted((tmp_path / "a" / "run" / name).read_text().splitlines()) == \
                sorted((tmp_path / "b" / "run" / name).read_text().splitlines())
        assert (tmp_path / "b" / "run" / "judge.discarded.jsonl").exists()  # nothing is lost
    finally:
        srv.stop()


def test_a_judge_number_too_long_for_a_float_is_clipped_not_zeroed() -> None:
    from econarena.games.steering.fruit_trade import judge_number

    assert judge_number("9" * 400) == 20 and judge_number("-" + "9" * 400) == -20
    assert judge_number("1e309") == 1  # OpenSpiel's first number: the "1" before the exponent


def test_steering_without_openspiel_is_a_clear_error_before_anything_runs(tmp_path: Path, monkeypatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Found by trying a plain `pip install econarena` (no [steer] extra): `econarena steer` printed a
    traceback of OpenSpielMissing (exit 1) after creating the run directory."""
    from econarena.cli import main

    toml = tmp_path / "steer.toml"
    toml.write_text('[experiment]\nname = "s"\ngame = "fruit_trade"\n\n[steer]\nactions = "tones"\niterations = 5\n'
                    'every = 5\nreport_at = 5\n\n[[players]]\nagent = "random"\nlabel = "a"\n\n[[players]]\n'
                    'agent = "random"\nlabel = "b"\n')
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # import pyspiel -> ImportError, as when not installed
    for argv in (["steer", str(toml), "--out", str(tmp_path / "o")], ["validate", "--check-keys", str(toml)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "[steer]: steering solves its subgame with OpenSpiel, which is not installed: pip install " \
               "'econarena[steer]'" in err and "Traceback" not in err
    assert not (tmp_path / "o" / "manifest.json").exists()
