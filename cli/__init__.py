"""``econarena``: the command line's face. It parses the command line and imports the module of the one
command named, no other (``--help`` and ``--version`` import none), so every command starts as fast as
its own imports allow.

The command groups: ``experiments.py`` (run, steer, merge, validate, check, init, list, summary),
``reports.py`` (report, compare, import, analyze, suite, ratings) and ``bench.py`` (bench, leaderboard);
``common.py`` sits below them all (exit codes, output checks, signals, one run), ``terminal.py`` prints
their tables. User errors print one clear message, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from .. import __version__

# every command: its group and the line ``econarena --help`` shows for it (the group's parser says the same:
# tests/test_cli_layout.py holds them equal), in the order shown
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("experiments", "run experiments from TOML files"),
    "steer": ("experiments", "steering experiments ([steer]): CFR over prompt actions, with OpenSpiel"),
    "merge": ("experiments", "join the shard directories of one experiment (run --shard K/N)"),
    "validate": ("experiments", "check TOML files without running anything"),
    "check": ("experiments", "run the contract checks of our games on a game (your own included)"),
    "init": ("experiments", "write a starter folder: the quickstart, the tutorial's files, a models file"),
    "list": ("experiments", "list games and agents"),
    "summary": ("experiments", "print the metrics table of run directories"),
    "report": ("reports", "HTML report with the paper's figures and tables from run directories"),
    "compare": ("reports", "two run directories side by side per label, with the difference"),
    "import": ("reports", "turn another tool's released results into run directories and scores"),
    "analyze": ("reports", "a family's linear models (GLEE): effects x100 with 95%% intervals"),
    "suite": ("reports", "run every experiment of a folder (resumable) and build one report"),
    "ratings": ("reports", "rate a tournament's entrants: Plackett-Luce, Nash averaging, alpha-Rank"),
    "bench": ("bench", "one model, one comparable score: the bench suite played and scored"),
    "leaderboard": ("bench", "many bench results in one table (terminal, CSV, JSON, HTML)"),
}
GROUPS = ("experiments", "reports", "bench")

# the commands that may meet a game or player path; the others never import one
TRUSTING = ("run", "steer", "validate", "check", "summary", "report", "compare", "analyze", "suite")


def group_module(group: str) -> ModuleType:
    """One command group's module, imported when one of its commands is asked for."""
    if group == "experiments":
        from . import experiments

        return experiments
    if group == "reports":
        from . import reports

        return reports
    if group == "bench":
        from . import bench

        return bench
    raise KeyError(group)


def command_of(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is no option (the top level's options,
    ``--help`` and ``--version``, take no value); None when there is none or it is no command."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``econarena``. Only the group of the command ``argv`` names is imported and adds its
    commands' arguments; every other command is a name with its help line. ``argv`` None: every group
    (the documentation and the tests read every command's options)."""
    p = argparse.ArgumentParser(prog="econarena", description="Economic games for language models.")
    p.add_argument("--version", action="version", version=f"econarena {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    wanted = set(GROUPS) if argv is None else {COMMANDS[c][0] for c in [command_of(argv)] if c is not None}
    for group in GROUPS:
        if group in wanted:
            group_module(group).register(sub)
            continue
        for name, (its_group, line) in COMMANDS.items():
            if its_group == group:
                sub.add_parser(name, help=line)
    for name in TRUSTING:  # the one way a game or player module of one's own is imported: named by the user
        if COMMANDS[name][0] in wanted:
            sub.choices[name].add_argument(
                "--trust", action="append", default=[], metavar="DIR",
                help="import game and player modules (package.module:Class) from this folder (repeatable); "
                     "nothing a file names is imported otherwise, not from the current folder nor an experiment's")
    return p


def disk_full(detail: str) -> str:
    """What to do when a folder ran out of space: the temporary folder is where the analysis spills."""
    import tempfile

    first = detail.strip().splitlines()[0][:300] if detail.strip() else "no space left on device"
    return (f"no space left: {first}. The analysis keeps its working database in the temporary folder "
            f"{tempfile.gettempdir()}: free some space there, or set TMPDIR to a folder with more room")


def main(argv: list[str] | None = None) -> int:
    """The console script (``argv`` None: the process's arguments); the command's exit code."""
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    from .common import (  # after parsing: --help and --version need none of it (asyncio, signals)
        ANALYSIS,
        EXIT_CONFIG,
        EXIT_INTERRUPTED,
        EXIT_OK,
        Interrupted,
        err,
        release_dead_streams,
        stopped_by_signals,
        trust_folders,
    )
    if getattr(args, "concurrency", 1) is not None and getattr(args, "concurrency", 1) < 1:
        err("--concurrency must be >= 1")
        return EXIT_CONFIG
    from ..formats.files import FileRefused
    from ..formats.rundir import LogError

    if problem := trust_folders(getattr(args, "trust", [])):
        err(problem)
        return EXIT_CONFIG
    stop = getattr(args, "stop_signals", False)
    if stop == ANALYSIS:  # before pyarrow is imported: its buffers from malloc, which release() trims
        from ..analysis.memory import system_allocator_for_arrow

        system_allocator_for_arrow()
    try:  # run, steer, suite: a stop signal before or after the games ends them as one during them; the
        # analyses (ANALYSIS): SIGTERM and SIGHUP as Ctrl-C, so their temporary folder is removed
        with stopped_by_signals(stop == ANALYSIS) if stop else contextlib.nullcontext():
            code = args.func(args)
        if argv is None and getattr(getattr(args, "engine", None), "cluster_lost", False):
            # the Ray cluster's head is gone: Ray's exit handler would wait a minute on it (then kill this
            # process with 1), and skipping it crashes the interpreter's exit; the run directory is closed
            release_dead_streams()
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
        return code
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt as exc:  # Ctrl-C outside a run (validate, report): nothing to keep, no traceback
        err(f"interrupted by {exc.signame}" if isinstance(exc, Interrupted) else "interrupted")
        return EXIT_INTERRUPTED
    except (LogError, FileRefused) as exc:  # a hand-edited log line, a FIFO or /dev/zero: say where, never a traceback
        err(str(exc))
        return EXIT_CONFIG
    except OSError as exc:  # a log that is a directory, an unreadable file: name it, never a traceback
        if exc.errno == errno.ENOSPC and not exc.filename:
            err(disk_full(str(exc)))
            return EXIT_CONFIG
        err(f"{exc.filename or 'a file'}: {exc.strerror or exc}")
        return EXIT_CONFIG
    except Exception as exc:
        # the analysis's engine (DuckDB) spills to the temporary folder: a full one is said as such, with
        # what to do, never as the engine's traceback
        if type(exc).__module__.lstrip("_").startswith("duckdb") and "No space left on device" in str(exc):
            err(disk_full(str(exc)))
            return EXIT_CONFIG
        from ..analysis.columnar import engine_interrupted

        if engine_interrupted(exc):  # Ctrl-C while the engine ran a query: DuckDB turns it into its own error
            err("interrupted")
            return EXIT_INTERRUPTED
        raise
    finally:
        release_dead_streams()
