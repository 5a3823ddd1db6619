"""Subcommands that turn run directories into reports: ``report``, ``compare``, ``suite``, ``import`` and
``analyze``.

pandas and matplotlib come with the ``report`` extra; they are imported only when one of these commands
runs, so the core CLI starts fast and works without them.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..formats.files import CONFIG_BYTES, TOML_UTF8, FileRefused, read_config_text, read_text
from ..formats.registry import Registry
from .common import (
    ANALYSIS,
    EXIT_CONFIG,
    EXIT_ERROR,
    EXIT_INCOMPLETE,
    EXIT_OK,
    add_ray_arguments,
    config_difference,
    err,
    in_file,
    load_price_arg,
    out_dir_problem,
    ray_engine,
    run_guarded,
    run_side_by_side,
    same_experiment,
)
from .terminal import show

_PAPER_SESSIONS = re.compile(r"^#\s*paper:\s*sessions\s*=\s*(\d+)", re.MULTILINE)


def _need_report_extra() -> bool:
    try:
        import duckdb  # noqa: F401
        import matplotlib  # noqa: F401
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        err(f"this command needs {exc.name}: pip install 'econarena[report]'")
        return False
    return True


def _prices_ok(path: str | None) -> bool:
    return load_price_arg(path) is not None


def _run_dirs(paths: list[str]) -> list[Path] | None:
    """The run directories the arguments name; None (each bad argument reported, one line each) when any
    argument names none: a typo'd folder must not be skipped in silence while the others are reported."""
    from ..analysis.load import expand_run_dirs

    found, ok = [], True
    for arg in paths:
        p = Path(arg)
        dirs = expand_run_dirs([p])
        if dirs:
            found += dirs
            continue
        ok = False
        what = ("no such file or directory" if not p.exists() else
                "is a file, not a run directory" if not p.is_dir() else "holds no run directory")
        err(f"{arg}: {what} (a run directory holds runs.jsonl and config.toml, as `econarena run` writes it)")
    return expand_run_dirs(found) if ok else None


def _print_report(rep: Any) -> None:
    print(f"report: {rep.html}")
    for f in rep.figures:
        print(f"  {f.png.name:<28} {f.title}")
    for name, why in rep.skipped:
        print(f"  (not shown) {name}: {why}")
    for note in rep.notes:
        print(f"  note: {note}")
    print(f"exports: {', '.join(p.name for p in rep.files)} in {rep.out}")


def cmd_report(args: argparse.Namespace) -> int:
    if not _need_report_extra():
        return EXIT_ERROR
    from ..analysis.report import build_report

    if not _prices_ok(args.prices):
        return EXIT_CONFIG
    dirs = _run_dirs(args.run_dirs)
    if dirs is None:
        return EXIT_CONFIG
    if args.out:
        out = Path(args.out)
    elif len(args.run_dirs) == 1:
        out = Path(args.run_dirs[0]) / "report"
    else:
        out = Path("report")
    if out.exists() and not out.is_dir():
        err(f"--out {out}: is a file, not a directory")
        return EXIT_CONFIG
    try:
        rep = build_report(dirs, out, n_boot=args.boot, seed=args.seed, prices=args.prices, title=args.title,
                           transcripts=args.transcripts)
    except OSError as exc:
        err(f"cannot write the report to {exc.filename or out}: {exc.strerror or exc}")
        return EXIT_CONFIG
    _print_report(rep)
    if args.open:
        open_in_browser(rep.html)
    return EXIT_OK


def open_in_browser(page: Path) -> None:
    """Hand the page's file URL to the user's browser (``webbrowser``: $BROWSER, else the desktop's)."""
    import webbrowser

    url = page.resolve().as_uri()
    if not webbrowser.open(url):
        print(f"could not start a browser; open {url}", file=sys.stderr)


