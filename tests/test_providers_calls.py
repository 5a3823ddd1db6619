"""The provider layer's pieces on their own: preflight, keys and .env, Retry-After, backoff, the rate
limiter, redaction, and the response cache's key and storage."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import pytest

from econarena.agents import calls
from econarena.agents.base import Message
from econarena.agents.cache import ResponseCache, cache_key, open_cache, resolve_cache_path, sample_index
from econarena.agents.llm import (
    PROVIDERS,
    LLMSettings,
    api_key,
    is_loopback,
    load_dotenv,
    preflight,
)

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ZHIPUAI_API_KEY",
            "ZAI_API_KEY", "MY_KEY")


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in KEY_VARS:
        monkeypatch.delenv(env, raising=False)


# -- preflight --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "names"), [
    ("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY"),
    ("google", "GEMINI_API_KEY or GOOGLE_API_KEY"), ("zhipuai", "ZHIPUAI_API_KEY or ZAI_API_KEY"),
])
def test_preflight_names_the_missing_key(name: str, names: str) -> None:
    (problem,) = preflight(name, LLMSettings(model="m"), "players[2] (X)")
    assert problem.startswith("players[2] (X): ") and f"set {names}" in problem


def test_preflight_is_quiet_when_everything_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-123")
    assert preflight("google", LLMSettings(model="m"), "p") == []
    monkeypatch.setenv("OPENAI_API_KEY", "   ")  # blank counts as missing
    assert preflight("openai", LLMSettings(model="m"), "p")


def test_preflight_custom_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    (problem,) = preflight("openai", LLMSettings(model="m", api_key_env="MY_KEY"), "p")
    assert "set MY_KEY" in problem
    monkeypatch.setenv("MY_KEY", "sk-mine")
    assert preflight("openai", LLMSettings(model="m", api_key_env="MY_KEY"), "p") == []
    assert api_key("openai", LLMSettings(api_key_env="MY_KEY")) == "sk-mine"


def test_local_servers_need_no_key_unless_one_is_named() -> None:
    local = LLMSettings(model="m", base_url="http://127.0.0.1:8000/v1")
    assert preflight("openai", local, "p") == []
    assert preflight("openai", LLMSettings(model="m", base_url="http://localhost:11434/v1"), "p") == []
    named = LLMSettings(model="m", base_url="http://127.0.0.1:8000/v1", api_key_env="MY_KEY")
    assert preflight("openai", named, "p")
    assert preflight("openai", LLMSettings(model="m", base_url="https://api.deepseek.com"), "p")
    assert is_loopback("http://[::1]:9/v1") and not is_loopback("https://127.example.com")


def test_preflight_names_the_extra_for_a_missing_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "google.genai", None)  # as if google-genai were not installed
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    (problem,) = preflight("google", LLMSettings(model="gemini-x"), "players[0] (G)")
    assert "pip install 'econarena[google]'" in problem


def test_preflight_wants_a_model_for_api_providers() -> None:
    (problem,) = preflight("openai", LLMSettings(base_url="http://127.0.0.1:1/v1"), "p")
    assert "needs a model" in problem
    assert not PROVIDERS["hf"].needs_model


def test_preflight_never_prints_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    for name in ("openai", "anthropic"):
        for problem in preflight(name, LLMSettings(), "p"):
            assert "sk-secret-value" not in problem


# -- .env -------------------------------------------------------------------------------------------

def test_load_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = tmp_path / ".env"
    env.write_text(
        "# keys\n"
        "OPENAI_API_KEY=sk-from-file\n"
        "export ANTHROPIC_API_KEY = 'sk-ant quoted'  \n"
        'GEMINI_API_KEY="g-1 # not a comment"\n'
        "ZAI_API_KEY=z-1 # a comment\n"
        "ZHIPUAI_API_KEY=\n"
        "not a line\n"
        "MY_KEY=from-file\n", encoding="utf-8")
    monkeypatch.setenv("MY_KEY", "from-shell")
    loaded = load_dotenv(env)
    assert os.environ["OPENAI_API_KEY"] == "sk-from-file"
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant quoted"
    assert os.environ["GEMINI_API_KEY"] == "g-1 # not a comment"
    assert os.environ["ZAI_API_KEY"] == "z-1"
    assert os.environ["MY_KEY"] == "from-shell"  # never overrides what is set
    assert "MY_KEY" not in loaded and "OPENAI_API_KEY" in loaded
    assert load_dotenv(tmp_path / "missing.env") == []


def test_load_dotenv_reads_multiline_values_and_escapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """What python-dotenv reads and the old line reader did not: a quoted value over two lines, escapes; a
    line that is no assignment is named by its number, and its text (a key, perhaps) is never shown."""
    for name in ("EA_PEM", "EA_TAB", "EA_AFTER", "EA_DOLLAR"):
        monkeypatch.delenv(name, raising=False)
    env = tmp_path / ".env"
    env.write_text('EA_PEM="line one\nline two"\nEA_TAB="a\\tb"\nsk-secret-oops ;\nEA_AFTER=ok\n'
                   "EA_DOLLAR=x${HOME}y\n", encoding="utf-8")
    assert load_dotenv(env) == ["EA_PEM", "EA_TAB", "EA_AFTER", "EA_DOLLAR"]
    assert os.environ["EA_PEM"] == "line one\nline two"
    assert os.environ["EA_TAB"] == "a\tb"
    assert os.environ["EA_AFTER"] == "ok"
    assert os.environ["EA_DOLLAR"] == "x${HOME}y"  # a key is taken verbatim: nothing is expanded
    err = capsys.readouterr().err
    assert f"{env}:4: not a NAME=VALUE line" in err and "sk-secret" not in err


def test_load_dotenv_fills_a_blank_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-x\n", encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "")
    monkeypatch.chdir(tmp_path)
    assert load_dotenv() == ["OPENAI_API_KEY"] and os.environ["OPENAI_API_KEY"] == "sk-x"


# -- Retry-After, backoff, redaction ----------------------------------------------------------------

def test_parse_retry_after() -> None:
    p = calls.parse_retry_after
    assert p({"retry-after": "3"}) == 3.0
    assert p({"retry-after": "0.5"}) == 0.5
    assert p({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=20), usegmt=True)
    assert 15 < (p({"retry-after": later}) or 0) <= 20
    assert p({"retry-after": "soon"}) is None and p({}) is None and p(None) is None
    assert p({"retry-after": "-4"}) == 0.0


def test_status_judgement() -> None:
    assert calls.status_failure(429, "x", {"retry-after": "2"}).retry_after == 2.0
    for code in (408, 429, 500, 502, 503, 504, 529):
        assert calls.status_failure(code, "x").retryable, code
    for code in (400, 401, 403, 404, 422):
        assert not calls.status_failure(code, "x").retryable, code


def test_backoff_grows_with_jitter_and_a_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calls, "BACKOFF_BASE_S", 1.0)
    monkeypatch.setattr(calls, "BACKOFF_CAP_S", 8.0)
    for retry, (lo, hi) in enumerate([(0.5, 1), (1, 2), (2, 4), (4, 8), (4, 8)]):
        delays = [calls.backoff_delay(retry) for _ in range(50)]
        assert all(lo <= d <= hi for d in delays) and len(set(delays)) > 1


def test_redact() -> None:
    key = "sk-proj-abcdefghijklmnop"
    text = calls.redact(f"401: bad key {key}; header Bearer {key}", key)
    assert key not in text and "***" in text
    assert "zzzzzzzzzzzzzzzz" not in calls.redact("Authorization: Bearer zzzzzzzzzzzzzzzz")


def test_rate_limiter_spaces_starts() -> None:
    async def go() -> list[float]:
        limiter = calls.RateLimiter(1200)  # 50 ms apart
        starts = []

        async def one() -> None:
            await limiter.acquire()
            starts.append(time.monotonic())

        await asyncio.gather(*(one() for _ in range(5)))
        return starts

    starts = sorted(asyncio.run(go()))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(g >= 0.045 for g in gaps)


# -- the cache --------------------------------------------------------------------------------------

MSGS = [Message("system", "s"), Message("user", "u")]
SETTINGS = {"temperature": 0.7, "top_p": None, "max_tokens": 64, "seed": None, "system": None}


def _key(**kw: object) -> str:
    args: dict = {"provider": "openai", "model": "m", "base_url": None, "messages": MSGS,
                  "settings": SETTINGS, "sample": "s0"}
    args.update(kw)
    return cache_key(**args)  # type: ignore[arg-type]


def test_cache_key_changes_with_everything_that_shapes_the_reply() -> None:
    base = _key()
    assert _key() == base
    variants = [_key(provider="anthropic"), _key(model="m2"), _key(base_url="http://h/v1"),
                _key(messages=[Message("user", "u")]), _key(messages=[Message("system", "s"), Message("user", "v")]),
                _key(settings={**SETTINGS, "temperature": 0.0}), _key(settings={**SETTINGS, "seed": 1}),
                _key(settings={**SETTINGS, "system": "x"}), _key(sample="s1")]
    assert len({base, *variants}) == len(variants) + 1
    assert _key(base_url="http://h/v1/") == _key(base_url="http://h/v1")


def test_sample_index_is_stable_and_distinct() -> None:
    c = {"lineup": "melee", "session": 3, "run": 1, "round": 0, "seat": 2}
    assert sample_index(c, 2, 1, 7) == sample_index(dict(reversed(list(c.items()))), 2, 1, 7)
    others = [sample_index({**c, "seat": 3}, 3, 1, 7), sample_index({**c, "run": 2}, 2, 2, 7),
              sample_index({**c, "session": 4}, 2, 1, 7), sample_index(c, 2, 1, 8),
              sample_index({**c, "lineup": "rational"}, 2, 1, 7)]
    assert len({sample_index(c, 2, 1, 7), *others}) == 6


def test_cache_store_roundtrip_and_sharing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    assert cache.get("k") is None
    cache.put("k", text="hi", model="m", tokens_in=3, tokens_out=1, latency_s=0.2)
    assert cache.get("k") == {"text": "hi", "model": "m", "tokens_in": 3, "tokens_out": 1, "latency_s": 0.2,
                              "truncated": False}
    other = ResponseCache(path)  # another process on the same file
    assert other.get("k")["text"] == "hi"  # type: ignore[index]
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()
    other.close()


def test_cache_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECONARENA_CACHE_DIR", str(tmp_path / "env"))
    assert resolve_cache_path(None) == tmp_path / "env" / "responses.sqlite"
    assert resolve_cache_path(tmp_path) == tmp_path / "responses.sqlite"
    assert resolve_cache_path(str(tmp_path / "x.db")) == tmp_path / "x.db"
    assert open_cache(tmp_path / "y.db") is open_cache(str(tmp_path / "y.db"))


def test_a_broken_cache_file_disables_the_cache_not_the_run(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    cache._db.execute("DROP TABLE responses")  # type: ignore[union-attr]
    assert cache.get("k") is None
    cache.put("k", text="x", model=None, tokens_in=None, tokens_out=None, latency_s=0)
    assert cache.get("k") is None


def test_zai_key_selects_the_international_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    import zai

    from econarena.agents.providers.zhipuai import ZhipuAIProvider

    monkeypatch.setenv("ZAI_API_KEY", "z-key")
    s = LLMSettings(model="glm-x")
    client = ZhipuAIProvider(s)._make_client(s, "z-key")
    assert isinstance(client, zai.ZaiClient) and str(client.base_url).startswith("https://api.z.ai/")
    monkeypatch.setenv("ZHIPUAI_API_KEY", "c-key")  # the first variable in the list wins
    client = ZhipuAIProvider(s)._make_client(s, "c-key")
    assert isinstance(client, zai.ZhipuAiClient) and "bigmodel.cn" in str(client.base_url)


def test_credentials_in_a_base_url_never_reach_files_or_errors(tmp_path: Path) -> None:
    from econarena.hosts.config import parse_experiment, resolved_toml

    url = "http://alice:s3cr3t-pass@127.0.0.1:9/v1?key=sk-url-SECRET-123"
    assert calls.url_secrets(url) == ["alice", "s3cr3t-pass", "sk-url-SECRET-123"]
    doc = {"experiment": {"name": "u", "game": "beauty_contest"}, "llm": {"base_url": url},
           "players": [{"agent": "openai", "model": "m", "base_url": url}, {"agent": "rational"}]}
    text = resolved_toml(parse_experiment(doc, "u.toml"))
    assert "s3cr3t-pass" not in text and "sk-url-SECRET-123" not in text and "127.0.0.1:9/v1" in text
    err = calls.redact(f"cannot reach {url}", None, *calls.url_secrets(url))
    assert "s3cr3t-pass" not in err and "sk-url-SECRET-123" not in err
