"""The summary counted while a run writes (formats/tally.py) against a summary recomputed here from the two logs
alone, by code that shares nothing with formats/tally.py: many small random experiments (games of every family,
rational, random, level-k and game-specific policy seats, scripted garbage replies, several sessions and
runs, history, reask, [grid] cells, labels holding several seats). Sums and counts must match exactly;
means too (both are the exactly rounded mean of the same numbers).

Resumes after a SIGKILL, shards merged and Ray runs were checked the same way by slower scripts kept out
of the suite; tests/test_resume.py, tests/test_shards.py and tests/test_ray.py hold their fast cases."""

from __future__ import annotations

import asyncio
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from econarena.agents.llm import RuntimeOptions
from econarena.analysis.metrics import summarize, write_summary
from econarena.games import GAMES
from econarena.hosts.config import parse_experiment
from econarena.hosts.host import Host, HostOptions

# game -> (small parameters, seats of a fixed-size game or None, the baselines it offers)
CASES: dict[str, tuple[dict[str, Any], int | None, list[str]]] = {
    "beauty_contest": ({}, None, ["rational", "random", "level_k"]),
    "second_price_auction": ({}, None, ["rational", "random", "level_k"]),
    "english_auction": ({"max_rounds": 30, "increment": 5}, None, ["rational", "random", "level_k"]),
    "guessing_game": ({"rounds": 2}, None, ["rational", "random", "level_k"]),
    "sealed_bid_auction": ({"rounds": 2}, None, ["rational", "random", "level_k"]),
    "public_goods": ({"rounds": 2}, None, ["rational", "random"]),
    "el_farol_bar": ({"rounds": 2}, None, ["rational", "random"]),
    "battle_royale": ({"max_turns": 4}, None, ["rational", "random"]),
    "prisoners_dilemma": ({"rounds": 3}, 2, ["rational", "random", "tit_for_tat"]),
    "persuasion": ({"rounds": 2}, 2, ["rational", "random", "commitment", "babbling"]),
    "bargaining": ({"max_rounds": 3}, 2, ["rational", "random"]),
    "ultimatum": ({}, 2, ["rational", "random"]),
    "buy_sell": ({"turns": 4}, 2, ["rational", "random"]),
    "fruit_trade": ({}, 2, ["rational", "random"]),
}
GARBAGE = ["no idea", '{"answer": "seven"}', '```json\n{"answer": 3}\n```', "{}", '{"answer": 20, "bid": 20}',
           '{"action": "cooperate"}', '{"answer": -5}', "", '{"answer": 1e400}']
VIOLATIONS = ("parse_error", "schema_error", "rule_violation")


