"""``econarena bench``: a bench suite (``formats/benchsuite.py``, ``configs/bench/v2.toml``) turned into ordinary
experiments for one model, planned (calls and a cost bound per tier) and played side by side.

Why experiments: every game of the suite is an experiment built from TOML data by ``parse_experiment``, the same
checks as any file, played by the Host into its own run directory; so resume, the response cache, ``--ray``,
shards, the report and every metric apply unchanged, and nothing here plays a game.

The model is what a ``[[players]]`` table accepts: ``PROVIDER[:MODEL]`` (``openai:gpt-4o-mini``, ``hf``),
``MODEL@URL`` for an OpenAI-compatible server, a baseline (``rational``, ``random``), or a TOML file holding one
player table (or a models file of aliases: one model per alias).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..agents.calls import public_url
from ..agents.llm import PROVIDERS, close_all
from ..formats.benchsuite import GameEntry, Suite, digest
from ..formats.prices import cost_usd, price_of
from .config import (
    BASELINES,
    ConfigError,
    Experiment,
    follow_alias,
    is_alias_file,
    parse_experiment,
    read_toml,
    resolved_data,
)
from .experiment import llm_call_bound
from .host import Host, HostOptions, RunResult
from .prompts import Template

# The bundled SmolLM2 (bare ``hf``) answers in prose unless its decoding is constrained; "strict" also keeps
# its numbers within the rules (a 135M model at temperature 1 guesses 28139 in Guess 2/3), so it is asked
# once instead of four times. Any other model is taken as the user gives it.
SHORTHAND = {"hf": {"structured": "strict", "max_tokens": 160}}
PLAYABLE_BASELINES = ("rational", "random", "constant", "accept")  # baselines that play every game of the suite
# the trivial policies every game offers (games/trivial.py): the floor shown beside `random` on every scorecard
TRIVIAL = {"constant": {"agent": "policy", "policy": "constant"}, "accept": {"agent": "policy", "policy": "accept"}}
CHARS_PER_TOKEN = 3.0  # a bound: English runs about 4 characters per token
# The dry run's expected cost beside its bound: English at 4 characters per token, a reply of a structured
# JSON answer (capped by max_tokens), a round's report between two calls of a conversation, no re-asks.
TYPICAL_CHARS_PER_TOKEN = 4.0
TYPICAL_REPLY_TOKENS = 60
TYPICAL_REPORT_TOKENS = 40
SCHEMA_TOKENS = 2000  # a reply schema sent with a call, at most (the largest, the pirate plan's, is ~1,700 bytes)
MESSAGE_TOKENS = 8  # per message: role and separators


@dataclass(frozen=True)
class ModelSpec:
    """One model to bench: its label (the row it gets) and its player table (without label or count)."""

    label: str
    entry: dict[str, Any]
    source: str  # what the user typed

    @property
    def is_llm(self) -> bool:
        return self.entry.get("agent") in PROVIDERS

    @property
    def slug(self) -> str:
        """The label as a directory name."""
        s = re.sub(r"[^A-Za-z0-9._-]+", "_", self.label).strip("._-") or "model"
        return s[:120]


def _default_label(entry: dict[str, Any]) -> str:
    agent, model = entry.get("agent"), entry.get("model")
    # one model at two reasoning settings is two rows of a leaderboard: the default label says which
    return (f"{agent}/{model}" if model else str(agent)) + reasoning_suffix(entry)


def reasoning_suffix(entry: Mapping[str, Any]) -> str:
    """`` [effort=high, reasoning_tokens=2048]`` for a player table with reasoning settings, else ""."""
    parts = [f"{'effort' if k == 'reasoning_effort' else k}={entry[k]}"
             for k in ("reasoning_effort", "reasoning_tokens") if entry.get(k) is not None]
    return f" [{', '.join(parts)}]" if parts else ""


def _file_label(table: dict[str, Any], where: str) -> str | None:
    """A TOML table's label, if it has one: a non-empty string (a number stopped the bench with a TypeError,
    an empty one fell back to the default label in silence)."""
    x = table.get("label")
    if x is not None and not (isinstance(x, str) and x.strip()):
        raise ConfigError(f"{where}: label: expected a non-empty string, got {x!r}")
    return x


def shown_model(text: str) -> str:
    """MODEL as typed, with every URL in it masked (``public_url``: a password or a key in a query string
    never reaches bench.json, a message or the terminal)."""
    from ..agents.keys import mask_keys

    return mask_keys(re.sub(r"[A-Za-z][A-Za-z0-9+.-]*://\S*", lambda m: public_url(m.group()), text))


def model_specs(text: str, label: str | None = None) -> list[ModelSpec]:
    """What MODEL on the command line names; ConfigError with the expected forms otherwise."""
    path = Path(text)
    if text.endswith(".toml") or path.is_file():
        data = read_toml(path)
        if isinstance(data.get("agent"), str):  # one player table
            entry = {k: v for k, v in data.items() if k not in ("label", "count")}
            return [ModelSpec(label or _file_label(data, text) or _default_label(entry), entry, text)]
        if is_alias_file(data):
            if label is not None and len(data) > 1:
                raise ConfigError(f"{text}: --label names one model, but the file has {len(data)} aliases")
            out = []
            for alias in data:
                entry = follow_alias(data, alias, text)
                given = _file_label(entry, f"{text} [{alias}]")
                out.append(ModelSpec(label or given or alias, {k: v for k, v in entry.items()
                                                              if k not in ("label", "count")}, f"{text} [{alias}]"))
            return out
        raise ConfigError(f"{text}: expected one player table (agent = \"openai\", model = \"...\", ...) or a "
                          "models file of aliases ([\"name\"] tables)")
    shown = shown_model(text)
    if text.startswith(("http://", "https://")):
        raise ConfigError(f"{shown}: name the model the server serves: MODEL@URL (e.g. llama-3.1-8b@{shown})")
    m = re.fullmatch(r"(?:(openai):)?([^@\s]+)@(https?://\S+)", text)
    if m:
        entry = {"agent": "openai", "model": m.group(2), "base_url": m.group(3)}
        return [ModelSpec(label or f"openai/{m.group(2)}", entry, shown)]
    agent, colon, model = text.partition(":")
    if agent in PROVIDERS:
        if PROVIDERS[agent].needs_model and not model:  # else the dry run planned a model that cannot run
            raise ConfigError(f"{shown!r}: agent '{agent}' needs a model: {agent}:MODEL (e.g. openai:gpt-4o-mini)")
        entry = {"agent": agent, **({"model": model} if model else SHORTHAND.get(agent, {}))}
        return [ModelSpec(label or _default_label(entry), entry, shown)]
    if agent in PLAYABLE_BASELINES and not colon:
        return [ModelSpec(label or agent, dict(TRIVIAL.get(agent, {"agent": agent})), shown)]
    known = ", ".join(sorted(PROVIDERS))
    others = sorted(b for b in BASELINES if b not in PLAYABLE_BASELINES)
    raise ConfigError(f"{shown!r}: not a model; expected PROVIDER[:MODEL] ({known}; e.g. openai:gpt-4o-mini, hf), "
                      f"MODEL@URL (an OpenAI-compatible server), {' or '.join(PLAYABLE_BASELINES)}, or a TOML file "
                      f"with a player table ({', '.join(others)} cannot play every game)")


def opponent_label(entry: dict[str, Any]) -> str:
    return str(entry.get("label") or f"opponent ({_default_label(entry)})")


def experiment_data(suite: Suite, g: GameEntry, tier: str, spec: ModelSpec) -> dict[str, Any]:
    """The experiment file of one game of the suite for this model and tier, as TOML data."""
    player = {**spec.entry, "label": spec.label}
    if spec.is_llm:
        player.update(g.protocol)  # the suite's protocol (GAMA-Bench's temperature 1) wins over the model's
    exp: dict[str, Any] = {"name": g.id, "game": g.game, "sessions": g.sessions[tier], "runs": 1,
                           "seed": suite.seed, "reask": g.reask[tier],
                           "description": f"{suite.title}, tier {tier}: {g.id} ({g.family})"}
    if g.table == "copies":
        exp["environment"] = "melee"
        players = [{**player, "count": g.seats}]
    elif g.table == "rational":
        if spec.entry.get("agent") == "rational":  # the environment needs one non-rational player; a baseline
            exp["environment"] = "melee"           # reads no prompt, so a melee of rationals plays the same
            players = [player, {"agent": "rational", "label": "opponent (rational)", "count": g.seats - 1}]
        else:
            exp["environment"], exp["players_per_game"] = "rational", g.seats
            players = [player]
    else:
        exp["environment"] = "melee"
        opponent = {**g.opponent, "label": opponent_label(g.opponent)}
        players = [player, opponent] if g.seat == 0 else [opponent, player]
    data: dict[str, Any] = {"experiment": exp, "game": g.params_for(tier), "players": players}
    if suite.llm and spec.is_llm:
        data["llm"] = dict(suite.llm)
    return data


def build(suite: Suite, tier: str, spec: ModelSpec) -> list[Experiment]:
    """Every game of the suite as a checked experiment; ConfigError listing every problem."""
    exps, errors = [], []
    for g in suite.games:
        try:
            exps.append(parse_experiment(experiment_data(suite, g, tier, spec),
                                         f"{suite.path} [games {g.id}] for {spec.source}"))
        except ConfigError as exc:
            errors.append(str(exc))
            continue
        errors += [f"{suite.path} [games {g.id}]: {p}" for p in score_rule_problems(g, exps[-1])]
    if errors:
        raise ConfigError("\n".join(errors))
    return exps


def score_rule_problems(g: GameEntry, exp: Experiment) -> list[str]:
    """Whether the game's score rule can score this game, checked on one draw of its setup before anything is
    played: a ``best`` naming no parameter of the run, or a rule the game has nothing for, scored every run
    None or stopped the scoring with an error after the whole suite was played (and paid for)."""
    lineup, x = exp.tables()[0]
    info = x.game.info
    if g.score == "game":
        return [] if info.score else [f"score = \"game\": {g.game} computes no 0-100 score of its own (a rule of "
                                      "formats/benchsuite.py that reads payoffs or actions instead)"]
    try:
        setup = x.game.setup(x.params, len(lineup.seats), np.random.default_rng(0))  # any draw names the same keys
        ne = x.game.equilibrium(setup)
    except Exception as exc:  # noqa: BLE001 - a draw the game refuses is reported, not raised
        return [f"its setup cannot be drawn to check the score rule ({exc})"]
    if g.score == "equilibrium_action":
        if info.scale_key is None or ne is None:
            return [f"score = \"equilibrium_action\": {g.game} declares no "
                    + ("scale for its actions" if info.scale_key is None else "equilibrium")]
        return []
    if g.best is None:
        return []
    known = {k for k, v in setup.to_dict().items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if ne is not None:
        known.add("ne_payoff")
    missing = sorted(g.best.names - known)
    if missing:
        return [f"best = {g.best.text!r}: no {missing[0]!r} in the run's parameters (numbers: "
                f"{', '.join(sorted(known)) or 'none'})"]
    return []


# What decides a score beyond the suite file: the games' rules and the prompt templates (their digest is in
# every result's comparability key, so results of other rules or wording are never ranked beside each other).
PINNED_CODE = ("games", "hosts/templates")
# LLM settings that decide how a call travels, not what the model answers: left out of the generation settings
# a result records (any other setting, a future one included, is recorded as it is).
TRANSPORT_KEYS = frozenset({"base_url", "api_key_env", "timeout_s", "max_connections", "requests_per_minute",
                            "max_retries", "retry_max_wait_s", "device", "threads", "max_batch_size"})


@functools.lru_cache(maxsize=1)
def rules_digest() -> str:
    """sha256 over the files of PINNED_CODE (path and bytes, sorted): the rules and prompts as played."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for top in PINNED_CODE:
        for f in sorted((root / top).rglob("*")):
            if f.is_file() and f.suffix in (".py", ".toml") and "__pycache__" not in f.parts:
                h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def generation(exps: list[Experiment], label: str) -> dict[str, dict[str, Any]]:
    """Per game, the LLM settings the model played with (every setting but TRANSPORT_KEYS; none for a
    baseline): the decoding a result depends on, recorded whatever the settings are called."""
    out = {}
    for e in exps:
        p = next((p for p in e.players if p.label == label and p.llm is not None), None)
        if p is not None and p.llm is not None:
            out[e.name] = {k: v for k, v in sorted(p.llm.model_dump().items()) if k not in TRANSPORT_KEYS}
    return out


