"""Shared fixtures for the core tests: build experiments from dicts, run them, read the run directory."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import tomli_w

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))  # the test helper modules (fakeservers, hf_fixtures, ...)


def pytest_configure(config: pytest.Config) -> None:
    """Keep every test's response cache and converted models out of the user's real cache directory."""
    import tempfile

    os.environ["ECONARENA_CACHE_DIR"] = tempfile.mkdtemp(prefix="econarena-test-cache-")
    # no process writing each `econarena run`'s columnar copy beside it (a second of imports per run, on a
    # machine the suite shares): tests/test_follow.py turns it on where it is the subject
    os.environ.setdefault("ECONARENA_FOLLOW", "off")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Per-test timeouts (a ``timeout`` marker, else the ini's) stretched by the machine's measured slowness
    (tests/timing.py), as the wall and CPU budgets are: a test that needs 100 s on the reference machine is not
    killed at 120 s on a machine three times slower or loaded by other jobs. Runs before pytest-timeout
    arms its timer (``tryfirst``), by putting the stretched marker in front of the item's own."""
    _stretch_timeout(item)
    yield


def _stretch_timeout(item: pytest.Item) -> None:
    from timing import slowness

    marker = item.get_closest_marker("timeout")
    kwargs = dict(marker.kwargs) if marker is not None else {}
    base = kwargs.pop("timeout", None)
    if marker is not None and marker.args:
        base = marker.args[0]
    if base is None:
        base = getattr(item.config, "_env_timeout", None)  # the ini's timeout, as pytest-timeout read it
    if not base or base <= 0:
        return  # no timeout, or disabled
    factor = slowness()
    if factor > 1:
        item.add_marker(pytest.mark.timeout(round(base * factor, 1), **kwargs), append=False)


@pytest.fixture(scope="session")
def bundled_model() -> Path:
    """The bundled SmolLM2, converted from its GGUF once per test session (into the session's cache directory):
    the one-time conversion (20-30 s, minutes under load) is paid here, not inside the first test's timeout
    (the tests that use it time their own function only: ``timeout(..., func_only=True)``)."""
    pytest.importorskip("torch", reason="the bundled model needs torch: make install")
    from econarena.agents.llm import LLMSettings
    from econarena.agents.providers import hf

    folder = hf.converted_dir(hf.bundled_gguf())
    if not (folder / "config.json").exists():
        hf.HFProvider(LLMSettings()).load()
    assert (folder / "config.json").exists()
    return folder


def pytest_unconfigure(config: pytest.Config) -> None:
    """The converted SmolLM2 copy alone is ~0.5 GB: never leave it behind in /tmp."""
    import shutil

    path = os.environ.get("ECONARENA_CACHE_DIR", "")
    if "econarena-test-cache-" in path:
        shutil.rmtree(path, ignore_errors=True)
ECONARENA = str(Path(sys.executable).with_name("econarena"))


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """One real local Ray instance (2 CPUs) for every Ray test of the session, shut down at the end."""
    import logging

    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'econarena[ray]' (make install)")
    if not ray.is_initialized():
        # workers read API keys from their own environment: the golden LLM experiments name GOLDEN_KEY;
        # "local": an instance of our own even where another `ray start` cluster runs on this machine
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING,
                 runtime_env={"env_vars": {"GOLDEN_KEY": "sk-golden-test"}})
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    """A fake LLM server on 127.0.0.1 (tests/fakeservers.py), one per test module."""
    from fakeservers import FakeLLMServer

    srv = FakeLLMServer().start()
    yield srv
    srv.stop()


@pytest.fixture(params=["lean", "sdk"])
def openai_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """An ``agent = "openai"`` test run on both request paths: the lean aiohttp client that base_url servers
    get, and the OpenAI SDK that api.openai.com keeps (agents/providers/openai.py); no behaviour of one may
    be missing from the other. A test parametrized over providers (``name``) runs the SDK variant for openai
    only (see :func:`pytest_collection_modifyitems`)."""
    monkeypatch.setenv("ECONARENA_OPENAI_CLIENT", request.param)
    return str(request.param)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop the ``openai_path=sdk`` variant of a test whose provider is not openai: it would repeat the lean one."""
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        other = params.get("openai_path") == "sdk" and params.get("name", "openai") != "openai"
        (drop if other else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def experiment_dict(game: str, players: list[dict[str, Any]], params: dict[str, Any] | None = None,
                    **experiment: Any) -> dict[str, Any]:
    """A parsed TOML document: ``[experiment]`` from keywords, ``[game]`` from ``params``."""
    return {"experiment": {"name": "t", "game": game, **experiment}, "game": dict(params or {}),
            "players": players}


def to_toml(doc: dict[str, Any]) -> str:
    """The TOML text of a test document, written by tomli-w (the writer the package depends on)."""
    return tomli_w.dumps(doc)


def run_experiment(doc: dict[str, Any], out: Path, *, concurrency: int = 4):  # noqa: ANN201
    """Validate and play ``doc`` in-process; returns the Host's result."""
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    exp = parse_experiment(doc, "test.toml")
    return asyncio.run(Host(exp, out, HostOptions(concurrency=concurrency, quiet=True)).run())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def sorted_runs(out: Path) -> list[dict[str, Any]]:
    return sorted(read_jsonl(out / "runs.jsonl"), key=lambda r: (r["lineup"], r["session"], r["run"]))


def sorted_decisions(out: Path) -> list[dict[str, Any]]:
    return sorted(read_jsonl(out / "decisions.jsonl"),
                  key=lambda d: (d["lineup"], d["session"], d["run"], d["round"], d["player"]))


def cli(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``econarena ARGS`` in a subprocess (no API keys in its environment)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([ECONARENA, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)  # never the runner's terminal: a background job must not stop


@pytest.fixture
def arena() -> SimpleNamespace:
    """The helpers above (tests run with --import-mode=importlib, so conftest is not importable)."""
    return SimpleNamespace(experiment_dict=experiment_dict, to_toml=to_toml, run_experiment=run_experiment,
                           read_jsonl=read_jsonl, sorted_runs=sorted_runs, sorted_decisions=sorted_decisions,
                           cli=cli, ECONARENA=ECONARENA, REPO=REPO)
