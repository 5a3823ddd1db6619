"""Reasoning with a local model: a tiny random-weight Llama whose chat template opens a ``<think>`` block
(Qwen3's manner). The template's thinking switch, the cap on thinking tokens, and the split of the reply are
checked against the raw generated token ids, and once end to end through the Host into decisions.jsonl."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).parent))
from conftest import experiment_dict, read_jsonl, run_experiment  # noqa: E402
from hf_fixtures import build_tiny_llama  # noqa: E402

from econarena.agents.base import Message  # noqa: E402
from econarena.agents.llm import LLMSettings, settings_problems  # noqa: E402
from econarena.agents.providers.hf import HFProvider  # noqa: E402

pytestmark = pytest.mark.timeout(120)

CHAT = [Message("system", "you are a rational player"), Message("user", "choose a number between 0 and 100")]


@pytest.fixture(scope="module")
def thinker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-thinker"), thinking=True)


def generate(path: Path, **kw: Any) -> tuple[Any, list[int], HFProvider]:
    """One reply and the raw token ids the model generated for it."""
    settings = LLMSettings(model=str(path), **{"max_tokens": 10, **kw})
    provider = HFProvider(settings)
    provider.load()
    raw: list[list[int]] = []
    real = provider._run_batch

    def spy(batch: list[Any]) -> list[list[int]]:
        out = real(batch)
        raw.extend(out)
        return out

    provider._run_batch = spy  # type: ignore[method-assign]
    g = asyncio.run(provider.generate(CHAT, settings))
    return g, raw[0], provider


def test_template_switch(thinker: Path) -> None:
    provider = HFProvider(LLMSettings(model=str(thinker)))
    provider.load()
    tok = provider._tokenizer
    on = tok.decode(provider.encode(CHAT, LLMSettings(reasoning_effort="high", max_tokens=9)))
    off = tok.decode(provider.encode(CHAT, LLMSettings(reasoning_effort="none")))
    assert on.rstrip().endswith("<think>") and off.rstrip().endswith("<think> </think>")
    assert provider._prompt(CHAT, LLMSettings(reasoning_effort="high", max_tokens=9))[1] is True
    assert provider._prompt(CHAT, LLMSettings(reasoning_effort="none"))[1] is False


def test_budget_forces_the_end_of_thinking(thinker: Path) -> None:
    g, tokens, p = generate(thinker, reasoning_tokens=3)
    start_id, end_id = p._think_ids
    assert end_id is not None and end_id in tokens
    close = tokens.index(end_id)
    assert close <= 3  # the model thought at most its budget: then </think> was forced
    assert g.reasoning_tokens == close and not g.unfinished
    assert g.reasoning == p._tokenizer.decode(tokens[:close], skip_special_tokens=True).strip()
    after = [t for t in tokens[close + 1:] if t not in p._eos]
    assert g.text == p._tokenizer.decode(after, skip_special_tokens=True).strip()
    assert "think>" not in g.text


def test_without_budget_the_reply_ends_inside_its_thinking(thinker: Path) -> None:
    g, tokens, p = generate(thinker, reasoning_effort="high", max_tokens=6)
    assert p._think_ids[1] not in tokens  # this random model never closes the block by itself
    assert (g.text, g.unfinished, g.reasoning_tokens) == ("", True, len([t for t in tokens if t not in p._eos]))
    assert g.reasoning == p._tokenizer.decode(tokens, skip_special_tokens=True).strip()


def test_thinking_off_is_all_answer(thinker: Path) -> None:
    g, tokens, p = generate(thinker, reasoning_effort="none")
    assert g.reasoning == "" and not g.unfinished
    assert g.text == p._tokenizer.decode([t for t in tokens if t not in p._eos], skip_special_tokens=True).strip()


def test_special_think_tokens_are_not_dropped(tmp_path: Path) -> None:
    path = build_tiny_llama(tmp_path / "special", thinking=True, special_think=True)
    g, tokens, p = generate(path, reasoning_tokens=2)
    assert p._special_think
    close = tokens.index(p._think_ids[1])
    assert close <= 2 and g.reasoning_tokens == close and "think>" not in g.text


def test_hf_refuses_structured_with_thinking(thinker: Path) -> None:
    s = LLMSettings(model=str(thinker), reasoning_effort="high", max_tokens=64, structured="format")
    assert any("structured" in p and "reasoning" in p for p in settings_problems("hf", s, "players[0] (L)"))


def test_host_records_reasoning_and_cuts_unfinished(thinker: Path, tmp_path: Path) -> None:
    """Two seats: one with a budget (it answers after its reasoning), one without (cut inside it)."""
    doc = experiment_dict("beauty_contest", [
        {"agent": "hf", "model": str(thinker), "label": "capped", "reasoning_tokens": 3, "max_tokens": 8},
        {"agent": "hf", "model": str(thinker), "label": "open", "reasoning_effort": "high", "max_tokens": 6},
        {"agent": "rational"}], sessions=1, runs=1)
    run_experiment(doc, tmp_path / "run")
    decisions = {d["label"]: d for d in read_jsonl(tmp_path / "run" / "decisions.jsonl")}
    capped, open_ = decisions["capped"], decisions["open"]
    assert capped["reasoning"] and capped["reasoning_tokens"] <= 3 and "think>" not in capped["response"]
    assert open_["violation"] == "truncated" and open_["truncated"] is True and open_["response"] == ""
    assert open_["reasoning"] and open_["reasoning_tokens"] == 6
    assert "before any answer" in open_["detail"]
    assert "reasoning" not in decisions["rational"]
    for d in (capped, open_):  # the reasoning is in no prompt
        assert all(d["reasoning"] not in m["content"] for m in d["messages"] or [])
