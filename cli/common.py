"""Running experiments from the command line, shared by ``run``, ``steer`` and ``suite``: exit codes, the
checks on an output directory, signals, and one experiment played to its summary.

Below both command modules (``cli/experiments.py``, ``cli/reports.py``), so neither imports the other's internals.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

EXIT_OK, EXIT_ERROR, EXIT_CONFIG, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def warn(msg: str) -> None:
    """One warning line on stderr (something the user should know; the command still did its work)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"econarena: warning: {msg}", file=sys.stderr, flush=True)


def err(msg: str) -> None:
    """One error line on stderr; a terminal that is gone (a closed SSH session) or a closed stderr does not
    turn it into a second failure: the manifest and the exit code still tell what happened."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"econarena: error: {msg}", file=sys.stderr, flush=True)


def release_dead_streams() -> None:
    """Point stdout and stderr at /dev/null when they can no longer be written (a closed SSH session: EIO),
    so the interpreter's final flush does not replace the exit code with 120 and a traceback."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            with contextlib.suppress(OSError, ValueError):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, stream.fileno())
                os.close(null)
        except AttributeError:  # closed on entry (2>&-): None
            pass


def write_error(d: Path, exc: OSError) -> str:
    """One line for a file-system failure: which path, and the system's reason (no traceback)."""
    where = exc.filename or d
    return f"cannot write to {where}: {exc.strerror or exc}"


@overload
def failed_job(result: BaseException, d: Path, command: str) -> int: ...
@overload
def failed_job(result: object, d: Path, command: str) -> int | None: ...
def failed_job(result: Any, d: Path, command: str) -> int | None:
    """The exit code of a job that ended in an exception instead of its result (an agent that cannot start,
    a busy run directory, a file-system failure, an interruption), after one line saying why and how to go on
    (``command``: the one to run again, "suite", "bench"); None for a result. Anything else is re-raised."""
    from ..agents.base import AgentError
    from ..formats.rundir import RunDirectoryBusy
    from ..games.base import GameError

    if isinstance(result, (AgentError, RunDirectoryBusy)):
        err(str(result))
        return EXIT_CONFIG
    if isinstance(result, GameError):
        err(f"{result}; finished runs are kept")
        return EXIT_ERROR
    if isinstance(result, OSError):
        err(write_error(d, result) + f"; finished runs are kept: run the same {command} command again")
        return EXIT_CONFIG
    if isinstance(result, KeyboardInterrupt):
        err(f"interrupted; finished runs are kept: run the same {command} command again to continue")
        return EXIT_INTERRUPTED
    if isinstance(result, BaseException):
        raise result
    return None


def in_file(exp: Any, problems: list[str]) -> list[str]:
    """Problems found after loading (keys, SDKs, local model paths) named with their file, as the loader's
    are: with several files on the command line, ``players[0]`` alone does not say which."""
    return [f"{exp.path}: {p}" if exp.path is not None else p for p in problems]


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


def config_difference(d: Path, exp) -> str:  # noqa: ANN001
    """What differs between ``d``'s config.toml and ``exp`` (``experiment.sessions: 50 != 60``), for the
    refusal to resume another experiment: the user learns which key to put back."""
    from ..hosts.config import ConfigError, first_difference, read_toml, resolved_data

    try:
        return first_difference(read_toml(d / "config.toml"), resolved_data(exp))
    except ConfigError as exc:
        return str(exc)


def same_experiment(d: Path, exp) -> bool:  # noqa: ANN001
    """Whether ``d`` (if it holds a config.toml) was made by this experiment, compared as TOML data.

    Comparing parsed data, not text, lets a directory written by an older release (other quoting) resume.
    """
    from ..hosts.config import ConfigError, read_toml, resolved_data

    if not (d / "config.toml").exists():
        return True
    try:
        return read_toml(d / "config.toml") == resolved_data(exp)
    except ConfigError:
        return False


# a parser's ``stop_signals`` for the commands that only read and analyse (report, summary, ...), beside True
# for those that play (run, steer, suite): see stopped_by_signals
ANALYSIS = "analysis"
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")  # Ctrl-C; kill, a scheduler, systemd; a closed terminal


class Interrupted(KeyboardInterrupt):
    """A stop signal ended the run (its manifest says ``interrupted``); ``signame`` names the signal."""

    def __init__(self, signame: str) -> None:
        super().__init__(signame)
        self.signame = signame


