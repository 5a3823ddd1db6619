"""Readable transcripts of a few games that talk (``GameInfo.messages`` is not ``"none"``).

Why generic: every language game logs its public move as ``events["say"]`` (player, message and the
public structured part: offer, proposal, decision) and its secret notes as reply fields that its action
spec marks ``secret``. So one renderer shows any such game: the public message and offer per turn, and
each secret note marked as such (it was never shown to the opponent). A round without a ``say`` event
shows the seats' public reply fields. Everything is HTML-escaped: replies are model (or person) text.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..games import GAMES
from ..games.base import Game
from ..rundir import CONFIG, RUNS, read_jsonl

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_CHARS = 2000  # a message longer than this is cut in the page (the run directory keeps it whole)
WALK_STEPS = 64

CSS = """
.transcript{border-left:3px solid #c9d3dd;padding:.2rem .8rem;margin:.4rem 0 1rem;font-size:.9rem}
.transcript .turn{margin:.35rem 0} .transcript .who{font-weight:600;color:#234}
.transcript .rnd{color:#777;font-size:.8rem;margin-right:.4rem} .transcript .seat{color:#777;font-size:.8rem}
.transcript .msg{white-space:pre-wrap}
.transcript .act{display:inline-block;background:#eef4fb;border-radius:3px;padding:0 .35rem;margin-left:.3rem}
.transcript .secret{background:#fbeff2;border-left:3px solid #b0306a;padding:.15rem .5rem;margin:.2rem 0 .2rem 1.2rem;
white-space:pre-wrap} .transcript .secret b{color:#8a1f50}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _value(v: Any) -> str:
    """A structured value as a reader writes it: ``X: 5, Y: 2`` for an allocation."""
    if isinstance(v, Mapping):
        return ", ".join(f"{k}: {_value(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(_value(x) for x in v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + f" [... {len(text) - MAX_CHARS} more characters]"


def secret_fields(game: Game, params: Mapping[str, Any] | None, n_players: int = 2) -> frozenset[str]:
    """Names of the reply fields the game's action specs mark secret, found by playing the game's
    random policy from one drawn configuration (phases differ in what they ask)."""
    names: set[str] = set()
    try:
        setup = game.setup(game.Params(**dict(params or {})), n_players, np.random.default_rng(0))
        state = game.initial_state(setup)
        rng = np.random.default_rng(0)
        for _ in range(WALK_STEPS):
            movers = game.to_move(state)
            if not movers:
                break
            for seat in movers:
                names.update(f.name for f in game.action_spec(state, seat).fields if f.secret)
            if "random" not in game.policies():
                break
            state = game.apply(state, {i: game.strategy(state, i, "random", rng=rng) for i in movers}, rng)
    except Exception:  # noqa: BLE001 - a game that cannot be walked still shows its public transcript
        pass
    return frozenset(names)


def _who(labels: Sequence[str], seat: Any) -> str:
    name = labels[seat] if isinstance(seat, int) and 0 <= seat < len(labels) else "?"
    return f"{_esc(name)} <span class='seat'>(seat {_esc(seat)})</span>"


def _turn(rnd: Any, labels: Sequence[str], seat: Any, message: Any, public: Mapping[str, Any]) -> str:
    parts = [f"<div class='turn'><span class='rnd'>round {_esc(rnd)}</span><span class='who'>{_who(labels, seat)}"
             "</span>:&nbsp;"]
    if message not in (None, ""):
        parts.append(f"<span class='msg'>&ldquo;{_esc(_cut(str(message)))}&rdquo;</span>")
    for k, v in public.items():
        if v is not None:
            parts.append(f"<span class='act'>{_esc(k)}: {_esc(_cut(_value(v)))}</span>")
    return "".join(parts) + "</div>"


def transcript_html(round_log: Iterable[Mapping[str, Any]], labels: Sequence[str], secret: Iterable[str]) -> str:
    """One run's transcript: per round each public move (message + structured part), then the secret
    notes of that round, each marked as never shown to the opponent."""
    secret = frozenset(secret)
    out = ["<div class='transcript'>"]
    for entry in round_log:
        rnd = entry.get("round", "?")
        events = entry.get("events") or {}
        actions = entry.get("actions") or []
        said = events.get("say") if isinstance(events, Mapping) else None
        says = [said] if isinstance(said, Mapping) else [s for s in said if isinstance(s, Mapping)] \
            if isinstance(said, list) else []
        if says:
            for s in says:
                public = {k: v for k, v in s.items() if k not in ("player", "message") and k not in secret}
                out.append(_turn(rnd, labels, s.get("player"), s.get("message"), public))
        else:  # no public transcript entry: the seats' public reply fields
            for seat, act in enumerate(actions):
                if isinstance(act, Mapping):
                    public = {k: v for k, v in act.items() if k not in secret and k != "message"}
                    out.append(_turn(rnd, labels, seat, act.get("message"), public))
        for seat, act in enumerate(actions):
            if not isinstance(act, Mapping):
                continue
            for k in sorted(secret & set(act)):
                if act[k] not in (None, ""):
                    out.append(f"<div class='secret' data-secret='{_esc(k)}'><b>secret {_esc(k)}</b> of "
                               f"{_who(labels, seat)}, never shown to the opponent: {_esc(_cut(str(act[k])))}</div>")
    if len(out) == 1:
        out.append("<p class='meta'>(no moves)</p>")
    return "\n".join(out) + "\n</div>"


def _outcome(run: Mapping[str, Any], labels: Sequence[str]) -> str:
    pay = run.get("payoffs") or []
    parts = [f"{labels[i] if i < len(labels) else i}: {_value(p)}" for i, p in enumerate(pay)]
    return "payoffs " + ", ".join(parts) if parts else ""


def transcripts_section(run_dirs: Iterable[str | Path], max_runs: int = 3) -> str | None:
    """The report's transcripts: up to ``max_runs`` complete runs per directory of a game that talks,
    each in a collapsible block. None when no directory holds such a game."""
    blocks: list[str] = []
    for d in map(Path, run_dirs):
        try:
            cfg = tomllib.loads((d / CONFIG).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            continue
        exp = cfg.get("experiment", {})
        game = GAMES.get(exp.get("game", ""))
        if game is None or game.info.messages == "none":
            continue
        runs = [r for r in read_jsonl(d / RUNS, kind="runs") if r.get("complete", True) and r.get("round_log")]
        runs.sort(key=lambda r: (str(r.get("lineup", "")), r.get("session", 0), r.get("run", 0)))
        if not runs:
            continue
        n = len(runs[0].get("labels") or []) or 2
        secret = secret_fields(game, cfg.get("game"), n)
        blocks.append(f"<h3>{_esc(exp.get('name', d.name))} ({_esc(game.info.title)}): {min(max_runs, len(runs))} "
                      f"of {len(runs)} run(s)</h3>")
        for i, run in enumerate(runs[:max_runs]):
            labels = [str(x) for x in run.get("labels") or []]
            head = (f"table {run.get('lineup', '')}, session {run.get('session')}, run {run.get('run')}: "
                    f"{' vs '.join(labels)}; {len(run['round_log'])} move(s); {_outcome(run, labels)}")
            blocks.append(f"<details{' open' if i == 0 else ''}><summary>{_esc(head)}</summary>"
                          f"{transcript_html(run['round_log'], labels, secret)}</details>")
    if not blocks:
        return None
    intro = ("<p>A few games as they were played: each turn's public message and offer, and secret notes "
             "(<span style='color:#8a1f50'>marked</span>) that the opponent never saw. Run directories keep every "
             "run; <code>econarena report --transcripts N</code> shows up to N per directory.</p>")
    return f"<style>{CSS}</style>" + intro + "\n".join(blocks)
