"""The local Hugging Face provider: loading, chat templates, batching, sampling and the GGUF cache.

Almost everything runs on a tiny random Llama built by the test session itself (seconds, no hub).
One test, marked ``slow``, loads the real bundled SmolLM2 default and asks it for a short reply.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).parent))
from hf_fixtures import build_tiny_llama  # noqa: E402

from econarena.agents.base import AgentError, Message  # noqa: E402
from econarena.agents.llm import PROVIDERS, LLMSettings  # noqa: E402
from econarena.agents.providers import hf  # noqa: E402
from econarena.agents.providers.hf import HFProvider  # noqa: E402

pytestmark = pytest.mark.timeout(120)

PROMPTS = [
    "choose a number between 0 and 100",
    "bid your value",
    "you are a player in an economic game the winner is closest to two thirds of the average reply with json",
    "the highest bid wins",
    "round 3 player 2 choose a number",
    "reply with json only",
    "bid your value in a sealed bid auction the highest bid wins and pays the second price",
    "payoff",
]


def chat(prompt: str, system: str = "you are a rational player") -> list[Message]:
    return [Message("system", system), Message("user", prompt)]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def provider_for(path: Path, **kw: Any) -> HFProvider:
    settings = LLMSettings(model=str(path), max_tokens=kw.pop("max_tokens", 12), **kw)
    return HFProvider(settings)


def spy_generate(provider: HFProvider, delay_s: float = 0.0) -> list[int]:
    """Count model.generate() calls (and their batch sizes), optionally slowing each one down."""
    provider.load()
    sizes: list[int] = []
    real = provider._model.generate

    def generate(*args: Any, **kw: Any) -> Any:
        sizes.append(int(kw["input_ids"].shape[0]))
        time.sleep(delay_s)
        return real(*args, **kw)

    provider._model.generate = generate
    return sizes


async def run_all(provider: HFProvider, prompts: list[str], settings: LLMSettings | None = None) -> list[Any]:
    settings = settings or provider.settings
    return await asyncio.gather(*(provider.generate(chat(p), settings) for p in prompts))


async def gather_chats(provider: HFProvider, chats: list[list[Message]], settings: LLMSettings) -> list[Any]:
    return await asyncio.gather(*(provider.generate(c, settings) for c in chats))


def test_registry_finds_the_provider() -> None:
    assert PROVIDERS["hf"].load() is HFProvider


def test_loads_from_a_path_and_applies_the_chat_template(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    provider = provider_for(tiny_model, max_tokens=5)
    gen = asyncio.run(provider.generate(chat("bid your value"), provider.settings))
    tok = AutoTokenizer.from_pretrained(tiny_model)
    text = tok.apply_chat_template([m.to_dict() for m in chat("bid your value")], tokenize=False,
                                   add_generation_prompt=True)
    expected = tok(text, add_special_tokens=False)["input_ids"]
    assert provider.encode(chat("bid your value")) == expected
    assert tok.decode(expected).endswith("<|im_start|> assistant")
    assert "<|im_start|> system you are a rational player <|im_end|>" in tok.decode(expected)
    assert gen.tokens_in == len(expected)
    assert 1 <= gen.tokens_out <= 5
    assert gen.model == str(tiny_model)
    assert isinstance(gen.text, str) and gen.latency_s > 0
    assert provider.load_s is not None


def test_concurrent_calls_become_one_generate_call(tiny_model: Path) -> None:
    provider = provider_for(tiny_model)
    sizes = spy_generate(provider)
    gens = asyncio.run(run_all(provider, PROMPTS))
    assert sizes == [8]
    assert provider.stats.calls == 1 and list(provider.stats.sizes) == [8]
    assert all(g.raw["batch_size"] == 8 for g in gens)
    # latency is per decision: an eighth of the one batch's generate() time, not the batch's wall time
    assert len({g.raw["batch_wall_s"] for g in gens}) == 1
    assert all(g.latency_s == pytest.approx(g.raw["batch_wall_s"] / 8) for g in gens)
    assert all(g.raw["request_s"] >= g.raw["batch_wall_s"] > g.latency_s > 0 for g in gens)


def test_a_staggered_burst_still_forms_one_batch(tiny_model: Path) -> None:
    """Requests trickling in a few ms apart (cache lookups, rendering) keep the flush window open."""
    provider = provider_for(tiny_model)
    sizes = spy_generate(provider)

    async def trickle(i: int, prompt: str) -> Any:
        await asyncio.sleep(0.003 * i)
        return await provider.generate(chat(prompt), provider.settings)

    async def burst() -> list[Any]:
        return await asyncio.gather(*(trickle(i, p) for i, p in enumerate(PROMPTS[:6])))

    asyncio.run(burst())
    assert sizes == [6]


def test_batched_greedy_equals_one_at_a_time(tiny_model: Path) -> None:
    """Left padding plus the attention mask must not change what a request generates."""
    provider = provider_for(tiny_model, max_tokens=16, dtype="float64")
    batched = asyncio.run(run_all(provider, PROMPTS))
    assert list(provider.stats.sizes) == [8]

    async def one_at_a_time() -> list[Any]:
        return [await provider.generate(chat(p), provider.settings) for p in PROMPTS]

    single = asyncio.run(one_at_a_time())
    assert list(provider.stats.sizes) == [8] + [1] * 8
    assert [g.text for g in batched] == [g.text for g in single]
    assert [g.tokens_out for g in batched] == [g.tokens_out for g in single]
    assert [g.tokens_in for g in batched] == [g.tokens_in for g in single]


RULES = ("you are a player in an economic game choose a number between 0 and 100 the winner is closest to "
         "two thirds of the average reply with json only")


# the demo printed transformers' FutureWarning about past_key_values (renamed cache) to every user
@pytest.mark.filterwarnings("error::FutureWarning")
def test_shared_prompt_prefix_is_prefilled_once_without_changing_replies(tiny_model: Path) -> None:
    """Rows laid out as [shared rules][padding][own tokens] decode exactly as they would alone."""
    provider = provider_for(tiny_model, max_tokens=16, dtype="float64")
    own = ["player 1", "player 2 round 3 bid your value", "the highest bid wins and pays the second price",
           "payoff 50", "rational"]
    batched = asyncio.run(gather_chats(provider, [chat(p, RULES) for p in own], provider.settings))
    assert list(provider.stats.sizes) == [5]
    shared = provider.stats.shared_prefix_tokens // 4
    assert shared >= provider.min_shared_prefix  # the whole system turn and more
    hot = provider.settings.merged({"temperature": 1.0, "seed": 9})
    sampled = asyncio.run(gather_chats(provider, [chat(p, RULES) for p in own], hot))

    async def alone(settings: LLMSettings) -> list[Any]:
        return [await provider.generate(chat(p, RULES), settings) for p in own]

    assert [g.text for g in asyncio.run(alone(provider.settings))] == [g.text for g in batched]
    assert [g.text for g in asyncio.run(alone(hot))] == [g.text for g in sampled]
    assert provider.stats.shared_prefix_tokens == 2 * 4 * shared  # single calls share nothing


def test_max_batch_size_is_respected(tiny_model: Path) -> None:
    provider = provider_for(tiny_model, max_batch_size=3)
    sizes = spy_generate(provider)
    asyncio.run(run_all(provider, PROMPTS))
    assert sorted(sizes, reverse=True) == [3, 3, 2]


def test_different_settings_are_never_mixed(tiny_model: Path) -> None:
    provider = provider_for(tiny_model)
    provider.load()
    seen: list[set[tuple[Any, ...]]] = []
    real = provider._run_batch

    def spy(batch: list[Any]) -> list[list[int]]:
        seen.append({r.key for r in batch})
        return real(batch)

    provider._run_batch = spy  # type: ignore[method-assign]
    greedy = provider.settings
    hot = greedy.merged({"temperature": 0.8, "top_p": 0.9, "seed": 1})
    short = greedy.merged({"max_tokens": 3})

    async def mixed() -> list[Any]:
        calls = [provider.generate(chat(p), s) for p in PROMPTS[:4] for s in (greedy, hot, short)]
        return await asyncio.gather(*calls)

    gens = asyncio.run(mixed())
    assert len(seen) == 3 and all(len(keys) == 1 for keys in seen)
    assert all(g.raw["batch_size"] == 4 for g in gens)
    assert all(g.tokens_out <= 3 for g in gens[2::3])


def test_seeded_sampling_is_reproducible(tiny_model: Path) -> None:
    provider = provider_for(tiny_model, max_tokens=16, temperature=1.0, top_p=0.95, seed=42, dtype="float64")
    first = [g.text for g in asyncio.run(run_all(provider, PROMPTS))]
    again = [g.text for g in asyncio.run(run_all(provider, PROMPTS))]
    assert first == again
    # the draws belong to each request, so alone it samples what it sampled inside the batch
    alone = asyncio.run(provider.generate(chat(PROMPTS[2]), provider.settings))
    assert alone.text == first[2]
    other_seed = provider.settings.merged({"seed": 43})
    assert [g.text for g in asyncio.run(run_all(provider, PROMPTS, other_seed))] != first
    greedy = provider.settings.merged({"temperature": 0.0})
    assert [g.text for g in asyncio.run(run_all(provider, PROMPTS, greedy))] != first


def test_unseeded_sampling_varies(tiny_model: Path) -> None:
    provider = provider_for(tiny_model, max_tokens=16, temperature=1.0)
    a = [g.text for g in asyncio.run(run_all(provider, PROMPTS))]
    b = [g.text for g in asyncio.run(run_all(provider, PROMPTS))]
    assert a != b


def test_loop_keeps_accepting_requests_while_a_batch_runs(tiny_model: Path) -> None:
    provider = provider_for(tiny_model)
    sizes = spy_generate(provider, delay_s=0.3)

    async def waves() -> list[Any]:
        first = [asyncio.create_task(provider.generate(chat(p), provider.settings)) for p in PROMPTS[:4]]
        while not sizes:  # the first batch is now inside generate(), in the worker thread
            await asyncio.sleep(0.01)
        ticks = 0
        second = [asyncio.create_task(provider.generate(chat(p), provider.settings)) for p in PROMPTS[4:]]
        while not all(t.done() for t in first):
            ticks += 1
            await asyncio.sleep(0.01)
        assert ticks >= 5  # the loop ran while the model was busy
        return await asyncio.gather(*first, *second)

    asyncio.run(waves())
    assert sizes == [4, 4]


def test_tokens_are_counted_up_to_the_end_of_sequence(tiny_model: Path) -> None:
    provider = provider_for(tiny_model, max_tokens=4)
    provider.load()
    eos = provider._eos[0]
    assert provider._trim([5, 6, eos, provider._pad, provider._pad]) == [5, 6, eos]
    assert provider._trim([5, 6, 7]) == [5, 6, 7]
    gens = asyncio.run(run_all(provider, PROMPTS))
    assert all(1 <= g.tokens_out <= 4 for g in gens)
    assert all(g.tokens_in == len(provider.encode(chat(p))) for g, p in zip(gens, PROMPTS))


def test_take_batch_keeps_the_oldest_and_packs_similar_lengths() -> None:
    loop = asyncio.new_event_loop()
    try:
        def req(n: int, key: tuple[Any, ...] = (None, None, 8)) -> Any:
            return hf._Request(list(range(n)), key, None, loop.create_future(), 0.0)

        pending = [req(50), req(3), req(4), req(90), req(51), req(5), req(52, (0.5, None, 8)), req(49)]
        oldest = pending[0]
        batch = hf.take_batch(pending, 3)
        assert oldest in batch and sorted(len(r.ids) for r in batch) == [49, 50, 51]
        assert len(pending) == 5 and all(r not in pending for r in batch)
        pending[0].future.cancel()  # a cancelled caller is dropped, not generated for
        batch = hf.take_batch(pending, 8)
        assert sorted(len(r.ids) for r in batch) == [4, 5, 90]
        assert [len(r.ids) for r in pending] == [52]
    finally:
        loop.close()


def test_take_batch_keeps_games_with_their_own_prefix() -> None:
    """Two games' requests pending at once (a bench plays every game side by side): each batch holds one
    game's rows, which share its rules' tokens, not a mix that shares nothing."""
    loop = asyncio.new_event_loop()
    try:
        def req(game: int, player: int, rules: int = 200) -> Any:
            return hf._Request([7] + [1000 * game + t for t in range(rules)] + [player], (None, None, 8), None,
                               loop.create_future(), 0.0)

        pending = [req(g, p) for p in range(3) for g in (1, 2)]  # interleaved, as they arrive
        first = hf.take_batch(pending, 16)
        assert [r.ids[1] for r in first] == [1000] * 3 and len(pending) == 3
        assert hf._common_prefix([r.ids for r in first]) == 201
        assert [r.ids[1] for r in hf.take_batch(pending, 16)] == [2000] * 3 and not pending
        # short rules (less than split_gain tokens to gain): one batch, as before
        pending = [req(g, p, rules=20) for p in range(3) for g in (1, 2)]
        assert len(hf.take_batch(pending, 16)) == 6 and not pending
    finally:
        loop.close()


def test_failed_batch_reaches_every_caller(tiny_model: Path) -> None:
    provider = provider_for(tiny_model)
    provider.load()

    def boom(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("out of memory")

    provider._model.generate = boom

    async def three() -> list[Any]:
        calls = (provider.generate(chat(p), provider.settings) for p in PROMPTS[:3])
        return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(three())
    assert all(isinstance(r, RuntimeError) for r in results)


def test_offline_unknown_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    provider = HFProvider(LLMSettings(model="no-such-org/no-such-model"))
    with pytest.raises(AgentError, match="HF_HUB_OFFLINE"):
        asyncio.run(provider.generate(chat("hi"), provider.settings))


def test_offline_hub_id_not_in_the_cache_is_found_before_loading(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """It used to fail every decision as an API error (exit 3), which --resume retried in vain."""
    from econarena.agents.llm import settings_problems

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    found = settings_problems("hf", LLMSettings(model="no-such-org/no-such-model"), "players[0] (L)")
    assert len(found) == 1 and "HF_HUB_OFFLINE is set and the hub id is not in the" in found[0]
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert settings_problems("hf", LLMSettings(model="no-such-org/no-such-model"), "players[0] (L)") == []


def test_bad_dtype_is_reported(tiny_model: Path) -> None:
    with pytest.raises(AgentError, match="dtype"):
        provider_for(tiny_model, dtype="float7").load()


class _FakeModel:
    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def save_pretrained(self, path: Path, **kw: Any) -> None:
        (Path(path) / "model.safetensors").write_text("half")
        if self.fail:
            raise OSError("disk full (or the process was killed)")
        (Path(path) / "config.json").write_text("{}")


class _FakeTokenizer:
    def save_pretrained(self, path: Path) -> None:
        (Path(path) / "tokenizer.json").write_text("{}")


def test_conversion_cache_is_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "models" / "m-123"
    with pytest.raises(OSError):
        hf._save_atomically(_FakeModel(fail=True), _FakeTokenizer(), target)
    assert not target.exists() and list((tmp_path / "models").iterdir()) == []
    hf._save_atomically(_FakeModel(fail=False), _FakeTokenizer(), target)
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    hf._save_atomically(_FakeModel(fail=False), _FakeTokenizer(), target)  # losing a race is fine
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["m-123"]


def test_cache_dir_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ECONARENA_CACHE_DIR", str(tmp_path))
    assert hf.cache_root() == tmp_path
    assert hf.converted_dir(hf.bundled_gguf()).parent == tmp_path / "models"


@pytest.mark.slow
@pytest.mark.timeout(120, func_only=True)  # the one-time conversion is the session fixture's (conftest.py)
def test_smollm2_default_answers(bundled_model: Path) -> None:
    """The real bundled model: first use converts the GGUF into the user cache (the ``bundled_model`` fixture,
    once per session), later uses load the converted copy."""
    provider = HFProvider(LLMSettings(max_tokens=24, max_batch_size=4))
    assert provider.model_name == "SmolLM2-135M-Instruct"
    cached = (bundled_model / "config.json").exists()
    messages = [Message("system", "You are a helpful assistant. Answer briefly."),
                Message("user", "What is the capital of France?")]

    async def two() -> list[Any]:
        return await asyncio.gather(*(provider.generate(messages, provider.settings) for _ in range(2)))

    gens = asyncio.run(two())
    print(f"SmolLM2 load {provider.load_s:.1f}s ({'cached copy' if cached else 'converted GGUF'}): "
          f"{gens[0].text!r}")
    assert "paris" in gens[0].text.lower()
    assert gens[0].text == gens[1].text and gens[0].raw["batch_size"] == 2
    assert gens[0].tokens_in > 10 and 0 < gens[0].tokens_out <= 24
    assert (hf.converted_dir(hf.bundled_gguf()) / "config.json").exists()


# -- constrained decoding (structured = "format" / "strict") -------------------------------------------

@pytest.fixture(scope="session")
def byte_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama whose byte-level tokenizer can spell any JSON (the word-level one cannot)."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-bytes"), byte_level=True)


def _schemas() -> list[dict[str, Any] | None]:
    from econarena.games.base import ActionField, ActionSpec
    from econarena.games.schema import json_schema

    answer = ActionSpec((ActionField("answer", "number", "your number", 0.0, 100.0),))
    bid = ActionSpec((ActionField("bid", "number", "your bid", 0.0, 37.5),))
    stay = ActionSpec((ActionField("decision", "choice", "stay or drop", choices=("stay", "drop")),))
    return [json_schema(answer, "format"), json_schema(bid, "strict"), json_schema(stay, "format"),
            json_schema(answer, "strict", reasoning=True, reasoning_chars=30), None]


def _follows(text: str, schema: dict[str, Any]) -> None:
    """The reply is compact JSON with exactly the schema's keys, in order, of the right types and sizes."""
    import json

    obj = json.loads(text)
    assert list(obj) == schema["required"] == list(schema["properties"]), text
    assert " " not in text.replace(obj.get("reasoning", ""), ""), text  # no free whitespace
    for key, sub in schema["properties"].items():
        value = obj[key]
        if sub["type"] == "number":
            assert isinstance(value, (int, float)) and not isinstance(value, bool), text
            assert sub["minimum"] <= value <= sub["maximum"], text
        elif "enum" in sub:
            assert value in sub["enum"], text
        else:
            assert isinstance(value, str) and len(value) <= sub["maxLength"], text


