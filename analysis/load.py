"""Run directories -> tidy pandas frames, the one input every table, figure and comparison reads.

Why frames: the metrics of ``analysis/metrics.py`` are per label for one directory; a paper needs the same
quantities sliced by game, environment, history, prompt and configuration group across many directories,
with the session as the resampling unit. Three frames carry that:

- ``players``: one row per player and complete run (the unit every metric averages over). ``payoff`` is
  the scored payoff (0 for a player-run with a rule break, in every game; ``game_payoff`` is the game's own
  figure), and ``deviation`` and ``action`` are NaN for such a player-run: a player that never answers
  validly must not look rational in any table or figure (see ``analysis/metrics.py``);
- ``runs``: one row per run (complete or not), with the drawn parameters;
- ``decisions``: one row per decision (reply, violation kind, tokens, latency).

Every row carries the directory's setting columns: ``run_dir, experiment, game, environment, history,
prompt, group`` plus ``cluster`` (``run_dir|lineup|session``), the unit the bootstrap resamples, and
``stratum`` (``run_dir|lineup``), within which it resamples.

Configuration group (L/M/H, the paper's Figure 3): an ``[experiment] group`` key when the config has one;
else a ``L``/``M``/``H`` token in the experiment name (``bc-groups-M``); else the game's scale, the median
over sessions of the drawn beauty-contest upper bound (< 100 L, < 1000 M, else H, after the paper's
[10,100) / [100,1000) / [1000,10000)) or of the auction assets (<= 100 L, <= 1000 M, else H, after the
paper's A = 100 / 1000 / 10000). ``group_source`` says which rule decided.

Roles: in the ``rational`` environment the hard-coded equilibrium opponents are ``role = "opponent"``;
the player under test (the lineup's own label) and everyone elsewhere are ``"player"``. Per-label tables
leave opponents out: they play the equilibrium by construction.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..games import GAMES
from ..games.base import GameInfo
from ..games.text import storable
from ..rundir import CONFIG, DECISIONS, MANIFEST, RUNS, LogError, iter_jsonl, json_text, read_jsonl, run_key
from .metrics import broke

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SETTING_COLUMNS = ["run_dir", "experiment", "game", "environment", "history", "prompt", "group"]
GROUPS = ("L", "M", "H")
_GROUP_IN_NAME = re.compile(r"(?:^|[-_.])([LMH])(?:$|[-_.])")


@dataclass
class Frames:
    """The loaded run directories; ``experiments`` has one row per directory."""

    players: pd.DataFrame
    runs: pd.DataFrame
    decisions: pd.DataFrame
    experiments: pd.DataFrame
    dirs: list[str] = field(default_factory=list)

    def subset(self, **where: Any) -> Frames:
        """Frames restricted to rows whose setting columns match (a value or a list of values)."""

        def keep(df: pd.DataFrame) -> pd.DataFrame:
            mask = pd.Series(True, index=df.index)
            for col, val in where.items():
                vals = list(val) if isinstance(val, (list, tuple, set)) else [val]
                mask &= df[col].isin(vals)
            return df[mask]

        exps = keep(self.experiments)
        return Frames(keep(self.players), keep(self.runs), keep(self.decisions), exps,
                      [d for d in self.dirs if d in set(exps["run_dir"])])


def is_run_dir(path: Path) -> bool:
    return (path / RUNS).is_file() and (path / CONFIG).is_file()


def expand_run_dirs(paths: Iterable[str | Path], *, once: bool = True) -> list[Path]:
    """Run directories named directly, or found one level below a folder of them (``runs/paper``), each
    counted once: a directory whose runs were all met in another (a shard beside its merge) is left out with
    a warning (:func:`once_each`). Every reader of several directories starts here; ``once=False`` only
    finds them (the CLI checking each argument on its own)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if is_run_dir(p):
            out.append(p)
        elif p.is_dir():
            out += sorted(c for c in p.iterdir() if c.is_dir() and is_run_dir(c))
    seen: set[Path] = set()
    out = [p for p in out if not (p.resolve() in seen or seen.add(p.resolve()))]  # type: ignore[func-returns-value]
    return once_each(out) if once else out


