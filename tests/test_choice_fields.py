"""Choice fields work as declared: any case matches, the declared spelling is kept, case twins are refused."""
from __future__ import annotations

import pytest

from econarena.games.fields import ActionField, ActionSpec, judge_reply
from econarena.games.schema import json_schema

EFFORT = ActionSpec((ActionField("effort", "choice", "how hard to work", choices=("L", "M", "H")),))
PD = ActionSpec((ActionField("move", "choice", "your move", choices=("Cooperate", "Defect")),))


@pytest.mark.parametrize("reply, expected", [
    ('{"effort": "M"}', "M"), ('{"effort": "m"}', "M"), ('{"effort": " h "}', "H"), ('{"effort": "L"}', "L"),
])
def test_an_upper_case_choice_is_matched_and_kept_as_declared(reply: str, expected: str) -> None:
    j = judge_reply(EFFORT, reply)
    assert j.valid, j.detail
    assert j.action == {"effort": expected}


@pytest.mark.parametrize("reply", ['{"move": "Defect"}', '{"move": "defect"}', '{"move": "DEFECT"}'])
def test_a_mixed_case_choice_is_matched_whatever_the_reply_case(reply: str) -> None:
    assert judge_reply(PD, reply).action == {"move": "Defect"}


def test_a_reply_outside_the_choices_names_them_as_declared() -> None:
    j = judge_reply(EFFORT, '{"effort": "X"}')
    assert not j.valid
    assert j.detail == '\'effort\' must be one of "L" or "M" or "H", got "X"'


@pytest.mark.parametrize("choices", [("Cooperate", "cooperate"), ("a", "B", "A"), ("x", " X")])
def test_choices_differing_only_by_case_are_refused_at_declaration(choices: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="differ only by case"):
        ActionField("move", "choice", "m", choices=choices)


def test_a_choice_that_is_not_a_string_is_refused_at_declaration() -> None:
    with pytest.raises(ValueError, match="must be strings, got 1"):
        ActionField("move", "choice", "m", choices=("a", 1))  # type: ignore[arg-type]


def test_the_reply_schema_lists_the_declared_spelling() -> None:
    schema = json_schema(PD, "strict")
    assert schema["properties"]["move"]["enum"] == ["Cooperate", "Defect"]
