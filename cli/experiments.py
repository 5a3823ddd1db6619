"""The commands on experiment files and run directories: run, steer, merge, validate, check, init, list,
summary. User errors print one clear message, never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from .common import (
    ANALYSIS,
    EXIT_CONFIG,
    EXIT_INCOMPLETE,
    EXIT_OK,
    add_ray_arguments,
    cell_order,
    config_difference,
    default_out,
    err,
    in_file,
    load_price_arg,
    out_dir_problem,
    ray_engine,
    resume_command,
    run_guarded,
    same_experiment,
    trust_folders,
)


def _load_all(files: list[str], seed: int | None = None):  # noqa: ANN202
    from ..hosts.config import ConfigError, load_experiment

    exps, errors = [], []
    for f in files:
        try:
            exps.append(load_experiment(f, seed=seed))
        except ConfigError as exc:
            errors.append(str(exc))
    return exps, errors


def cmd_validate(args: argparse.Namespace) -> int:
    from ..hosts.config import ConfigError, is_alias_file, read_toml, validate_alias_file
    from ..hosts.host import preflight_experiment, settings_problems_of

    files, alias_ok, errors = [], [], []
    for f in args.files:  # models files (alias -> player table) sit beside experiments: check them as such
        try:
            data = read_toml(Path(f))
        except ConfigError as exc:
            errors.append(str(exc))
            continue
        if is_alias_file(data):
            problems = validate_alias_file(data, f)
            errors += problems
            if not problems:
                alias_ok.append(f"{f}: ok (models file, {len(data)} alias(es))")
        elif "suite" in data and "games" in data and "experiment" not in data:  # a bench suite (configs/bench/*.toml)
            from .bench import validate_suite

            problem, line = validate_suite(f)
            if problem:
                errors.append(problem)
            else:
                alias_ok.append(line)
        else:
            files.append(f)
    exps, more = _load_all(files)
    errors += more
    for exp in exps:
        errors += in_file(exp, preflight_experiment(exp) if args.check_keys else settings_problems_of(exp))
    if errors:
        for e in errors:
            err(e)
        return EXIT_CONFIG
    for line in alias_ok:
        print(line)
    for exp, f in zip(exps, files):
        e = exp.experiment
        cells = f" x {exp.n_cells()} grid cells" if exp.axes else ""
        env = e.environment if exp.tournament is None else f"{exp.tournament.design} tournament"
        print(f"{f}: ok ({e.game}, {env}, {len(exp.lineups())} table(s){cells} x {e.sessions} "
              f"session(s) x {_runs_text(exp)}){_calls_text(exp)}")
    return EXIT_OK


def _calls_text(exp: Any) -> str:
    """The upper bound of paid calls an experiment with LLM players was checked against; '' without any."""
    from ..hosts.experiment import MAX_LLM_CALLS, llm_call_bound

    bounds = llm_call_bound(exp)
    if not bounds:
        return ""
    limit = exp.experiment.max_llm_calls or MAX_LLM_CALLS
    return f"; at most {sum(bounds.values()):,} LLM calls, re-asks included (limit {limit:,})"


def _runs_text(exp: Any) -> str:
    """What one session plays: its runs, or a steering game's branches (prompt actions x samples)."""
    if exp.steer is None:
        return f"{exp.experiment.runs} run(s)"
    n = exp.runs_per_session()
    return f"{n // exp.steer.samples} prompt action(s) x {exp.steer.samples} sample(s) = {n} branch runs per session"


