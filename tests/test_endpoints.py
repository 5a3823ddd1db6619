"""Several endpoints for one player (``base_url = [...]``, agents/endpoints.py): sessions stay on one
endpoint, new ones go to the least busy, a refusing endpoint is set aside with one warning; masked
everywhere like a single base_url."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import to_toml
from fakeservers import FakeLLMServer

from econarena.agents.endpoints import EndpointPool
from econarena.hosts.config import ConfigError, parse_experiment

# each test on the lean path and on the SDK path of agent "openai" (tests/conftest.py: openai_path)
pytestmark = pytest.mark.usefixtures("openai_path")


def test_a_session_stays_on_its_endpoint_and_new_ones_go_to_the_least_busy() -> None:
    pool = EndpointPool(["http://a/v1", "http://b/v1", "http://c/v1"])
    assert pool.choose(("t", 0)) == 0
    pool.in_flight[0] = 2
    assert pool.choose(("t", 1)) == 1
    pool.in_flight[1] = 1
    assert pool.choose(("t", 2)) == 2
    pool.in_flight[2] = 3
    assert pool.choose(("t", 0)) == 0  # sticky, however busy
    assert pool.choose(("t", 3)) == 1  # fewest in flight: b (1) < a (2) < c (3)
    assert pool.choose(None) == 1 and ("t", 4) not in pool._sticky


def test_a_set_aside_endpoint_gets_no_calls_until_it_is_due(capsys: Any, monkeypatch: Any) -> None:
    pool = EndpointPool(["http://a/v1", "http://b/v1"], ["http://a/v1", "http://b/v1"])
    assert pool.choose(("t", 0)) == 0
    assert pool.set_aside(0, "connection refused by http://a/v1 (nothing is listening there)") is True
    assert pool.choose(("t", 0)) == 1  # the session moves; it stays on b from now on
    assert pool.set_aside(0, "again") is True
    err = capsys.readouterr().err
    assert err.count("warning: endpoint http://a/v1 failed (connection refused by http://a/v1)") == 1
    assert pool.set_aside(1, "timed out after 5 s") is False  # nothing left up: the caller backs off
    assert pool.choose(("t", 9)) == 0  # every one aside: the one due back first is tried
    pool.aside_until = [0.0, 0.0]
    assert pool.choose(("t", 0)) == 1


def doc(urls: Any, **player: Any) -> dict[str, Any]:
    return {"experiment": {"name": "eps", "game": "guessing_game", "sessions": 6, "runs": 3, "seed": 2,
                           "history": "actions"},
            "game": {"rounds": 3},
            "players": [{"agent": "openai", "label": "gpt", "model": "fake", "base_url": urls, "max_tokens": 20,
                         "max_retries": 2, **player}, {"agent": "rational", "count": 2}]}


def test_two_servers_one_stopped_mid_run(tmp_path: Path, capfd: Any) -> None:
    """Every decision is valid and both servers served calls; the stopped one is set aside with one
    warning, and its sessions go on on the other within the retry budget."""
    from econarena.agents.llm import RuntimeOptions
    from econarena.hosts.host import Host, HostOptions

    a, b = FakeLLMServer(latency=0.02).start(), FakeLLMServer(latency=0.02).start()
    a.reply = b.reply = lambda protocol, body: '{"chosen_number": 20}'
    try:
        exp = parse_experiment(doc([f"{a.url}/v1", f"{b.url}/v1"]), "e.toml")
        def stop_b_midway() -> None:
            deadline = time.monotonic() + 30
            while b.count() < 6 and time.monotonic() < deadline:
                time.sleep(0.005)
            b.stop()

        stopper = threading.Thread(target=stop_b_midway)
        stopper.start()
        result = asyncio.run(Host(exp, tmp_path / "out", HostOptions(concurrency=6, quiet=True,
                                                                     runtime=RuntimeOptions(cache=False))).run())
        stopper.join()
    finally:
        a.stop()
        b.stop()
    assert result.status == "complete" and result.runs_done == 18
    decisions = [json.loads(x) for x in (tmp_path / "out" / "decisions.jsonl").read_text().splitlines()]
    llm = [d for d in decisions if d["label"] == "gpt"]
    assert len(llm) == 6 * 3 * 3 and all(d["valid"] and d["error"] is None for d in llm)
    assert a.count() > 0 and 6 <= b.count() < len(llm), (a.count(), b.count())
    assert a.count() + b.count() >= len(llm)
    err = capfd.readouterr().err
    assert err.count(f"warning: endpoint {b.url}/v1 failed") == 1, err


def test_a_server_answering_500_is_set_aside_like_a_refusing_one(tmp_path: Path, capfd: Any) -> None:
    """A dead replica behind a gateway answers 502/503, a crashing one 500, rather than refusing: its
    sessions move to the healthy server at once (before, they retried the 500s there and were lost)."""
    from fakeservers import status

    from econarena.agents.llm import RuntimeOptions
    from econarena.hosts.host import Host, HostOptions

    a, b = FakeLLMServer(latency=0.02).start(), FakeLLMServer(latency=0.02).start()
    a.reply = lambda protocol, body: '{"chosen_number": 20}'
    b.script(*[status(code) for code in (500, 502, 503) * 40])
    try:
        exp = parse_experiment(doc([f"{a.url}/v1", f"{b.url}/v1"], max_retries=1), "e.toml")
        result = asyncio.run(Host(exp, tmp_path / "out", HostOptions(concurrency=6, quiet=True,
                                                                     runtime=RuntimeOptions(cache=False))).run())
    finally:
        a.stop()
        b.stop()
    decisions = [json.loads(x) for x in (tmp_path / "out" / "decisions.jsonl").read_text().splitlines()]
    llm = [d for d in decisions if d["label"] == "gpt"]
    assert result.status == "complete" and all(d["error"] is None for d in llm), [d["error"] for d in llm]
    assert 1 <= b.count() <= 6 and a.count() == len(llm) == 54, (a.count(), b.count())
    err = capfd.readouterr().err
    assert err.count(f"warning: endpoint {b.url}/v1 failed (HTTP 50") == 1, err


def test_sessions_spread_over_both_servers_and_stay() -> None:
    """Six sessions of five calls each through one provider: three sessions per server, and every call of
    a session on the server its first call went to (its conversation keeps that server's prefix cache)."""
    from econarena.agents.base import Message
    from econarena.agents.endpoints import AFFINITY
    from econarena.agents.llm import LLMSettings
    from econarena.agents.providers.openai import OpenAIProvider

    a, b = FakeLLMServer(latency=0.02).start(), FakeLLMServer(latency=0.02).start()
    settings = LLMSettings(model="fake", base_url=[f"{a.url}/v1", f"{b.url}/v1"])

    async def session(p: OpenAIProvider, k: int) -> None:
        AFFINITY.set(("melee", k))
        for i in range(5):
            await p.generate([Message("user", f"session {k} call {i}")], settings)

    async def main() -> None:
        p = OpenAIProvider(settings)
        try:
            await asyncio.gather(*(session(p, k) for k in range(6)))
        finally:
            await p.aclose()

    try:
        asyncio.run(main())
    finally:
        a.stop()
        b.stop()
    where = {}
    for name, srv in (("a", a), ("b", b)):
        for seen in srv.seen:
            k = seen.body["messages"][0]["content"].split()[1]
            where.setdefault(k, set()).add(name)
    assert all(len(v) == 1 for v in where.values()) and len(where) == 6, where
    assert a.count() == b.count() == 15


SECRET = "sk-endpoint-secret-123456"


def test_a_list_of_urls_is_masked_in_every_file_and_error(tmp_path: Path, arena: Any) -> None:
    # credentials as userinfo are refused for agent "openai" (below); a query value is masked the same way
    urls = [f"http://127.0.0.1:9/v1?token={SECRET}", f"http://127.0.0.1:9/v1?key={SECRET}"]
    toml = tmp_path / "e.toml"
    toml.write_text(arena.to_toml(doc(urls, max_retries=0, timeout_s=2.0)))
    r = arena.cli("run", str(toml), "--out", str(tmp_path / "out"), "--quiet", "--no-cache")
    assert r.returncode == 3, r.stderr  # nothing listens on port 9: incomplete, retry with --resume
    assert SECRET not in r.stdout + r.stderr
    for f in (tmp_path / "out").iterdir():
        assert SECRET not in f.read_text(), f.name
    config = (tmp_path / "out" / "config.toml").read_text()
    assert "http://127.0.0.1:9/v1?token=***" in config and "key=***" in config
    errors = [json.loads(x)["error"] for x in (tmp_path / "out" / "decisions.jsonl").read_text().splitlines()]
    assert any(e and "connection refused by http://127.0.0.1:9/v1?key=***" in e for e in errors), errors


def test_a_key_in_the_path_of_a_url_is_masked_everywhere(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    """A proxy that takes the key in its path (``http://proxy/KEY/v1``): config.toml kept the URL's path as
    typed, so the key reached the run directory (errors and warnings were masked, the file was not). The
    key's value is masked in a base_url's path as typed and percent-encoded, in a list, a [judge] and a grid."""
    from econarena.agents.calls import public_url
    from econarena.cli import main

    key = "sk-path/key+123456"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("ECONARENA_CACHE_DIR", str(tmp_path / "cache"))
    assert public_url(f"http://h/{key}/v1", [key]) == "http://h/***/v1"
    assert public_url("http://h/sk-path%2Fkey%2B123456/v1?k=1", [key]) == "http://h/***/v1?k=***"
    urls = [f"http://127.0.0.1:9/{key}/v1", "http://127.0.0.1:9/sk-path%2Fkey%2B123456/v1"]
    toml = tmp_path / "e.toml"
    data = doc(urls, max_retries=0, timeout_s=2.0)
    data["experiment"].update(sessions=1, runs=1)
    toml.write_text(to_toml(data))
    capsys.readouterr()
    assert main(["run", str(toml), "--out", str(tmp_path / "out"), "--quiet", "--no-cache"]) == 3
    printed = capsys.readouterr()
    assert "connection refused" in printed.err and "/***/v1" in printed.err
    files = {f.name: f.read_text(encoding="utf-8") for f in (tmp_path / "out").iterdir()}
    assert [name for name, text in files.items() if key in text or "sk-path%2Fkey" in text] == []
    assert key not in printed.out + printed.err and "sk-path%2Fkey" not in printed.out + printed.err
    assert "http://127.0.0.1:9/***/v1" in files["config.toml"]


def test_openai_base_url_with_credentials_is_refused_before_the_run(tmp_path: Path, arena: Any) -> None:
    """aiohttp refuses URL credentials beside the SDK's Authorization header: every call failed as a
    "malformed response" (exit 3) that --resume retried in vain. Refused up front, the secret never printed."""
    toml = tmp_path / "e.toml"
    toml.write_text(arena.to_toml(doc([f"http://user:{SECRET}@127.0.0.1:9/v1", "http://127.0.0.1:9/v1"])))
    r = arena.cli("validate", str(toml))
    assert r.returncode == 2 and "base_url carries credentials (user:password@host)" in r.stderr, r.stderr
    assert SECRET not in r.stdout + r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("urls,expected", [
    ([], "expected a URL or a non-empty list"),
    (["http://127.0.0.1:1/v1", "ftp://x"], "entry 2: expected an http:// or https:// URL"),
    (["http://127.0.0.1:1/v1", "http://127.0.0.1:1/v1"], "the same URL is listed twice"),
    (["http://127.0.0.1:1/v1", 3], "base_url"),
])
def test_bad_url_lists_are_refused(urls: Any, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(")):
        parse_experiment(doc(urls), "e.toml")


def test_the_warning_says_when_no_other_endpoint_is_up(capsys: Any) -> None:
    """It said "its calls go to the other endpoint(s)" also when every other endpoint was set aside."""
    pool = EndpointPool(["http://a/v1", "http://b/v1"], ["http://a/v1", "http://b/v1"])
    assert pool.set_aside(0, "connection refused by http://a/v1 (nothing is listening there)") is True
    assert pool.set_aside(1, "connection lost: http://b/v1 closed it before answering (the server stopped?)") is False
    a, b = capsys.readouterr().err.strip().splitlines()
    assert a.endswith("set aside for 30 s, its calls go to the other endpoint(s)"), a
    assert b == ("econarena: warning: endpoint http://b/v1 failed (connection lost: http://b/v1 closed it before "
                 "answering); set aside for 30 s, and no other endpoint is up: calls wait and retry (max_retries) "
                 "on the one due back first"), b


def test_a_server_killed_mid_request_is_a_lost_connection_not_a_timeout() -> None:
    """A real server process SIGKILLed while it held a request: the openai SDK's transport reports aiohttp's
    ServerDisconnectedError as APITimeoutError, and the endpoint was said to have "timed out" (its
    timeout_s was 20 s; it failed after half a second)."""
    import os
    import signal
    import subprocess
    import sys

    from econarena.agents.base import Message
    from econarena.agents.llm import LLMSettings
    from econarena.agents.providers.openai import OpenAIProvider

    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("fakeservers.py")), "--latency", "30"],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[1])  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}/v1"
        settings = LLMSettings(model="fake", base_url=url, max_retries=0, timeout_s=20)

        async def killed_mid_request() -> Any:
            p = OpenAIProvider(settings)
            try:
                call = asyncio.ensure_future(p._attempt(p._client(p._state(), 0), [Message("user", "hi")],
                                                        settings, None))
                await asyncio.sleep(0.5)
                os.kill(proc.pid, signal.SIGKILL)
                try:
                    await call
                except Exception as exc:  # noqa: BLE001 - judged below, as the provider judges it
                    return p._failure(exc, settings.timeout_s, url)
                raise AssertionError("the call succeeded")
            finally:
                await p.aclose()

        failure = asyncio.run(killed_mid_request())
    finally:
        proc.kill()
        proc.wait()
    assert failure.down and failure.retryable
    assert failure.message == (f"connection lost: {url} closed it before answering (the server stopped or was "
                               "killed?)"), failure.message