def cmd_compare(args: argparse.Namespace) -> int:
    if not _need_report_extra():
        return EXIT_ERROR
    from ..analysis.compare import COMPARE_METRICS, GAME_FREE_METRICS, compare, format_compare
    from ..analysis.load import load
    from ..analysis.reasoning import REASONING_METRICS, has_reasoning
    from ..analysis.tables import METRICS

    for m in args.metrics or ():
        if m not in METRICS and m not in REASONING_METRICS:
            err(f"unknown metric {m!r}; known: {', '.join([*METRICS, *REASONING_METRICS])}")
            return EXIT_CONFIG
    if args.by is not None or args.dir_b is None:
        return _compare_by(args)
    frames = []
    for d in (args.dir_a, args.dir_b):
        if _run_dirs([d]) is None:
            return EXIT_CONFIG
        frames.append(load(d))
    a, b = frames
    metrics = tuple(args.metrics or COMPARE_METRICS)
    games = [sorted(set(f.experiments["game"])) for f in frames]
    if games[0] != games[1] or len(games[0]) > 1:
        # a beauty-contest payoff ratio and an auction's are different quantities: only behaviour that
        # means the same in every game (rule breaking, tokens, latency) may be set side by side
        bad = [m for m in metrics if m not in GAME_FREE_METRICS and m not in REASONING_METRICS]
        if args.metrics and bad:
            err(f"A ({', '.join(games[0])}) and B ({', '.join(games[1])}) are different games: "
                 f"{', '.join(bad)} cannot be compared across games; comparable: {', '.join(GAME_FREE_METRICS)}")
            return EXIT_CONFIG
        metrics = tuple(m for m in metrics if m in GAME_FREE_METRICS or m in REASONING_METRICS) or GAME_FREE_METRICS
        print(f"warning: A ({', '.join(games[0])}) and B ({', '.join(games[1])}) are different games; payoff, "
              f"deviation and win rate mean different things in each, so only {', '.join(metrics)} are "
              "compared", file=sys.stderr)
    if not args.metrics and (has_reasoning(a) or has_reasoning(b)):  # reasoning models: their tokens too
        metrics = (*metrics, *REASONING_METRICS)
    extra = REASONING_METRICS
    table = compare(a, b, metrics, n_boot=args.boot, seed=args.seed, extra=extra)
    names = []
    for f, d in zip(frames, (args.dir_a, args.dir_b)):
        names.append(", ".join(f.experiments["experiment"]) if len(f.experiments) <= 2 else str(d))
    print(f"A = {args.dir_a}\nB = {args.dir_b}\n")
    print(format_compare(table, names[0], names[1], extra=extra))
    if args.csv:
        _compare_csv(table, args.csv)
    return EXIT_OK


def _compare_csv(table: Any, path: str) -> None:
    """A comparison table as CSV: each side's value, interval and sessions in columns of their own."""
    from ..formats.csvcells import frame_csv

    flat = table.assign(**{f"{side}_{k}": [getattr(e, k) for e in table[side]]
                           for side in ("a", "b", "diff") for k in ("value", "low", "high", "sessions")})
    frame_csv(flat.drop(columns=["a", "b", "diff"]), path)
    print(f"\nwritten: {path}")


def _compare_by(args: argparse.Namespace) -> int:
    """``compare DIR --by FACTOR``: the levels of one [grid] factor against the first, paired."""
    from ..analysis.cells import factors
    from ..analysis.compare import COMPARE_METRICS, compare_by, format_compare_by, trend_axis, trend_by
    from ..analysis.load import load
    from ..analysis.scan import read_dirs

    if args.by is None or args.dir_b is not None:
        err("compare takes DIR_A DIR_B, or one DIR with --by FACTOR (a [grid] factor of it)")
        return EXIT_CONFIG
    if _run_dirs([args.dir_a]) is None:
        return EXIT_CONFIG
    config = read_dirs([Path(args.dir_a)])[0].config  # the reader every analysis uses (its checks included)
    frames = load(args.dir_a)
    found, metrics = factors(config), tuple(args.metrics or COMPARE_METRICS)
    try:
        table = compare_by(frames, found, args.by, metrics, n_boot=args.boot, seed=args.seed)
        trends = trend_by(frames, found, args.by, metrics, n_boot=args.boot, seed=args.seed)
    except ValueError as exc:
        err(f"{args.dir_a}: {exc}")
        return EXIT_CONFIG
    factor = next(f for f in found if f.key == args.by)
    print(f"{args.dir_a}: {args.by}, each level against the first (paired on the session)"
          + (", and the trend across the levels" if len(trends) else "") + "\n")
    print(format_compare_by(table, args.by, trends=trends, axis=trend_axis(factor)))
    if args.csv:
        _compare_csv(table, args.csv)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- suite

def suite_files(paths: list[str]) -> list[Path]:
    """Experiment files of a suite: the TOML files named, or those in a folder that have an [experiment]."""
    from ..hosts.config import ConfigError

    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.glob("*.toml")):
                try:
                    text = read_config_text(f, "a TOML file", TOML_UTF8)
                except FileRefused as exc:
                    raise ConfigError(str(exc)) from None
                if re.search(r"^\[experiment\]", text, re.MULTILINE):
                    out.append(f)
        else:
            out.append(p)
    return out


def paper_sessions(path: Path) -> int | None:
    """The paper's session count, noted in the file as ``# paper: sessions = N``."""
    try:
        m = _PAPER_SESSIONS.search(read_text(path, CONFIG_BYTES))
    except (OSError, ValueError):
        return None  # load_experiment reports the unreadable file with its reason
    return int(m.group(1)) if m else None


def _sessions_arg(value: str) -> str:
    if value != "paper" and not (value.isdigit() and int(value) >= 1):
        raise argparse.ArgumentTypeError("expected a positive integer or 'paper'")
    return value


