"""End-to-end tests of the four API providers: the real SDKs talk HTTP to a fake server on 127.0.0.1.

Each provider is driven through the same scripted faults: normal replies, malformed bodies, 429 with
Retry-After, 5xx, slow replies and timeouts, dropped connections, auth failures whose bodies echo the
key. Nothing here needs the internet or a real key.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fakeservers import FakeLLMServer, drop, ok, raw, status  # noqa: E402
from timing import budget  # noqa: E402

from econarena.agents import calls  # noqa: E402
from econarena.agents.base import DecisionRequest, Message  # noqa: E402
from econarena.agents.calls import CallError  # noqa: E402
from econarena.agents.llm import (  # noqa: E402
    PROVIDERS,
    LLMAgent,
    LLMSettings,
    Provider,
    RuntimeOptions,
    build_llm_agent,
    close_all,
)

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.usefixtures("openai_path"),  # openai: the lean path and the SDK path, each test (conftest.py)
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]

API = ["openai", "anthropic", "google", "zhipuai"]
SUFFIX = {"openai": "/v1", "anthropic": "", "google": "", "zhipuai": "/api/paas/v4"}
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "google": "GEMINI_API_KEY",
           "zhipuai": "ZHIPUAI_API_KEY"}
SECRET = "sk-test-SECRET-0123456789abcdef"
MESSAGES = [Message("system", "You are a bidder."), Message("user", "Your value is 10. Bid?")]


@pytest.fixture(autouse=True)
def _fresh(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    server.reset()
    monkeypatch.setattr(calls, "BACKOFF_BASE_S", 0.02)  # keep 5xx retries fast; Retry-After stays real
    for env in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                "ZHIPUAI_API_KEY", "ZAI_API_KEY"):
        monkeypatch.delenv(env, raising=False)
    for env in KEY_ENV.values():
        monkeypatch.setenv(env, SECRET)
    yield
    asyncio.run(close_all())


def settings_for(name: str, server: FakeLLMServer, **kw: Any) -> LLMSettings:
    base = {"model": "fake-1", "base_url": server.url + SUFFIX[name], "timeout_s": 5.0, "max_retries": 2}
    return LLMSettings(**{**base, **kw})


def provider(name: str, s: LLMSettings) -> Provider:
    return PROVIDERS[name].load()(s)


async def _gen(name: str, s: LLMSettings, messages: list[Message] = MESSAGES) -> Any:
    p = provider(name, s)
    try:
        return await p.generate(messages, s)
    finally:
        await p.aclose()


def gen(name: str, s: LLMSettings, messages: list[Message] = MESSAGES) -> Any:
    return asyncio.run(_gen(name, s, messages))


def request(seat: int = 0, run: int = 0, text: str = "Your value is 10. Bid?", seed: int = 7) -> DecisionRequest:
    return DecisionRequest(
        messages=(Message("system", "You are a bidder."), Message("user", text)),
        player=seat, decision_index=run, strategy=lambda *a, **k: {}, seed=seed,
        coords={"lineup": "melee", "session": 0, "run": run, "round": 0, "seat": seat})


def decide(agent: LLMAgent, *requests: DecisionRequest) -> Any:
    """Run decisions in one event loop and close the agent's connections in that same loop."""

    async def go() -> list[Any]:
        try:
            return [await agent.decide(r) for r in requests]
        finally:
            await agent.provider.aclose()

    out = asyncio.run(go())
    return out[0] if len(out) == 1 else out


# -- normal replies and the wire format -------------------------------------------------------------