@functools.lru_cache(maxsize=4)
def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def played_by(spec: ModelSpec) -> dict[str, Any] | None:
    """The model that plays, named: the bundled model (bare ``hf``) by its name and its weights' file and
    sha256 (the row of ``bench hf`` said only ``hf``); a provider's model by the name asked for (the names the
    server answered with are read from the decisions, analysis/benchmark.py)."""
    agent = spec.entry.get("agent")
    if agent not in PROVIDERS:
        return None
    if agent == "hf" and not spec.entry.get("model"):
        from ..agents.providers.hf import DEFAULT_MODEL, bundled_gguf

        try:
            gguf = bundled_gguf()
        except Exception:  # noqa: BLE001 - not installed: the run itself says so
            return {"model": DEFAULT_MODEL, "weights": None, "weights_sha256": None}
        return {"model": DEFAULT_MODEL, "weights": gguf.name, "weights_sha256": _file_sha256(str(gguf))}
    return {"model": spec.entry.get("model")}  # an API provider is always given one (the checks refuse none)


def settings(suite: Suite, tier: str, spec: ModelSpec, exps: list[Experiment]) -> dict[str, Any]:
    """What a result depends on, as written to the bench directory: the suite, the tier, the rules and
    prompts (their digest), the econarena version, the model that plays, every experiment resolved (no key:
    only variable names; URLs masked). ``digest`` is computed over it; ``comparability`` is the part that
    must match for two results to rank together (the model's generation settings are recorded beside)."""
    from .. import __version__

    experiments = {e.name: resolved_data(e) for e in exps}
    doc = {"suite": suite.name, "version": suite.version, "suite_sha256": suite.digest, "tier": tier,
           "label": spec.label, "econarena": __version__, "rules_sha256": rules_digest(),
           "played_by": played_by(spec), "experiments": experiments}
    return {**doc, "digest": digest(doc), "comparability": comparability(suite, tier, exps, spec)}