def cmd_suite(args: argparse.Namespace) -> int:
    from ..agents.llm import load_dotenv
    from ..hosts.config import ConfigError, load_experiment
    from ..hosts.host import preflight_experiment

    load_dotenv()
    try:
        files = suite_files(args.paths)
        patterns = [re.compile(pat) for pat in args.only or ()]
    except ConfigError as exc:
        err(str(exc))
        return EXIT_CONFIG
    except re.error as exc:
        err(f"--only {exc.pattern!r}: not a regular expression ({exc})")
        return EXIT_CONFIG
    if patterns:
        files = [f for f in files if any(pat.search(f.stem) for pat in patterns)]
    if not files:
        err(f"no experiment files (TOML with an [experiment] table) in {', '.join(args.paths)}")
        return EXIT_CONFIG
    args.price_table = load_price_arg(args.prices)  # the progress bar's cost, and the report's
    if args.price_table is None:
        return EXIT_CONFIG
    if args.models and not Path(args.models).is_file():
        err(f"--models {args.models}: no such file")
        return EXIT_CONFIG
    exps, errors = [], []
    for f in files:
        overrides = None
        if args.sessions == "paper":
            n = paper_sessions(f)
            if n is None:
                errors.append(f"{f}: --sessions paper, but the file has no '# paper: sessions = N' line")
                continue
            overrides = {"sessions": n}
        elif args.sessions:
            overrides = {"sessions": int(args.sessions)}
        try:
            exps.append(load_experiment(f, models=args.models, overrides=overrides))
        except ConfigError as exc:
            errors.append(str(exc))
    names = [e.name for e in exps]
    errors += [f"two files share the experiment name {n!r}" for n in sorted({n for n in names if names.count(n) > 1})]
    for exp in exps:
        errors += in_file(exp, preflight_experiment(exp))
    if errors:
        for e in errors:
            err(e)
        return EXIT_CONFIG

    out = Path(args.out)
    problem = out_dir_problem(out)
    if problem:
        err(problem)
        return EXIT_CONFIG
    args.engine = ray_engine(args)
    try:
        return _suite_runs(exps, out, args)
    finally:
        if args.engine is not None:
            args.engine.close()


def _suite_runs(exps: list[Any], out: Path, args: argparse.Namespace) -> int:
    from ..formats.rundir import complete_runs, read_jsonl, runnable_prefix

    worst, done, side_by_side = EXIT_OK, [], []
    for i, exp in enumerate(exps, 1):
        d = out / exp.name
        resume = False
        if (d / "manifest.json").exists() or (d / "runs.jsonl").exists():
            if not (d / "config.toml").exists() or not same_experiment(d, exp):
                why = config_difference(d, exp) if (d / "config.toml").exists() else "it has no config.toml"
                err(f"{d} holds a different experiment ({why}); use another --out, or delete it to start over")
                worst = max(worst, EXIT_CONFIG)
                continue
            runs = runnable_prefix(complete_runs(read_jsonl(d / "runs.jsonl", kind="runs")))
            total = exp.total_runs()
            if len(runs) >= total:
                print(f"[{i}/{len(exps)}] {exp.name}: complete, skipped ({d})")
                done.append(d)
                continue
            resume = True
        print(f"[{i}/{len(exps)}] {exp.name}: {'resuming' if resume else 'running'} -> {d}")
        if args.engine is not None:  # on Ray the experiments run side by side, below
            side_by_side.append((exp, d, resume))
            continue
        result = run_guarded(exp, d, args, resume=resume,
                             on_interrupt="run the same suite command again to continue")
        if isinstance(result, int):
            return result
        done.append(d)
        if result.status != "complete":
            worst = max(worst, EXIT_INCOMPLETE)
    if side_by_side:
        results = run_side_by_side(side_by_side, args)
        if isinstance(results, int):
            return results
        done += [d for _, d, _ in side_by_side]
        if any(r.status != "complete" for r in results):
            worst = max(worst, EXIT_INCOMPLETE)
    if args.no_report or not done:
        return worst
    if not _need_report_extra():
        return max(worst, EXIT_ERROR)
    from ..analysis.report import build_report

    rep = build_report(done, Path(args.report_out) if args.report_out else out / "report", n_boot=args.boot,
                       seed=args.seed, prices=args.prices, title=args.title)
    _print_report(rep)
    return worst


def _int_at_least(low: int, high: int = 2**63 - 1) -> Any:
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None
        if not low <= n <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, got {n}")
        return n
    return parse


# --------------------------------------------------------------------------------------------- import