def run_until_signalled(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, stopped by SIGINT, SIGTERM or SIGHUP whatever dispositions were inherited.

    Why not asyncio's own Ctrl-C handling: asyncio handles SIGINT only when Python's default handler is
    installed, and a process started by a batch script, a CI job or ``cmd &`` in a non-interactive shell
    inherits SIGINT as *ignored*, so neither Ctrl-C nor a SIGTERM mapped onto it could stop a run. Handlers
    installed on the running loop work whatever was inherited. The first signal cancels the main task (the
    Host then marks the manifest ``interrupted`` and closes its files); a signal that comes once the main
    task is over (waiting for a model thread to finish its batch) exits at once with 130, the manifest
    being written. A SIGHUP that was ignored on entry (``nohup``) stays ignored: that is what nohup asks for.
    The previous dispositions are restored afterwards. Raises :class:`Interrupted` after a signal.
    """
    import asyncio  # here, not at the top: --help and the commands that run no game never pay for it

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    main = loop.create_task(coro)
    received: list[str] = []

    def on_signal(name: str) -> None:
        received.append(name)
        if main.done():  # only threads are left to wait for, and the manifest is final
            _force_exit(name)
        main.cancel()

    previous = _install_stop_handlers(loop, on_signal)
    try:
        try:
            return loop.run_until_complete(main)
        except asyncio.CancelledError:
            if received:
                raise Interrupted(received[0]) from None
            raise
    finally:
        try:
            _cancel_remaining(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            for sig, handler in previous.items():
                loop.remove_signal_handler(sig)
                if handler is not None:  # None: set outside Python, left at the default
                    signal.signal(sig, handler)
            asyncio.set_event_loop(None)
            loop.close()


@contextlib.contextmanager
def stopped_by_signals(analysis: bool = False) -> Iterator[None]:
    """For a whole ``run``/``steer``/``suite`` command: a stop signal outside the event loop (reading the
    files, checking the directory, writing the summary) raises :class:`Interrupted`, so it ends the command
    with 130 like a signal during the games. Without this a SIGINT inherited as ignored (``cmd &``) was lost
    during start-up and the run went on, and SIGTERM or SIGHUP killed it with 143 or 129. The event loop
    installs its own handlers while it runs (:func:`run_until_signalled`); a second signal here exits at
    once. nohup's ignored SIGHUP stays ignored; the previous dispositions come back afterwards.

    ``analysis`` (report, summary, compare, ...): SIGTERM and SIGHUP end the command as Ctrl-C does, so its
    working database in the temporary folder is removed (Python's default let them kill the process and
    leave it behind); an inherited ignored signal stays ignored, as for any program (nothing is lost)."""
    received: list[str] = []

    def on_signal(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        received.append(name)
        if len(received) > 1:
            _force_exit(name, "" if analysis else "; finished runs are kept (see manifest.json)")
        raise Interrupted(name)

    previous: dict[Any, Any] = {}
    for name in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            old = signal.getsignal(sig)
            if old is signal.SIG_IGN and (analysis or name == "SIGHUP"):
                continue  # nohup; an analysis under ``cmd &``
            signal.signal(sig, on_signal)
        except ValueError:  # not the main thread
            continue
        previous[sig] = old
    try:
        yield
    finally:
        for sig, old in previous.items():
            if old is not None:
                signal.signal(sig, old)


def _install_stop_handlers(loop: asyncio.AbstractEventLoop, on_signal: Callable[[str], None]) -> dict[Any, Any]:
    """Each stop signal -> ``on_signal(name)`` on the loop; returns the dispositions to restore."""
    previous: dict[Any, Any] = {}
    for name in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is None:  # not POSIX (no SIGHUP)
            continue
        try:
            old = signal.getsignal(sig)
            if name == "SIGHUP" and old is signal.SIG_IGN:
                continue  # nohup: the user asked the run to outlive the terminal
            loop.add_signal_handler(sig, on_signal, name)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no such support
            continue
        previous[sig] = old
    return previous


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks still pending (an agent's reply stopped the loop: Ctrl-D) and let them finish."""
    import asyncio

    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in pending:
        t.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _force_exit(name: str, kept: str = "; finished runs are kept (see manifest.json)") -> None:
    """A second stop signal while threads finish: say so and leave now (the manifest is written)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    err(f"{name} again while stopping: exiting now{kept}")
    os._exit(EXIT_INTERRUPTED)


def shard_suffix(shard: tuple[int, int] | None) -> str:
    """What a shard's directory name carries after its experiment's or model's: ``-shard-K-of-N``."""
    return f"-shard-{shard[0]}-of-{shard[1]}" if shard else ""


def default_out(name: str, out: str | None, shard: tuple[int, int] | None) -> Path:
    """The directory ``run`` plays experiment ``name`` into: ``--out``, else ``runs/<name>`` (a shard's own)."""
    return Path(out) if out else Path("runs") / f"{name}{shard_suffix(shard)}"


def resume_command(exp, out: Path, shard: tuple[int, int] | None = None) -> str:  # noqa: ANN001
    """The exact command that continues ``out``: same file, directory and seed (--seed may have moved it)."""
    part = f" --shard {shard[0]}/{shard[1]}" if shard else ""
    return f"econarena run {exp.path} --out {out} --seed {exp.experiment.seed}{part} --resume"


def ray_engine(args: argparse.Namespace) -> Any:
    """The Ray engine that ``--ray [ADDRESS]`` asks for, or None; a clear error when Ray is missing."""
    address = getattr(args, "ray", None)
    if address is None:
        given = [flag for flag, key in (("--ray-workers", "ray_workers"), ("--replicas", "replicas"),
                                        ("--gpus-per-replica", "gpus_per_replica"),
                                        ("--ray-stall-timeout", "ray_stall_timeout"), ("--ray-env", "ray_env"))
                 if getattr(args, key, None) is not None]
        if given:  # they were ignored without --ray: a user asking for 4 replicas got one model, in silence
            raise SystemExit(_exit_with(f"{', '.join(given)}: only with --ray (sessions on Ray); add --ray, "
                                        "or --ray ADDRESS for a cluster"))
        return None
    try:
        from ..hosts.ray_engine import RayEngine, RayUnavailable
    except ImportError:
        raise SystemExit(_exit_with("--ray needs Ray: pip install 'econarena[ray]'")) from None
    from ..hosts.ray_engine import STALL_S, stop_local_ray

    stall = getattr(args, "ray_stall_timeout", None)
    engine = RayEngine(None if address == "local" else address, getattr(args, "ray_workers", None),
                       replicas=getattr(args, "replicas", 1) or 1,
                       gpus_per_replica=getattr(args, "gpus_per_replica", None),
                       stall_s=STALL_S if stall is None else stall, env=getattr(args, "ray_env", None) or ())
    previous = signal.getsignal(signal.SIGTERM)
    try:
        engine.connect()
    except RayUnavailable as exc:
        raise SystemExit(_exit_with(str(exc))) from None
    except SystemExit as exc:  # ray.init's own SIGTERM handler (sys.exit(15)) fired while Ray started
        if exc.code != signal.SIGTERM:
            raise
        with contextlib.suppress(Exception):
            if address == "local":
                stop_local_ray()  # every process it started so far, its agents included
            else:
                import ray

                ray.shutdown()
        raise Interrupted("SIGTERM") from None
    finally:  # ray.init replaces SIGTERM's handler with sys.exit(15): a stop signal is ours again (exit 130)
        with contextlib.suppress(ValueError, TypeError):  # not the main thread; set outside Python (None)
            signal.signal(signal.SIGTERM, previous)
    return engine


def _exit_with(message: str) -> int:
    err(message)
    return EXIT_CONFIG


def add_ray_arguments(r: argparse.ArgumentParser) -> None:
    """``--ray`` and its companions, the same for ``run``, ``steer`` and ``suite``."""
    r.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="play sessions on Ray: alone, a Ray instance started on this machine; with an ADDRESS "
                        "(host:6379, ray://host:10001, or 'auto' with RAY_ADDRESS) an existing cluster")
    r.add_argument("--ray-workers", type=_positive, metavar="N",
                   help="session workers on Ray (default: one per CPU of the cluster)")
    r.add_argument("--replicas", type=_positive, metavar="N",
                   help="copies of each local (hf) model on Ray, one actor each (default 1)")
    r.add_argument("--gpus-per-replica", type=_gpus, metavar="G",
                   help="GPUs each local model replica holds on Ray (default: 1 for a cuda device, else 0)")
    r.add_argument("--ray-env", action="append", type=_env_name, metavar="NAME",
                   help="give the Ray workers this variable's value from here (repeat for several; the key "
                        "variables the players read are given anyway); values stay in memory, never in a file "
                        "or log")
    r.add_argument("--ray-stall-timeout", type=_seconds, metavar="S",
                   help="after a Ray node is lost, wait this long for a live session worker before stopping "
                        "for --resume (default 60)")


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def _env_name(value: str) -> str:
    import re

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):  # never echoed: it may be a key given by mistake
        raise argparse.ArgumentTypeError("expected the NAME of an environment variable (letters, digits, _; "
                                         "e.g. --ray-env HF_TOKEN), not a value: the value is read from here")
    if re.fullmatch(r"[A-Z0-9_]*_VISIBLE_(DEVICES|CORES|CHIPS)", value):
        # a worker and a model replica apply what is forwarded over their own: the driver's GPU list would
        # replace the one Ray gives each replica (every replica on the driver's GPUs, or on none of its node)
        raise argparse.ArgumentTypeError(f"{value}: Ray sets it for each worker and replica (the accelerators it "
                                         "placed them on); it cannot be forwarded")
    return value


