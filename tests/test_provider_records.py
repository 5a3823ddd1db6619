"""One record per provider (agents/providers/__init__.py) holds every fact read before its SDK loads: the key
lookup, the reasoning checks, the preflight and the listing read it and nothing else; the SDK's minimum
version is checked when the class loads."""

from __future__ import annotations

import ast
import configparser
import dataclasses
import importlib.metadata
import re
from pathlib import Path

import pytest

from econarena.agents import keys
from econarena.agents.base import AgentError
from econarena.agents.effort import reasoning_problems
from econarena.agents.preflight import preflight
from econarena.agents.providers import PROVIDERS, RECORDS, Accepts, check_sdk, older
from econarena.agents.settings import LLMSettings

REPO = Path(__file__).resolve().parent.parent
NAMES = sorted(PROVIDERS)


@pytest.mark.parametrize("name", NAMES)
def test_every_fact_of_a_provider_comes_from_its_record(name: str, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Change the record alone, and the key lookup, the reasoning check, the preflight and the listing all
    follow: no second table holds any of it."""
    forged = dataclasses.replace(
        PROVIDERS[name], description=f"forged {name}", extra=f"extra_{name}", key_envs=(f"FORGED_KEY_{name}",),
        sdk_modules=(f"no_such_sdk_{name}",),
        accepts=Accepts(("low",), False, note=f"what the forged {name} says"))
    monkeypatch.setitem(PROVIDERS, name, forged)
    monkeypatch.setenv(f"FORGED_KEY_{name}", f"secret-value-of-{name}")
    settings = LLMSettings(model="m")

    assert keys.key_envs(name, settings) == (f"FORGED_KEY_{name}",)
    assert keys.api_key(name, settings) == f"secret-value-of-{name}" == keys.key_value(name)
    assert f"secret-value-of-{name}" in keys.known_keys()

    effort = LLMSettings(model="m", reasoning_effort="high", max_tokens=4000)
    assert reasoning_problems(name, effort, "p") == [
        f"p: reasoning_effort = \"high\" is not available for agent '{name}' (what the forged {name} says); "
        "use one of low"]

    grammar = dataclasses.replace(forged, accepts=Accepts(("high",), True, effort_or_budget=True,
                                                          structured_reasoning=False))
    monkeypatch.setitem(PROVIDERS, name, grammar)
    both = LLMSettings(model="m", reasoning_effort="high", reasoning_tokens=100, max_tokens=4000, structured="format")
    got = reasoning_problems(name, both, "p")
    assert len(got) == 2 and got[0].startswith(f"p: agent '{name}' takes reasoning_effort or reasoning_tokens")
    assert got[1].startswith(f"p: structured = \"format\" with a reasoning setting is not available for agent "
                             f"'{name}': the grammar")
    monkeypatch.setitem(PROVIDERS, name, forged)

    problems = preflight(name, settings, "p")
    assert problems[0] == f"p: agent '{name}' needs no_such_sdk_{name}: pip install 'econarena[extra_{name}]'"

    from econarena.cli import main

    assert main(["list"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith(name + " "))
    assert line.split(None, 1)[1] == (f"forged {name}; pip install 'econarena[extra_{name}]' "
                                      f"[key: FORGED_KEY_{name}]")


def test_no_provider_class_restates_a_fact_of_its_record() -> None:
    """The class attributes extra, sdk_modules and key_envs were a fourth copy nothing read."""
    files = [*sorted((REPO / "agents" / "providers").glob("*.py")), REPO / "agents" / "settings.py",
             REPO / "agents" / "cluster.py"]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name != "ProviderRecord":
                for stmt in node.body:
                    target = stmt.target if isinstance(stmt, ast.AnnAssign) else None
                    assert not (isinstance(target, ast.Name) and target.id in ("extra", "sdk_modules", "key_envs")), \
                        f"{path.name}: {node.name}.{target.id if isinstance(target, ast.Name) else ''}"
    assert not hasattr(keys, "KEY_ENVS")
    from econarena.agents import effort

    assert not hasattr(effort, "ACCEPTS")


def test_the_records_hold_the_facts_they_held_before() -> None:
    """The values moved from the four places, unchanged (written out here by hand); a provider added later
    is held by its own tests."""
    moved = ("openai", "anthropic", "google", "zhipuai", "hf")
    got = {r.name: (r.extra, r.sdk_modules, r.key_envs, r.accepts.efforts, r.accepts.budget, r.accepts.min_budget,
                    r.accepts.effort_or_budget, r.accepts.structured_reasoning, r.needs_model, r.structured)
           for r in RECORDS if r.name in moved}
    every = ("none", "minimal", "low", "medium", "high")
    assert got == {
        "openai": ("openai", ("openai",), ("OPENAI_API_KEY",), every, False, 1, False, True, True,
                   ("format", "strict")),
        "anthropic": ("anthropic", ("anthropic",), ("ANTHROPIC_API_KEY",), ("none", "low", "medium", "high"), True,
                      1024, True, True, True, ("format",)),
        "google": ("google", ("google.genai",), ("GEMINI_API_KEY", "GOOGLE_API_KEY"), every, True, 1, True, True,
                   True, ("format", "strict")),
        "zhipuai": ("zhipuai", ("zai",), ("ZHIPUAI_API_KEY", "ZAI_API_KEY"), every, False, 1, False, True, True,
                    ("format",)),
        "hf": ("hf", ("torch", "transformers"), (), every, True, 1, False, False, False, ("format", "strict")),
    }


def test_each_records_minimum_is_its_extras_minimum() -> None:
    """setup.cfg's extra installs what the record checks: the two minimums cannot drift apart."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    extras = cfg["options.extras_require"]
    for record in RECORDS:
        pins = {}
        for line in extras[record.extra].splitlines():
            m = re.match(r"\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][^\s;,]*)", line)
            if m:
                pins[m.group(1)] = m.group(2)
        assert record.sdk_min, record.name
        for dist, minimum in record.sdk_min:
            assert pins.get(dist) == minimum, (record.name, dist, pins)


@pytest.mark.parametrize(("installed", "minimum", "expected"), [
    ("1.9.3", "2.0", True), ("2.0", "2.0", False), ("2.0.0", "2", False), ("2.13.0+cpu", "2.2", False),
    ("0.0.3", "0.0.4", True), ("0.0.10", "0.0.4", False), ("4.50.0.dev0", "4.50", False), ("4.49.9", "4.50", True),
])
def test_versions_compare_by_their_release_numbers(installed: str, minimum: str, expected: bool) -> None:
    assert older(installed, minimum) is expected


def test_an_old_sdk_is_refused_at_load_naming_both_versions_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.version

    def version(dist: str) -> str:
        return "1.9.3" if dist == "openai" else real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(AgentError) as caught:
        PROVIDERS["openai"].load()
    assert str(caught.value) == ("agent 'openai' needs openai >= 2.0, but openai 1.9.3 is installed: "
                                 "pip install 'openai>=2.0'")


def test_an_old_sdk_found_in_a_real_distributions_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution's metadata earlier on sys.path is the installed version importlib reads: the check and
    the preflight both name it."""
    info = tmp_path / "anthropic-0.49.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: anthropic\nVersion: 0.49.1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert importlib.metadata.version("anthropic") == "0.49.1"
    message = ("agent 'anthropic' needs anthropic >= 0.50, but anthropic 0.49.1 is installed: "
               "pip install 'anthropic>=0.50'")
    with pytest.raises(AgentError, match=re.escape(message)):
        check_sdk(PROVIDERS["anthropic"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    assert f"p: {message}" in preflight("anthropic", LLMSettings(model="m"), "p")


def test_an_sdk_that_is_not_installed_is_left_to_the_import(monkeypatch: pytest.MonkeyPatch) -> None:
    def version(dist: str) -> str:
        raise importlib.metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)
    check_sdk(PROVIDERS["google"])  # no version to compare: the preflight names the missing module instead


def test_the_installed_sdks_pass_their_minimums() -> None:
    for record in RECORDS:
        check_sdk(record)