def cmd_import(args: argparse.Namespace) -> int:
    """Another tool's released results -> run directories (importers/), the accounting of every item, the
    source's own tables (analysis/families/)."""
    from ..games.text import storable
    from ..importers.common import ImportFailed, hold_import
    from ..importers.registry import IMPORTERS

    if Path(args.out).exists() and not Path(args.out).is_dir():
        err(f"--out {args.out}: is a file, not a directory")
        return EXIT_CONFIG
    module = IMPORTERS[args.source]
    given = {"unnamed": args.unnamed_model, "metrics": args.metrics}
    out = Path(args.out)
    shown = storable(str(out))  # a path of undecodable bytes is printed as its escapes, never a traceback
    try:
        with hold_import(out):  # the whole import: two imports into one --out at once left it mixed
            return _import_into(args, module, given, out, shown)
    except ImportFailed as exc:
        err(str(exc))
        return EXIT_CONFIG


def _import_into(args: argparse.Namespace, module: Any, given: dict[str, Any], out: Path, shown: str) -> int:
    """:func:`cmd_import` once it holds ``--out``."""
    from ..analysis.metrics import write_summary
    from ..games.text import storable
    from ..importers.common import write_import_report

    result = module.import_dir(args.raw_dir, out, **{k: v for k, v in given.items() if k in module.OPTIONS})
    for w in result.warnings:
        print(f"econarena: warning: {w}", file=sys.stderr)
    for r in result.refused[:_SHOWN]:
        print(f"econarena: refused: {r.item}: {r.reason}", file=sys.stderr)
    if len(result.refused) > _SHOWN:
        print(f"econarena: ... and {len(result.refused) - _SHOWN} more refused (all in {shown}/import_refused.csv)",
              file=sys.stderr)
    try:
        files = write_import_report(result, out)
    except OSError as exc:
        err(f"cannot write to {exc.filename or out}: {exc.strerror or exc}")
        return EXIT_CONFIG
    if not result.dirs:
        print("\n".join(result.lines()))
        err(f"no {module.ITEMS} could be imported from {storable(args.raw_dir)}")
        return EXIT_CONFIG
    for d in result.dirs:
        write_summary(d)
    hook = _AFTER_IMPORT.get(args.source)  # a source's own tables, where it has any
    if hook is not None:
        files += hook(result, out, args)
    print()
    print("\n".join(result.lines()))
    for d in result.disagreements[:_SHOWN]:
        print(f"  disagrees: {d.item}: {d.kind}: {d.detail}")
    if len(result.disagreements) > _SHOWN:
        print(f"  ... and {len(result.disagreements) - _SHOWN} more (all in {shown}/import_disagreements.csv)")
    print(f"\nimported {result.runs} run(s) into {len(result.dirs)} run director"
          f"{'y' if len(result.dirs) == 1 else 'ies'} under {shown}; written: {', '.join(p.name for p in files)}")
    return EXIT_OK


_SHOWN = 20  # refusals and disagreements printed; the files hold them all


def _after_gamabench(result: Any, out: Path, args: argparse.Namespace) -> list[Path]:
    """The GAMA-Bench score table (analysis/families/gamabench.py), printed and written."""
    from ..analysis.families import gamabench
    from ..formats.rundir import write_atomic

    rows = gamabench.score_table(gamabench.collect(result.dirs).scores)
    csv_path = out / "gamabench_scores.csv"
    write_atomic(csv_path, gamabench.scores_csv(rows))
    show(*gamabench.leaderboard_cells(rows), gamabench.format_leaderboard(rows), title="GAMA-Bench scores")
    return [csv_path]


def _after_negotiationarena(result: Any, out: Path, args: argparse.Namespace) -> list[Path]:
    """The pair table (win rates by --metrics), then the published Figure 3 beside the recorded outcomes."""
    from ..analysis.families import negotiationarena as na
    from ..analysis.scan import scan
    from ..formats.rundir import write_atomic

    own, paper, correct = na.Collector(), na.Collector(reading="paper"), na.Collector(reading="correct")
    scan(result.dirs, [own, paper, correct])  # the imported directories read once for the three readings
    table = na.pair_table(own.rows, args.metrics)
    csv_path = out / "negotiationarena_pairs.csv"
    write_atomic(csv_path, na.pairs_csv(table))
    show(*na.pairs_cells(table), na.format_pairs(table, args.metrics), left=3,
         title=f"NegotiationArena: win rates ({args.metrics} formula) and mean payoffs by ordered pair")
    check = na.published_check(paper.rows, correct.rows)
    check_path = out / "negotiationarena_published_check.csv"
    write_atomic(check_path, na.check_csv(check))
    print()
    print(na.format_check(check))
    released = na.released_counts()
    print("games per scenario, imported here / in the released section-one logs: " + "; ".join(
        f"{g}: {result.imported.get(g, 0)} / {n}" for g, n in sorted(released.items())))
    return [csv_path, check_path]


