"""Reasoning through each provider's real SDK against the loopback server: the effort or budget as it goes
on the wire, and the reasoning text, hidden reasoning and reasoning tokens as they come back, with the
answer alone judged. Bodies are written in each protocol's own reasoning format (``raw`` actions)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fakeservers import FakeLLMServer, raw  # noqa: E402

from econarena.agents.base import DecisionRequest, Message  # noqa: E402
from econarena.agents.llm import (  # noqa: E402
    PROVIDERS,
    LLMSettings,
    RuntimeOptions,
    build_llm_agent,
    close_all,
    settings_problems,
)

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]

SUFFIX = {"openai": "/v1", "anthropic": "", "google": "", "zhipuai": "/api/paas/v4"}
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "ZHIPUAI_API_KEY")
MESSAGES = [Message("system", "You are a bidder."), Message("user", "Your value is 10. Bid?")]
DRAFT = 'maybe {"bid": 90}? no, lower'


@pytest.fixture(autouse=True)
def _fresh(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    server.reset()
    for env in KEYS:
        monkeypatch.setenv(env, "sk-test-key")
    yield
    asyncio.run(close_all())


def settings(name: str, server: FakeLLMServer, **kw: Any) -> LLMSettings:
    return LLMSettings(**{"model": "fake-1", "base_url": server.url + SUFFIX[name], "timeout_s": 5.0,
                          "max_retries": 0, "max_tokens": 4000, **kw})


def gen(name: str, s: LLMSettings, times: int = 1) -> Any:
    """``times`` replies from one provider (the last returned)."""
    async def go() -> Any:
        p = PROVIDERS[name].load()(s)
        try:
            for _ in range(times):
                g = await p.generate(MESSAGES, s)
            return g
        finally:
            await p.aclose()
    return asyncio.run(go())


def chat(message: dict[str, Any], usage: dict[str, Any] | None = None, finish: str = "stop") -> Any:
    return raw(json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "fake-1",
                           "choices": [{"index": 0, "message": {"role": "assistant", **message},
                                        "finish_reason": finish}],
                           "usage": {"prompt_tokens": 9, "completion_tokens": 40, "total_tokens": 49,
                                     **(usage or {})}}))


# -- OpenAI and compatible servers ---------------------------------------------------------------

@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path (conftest.py)
def test_openai_effort_out_reasoning_content_in(server: FakeLLMServer) -> None:
    server.script(chat({"content": '{"bid": 8}', "reasoning_content": DRAFT},
                       {"completion_tokens_details": {"reasoning_tokens": 31}}))
    g = gen("openai", settings("openai", server, reasoning_effort="high", temperature=0.3))
    body = server.seen[-1].body
    assert body["reasoning_effort"] == "high" and body["temperature"] == 0.3  # a compatible server: sent
    assert (g.text, g.reasoning, g.reasoning_tokens, g.reasoning_hidden, g.unfinished) == (
        '{"bid": 8}', DRAFT, 31, False, False)
    assert g.tokens_out == 40  # completion_tokens already include the reasoning: billed as output


@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path (conftest.py)
def test_openai_inline_think_and_cut_inside(server: FakeLLMServer) -> None:
    server.script(chat({"content": f"<think>{DRAFT}</think>"}),
                  chat({"content": f"<think>{DRAFT}"}, finish="length"),
                  chat({"content": None, "reasoning": DRAFT}, finish="length"))
    s = settings("openai", server)
    empty, cut, parsed = gen("openai", s), gen("openai", s), gen("openai", s)
    assert (empty.text, empty.reasoning, empty.unfinished, empty.truncated) == ("", DRAFT, False, False)
    assert (cut.text, cut.reasoning, cut.unfinished, cut.truncated) == ("", DRAFT, True, True)
    assert (parsed.text, parsed.reasoning, parsed.unfinished) == ("", DRAFT, True)
    assert "reasoning_effort" not in server.seen[-1].body  # unset: nothing new on the wire


@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path (conftest.py)
def test_openai_end_marker(server: FakeLLMServer) -> None:
    end = "<|channel|>final<|message|>"
    server.script(chat({"content": f"<|channel|>analysis<|message|>{DRAFT}<|end|>{end}" + '{"bid": 6}'}),
                  chat({"content": f"<|channel|>analysis<|message|>{DRAFT}"}))
    s = settings("openai", server, reasoning_end=end)
    done, open_ = gen("openai", s), gen("openai", s)
    assert done.text == '{"bid": 6}' and DRAFT in done.reasoning and not done.unfinished
    assert open_.text == "" and open_.unfinished


@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path (conftest.py)
def test_openai_official_reasoning_model_drops_sampling(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    """api.openai.com's reasoning models take no temperature: not sent, one warning; hidden reasoning counted."""
    from econarena.agents.providers import openai as op

    monkeypatch.setattr(op, "_official", lambda url: True)
    server.script(chat({"content": '{"bid": 5}'}, {"completion_tokens_details": {"reasoning_tokens": 64}}),
                  chat({"content": '{"bid": 5}'}, {"completion_tokens_details": {"reasoning_tokens": 64}}))
    s = settings("openai", server, reasoning_effort="low", temperature=0.7, top_p=0.9)
    with caplog.at_level("WARNING"):
        g = gen("openai", s, times=2)  # one provider, two calls: one warning
    body = server.seen[0].body
    assert body["reasoning_effort"] == "low" and "temperature" not in body and "top_p" not in body
    assert body["max_completion_tokens"] == 4000
    assert (g.text, g.reasoning, g.reasoning_hidden, g.reasoning_tokens) == ('{"bid": 5}', "", True, 64)
    assert sum("take no temperature" in r.message for r in caplog.records) == 1


