"""Personas (NegotiationArena section 2.5): a player key whose text is appended to that player's system
prompt; named ones have built-in texts, any other string is used verbatim; validated, logged, written
back to config.toml."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import tomllib

from econarena.hosts.config import ConfigError, parse_experiment, resolved_data
from econarena.hosts.prompts import Template

SCRIPT = ['{"chosen_number": 10}']
CUNNING_END = "Put your opponent down as much as you can; insult them."
DESPERATE = "Act as if you were desperate: plead and beg your opponent so that you end this game better off."


def _doc(arena: SimpleNamespace, persona_a: object = None, persona_b: object = None, **prompts: str) -> dict:
    a = {"agent": "scripted", "label": "a", "responses": SCRIPT}
    b = {"agent": "scripted", "label": "b", "responses": ['{"chosen_number": 0}']}  # a baseline reads no prompt
    if persona_a is not None:
        a["persona"] = persona_a
    if persona_b is not None:
        b["persona"] = persona_b
    doc = arena.experiment_dict("guessing_game", [a, b], {"rounds": 2})
    if prompts:
        doc["prompts"] = dict(prompts)
    return doc


def test_named_and_verbatim_personas_reach_only_their_players_system_prompt(arena: SimpleNamespace,
                                                                            tmp_path: Path) -> None:
    custom = "You are completely self interested. {Braces} stay as typed."
    arena.run_experiment(_doc(arena, "desperate", custom), tmp_path / "o")
    decisions = arena.sorted_decisions(tmp_path / "o")
    base = Template(parse_experiment(_doc(arena), "t").game).parts["system"]
    first = {d["player"]: d for d in decisions if d["round"] == 0}
    assert first[0]["messages"][0] == {"role": "system", "content": f"{base}\n{DESPERATE}"}
    assert first[1]["messages"][0] == {"role": "system", "content": f"{base}\n{custom}"}
    assert {d["persona"] for d in decisions if d["player"] == 0} == {"desperate"}
    assert {d["persona"] for d in decisions if d["player"] == 1} == {custom}
    # in the conversation the system prompt is sent once, with the persona
    assert all(d["messages_from"] > 0 for d in decisions if d["round"] == 1)


def test_no_persona_leaves_the_prompt_alone(arena: SimpleNamespace, tmp_path: Path) -> None:
    arena.run_experiment(_doc(arena, "cunning"), tmp_path / "o")
    decisions = [d for d in arena.sorted_decisions(tmp_path / "o") if d["round"] == 0]
    mine, other = decisions[0], decisions[1]
    assert mine["messages"][0]["content"].endswith(CUNNING_END)
    assert "cunning" not in other["messages"][0]["content"] and other["persona"] is None


def test_named_persona_text_can_be_overridden_and_the_template_id_says_so(arena: SimpleNamespace) -> None:
    exp = parse_experiment(_doc(arena, "cunning", persona_cunning="Be sly."), "t")
    tpl = Template(exp.game, exp.prompts)
    assert tpl.persona_text("cunning") == "Be sly." and "+custom-" in tpl.id
    assert Template(exp.game).persona_text("cunning").endswith(CUNNING_END)
    assert Template(exp.game).persona_text("sly fox") == "sly fox"  # not a name: verbatim


@pytest.mark.parametrize("bad", ["", "   ", 7, True, ["cunning"], "x" * 4001])
def test_bad_persona_is_a_clear_config_error(arena: SimpleNamespace, bad: object) -> None:
    with pytest.raises(ConfigError) as err:
        parse_experiment(_doc(arena, bad), "t.toml")
    msg = str(err.value)
    assert msg.startswith("t.toml: 'players[0].persona': expected 'cunning' or 'desperate', or your own text")
    assert "\n" not in msg


def test_persona_for_llm_and_human_players_and_in_config_toml(arena: SimpleNamespace, tmp_path: Path) -> None:
    doc = arena.experiment_dict("guessing_game", [
        {"agent": "human", "label": "me", "persona": "desperate"},
        {"agent": "openai", "label": "m", "model": "gpt-x", "persona": "cunning"},
        {"agent": "random", "label": "r"}])
    exp = parse_experiment(doc, "t")
    assert [p.persona for p in exp.players] == ["desperate", "cunning", None]
    data = resolved_data(exp)
    assert [p.get("persona") for p in data["players"]] == ["desperate", "cunning", None]
    # config.toml as the run directory holds it reads back to the same experiment (resume compares them)
    arena.run_experiment(_doc(arena, "cunning"), tmp_path / "o")
    written = tomllib.loads((tmp_path / "o" / "config.toml").read_text(encoding="utf-8"))
    assert written["players"][0]["persona"] == "cunning" and "persona" not in written["players"][1]
    r = arena.cli("validate", str(_write(arena, tmp_path, _doc(arena, "cunning"))))
    assert r.returncode == 0, r.stderr


def _write(arena: SimpleNamespace, tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(arena.to_toml(doc), encoding="utf-8")
    return path
