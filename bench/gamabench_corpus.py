"""Synthetic GAMA-Bench ``raw_results/`` trees in the reference's file format, for the report's benchmark.

Why synthetic: the released results are GPL data we must not copy into the project, yet the report has to
be measured on something of their size (13 models x 8 scored games x 5 runs = 520 files, about 90 KB
each, imported into 104 run directories). Each file here has the reference's layout (``meta``,
``round_records``, ``player_data`` with ``records``, ``utility`` and the stored ``prompt`` chat of every
seat), plays by the game's rules, and its choices follow a per-model "skill" so the scores spread over
0-100 like the published board. Nothing is random between calls: the same arguments write the same bytes.

    python bench/gamabench_corpus.py OUT_DIR [--models 13] [--runs 5] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The published board's file prefixes (board.py); the unprefixed GPT-3.5-0125 is given one here, so every
# model is named without --unnamed-model.
MODELS = ("gemini-1.5-pro", "gpt-4o", "llama-3.1-70b", "gpt-4-0125-preview", "mixtral-8x22b", "llama-3.1-405b",
          "qwen2-72b", "llama-3.1-8b", "gemini-1.0-pro", "gpt-3.5-turbo-1106", "gpt-3.5-turbo-0125",
          "mixtral-8x7b", "gpt-3.5-turbo-0613")
N = 10
FILLER = ("Think about what the other players are likely to do in this round, then answer in the JSON "
          "format given above. ")  # the stored chats are mostly such instructions: realistic weight


def _chat(system: str, answers: list[str], reports: list[str]) -> list[dict[str, str]]:
    """A seat's stored conversation: the rules, then per round a request, the answer and the report."""
    chat = [{"role": "system", "content": system + "\n\n" + FILLER * 3}]
    for k, (answer, report) in enumerate(zip(answers, reports)):
        chat.append({"role": "user", "content": f"Round {k + 1}. {FILLER}Your answer:"})
        chat.append({"role": "assistant", "content": answer})
        chat.append({"role": "user", "content": report})
    return chat


def _file(meta: dict[str, Any], round_records: list[dict[str, Any]], records: list[list[Any]],
          utility: list[list[Any]], system: str, key: str) -> dict[str, Any]:
    players = []
    for i, recs in enumerate(records):
        answers = [json.dumps({key: str(x)}) for x in recs]
        reports = [f"Game results of round {k + 1}: you chose {x}. {FILLER}" for k, x in enumerate(recs)]
        players.append({"model": meta["model"], "id": f"player_{i}", "prompt": _chat(system, answers, reports),
                        "records": recs, "utility": utility[i] if utility else []})
    return {"meta": {k: v for k, v in meta.items() if k != "model"}, "round_records": round_records,
            "player_data": players}


def _base(name: str, model: str, rounds: int, **extra: Any) -> dict[str, Any]:
    return {"name_exp": name, "player_num": N, **extra, "round_id": rounds, "version": "v1", "model": model}


def guessing(rng: random.Random, skill: float, model: str, rounds: int) -> dict[str, Any]:
    records = [[0] * rounds for _ in range(N)]
    level = 50.0
    rr = []
    for k in range(rounds):
        numbers = [max(0, min(100, round(level * rng.uniform(0.6, 1.3)))) for _ in range(N)]
        for i in range(N):
            records[i][k] = numbers[i]
        mean = sum(numbers) / N
        rr.append({"responses": sorted(numbers), "mean": mean, "mean_ratio": mean * 2 / 3, "winner": min(numbers),
                   "winner_num": 1})
        level = max(0.0, level * (1 - 0.5 * skill))
    return _file(_base("guessing_game", model, rounds, min=0, max=100, ratio=2 / 3, ratio_str="2/3"), rr, records,
                 [], "Guess 2/3 of the average of everyone's numbers in [0, 100].", "chosen_number")