def test_constrained_replies_always_follow_their_schema(byte_model: Path) -> None:
    """Random weights want to emit garbage; the grammar must still make every reply valid JSON."""
    provider = provider_for(byte_model, max_tokens=60)
    schemas = _schemas()

    async def batch(settings: LLMSettings) -> list[Any]:
        calls = [provider.generate(chat(p), settings, schemas[i % len(schemas)]) for i, p in enumerate(PROMPTS)]
        return await asyncio.gather(*calls)

    for settings in (provider.settings, provider.settings.merged({"temperature": 1.3, "seed": 5})):
        gens = asyncio.run(batch(settings))
        for i, g in enumerate(gens):
            schema = schemas[i % len(schemas)]
            if schema is None:
                with pytest.raises(ValueError):  # the unconstrained row is left to the random model
                    import json

                    json.loads(g.text)
            else:
                _follows(g.text, schema)
                assert g.tokens_out < 60  # it stopped after the object rather than at the limit
    assert list(provider.stats.sizes) == [8, 8]
    assert provider.stats.grammar_steps > 0 and 0 < provider.stats.grammar_s < provider.stats.generate_s


def test_constrained_batched_greedy_equals_one_at_a_time(byte_model: Path) -> None:
    """Per-row matchers with different schemas (and a free row) composed with padding and the shared prefix."""
    provider = provider_for(byte_model, max_tokens=80, dtype="float64")
    schemas = _schemas()
    own = ["player 1", "player 2 round 3 bid your value", "the highest bid wins", "payoff 50", "rational"]
    chats = [chat(p, RULES) for p in own]

    async def together() -> list[Any]:
        return await asyncio.gather(*(provider.generate(c, provider.settings, s) for c, s in zip(chats, schemas)))

    async def alone() -> list[Any]:
        return [await provider.generate(c, provider.settings, s) for c, s in zip(chats, schemas)]

    batched = asyncio.run(together())
    assert list(provider.stats.sizes) == [5] and provider.stats.shared_prefix_tokens > 0
    single = asyncio.run(alone())
    assert [g.text for g in batched] == [g.text for g in single]
    assert [g.tokens_out for g in batched] == [g.tokens_out for g in single]
    for g, s in zip(batched[:4], schemas[:4]):
        assert s is not None
        _follows(g.text, s)