def cmd_list(args: argparse.Namespace) -> int:
    from ..agents.baselines import POLICY_AGENTS
    from ..agents.llm import PROVIDERS
    from ..games import GAMES, plugins
    from ..hosts.config import BASELINES

    for problem in plugins.load_entry_points(GAMES):  # the games of installed packages join the list
        err(problem)
    print("games (with the baselines each has a rule for, and its own policies for agent = \"policy\"; scripted "
          "and human seats play every game):")
    for name, g in sorted(GAMES.items()):
        own = [k for k in g.policies() if k not in POLICY_AGENTS]
        extra = f"; policy: {', '.join(own)}" if own else ""
        print(f"  {name:<22} {g.description} [{', '.join(k for k in g.policies() if k in POLICY_AGENTS)}{extra}]")
    print("agents (baselines):")
    for name, desc in sorted(BASELINES.items()):
        print(f"  {name:<22} {desc}")
    print("agents (LLM providers):")
    for name, info in sorted(PROVIDERS.items()):
        keys = f" [key: {' or '.join(info.key_envs)}]" if info.key_envs else ""
        print(f"  {name:<22} {info.description}; pip install 'econarena[{info.extra}]'{keys}")
    print("tournaments ([tournament] with [[tournament.entrants]], any player table each; `econarena ratings` "
          "rates them):")
    for name, desc in (("round_robin", "every ordered lineup of distinct entrants (N seats: every combination, "
                                       "seats rotated)"),
                       ("balanced", "lineups = K seeded tables, every entrant equally often in every seat"),
                       ("self_play", "true adds a table per entrant against copies of itself")):
        print(f"  {name:<22} {desc}")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from ..games import GAMES, plugins
    from ..hosts.contract import check_game

    target = args.game
    if m := re.fullmatch(r"((?:\w+/)*\w+)\.py:(\w+)", target):  # my_games/duopoly.py:Duopoly, from here
        target = f"{m.group(1).replace('/', '.')}:{m.group(2)}"
        trust_folders(["."])  # a file named on the command line: the user named its folder
    elif m := re.fullmatch(r"(.+\.py):(\w+)", target):  # /abs/path/duopoly.py:Duopoly, ../x.py:Duopoly
        file = Path(m.group(1)).expanduser()
        if not file.is_file():
            err(f"{m.group(1)}: no such file (expected a Python file FILE.py:Class of your game)")
            return EXIT_CONFIG
        if not file.stem.isidentifier():
            err(f"{m.group(1)}: {file.stem!r} is no module name (letters, digits and '_'): rename the file")
            return EXIT_CONFIG
        target = f"{file.stem}:{m.group(2)}"  # the module is the file, imported from the folder it lies in
        if problem := trust_folders([str(file.resolve().parent)]):
            err(problem)
            return EXIT_CONFIG
    if target.endswith(".toml"):  # an experiment file: check the game it plays
        from ..hosts.config import ConfigError, load_experiment

        try:
            game = load_experiment(target).game
        except ConfigError as exc:
            err(str(exc))
            return EXIT_CONFIG
    else:
        try:
            game = GAMES[target] if not plugins.is_spec(target) else plugins.resolve(GAMES, target)
        except KeyError:
            err(f"unknown game {target!r}; known: {', '.join(sorted(GAMES))}, or a path 'package.module:Class' "
                "or an experiment file FILE.toml")
            return EXIT_CONFIG
        except plugins.PluginError as exc:
            err(str(exc))
            return EXIT_CONFIG
    if args.seeds < 1:
        err(f"--seeds {args.seeds}: expected at least 1")
        return EXIT_CONFIG
    if args.agent is not None:  # a player of the user's own, played in this game
        from ..agents import plugins as agent_plugins
        from ..hosts.contract import check_agent

        try:
            cls = agent_plugins.load_agent_class(args.agent)
        except agent_plugins.PluginError as exc:
            err(f"--agent: {exc}")
            return EXIT_CONFIG
        return _checks_said(check_agent(cls, game, args.seeds), f"{args.agent} in {game.name}", "checks")
    return _checks_said(check_game(game, args.seeds), game.name, "contract checks")