def number_arg(expected: str, *, zero: bool = False) -> Callable[[str], float]:
    """An argparse type for a finite number above 0 (or from 0, with ``zero``); ``expected`` says what it is
    in the error ("a number of seconds > 0"): NaN, inf and words are refused like negatives."""

    def parse(value: str) -> float:
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and (x >= 0 if zero else x > 0)):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}")
        return x

    return parse


_seconds = number_arg("a number of seconds > 0")
_gpus = number_arg("a number of GPUs >= 0 (a fraction shares one)", zero=True)


def load_price_arg(path: str | None) -> dict[str, tuple[float, float]] | None:
    """Read --prices up front (None after one clear error line): a typo must not surface as a traceback
    after a whole suite has run."""
    from ..formats.prices import load_prices

    if path is None:
        return {}
    try:
        return load_prices(path)
    except OSError as exc:
        err(f"--prices {path}: {exc.strerror or exc}")
    except (ValueError, TypeError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        err(f"--prices {path}: {exc}")
    return None


def cell_order(run_dir: Path) -> Callable[[str], Any]:
    """A sort key putting a directory's [grid] cells in their factors' natural order (numbers by value,
    efforts least first, else as declared), read from its config.toml; any order for an unreadable one."""
    from ..analysis.cells import cell_rank, factors
    from ..hosts.config import ConfigError, read_toml

    try:
        found = factors(read_toml(run_dir / "config.toml"))
    except ConfigError:
        found = []
    return lambda cell: cell_rank(cell, found)


def run_guarded(exp, d: Path, args: argparse.Namespace, *, resume: bool, on_interrupt: str,  # noqa: ANN001
                human_io: Any = None) -> Any:
    """``run_one`` with the CLI's answers to what can stop a run: an exit code (after one clear line) for
    an interrupt, a busy directory, an agent that cannot start or a failing disk; else the result."""
    from ..agents.base import AgentError
    from ..formats.rundir import RunDirectoryBusy
    from ..games.base import GameError

    try:
        return run_one(exp, d, concurrency=args.concurrency, resume=resume, quiet=args.quiet,
                       cache=not args.no_cache, cache_dir=args.cache_dir, human_io=human_io,
                       prices=getattr(args, "price_table", None),
                       engine=getattr(args, "engine", None), shard=getattr(args, "shard", None))
    except KeyboardInterrupt as exc:  # a stop signal, or a person ending input (Ctrl-D)
        from ..agents.human import HumanInputEnded, HumanInputError

        if isinstance(exc, HumanInputError):  # input that is no reply: bad input, not an interruption
            source = f"--human-input {args.human_input}" if getattr(args, "human_input", None) else "standard input"
            err(f"{source}: {exc}; finished runs are kept: {on_interrupt}")
            return EXIT_CONFIG
        by = f" by {exc.signame}" if isinstance(exc, Interrupted) else ""
        if isinstance(exc, HumanInputEnded):  # a --human-input file that ran out reads as Ctrl-D: say which
            by = (f": {exc} at a human seat (Ctrl-D" + (f", or {args.human_input} has no more replies)"
                                                        if getattr(args, "human_input", None) else ")"))
        err(f"interrupted{by}; finished runs are kept: {on_interrupt}")
        return EXIT_INTERRUPTED
    except (AgentError, RunDirectoryBusy) as exc:  # e.g. the response cache cannot be opened
        err(str(exc))
        return EXIT_CONFIG
    except GameError as exc:  # the game broke its contract (raised, never ended, a payoff no number): where
        err(f"{exc}; finished runs are kept")
        return EXIT_ERROR
    except OSError as exc:  # a full disk, a directory made read-only mid-run
        err(write_error(d, exc) + f"; finished runs are kept: {resume_command(exp, d)}")
        return EXIT_CONFIG


def run_side_by_side(jobs: list[tuple[Any, Path, bool]], args: argparse.Namespace) -> list[Any] | int:
    """Several experiments at once on one Ray engine (``suite --ray``): each its own Host, directory and
    lock, their sessions sharing the cluster's workers. The results, or an exit code after one clear line."""
    from ..agents.llm import RuntimeOptions
    from ..analysis.metrics import format_table, write_summary
    from ..hosts.host import Host, HostOptions

    hosts = []
    for exp, d, resume in jobs:
        options = HostOptions(concurrency=args.concurrency, resume=resume, quiet=True, engine=args.engine,
                              runtime=RuntimeOptions(cache=not args.no_cache, cache_path=args.cache_dir))
        hosts.append((_steer_host() if exp.steer is not None else Host)(exp, d, options))

    async def together() -> list[Any]:
        import asyncio

        return await asyncio.gather(*(h.run() for h in hosts), return_exceptions=True)

    try:
        results = run_until_signalled(together())
    except KeyboardInterrupt as exc:
        by = f" by {exc.signame}" if isinstance(exc, Interrupted) else ""
        err(f"interrupted{by}; finished runs are kept: run the same suite command again to continue")
        return EXIT_INTERRUPTED
    out = []
    for (exp, d, _), r in zip(jobs, results):
        if (code := failed_job(r, d, "suite")) is not None:
            return code
        summary = write_summary(d)
        if not args.quiet:
            print(format_table(summary))
        print(outcome_line(exp, r, d))
        warn_truncated(exp, summary, d)
        for why in r.stopped:
            err(f"{exp.name}: {why}; finished runs are kept: run the same suite command again to continue")
        out.append(r)
    return out


def start_follower(out: Path) -> subprocess.Popen[bytes] | None:
    """The process that writes the directory's columnar copy while the run plays (analysis/follow.py), so
    the first report reads no JSON; None without the [report] extra (pyarrow, duckdb) or with copies off.
    It holds the lock a report waits on from before the run starts (handed over, already locked), reads
    only the logs, and learns that the run ended when the pipe closes: however the run ends, the kernel
    closes it. It outlives the run (its own session) so that ``run`` waits for none of its work."""
    import importlib.util

    from ..analysis import columnar

    if os.environ.get("ECONARENA_FOLLOW", "").strip().lower() in ("off", "0", "no", "false"):
        return None
    if any(importlib.util.find_spec(m) is None for m in ("pyarrow", "duckdb")):
        return None
    fd = columnar.follower_lock(out)
    if fd is None:
        return None
    try:
        return subprocess.Popen([sys.executable, "-m", f"{__name__.split('.')[0]}.analysis.follow", str(out), str(fd)],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                pass_fds=(fd,), start_new_session=True)
    except OSError:
        return None
    finally:
        os.close(fd)  # the follower holds the lock now (the same open file)


def run_one(exp, out: Path, *, concurrency: int = 16, resume: bool = False, quiet: bool = False,  # noqa: ANN001
            cache: bool = True, cache_dir: str | None = None, human_io=None,  # noqa: ANN001
            prices: dict[str, tuple[float, float]] | None = None, engine=None,  # noqa: ANN001
            shard: tuple[int, int] | None = None):  # noqa: ANN201
    """Play one validated experiment into ``out`` (on ``engine``: Ray; only ``shard``'s sessions), write its
    summary, print the outcome line."""
    from ..agents.llm import RuntimeOptions
    from ..analysis.metrics import format_table, summary_cells, write_summary
    from ..hosts.host import Host, HostOptions
    from .terminal import show

    options = HostOptions(concurrency=concurrency, resume=resume, quiet=quiet,
                          runtime=RuntimeOptions(cache=cache, cache_path=cache_dir), human_io=human_io,
                          prices=prices or {}, engine=engine, shard=shard)
    host = (_steer_host() if exp.steer is not None else Host)(exp, out, options)
    follower = start_follower(out)
    try:
        result = run_until_signalled(host.run())
    finally:
        if follower is not None and follower.stdin is not None:
            follower.stdin.close()  # the run is over: the follower writes the copy, or nothing (not complete)
    summary = write_summary(out, host.dir.tally)  # counted as the records were written: no re-reading
    if not quiet:
        from ..analysis.findings import LEGEND, summary_findings, wrapped

        env = exp.experiment.environment if exp.tournament is None else "tournament"  # a tournament: no melee
        if sentences := summary_findings(summary, env, cell_order(out)):  # the finding in words, then the table
            print(wrapped(sentences) + "\n")
        head, rows, footer = summary_cells(summary)
        show(head, rows, format_table(summary), title=exp.name, footer=footer)
        print(wrapped([LEGEND]))
        if exp.steer is not None:
            print_steering(out)
    print(outcome_line(exp, result, out))
    warn_truncated(exp, summary, out)
    if result.status == "incomplete":
        for why in result.stopped:  # a lost Ray node, not an API: say so, and how to go on
            flags = engine.resume_flags() if engine is not None and hasattr(engine, "resume_flags") else ""
            err(f"{why}; {result.runs_done}/{result.runs_total} runs are done and kept: continue with "
                f"{resume_command(exp, out, shard)}{flags}")
        if result.runs_incomplete:
            err(f"{result.runs_incomplete} run(s) stopped on API errors (see 'error' in {out}/decisions.jsonl); "
                f"retry them with: {resume_command(exp, out, shard)}")
    return result


def warn_truncated(exp: Any, summary: dict[str, Any], out: Path) -> None:
    """Replies the provider cut at the token limit: the limit is too small for the answer asked for. They are
    recorded as ``truncated`` and counted apart from the model's errors; this says which limit to raise."""
    from ..formats.rundir import JUDGE_LOG, scan_jsonl

    cut: dict[str, int] = {}
    for label, v in summary["labels"].items():
        if v.get("truncated_replies"):
            name = label.split(" [", 1)[0] if exp.axes else label  # a [grid] cell's label ends with the cell
            cut[name] = cut.get(name, 0) + v["truncated_replies"]
    if exp.judge is not None:  # a judge's number may be cut too (its judge.jsonl line says truncated)
        n = sum(1 for line in scan_jsonl(out / JUDGE_LOG)[0] if line.get("truncated"))
        if n:
            cut[exp.judge.label] = cut.get(exp.judge.label, 0) + n
    entries = [*exp.players, *([exp.judge] if exp.judge is not None else [])]
    for label, n in sorted(cut.items()):
        limits = sorted({p.llm.max_tokens for p in entries if p.label == label and p.llm is not None})
        limit = f" (max_tokens = {', '.join(map(str, limits))})" if limits else ""
        warn(f"{n} repl{'y' if n == 1 else 'ies'} of {label} stopped at the token limit{limit} before ending: "
             "recorded as truncated (not as the model's rule breaks: truncated_replies in summary.json); raise "
             "max_tokens for this answer")


def outcome_line(exp: Any, result: Any, out: Path) -> str:
    """The line that ends a run. A steering experiment counts games: a game that ended before the steered
    decision has its branch runs counted as done (they will never be played) but nothing steered, and the
    line says so instead of "200/200 runs" over a runs.jsonl of 4 lines (with a warning on stderr)."""
    line = (f"{exp.name}: {result.status}, {result.runs_done}/{result.runs_total} runs, {result.decisions} "
            f"decisions in {result.elapsed_s:.1f}s -> {out}")
    if exp.steer is None:
        return line
    from ..formats.rundir import STEERING, scan_jsonl

    games, _ = scan_jsonl(out / STEERING)
    skipped = sum(1 for g in games if g.get("skipped"))
    total = sum(x.experiment.sessions for _, x in exp.tables())
    if skipped:
        warn(f"{skipped} of {len(games)} game(s) ended before seat {exp.steer.seat}'s steered decision "
            f"(steer.turn = {exp.steer.turn}): nothing was steered in them and their branches were never played")
    return (f"{exp.name}: {result.status}, {len(games) - skipped}/{total} games steered"
            + (f" ({skipped} ended before the steered decision)" if skipped else "")
            + f", {result.decisions} decisions in {result.elapsed_s:.1f}s -> {out}")


def print_steering(out: Path) -> None:
    """The steering table of a run directory (NashConv, CFR gain, their ratio, agreement, trade values)."""
    from ..analysis.families.steering import format_table, steering_table

    print(format_table(steering_table([out])))


def _steer_host() -> type:
    """The host of a [steer] experiment, imported only for one (it brings the steering family along)."""
    from ..hosts.steer import SteerHost

    return SteerHost


def trust_folders(folders: list[str]) -> str | None:
    """Register the --trust folders with both plugin loaders; the problem, if a folder is none."""
    from ..agents import plugins as agent_plugins
    from ..games import plugins

    for folder in folders:
        try:
            plugins.trust(folder)
            agent_plugins.trust(folder)
        except (plugins.PluginError, agent_plugins.PluginError) as exc:
            return str(exc)
    return None