def test_a_base_url_of_the_wrong_type_is_not_echoed(monkeypatch: Any) -> None:
    """pydantic's type errors were printed with their input: a list holding one wrong entry printed the
    whole list, credentials included (``(got ['http://user:KEY@host/v1', 5])``)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for where in ("players", "llm"):
        data = doc([f"http://127.0.0.1:1/v1?key={SECRET}", 5])
        if where == "llm":
            data["llm"] = {"base_url": data["players"][0].pop("base_url")}
        with pytest.raises(ConfigError) as e:
            parse_experiment(data, "e.toml")
        assert "base_url" in str(e.value) and SECRET not in str(e.value), str(e.value)


def test_a_grid_of_base_urls_keeps_their_keys_out_of_the_records(monkeypatch: Any) -> None:
    """A [grid] over llm.base_url named each table after its cell, URL as typed: the table's name and the
    cell are written with every run and decision, so a ``?key=`` reached runs.jsonl and decisions.jsonl.
    Masked, and two URLs that differ only in their key stay two tables (the cell's index tells them apart)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    data = doc("http://127.0.0.1:1/v1")
    data["players"][0].pop("base_url")
    data["grid"] = {"llm": {"base_url": [f"http://127.0.0.1:1/v1?key={SECRET}", "http://127.0.0.1:1/v1?key=other",
                                         "http://127.0.0.1:2/v1"]}}
    exp = parse_experiment(data, "e.toml")
    tables = exp.tables()
    shown = json.dumps([(lu.name, lu.cell) for lu, _ in tables])
    assert SECRET not in shown and "other" not in shown, shown
    assert [lu.name for lu, _ in tables] == ["melee [cell 0: base_url=http://127.0.0.1:1/v1?key=***]",
                                             "melee [cell 1: base_url=http://127.0.0.1:1/v1?key=***]",
                                             "melee [base_url=http://127.0.0.1:2/v1]"]
    assert [sub.players[0].llm.base_url for _, sub in tables][:2] == data["grid"]["llm"]["base_url"][:2]