def _checks_said(results: list[Any], title: str, what: str) -> int:
    """Each check on a line, then the count; exit 0 when all pass, 1 naming those that fail."""
    for c in results:
        print(f"{'skip' if getattr(c, 'skipped', False) else 'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
    failed = [c for c in results if not c.ok]
    skipped = [c for c in results if getattr(c, "skipped", False)]
    print(f"{title}: {len(results) - len(failed) - len(skipped)} of {len(results)} {what} pass"
          + (f", {len(skipped)} skipped" if skipped else "")
          + ("" if not failed else f"; failing: {', '.join(c.name for c in failed)}"))
    return EXIT_OK if not failed else 1


def _environment_of(run_dir: Path) -> str:
    """The run directory's environment (melee, rational, self) from its config.toml; "" when unreadable."""
    from ..hosts.config import ConfigError, read_toml

    try:
        exp = read_toml(run_dir / "config.toml").get("experiment")
    except ConfigError:
        return ""
    return str(exp.get("environment", "")) if isinstance(exp, dict) else ""


def cmd_summary(args: argparse.Namespace) -> int:
    from ..analysis.findings import LEGEND, summary_findings, wrapped
    from ..analysis.metrics import format_table, summarize, summary_cells
    from .terminal import show

    status = EXIT_OK
    for d in args.run_dirs:
        path = Path(d)
        if not (path / "runs.jsonl").is_file():
            what = "no such file or directory" if not path.exists() else "not a run directory (no runs.jsonl)"
            err(f"{path}: {what}")
            status = EXIT_CONFIG
            continue
        summary = summarize(path)
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            print(f"== {path}")
            # the finding in words, then the table; a [grid]'s cells each on its own, in natural order
            if sentences := summary_findings(summary, _environment_of(path), cell_order(path)):
                print(wrapped(sentences) + "\n")
            head, rows, footer = summary_cells(summary)
            show(head, rows, format_table(summary), footer=footer)
            print(wrapped([LEGEND]))
    return status


def cmd_run(args: argparse.Namespace) -> int:
    from ..agents.llm import load_dotenv
    from ..hosts.host import preflight_experiment

    load_dotenv()
    exps, errors = _load_all(args.files, args.seed)
    if errors:
        for e in errors:
            err(e)
        return EXIT_CONFIG
    if args.out and len(exps) > 1:
        err("--out names one directory; run one file at a time with --out")
        return EXIT_CONFIG
    for exp in exps:
        errors += in_file(exp, preflight_experiment(exp))
    if errors and not args.dry_run:
        for e in errors:
            err(e)
        return EXIT_CONFIG
    if args.dry_run:
        return _dry_run(exps, errors, args)
    shard = args.shard
    dirs = [default_out(exp.name, args.out, shard) for exp in exps]
    if (problem := _out_problem(exps, dirs, args)) is not None:
        err(problem)
        return EXIT_CONFIG
    humans = [f"{exp.path}: players[{i}] ({p.label})" for exp in exps for i, p in enumerate(exp.players)
              if p.agent == "human"]
    human_io = _human_io(humans, args)
    if isinstance(human_io, str):
        err(human_io)
        return EXIT_CONFIG
    args.price_table = load_price_arg(getattr(args, "prices", None))  # cost so far, on the progress bar
    if args.price_table is None:
        return EXIT_CONFIG
    if humans and args.ray:
        err(f"{humans[0]} is a human player: a person plays at this terminal, not on a Ray cluster; run it "
             "without --ray")
        return EXIT_CONFIG
    args.engine = ray_engine(args)
    worst = EXIT_OK
    try:
        for exp, d in zip(exps, dirs):
            result = run_guarded(exp, d, args, resume=args.resume, on_interrupt=resume_command(exp, d, shard),
                                 human_io=human_io)
            if isinstance(result, int):
                return result
            if result.status == "incomplete":
                worst = max(worst, EXIT_INCOMPLETE)
    finally:
        if args.engine is not None:
            args.engine.close()
    return worst


def _dry_run(exps: list[Any], errors: list[str], args: argparse.Namespace) -> int:
    """``run --dry-run``: what each file would play and call, with the problems a real run would stop on."""
    from ..formats.rundir import RUNS, complete_runs, read_jsonl, runnable_prefix
    from ..hosts.experiment import planned_calls

    for e in errors:
        print(f"note: {e}", file=sys.stderr)
    shard = args.shard
    for exp in exps:
        out = default_out(exp.name, args.out, shard)  # the directory the run would use
        # what a resume would keep: each session's complete runs up to its first gap
        done = runnable_prefix(complete_runs(read_jsonl(out / RUNS, kind="runs"))) if args.resume else set()
        left = f", {len(done)} run(s) already complete in {out}" if done else ""
        part = f", shard {shard[0]}/{shard[1]} (its sessions only)" if shard else ""
        env = exp.experiment.environment if exp.tournament is None else f"{exp.tournament.design} tournament"
        print(f"{exp.name}: {exp.experiment.game}, {env}{part}{left}")
        for label, (n, exact) in planned_calls(exp, done, shard).items():
            kind = next((p for p in exp.players if p.label == label), exp.judge)
            llm = "LLM calls" if kind.llm is not None else "decisions (no API calls)"
            print(f"  {label:<30} {'' if exact else 'at most '}{n} {llm}")
        if (calls := _calls_text(exp)):
            whole = " (the whole experiment, every shard)" if shard else ""
            print(f"  in all{whole}:{calls.removeprefix(';')}")
    return EXIT_OK


def _out_problem(exps: list[Any], dirs: list[Path], args: argparse.Namespace) -> str | None:
    """Why the run directories cannot be written (two files into one, results without --resume, another
    experiment or shard to resume), or None."""
    firsts: dict[Path, Any] = {}
    for exp, d in zip(exps, dirs):  # two files of one [experiment] name would append to one directory
        if (first := firsts.setdefault(d.resolve(), exp)) is not exp:
            return (f"{first.path} and {exp.path} both write to {d} (the same [experiment] name {exp.name!r}); "
                    "give each its own name, or run them one at a time with --out")
    for exp, d in zip(exps, dirs):
        problem = out_dir_problem(d)
        if problem:
            return problem
        if (d / "manifest.json").exists() and not args.resume:
            return f"{d} already holds results; pass --resume to continue it, or --out DIR for a new one"
        if args.resume and not same_experiment(d, exp):
            return (f"{d} holds a different experiment (its config.toml differs: {config_difference(d, exp)}); "
                    "use --out DIR, or resume with the same file and --seed")
        if args.resume and (problem := _shard_problem(d, args.shard)):
            return problem
    return None


def _human_io(humans: list[str], args: argparse.Namespace) -> tuple[Any, Any, bool] | str | None:
    """Where a human player's replies come from (--human-input FILE or the terminal) and go, or why there is
    no such place; None without a human player."""
    if not humans:
        return None
    if args.human_input:
        try:
            # bytes that are not UTF-8 are kept as lone surrogates: the reply holding them is judged not text
            # (games/text.py), recorded with visible escapes and re-asked like any unusable reply. A byte order
            # mark (an editor's UTF-8 file) is no part of the first reply
            script = open(args.human_input, encoding="utf-8-sig", errors="surrogateescape")  # noqa: SIM115
        except OSError as exc:
            return f"--human-input {args.human_input}: {exc.strerror or exc}"
        return (script, sys.stdout, True)
    elif sys.stdin is None or not sys.stdin.isatty():  # closed (<&-) or not a terminal
        return (f"{humans[0]} is a human player, but standard input is not a terminal; run it in a terminal, "
                "or give the replies with --human-input FILE")
    else:
        with contextlib.suppress(AttributeError, ValueError):  # what a person types: the same rule as a file
            sys.stdin.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]  # a TextIOWrapper
        return (sys.stdin, sys.stdout, False)


