"""The one text rule (games/text.py): lone surrogates are refused and recorded as visible escapes."""

import json

from econarena.games.text import storable, text_problem


def test_plain_and_non_ascii_text_passes():
    assert text_problem("bid 10") is None
    assert text_problem("prix: 10 € — ok 😀") is None
    assert storable("prix: 10 €") == "prix: 10 €"


def test_a_lone_surrogate_from_valid_json_is_named_and_escaped():
    s = json.loads('{"a": "x\\ud800y"}')["a"]
    assert text_problem(s) == "holds a lone surrogate U+D800 at character 1, which is not text"
    kept = storable(s)
    assert kept == "x\\ud800y"
    kept.encode("utf-8")  # recordable now


def test_a_joined_pair_in_json_is_one_character_and_passes():
    s = json.loads('"\\ud83d\\ude00"')
    assert s == "😀" and text_problem(s) is None
