"""Small fixed experiments whose complete logs are kept as golden files (tests/golden/*.jsonl.gz).

Every registered game is played by its baselines and by a scripted player whose replies include garbage,
plus a few experiments that exercise the Host's options (environments, history, reask, cot, grid, personas).
Refactors and speed work must leave these logs unchanged in content; timings, timestamps, paths and the
package version are normalised away. Regenerate after an INTENDED change with:

    .venv/bin/python tests/golden_experiments.py --write
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import gzip
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "golden"
VOLATILE = {"latency_s", "mean_latency_s", "elapsed_s", "started_at", "ended_at", "run_dir", "econarena_version"}
FILES = ("config.toml", "manifest.json", "decisions.jsonl", "runs.jsonl", "judge.jsonl", "steering.jsonl",
         "summary.json", "summary.csv")

GARBAGE = ["no idea", '{"answer": "seven"}', "```json\n{\"answer\": 3}\n```", "{}"]

SMALL: dict[str, dict[str, Any]] = {  # game parameters that keep each experiment small
    "guessing_game": {"rounds": 3}, "el_farol_bar": {"rounds": 3}, "divide_dollar": {"rounds": 3},
    "public_goods": {"rounds": 3}, "diners_dilemma": {"rounds": 3}, "sealed_bid_auction": {"rounds": 3},
    "battle_royale": {"max_turns": 4}, "bargaining": {"max_rounds": 4}, "negotiation": {"max_rounds": 3},
    "persuasion": {"rounds": 3}, "multi_turn_ultimatum": {"turns": 4}, "resource_exchange": {"turns": 4},
    "buy_sell": {"turns": 4}, "english_auction": {"max_rounds": 30, "increment": 5}, "prisoners_dilemma": {"rounds": 3},
    "matching_pennies": {"rounds": 3},
}


# Games that gained a level-k rule after their golden files were first written: their per-game
# experiments keep the seats they were recorded with, and level-k plays in a "<game>-level-k" experiment.
LATER_LEVEL_K = ("guessing_game", "sealed_bid_auction")


def _players(game: Any) -> list[dict[str, Any]]:
    """The game's baselines (level-k at two depths where it has one) and a garbage-writing scripted seat."""
    out: list[dict[str, Any]] = []
    for policy in game.info.policies:
        if policy == "level_k" and game.name in LATER_LEVEL_K:
            continue
        if policy == "level_k":
            out += [{"agent": "level_k", "label": "L1", "k": 1}, {"agent": "level_k", "label": "L2", "k": 2}]
        elif policy in ("rational", "random"):
            out.append({"agent": policy})
        else:
            out.append({"agent": "rational", "label": policy})  # game-specific kinds are played by rational
    out.append({"agent": "scripted", "label": "S", "responses": GARBAGE})
    return out


def experiments() -> dict[str, dict[str, Any]]:
    """name -> a parsed TOML document."""
    from econarena.games import GAMES

    docs: dict[str, dict[str, Any]] = {}
    for name, game in sorted(GAMES.items()):
        players = _players(game)
        n = game.info.n_players
        if n is not None and n < len(players):  # two-seat games: every pair with the scripted seat
            docs[f"{name}-baselines"] = _doc(name, players[:n], sessions=2, runs=2)
            players = [players[0], players[-1]]
        docs[name] = _doc(name, players[:n] if n else players, sessions=2, runs=2)
    for name in LATER_LEVEL_K:
        docs[f"{name}-level-k"] = _doc(name, [{"agent": "level_k", "label": f"L{k}", "k": k} for k in (0, 1, 2, 9)]
                                       + [{"agent": "rational"}, _scripted()], sessions=1, runs=2)
    # the ascending clock jumps over the rounds in which only rational and level-k bidders are left and all stay
    docs["english-fast-forward"] = {**_doc("english_auction", [{"agent": "rational", "count": 2},
                                                               {"agent": "level_k", "label": "L3", "k": 3},
                                                               {"agent": "random"}], sessions=3),
                                    "game": {"private_value": {"uniform": [1000, 1_000_000]}, "assets": 1_000_000,
                                             "increment": 0.01, "max_rounds": 10**18}}
    docs["bc-rational-history-cot"] = _doc("beauty_contest", [{"agent": "random"}, _scripted()],
                                           environment="rational", history="full", prompt="cot", runs=3,
                                           sessions=2)
    docs["spa-self-reask"] = _doc("second_price_auction", [{"agent": "random"}, _scripted()], environment="self",
                                  reask=2, runs=2, sessions=2, players_per_game=3)
    docs["bc-grid-shuffle"] = {**_doc("beauty_contest", [{"agent": "rational"}, {"agent": "random", "count": 2},
                                                         _scripted(persona="cunning")],
                                      shuffle_seats=True, sessions=3),
                               "grid": {"game": {"ratio": [0.5, 0.75]}}}
    llm = {"agent": "openai", "label": "gpt", "model": "fake-model", "base_url": BASE, "api_key_env": "GOLDEN_KEY",
           "max_tokens": 50}
    docs["guessing-llm"] = _doc("guessing_game", [llm, {"agent": "rational", "count": 2}], history="actions",
                                sessions=2)
    docs["bargaining-llm"] = _doc("bargaining", [llm, {"agent": "rational"}], sessions=2)
    return docs


