"""A real OpenAI-compatible server, not our fake: ``transformers serve`` on 127.0.0.1 with the bundled
SmolLM2 (the safetensors copy the hf provider converts from the GGUF; nothing is downloaded), played
through ``agent = "openai"`` with ``base_url``. Also checks that the server's own 400 message reaches the
error, and that a stopped server reads as a refused connection."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from econarena.agents.base import Message  # noqa: E402
from econarena.agents.calls import CallError  # noqa: E402
from econarena.agents.llm import PROVIDERS, LLMSettings, RuntimeOptions, close_all  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420),
              pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(bundled_model: Path) -> Iterator[tuple[str, str]]:
    folder = bundled_model  # converted once per session (conftest.py)
    port = _free_port()
    cli = Path(sys.executable).parent / "transformers"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen([str(cli), "serve", str(folder), "--host", "127.0.0.1", "--port", str(port),
                                 "--device", "cpu", "--dtype", "float32", "--log-level", "warning"],
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    with urllib.request.urlopen(url + "/health", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"transformers serve did not start: {log.read()[-2000:]}")
                time.sleep(0.5)
            yield url, str(folder)
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def test_a_short_game_through_the_openai_path(served: tuple[str, str], tmp_path: Path) -> None:
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions, preflight_experiment

    url, model = served
    player = {"agent": "openai", "label": "served-SmolLM2", "model": model, "base_url": url + "/v1",
              "max_tokens": 24, "timeout_s": 240, "max_retries": 1, "structured": "format"}
    exp = parse_experiment({"experiment": {"name": "served", "game": "beauty_contest", "sessions": 2},
                            "game": {"upper_bound": 100}, "players": [player, {"agent": "level_k", "k": 1}]},
                           "served.toml")
    assert preflight_experiment(exp) == []  # a loopback server needs no key
    result = asyncio.run(Host(exp, tmp_path / "served",
                              HostOptions(quiet=True, runtime=RuntimeOptions(cache=False))).run())
    assert result.status == "complete"
    lines = [json.loads(x) for x in (tmp_path / "served" / "decisions.jsonl").read_text().splitlines()]
    served_lines = [d for d in lines if d["label"] == "served-SmolLM2"]
    assert len(served_lines) == 2
    for d in served_lines:
        assert d["error"] is None and d["response"].strip()  # a real reply (prose: serve ignores the schema)
        assert d["tokens_in"] > 50 and 0 < d["tokens_out"] <= 24 and d["structured"] == "format"


def test_the_servers_400_detail_and_a_stopped_server(served: tuple[str, str]) -> None:
    url, _ = served
    s = LLMSettings(model="no-such-model", base_url=url + "/v1", max_retries=0, timeout_s=60)

    async def ask(settings: LLMSettings) -> None:
        p = PROVIDERS["openai"].load()(settings)
        try:
            await p.generate([Message("user", "hi")], settings)
        finally:
            await p.aclose()

    with pytest.raises(CallError) as err:
        asyncio.run(ask(s))
    assert "HTTP 400" in str(err.value) and "no-such-model" in str(err.value)
    assert "pinned" in str(err.value)  # transformers serve's own words, from its `detail`
    closed = s.merged({"base_url": f"http://127.0.0.1:{_free_port()}/v1"})
    with pytest.raises(CallError, match="connection refused"):
        asyncio.run(ask(closed))
    asyncio.run(close_all())
