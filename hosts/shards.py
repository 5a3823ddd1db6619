"""Shards for batch schedulers (SLURM job arrays, Kubernetes jobs): ``run --shard K/N`` and ``merge``.

The unit is the session, as on Ray: a session's runs share history, so it is never split. A table's
session ``s`` is the pair (table ``li``, ``s``) and belongs to shard ``(s * T + li) % N + 1`` of ``N``
(``T`` tables): a fixed arithmetic rule, the same in every process and on every machine (never Python's
randomised ``hash()``), that deals consecutive sessions round-robin so shards get equal shares.

Each shard is an ordinary run directory (lock, manifest, ``--resume``) whose manifest names its shard;
``merge`` checks that the shards are one experiment, none twice, none missing and each complete, then
writes one run directory whose records equal an unsharded run's (written in session order).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..formats.files import read_bytes
from ..formats.rundir import (
    CONFIG,
    DECISIONS,
    JUDGE_LOG,
    MANIFEST,
    RUNS,
    STEERING,
    RunDirectory,
    dumps_line,
    now_iso,
    read_jsonl,
    run_key,
    write_atomic,
)
from .sharding import in_shard, parse_shard, shard_of, shard_sessions  # noqa: F401 - the rule, named here too


class MergeError(ValueError):
    """Shards that cannot be joined; the message says which directory and why."""


@dataclass
class _Shard:
    path: Path
    index: int
    count: int
    manifest: dict[str, Any]


def _read_shard(d: Path) -> _Shard:
    from .config import ConfigError, read_toml

    if not (d / MANIFEST).exists():
        raise MergeError(f"{d}: not a run directory (no {MANIFEST})")
    manifest = RunDirectory(d).read_manifest()
    shard = manifest.get("shard")
    if not isinstance(shard, dict) or not all(isinstance(shard.get(k), int) for k in ("index", "count")):
        raise MergeError(f"{d}: not a shard (its manifest names no shard: it was not run with --shard K/N)")
    if not (type(shard["index"]) is int and type(shard["count"]) is int and 1 <= shard["index"] <= shard["count"]):
        raise MergeError(f"{d}: its manifest says shard {shard['index']} of {shard['count']}, which no --shard K/N "
                         "writes (1 <= K <= N)")
    try:
        read_toml(d / CONFIG)
    except ConfigError as exc:
        raise MergeError(str(exc)) from None
    return _Shard(d, shard["index"], shard["count"], manifest)


def merge_shards(dirs: list[Path], out: Path) -> dict[str, Any]:
    """Join the shard directories ``dirs`` into the run directory ``out``; returns its manifest."""
    if not dirs:
        raise MergeError("no shard directories given")
    shards = [_read_shard(d) for d in dirs]
    _check_one_run(shards)
    out = Path(out)
    if (problem := out_problem(dirs, out)) is not None:
        raise MergeError(problem)
    if (out / MANIFEST).exists():
        raise MergeError(f"{out} already holds results; merge into a new directory")
    out.mkdir(parents=True, exist_ok=True)
    ordered = sorted(shards, key=lambda s: s.index)
    _write_records(out, ordered)
    shutil.copyfile(shards[0].path / CONFIG, out / CONFIG)  # the first given: its config.toml, as played
    manifest = _merged_manifest(ordered)
    write_atomic(out / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return manifest


def _check_one_run(shards: list[_Shard]) -> None:
    """The shards are one experiment (one N, config and version), each given once, none missing and each
    complete; else a MergeError that names the directory at fault."""
    from .config import first_difference, read_toml

    first = shards[0]
    config = read_toml(first.path / CONFIG)
    for s in shards[1:]:
        if s.count != first.count:
            raise MergeError(f"{s.path} is shard {s.index}/{s.count}, but {first.path} is shard "
                             f"{first.index}/{first.count}: shards of one run share N")
        other = read_toml(s.path / CONFIG)
        if other != config:
            raise MergeError(f"{s.path} holds a different experiment than {first.path} (config.toml "
                             f"{first_difference(config, other)}): only shards of one experiment, seed and "
                             "settings merge")
        if s.manifest.get("econarena_version") != first.manifest.get("econarena_version"):
            # one merged directory records one version: shards played by two would pass for one version's run
            raise MergeError(f"{s.path} was played by econarena {s.manifest.get('econarena_version')!s:.40}, "
                             f"{first.path} by {first.manifest.get('econarena_version')!s:.40}: only shards played "
                             "by one version merge (run the other shards again with the same version)")
    seen: dict[int, Path] = {}
    for s in shards:
        if s.index in seen:
            raise MergeError(f"shard {s.index}/{s.count} is given twice: {seen[s.index]} and {s.path}")
        seen[s.index] = s.path
    absent = first.count - len({k for k in seen if 1 <= k <= first.count})
    if absent:
        raise MergeError(f"{_missing(seen, first.count, absent)} missing: give every shard's directory (found "
                         f"{len(shards)} of {first.count})")
    for s in sorted(shards, key=lambda s: s.index):
        m = s.manifest
        if m.get("status") != "complete" or m.get("runs_complete") != m.get("runs_total"):
            raise MergeError(_unfinished(s))


def _write_records(out: Path, ordered: list[_Shard]) -> None:
    """Write the shards' records into ``out`` in session order, as an unsharded run writes them; a log file
    that any shard holds is written even when empty, and what the shards moved aside is kept."""
    runs: list[dict[str, Any]] = []
    by_run: dict[str, dict[tuple[str, int, int], list[dict[str, Any]]]] = {DECISIONS: {}, JUDGE_LOG: {}}
    extra: list[dict[str, Any]] = []
    keys: dict[tuple[str, int, int], Path] = {}
    for s in ordered:
        held = read_jsonl(s.path / RUNS, kind="runs", strict=True)
        done = sum(1 for r in held if r.get("complete", True))
        if done != s.manifest.get("runs_complete") or len(held) != done:
            # the manifest's counts were summed into the merged one: a runs.jsonl lost or cut short (a copy
            # in part between file systems, a hand edit) merged as "21 runs" over the 18 it held
            raise MergeError(f"{s.path}: its manifest says {s.manifest.get('runs_complete')} run(s) complete, "
                             f"but its {RUNS} holds {done} complete run(s) of {len(held)} record(s): the directory "
                             f"is damaged or copied in part; play what is missing with econarena run FILE.toml "
                             f"--shard {s.index}/{s.count} --out {s.path} --resume, then merge again")
        for r in held:
            if run_key(r) in keys:
                raise MergeError(f"run {run_key(r)} is in two shards ({keys[run_key(r)]} and {s.path}): "
                                 "shards overlap")
            keys[run_key(r)] = s.path
            runs.append(r)
        for name in (DECISIONS, JUDGE_LOG):
            for rec in read_jsonl(s.path / name, kind="decisions" if name == DECISIONS else None, strict=True):
                by_run[name].setdefault(run_key(rec), []).append(rec)
        extra += read_jsonl(s.path / STEERING)
    runs.sort(key=lambda r: (r["session"], r.get("lineup", "melee"), r["run"]))
    order = [run_key(r) for r in runs]
    _write_lines(out / RUNS, runs)
    for name in (DECISIONS, JUDGE_LOG):
        lines = [rec for key in order for rec in by_run[name].get(key, ())]
        if lines or any((s.path / name).exists() for s in ordered):
            _write_lines(out / name, lines)
    if extra or any((s.path / STEERING).exists() for s in ordered):
        _write_lines(out / STEERING, sorted(extra, key=lambda r: (r.get("session", 0), r.get("lineup", ""))))
    for s in ordered:  # what the shards moved aside stays readable, never lost
        for f in sorted(s.path.glob("*.discarded.jsonl")):
            with (out / f.name).open("a", encoding="utf-8") as fh:
                fh.write(read_bytes(f, 2**40).decode("utf-8"))


def _merged_manifest(ordered: list[_Shard]) -> dict[str, Any]:
    """The merged run's manifest: the first shard's, less what names one shard or process, with the
    counts and times summed over all of them and the shards it came from."""
    ms = [s.manifest for s in ordered]
    manifest = {k: v for k, v in ms[0].items() if k not in ("shard", "engine", "resumed_at", "resumes")}
    manifest.update(
        status="complete", started_at=min(m.get("started_at", "") for m in ms), ended_at=now_iso(),
        runs_total=sum(int(m.get("runs_total", 0)) for m in ms),
        runs_complete=sum(int(m.get("runs_complete", 0)) for m in ms), runs_incomplete=0,
        elapsed_s=round(sum(float(m.get("elapsed_s", 0.0)) for m in ms), 3),
        merged_from=[{"shard": f"{s.index}/{s.count}", "path": str(s.path)} for s in ordered])
    return manifest


def out_problem(dirs: list[Path], out: Path) -> str | None:
    """Why ``out`` cannot receive the merge of ``dirs``: one of the shards, or a folder inside one (the shard
    would then hold another run directory, read as part of it by every folder search); checked before
    ``out`` is created."""
    there = os.path.realpath(out)
    for d in dirs:
        here = os.path.realpath(d)
        if there == here:
            return f"--out {out} is one of the shards; merge into a new directory"
        if there.startswith(here.rstrip(os.sep) + os.sep):
            return f"--out {out} lies inside the shard {d}; merge into a new directory outside the shards"
    return None


def _missing(seen: dict[int, Path], n: int, absent: int, shown: int = 8) -> str:
    """The first missing shards by name and how many more: N may be huge (``--shard 1/10**20`` is valid),
    so they are found among the first ``len(seen) + shown`` numbers, never by walking 1..N."""
    first = [k for k in range(1, min(n, len(seen) + shown) + 1) if k not in seen][:shown]
    names = ", ".join(f"{k}/{n}" for k in first)
    return f"shard(s) {names}" + (f" and {absent - len(first)} more" if absent > len(first) else "")


def _unfinished(s: _Shard) -> str:
    """Why shard ``s`` cannot be merged yet, from what its directory holds: still running (its lock is
    held), stopped before it ended (killed: the manifest still says running), or ended incomplete; with
    the runs it has finished, counted from its log (a killed process never wrote the manifest's counts)."""
    from ..formats.locks import holder_of
    from ..formats.rundir import LOCK, complete_runs

    m = s.manifest
    status = m.get("status", "unfinished")
    done = len(complete_runs(read_jsonl(s.path / RUNS, kind="runs")))
    total = m.get("runs_total")
    runs = f"{done}/{total} runs finished" if isinstance(total, int) else f"{done} run(s) finished"
    resume = (f"econarena run FILE.toml --shard {s.index}/{s.count} --out {s.path} --resume (the file and "
              "options it was started with)")
    name = f"shard {s.index}/{s.count} ({s.path})"
    if status == "running":
        holder = holder_of(s.path / LOCK)
        if holder is not None:
            return (f"{name} is still running ({holder}; {runs} so far): wait for it to end (with Slurm, make "
                    "the merge job depend on the array: sbatch --dependency=afterok:JOBID), then merge again")
        return (f"{name} stopped before it ended: its process was killed or lost (the manifest still says "
                f"running; {runs}); finish it with {resume}, then merge again")
    why = "; ".join(m.get("stopped") or []) or (f"{m.get('runs_incomplete')} run(s) stopped on API errors"
                                                 if m.get("runs_incomplete") else "")
    return (f"{name} is {status} ({runs}{': ' + why if why else ''}); finish it with {resume}, then merge "
            "again")


def _write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    """Lines encoded as the run directory encodes them, so a merged log is byte for byte an unsharded one."""
    write_atomic(path, b"".join(dumps_line(r) for r in records))