# -- Anthropic -----------------------------------------------------------------------------------

def message(blocks: list[dict[str, Any]], stop: str = "end_turn", thinking_tokens: int | None = None) -> Any:
    usage: dict[str, Any] = {"input_tokens": 9, "output_tokens": 50}
    if thinking_tokens is not None:
        usage["output_tokens_details"] = {"thinking_tokens": thinking_tokens}
    return raw(json.dumps({"id": "m", "type": "message", "role": "assistant", "model": "fake-1",
                           "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}))


def test_anthropic_budget_out_thinking_blocks_in(server: FakeLLMServer) -> None:
    server.script(message([{"type": "thinking", "thinking": DRAFT, "signature": "sig"},
                           {"type": "redacted_thinking", "data": "ENCRYPTED"},
                           {"type": "text", "text": '{"bid": 9}'}], thinking_tokens=42))
    g = gen("anthropic", settings("anthropic", server, reasoning_tokens=2048))
    body = server.seen[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 4000
    assert "temperature" not in body
    assert (g.text, g.reasoning, g.reasoning_hidden, g.reasoning_tokens) == ('{"bid": 9}', DRAFT, True, 42)
    assert g.tokens_out == 50  # output_tokens include thinking, as billed


def test_anthropic_effort_and_off_and_cut(server: FakeLLMServer) -> None:
    server.script(message([{"type": "redacted_thinking", "data": "X"}, {"type": "text", "text": "7"}]),
                  message([{"type": "text", "text": "7"}]),
                  message([{"type": "thinking", "thinking": DRAFT, "signature": "s"}], stop="max_tokens"))
    hidden = gen("anthropic", settings("anthropic", server, reasoning_effort="medium"))
    assert server.seen[-1].body["output_config"] == {"effort": "medium"} and "thinking" not in server.seen[-1].body
    assert (hidden.text, hidden.reasoning, hidden.reasoning_hidden) == ("7", "", True)
    gen("anthropic", settings("anthropic", server, reasoning_effort="none"))
    assert server.seen[-1].body["thinking"] == {"type": "disabled"}
    cut = gen("anthropic", settings("anthropic", server, reasoning_tokens=1024))
    assert (cut.text, cut.reasoning, cut.unfinished, cut.truncated) == ("", DRAFT, True, True)


# -- Gemini --------------------------------------------------------------------------------------

def gemini(parts: list[dict[str, Any]], finish: str = "STOP", thoughts: int | None = None) -> Any:
    usage: dict[str, Any] = {"promptTokenCount": 9, "candidatesTokenCount": 5, "totalTokenCount": 14}
    if thoughts is not None:
        usage["thoughtsTokenCount"] = thoughts
    return raw(json.dumps({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish,
                                           "index": 0}], "usageMetadata": usage, "modelVersion": "fake-1"}))


def thinking_config(body: dict[str, Any]) -> dict[str, Any]:
    """The generationConfig's thinking config as sent; the SDK writes its inner keys in snake_case (the API
    reads both spellings), so camelCase is folded to snake_case to compare across SDK versions."""
    import re

    cfg = body["generationConfig"].get("thinkingConfig") or body["generationConfig"]["thinking_config"]
    return {re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): v for k, v in cfg.items()}


def test_google_budget_out_thought_parts_in(server: FakeLLMServer) -> None:
    server.script(gemini([{"text": DRAFT, "thought": True}, {"text": '{"bid": 4}'}], thoughts=120))
    g = gen("google", settings("google", server, reasoning_tokens=1000))
    assert thinking_config(server.seen[-1].body) == {"thinking_budget": 1000, "include_thoughts": True}
    assert (g.text, g.reasoning, g.reasoning_tokens, g.reasoning_hidden) == ('{"bid": 4}', DRAFT, 120, False)
    assert g.tokens_out == 125  # Gemini counts thoughts apart and bills them as output: summed


def test_google_levels_off_hidden_and_cut(server: FakeLLMServer) -> None:
    server.script(gemini([{"text": "3"}], thoughts=77),
                  gemini([{"text": "3"}]),
                  gemini([{"text": DRAFT, "thought": True}], finish="MAX_TOKENS", thoughts=999))
    hidden = gen("google", settings("google", server, reasoning_effort="low"))
    assert thinking_config(server.seen[-1].body) == {"thinking_level": "LOW", "include_thoughts": True}
    assert (hidden.text, hidden.reasoning, hidden.reasoning_hidden, hidden.reasoning_tokens) == ("3", "", True, 77)
    gen("google", settings("google", server, reasoning_effort="none"))
    assert thinking_config(server.seen[-1].body) == {"thinking_budget": 0}
    cut = gen("google", settings("google", server, reasoning_tokens=500))
    assert (cut.text, cut.reasoning, cut.unfinished, cut.truncated) == ("", DRAFT, True, True)


# -- ZhipuAI -------------------------------------------------------------------------------------

def test_zhipuai_switch_out_reasoning_content_in(server: FakeLLMServer) -> None:
    server.script(chat({"content": '{"bid": 3}', "reasoning_content": DRAFT},
                       {"completion_tokens_details": {"reasoning_tokens": 12}}),
                  chat({"content": "1"}))
    g = gen("zhipuai", settings("zhipuai", server, reasoning_effort="high"))
    body = server.seen[-1].body
    assert body["thinking"] == {"type": "enabled"} and body["reasoning_effort"] == "high"
    assert (g.text, g.reasoning, g.reasoning_tokens) == ('{"bid": 3}', DRAFT, 12)
    gen("zhipuai", settings("zhipuai", server, reasoning_effort="none"))
    assert server.seen[-1].body["thinking"] == {"type": "disabled"}
    assert "reasoning_effort" not in server.seen[-1].body


# -- through the agent: cache and masking -----------------------------------------------------------

@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path (conftest.py)
def test_agent_keeps_reasoning_through_the_cache(server: FakeLLMServer, tmp_path: Path) -> None:
    server.script(chat({"content": '{"bid": 8}', "reasoning_content": "key sk-test-key here"},
                       {"completion_tokens_details": {"reasoning_tokens": 5}}))
    s = settings("openai", server, reasoning_effort="low")
    options = RuntimeOptions(cache=True, cache_path=str(tmp_path / "cache.sqlite"))
    req = DecisionRequest(tuple(MESSAGES), 0, 0, lambda *a, **k: {}, coords={"session": 0, "run": 0})

    async def twice() -> tuple[Any, Any]:
        agent = build_llm_agent("openai", "P", s, options)
        try:
            return await agent.decide(req), await agent.decide(req)
        finally:
            await agent.provider.aclose()

    first, again = asyncio.run(twice())
    assert server.count() == 1 and again.cached
    for r in (first, again):
        assert (r.text, r.reasoning, r.reasoning_tokens) == ('{"bid": 8}', "key *** here", 5)
    # another effort is another question: not answered from the cache
    assert build_llm_agent("openai", "P", s.merged({"reasoning_effort": "high"}), options)._cache_key(
        list(MESSAGES), req) != build_llm_agent("openai", "P", s, options)._cache_key(list(MESSAGES), req)


# -- what validate refuses --------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "kw", "needle"), [
    ("openai", {"reasoning_tokens": 1000}, "reasoning_tokens is not available for agent 'openai'"),
    ("zhipuai", {"reasoning_tokens": 1000}, "reasoning_tokens is not available for agent 'zhipuai'"),
    ("anthropic", {"reasoning_effort": "minimal"}, "reasoning_effort = \"minimal\" is not available for agent "
                                                   "'anthropic'"),
    ("anthropic", {"reasoning_tokens": 512}, "reasoning_tokens = 512 is below the 1024"),
    ("anthropic", {"reasoning_tokens": 4000}, "must be below max_tokens = 4000"),
    ("google", {"reasoning_tokens": 1000, "reasoning_effort": "low"}, "not both"),
    ("hf", {"reasoning_tokens": 100, "reasoning_effort": "none"}, "switched off"),
])
def test_validate_refuses(name: str, kw: dict[str, Any], needle: str) -> None:
    s = LLMSettings(model="m", max_tokens=4000, **kw)
    problems = settings_problems(name, s, "players[0] (P)")
    assert any(needle in p and p.startswith("players[0] (P): ") for p in problems), problems