def _after_glee(result: Any, out: Path, args: argparse.Namespace) -> list[Path]:
    """glee_games.csv (one row per game: ids, players, rounds, deal, the paper's and the code's metrics) and
    glee_summary.csv (per family, kind, seat and player), printed in short."""
    from ..analysis.families import glee
    from ..formats.rundir import write_atomic
    from ..games.text import storable

    rows = glee.games_table(result.dirs)
    games_path, summary_path = out / "glee_games.csv", out / "glee_summary.csv"
    write_atomic(games_path, glee.table_csv(rows, glee.GAMES_COLUMNS))
    summary = glee.summary_table(rows)
    write_atomic(summary_path, glee.table_csv(summary, glee.SUMMARY_COLUMNS))
    kinds = sorted({(r["family"], r["kind"]) for r in rows})
    print("GLEE games imported: " + "; ".join(
        f"{f} ({k}): {sum(1 for r in rows if (r['family'], r['kind']) == (f, k))}" for f, k in kinds))
    if any(r["kind"] == glee.HUMAN for r in rows):
        print(f"people beside models: econarena analyze glee {storable(str(out))} --human-vs-model")
    return [games_path, summary_path]


def _hook(obj: Any, source: str) -> Callable[[Any, Path, argparse.Namespace], list[Path]]:
    if not callable(obj):
        raise TypeError(f"expected a function (result, out, args) -> written files, got {type(obj).__name__}")
    return obj


# what each source prints and writes after its import (the family's own tables), by source name; the
# targets name this module by its own __name__, so they hold wherever the module lives
_AFTER_IMPORT: Registry[Callable[[Any, Path, argparse.Namespace], list[Path]]] = Registry("import hook", {
    "gamabench": f"{__name__}:_after_gamabench", "negotiationarena": f"{__name__}:_after_negotiationarena",
    "glee": f"{__name__}:_after_glee",
}, check=_hook)


# -------------------------------------------------------------------------------------------- analyze

def cmd_analyze(args: argparse.Namespace) -> int:
    """A family's linear models (analysis/families/glee.py): effects x100 with 95% intervals, CSV, meta-game."""
    from ..analysis.families import glee
    from ..formats.rundir import write_atomic
    from ..games import GAMES

    families = sorted({g.info.family for g in GAMES.values() if g.info.factors})
    if args.family not in families:  # said "no complete runs of a 'foo' game" as if the folder were at fault
        err(f"analyze {args.family}: no game family by that name declares regression factors; known: "
            f"{', '.join(families)}")
        return EXIT_CONFIG
    if _run_dirs(args.run_dirs) is None:
        return EXIT_CONFIG
    if args.human_vs_model:
        return _human_vs_model(args)
    if not _need_report_extra():
        return EXIT_ERROR
    try:
        import statsmodels  # noqa: F401
    except ImportError:
        err("this command needs statsmodels: pip install 'econarena[report]'")
        return EXIT_ERROR
    try:
        datas = glee.collect(args.run_dirs, args.family, by=args.by)
    except glee.AnalysisError as exc:
        err(str(exc))
        return EXIT_CONFIG
    if not datas:
        err(f"no complete runs of a '{args.family}' game that declares regression factors in "
             f"{', '.join(args.run_dirs)}")
        return EXIT_CONFIG
    known = {glee.base_metric(m) for d in datas.values() for m in d.metrics} | {
        m for d in datas.values() for m in d.metrics}
    bad = [m for m in args.metrics or () if m not in known]
    if bad:
        err(f"--metrics {', '.join(bad)}: not a metric of these runs; known: {', '.join(sorted(known))}")
        return EXIT_CONFIG
    seen_players = {p for d in datas.values() for p in d.player_names()}
    if args.baseline_model is not None and args.baseline_model not in seen_players:
        err(f"--baseline-model {args.baseline_model!r}: no seat was played by it; players: "
             f"{', '.join(sorted(seen_players))}")
        return EXIT_CONFIG
    fits = glee.fit_all(datas, args.metrics, model_ref=args.baseline_model, pairs=args.pairs)
    for d in datas.values():
        if d.dropped_invalid:
            print(f"note: {d.game}: {d.dropped_invalid} run(s) with a rule break left out (as GLEE's data)")
    for f in fits:
        print(glee.format_fit(f) + "\n")
    tables = [t for t in (glee.pair_table(d) for _, d in sorted(datas.items())) if t is not None]
    for t in tables:
        print(glee.format_equilibria(t))
    out = Path(args.out) if args.out else (Path(args.run_dirs[0]) if len(args.run_dirs) == 1 else Path("."))
    if out.exists() and not out.is_dir():
        err(f"--out {out}: is a file, not a directory")
        return EXIT_CONFIG
    try:
        out.mkdir(parents=True, exist_ok=True)
        effects = out / f"{args.family}_effects.csv"
        write_atomic(effects, glee.effects_csv(fits))
        written = [effects]
        if tables:
            written.append(out / f"{args.family}_pairs.csv")
            write_atomic(written[-1], glee.pairs_csv(tables))
    except OSError as exc:
        err(f"cannot write to {exc.filename or out}: {exc.strerror or exc}")
        return EXIT_CONFIG
    print(f"\nwritten: {', '.join(map(str, written))}")
    return EXIT_OK