@pytest.mark.parametrize("name", API)
def test_normal_reply_and_wire_format(name: str, server: FakeLLMServer) -> None:
    server.script(ok('{"bid": 10}'))
    g = gen(name, settings_for(name, server, max_tokens=64, temperature=0.5))
    assert g.text == '{"bid": 10}'
    assert (g.tokens_in, g.tokens_out) == (9, 2)  # the fake counts words
    assert g.model == "fake-1"
    assert g.latency_s > 0 and not g.cached
    (seen,) = server.seen
    assert seen.protocol == name
    body, headers = seen.body, {k.lower(): v for k, v in seen.headers.items()}
    assert SECRET in (headers.get("authorization", "") + headers.get("x-api-key", "")
                      + headers.get("x-goog-api-key", ""))
    if name in ("openai", "zhipuai"):
        assert body["messages"][0] == {"role": "system", "content": "You are a bidder."}
        assert body["max_tokens"] == 64 and body["temperature"] == 0.5
    elif name == "anthropic":
        assert body["system"] == "You are a bidder."
        assert body["messages"] == [{"role": "user", "content": "Your value is 10. Bid?"}]
        assert body["max_tokens"] == 64 and "temperature" not in body  # API 2026-10-21 rejects it
    else:
        assert seen.path == "/v1beta/models/fake-1:generateContent"
        assert body["systemInstruction"]["parts"][0]["text"] == "You are a bidder."
        assert body["contents"] == [{"role": "user", "parts": [{"text": "Your value is 10. Bid?"}]}]
        assert body["generationConfig"] == {"temperature": 0.5, "maxOutputTokens": 64}


def test_openai_official_endpoint_uses_max_completion_tokens(server: FakeLLMServer) -> None:
    from econarena.agents.providers.openai import _official

    assert _official(None) and _official("https://api.openai.com/v1")
    assert not _official(server.url + "/v1")


