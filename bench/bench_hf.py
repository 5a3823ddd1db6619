"""Local model throughput: 16 simultaneous decisions of the bundled SmolLM2, batched vs one at a time.

Each decision is a realistic beauty-contest prompt (~300 tokens: public rules and history, then the
player's private details) with greedy decoding, so every mode should produce the same replies; generated
tokens per second are counted from the tokens actually produced. Batching with the shared prompt prefix
prefilled once is the provider's default; the run without prefix sharing shows what plain left-padded
batching gives. Goal: batched >= 5x one at a time on the 2-core reference machine.
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


async def play(provider: HFProvider, prompts: list[list[Message]]) -> tuple[list[Generation], float]:
    start = time.perf_counter()
    gens = await asyncio.gather(*(provider.generate(p, provider.settings) for p in prompts))
    return list(gens), time.perf_counter() - start


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


if __name__ == "__main__":
    main()