def comparability(suite: Suite, tier: str, exps: list[Experiment], spec: ModelSpec) -> dict[str, Any]:
    """The comparability key of a result (``econarena leaderboard`` ranks together only results whose key
    matches, generation settings aside) and the generation settings it played with."""
    from .. import __version__

    return {"suite": suite.version, "suite_sha256": suite.digest, "tier": tier, "econarena": __version__,
            "rules_sha256": rules_digest(), "generation": generation(exps, spec.label)}


# ---------------------------------------------------------------------------------------------------- plan

@dataclass
class TierPlan:
    tier: str
    games: int
    sessions: int
    calls: int  # LLM calls at most, re-asks included
    calls_no_reask: int
    tokens_in: int  # upper bounds
    tokens_out: int
    tokens_in_no_reask: int
    tokens_out_no_reask: int
    cost: float | None  # USD at most; None without a price
    cost_no_reask: float | None
    tokens_in_expected: int = 0  # what a typical run takes (see TYPICAL_*)
    tokens_out_expected: int = 0
    cost_expected: float | None = None


def _first_prompt_tokens(x: Experiment, lineup: Any, seat: int) -> float:
    """The tokens of a seat's first prompt (rendered for one draw), counted generously."""
    try:
        setup = x.game.setup(x.params, len(lineup.seats), np.random.default_rng(0))
        state = x.game.initial_state(setup)
        persona = x.players[lineup.seats[seat]].persona
        msgs = Template(x.game, x.prompts).render(state, seat, lineup.environment, x.experiment.prompt, None, 0,
                                                  persona)
        return sum(len(m.content) for m in msgs) / CHARS_PER_TOKEN + MESSAGE_TOKENS * len(msgs)
    except Exception:  # noqa: BLE001 - a seat that cannot be rendered at the start: a generous guess
        return 2000.0