def test_openai_reads_the_completion_body_itself() -> None:
    """The reply is taken as bytes from the SDK and read here: text, model and token counts, and a clear
    malformed-response error for anything else (the wire tests above and below go through a server)."""
    from econarena.agents.calls import MalformedResponse
    from econarena.agents.providers.openai import completion

    body = (b'{"id": "x", "model": "m-1", "choices": [{"index": 0, "message": {"role": "assistant", '
            b'"content": "{\\"bid\\": 10}"}}], "usage": {"prompt_tokens": 9, "completion_tokens": 2}}')
    g = completion(body)
    assert (g.text, g.model, g.tokens_in, g.tokens_out) == ('{"bid": 10}', "m-1", 9, 2)
    g = completion(b'{"choices": [{"message": {"content": null}}], "usage": null, "model": 7}')
    assert (g.text, g.model, g.tokens_in, g.tokens_out) == ("", None, None, None)
    g = completion(b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": true}, "z": NaN}')
    assert g.text == "x" and g.tokens_in is None  # a NaN elsewhere in the body is the stdlib's to read
    for bad, why in ((b"<html>", "not JSON"), (b"{}", "no choices"), (b'{"choices": []}', "no choices"),
                     (b'{"choices": [{"message": {"content": ["a"]}}]}', "content is list")):
        with pytest.raises(MalformedResponse, match=why):
            completion(bad)


def test_openai_clients_share_one_tls_context(server: FakeLLMServer) -> None:
    """Building a TLS context reads the certificate store (~80 ms): one serves every client of the process,
    and it is the one the SDK's transport would have built (certificate checks on)."""
    import ssl

    from econarena.agents.providers.openai import _http_client, _tls_context

    a, b = (_http_client(settings_for("openai", server)) for _ in range(2))
    ctx = _tls_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert a is not None and b is not None and a is not b
    assert a._transport.ssl_context is ctx and b._transport.ssl_context is ctx


def test_assistant_turns_map_to_each_protocol(server: FakeLLMServer) -> None:
    history = [Message("user", "a"), Message("assistant", "b"), Message("user", "c")]
    gen("google", settings_for("google", server), history)
    assert [c["role"] for c in server.seen[-1].body["contents"]] == ["user", "model", "user"]
    gen("anthropic", settings_for("anthropic", server), history)
    assert [m["role"] for m in server.seen[-1].body["messages"]] == ["user", "assistant", "user"]


# -- malformed replies ------------------------------------------------------------------------------

MALFORMED = {
    "not json": "this is not json",
    "wrong shape": '{"candidates": "x", "choices": "x", "content": "x"}',
    "empty object": "{}",
}


@pytest.mark.parametrize("name", API)
@pytest.mark.parametrize("body", list(MALFORMED))
def test_malformed_reply_fails_fast(name: str, body: str, server: FakeLLMServer) -> None:
    server.script(raw(MALFORMED[body]))
    with pytest.raises(CallError, match="malformed response"):
        gen(name, settings_for(name, server))
    assert server.count() == 1  # a broken body is not retried


def test_malformed_reply_becomes_an_error_reply_not_a_crash(server: FakeLLMServer) -> None:
    server.script(raw("<html>gateway</html>", content_type="text/html"))
    agent = build_llm_agent("openai", "gpt", settings_for("openai", server), RuntimeOptions(cache=False))
    reply = decide(agent, request())
    assert reply.error and "malformed" in reply.error and reply.text == ""


# -- retries ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", API)
def test_429_retry_after_is_honoured(name: str, server: FakeLLMServer) -> None:
    server.script(status(429, {"Retry-After": "1"}))
    g = gen(name, settings_for(name, server))
    assert g.text == '{"answer": 7}'
    first, second = server.seen
    assert second.t - first.t >= 1.0  # the server's wait, not our shorter backoff


def test_retry_after_ms_header(server: FakeLLMServer) -> None:
    server.script(status(429, {"retry-after-ms": "400", "Retry-After": "30"}))
    start = time.monotonic()
    gen("openai", settings_for("openai", server))
    assert server.seen[1].t - server.seen[0].t >= 0.4 and time.monotonic() - start < budget(5)


def test_google_retry_info_in_error_body(server: FakeLLMServer) -> None:
    body = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.6s"}]}}
    server.script(status(429, body=body))
    gen("google", settings_for("google", server))
    assert server.seen[1].t - server.seen[0].t >= 0.6


@pytest.mark.parametrize("name", API)
def test_500_then_success(name: str, server: FakeLLMServer) -> None:
    server.script(status(500), status(502))
    g = gen(name, settings_for(name, server))
    assert g.text == '{"answer": 7}' and server.count() == 3


@pytest.mark.parametrize("name", API)
def test_retries_are_bounded_in_attempts(name: str, server: FakeLLMServer) -> None:
    server.script(*[status(503)] * 5)
    with pytest.raises(CallError, match="gave up after 3 attempts") as err:
        gen(name, settings_for(name, server, max_retries=2))
    assert server.count() == 3 and err.value.status == 503


def test_retries_are_bounded_in_time(server: FakeLLMServer) -> None:
    server.script(status(429, {"Retry-After": "30"}))
    start = time.monotonic()
    with pytest.raises(CallError, match="retry_max_wait_s"):
        gen("openai", settings_for("openai", server, retry_max_wait_s=2))
    assert time.monotonic() - start < budget(2) and server.count() == 1


@pytest.mark.parametrize("name", API)
def test_client_errors_are_not_retried(name: str, server: FakeLLMServer) -> None:
    server.script(status(400), status(404))
    with pytest.raises(CallError, match="HTTP 400"):
        gen(name, settings_for(name, server))
    assert server.count() == 1


@pytest.mark.parametrize("name", API)
def test_dropped_connection_is_retried(name: str, server: FakeLLMServer) -> None:
    server.script(drop())
    g = gen(name, settings_for(name, server))
    assert g.text == '{"answer": 7}' and server.count() == 2


@pytest.mark.parametrize("name", API)
def test_unreachable_server_gives_a_connection_error(name: str) -> None:
    s = LLMSettings(model="m", base_url="http://127.0.0.1:9" + SUFFIX[name], max_retries=1, timeout_s=3)
    start = time.monotonic()
    with pytest.raises(CallError, match="(?i)connect|timed out") as err:
        gen(name, s)
    assert err.value.attempts == 2 and time.monotonic() - start < budget(5)


# -- slow replies and timeouts ---------------------------------------------------------------------

@pytest.mark.parametrize("name", API)
def test_slow_reply_within_timeout(name: str, server: FakeLLMServer) -> None:
    server.script(ok("late but fine", delay=0.3))
    g = gen(name, settings_for(name, server, timeout_s=3))
    assert g.text == "late but fine" and g.latency_s >= 0.3


@pytest.mark.parametrize("name", API)
def test_timeout_is_retried_then_reported(name: str, server: FakeLLMServer) -> None:
    # Each reply would take 30 s: two attempts cut at 0.3 s plus a short backoff end far sooner, even on a
    # loaded machine (seen: up to 4.7 s with every core busy), while waiting for one reply cannot.
    server.script(ok(delay=30.0), ok(delay=30.0))
    start = time.monotonic()
    with pytest.raises(CallError, match="timed out") as err:
        gen(name, settings_for(name, server, timeout_s=0.3, max_retries=1))
    assert err.value.attempts == 2 and server.count() == 2
    assert time.monotonic() - start < min(budget(7.0), 29.0)


# -- keys ------------------------------------------------------------------------------------------

def _echo_credentials(req: Any) -> dict[str, Any]:
    h = req.headers
    leaked = f"invalid key {h.get('Authorization')} {h.get('x-api-key')} {h.get('x-goog-api-key')}"
    return {"type": "error", "error": {"type": "authentication_error", "message": leaked, "code": 401,
                                       "status": "UNAUTHENTICATED"}}


@pytest.mark.parametrize("name", API)
def test_auth_error_is_final_and_never_shows_the_key(name: str, server: FakeLLMServer) -> None:
    server.script(status(401, body=_echo_credentials))
    agent = build_llm_agent(name, "p", settings_for(name, server), RuntimeOptions(cache=False))
    reply = decide(agent, request())
    assert reply.error and "401" in reply.error
    assert SECRET not in reply.error and SECRET[-12:] not in reply.error
    assert server.count() == 1


# -- limits ----------------------------------------------------------------------------------------

async def _burst(name: str, s: LLMSettings, n: int) -> list[Any]:
    p = provider(name, s)
    try:
        return await asyncio.gather(*(p.generate(MESSAGES, s) for _ in range(n)))
    finally:
        await p.aclose()


@pytest.mark.parametrize("name", API)
def test_max_connections_caps_requests_in_flight(name: str, server: FakeLLMServer) -> None:
    server.latency = 0.15
    out = asyncio.run(_burst(name, settings_for(name, server, max_connections=2), 6))
    assert len(out) == 6 and server.max_in_flight == 2


def test_requests_per_minute_spaces_requests(server: FakeLLMServer) -> None:
    asyncio.run(_burst("openai", settings_for("openai", server, requests_per_minute=600), 4))
    times = sorted(s.t for s in server.seen)
    assert times[-1] - times[0] >= 0.25  # 4 starts 0.1 s apart (0.3 s), less arrival jitter; unlimited: ~0


def test_retry_after_pauses_the_whole_provider(server: FakeLLMServer) -> None:
    # one 429 with Retry-After holds back the requests that did not see it as well
    server.script(status(429, {"Retry-After": "0.5"}))
    server.latency = 0.05
    s = settings_for("openai", server, max_connections=1)
    asyncio.run(_burst("openai", s, 3))
    t = [x.t for x in server.seen]
    assert len(t) == 4 and min(t[1:]) - t[0] >= 0.5


def test_provider_survives_a_new_event_loop(server: FakeLLMServer) -> None:
    s = settings_for("openai", server)
    p = provider("openai", s)

    async def once() -> str:
        try:
            return (await p.generate(MESSAGES, s)).text
        finally:
            await p.aclose()

    assert asyncio.run(once()) and asyncio.run(once())  # the Host may call asyncio.run more than once


def test_missing_model_fails_before_any_request(server: FakeLLMServer) -> None:
    with pytest.raises(CallError, match="no model"):
        gen("openai", settings_for("openai", server, model=None))
    assert server.count() == 0


# -- the response cache through LLMAgent -----------------------------------------------------------

def _counting_reply() -> Any:
    n = iter(range(10_000))
    return lambda protocol, body: f'{{"answer": {next(n)}}}'


def _agent(name: str, server: FakeLLMServer, tmp_path: Path, cache: bool = True, **kw: Any) -> LLMAgent:
    return build_llm_agent(name, "p", settings_for(name, server, **kw),
                           RuntimeOptions(cache=cache, cache_path=str(tmp_path / "cache.sqlite")))


@pytest.mark.parametrize("name", API)
def test_cache_hit_on_repeat_and_miss_for_another_sample(name: str, server: FakeLLMServer,
                                                         tmp_path: Path) -> None:
    server.reply = _counting_reply()
    agent = _agent(name, server, tmp_path, temperature=0.7)

    async def play() -> list[Any]:
        first = await agent.decide(request(seat=0))
        again = await agent.decide(request(seat=0))
        other_seat = await agent.decide(request(seat=1))  # same prompt, another player
        next_run = await agent.decide(request(seat=0, run=1))
        other_seed = await agent.decide(request(seat=0, seed=8))  # a new experiment, not a resume
        await close_all()
        return [first, again, other_seat, next_run, other_seed]

    first, again, other_seat, next_run, other_seed = asyncio.run(play())
    assert not first.cached and again.cached
    assert again.text == first.text and again.tokens_out == first.tokens_out
    assert not other_seat.cached and other_seat.text != first.text
    assert not next_run.cached and not other_seed.cached
    assert server.count() == 4


def test_cache_persists_across_processes_and_can_be_disabled(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reply = _counting_reply()
    first = decide(_agent("openai", server, tmp_path), request())
    asyncio.run(close_all())  # as at the end of an experiment
    resumed = decide(_agent("openai", server, tmp_path), request())
    assert resumed.cached and resumed.text == first.text and server.count() == 1
    fresh = decide(_agent("openai", server, tmp_path, cache=False), request())
    assert not fresh.cached and fresh.text != first.text and server.count() == 2


def test_cache_key_covers_settings_model_and_messages(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reply = _counting_reply()
    for kw in ({}, {"temperature": 0.2}, {"model": "fake-2"}, {"max_tokens": 99}, {"seed": 3},
               {"system": "Be brief."}):
        reply = decide(_agent("openai", server, tmp_path, **kw), request())
        assert not reply.cached, kw
    decide(_agent("openai", server, tmp_path), request(text="another prompt"))
    assert server.count() == 7


def test_errors_are_not_cached(server: FakeLLMServer, tmp_path: Path) -> None:
    server.script(status(400))
    agent = _agent("openai", server, tmp_path)
    assert decide(agent, request()).error
    reply = decide(agent, request())
    assert reply.error is None and not reply.cached and server.count() == 2


def test_the_key_is_never_written_to_the_cache(server: FakeLLMServer, tmp_path: Path) -> None:
    decide(_agent("openai", server, tmp_path), request())
    asyncio.run(close_all())
    for f in tmp_path.iterdir():
        assert SECRET.encode() not in f.read_bytes()


def test_system_override_replaces_the_games_system_prompt(server: FakeLLMServer, tmp_path: Path) -> None:
    agent = _agent("openai", server, tmp_path, cache=False, system="Be brief.")
    decide(agent, request())
    msgs = server.seen[0].body["messages"]
    assert msgs[0] == {"role": "system", "content": "Be brief."} and len(msgs) == 2


# -- a whole game through the Host -----------------------------------------------------------------

def _melee(server: FakeLLMServer, runs: int = 2) -> dict[str, Any]:
    players = [{"agent": name, "model": f"fake-{name}", "base_url": server.url + SUFFIX[name], "label": name,
                "temperature": 0.7} for name in API]
    return {"experiment": {"name": "all-api", "game": "beauty_contest", "environment": "melee", "sessions": 2,
                           "runs": runs, "seed": 5, "history": "actions"},
            "game": {"upper_bound": 100}, "players": players}


def test_melee_game_with_every_api_provider(server: FakeLLMServer, tmp_path: Path) -> None:
    import json

    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions, preflight_experiment

    server.reply = lambda protocol, body: '{"answer": 20}' if protocol == "google" else '{"answer": 30}'
    exp = parse_experiment(_melee(server), "melee.toml")
    assert preflight_experiment(exp) == []
    runtime = RuntimeOptions(cache_path=str(tmp_path / "cache.sqlite"))

    def play(out: Path) -> list[dict[str, Any]]:
        result = asyncio.run(Host(exp, out, HostOptions(concurrency=8, quiet=True, runtime=runtime)).run())
        assert result.status == "complete"
        lines = (out / "decisions.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    decisions = play(tmp_path / "first")
    assert len(decisions) == 2 * 2 * 4 and server.count() == 16
    assert {d["label"] for d in decisions} == set(API)
    assert all(d["error"] is None and d["valid"] and not d["cached"] for d in decisions)
    assert all(d["tokens_in"] and d["tokens_out"] == 2 for d in decisions)
    assert {d["model"] for d in decisions} == {f"fake-{n}" for n in API}
    runs = [json.loads(x) for x in (tmp_path / "first" / "runs.jsonl").read_text().splitlines() if x.strip()]
    assert all(r["winners"] == [2] for r in runs)  # 20 is nearest to 2/3 of the mean (28)

    again = play(tmp_path / "second")  # the same experiment again costs nothing
    assert server.count() == 16 and all(d["cached"] for d in again)
    def key(d: dict[str, Any]) -> tuple[Any, ...]:
        return d["session"], d["run"], d["round"], d["player"]

    assert [(key(d), d["response"]) for d in sorted(again, key=key)] == \
        [(key(d), d["response"]) for d in sorted(decisions, key=key)]


# -- what the user typed reaches the server; what the server echoes never reaches a file ---------------

QUERY = "api-version=2024-06-01"


@pytest.mark.parametrize("name", API)
def test_a_query_in_base_url_reaches_the_server_as_typed(name: str, server: FakeLLMServer) -> None:
    """``http://host/v1?api-version=...`` became ``/v1/?api-version=...chat/completions`` (404 on an
    Azure-style server while validate said ok): the path and the query arrive as typed."""
    g = gen(name, settings_for(name, server, base_url=f"{server.url}{SUFFIX[name]}?{QUERY}"))
    assert g.text == '{"answer": 7}'
    (seen,) = server.seen
    assert seen.query == QUERY
    assert seen.path == {"openai": "/v1/chat/completions", "anthropic": "/v1/messages",
                         "google": "/v1beta/models/fake-1:generateContent",
                         "zhipuai": "/api/paas/v4/chat/completions"}[name]


def test_an_echoed_key_and_queries_in_every_base_url_of_a_run(server: FakeLLMServer, tmp_path: Path) -> None:
    """A server that echoed the API key in a 200 reply had the key stored verbatim in decisions.jsonl and the
    cache. Every provider, a list of two base_urls and a [judge] each carry a query: every request arrives
    with it, and no file of the run (decisions, judge log, cache) holds the key."""
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    server.reply = lambda protocol, body: (f"worth 3 points ({SECRET})" if (body or {}).get("model") == "judge-1"
                                           else '{"answer": 30, "note": "my key is ' + SECRET + '"}')
    doc = _melee(server, runs=1)
    for p in doc["players"]:
        p["base_url"] += f"?{QUERY}"
    first = doc["players"][0]["base_url"]
    doc["players"][0]["base_url"] = [first, first + "&"]  # openai: a list of two endpoints (one server here)
    runtime = RuntimeOptions(cache_path=str(tmp_path / "cache.sqlite"))
    result = asyncio.run(Host(parse_experiment(doc, "q.toml"), tmp_path / "melee",
                              HostOptions(concurrency=4, quiet=True, runtime=runtime)).run())
    assert result.status == "complete"
    judged = {"experiment": {"name": "judged", "game": "fruit_trade", "sessions": 1, "runs": 1},
              "game": {"payoff": "llm"}, "players": [{"agent": "rational"}, {"agent": "random"}],
              "judge": {"agent": "openai", "model": "judge-1", "base_url": f"{server.url}/v1?{QUERY}"}}
    result = asyncio.run(Host(parse_experiment(judged, "j.toml"), tmp_path / "judged",
                              HostOptions(concurrency=1, quiet=True, runtime=runtime)).run())
    assert result.status == "complete"
    # each query as typed (the second endpoint's ends in the "&" that tells it apart), the same parameters
    assert server.count() == 2 * 4 + 2 and {s.query for s in server.seen} <= {QUERY, QUERY + "&"}
    assert {tuple(parse_qsl(s.query)) for s in server.seen} == {tuple(parse_qsl(QUERY))}
    assert {s.path for s in server.seen if s.protocol == "openai"} == {"/v1/chat/completions"}
    decisions = [json.loads(x) for x in (tmp_path / "melee" / "decisions.jsonl").read_text().splitlines()]
    assert all(d["valid"] and d["response"].endswith('"my key is ***"}') for d in decisions)
    judge_log = (tmp_path / "judged" / "judge.jsonl").read_text(encoding="utf-8")
    assert "worth 3 points (***)" in judge_log
    for f in [*tmp_path.rglob("*.jsonl"), tmp_path / "cache.sqlite"]:
        assert SECRET.encode() not in f.read_bytes(), f