def _shard_problem(d: Path, shard: tuple[int, int] | None) -> str | None:
    """A resume must play the shard the directory holds (or none, for an unsharded one). A directory without
    a manifest never started (killed before writing it): its resume begins the run, whichever shard."""
    from ..formats.rundir import RunDirectory

    manifest = RunDirectory(d).read_manifest()
    if not manifest:
        return None
    held = manifest.get("shard")
    have = (held["index"], held["count"]) if isinstance(held, dict) and "index" in held else None
    if have == (tuple(shard) if shard else None):
        return None
    said = f"shard {have[0]}/{have[1]}" if have else "an unsharded run"
    asked = f"--shard {shard[0]}/{shard[1]}" if shard else "no --shard"
    return f"{d} holds {said}, but this resume has {asked}; resume it with the options it was started with"


def _shard_arg(value: str) -> tuple[int, int]:
    from ..hosts.shards import parse_shard

    try:
        return parse_shard(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_merge(args: argparse.Namespace) -> int:
    """Shards of one experiment (``run --shard K/N``) -> one run directory equal to an unsharded run."""
    from ..analysis.metrics import format_table, write_summary
    from ..hosts.shards import MergeError, merge_shards, out_problem

    out = Path(args.out)
    problem = out_problem([Path(d) for d in args.shards], out) or out_dir_problem(out)
    if problem:
        err(problem)
        return EXIT_CONFIG
    try:
        manifest = merge_shards([Path(d) for d in args.shards], out)
    except MergeError as exc:
        err(str(exc))
        return EXIT_CONFIG
    summary = write_summary(out)
    if not args.quiet:
        print(format_table(summary))
    print(f"merged {len(args.shards)} shard(s): {manifest['runs_complete']} runs -> {out}")
    return EXIT_OK


def cmd_steer(args: argparse.Namespace) -> int:
    """``run`` for files that hold a [steer] table; a file without one is refused, not run unsteered."""
    from ..hosts.config import ConfigError, read_toml

    for f in args.files:
        try:
            data = read_toml(Path(f))
        except ConfigError as exc:
            err(str(exc))
            return EXIT_CONFIG
        if "steer" not in data:
            err(f"{f}: no [steer] table: 'econarena steer' steers one seat with prompt actions chosen by CFR "
                 "(see configs/steering/); use 'econarena run' for an ordinary experiment")
            return EXIT_CONFIG
    return cmd_run(args)


def _run_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("files", nargs="+", metavar="FILE.toml", help="experiment files, played one after another")
    r.add_argument("--out", help="run directory (default: runs/<experiment name>)")
    r.add_argument("--concurrency", type=int, default=16, help="decisions in flight at once (default 16)")
    r.add_argument("--resume", action="store_true", help="continue an interrupted or incomplete run directory")
    r.add_argument("--seed", type=int, help="override experiment.seed (an integer >= 0)")
    r.add_argument("--quiet", action="store_true", help="no progress bar or table")
    r.add_argument("--prices", metavar="FILE.toml", help="USD per million tokens by model or label: the progress "
                   "bar shows the cost so far")
    r.add_argument("--no-cache", action="store_true", help="do not read or write the LLM response cache")
    r.add_argument("--cache-dir", help="where the response cache lives (default: $ECONARENA_CACHE_DIR or the "
                   "user cache directory)")
    r.add_argument("--dry-run", action="store_true", help="validate and print how many calls each label makes")
    r.add_argument("--human-input", metavar="FILE", help="replies of human players read from FILE instead of the "
                   "terminal (each ends with an empty line, or is one JSON line), for scripted tests and demos")
    r.add_argument("--shard", type=_shard_arg, metavar="K/N",
                   help="play only the sessions of shard K of N (1 <= K <= N), for job arrays; each shard in its "
                        "own --out (default runs/<name>-shard-K-of-N); join them with 'econarena merge'")
    add_ray_arguments(r)


# What ``econarena init`` writes: the quickstart, the tutorial's first study (a stand-in and the same study with
# the bundled model in "your" seat) and a models file to edit, all shipped inside the package.
STARTER = (("econarena.configs", "quickstart.toml"), ("econarena.configs.starter", "demo-stand-in.toml"),
           ("econarena.configs.starter", "my-model.toml"), ("econarena.configs.starter", "models.toml"))


def cmd_init(args: argparse.Namespace) -> int:
    """A starter folder from the installed package, so a pip user needs nothing from the repository."""
    from importlib.resources import files

    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        err(f"{target}: exists and is not a folder")
        return EXIT_CONFIG
    names = [name for _, name in STARTER]
    clash = [n for n in names if (target / n).exists()]
    if clash and not args.force:
        err(f"{target}: {', '.join(clash)} already there; nothing written (--force overwrites them)")
        return EXIT_CONFIG
    try:
        target.mkdir(parents=True, exist_ok=True)
        for package, name in STARTER:
            (target / name).write_bytes(files(package).joinpath(name).read_bytes())
    except OSError as exc:
        err(f"{exc.filename or target}: {exc.strerror or exc}")
        return EXIT_CONFIG
    cmd = "econarena"
    where = "" if str(target) == "." else f"cd {target}\n  "
    print(f"Wrote {', '.join(names)} into {target}/. Next, offline (baselines and a scripted stand-in, seconds):\n"
          f"  {where}{cmd} run demo-stand-in.toml --out runs/demo-stand-in --quiet\n"
          f"  {cmd} summary runs/demo-stand-in\n"
          "With the bundled local model (needs the [hf] extra and its weights, about 3 minutes on a CPU):\n"
          f"  {cmd} validate quickstart.toml my-model.toml\n"
          f"  {cmd} run quickstart.toml\n"
          f"  {cmd} report runs/quickstart --out runs/quickstart/report\n"
          "Then edit my-model.toml (or models.toml) to seat your own model.")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands on experiment files and run directories to the ``econarena`` parser."""
    r = sub.add_parser("run", help="run experiments from TOML files")
    _run_arguments(r)
    r.set_defaults(func=cmd_run, stop_signals=True)
    st = sub.add_parser("steer", help="steering experiments ([steer]): CFR over prompt actions, with OpenSpiel")
    _run_arguments(st)
    st.set_defaults(func=cmd_steer, stop_signals=True)

    m = sub.add_parser("merge", help="join the shard directories of one experiment (run --shard K/N)",
                       description="Join the run directories of every shard of one experiment (run --shard K/N) "
                                   "into one run directory equal to an unsharded run.")
    m.add_argument("shards", nargs="+", metavar="SHARD_DIR",
                   help="the run directories of every shard (run --shard K/N)")
    m.add_argument("--out", required=True, help="the merged run directory (new)")
    m.add_argument("--quiet", action="store_true", help="no table")
    m.set_defaults(func=cmd_merge, stop_signals=ANALYSIS)

    v = sub.add_parser("validate", help="check TOML files without running anything")
    v.add_argument("files", nargs="+", metavar="FILE.toml",
                   help="experiment files, models files or bench suites")
    v.add_argument("--check-keys", action="store_true", help="also require SDKs and API keys to be present")
    v.set_defaults(func=cmd_validate, stop_signals=ANALYSIS)

    c = sub.add_parser("check", help="run the contract checks of our games on a game (your own included)",
                       description="Check a game against the contract every built-in game passes: declaration, "
                                   "prompt template, random play within bounds, every baseline to the end, "
                                   "determinism, JSON round trips, equilibrium where declared. Exit 1 when a "
                                   "check fails.")
    c.add_argument("game", metavar="GAME",
                   help="a game name, a path package.module:Class (or folder/file.py:Class, from the current "
                        "folder) to a game of your own, or an experiment FILE.toml")
    c.add_argument("--seeds", type=int, default=20, help="draws per check (default 20)")
    c.add_argument("--agent", metavar="MODULE:CLASS",
                   help="check a player of your own (a CustomAgent subclass) in GAME instead of the game itself")
    c.set_defaults(func=cmd_check, stop_signals=True)  # it plays code of one's own: a signal must stop it

    i = sub.add_parser("init", help="write a starter folder: the quickstart, the tutorial's files, a models file",
                       description="Write the quickstart, the tutorial's first study and a models file to edit "
                                   "into DIR, from the installed package (no file of the repository needed).")
    i.add_argument("dir", nargs="?", default="econarena-starter", metavar="DIR",
                   help="the folder to write into (default: econarena-starter; created if missing)")
    i.add_argument("--force", action="store_true", help="overwrite starter files already in DIR")
    i.set_defaults(func=cmd_init)

    ls = sub.add_parser("list", help="list games and agents")
    ls.set_defaults(func=cmd_list)

    s = sub.add_parser("summary", help="print the metrics table of run directories")
    s.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (or folders of them)")
    s.add_argument("--json", action="store_true", help="print summary JSON instead of a table")
    s.set_defaults(func=cmd_summary, stop_signals=ANALYSIS)
