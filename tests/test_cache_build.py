"""A cached reply names the model build that made it, and is served only to that build: weights replaced
under the same name are asked again, and no key or credential is written into the record."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fakeservers import FakeLLMServer, raw

from econarena.agents.base import DecisionRequest, Message
from econarena.agents.llm import LLMSettings, RuntimeOptions, build_llm_agent, close_all


def _request(session: int) -> DecisionRequest:
    return DecisionRequest(messages=(Message("user", "choose a number between 0 and 100"),), player=0,
                           decision_index=0, strategy=lambda *a, **k: {}, coords={"session": session})


def _decide(agent_kind: str, settings: LLMSettings, cache: Path, sessions: int = 2) -> list[Any]:
    async def go() -> list[Any]:
        agent = build_llm_agent(agent_kind, "p", settings, RuntimeOptions(cache_path=str(cache)))
        try:
            return [await agent.decide(_request(s)) for s in range(sessions)]
        finally:
            await close_all()

    return asyncio.run(go())


def _builds(cache: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(cache)
    try:
        return [json.loads(b) for (b,) in db.execute("SELECT build FROM responses ORDER BY created")]
    finally:
        db.close()


def test_an_hf_reply_is_not_served_to_other_weights_under_the_same_name(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from hf_fixtures import build_tiny_llama

    from econarena.agents.providers.hf import file_digest, folder_digest

    model = build_tiny_llama(tmp_path / "m", seed=0)
    cache = tmp_path / "c.sqlite"
    settings = LLMSettings(model=str(model), max_tokens=4, temperature=0.0)
    first = _decide("hf", settings, cache)
    assert [r.cached for r in first] == [False, False]
    digest = folder_digest(model)
    # the folder's digest: its files' names and sha256 digests, in name order (hand-computed here)
    import hashlib

    h = hashlib.sha256()
    for f in sorted(p for p in model.iterdir() if p.is_file()):
        assert file_digest(f) == hashlib.sha256(f.read_bytes()).hexdigest()
        h.update(f"{f.name}\0{hashlib.sha256(f.read_bytes()).hexdigest()}\0".encode())
    assert digest == h.hexdigest()
    assert _builds(cache) == [{"provider": "hf", "model": str(model), "weights": f"sha256:{digest}",
                               "served": str(model)}] * 2
    again = _decide("hf", settings, cache)
    assert [r.cached for r in again] == [True, True]  # the same weights: served
    assert [r.text for r in again] == [r.text for r in first]

    build_tiny_llama(model, seed=1)  # other weights, the same folder, the same name in the config
    assert folder_digest(model) != digest
    replaced = _decide("hf", settings, cache)
    assert [r.cached for r in replaced] == [False, False]  # asked again, not the old build's replies
    assert {b["weights"] for b in _builds(cache)} == {f"sha256:{folder_digest(model)}"}
    assert [r.cached for r in _decide("hf", settings, cache)] == [True, True]


def test_an_hf_entry_from_before_builds_were_recorded_is_asked_again(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from hf_fixtures import build_tiny_llama

    model = build_tiny_llama(tmp_path / "m")
    cache = tmp_path / "c.sqlite"
    settings = LLMSettings(model=str(model), max_tokens=4, temperature=0.0)
    _decide("hf", settings, cache, sessions=1)
    db = sqlite3.connect(cache)
    db.execute("UPDATE responses SET build = NULL, text = 'from an unknown build'")
    db.commit()
    db.close()
    reply = _decide("hf", settings, cache, sessions=1)[0]
    assert not reply.cached and reply.text != "from an unknown build"


def _completion(model: str, fingerprint: str | None) -> Any:
    body = {"id": "x", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"answer": 7}'},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
    if fingerprint is not None:
        body["system_fingerprint"] = fingerprint
    return raw(json.dumps(body))


@pytest.mark.usefixtures("openai_path")
def test_a_server_reply_records_what_the_server_ran_and_no_secret(server: FakeLLMServer, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-never-in-the-cache-4711"
    monkeypatch.setenv("BUILD_KEY", secret)
    server.reset()
    # the second reply's fingerprint echoes the key (a proxy's debug field): masked as a reply's text is
    server.script(_completion("m-2026-01", "fp_44b0"), _completion("m-2026-01", f"fp_{secret}"))
    cache = tmp_path / "c.sqlite"
    settings = LLMSettings(model="m", base_url=f"{server.url}/v1", api_key_env="BUILD_KEY", timeout_s=5.0)
    first = _decide("openai", settings, cache)
    assert [r.cached for r in first] == [False, False]
    assert _builds(cache) == [{"provider": "openai", "model": "m", "served": "m-2026-01", "fingerprint": "fp_44b0"},
                              {"provider": "openai", "model": "m", "served": "m-2026-01", "fingerprint": "fp_***"}]
    again = _decide("openai", settings, cache)
    assert [r.cached for r in again] == [True, True] and [r.model for r in again] == ["m-2026-01"] * 2
    for f in tmp_path.glob("c.sqlite*"):  # the database and its write-ahead log
        data = f.read_bytes()
        assert secret.encode() not in data and b"127.0.0.1" not in data, f.name


@pytest.mark.usefixtures("openai_path")
def test_a_server_entry_from_before_builds_were_recorded_is_still_served(server: FakeLLMServer, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUILD_KEY", "k")
    server.reset()
    server.script(_completion("m", None))
    cache = tmp_path / "c.sqlite"
    settings = LLMSettings(model="m", base_url=f"{server.url}/v1", api_key_env="BUILD_KEY", timeout_s=5.0)
    _decide("openai", settings, cache, sessions=1)
    assert _builds(cache) == [{"provider": "openai", "model": "m", "served": "m"}]
    db = sqlite3.connect(cache)
    db.execute("UPDATE responses SET build = NULL")
    db.commit()
    db.close()
    assert _decide("openai", settings, cache, sessions=1)[0].cached  # provider and model are in its key


def test_a_reply_whose_weights_were_not_found_is_never_served(tmp_path: Path) -> None:
    """Weights that cannot be found (a model not downloaded here, as on a cluster's driver) name no build: a
    reply recorded so is not served to another build that cannot be found either (the model may have
    changed between them); a reply recorded with its weights found still is."""
    pytest.importorskip("transformers")
    agent = build_llm_agent("hf", "p", LLMSettings(model="no-such-org/no-such-model-46c", max_tokens=4),
                            RuntimeOptions(cache=False))
    assert agent.build() == {"provider": "hf", "model": "no-such-org/no-such-model-46c", "weights": None}
    assert not agent._same_build({**agent.build(), "served": "m"})
    found = {"provider": "hf", "model": "m", "weights": "sha256:ab"}
    agent.model, agent.provider.build = "m", lambda: {"weights": "sha256:ab"}  # type: ignore[method-assign]
    assert agent._same_build({**found, "fingerprint": "fp"}) and not agent._same_build({**found, "weights": None})
