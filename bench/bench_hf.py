"""Local model throughput: 16 simultaneous decisions of the bundled SmolLM2, batched vs one at a time.

Each decision is a realistic beauty-contest prompt (~300 tokens: public rules and history, then the
player's private details) with greedy decoding, so every mode should produce the same replies; generated
tokens per second are counted from the tokens actually produced. Batching with the shared prompt prefix
prefilled once is the provider's default; the run without prefix sharing shows what plain left-padded
batching gives. Goal: batched >= 5x one at a time on the 2-core reference machine.

Constrained decoding (``structured = "format"``): the same 16 decisions batched under the beauty contest's
reply schema; the grammar's share of the decode time (matching plus masking, per step of 16 rows) is the
cost per token. Goal: under 5%.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from econarena.agents.base import Message
from econarena.agents.llm import Generation, LLMSettings
from econarena.agents.providers import hf
from econarena.agents.providers.hf import HFProvider

RULES = """You are playing a guessing game (a "beauty contest") with {n} players, including you.

Rules:
- Every player privately chooses a whole number between 0 and 100, inclusive.
- The target is two thirds (2/3) of the average of all chosen numbers.
- The player whose number is closest to the target wins a prize of 100 points. If several players are
  equally close, they share the prize equally. Everyone else gets 0 points.
- The game lasts 10 rounds. After each round every player sees the average, the target and the winning
  numbers, but not who chose them.

This is round {round}. History of previous rounds:
{history}

Think about what the other players are likely to choose, and what they think you will choose. Give your
reasoning in at most two short sentences, then answer on the last line with JSON only, exactly in this
format: {{"number": <integer between 0 and 100>}}

You are player {player}. Your own previous choices: {own}."""


def decision(player: int, players: int, round_: int = 3) -> list[Message]:
    """Public rules and history shared by everyone, private details last (as the Host renders them)."""
    averages = [50.0 - 7.5 * r for r in range(1, round_)]
    history = "\n".join(f"- Round {r}: average {a:.1f}, target {a * 2 / 3:.1f}, winning number {round(a * 2 / 3)}"
                        for r, a in enumerate(averages, start=1))
    own = ", ".join(str((37 * player + 11 * r) % 60 + 10) for r in range(1, round_))
    return [
        Message("system", "You are a careful, strategic player in an economic experiment."),
        Message("user", RULES.format(n=players, round=round_, history=history, player=player + 1, own=own)),
    ]


async def play(provider: HFProvider, prompts: list[list[Message]],
               schema: dict | None = None) -> tuple[list[Generation], float]:
    start = time.perf_counter()
    gens = await asyncio.gather(*(provider.generate(p, provider.settings, schema) for p in prompts))
    return list(gens), time.perf_counter() - start


def constrained(provider: HFProvider, prompts: list[list[Message]]) -> None:
    """Cost of the grammar per decode step at batch size len(prompts), and how valid the replies are."""
    import json

    from econarena.games.base import ActionField, ActionSpec
    from econarena.games.schema import json_schema

    schema = json_schema(ActionSpec((ActionField("number", "number", "your number", 0.0, 100.0),)), "format")
    provider.max_batch_size, provider.share_prefix = len(prompts), True
    asyncio.run(play(provider, prompts[:2], schema))  # compiles the grammar (once per schema)
    stats = provider.stats
    before = (stats.generate_s, stats.grammar_s, stats.grammar_steps)
    gens, secs = asyncio.run(play(provider, prompts, schema))
    gen_s, grammar_s, steps = (a - b for a, b in zip((stats.generate_s, stats.grammar_s, stats.grammar_steps),
                                                     before))
    # the prefill (one step, no decoding) of the same batch, so the share is of decode time alone
    one = provider.settings.merged({"max_tokens": 1})
    t0 = stats.generate_s

    async def prefill_only() -> None:
        await asyncio.gather(*(provider.generate(p, one, schema) for p in prompts))

    asyncio.run(prefill_only())
    prefill_s = stats.generate_s - t0
    decode_step_s = (gen_s - prefill_s) / max(steps - 1, 1)
    tokens = sum(g.tokens_out or 0 for g in gens)
    valid = sum(1 for g in gens if _is_json(g.text, json))
    print(f"hf {'batched, structured=format':>26}: {len(gens)} decisions, {tokens} tokens generated in {secs:.1f}s "
          f"= {tokens / secs:.1f} tokens/s; {valid}/{len(gens)} replies are JSON")
    per_step = grammar_s / max(steps, 1)
    print(f"hf grammar cost per token at batch {len(prompts)}: {1000 * per_step:.2f} ms per decode step of "
          f"{1000 * decode_step_s:.0f} ms = {100 * per_step / decode_step_s:.2f}% (goal < 5%); prefill "
          f"{prefill_s:.1f}s; schema compiled once in {1000 * stats.compile_s:.0f} ms")


def _is_json(text: str, json: object) -> bool:
    try:
        return isinstance(json.loads(text), dict)  # type: ignore[attr-defined]
    except ValueError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--decisions", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=48)
    args = ap.parse_args()

    cached = (hf.converted_dir(hf.bundled_gguf()) / "config.json").exists()
    provider = HFProvider(LLMSettings(max_tokens=args.max_tokens, max_batch_size=args.decisions))
    provider.load()
    print(f"hf: loaded {provider.model_name} in {provider.load_s:.1f}s "
          f"({'cached converted copy' if cached else 'first use: GGUF converted and cached'})")
    prompts = [decision(i, args.decisions) for i in range(args.decisions)]
    asyncio.run(play(provider, prompts[:2]))  # warm-up: kernels, allocator

    runs = (("batched", args.decisions, True), ("batched, no prefix sharing", args.decisions, False),
            ("one at a time", 1, True))
    results = {}
    for label, size, share in runs:
        provider.max_batch_size, provider.share_prefix = size, share
        gens, secs = asyncio.run(play(provider, prompts))
        tokens = sum(g.tokens_out or 0 for g in gens)
        results[label] = (gens, tokens / secs)
        print(f"hf {label:>26}: {len(gens)} decisions x {sum(g.tokens_in or 0 for g in gens) / len(gens):.0f} "
              f"prompt tokens, {tokens} tokens generated in {secs:.1f}s = {tokens / secs:.1f} tokens/s")

    single, single_rate = results["one at a time"]
    for label in ("batched", "batched, no prefix sharing"):
        gens, rate = results[label]
        same = sum(a.text == b.text for a, b in zip(gens, single))
        print(f"hf {label} / one at a time: {rate / single_rate:.1f}x (goal >= 5x); "
              f"identical greedy replies: {same}/{len(gens)}")
    print(f"hf sample reply: {results['batched'][0][0].text!r}")
    constrained(provider, prompts)


if __name__ == "__main__":
    main()