def _human_vs_model(args: argparse.Namespace) -> int:
    """``econarena analyze glee DIRS --human-vs-model``: people beside models, printed and written."""
    from ..analysis.families import glee
    from ..formats.rundir import write_atomic

    if args.family != "glee":
        err(f"--human-vs-model: only the glee family has games with people, not {args.family!r}")
        return EXIT_CONFIG
    try:
        table = glee.human_vs_model(glee.games_table(args.run_dirs))
    except glee.AnalysisError as exc:
        err(str(exc))
        return EXIT_CONFIG
    if not table:
        err(f"no game with a person in one seat (label 'human', from econarena import glee) in "
            f"{', '.join(args.run_dirs)}")
        return EXIT_CONFIG
    print(glee.format_human(table))
    out = Path(args.out) if args.out else (Path(args.run_dirs[0]) if len(args.run_dirs) == 1 else Path("."))
    if out.exists() and not out.is_dir():
        err(f"--out {out}: is a file, not a directory")
        return EXIT_CONFIG
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "glee_human_vs_model.csv"
        write_atomic(path, glee.table_csv(table, glee.HUMAN_COLUMNS))
    except OSError as exc:
        err(f"cannot write to {exc.filename or out}: {exc.strerror or exc}")
        return EXIT_CONFIG
    print(f"\nwritten: {path}")
    return EXIT_OK


def _analysis_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--boot", type=_int_at_least(1, 1_000_000), default=2000, metavar="N",
                   help="bootstrap replicates for the 95%% intervals (default 2000)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the bootstrap (default 0)")


def cmd_ratings(args: argparse.Namespace) -> int:
    """Rate a tournament's entrants: Plackett-Luce with bootstrap intervals and rank ranges, Nash averaging,
    alpha-Rank and the cycles, per game and overall (analysis/ratings.py)."""
    from ..analysis import ratings as rt
    from ..formats.rundir import LogError
    from .terminal import show

    dirs = _run_dirs(args.run_dirs)
    if dirs is None:
        return EXIT_CONFIG
    try:
        per, overall = rt.ratings(dirs, n_boot=args.boot, seed=args.seed)
    except (rt.RatingsError, LogError, FileRefused) as exc:
        err(str(exc))
        return EXIT_CONFIG
    tables = [*per.values(), *([overall] if overall is not None else [])]
    head = ["entrant", "rating", "95% interval", "ranks", "Nash avg", "alpha-Rank"]

    def num(x: float) -> str:
        return "inf" if x == float("inf") else "-inf" if x == float("-inf") else "n/a" if x != x else f"{x:.3f}"

    for t in tables:
        order = sorted(range(len(t.entrants)), key=lambda i: (-t.rating[i] if t.rating[i] == t.rating[i]
                                                               else float("inf"), t.entrants[i]))
        rows = [[t.entrants[i], num(t.rating[i]), f"[{num(t.low[i])}, {num(t.high[i])}]",
                 f"{t.rank_low[i]}-{t.rank_high[i]}" if t.rank_low[i] != t.rank_high[i] else str(t.rank_low[i]),
                 num(t.nash_average[i]), num(t.alpharank[i])] for i in order]
        widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
        plain = "\n".join(["  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths)))
                           for r in [head, *rows]])
        title = f"{t.game}: ratings (Plackett-Luce, log worth; reference at 0)"
        show(head, rows, f"{title}\n{plain}", title=title)
        for note in t.notes:
            print(f"  - {note}")
        print()
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        # the aggregate's rows are always there: with one game they are that game's, as in --json
        rated = tables if overall is not None else [*tables, dataclasses.replace(tables[0], game=rt.OVERALL)]
        (out / "ratings.csv").write_text(rt.csv_text(rated), encoding="utf-8")
        for t in tables:
            rt.heatmap(t, out / f"metagame_{_safe_name(t.game)}.png")
        print(f"ratings: {out / 'ratings.csv'} (and the heat map of P per game)")
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(rt.json_doc(per, overall), indent=1) + "\n", encoding="utf-8")
        print(f"ratings: {args.json}")
    return EXIT_OK