def token_expect(exp: Experiment, label: str) -> tuple[int, int]:
    """(input, output) tokens the label's calls take in a typical run (TYPICAL_*): every game to its round
    limit, no re-asks, the first prompt at 4 characters per token, each later call reading the conversation
    grown by a report and a typical reply."""
    tin = tout = 0.0
    for lineup, x in exp.tables():
        rounds, _ = x.game.max_moves(x.params, len(lineup.seats))
        runs = x.experiment.sessions * x.runs_per_session()
        for seat, entry in enumerate(lineup.seats):
            p = x.players[entry]
            if p.llm is None or p.label != label:
                continue
            p0 = _first_prompt_tokens(x, lineup, seat) * CHARS_PER_TOKEN / TYPICAL_CHARS_PER_TOKEN
            r = min(p.llm.max_tokens, TYPICAL_REPLY_TOKENS)
            tout += runs * rounds * r
            tin += runs * (rounds * p0 + rounds * (rounds - 1) / 2 * (r + TYPICAL_REPORT_TOKENS))
    return math.ceil(tin), math.ceil(tout)


def token_bound(exp: Experiment, label: str, reask: bool = True, chars_per_token: float = CHARS_PER_TOKEN,
                per_call: float = 0.0) -> tuple[int, int]:
    """(input, output) tokens the label's calls can take at most. Each call is at most ``max_tokens`` long;
    a conversation grows by at most the first prompt's size plus a reply per call (a report and the next
    request are shorter than the rules), so call k of a run reads at most p0 + k (p0 + max_tokens)."""
    tin = tout = 0.0
    for lineup, x in exp.tables():
        rounds, _ = x.game.max_moves(x.params, len(lineup.seats))
        runs = x.experiment.sessions * x.runs_per_session()
        m = rounds * (1 + (x.experiment.reask if reask else 0))
        for seat, entry in enumerate(lineup.seats):
            p = x.players[entry]
            if p.llm is None or p.label != label:
                continue
            p0 = _first_prompt_tokens(x, lineup, seat) * CHARS_PER_TOKEN / chars_per_token + per_call
            mt = p.llm.max_tokens
            tout += runs * m * mt
            tin += runs * (m * p0 + m * (m - 1) / 2 * (p0 + mt))
    return math.ceil(tin), math.ceil(tout)