def random_experiment(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    game = sorted(CASES)[seed % len(CASES)]
    params, fixed, policies = CASES[game]
    size = fixed or rng.randint(2, 5)
    players: list[dict[str, Any]] = [{"agent": "scripted", "label": f"S{j}",
                                      "responses": rng.sample(GARBAGE, rng.randint(1, 5))}
                                     for j in range(rng.randint(0, 1 if fixed else 2))]
    while len(players) < size:
        kind = rng.choice(policies)
        if kind == "level_k":
            players.append({"agent": "level_k", "k": rng.choice([0, 1, 2, 5])})
        elif kind in ("rational", "random"):
            players.append({"agent": kind})
        else:
            players.append({"agent": "policy", "policy": kind})
    for j, p in enumerate(players):
        p.setdefault("label", f"{p.get('policy', p['agent'])}-{j}")
    rng.shuffle(players)
    exp: dict[str, Any] = {"name": f"p{seed}", "game": game, "seed": rng.randint(0, 10**6),
                           "sessions": rng.randint(1, 3), "runs": rng.randint(1, 3),
                           "history": rng.choice(["none", "actions", "full"])}
    if rng.random() < 0.3:
        exp["reask"] = rng.randint(1, 2)
    if not fixed and rng.random() < 0.3:
        rng.choice(players)["count"] = 2  # one label holding two seats
    if exp["history"] == "full" and GAMES[game].hidden_from_history(GAMES[game].Params(**params)):
        exp["history"] = "actions"  # refused where a full history would reveal what the prompt hides
    doc: dict[str, Any] = {"experiment": exp, "game": dict(params), "players": players}
    if game == "beauty_contest" and rng.random() < 0.5:
        doc["grid"] = {"game": {"ratio": [0.5, 0.75]}}
    return doc


def _mean(xs: list[Any]) -> float | None:
    xs = [x for x in xs if x is not None and x == x]
    return math.fsum(xs) / len(xs) if xs else None


def recompute(out: Path, scored: bool) -> dict[str, Any]:
    """summary.json's numbers from runs.jsonl and decisions.jsonl, by the definitions in analysis/metrics.py."""
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    decisions = [json.loads(x) for x in (out / "decisions.jsonl").read_text().splitlines()]
    done = {(r["lineup"], r["session"], r["run"]): r for r in runs if r["complete"]}
    acc: dict[str, dict[str, Any]] = {}

    def label(name: str) -> dict[str, Any]:
        return acc.setdefault(name, {"runs": 0, "pay": [], "ne": [], "dev": [], "by_run": {}, "wins": 0, "broke": 0,
                                     "decisions": 0, "violations": dict.fromkeys(VIOLATIONS, 0), "latency": [],
                                     "scores": []})

    suffix = {}
    for r in done.values():
        suffix[r["lineup"]] = r["lineup"][r["lineup"].index(" ["):] if r.get("cell") else ""
        for name in dict.fromkeys(r["labels"]):  # a run's score once per label
            if r["score"] is not None:
                label(name + suffix[r["lineup"]])["scores"].append(r["score"])
        for i, name in enumerate(r["labels"]):
            a, ok = label(name + suffix[r["lineup"]]), r["valid"][i]
            a["runs"] += 1
            a["pay"].append(r["payoffs"][i] if ok else 0.0)
            a["ne"].append(r["ne_payoffs"][i] if r["ne_payoffs"] else None)
            a["dev"].append(r["deviation"][i] if ok else None)
            a["by_run"].setdefault(r["run"], []).append(r["deviation"][i] if ok else None)
            a["wins"] += i in r["winners"]
            a["broke"] += not ok or not r["first_valid"][i]
    for d in decisions:
        if (d["lineup"], d["session"], d["run"]) in done:
            a = label(d["label"] + suffix[d["lineup"]])
            a["decisions"] += 1
            if d["violation"]:
                a["violations"][d["violation"]] += 1
            a["latency"].append(d["latency_s"])
    out_labels = {}
    for name, a in acc.items():
        pay, ne = _mean(a["pay"]), _mean(a["ne"])
        curve = {str(k): _mean(v) for k, v in sorted(a["by_run"].items())}
        s = a["scores"]
        m = _mean(s)
        out_labels[name] = {
            "player_runs": a["runs"], "decisions": a["decisions"], "mean_payoff": pay, "mean_ne_payoff": ne,
            "payoff_ratio": pay / ne if pay is not None and ne else None, "mean_deviation": _mean(a["dev"]),
            "win_rate": a["wins"] / a["runs"], "rule_break_rate_pct": 100 * a["broke"] / a["runs"],
            "violations_per_decision_pct": (100 * sum(a["violations"].values()) / a["decisions"]
                                            if a["decisions"] else None),
            "violations": a["violations"], "deviation_by_run": curve,
            "converged_at_run": next((int(k) for k, v in curve.items() if v is not None and v <= 0.05), None),
            "mean_latency_s": _mean(a["latency"]),
            "score": m if scored else None,
            "score_std": (math.sqrt(math.fsum((x - m) ** 2 for x in s) / (len(s) - 1))
                          if scored and len(s) > 1 else None)}
    return {"runs_complete": len(done), "runs_incomplete": len(runs) - len(done), "labels": out_labels}


@pytest.mark.parametrize("block", range(4))
def test_the_streamed_summary_equals_one_recomputed_from_the_logs(tmp_path: Path, block: int) -> None:
    for seed in range(block * 14, block * 14 + 14):  # every game at least once per block
        doc = random_experiment(seed)
        out = tmp_path / str(seed)
        host = Host(parse_experiment(doc, "p.toml"), out,
                    HostOptions(concurrency=4, quiet=True, runtime=RuntimeOptions(cache=False)))
        asyncio.run(host.run())
        assert host.dir.tally is not None  # counted while it wrote
        streamed = write_summary(out, host.dir.tally)
        want = recompute(out, GAMES[doc["experiment"]["game"]].info.score)
        where = f"seed {seed} ({doc['experiment']['game']})"
        assert (streamed["runs_complete"], streamed["runs_incomplete"]) == (want["runs_complete"],
                                                                             want["runs_incomplete"]), where
        assert set(streamed["labels"]) == set(want["labels"]), where
        for name, v in want["labels"].items():
            got = {k: streamed["labels"][name][k] for k in v}
            assert got == v, f"{where}, label {name}"
        assert summarize(out) == streamed, where  # the analysis path reading the files back