def _safe_name(text: str) -> str:
    """A game's name (``game [cell]`` with a grid) as a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "game"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the report commands to the ``econarena`` parser."""
    _add_report(sub)
    _add_compare(sub)
    _add_import(sub)
    _add_analyze(sub)
    _add_suite(sub)
    _add_ratings(sub)


def _add_report(sub: argparse._SubParsersAction) -> None:
    """The ``report`` command's parser."""
    r = sub.add_parser("report", help="HTML report with the paper's figures and tables from run directories",
                       description="Build report.html (self-contained), PNG/SVG figures, metrics.csv and "
                                   "parquet exports from run directories (or folders of them).")
    r.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="run directories, folders of them, or a glob (shards are read where they are)")
    r.add_argument("--out", help="report folder (default: RUN_DIR/report for one directory, else ./report)")
    r.add_argument("--prices", metavar="FILE.toml", help="USD per million tokens by model or label, for costs")
    r.add_argument("--title", default="EconArena report", help="the page's title (default: %(default)s)")
    r.add_argument("--transcripts", type=_int_at_least(0), default=50, metavar="N",
                   help="conversations: up to N games per directory of a game that talks (default 50; 0: none)")
    r.add_argument("--open", action="store_true", help="open the report in the web browser when it is built")
    _analysis_options(r)
    r.set_defaults(func=cmd_report, stop_signals=ANALYSIS)


def _add_compare(sub: argparse._SubParsersAction) -> None:
    """The ``compare`` command's parser."""
    c = sub.add_parser("compare", help="two run directories side by side per label, with the difference",
                       description="Print A, B and A - B per label with 95% session-bootstrap intervals "
                                   "(paired when both drew the same sessions).")
    c.add_argument("dir_a", metavar="DIR_A", help="the first run directory (A)")
    c.add_argument("dir_b", metavar="DIR_B", nargs="?", help="the second run directory (B); none with --by")
    c.add_argument("--by", metavar="FACTOR", help="compare the levels of one [grid] factor of DIR_A, each "
                   "against the first level, per label, paired on the session; an ordered factor (numbers, "
                   "efforts; three levels or more) adds the trend across its levels")
    c.add_argument("--metrics", nargs="+", metavar="METRIC",
                   help="metrics to compare (default: payoff_ratio mean_payoff mean_deviation win_rate "
                        "rule_break_rate_pct)")
    c.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    _analysis_options(c)
    c.set_defaults(func=cmd_compare, stop_signals=ANALYSIS)


def _add_import(sub: argparse._SubParsersAction) -> None:
    """The ``import`` command's parser."""
    from ..importers.registry import IMPORTERS  # the sources' names only: no importer is imported

    im = sub.add_parser("import", help="turn another tool's released results into run directories and scores",
                        description="Read another harness's released results into our run directories under --out "
                                    "and account for every item: imported, or refused with its reason "
                                    "(OUT/import_report.json, OUT/import_refused.csv). Where the source records an "
                                    "outcome apart from the moves, that record is the outcome and our rules' replay "
                                    "of the moves is a check: how many agree is printed, every disagreement listed "
                                    "with its cause (OUT/import_disagreements.csv). gamabench: a raw_results/ tree "
                                    "-> OUT/gamabench_scores.csv and the leaderboard. negotiationarena: "
                                    "game_state.json logs -> OUT/negotiationarena_pairs.csv (player 1 is RED) and "
                                    "the published Figure 3 beside the logs "
                                    "(OUT/negotiationarena_published_check.csv). glee: GLEE's Data/ folder (models "
                                    "and people) -> OUT/glee_games.csv (one row per game) and OUT/glee_summary.csv.")
    im.add_argument("source", choices=IMPORTERS.builtin(),
                    help="whose results: gamabench (CUHK-ARISE/GAMABench raw_results/), negotiationarena "
                         "(vinid/NegotiationArena game_state.json logs) or glee (eilamshapira/GLEE Data/)")
    im.add_argument("raw_dir", metavar="RAW_DIR|LOG_DIR|DATA_DIR",
                    help="the source's released results, or any part of them")
    im.add_argument("--out", required=True, help="where the run directories, the accounting and the tables go")
    im.add_argument("--unnamed-model", default="unnamed", metavar="NAME",
                    help="gamabench: label of files whose name has no model prefix (default: unnamed)")
    im.add_argument("--metrics", choices=["correct", "paper"], default="correct",
                    help="negotiationarena: win rates and ultimatum payoffs by the correct rule (default) or the "
                         "published one (the player-2 win rate has a known formula error; the published check "
                         "always shows both)")
    im.set_defaults(func=cmd_import, stop_signals=ANALYSIS)