# a report reads the same directories in several sections: each warning once per set of directories read
_WARNED: set[tuple[frozenset[Path], str]] = set()


def _warn(dirs: Sequence[Path], text: str) -> None:
    key = (frozenset(dirs), text)
    if key not in _WARNED:
        _WARNED.add(key)
        print(f"econarena: warning: {storable(text)}", file=sys.stderr)


def once_each(dirs: Sequence[Path]) -> list[Path]:
    """``dirs`` without those whose every complete run is a run of another directory of them.

    A run is identified by its experiment (the bytes of config.toml: name, seed, settings), its lineup,
    session and run, and its record. The README's layout keeps shards beside their merge (``runs/x-1``,
    ``runs/x-2``, ``runs/x``): a report over the folder counted every game twice (n = 24 for 12 games).
    Directories are taken largest first, so a merge is kept and its shards are left out, in any order given. A directory
    that shares some runs with another and holds others too cannot be counted right either way: a
    LogError names both. A shard read without the others of its experiment is named too (its numbers are
    part of that experiment's)."""
    ident: dict[Path, str] = {}
    keys: dict[Path, set[tuple[str, tuple[str, int, int, str]]]] = {}
    for d in dirs:
        try:
            ident[d] = hashlib.sha256((d / CONFIG).read_bytes()).hexdigest()
            keys[d] = {(ident[d], k) for k in _complete_keys(d)}
        except (OSError, ValueError, KeyError, TypeError):
            keys[d] = set()  # unreadable here: the reader that reads it says why
    seen: dict[tuple[str, tuple[str, int, int, str]], Path] = {}
    left: set[Path] = set()
    for d in sorted(dirs, key=lambda x: -len(keys[x])):  # stable: the given order among equals
        met = {seen[k] for k in keys[d] if k in seen}
        if keys[d] and met and keys[d].issubset(seen):
            _warn(dirs, f"{d}: every run in it is also in {', '.join(map(str, sorted(met)))} (the same experiment, "
                  "lineup, session and run: a shard beside its merge?); counted once, from there")
            left.add(d)
            continue
        if met:
            shared = sum(1 for k in keys[d] if k in seen)
            raise LogError(f"{d} holds {shared} of the runs of {', '.join(map(str, sorted(met)))} (the same "
                           f"experiment, lineup, session and run) and {len(keys[d]) - shared} others: they would "
                           "be counted twice; read them apart, or merge the shards once (econarena merge)")
        seen.update(dict.fromkeys(keys[d], d))
    kept = [d for d in dirs if d not in left]
    shards: dict[tuple[str, int], set[int]] = {}
    for d in kept:
        if (shard := _shard_of(d)) is not None and d in ident:
            shards.setdefault((ident[d], shard[1]), set()).add(shard[0])
    for d in kept:
        if (shard := _shard_of(d)) is not None and d in ident and len(have := shards[(ident[d], shard[1])]) < shard[1]:
            _warn(kept, f"{d} is shard {shard[0]}/{shard[1]} of its experiment, and only shard(s) "
                  f"{', '.join(map(str, sorted(have)))} of {shard[1]} are read: its numbers are part of that "
                  "experiment's (econarena merge joins the shards)")
    return kept