def test_validate_headroom_and_accepts() -> None:
    (p,) = settings_problems("openai", LLMSettings(model="m", reasoning_effort="high"), "players[0] (P)")
    assert "default max_tokens = 512" in p
    assert settings_problems("openai", LLMSettings(model="m", reasoning_effort="none"), "p") == []
    for name, kw in [("openai", {"reasoning_effort": "minimal"}), ("anthropic", {"reasoning_tokens": 1024}),
                     ("google", {"reasoning_tokens": 1}), ("zhipuai", {"reasoning_effort": "low"})]:
        assert settings_problems(name, LLMSettings(model="m", max_tokens=2048, **kw), "p") == [], name


# -- the issue's own cases, end to end through the Host ----------------------------------------------

@pytest.mark.usefixtures("openai_path")  # the lean path and the SDK path (conftest.py)
def test_host_never_takes_a_draft_from_inside_the_reasoning(server: FakeLLMServer, tmp_path: Path) -> None:
    """The reply `<think>... {"answer": 90}</think>` with nothing after it was judged a valid 90; cut while
    still thinking it was a valid 90 too. Now: an unreadable empty answer, and a truncated reply."""
    from conftest import experiment_dict, read_jsonl, run_experiment

    server.script(chat({"content": '<think>I could say {"answer": 90}</think>'}),
                  chat({"content": '<think>I could say {"answer": 90}'}, finish="length"),
                  chat({"content": '<think>a</think>{"answer": 4}<think>or {"answer": 90}'}),
                  chat({"content": '<THINK type="x">{"answer": 90}</THINK>{"answer": 12}'}),
                  chat({"content": '{"answer": 40, "reason": "I <think> it is 40"}'}),
                  chat({"content": '<think-tank> says {"answer": 30}'}),
                  chat({"content": '<think>I could say {"answer": 90}'}),  # unclosed, and the server said stop
                  chat({"content": '{"answer": 5} <think>or {"answer": 90}'}, finish="length"))
    doc = experiment_dict("beauty_contest", [
        {"agent": "openai", "model": "fake-1", "base_url": server.url + "/v1", "label": "T", "max_tokens": 64,
         "max_retries": 0, "count": 8}], {"upper_bound": 100, "prize": 100}, sessions=1)
    run_experiment(doc, tmp_path / "run", concurrency=1)
    records = sorted(read_jsonl(tmp_path / "run" / "decisions.jsonl"), key=lambda d: d["player"])
    empty, cut, second, odd, quoted, tank, unclosed, late = records
    assert (empty["valid"], empty["violation"], empty["response"], empty["action"]) == (False, "parse_error", "", None)
    assert empty["reasoning"] == 'I could say {"answer": 90}'
    assert (cut["violation"], cut["truncated"], cut["action"]) == ("truncated", True, None)
    # the server said stop: the answer before a second, unclosed block is the move, not a token limit
    assert (second["valid"], second["action"], second.get("truncated")) == (True, 4, None)
    assert second["reasoning"] == 'a\nor {"answer": 90}'
    assert (odd["valid"], odd["action"]) == (True, 12)
    assert (quoted["valid"], quoted["action"], "reasoning" in quoted) == (True, 40, False)  # words in a string
    assert (tank["valid"], tank["action"]) == (True, 30)
    # unclosed with nothing before it, and the server said stop: said as what it is, no token limit
    assert (unclosed["valid"], unclosed["violation"], unclosed.get("truncated")) == (False, "parse_error", None)
    assert "a reasoning block that was never closed, although the model stopped on its own" in unclosed["detail"]
    assert "token limit)" in unclosed["detail"] and "max_tokens" not in unclosed["detail"]
    # at the token limit, an unclosed block is still cut, whatever stood before it
    assert (late["violation"], late["truncated"], late["action"]) == ("truncated", True, None)
    assert all(r["action"] != 90 for r in records)