BASE = "{BASE}/v1"  # an OpenAI-compatible fake server on 127.0.0.1 (tests/fakeservers.py), filled in by play()


def _scripted(**extra: Any) -> dict[str, Any]:
    return {"agent": "scripted", "label": "S", "responses": GARBAGE + ['{"answer": 20, "bid": 20}'], **extra}


def _doc(game: str, players: list[dict[str, Any]], **experiment: Any) -> dict[str, Any]:
    return {"experiment": {"name": "golden", "game": game, "seed": 11, **experiment},
            "game": dict(SMALL.get(game, {})), "players": players}


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def normalised(out: Path, base: str = "") -> dict[str, list[str]]:
    """Each log file of a run directory as sorted, normalised lines (JSON keys in written order)."""
    files: dict[str, list[str]] = {}
    for name in FILES:
        path = out / name
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        if base:
            text = text.replace(base, "{BASE}")
        if name.endswith(".jsonl"):
            lines = [json.dumps(_clean(json.loads(line)), ensure_ascii=False) for line in text.splitlines() if line]
            files[name] = sorted(lines)
        elif name.endswith(".json"):
            files[name] = json.dumps(_clean(json.loads(text)), indent=1, ensure_ascii=False).splitlines()
        elif name.endswith(".csv"):
            rows = list(csv.reader(io.StringIO(text)))
            keep = [i for i, col in enumerate(rows[0] if rows else []) if col not in VOLATILE]
            files[name] = [",".join(row[i] for i in keep) for row in rows]
        else:
            files[name] = text.splitlines()
    return files


def play(doc: dict[str, Any], out: Path) -> dict[str, list[str]]:
    """Run ``doc`` in-process as ``econarena run`` does (Host, then the summary) and read it back.

    Experiments with LLM players get a fake OpenAI-compatible server of their own (no response cache)."""
    import os

    from econarena.agents.llm import RuntimeOptions
    from econarena.analysis.metrics import write_summary
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    text = json.dumps(doc)
    server = None
    if "{BASE}" in text:
        sys.path.insert(0, str(Path(__file__).parent))
        from fakeservers import FakeLLMServer

        server = FakeLLMServer().start()
        os.environ["GOLDEN_KEY"] = "sk-golden-test"
        doc = json.loads(text.replace("{BASE}", server.url))
    try:
        exp = parse_experiment(doc, "golden.toml")
        options = HostOptions(concurrency=4, quiet=True, runtime=RuntimeOptions(cache=False))
        host = Host(exp, out, options)
        asyncio.run(host.run())
    finally:
        if server is not None:
            server.stop()
    write_summary(out, host.dir.tally)  # as `econarena run` does: the summary counted while the run wrote
    return normalised(out, server.url if server is not None else "")


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.json.gz"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help="rewrite the golden files")
    ap.add_argument("--only", help="one experiment name")
    args = ap.parse_args()
    GOLDEN.mkdir(exist_ok=True)
    for name, doc in experiments().items():
        if args.only and name != args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            files = play(doc, Path(tmp) / name)
        if args.write:
            data = json.dumps(files, ensure_ascii=False, indent=0, sort_keys=True).encode("utf-8")
            with open(golden_path(name), "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
                f.write(data)  # mtime 0: the same logs give the same bytes
            print(f"wrote {golden_path(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