def bar(rng: random.Random, skill: float, model: str, rounds: int) -> dict[str, Any]:
    p_go = 0.6 + (1 - skill) * rng.choice((-0.4, 0.35))
    records = [["go" if rng.random() < p_go else "stay" for _ in range(rounds)] for _ in range(N)]
    rr = []
    for k in range(rounds):
        go = sum(records[i][k] == "go" for i in range(N))
        rr.append({"responses": [records[i][k] for i in range(N)], "go_num": go, "go_ratio": go / N,
                   "winner": "go" if go / N <= 0.6 else "stay", "utility": 10 if go / N <= 0.6 else 0})
    meta = _base("bar_game_implicit", model, rounds, min=0, max=10, home=5, ratio=0.6, ratio_str="60%",
                 mode="implicit")
    return _file(meta, rr, records, [], "Go to the bar or stay home; it is fun while at most 60% go.", "decision")


def dollar(rng: random.Random, skill: float, model: str, rounds: int) -> dict[str, Any]:
    records = [[max(0, round(10 + rng.gauss(0, 1 + 12 * (1 - skill)))) for _ in range(rounds)] for _ in range(N)]
    rr = [{"responses": sorted(records[i][k] for i in range(N)), "total_proposal": sum(records[i][k] for i in range(N))}
          for k in range(rounds)]
    return _file(_base("divide_dollar", model, rounds, golds=100), rr, records, [],
                 "Divide 100 golds: everyone gets their bid if the bids sum to at most 100.", "bid_amount")


def goods(rng: random.Random, skill: float, model: str, rounds: int) -> dict[str, Any]:
    records = [[max(0, min(20, round(20 * (1 - skill) * rng.uniform(0.3, 1.2)))) for _ in range(rounds)]
               for _ in range(N)]
    rr = [{"responses": [records[i][k] for i in range(N)], "total_tokens": sum(records[i][k] for i in range(N))}
          for k in range(rounds)]
    meta = _base("public_goods", model, rounds, tokens=20, ratio=2, token_initialization="fixed", reset=True,
                 rand_min=11)
    return _file(meta, rr, records, [], "Contribute tokens to the public pot; it is doubled and shared.",
                 "tokens_contributed")


def diner(rng: random.Random, skill: float, model: str, rounds: int) -> dict[str, Any]:
    p_costly = min(1.0, max(0.0, skill * rng.uniform(0.2, 1.1)))
    records = [["costly" if rng.random() < p_costly else "cheap" for _ in range(rounds)] for _ in range(N)]
    rr = []
    for k in range(rounds):
        cheap = sum(records[i][k] == "cheap" for i in range(N))
        total = cheap * 10 + (N - cheap) * 20
        rr.append({"responses": [records[i][k] for i in range(N)], "cheap_player": cheap, "total_cost": total,
                   "cost_msg": f"{N - cheap} * 20 + {cheap} * 10 = {total}", "avg_cost": total / N})
    meta = _base("diner_dilemma", model, rounds, cheap_cost=10, cheap_utility=15, exp_cost=20, exp_utility=20)
    return _file(meta, rr, records, [], "Order the cheap or the costly dish; the bill is split.", "chosen_dish")


def auction(rng: random.Random, skill: float, model: str, rounds: int) -> dict[str, Any]:
    records: list[list[int]] = [[] for _ in range(N)]
    utility: list[list[int]] = [[] for _ in range(N)]
    rr = []
    for k in range(rounds):
        vals = random.Random(42 + k).sample(range(0, 210, 10), N)  # the reference's valuation sequence
        bids = [min(v, round(v * (1 - 0.4 * skill * rng.random()))) for v in vals]
        w = max(range(N), key=lambda i: (bids[i], -i))
        util = [vals[i] - bids[i] if i == w else 0 for i in range(N)]
        for i in range(N):
            records[i].append(bids[i])
            utility[i].append(util[i])
        rr.append({"responses": bids, "bid_winner": f"player_{w}", "bid_winner_proposed": bids[w],
                   "bid_winner_payment": bids[w], "utility": util, "valuations": vals})
    meta = _base("sealed_bid_auction", model, rounds, valuation_min=0, valuation_max=200, interval=10,
                 seed=42 + rounds, mode="highest bid")
    return _file(meta, rr, records, utility, "A first-price sealed-bid auction over 20 rounds.", "bid")