def _add_analyze(sub: argparse._SubParsersAction) -> None:
    """The ``analyze`` command's parser."""
    a = sub.add_parser("analyze", help="a family's linear models (GLEE): effects x100 with 95%% intervals",
                       description="Fit one OLS per game and metric over the runs of FAMILY's games: the declared "
                                   "game parameters one-hot with their reference levels, the market variable "
                                   "and each seat's player one-hot; print every effect x100 with its 95% "
                                   "interval (coef +- 1.96 SE) and write OUT/FAMILY_effects.csv, plus "
                                   "OUT/FAMILY_pairs.csv (mean self-gain per ordered pair of players and the "
                                   "pure equilibria of the model-choice meta-game).")
    a.add_argument("family", metavar="FAMILY", help="the game family to analyse: glee")
    a.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="run directories, folders of them, or a glob")
    a.add_argument("--out", help="where the CSV files go (default: RUN_DIR for one directory, else .)")
    a.add_argument("--by", choices=["label", "model"], default="label",
                   help="a seat's player is its label (default) or its model name")
    a.add_argument("--baseline-model", metavar="NAME",
                   help="the player the model effects are relative to (default: the most frequent)")
    a.add_argument("--metrics", nargs="+", metavar="METRIC",
                   help="only these metrics (e.g. efficiency fairness self_gain; default: every numeric one)")
    a.add_argument("--pairs", action="store_true",
                   help="one term per ordered pair of players (p1 | p2) instead of one per seat, relative to "
                        "the baseline player's self-play (GLEE's model-interaction variant)")
    a.add_argument("--human-vs-model", action="store_true",
                   help="instead of the linear models: each seat people played (label 'human', econarena import "
                        "glee) beside every model in the same seat against the same opponent on the same "
                        "configurations; print it and write OUT/glee_human_vs_model.csv")
    a.set_defaults(func=cmd_analyze, stop_signals=ANALYSIS)


def _add_suite(sub: argparse._SubParsersAction) -> None:
    """The ``suite`` command's parser."""
    s = sub.add_parser("suite", help="run every experiment of a folder (resumable) and build one report",
                       description="Run each experiment file of a folder (configs/paper) into OUT/<name>: "
                                   "complete run directories are skipped, unfinished ones resumed. Then build "
                                   "one combined report in OUT/report.")
    s.add_argument("paths", nargs="+", metavar="DIR_OR_FILE", help="folders of experiment files, or files")
    s.add_argument("--models", metavar="FILE.toml", help="alias file (default: models.toml beside each file)")
    s.add_argument("--sessions", type=_sessions_arg, metavar="N|paper",
                   help="sessions per experiment: a number, or 'paper' for the paper's counts noted in each file")
    s.add_argument("--only", nargs="+", metavar="REGEX", help="only files whose name matches one of these")
    s.add_argument("--out", default="runs/paper", help="where the run directories go (default runs/paper)")
    s.add_argument("--report-out", metavar="DIR", help="report folder (default OUT/report)")
    s.add_argument("--no-report", action="store_true", help="run only; build no report")
    s.add_argument("--concurrency", type=_int_at_least(1, 100_000), default=16,
                   help="decisions in flight at once (default 16)")
    s.add_argument("--quiet", action="store_true", help="no progress bar or tables")
    s.add_argument("--no-cache", action="store_true", help="do not read or write the LLM response cache")
    s.add_argument("--cache-dir", help="where the response cache lives (default: $ECONARENA_CACHE_DIR or the user "
                   "cache directory)")
    s.add_argument("--prices", metavar="FILE.toml", help="USD per million tokens by model or label, for costs")
    s.add_argument("--title", default="EconArena: the paper's experiments",
                   help="the report's title (default: %(default)s)")
    add_ray_arguments(s)
    _analysis_options(s)
    s.set_defaults(func=cmd_suite, stop_signals=True)


def _add_ratings(sub: argparse._SubParsersAction) -> None:
    """The ``ratings`` command's parser."""
    rt = sub.add_parser("ratings", help="rate a tournament's entrants: Plackett-Luce, Nash averaging, alpha-Rank",
                        description="Per game and overall: Plackett-Luce (Bradley-Terry for two seats) ratings "
                                    "with session-bootstrap 95%% intervals and rank ranges, the meta-game's Nash "
                                    "averages and alpha-Rank, and the cycles the intervals support.")
    rt.add_argument("run_dirs", nargs="+", metavar="DIR", help="run directories of tournaments, folders of them, "
                    "or a glob")
    rt.add_argument("--out", metavar="DIR", help="write ratings.csv and the heat maps of P here")
    rt.add_argument("--json", metavar="FILE", help="write the ratings and cycles as JSON")
    rt.add_argument("--boot", type=_int_at_least(1, 1_000_000), default=1000, metavar="N",
                    help="bootstrap replicates for the 95%% intervals and rank ranges (default 1000)")
    rt.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the bootstrap (default 0)")
    rt.set_defaults(func=cmd_ratings, stop_signals=ANALYSIS)
