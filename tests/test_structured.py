"""Structured output end to end: the reply schema from the games, what each real SDK puts on the wire for
it (against the fake servers on 127.0.0.1), clear errors where a provider cannot honour a mode, and the
Host logging the mode per decision. Also: refused connections and servers' own 400 messages."""

from __future__ import annotations

import asyncio
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fakeservers import FakeLLMServer, ok, status  # noqa: E402

from econarena.agents import calls  # noqa: E402
from econarena.agents.base import Message  # noqa: E402
from econarena.agents.calls import CallError  # noqa: E402
from econarena.agents.llm import PROVIDERS, LLMSettings, close_all, preflight, settings_problems  # noqa: E402
from econarena.games import GAMES  # noqa: E402
from econarena.games.base import ActionField, ActionSpec  # noqa: E402
from econarena.games.schema import json_schema, number_limit, reasoning_chars  # noqa: E402

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]

SUFFIX = {"openai": "/v1", "anthropic": "", "google": "", "zhipuai": "/api/paas/v4"}
BID = ActionSpec((ActionField("bid", "number", "the bid", 0.0, 80.0),))
MESSAGES = [Message("system", "You are a bidder."), Message("user", "Your value is 10. Bid?")]


# -- the schema itself (pure) ------------------------------------------------------------------------

def test_format_schema_has_keys_types_and_a_length_bound_but_not_the_rule_bounds() -> None:
    s = json_schema(BID, "format")
    assert s == {"type": "object", "required": ["bid"], "additionalProperties": False,
                 "properties": {"bid": {"type": "number", "description": "the bid",
                                        "minimum": -999999.0, "maximum": 999999.0}}}
    strict = json_schema(BID, "strict")
    assert strict["properties"]["bid"]["minimum"] == 0.0 and strict["properties"]["bid"]["maximum"] == 80.0


def test_length_bound_grows_with_the_rule_bound() -> None:
    assert number_limit(ActionField("x", "number", "", 0.0, 100.0)) == 999999  # 6 digits at least
    assert number_limit(ActionField("x", "number", "", 0.0, 123456.0)) == 99999999  # 6 digits + 2
    assert number_limit(ActionField("x", "number", "")) == 999999


def test_choices_become_an_enum_and_reasoning_comes_first() -> None:
    spec = ActionSpec((ActionField("decision", "choice", "stay or drop", choices=("stay", "drop")),))
    s = json_schema(spec, "strict", reasoning=True, reasoning_chars=100)
    assert list(s["properties"]) == ["reasoning", "decision"] == s["required"]
    assert s["properties"]["reasoning"] == {"type": "string", "maxLength": 100,
                                            "description": "your step-by-step thinking, before the answer"}
    assert s["properties"]["decision"]["enum"] == ["stay", "drop"]
    assert reasoning_chars(128) == 220 and reasoning_chars(20) == 40


def test_unknown_kind_and_mode_are_clear_errors() -> None:
    odd = ActionSpec((ActionField("split", "vote", "x"),))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no JSON Schema for kind 'vote'"):
        json_schema(odd, "format")
    with pytest.raises(ValueError, match="expected one of format, strict"):
        json_schema(BID, "loose")  # type: ignore[arg-type]


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_game_schema_accepts_what_the_game_judges_valid(game: str) -> None:
    g = GAMES[game]
    setup = g.setup(g.Params(), g.info.n_players or 3, np.random.default_rng(1))
    state = g.initial_state(setup)
    spec = g.action_spec(state, 0)
    schema = json_schema(spec, "strict")
    action = g.strategy(state, 0, "rational")
    assert set(action) == set(schema["properties"]) == set(schema["required"])
    assert g.judge(state, 0, json.dumps(action, separators=(",", ":"))).valid


# -- the wire, per provider --------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _fresh(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    server.reset()
    monkeypatch.setattr(calls, "BACKOFF_BASE_S", 0.02)
    for env in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "ZHIPUAI_API_KEY"):
        monkeypatch.setenv(env, "sk-test-0123456789abcdef")
    yield
    asyncio.run(close_all())


def _gen(name: str, server: FakeLLMServer, schema: dict[str, Any] | None, **kw: Any) -> Any:
    s = LLMSettings(model="fake-1", base_url=kw.pop("base_url", server.url + SUFFIX[name]), timeout_s=5,
                    max_retries=kw.pop("max_retries", 0), **kw)

    async def go() -> Any:
        p = PROVIDERS[name].load()(s)
        try:
            return await p.generate(MESSAGES, s, schema)
        finally:
            await p.aclose()

    return asyncio.run(go())


@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path
def test_openai_sends_a_strict_json_schema(server: FakeLLMServer) -> None:
    schema = json_schema(BID, "strict", reasoning=True, reasoning_chars=99)
    server.script(ok('{"reasoning":"x","bid":10}'))
    assert _gen("openai", server, schema, structured="strict").text == '{"reasoning":"x","bid":10}'
    rf = server.seen[0].body["response_format"]
    assert rf == {"type": "json_schema", "json_schema": {"name": "reply", "strict": True, "schema": schema}}