def _complete_keys(d: Path) -> Iterator[tuple[str, int, int, str]]:
    """Each complete run's lineup, session and run, with a digest of its whole record: a merge copies its
    shards' records as they are, while two experiments whose config.toml happen to match (hand-written,
    say) never play byte-identical games."""
    for r in iter_jsonl(d / RUNS, kind="runs"):
        if r.get("complete", True):
            record = json.dumps(r, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
            yield (*run_key(r), hashlib.blake2b(record, digest_size=12).hexdigest())


def _shard_of(d: Path) -> tuple[int, int] | None:
    """(index, count) of a shard's run directory, from its manifest; None for any other."""
    try:
        shard = json.loads((d / MANIFEST).read_text(encoding="utf-8")).get("shard")
        return (int(shard["index"]), int(shard["count"])) if isinstance(shard, dict) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _info(game: str) -> GameInfo | None:
    found = GAMES.get(game)
    return found.info if found is not None else None


def _scale_group(game: str, scale: float | None) -> str | None:
    """Stake group by the size of the game's numbers (its declared ``stakes_key``)."""
    if scale is None or math.isnan(scale):
        return None
    info = _info(game)
    if info is not None and info.stakes_inclusive:
        return "L" if scale <= 100 else "M" if scale <= 1000 else "H"
    return "L" if scale < 100 else "M" if scale < 1000 else "H"


def _mean(x: Any) -> float:
    if isinstance(x, (list, tuple)):
        vals = [float(v) for v in x if v is not None]
        return float(np.mean(vals)) if vals else math.nan
    return float(x) if x is not None else math.nan


def _scale(game: str, params: dict[str, Any]) -> float:
    """The size of the game's numbers: the setup key the game declares as its stakes."""
    info = _info(game)
    key = info.stakes_key if info is not None else None
    return _mean(params.get(key)) if key else math.nan


def _action_scale(game: str, run: dict[str, Any], params: dict[str, Any], seat: int) -> float:
    """What normalises a seat's action in figures: the game's ``scale_key`` (a number or per seat)."""
    info = _info(game)
    key = info.scale_key if info is not None else None
    if key is None:
        return math.nan
    value = params.get(key)
    if isinstance(value, list):
        return _f(_at(value, seat))
    return _f(value)


def _f(x: Any) -> float:
    try:
        return float(x) if x is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _kept(x: Any) -> Any:
    """A logged reply's text as a table holds it: a lone surrogate in a log written before replies were held
    to the text rule (games/text.py) is shown as its escape instead of failing the whole report."""
    return storable(x) if isinstance(x, str) else x


def _at(seq: Any, i: int) -> Any:
    return seq[i] if isinstance(seq, (list, tuple)) and i < len(seq) else seq


def _read_dir(path: Path, messages: bool) -> tuple[dict[str, Any], list[dict], list[dict], list[dict]]:
    cfg = tomllib.loads((path / CONFIG).read_text(encoding="utf-8"))
    exp = cfg.get("experiment", {})
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        manifest = {}
    runs = read_jsonl(path / RUNS, kind="runs", strict=True)
    game = exp.get("game", "")
    complete = [r for r in runs if r.get("complete", True)]
    scales = [_scale(game, r.get("params") or {}) for r in complete]
    scale = float(np.nanmedian(scales)) if scales and not all(math.isnan(s) for s in scales) else math.nan
    group, source = exp.get("group"), "config"
    if group not in GROUPS:
        m = _GROUP_IN_NAME.search(exp.get("name", path.name))
        group, source = (m.group(1), "name") if m else (_scale_group(game, scale), "scale")
    info = {
        "run_dir": str(path),
        "experiment": exp.get("name", path.name),
        "game": game,
        "environment": exp.get("environment", "melee"),
        "history": exp.get("history", "none"),
        "prompt": exp.get("prompt", "default"),
        "group": group or "?",
        "group_source": source if group else "none",
        "scale": scale,
        "sessions": int(exp.get("sessions", 0)),
        "runs_per_session": int(exp.get("runs", 1)),
        "max_history": int(exp.get("max_history", 0)),
        "players_per_game": int(exp.get("players_per_game", 0)),
        "seed": exp.get("seed"),
        "status": manifest.get("status", "unknown"),
        "runs_complete": len(complete),
        "runs_incomplete": len(runs) - len(complete),
        "description": exp.get("description", ""),
    }
    keys = {run_key(r) for r in complete}
    decisions = []
    for d in iter_jsonl(path / DECISIONS, kind="decisions", strict=True):  # a line at a time: the prompts
        if run_key(d) in keys:  # are most of the log and are dropped as they come
            if not messages:
                d.pop("messages", None)
            decisions.append(d)
    return info, runs, complete, decisions


def _cluster(run_dir: str, lineup: str, session: int) -> str:
    return f"{run_dir}|{lineup}|{session}"


def load(run_dirs: str | Path | Sequence[str | Path], *, messages: bool = False) -> Frames:
    """Load one or many run directories (or folders of them) into tidy frames.

    ``messages=True`` keeps the prompt messages in ``decisions`` (as JSON text); they are large, so off by
    default. Only complete runs enter ``players`` and ``decisions``; ``runs`` keeps every run with its
    ``complete`` flag.
    """
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    dirs = expand_run_dirs(run_dirs)
    if not dirs:
        raise FileNotFoundError(f"no run directories (with runs.jsonl and config.toml) in: "
                                f"{', '.join(map(str, run_dirs))}")
    exp_rows, run_rows, player_rows, dec_rows = [], [], [], []
    for path in dirs:
        info, runs, complete, decisions = _read_dir(path, messages)
        exp_rows.append(info)
        setting = {k: info[k] for k in SETTING_COLUMNS}
        tokens: dict[tuple[str, int, int, int], list[float]] = {}
        structured: dict[tuple[str, int, int, int], str] = {}  # a player-run's mode, if constrained
        for d in decisions:
            k = (*run_key(d), int(d["player"]))
            if d.get("structured") not in (None, "off"):
                structured[k] = d["structured"]
            acc = tokens.setdefault(k, [0, 0, 0, 0, 0.0])
            acc[0] += 1
            acc[1] += d.get("violation") not in (None, "truncated")  # the model's own errors (tally.py)
            acc[2] += d.get("tokens_in") or 0
            acc[3] += d.get("tokens_out") or 0
            acc[4] += d.get("latency_s") or 0.0
        for r in runs:
            lineup, session, run = run_key(r)
            params = r.get("params") or {}
            run_rows.append({
                **setting, "lineup": lineup, "session": session, "run": run,
                "cluster": _cluster(info["run_dir"], lineup, session), "stratum": f"{info['run_dir']}|{lineup}",
                "complete": bool(r.get("complete", True)), "void": bool(r.get("void", False)),
                "rounds": r.get("rounds"), "n_players": len(r.get("labels", [])),
                "scale": _scale(info["game"], params), "params": json.dumps(params, sort_keys=True),
            })
        for r in complete:
            lineup, session, run = run_key(r)
            params = r.get("params") or {}
            winners = set(r.get("winners") or [])
            n = len(r["labels"])
            for i, label in enumerate(r["labels"]):
                agent = _at(r.get("agents"), i)
                role = "opponent" if info["environment"] == "rational" and label != lineup else "player"
                scale = _action_scale(info["game"], r, params, i)
                valid = bool(r["valid"][i])
                # a rule break: no action to plot (an English-auction breaker's exit price is not a choice),
                # no deviation, and a scored payoff of 0 (see analysis/metrics.py)
                action = _f(_at(r.get("actions"), i)) if valid else math.nan
                ne_action = _f(_at(r.get("ne_actions"), i))
                dec = tokens.get((lineup, session, run, i), [0, 0, 0, 0, 0.0])
                player_rows.append({
                    **setting, "lineup": lineup, "session": session, "run": run,
                    "cluster": _cluster(info["run_dir"], lineup, session), "stratum": f"{info['run_dir']}|{lineup}",
                    "seat": i, "label": label, "agent": agent, "model": _at(r.get("models"), i),
                    "role": role, "n_players": n,
                    "action": action, "ne_action": ne_action,
                    "scale": scale,
                    "action_norm": action / scale if scale else math.nan,
                    "ne_action_norm": ne_action / scale if scale else math.nan,
                    "valid": valid, "broke": broke(r, i),
                    "payoff": _f(r["payoffs"][i]) if valid else 0.0, "game_payoff": _f(r["payoffs"][i]),
                    "ne_payoff": _f(_at(r.get("ne_payoffs"), i)),
                    "deviation": _f(r["deviation"][i]) if valid else math.nan, "win": i in winners,
                    "void": bool(r.get("void")),
                    "private_value": _f(_at(r.get("private_values"), i)),
                    "assets": _f(_at(params.get("assets"), i)),
                    "decisions": dec[0], "violations": dec[1], "tokens_in": dec[2], "tokens_out": dec[3],
                    "latency_s": dec[4], "structured": structured.get((lineup, session, run, i)),
                })
        for d in decisions:
            lineup, session, run = run_key(d)
            label = d.get("label")
            dec_rows.append({
                **setting, "lineup": lineup, "session": session, "run": run, "round": d.get("round"),
                "cluster": _cluster(info["run_dir"], lineup, session), "stratum": f"{info['run_dir']}|{lineup}",
                "player": d.get("player"), "label": label, "agent": d.get("agent"), "model": _kept(d.get("model")),
                "role": "opponent" if info["environment"] == "rational" and label != lineup else "player",
                "template": d.get("template"), "response": _kept(d.get("response")),
                "action": json_text(d.get("action")), "valid": bool(d.get("valid")),
                "violation": d.get("violation"), "detail": _kept(d.get("detail")),
                "latency_s": _f(d.get("latency_s")), "tokens_in": _f(d.get("tokens_in")),
                "tokens_out": _f(d.get("tokens_out")), "cached": bool(d.get("cached")), "error": _kept(d.get("error")),
                "structured": d.get("structured"),
                **({"messages": json.dumps(d.get("messages"))} if messages else {}),
            })
    players = pd.DataFrame(player_rows, columns=_PLAYER_COLUMNS)
    runs_df = pd.DataFrame(run_rows, columns=_RUN_COLUMNS)
    dec_cols = _DECISION_COLUMNS + (["messages"] if messages else [])
    decisions_df = pd.DataFrame(dec_rows, columns=dec_cols)
    for df in (players, runs_df, decisions_df):
        for col in ("session", "run"):
            df[col] = df[col].astype("int64")
    return Frames(players, runs_df, decisions_df, pd.DataFrame(exp_rows), [str(d) for d in dirs])


_PLAYER_COLUMNS = [*SETTING_COLUMNS, "lineup", "session", "run", "cluster", "stratum", "seat", "label", "agent",
                   "model", "role", "n_players", "action", "ne_action", "scale", "action_norm", "ne_action_norm",
                   "valid",
                   "broke", "payoff", "game_payoff", "ne_payoff", "deviation", "win", "void", "private_value", "assets",
                   "decisions", "violations", "tokens_in", "tokens_out", "latency_s", "structured"]
_RUN_COLUMNS = [*SETTING_COLUMNS, "lineup", "session", "run", "cluster", "stratum", "complete", "void", "rounds",
                "n_players", "scale", "params"]
_DECISION_COLUMNS = [*SETTING_COLUMNS, "lineup", "session", "run", "round", "cluster", "stratum", "player", "label",
                     "agent", "model", "role", "template", "response", "action", "valid", "violation", "detail",
                     "latency_s", "tokens_in", "tokens_out", "cached", "error", "structured"]


def export(frames: Frames, out: str | Path) -> list[Path]:
    """Write ``decisions.parquet``, ``runs.parquet`` (one row per run) and ``players.parquet`` (one row per
    player and complete run: the tidy table most analyses start from)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in (("decisions.parquet", frames.decisions), ("runs.parquet", frames.runs),
                     ("players.parquet", frames.players)):
        df.to_parquet(out / name, index=False)
        written.append(out / name)
    return written