def test_threads_setting_reaches_torch(tiny_model: Path) -> None:
    import torch

    before = torch.get_num_threads()
    try:
        provider_for(tiny_model, threads=1).load()
        assert torch.get_num_threads() == 1
        assert hf.cpu_threads(None) == max(1, min(4, (os.cpu_count() or 1) // 2)) and hf.cpu_threads(3) == 3
    finally:
        torch.set_num_threads(before)


def test_bad_local_model_settings_are_found_before_loading(tmp_path: Path) -> None:
    from econarena.agents.llm import settings_problems

    def problems(**kw: Any) -> list[str]:
        return settings_problems("hf", LLMSettings(**kw), "players[0] (L)")

    assert problems() == []
    assert "dtype = 'float7'" in problems(dtype="float7")[0]
    assert "no such file or folder" in problems(model=str(tmp_path / "missing.gguf"))[0]
    assert "no such file or folder" in problems(model="./nowhere/model")[0]
    (tmp_path / "empty").mkdir()
    assert "no config.json" in problems(model=str(tmp_path / "empty"))[0]
    assert problems(model="org/name") == []  # a hub id: the loader (and HF_HUB_OFFLINE) decide
    (tmp_path / "exp.toml").write_text("[experiment]\n")
    assert "a file that is not a .gguf model" in problems(model=str(tmp_path / "exp.toml"))[0]
    assert "expected cpu, cuda" in problems(device="gpu")[0]
    import torch

    if not torch.cuda.is_available():
        assert "torch sees no cuda device" in problems(device="cuda")[0]


def test_validate_reports_a_bad_local_model_without_loading(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from econarena.cli import main

    f = tmp_path / "bad.toml"
    f.write_text('[experiment]\ngame = "beauty_contest"\n[[players]]\nagent = "hf"\ndtype = "float7"\n'
                 'device = "gpu"\n[[players]]\nagent = "random"\n')
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "dtype = 'float7'" in err and "device = 'gpu'" in err and "Traceback" not in err
    assert main(["run", str(f), "--out", str(tmp_path / "out"), "--quiet"]) == 2  # before any game starts
    assert "device = 'gpu'" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_round_game_batches_every_seats_turn_and_shares_the_prefix(byte_model: Path, tmp_path: Path) -> None:
    """Ten seats of one local model through three rounds of Guess 2/3 (growing per-seat conversations):
    each round's ten decisions go to the model as one batch, whose common prompt prefix (system prompt and
    rules) is prefilled once, and every constrained reply is valid."""
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    doc = {"experiment": {"name": "conv", "game": "guessing_game", "sessions": 1, "seed": 3},
           "game": {"rounds": 3},
           "players": [{"agent": "hf", "model": str(byte_model), "count": 10, "max_tokens": 24,
                        "temperature": 0.0, "structured": "format"}]}
    host = Host(parse_experiment(doc, "t.toml"), tmp_path / "out", HostOptions(concurrency=16, quiet=True))
    result = asyncio.run(host.run())
    assert result.status == "complete"
    provider = host.agents[0][0].provider
    assert list(provider.stats.sizes) == [10, 10, 10]
    assert provider.stats.shared_prefix_tokens > 0
    decisions = [json.loads(line) for line in (tmp_path / "out" / "decisions.jsonl").read_text().splitlines()]
    assert len(decisions) == 30 and all(d["violation"] in (None, "rule_violation") for d in decisions)


def test_a_reply_that_spends_every_token_is_marked_cut(tiny_model: Path) -> None:
    """No end token within max_tokens: the provider says the reply was cut (the Host records it apart)."""
    provider = provider_for(tiny_model, max_tokens=4)
    gens = asyncio.run(run_all(provider, PROMPTS))
    assert all(not g.truncated for g in gens if g.tokens_out < 4)  # these ended with the end token
    assert any(g.truncated for g in gens)  # random weights rarely pick the end token: greedy, all 4 here