@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path
def test_openai_json_object_setting_for_llama_cpp_style_servers(server: FakeLLMServer) -> None:
    schema = json_schema(BID, "format")
    _gen("openai", server, schema, structured="format", response_format="json_object")
    assert server.seen[0].body["response_format"] == {"type": "json_object", "schema": schema}


def test_openai_official_endpoint_drops_max_length() -> None:
    from econarena.agents.providers.openai import response_format

    schema = json_schema(BID, "format", reasoning=True)
    rf = response_format(schema, LLMSettings(model="m"))
    assert "maxLength" not in json.dumps(rf) and "maxLength" in json.dumps(schema)  # the original is untouched
    assert rf["json_schema"]["schema"]["properties"]["bid"]["maximum"] == 999999.0


@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path
def test_no_schema_no_response_format(server: FakeLLMServer) -> None:
    _gen("openai", server, None)
    assert "response_format" not in server.seen[0].body


def test_google_sends_the_json_schema_and_mime_type(server: FakeLLMServer) -> None:
    schema = json_schema(BID, "strict")
    _gen("google", server, schema, structured="strict")
    config = server.seen[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == schema


def test_anthropic_sends_output_config_without_bounds(server: FakeLLMServer) -> None:
    schema = json_schema(BID, "format", reasoning=True)
    _gen("anthropic", server, schema, structured="format")
    fmt = server.seen[0].body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["properties"]["bid"] == {"type": "number", "description": "the bid"}
    assert fmt["schema"]["properties"]["reasoning"]["type"] == "string"
    assert "maxLength" not in json.dumps(fmt) and fmt["schema"]["required"] == ["reasoning", "bid"]


def test_zhipuai_uses_json_mode(server: FakeLLMServer) -> None:
    _gen("zhipuai", server, json_schema(BID, "format"), structured="format")
    assert server.seen[0].body["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("name", ["anthropic", "zhipuai"])
def test_strict_is_a_clear_error_where_bounds_cannot_be_enforced(name: str) -> None:
    s = LLMSettings(model="m", structured="strict")
    (problem,) = settings_problems(name, s, "players[0] (X)")
    assert f"structured = \"strict\" is not available for agent '{name}'" in problem
    assert 'use structured = "off" or "format"' in problem
    assert problem in preflight(name, s, "players[0] (X)")
    assert settings_problems(name, s.merged({"structured": "format"}), "p") == []


def test_structured_is_checked_by_the_config_schema() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        LLMSettings(structured="loose")  # type: ignore[arg-type]


# -- errors that say what happened --------------------------------------------------------------------

@pytest.mark.usefixtures("openai_path")
@pytest.mark.parametrize("name", sorted(SUFFIX))
def test_refused_connection_is_not_called_a_timeout(name: str) -> None:
    with pytest.raises(CallError) as err:
        _gen(name, FakeLLMServer(), None, base_url="http://127.0.0.1:9" + SUFFIX[name])
    assert "connection refused by http://127.0.0.1:9" in str(err.value)
    assert "timed out" not in str(err.value)


@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path
def test_a_400_carries_the_servers_own_detail(server: FakeLLMServer) -> None:
    detail = "Model fake-1 is not available; the server has SmolLM2-135M-Instruct"
    server.script(status(400, body={"detail": detail}))
    with pytest.raises(CallError) as err:
        _gen("openai", server, None)
    assert "HTTP 400" in str(err.value) and detail in str(err.value)
    assert err.value.attempts == 1


# -- the Host: schema per decision, mode logged -------------------------------------------------------

@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path
def test_host_sends_the_games_schema_and_logs_the_mode(server: FakeLLMServer, tmp_path: Path) -> None:
    from econarena.agents.llm import RuntimeOptions
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    server.reply = lambda protocol, body: '{"reasoning":"two thirds","answer":20}'
    players = [{"agent": "openai", "model": "fake-1", "base_url": server.url + "/v1", "label": "S",
                "structured": "strict", "max_tokens": 100},
               {"agent": "openai", "model": "fake-1", "base_url": server.url + "/v1", "label": "F"},
               {"agent": "level_k", "k": 1}]
    exp = parse_experiment({"experiment": {"name": "s", "game": "beauty_contest", "sessions": 1, "prompt": "cot"},
                            "game": {"upper_bound": 50}, "players": players}, "s.toml")
    result = asyncio.run(Host(exp, tmp_path / "s", HostOptions(quiet=True, runtime=RuntimeOptions(cache=False)))
                         .run())
    assert result.status == "complete"
    rf = [s.body.get("response_format") for s in server.seen]
    sent = [x for x in rf if x is not None]
    assert len(rf) == 2 and len(sent) == 1
    schema = sent[0]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reasoning", "answer"]
    assert schema["properties"]["answer"]["maximum"] == 50.0
    assert schema["properties"]["reasoning"]["maxLength"] == reasoning_chars(100)
    lines = [json.loads(x) for x in (tmp_path / "s" / "decisions.jsonl").read_text().splitlines()]
    modes = {d["label"]: d["structured"] for d in lines}
    assert modes == {"S": "strict", "F": "off", "level-1" if "level-1" in modes else "level_k": None}
    s_line = next(d for d in lines if d["label"] == "S")
    assert s_line["valid"] and s_line["extras"] == {"reasoning": "two thirds"}
    # the rule-breaking table (paper Table 2) lists the structured player apart
    from econarena.analysis.figures import rule_break_table
    from econarena.analysis.load import load

    frames = load(tmp_path / "s")
    assert set(frames.decisions["structured"].dropna()) == {"strict", "off"}
    table = rule_break_table(frames, n_boot=50)
    assert {"S [strict]", "F"} <= set(table["label"]) and "S" not in set(table["label"])


def _conforms(value: object, schema: dict) -> bool:
    """A small JSON Schema check for the keywords json_schema() emits."""
    if "anyOf" in schema:
        return any(_conforms(value, s) for s in schema["anyOf"])
    if "enum" in schema:
        return value in schema["enum"]
    kind = schema.get("type")
    if kind == "object":
        props = schema["properties"]
        return (isinstance(value, dict) and set(value) == set(schema["required"]) <= set(props)
                and all(_conforms(v, props[k]) for k, v in value.items()))
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if kind == "integer" and not float(value).is_integer():
            return False
        return schema.get("minimum", -math.inf) <= value <= schema.get("maximum", math.inf)
    if kind == "string":
        return isinstance(value, str) and len(value) <= schema.get("maxLength", math.inf)
    if kind == "null":
        return value is None
    raise AssertionError(f"unexpected schema {schema}")




@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_state_of_every_game_has_a_schema_its_legal_replies_satisfy(game: str) -> None:
    """Random play through each game: at every decision, in both modes, the legal replies of the random
    and rational baselines satisfy the schema, and xgrammar compiles it (hf constrained decoding)."""
    xgr = pytest.importorskip("xgrammar")
    from econarena.agents.providers.hf import _bounded_strings

    vocab = [f"t{i}" for i in range(64)] + list('{}[]:,"0123456789-.abcdefghijklmnopqrstuvwxyz_ ')
    tokenizer = xgr.TokenizerInfo(vocab)
    compiler = xgr.GrammarCompiler(tokenizer, max_threads=1)
    g = GAMES[game]
    seen = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        setup = g.setup(g.Params(), g.info.n_players or 4, rng)
        state = g.initial_state(setup)
        for _ in range(60):
            movers = g.to_move(state)
            if not movers:
                break
            actions = {}
            for seat in movers:
                spec = g.action_spec(state, seat)
                for mode in ("format", "strict"):
                    schema = json_schema(spec, mode)
                    compiler.compile_json_schema(json.dumps(_bounded_strings(schema)), any_whitespace=False)
                    for kind in ("random", "rational"):
                        if kind in g.policies():
                            try:
                                reply = g.strategy(state, seat, kind, rng=rng)
                            except ValueError:
                                continue
                            judged = g.judge(state, seat, json.dumps(reply))
                            if judged.valid:
                                assert _conforms(reply, schema), (game, mode, reply, schema)
                                seen += 1
                actions[seat] = g.judge(state, seat, json.dumps(g.strategy(state, seat, "random", rng=rng))).action
            state = g.apply(state, actions, rng)
    assert seen > 0


def test_long_text_bounds_compile_and_hold_exactly() -> None:
    """xgrammar refuses repetitions above 128: long text bounds are written in chunks, and still admit
    exactly the lengths 0..n (checked with a grammar matcher around the chunk edges)."""
    xgr = pytest.importorskip("xgrammar")
    from econarena.agents.providers.hf import _bounded_strings

    vocab = [f"t{i}" for i in range(64)] + list('{}[]:,"0123456789-.abcdefghijklmnopqrstuvwxyz_ ')
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo(vocab), max_threads=1)
    for n in (100, 128, 129, 256, 300, 2000):
        schema = {"type": "object", "properties": {"m": {"type": "string", "maxLength": n}}, "required": ["m"],
                  "additionalProperties": False}
        grammar = compiler.compile_json_schema(json.dumps(_bounded_strings(schema)), any_whitespace=False,
                                               separators=(",", ":"))
        for length in {0, 1, 127, 128, 129, 255, 256, 257, n - 1, n, n + 1}:
            if length < 0:
                continue
            accepted = xgr.GrammarMatcher(grammar).accept_string('{"m":"' + "a" * length + '"}')
            assert accepted == (length <= n), (n, length)
