"""TOML experiment files: every problem is caught before a game starts, with a message naming the key."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from econarena.hosts.config import ConfigError, load_experiment, parse_experiment, resolved_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

GOOD = """\
[experiment]
name = "bc"
game = "beauty_contest"
sessions = 2
seed = 3

[game]
upper_bound = { uniform = [10, 100] }

[[players]]
agent = "scripted"
label = "S"
responses = ['{"answer": 1}']

[[players]]
agent = "random"
count = 2
"""


def write(tmp_path: Path, text: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path, text))
    return str(info.value)


def test_good_file_loads(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, GOOD))
    assert exp.name == "bc"
    assert exp.experiment.sessions == 2 and exp.experiment.runs == 1
    assert exp.experiment.environment == "melee" and exp.experiment.history == "none"
    assert exp.params.upper_bound == {"uniform": [10, 100]}
    assert exp.params.ratio == pytest.approx(2 / 3) and exp.params.prize == 100
    assert [(p.agent, p.label, p.count) for p in exp.players] == [("scripted", "S", 1), ("random", "random", 2)]


def test_name_defaults_to_the_file_stem_and_seed_override(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace('name = "bc"\n', ""), "my-study.toml")
    exp = load_experiment(path, seed=99)
    assert exp.name == "my-study"
    assert exp.experiment.seed == 99


def test_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[experiment]\nname = "bc\ngame = "beauty_contest"\n')
    assert str(tmp_path / "exp.toml") in msg
    assert re.search(r"line 2, column \d+", msg), msg


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_experiment(tmp_path / "nope.toml")


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda t: t + "\n[extras]\nx = 1\n", "unknown table 'extras'"),
    (lambda t: t.replace("sessions = 2", "sesions = 2"), "unknown key 'experiment.sesions'"),
    (lambda t: t.replace("[game]\n", "[game]\nupper = 5\n"), "unknown key 'game.upper'"),
    (lambda t: t.replace("count = 2", "count = 2\nresponses = ['x']"),
     "unknown key 'players[1].responses' for agent 'random'"),
    (lambda t: t.replace("label = \"S\"", "label = \"S\"\nk = 2"), "unknown key 'players[0].k' for agent 'scripted'"),
])
def test_unknown_keys_name_the_key_path(tmp_path: Path, edit, expected: str) -> None:
    assert expected in error_of(tmp_path, edit(GOOD))


def test_unknown_game_lists_valid_names(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace('"beauty_contest"', '"chess"'))
    assert "experiment.game: unknown game 'chess'" in msg
    assert "known: " in msg and all(g in msg for g in ("beauty_contest", "english_auction", "second_price_auction"))


def test_unknown_agent_lists_valid_names(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace('agent = "random"', 'agent = "gpt-5"'))
    assert "players[1].agent: unknown agent 'gpt-5'" in msg
    for name in ("level_k", "random", "rational", "scripted"):
        assert name in msg


@pytest.mark.parametrize(("spec", "expected"), [
    ("{ poisson = [1, 2] }", "unknown distribution 'poisson'"),
    ("{ normal = [50] }", "normal takes [a, b]"),
    ("{ uniform = [100, 10] }", "uniform needs low <= high"),
    ("{ normal = [50, -1] }", "sd must be >= 0"),
    ("{ uniform = [0, 10] }", "uniform low must be > 0"),
    ("{ normal = [1, 2], uniform = [1, 2] }", "expected a number"),
    ("-5", "must be > 0"),
    ("[10, 20, 30]", "expected a number"),  # the upper bound is shared, not per player
    ('"high"', "expected a number"),
])
def test_bad_distribution(tmp_path: Path, spec: str, expected: str) -> None:
    msg = error_of(tmp_path, GOOD.replace("{ uniform = [10, 100] }", spec))
    assert "'game.upper_bound'" in msg and expected in msg


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda t: t.replace("sessions = 2", 'sessions = "five"'), "'experiment.sessions'"),
    (lambda t: t.replace("sessions = 2", "sessions = 2.5"), "'experiment.sessions'"),
    (lambda t: t.replace("sessions = 2", "sessions = 0"), "'experiment.sessions': Input should be greater"),
    (lambda t: t.replace("sessions = 2", "sessions = true"), "'experiment.sessions'"),
    (lambda t: t.replace("seed = 3", 'seed = "3"'), "'experiment.seed'"),
    (lambda t: t.replace("seed = 3", 'history = "sometimes"'), "'experiment.history': Input should be 'none'"),
    (lambda t: t.replace("seed = 3", 'environment = "arena"'), "'experiment.environment'"),
    (lambda t: t.replace("seed = 3", 'prompt = "fancy"'), "'experiment.prompt'"),
    (lambda t: t.replace("seed = 3", "max_history = 0"), "'experiment.max_history'"),
    (lambda t: t.replace("[game]\n", '[game]\nratio = "0.5"\n'), "'game.ratio'"),
    (lambda t: t.replace("[game]\n", "[game]\nratio = 1.5\n"), "'game.ratio': Input should be less than 1"),
    (lambda t: t.replace("[game]\n", "[game]\nprize = 0\n"), "'game.prize'"),
    (lambda t: t.replace("count = 2", "count = 0"), "'players[1].count': expected an integer from 1"),
    (lambda t: t.replace("count = 2", 'count = "2"'), "'players[1].count'"),
    (lambda t: t.replace("responses = ['{\"answer\": 1}']", "responses = []"), "'players[0].responses'"),
    (lambda t: t.replace("responses = ['{\"answer\": 1}']", "responses = [1]"), "'players[0].responses'"),
    (lambda t: t.replace('label = "S"', "label = 5"), "'players[0].label'"),
    (lambda t: t.replace('name = "bc"', 'name = "a b/c"'), "experiment.name 'a b/c'"),
])
def test_wrong_types_name_the_key(tmp_path: Path, edit, expected: str) -> None:
    assert expected in error_of(tmp_path, edit(GOOD))


def test_level_k_k_must_be_a_non_negative_int(tmp_path: Path) -> None:
    text = GOOD.replace('agent = "random"', 'agent = "level_k"\nk = -1')
    assert "'players[1].k': expected an integer from 0" in error_of(tmp_path, text)


@pytest.mark.parametrize(("text", "expected"), [
    ("experiment = 5\n", "[experiment]"),
    ('experiment = "x"\n', "[experiment]"),
    ("llm = 5\n" + GOOD, "[llm] must be a table"),
    ("game = 5\n" + GOOD.replace("[game]\nupper_bound = { uniform = [10, 100] }\n", ""), "[game] must be a table"),
    (GOOD.split("[[players]]")[0], "at least one [[players]] entry"),
    ("players = [1]\n" + GOOD.split("[[players]]")[0], "players[0] must be a table"),
    ("[game]\nprize = 1\n", "missing table [experiment]"),
])
def test_tables_of_the_wrong_shape(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in error_of(tmp_path, text)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = GOOD.replace("[game]\n", "[game]\nupper = 5\n").replace('agent = "random"', 'agent = "nobody"')
    msg = error_of(tmp_path, text + "\n[extras]\n")
    assert "unknown key 'game.upper'" in msg and "unknown agent 'nobody'" in msg and "'extras'" in msg
    assert len(msg.splitlines()) == 3


def test_a_misspelt_experiment_table_or_game_keeps_the_other_problems(tmp_path: Path) -> None:
    """`[experimnt]` said only "missing table [experiment]", not which table was misspelt."""
    msg = error_of(tmp_path, '[experimnt]\nname = "x"\n[[players]]\nagent = "random"\n')
    assert "unknown table 'experimnt'" in msg and "missing table [experiment]" in msg
    msg = error_of(tmp_path, '[experiment]\ngame = "pd"\n[gmae]\nx = 1\n')
    assert "unknown table 'gmae'" in msg and "unknown game 'pd'" in msg


def test_a_models_file_given_as_an_experiment_says_so(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '[model]\nagent = "hf"\n')
    assert "is a models file" in msg and len(msg.splitlines()) == 1


def test_per_player_list_of_wrong_length_fails_before_any_game(tmp_path: Path) -> None:
    text = """
