"""Local model throughput: 16 simultaneous decisions of the bundled SmolLM2, batched vs one at a time.

Each decision is a realistic beauty-contest prompt (~250 tokens, slightly different per player) with
greedy decoding, so both modes must produce the same replies; generated tokens per second are counted
from the tokens actually produced. Goal: batched >= 5x one at a time on the 2-core reference machine.
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
- All choices are revealed at the same time.
- The target is two thirds (2/3) of the average of all chosen numbers.
- The player whose number is closest to the target wins a prize of 100 points. If several players are
  equally close, they share the prize equally. Everyone else gets 0 points.
- The game lasts 10 rounds. After each round every player sees the average, the target and the winning
  numbers, but not who chose them.

You are player {player}. This is round {round}.

History of previous rounds:
{history}

Think about what the other players are likely to choose, and what they think you will choose. Give your
reasoning in at most two short sentences, then answer on the last line with JSON only, exactly in this
format: {{"number": <integer between 0 and 100>}}"""


def decision(player: int, players: int) -> list[Message]:
    rounds = 1 + player % 3  # histories of different lengths, as in a real session
    history = "\n".join(
        f"- Round {r}: average {50 - 9 * r - player % 4:.1f}, target {(50 - 9 * r - player % 4) * 2 / 3:.1f}, "
        f"winning number {int((50 - 9 * r) * 2 / 3)}"
        for r in range(1, rounds + 1)
    )
    return [
        Message("system", "You are a careful, strategic player in an economic experiment."),
        Message("user", RULES.format(n=players, player=player + 1, round=rounds + 1, history=history)),
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

    results = {}
    for label, size in (("batched", args.decisions), ("one at a time", 1)):
        provider.max_batch_size = size
        gens, secs = asyncio.run(play(provider, prompts))
        results[label] = (gens, secs)
        tokens = sum(g.tokens_out or 0 for g in gens)
        prompt_tokens = sum(g.tokens_in or 0 for g in gens)
        print(f"hf {label:>13}: {len(gens)} decisions, {prompt_tokens / len(gens):.0f} prompt tokens each, "
              f"{tokens} tokens generated in {secs:.2f}s = {tokens / secs:.1f} tokens/s")

    (batched, t_batched), (single, t_single) = results["batched"], results["one at a time"]
    ratio = (sum(g.tokens_out or 0 for g in batched) / t_batched) / (sum(g.tokens_out or 0 for g in single) / t_single)
    same = sum(a.text == b.text for a, b in zip(batched, single))
    print(f"hf batched / one at a time: {ratio:.1f}x (goal >= 5x); identical greedy replies: {same}/{len(batched)}")
    print(f"hf sample reply: {batched[0].text!r}")


if __name__ == "__main__":
    main()