def session_cost_bound(exp: Experiment, spec: ModelSpec, prices: dict[str, tuple[float, float]]) -> float:
    """The most one session of ``exp`` can cost the model's calls (``--max-cost --ray`` holds it before the
    session is handed out): token_bound's rule with every character a token (a byte-level tokenizer's token
    covers at least one byte) and the reply schema's size on every call, per session; 0 without a price."""
    price = price_of(prices, spec.label, [str(spec.entry["model"])] if spec.entry.get("model") else [])
    if price is None or not spec.is_llm:
        return 0.0
    tin, tout = token_bound(exp, spec.label, chars_per_token=1.0, per_call=SCHEMA_TOKENS)
    return cost_usd(price, tin, tout) / max(1, exp.experiment.sessions)


def plan(suite: Suite, spec: ModelSpec, prices: dict[str, tuple[float, float]],
         build_tier: Callable[[str], list[Experiment]]) -> list[TierPlan]:
    """Per tier: LLM calls and tokens at most, and the cost at most when a price names the model."""
    from ..formats.benchsuite import TIERS

    price = price_of(prices, spec.label, [str(spec.entry["model"])] if spec.entry.get("model") else [])
    out = []
    for tier in TIERS:
        exps = build_tier(tier)
        calls = sum(llm_call_bound(e).get(spec.label, 0) for e in exps)
        plain = sum(_calls_no_reask(e, spec.label) for e in exps)
        tin = tout = tin0 = tout0 = 0
        for e in exps:
            a, b = token_bound(e, spec.label)
            c, d = token_bound(e, spec.label, reask=False)
            tin, tout, tin0, tout0 = tin + a, tout + b, tin0 + c, tout0 + d
        ein = eout = 0
        for e in exps:
            a, b = token_expect(e, spec.label)
            ein, eout = ein + a, eout + b
        cost = cost_usd(price, tin, tout) if price is not None and spec.is_llm else None
        cost0 = cost_usd(price, tin0, tout0) if price is not None and spec.is_llm else None
        expected = cost_usd(price, ein, eout) if price is not None and spec.is_llm else None
        out.append(TierPlan(tier, len(exps), sum(e.experiment.sessions for e in exps), calls, plain, tin, tout,
                            tin0, tout0, cost, cost0, ein, eout, expected))
    return out


def _calls_no_reask(exp: Experiment, label: str) -> int:
    n = 0
    for lineup, x in exp.tables():
        rounds, _ = x.game.max_moves(x.params, len(lineup.seats))
        runs = x.experiment.sessions * x.runs_per_session()
        n += sum(runs * rounds for entry in lineup.seats if x.players[entry].llm is not None
                 and x.players[entry].label == label)
    return n


# ---------------------------------------------------------------------------------------------------- play

async def play(items: list[tuple[Experiment, Path, HostOptions]]) -> list[RunResult | BaseException]:
    """Play the experiments side by side in this process (or on their options' engine): one local model and
    one connection pool serve every game, so a local model batches decisions of several games at once. Each
    result is a RunResult or the exception its Host raised; providers are closed once, at the end."""
    hosts = []
    for exp, d, options in items:
        options.keep_providers = True
        hosts.append(Host(exp, d, options))
    try:
        return list(await asyncio.gather(*(h.run() for h in hosts), return_exceptions=True))
    finally:
        await close_all()


def spent_before(run_dirs: list[Path], spec: ModelSpec, prices: dict[str, tuple[float, float]]) -> float:
    """What earlier invocations paid for the model's calls in these run directories: every reply not from the
    response cache, in the decisions log and in the decisions a resume set aside (paid all the same)."""
    from ..formats.rundir import DECISIONS, iter_jsonl

    total = 0.0
    for d in run_dirs:
        for name in (DECISIONS, DECISIONS.replace(".jsonl", ".discarded.jsonl")):
            path = d / name
            if not path.is_file():
                continue
            for rec in iter_jsonl(path):
                if rec.get("label") != spec.label or rec.get("cached"):
                    continue
                models = [m for m in (rec.get("model"), spec.entry.get("model")) if isinstance(m, str)]
                price = price_of(prices, spec.label, models)
                if price is not None:
                    total += cost_usd(price, rec.get("tokens_in") or 0, rec.get("tokens_out") or 0)
    return total
