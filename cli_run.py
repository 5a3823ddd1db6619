"""Running experiments from the command line, shared by ``run``, ``steer`` and ``suite``: exit codes, the
checks on an output directory, signals, and one experiment played to its summary.

Below both command modules (``cli.py``, ``cli_reports.py``), so neither imports the other's internals.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_ERROR, EXIT_CONFIG, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def err(msg: str) -> None:
    print(f"econarena: error: {msg}", file=sys.stderr)


def write_error(d: Path, exc: OSError) -> str:
    """One line for a file-system failure: which path, and the system's reason (no traceback)."""
    where = exc.filename or d
    return f"cannot write to {where}: {exc.strerror or exc}"


def out_dir_problem(d: Path) -> str | None:
    """Why ``d`` cannot be a run directory (a file, unwritable, read-only file system), or None.

    Checked before any game starts, by creating the directory and a file in it, because a permission or
    space problem found after an hour of paid API calls is the worst time to find it.
    """
    if d.exists() and not d.is_dir():
        return f"--out {d}: is a file, not a directory"
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / f".write-test-{os.getpid()}"
        probe.write_text("ok\n", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        return f"--out {d}: cannot write there ({exc.strerror or exc})"
    return None


def same_experiment(d: Path, exp) -> bool:  # noqa: ANN001
    """Whether ``d`` (if it holds a config.toml) was made by this experiment, compared as TOML data.

    Comparing parsed data, not text, lets a directory written by an older release (other quoting) resume.
    """
    from .hosts.config import ConfigError, read_toml, resolved_data

    if not (d / "config.toml").exists():
        return True
    try:
        return read_toml(d / "config.toml") == resolved_data(exp)
    except ConfigError:
        return False


@contextlib.contextmanager
def sigterm_as_sigint() -> Iterator[None]:
    """SIGTERM (kill, systemd, a batch scheduler) stops a run the way Ctrl-C does: manifest says
    ``interrupted``, finished runs are kept, exit 130. The signal is re-raised as SIGINT so asyncio's own
    Ctrl-C handling (cancel the main task, run every ``finally``) does the work."""
    try:
        old = signal.signal(signal.SIGTERM, lambda *_: signal.raise_signal(signal.SIGINT))
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def resume_command(exp, out: Path) -> str:  # noqa: ANN001
    """The exact command that continues ``out``: same file, directory and seed (--seed may have moved it)."""
    return f"econarena run {exp.path} --out {out} --seed {exp.experiment.seed} --resume"


def run_guarded(exp, d: Path, args: argparse.Namespace, *, resume: bool, on_interrupt: str,  # noqa: ANN001
                human_io: Any = None) -> Any:
    """``run_one`` with the CLI's answers to what can stop a run: an exit code (after one clear line) for
    an interrupt, a busy directory, an agent that cannot start or a failing disk; else the result."""
    from .agents.base import AgentError
    from .rundir import RunDirectoryBusy

    try:
        return run_one(exp, d, concurrency=args.concurrency, resume=resume, quiet=args.quiet,
                       cache=not args.no_cache, cache_dir=args.cache_dir, human_io=human_io)
    except KeyboardInterrupt:
        err(f"interrupted; finished runs are kept: {on_interrupt}")
        return EXIT_INTERRUPTED
    except (AgentError, RunDirectoryBusy) as exc:  # e.g. the response cache cannot be opened
        err(str(exc))
        return EXIT_CONFIG
    except OSError as exc:  # a full disk, a directory made read-only mid-run
        err(write_error(d, exc) + f"; finished runs are kept: {resume_command(exp, d)}")
        return EXIT_CONFIG


def run_one(exp, out: Path, *, concurrency: int = 16, resume: bool = False, quiet: bool = False,  # noqa: ANN001
            cache: bool = True, cache_dir: str | None = None, human_io=None):  # noqa: ANN001, ANN201
    """Play one validated experiment into ``out``, write its summary, print the outcome line."""
    from .agents.llm import RuntimeOptions
    from .analysis.metrics import format_table, write_summary
    from .hosts.host import Host, HostOptions
    from .hosts.steer import SteerHost

    options = HostOptions(concurrency=concurrency, resume=resume, quiet=quiet,
                          runtime=RuntimeOptions(cache=cache, cache_path=cache_dir), human_io=human_io)
    host = (SteerHost if exp.steer is not None else Host)(exp, out, options)
    with sigterm_as_sigint():
        result = asyncio.run(host.run())
    summary = write_summary(out, host.dir.tally)  # counted as the records were written: no re-reading
    if not quiet:
        print(format_table(summary))
        if exp.steer is not None:
            print_steering(out)
    print(f"{exp.name}: {result.status}, {result.runs_done}/{result.runs_total} runs, "
          f"{result.decisions} decisions in {result.elapsed_s:.1f}s -> {out}")
    if result.status == "incomplete":
        err(f"{result.runs_incomplete} run(s) stopped on API errors (see 'error' in {out}/decisions.jsonl); "
             f"retry them with: {resume_command(exp, out)}")
    return result


def print_steering(out: Path) -> None:
    """The steering table of a run directory (NashConv, CFR gain, their ratio, agreement, trade values)."""
    from .analysis.families.steering import format_table, steering_table

    print(format_table(steering_table([out])))