def battle(rng: random.Random, skill: float, model: str, rounds: int) -> dict[str, Any]:
    rates = {i: 35 + 5 * i for i in range(N)}
    alive = list(range(N))
    records: list[list[str]] = [[] for _ in range(N)]
    rr = []
    turn = 0
    while turn < rounds and len(alive) > 1:
        shooter = alive[turn % len(alive)]
        others = [p for p in alive if p != shooter]
        if rng.random() < 0.1:
            target = None
        elif rng.random() < skill:
            target = max(others, key=lambda p: rates[p])
        else:
            target = rng.choice(others)
        hit = target is not None and rng.random() * 100 < rates[shooter]
        records[shooter].append("null" if target is None else str(target))
        rr.append({"responses": [records[shooter][-1]], "player_shooting": str(shooter),
                   "initial_players": [[f"player_{p}", rates[p]] for p in alive],
                   "shot_player": "null" if target is None else str(target),
                   "action": "miss" if target is None else "shoot", "out": hit})
        if hit:
            alive.remove(target)
        turn += 1
    meta = _base("battle_royale", model, len(rr), base_hit_rate=35, interval=5)
    return _file(meta, rr, records, [], "Shoot in turn; the last one standing wins.", "target")


def pirate(rng: random.Random, skill: float, model: str, rounds: int) -> dict[str, Any]:
    records: list[list[str]] = [[] for _ in range(N)]
    rr = []
    for k in range(N - 1):
        alive = list(range(k, N))
        plan = [0] * len(alive)
        plan[0] = 100 - (len(alive) // 2 if rng.random() < skill else rng.randrange(0, 40))
        for j in rng.sample(range(1, len(alive)), min(len(alive) - 1, 100 - plan[0])):
            plan[j] += 1
        plan[0] = 100 - sum(plan[1:])
        votes = ["accept"] + ["accept" if plan[j] > 0 or rng.random() < 0.2 else "reject" for j in range(1, len(alive))]
        for i, v in zip(alive, votes):
            records[i].append(v)
        rr.append({"gold_distribution": plan, "responses": votes})
        if votes.count("accept") / len(alive) >= 0.5:
            break
    meta = _base("pirate_game", model, len(rr), gold=100)
    return _file(meta, rr, records, [], "Pirates divide 100 gold coins by seniority and vote on each plan.", "vote")


# folder, file stem, writer
GAMES: tuple[tuple[str, str, Callable[..., dict[str, Any]]], ...] = (
    ("guessing_game", "guessing_game", guessing), ("bar_game_implicit", "bar_game_implicit", bar),
    ("divide_dollar", "divide_dollar", dollar), ("public_goods", "public_goods", goods),
    ("diner_dilemma", "diner_dilemma", diner), ("sealed_bid_auction/first_price", "sealed_bid_auction", auction),
    ("battle_royale", "battle_royale", battle), ("pirate_game", "pirate_game", pirate))


def write_tree(out: str | Path, models: int = len(MODELS), runs: int = 5, rounds: int = 20) -> list[Path]:
    """Write ``models x 8 games x runs`` reference files under ``out`` (a ``raw_results/`` tree)."""
    out = Path(out)
    written = []
    for m, model in enumerate(MODELS[:models] if models <= len(MODELS) else
                              [*MODELS, *(f"model-{i}" for i in range(len(MODELS), models))]):
        skill = 0.9 - 0.8 * m / max(1, models - 1)
        for g, (folder, stem, make) in enumerate(GAMES):
            for run in range(1, runs + 1):
                rng = random.Random(m * 1000 + g * 10 + run)
                data = make(rng, skill, model, rounds)
                path = out / folder / f"{model}_{stem}_v1_{run}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(data), encoding="utf-8")
                written.append(path)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--models", type=int, default=len(MODELS))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    files = write_tree(args.out, args.models, args.runs, args.rounds)
    size = sum(f.stat().st_size for f in files)
    print(f"wrote {len(files)} files ({size / 1e6:.1f} MB) under {args.out}")


if __name__ == "__main__":
    main()