[experiment]
name = "sp"
game = "second_price_auction"
[game]
private_value = [10, 20]
[[players]]
agent = "random"
count = 3
"""
    msg = error_of(tmp_path, text)
    assert "[game]" in msg and "private_value: list has 2 entries but the game has 3 players" in msg


def test_impossible_draws_fail_before_any_game(tmp_path: Path) -> None:
    text = """
[experiment]
name = "sp"
game = "second_price_auction"
[game]
private_value = { uniform = [200, 300] }
assets = 100
[[players]]
agent = "random"
count = 2
"""
    assert "never fell in (0, 100]" in error_of(tmp_path, text)


@pytest.mark.parametrize(("extra", "expected"), [
    ("", "a melee needs at least 2 players"),
    ('[[players]]\nagent = "random"\n', "duplicate label(s) 'random'"),
])
def test_table_composition(tmp_path: Path, extra: str, expected: str) -> None:
    text = GOOD.split("[[players]]")[0] + '[[players]]\nagent = "random"\n' + extra
    assert expected in error_of(tmp_path, text)


def test_environment_rules(tmp_path: Path) -> None:
    rational_only = GOOD.split("[[players]]")[0].replace("seed = 3", 'environment = "rational"')
    rational_only += '[[players]]\nagent = "rational"\n'
    assert "needs at least one player that is not 'rational'" in error_of(tmp_path, rational_only)
    self_count = GOOD.replace("seed = 3", 'environment = "self"')
    assert "players[1].count: only a melee seats several copies" in error_of(tmp_path, self_count)
    clash = GOOD.split("[[players]]")[0].replace("seed = 3", 'environment = "rational"')
    clash += '[[players]]\nagent = "random"\nlabel = "rational"\n'
    assert "rational" in error_of(tmp_path, clash)  # the label would mix with the rational opponents'


def test_prompt_overrides_are_checked(tmp_path: Path) -> None:
    assert "unknown key 'prompts.rulez'" in error_of(tmp_path, GOOD + '\n[prompts]\nrulez = "x"\n')
    msg = error_of(tmp_path, GOOD + '\n[prompts]\nrules = "Pick up to {upper}."\n')
    assert "prompts.rules: unknown placeholder {upper}" in msg and "upper_bound" in msg
    assert "prompts.system: expected a string" in error_of(tmp_path, GOOD + "\n[prompts]\nsystem = 3\n")
    ok = load_experiment(write(tmp_path, GOOD + '\n[prompts]\nsystem = "Be brief, player {player_id}."\n'))
    assert ok.prompts == {"system": "Be brief, player {player_id}."}


def test_lineups_per_environment(tmp_path: Path) -> None:
    melee = load_experiment(write(tmp_path, GOOD))
    assert [(lu.name, lu.seats) for lu in melee.lineups()] == [("melee", (0, 1, 1))]
    rational = load_experiment(write(tmp_path, GOOD.replace("count = 2", "").replace(
        "seed = 3", 'environment = "rational"\nplayers_per_game = 4')))
    labels = [p.label for p in rational.players]
    assert labels == ["S", "random", "rational"]  # the hard-coded opponents were added
    assert [(lu.name, lu.seats, lu.environment) for lu in rational.lineups()] == [
        ("S", (0, 2, 2, 2), "rational"), ("random", (1, 2, 2, 2), "rational")]
    selfish = load_experiment(write(tmp_path, GOOD.replace("count = 2", "").replace(
        "seed = 3", 'environment = "self"\nplayers_per_game = 3')))
    assert [(lu.name, lu.seats) for lu in selfish.lineups()] == [("S", (0, 0, 0)), ("random", (1, 1, 1))]


def test_resolved_config_reloads_to_the_same_experiment(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, GOOD + '\n[prompts]\nsystem = "Hi \\"there\\"\\n"\n'))
    text = resolved_toml(exp)
    again = parse_experiment(tomllib.loads(text), "config.toml")
    assert resolved_toml(again) == text
    assert again.experiment == exp.experiment and again.params == exp.params
    assert "seed = 3" in text and "ratio = 0.6666666666666666" in text


def test_non_finite_game_numbers_are_rejected(tmp_path: Path) -> None:
    # TOML has inf and nan; they used to pass (upper_bound = nan validated; assets = inf crashed every run)
    msg = error_of(tmp_path, GOOD.replace("{ uniform = [10, 100] }", "nan"))
    assert "'game.upper_bound': numbers must be finite" in msg
    spa = GOOD.replace('"beauty_contest"', '"second_price_auction"').replace(
        "upper_bound = { uniform = [10, 100] }", "assets = [100, inf, 100]\nentrance_fee = inf").replace(
        '{"answer": 1}', '{"bid": 1}')
    msg = error_of(tmp_path, spa)
    assert "'game.assets': numbers must be finite" in msg and "'game.entrance_fee'" in msg
    assert "finite" in error_of(tmp_path, GOOD.replace("[10, 100]", "[10, inf]"))


def test_prompt_placeholders_must_be_plain_names(tmp_path: Path) -> None:
    # "{upper_bound.real}" used to raise AttributeError (a traceback); attribute/index access is refused
    for bad in ("{upper_bound.real}", "{player_id.__class__}", "{upper_bound[0]}"):
        msg = error_of(tmp_path, GOOD + f'\n[prompts]\nrules = "Pick up to {bad}."\n')
        assert f"prompts.rules: placeholder {bad}: use a plain name such as {{" in msg
    assert "format specs and conversions are not allowed" in error_of(
        tmp_path, GOOD + '\n[prompts]\nrules = "Pick {upper_bound:d}."\n')


@pytest.mark.parametrize("value", ["1e308", "10.5", "-0.1"])
def test_a_temperature_no_sampler_takes_is_refused(tmp_path: Path, value: str) -> None:
    """`temperature = 1e308` was accepted and sent to the provider on every call."""
    text = GOOD + f'\n[[players]]\nagent = "openai"\nmodel = "gpt-4o"\ntemperature = {value}\n'
    assert "'players[2].temperature': Input should be " in error_of(tmp_path, text)


def test_the_temperatures_that_are_sampled_are_accepted(tmp_path: Path) -> None:
    for value in ("0", "2", "10"):
        text = GOOD + f'\n[[players]]\nagent = "openai"\nmodel = "m"\ntemperature = {value}\n'
        exp = load_experiment(write(tmp_path, text))
        assert exp.players[-1].llm is not None and exp.players[-1].llm.temperature == float(value)
