"""``econarena bench`` (one model, one score: a versioned suite played and scored) and ``econarena leaderboard``
(many bench results in one table). The suite is data (``configs/bench/v2.toml``, its format in
``formats/benchsuite.py``); the games are played by the Host (``hosts/bench.py``) and scored from the run
directories (``analysis/benchmark.py``).

Layout of ``--out DIR`` (default ``runs/bench``): ``DIR/<model>/`` holds ``bench.json``, ``scorecard.html``,
``suite.toml`` (the suite file as played), ``bench-settings.json`` (everything the result depends on, and its
digest), ``bench-log.jsonl`` (one line per invocation) and one run directory per game; the baselines' rows are
played once per tier into ``DIR/_baselines/<tier>/<baseline>/``. Running the same command again continues
where it stopped; a directory that holds another suite, tier or model settings is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..formats.files import MANIFEST_BYTES, read_text
from .common import (
    ANALYSIS,
    EXIT_CONFIG,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Interrupted,
    add_ray_arguments,
    config_difference,
    err,
    failed_job,
    load_price_arg,
    number_arg,
    out_dir_problem,
    ray_engine,
    run_until_signalled,
    same_experiment,
    shard_suffix,
)

SETTINGS = "bench-settings.json"
LOG = "bench-log.jsonl"
SUITE_COPY = "suite.toml"
BASELINES_DIR = "_baselines"


_positive_usd = number_arg("an amount of US dollars above 0")


def _concurrency(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= 100_000:
        raise argparse.ArgumentTypeError(f"expected an integer from 1 to 100000, got {value!r}")
    return n


def _shard(value: str) -> tuple[int, int]:
    from ..hosts.shards import parse_shard

    try:
        return parse_shard(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Job:
    """One model (or baseline) of this command: its experiments, directory and budget."""

    def __init__(self, spec: Any, exps: list[Any], out: Path, kind: str, settings: dict[str, Any]) -> None:
        self.spec, self.exps, self.out, self.kind, self.settings = spec, exps, out, kind, settings
        self.budget: Any = None
        self.started = time.time()
        self.busy = False  # a baseline another process is playing now: not scored by this invocation
        self.engine_stopped = False  # the engine (Ray) left sessions unplayed: a lost node, the stall bound


def cmd_bench(args: argparse.Namespace) -> int:
    from ..agents.llm import load_dotenv
    from ..formats.benchsuite import DEFAULT, SuiteError, load_suite
    from ..hosts.bench import ModelSpec, build
    from ..hosts.config import ConfigError
    from ..hosts.host import preflight_experiment

    load_dotenv()
    try:
        suite = load_suite(args.suite or DEFAULT)
    except SuiteError as exc:
        err(str(exc))
        return EXIT_CONFIG
    specs = _specs(args)
    if isinstance(specs, str):
        err(specs)
        return EXIT_CONFIG
    prices = load_price_arg(args.prices)
    if prices is None:
        return EXIT_CONFIG
    if args.max_cost is not None and (problem := _unpriced(specs, prices, args)) is not None:
        err(problem)
        return EXIT_CONFIG
    built: dict[tuple[str, str], list[Any]] = {}

    def exps_of(spec: ModelSpec, tier: str) -> list[Any]:
        if (spec.label, tier) not in built:
            built[(spec.label, tier)] = build(suite, tier, spec)
        return built[(spec.label, tier)]

    try:
        for spec in specs:
            exps_of(spec, args.tier)
    except ConfigError as exc:
        err(str(exc))
        return EXIT_CONFIG
    if args.dry_run:
        return _dry_run(suite, specs, prices, args, exps_of)
    # every game's: a suite's fixed opponent may be a pinned model with a key of its own
    problems = [f"{spec.source}: {p}" for spec in specs for e in exps_of(spec, args.tier)
                for p in preflight_experiment(e)]
    if problems:
        # the model sits in a different seat from game to game: one missing key is one line, not one per seat
        said: set[str] = set()
        for p in problems:
            if (same := re.sub(r"players\[\d+\] ", "", p, count=1)) not in said:
                said.add(same)
                err(p)
        return EXIT_CONFIG
    out = Path(args.out)
    if (problem := out_dir_problem(out)) is not None:
        err(problem)
        return EXIT_CONFIG
    shard = args.shard
    jobs = _jobs(suite, specs, args, out, exps_of)
    for job in jobs:
        if (problem := _claim(job, suite)) is not None:
            err(problem)
            return EXIT_CONFIG
    if args.max_cost is not None:
        _budgets(jobs, args, prices)
    args.engine = ray_engine(args)
    try:
        status = _play(jobs, args, prices)
    finally:
        if args.engine is not None:
            args.engine.close()
    if status == EXIT_INTERRUPTED:
        _finish(jobs, suite, args, prices, stopped="interrupted", quiet=True)
        return status
    if status != EXIT_OK:
        return status
    if shard:
        return _shard_played(jobs, shard, out)
    return _finish(jobs, suite, args, prices)


def _specs(args: argparse.Namespace) -> list[Any] | str:
    """The models MODEL... name (with --label), each with a directory of its own; or why not."""
    from ..hosts.bench import ModelSpec, model_specs
    from ..hosts.config import ConfigError

    if args.label is not None and not args.label.strip():  # a row needs a name
        return f"--label {args.label!r}: expected a name for the model's row"
    if args.label is not None and len(args.models) > 1:
        return "--label names one model; give one MODEL with it"
    specs: list[ModelSpec] = []
    try:
        for text in args.models:
            specs += model_specs(text, args.label)
    except ConfigError as exc:
        return str(exc)
    slugs = [s.slug.casefold() for s in specs]
    if len(set(slugs)) < len(slugs) or any(s.startswith(BASELINES_DIR) for s in slugs):
        clash = [s.label for s in specs if slugs.count(s.slug.casefold()) > 1]
        return (f"two models share a label or its directory ({', '.join(map(repr, clash))}; or one starts with "
                "'_baselines'): give each its own (--label, or label in its TOML table)")
    return specs


def _unpriced(specs: list[Any], prices: Any, args: argparse.Namespace) -> str | None:
    """--max-cost needs every model's price: which have none, or None."""
    from ..formats.prices import price_of

    unpriced = [s.label for s in specs if s.is_llm and price_of(
        prices, s.label, [str(s.entry["model"])] if s.entry.get("model") else []) is None]
    if not unpriced:
        return None
    return (f"--max-cost needs the price of every model: {', '.join(unpriced)} has none in "
            f"{args.prices or '(no --prices file)'} (a table [\"<label or model>\"] with input_per_mtok and "
            "output_per_mtok)")


def _jobs(suite: Any, specs: list[Any], args: argparse.Namespace, out: Path, exps_of: Any) -> list[_Job]:
    """One job per model (its directory, its games, its settings), then the baselines' (unless
    --no-baselines, and never in a shard)."""
    from ..hosts.bench import model_specs, settings

    shard = args.shard
    suffix = shard_suffix(shard)
    jobs = [_Job(s, exps_of(s, args.tier), out / f"{s.slug}{suffix}", "model",
                 settings(suite, args.tier, s, exps_of(s, args.tier))) for s in specs]
    if not args.no_baselines and not shard:
        from ..hosts.bench import PLAYABLE_BASELINES, build

        for name in PLAYABLE_BASELINES:
            spec = model_specs(name)[0]
            exps = build(suite, args.tier, spec)
            jobs.append(_Job(spec, exps, out / BASELINES_DIR / args.tier / spec.slug, "baseline",
                             settings(suite, args.tier, spec, exps)))
    return jobs


def _budgets(jobs: list[_Job], args: argparse.Namespace, prices: Any) -> None:
    """Each model's --max-cost budget, less what earlier invocations spent (said when nothing is left)."""
    from ..formats.prices import Budget
    from ..hosts.bench import spent_before

    for job in jobs:
        if job.kind == "model" and job.spec.is_llm:
            spent = spent_before([job.out / e.name for e in job.exps], job.spec, prices)
            job.budget = Budget(args.max_cost, prices, spent)
            if job.budget.reached:
                print(f"{job.spec.label}: ${spent:.4f} already spent of --max-cost ${args.max_cost:g}: no call "
                      "is made; raise --max-cost to go on", file=sys.stderr)


def _shard_played(jobs: list[_Job], shard: tuple[int, int], out: Path) -> int:
    """A shard's end: incomplete (finish it before the merge) or played, with how to merge it."""
    unfinished = [f"{job.spec.label} {e.name}" for job in jobs for e in job.exps
                  if _manifest_status(job.out / e.name) != "complete"]
    if unfinished:  # API errors or the budget: exit 0 here let a scheduler start the merge (afterok)
        err(f"shard {shard[0]}/{shard[1]} incomplete ({', '.join(unfinished[:5])}"
            f"{' ...' if len(unfinished) > 5 else ''}): run the same command again to finish it before the merge")
        return EXIT_INCOMPLETE
    print(f"shard {shard[0]}/{shard[1]} played; merge each game's shards with `econarena merge "
          f"{out}/<model>-shard-*/<game> --out {out}/<model>/<game>`, then run the bench command again "
          "without --shard to score it")
    return EXIT_OK


def _manifest_status(run_dir: Path) -> str | None:
    try:
        return json.loads(read_text(run_dir / "manifest.json", MANIFEST_BYTES)).get("status")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None


def _claim(job: _Job, suite: Any) -> str | None:
    """Make ``job.out`` this bench's directory, or say why it cannot be: another suite, tier or settings."""
    from ..hosts.config import first_difference

    d = job.out
    if (problem := out_dir_problem(d)) is not None:
        return problem
    held = d / SETTINGS
    if held.is_file():
        try:
            before = json.loads(read_text(held, MANIFEST_BYTES))
        except (OSError, ValueError, RecursionError) as exc:
            return f"{held}: unreadable ({exc}); delete it or use another --out"
        if before.get("digest") != job.settings["digest"]:
            # what a person changed first: the suite, the tier, the label, then a game's settings
            key = next((k for k in ("suite", "version", "suite_sha256", "tier", "label", "econarena", "rules_sha256",
                                    "played_by")
                        if before.get(k) != job.settings.get(k)), None)
            what = (f"{key}: {before.get(key)!r} != {job.settings.get(key)!r}" if key is not None else
                    first_difference(before.get("experiments"), job.settings["experiments"], "experiments"))
            return (f"{d} holds another bench ({what}); use another --out, or delete {d} to start over")
    else:  # a new directory, the games' run directories merged from shards, or a bench whose settings file was
        # deleted as the message above advises (its games are checked one by one below)
        games = {e.name for e in job.exps}
        ours = {".lock", SUITE_COPY, LOG, "bench.json", "scorecard.html"}
        if any(p.name not in ours and not (p.is_dir() and p.name in games) for p in d.iterdir()):
            return f"{d} is not empty and holds no bench ({SETTINGS} missing): use another --out"
    from ..formats.rundir import write_atomic

    for exp in job.exps:  # before the settings are written: a refused directory keeps the bench it holds
        run_dir = d / exp.name
        if (run_dir / "config.toml").exists() and not same_experiment(run_dir, exp):
            return (f"{run_dir} holds a different experiment ({config_difference(run_dir, exp)}); delete it or use "
                    "another --out")
    write_atomic(held, json.dumps(job.settings, indent=2, ensure_ascii=False) + "\n")
    write_atomic(d / SUITE_COPY, suite.text)
    return None


def _play(jobs: list[_Job], args: argparse.Namespace, prices: dict[str, Any]) -> int:
    """Every job's unfinished experiments, side by side; an exit code."""
    from ..agents.llm import RuntimeOptions
    from ..analysis.metrics import write_summary
    from ..formats.rundir import RunDirectoryBusy, complete_runs, read_jsonl, runnable_prefix
    from ..hosts.bench import play
    from ..hosts.host import HostOptions

    todo: list[tuple[Any, Path, bool, _Job]] = []
    for job in jobs:
        for exp in job.exps:
            d = job.out / exp.name
            resume = (d / "manifest.json").exists() or (d / "runs.jsonl").exists()
            if resume:
                done = runnable_prefix(complete_runs(read_jsonl(d / "runs.jsonl", kind="runs")))
                if len(done) >= exp.total_runs():
                    continue
            todo.append((exp, d, resume, job))
    if not todo:
        return EXIT_OK
    played = sum(1 for t in todo if t[3].kind == "model")
    if played:
        print(f"bench: playing {played} game(s) of {len({id(t[3]) for t in todo if t[3].kind == 'model'})} "
              f"model(s), tier {args.tier} -> {args.out}", file=sys.stderr)

    from ..hosts.bench import session_cost_bound

    def options_for(job: _Job, exp: Any) -> Any:
        def make(resume: bool) -> HostOptions:
            return HostOptions(concurrency=args.concurrency, resume=resume, quiet=args.quiet or job.kind != "model",
                               runtime=RuntimeOptions(cache=not args.no_cache, cache_path=args.cache_dir),
                               prices=prices, engine=args.engine, shard=args.shard, budget=job.budget,
                               session_cost=session_cost_bound(exp, job.spec, prices) if job.budget else 0.0)
        return make

    items = [(exp, d, options_for(job, exp)(resume)) for exp, d, resume, job in todo]
    try:
        results = run_until_signalled(play(items))
    except KeyboardInterrupt as exc:
        by = f" by {exc.signame}" if isinstance(exc, Interrupted) else ""
        err(f"interrupted{by}; finished runs are kept: run the same bench command again to continue")
        return EXIT_INTERRUPTED
    for (exp, d, _, job), r in zip(todo, results):
        if isinstance(r, RunDirectoryBusy) and job.kind == "baseline":
            # another bench into this --out plays the same baseline right now: the model's result does not
            # wait for it (it ended in exit 2 without bench.json, its games played); its row comes from there
            if not job.busy:
                print(f"bench: {job.out} is being played by another process right now: its row is left to it "
                      "(or to the next bench into this --out)", file=sys.stderr)
            job.busy = True
            continue
        if isinstance(r, BaseException):  # the job ended in an exception: its exit code, or it is raised
            return failed_job(r, d, "bench")
        for why in r.stopped:  # a lost Ray node, not an API (it was reported as 'stopped on API errors')
            err(f"{job.spec.label}, {exp.name}: {why}")
            job.engine_stopped = True
        write_summary(d)
    return EXIT_OK


def _finish(jobs: list[_Job], suite: Any, args: argparse.Namespace, prices: dict[str, Any], *,
            stopped: str | None = None, quiet: bool = False) -> int:
    """Score every job: bench.json and the scorecard; print the answer; the exit code."""
    from ..analysis.benchmark import (
        BenchError,
        bench_result,
        format_rows,
        leaderboard,
        leaderboard_cells,
        read_bench,
        scorecard_html,
        write_bench,
    )
    from ..formats.rundir import write_atomic
    from ..hosts.bench import shown_model

    results: dict[int, dict[str, Any]] = {}
    worst = EXIT_OK
    for job in jobs:
        if job.busy:  # its player writes its bench.json; an earlier one is shown meanwhile
            with contextlib.suppress(BenchError):
                results[id(job)] = read_bench(job.out / "bench.json")
            continue
        wall = _log_invocation(job, stopped)
        model = {"label": job.spec.label, "kind": job.kind, "agent": job.spec.entry.get("agent"),
                 "model": job.spec.entry.get("model"), "llm": job.spec.is_llm, "source": shown_model(job.spec.source),
                 "settings": _public(job.spec.entry), "played_by": job.settings.get("played_by"),
                 # the reasoning settings: part of what makes a row (one model at two efforts is two rows)
                 "reasoning": {k: job.spec.entry[k] for k in ("reasoning_effort", "reasoning_tokens")
                               if job.spec.entry.get(k) is not None} or None}
        try:
            result = bench_result(suite, args.tier, model, {e.name: job.out / e.name for e in job.exps},
                                  settings_digest=job.settings["digest"], prices=prices, wall_s=wall,
                                  comparability=job.settings.get("comparability"),
                                  spent_usd=job.budget.spent if job.budget is not None else None)
        except BenchError as exc:  # a score rule the runs cannot feed (checked before playing; kept as a guard)
            err(f"{job.out}: cannot be scored: {exc}; the runs are kept")
            return EXIT_CONFIG
        if not result["complete"]:  # why runs are missing; a directory whose runs are all there is complete
            budget = job.budget is not None and job.budget.reached  # (a lower --max-cost on a finished bench)
            result["stopped"] = stopped or ("budget" if budget else "engine" if job.engine_stopped else "errors")
        write_bench(job.out, result)
        results[id(job)] = result
        if not result["complete"] and job.kind == "model":
            worst = EXIT_INCOMPLETE
    baselines = [results[id(j)] for j in jobs if j.kind == "baseline" and id(j) in results]
    for job in jobs:
        if job.kind != "model":
            continue
        result = results[id(job)]
        write_atomic(job.out / "scorecard.html", scorecard_html(suite, result, baselines))
        if not quiet:
            _print_result(result, job.out)
    models = [(j.out / "bench.json", results[id(j)]) for j in jobs if id(j) in results]
    if not quiet and len(models) > 1:
        head, body = leaderboard_cells(leaderboard(models))
        print()
        print(format_rows(head, body))
    if worst == EXIT_INCOMPLETE and not quiet:
        why = {"budget": "the --max-cost budget was reached", "errors": "some runs stopped on API errors",
               "engine": "the Ray cluster could not play every session (said above)"}
        for job in jobs:
            r = results[id(job)]
            if job.kind == "model" and not r["complete"]:
                b = job.budget
                if r["stopped"] == "budget" and b is not None:  # how far it got, and why it stopped there
                    why["budget"] = (f"the --max-cost budget: ${b.spent:.4f} spent of ${b.limit:g}" + (
                        f", and the next call could cost up to ${b.last_worst:.4f}" if b.last_worst else ""))
                err(f"{job.spec.label}: incomplete ({why.get(r['stopped'], r['stopped'])}); run the same command "
                    "again to continue" + (" with a higher --max-cost" if r["stopped"] == "budget" else ""))
    return worst


def _public(entry: dict[str, Any]) -> dict[str, Any]:
    from ..agents.calls import public_urls
    from ..agents.keys import key_value, mask_keys

    keys = [key_value(str(entry.get("agent")), entry.get("api_key_env"))]
    return {k: public_urls(v, keys) if k == "base_url" else mask_keys(v, entry.get("api_key_env"))
            if isinstance(v, str) else v for k, v in entry.items()}


def _log_invocation(job: _Job, stopped: str | None) -> float:
    """Append this invocation to the job's log; the wall time of every invocation so far."""
    from ..formats.rundir import iter_jsonl, now_iso

    path = job.out / LOG
    now = time.time()
    line = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(job.started)), "ended": now_iso(),
            "wall_s": round(now - job.started, 3), "stopped": stopped,
            "spent_usd": job.budget.spent if job.budget is not None else None}
    with path.open("a+b") as f:
        f.seek(0, 2)
        torn = f.tell() > 0 and (f.seek(-1, 2), f.read(1))[1] != b"\n"  # a line cut by a kill: end it first
        f.write((("\n" if torn else "") + json.dumps(line) + "\n").encode("utf-8"))

    def wall(r: Any) -> float:  # a hand-edited line counts nothing (it stopped the bench with a traceback)
        x = r.get("wall_s") if isinstance(r, dict) else None
        return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < math.inf else 0.0

    return math.fsum(wall(r) for r in iter_jsonl(path))


def _print_result(result: dict[str, Any], out: Path) -> None:
    from ..analysis.benchmark import format_rows

    o = result["overall"]

    def cell(s: Any, lo: Any = None, hi: Any = None) -> str:
        if s is None:
            return "-"
        return f"{s:.1f}" + (f" [{lo:.1f}, {hi:.1f}]" if lo is not None and hi is not None else "")

    best = (result.get("attainable") or {}).get("exceptions") or {}

    def attainable(gid: str) -> str:
        if gid not in best:
            return "100"
        x = best[gid]["attainable"]
        return "unknown*" if x is None else f"{x:g}*"

    rows = [[g["id"], cell(g["score"], g["low"], g["high"]), attainable(g["id"]), f"{g['sessions']}/{g['planned']}",
             "-" if g["rule_break_pct"] is None else f"{g['rule_break_pct']:.0f}"] for g in result["games"]]
    print(format_rows(["game", "score [95%]", "best known", "sessions", "rule breaks %"], rows))
    print()
    rows = [[s["title"], cell(s["score"], s["low"], s["high"]), f"{s['weight']:g}"]
            for s in result["subscores"].values()]
    rows.append(["overall", cell(o["score"], o["low"], o["high"]), ""])
    print(format_rows(["family", "subscore [95%]", "weight"], rows))
    cost = result.get("cost_usd")
    extra = (f"; cost ${cost:.4f}" + (f", {result['score_per_usd']:.4g} points per dollar"
                                       if result.get("score_per_usd") else "")) if cost is not None else ""
    state = "complete" if result["complete"] else f"INCOMPLETE ({result['stopped']}), not ranked"
    if result.get("attainable"):
        print(f"\n{result['attainable']['meaning']}")
    if o.get("method"):
        print(f"intervals: {o['method']}")
    cached = result.get("cached") or 0
    if cached:
        print(f"from the response cache: {cached:,} of {result.get('decisions', 0):,} replies (answered before, not "
              "by this invocation; --no-cache asks the model again)")
    print(f"\n{result['model']['label']}: {cell(o['score'], o['low'], o['high'])} overall, suite "
          f"{result['suite']['version']} tier {result['tier']}, {state}; {result['calls']:,} calls, "
          f"{result['tokens_in']:,}/{result['tokens_out']:,} tokens{extra}; {result['wall_s']:.0f} s")
    print(f"written: {out / 'bench.json'}, {out / 'scorecard.html'}")


def _dry_run(suite: Any, specs: list[Any], prices: dict[str, Any], args: argparse.Namespace, exps_of: Any) -> int:
    from ..analysis.benchmark import format_rows
    from ..hosts.bench import plan

    for spec in specs:
        print(f"{spec.label} ({spec.source}), suite {suite.version}:")
        rows = []
        for p in plan(suite, spec, prices, functools.partial(exps_of, spec)):
            mark = " <" if p.tier == args.tier else ""
            cost = "no price (--prices)" if p.cost is None and spec.is_llm else (
                "0 (no model calls)" if not spec.is_llm else f"${p.cost:,.2f} (${p.cost_no_reask:,.2f})")
            expected = "-" if p.cost_expected is None else f"${p.cost_expected:,.2f}"
            rows.append([p.tier + mark, str(p.games), str(p.sessions), f"{p.calls:,} ({p.calls_no_reask:,})",
                         f"{p.tokens_in:,} / {p.tokens_out:,}", f"{p.tokens_in_expected:,} / {p.tokens_out_expected:,}",
                         expected, cost])
            if args.max_cost is not None and p.tier == args.tier and p.cost is not None and p.cost > args.max_cost:
                rows[-1][-1] += f" > --max-cost {args.max_cost:g}: the run would stop there"
        print(format_rows(["tier", "games", "sessions", "LLM calls at most (no re-asks)", "tokens in / out at most",
                           "tokens expected", "cost expected", "cost at most (no re-asks)"], rows))
        print("(bounds: every game at its round limit, every decision re-asked as often as allowed; input tokens "
              "from the rendered prompts at 3 characters per token, conversations growing by a full reply per "
              "call. Expected: no re-asks, 4 characters per token, replies of about 60 tokens, a round's report "
              "of 40 between calls; games that end early cost less. --max-cost is a hard cap either way: each "
              "call's worst case is reserved before it is sent. Nothing was run.)")
    return EXIT_OK


def validate_suite(path: str) -> tuple[str | None, str]:
    """``econarena validate`` of a bench suite file: its format, and every game built for every tier with a
    baseline and with an LLM in the model's seat (the experiments' own checks; the LLM also gets the suite's
    [llm] and each game's protocol, which a baseline never reads). (problem or None, the ok line)."""
    from ..formats.benchsuite import TIERS, SuiteError, load_suite
    from ..hosts.bench import build, model_specs
    from ..hosts.config import ConfigError

    try:
        suite = load_suite(path)
        for tier in TIERS:
            for model in ("random", "openai:any-model"):  # no key or server needed to build
                build(suite, tier, model_specs(model)[0])
    except (SuiteError, ConfigError) as exc:
        return str(exc), ""
    return None, (f"{path}: ok (bench suite {suite.version}: {len(suite.games)} games in {len(suite.families)} "
                  f"families, tiers {', '.join(TIERS)})")


# ------------------------------------------------------------------------------------------- leaderboard

def cmd_leaderboard(args: argparse.Namespace) -> int:
    from ..analysis.benchmark import (
        BenchError,
        comparable_problem,
        find_results,
        format_rows,
        generation_note,
        leaderboard,
        leaderboard_cells,
        leaderboard_csv,
        leaderboard_html,
        leaderboard_json,
        one_row_per_model,
        read_bench,
    )
    from ..formats.rundir import write_atomic
    from .terminal import show

    try:
        results: list[tuple[Path, Mapping[str, Any]]] = [(p, read_bench(p)) for p in find_results(args.dirs)]
    except BenchError as exc:
        err(str(exc))
        return EXIT_CONFIG
    if args.tier:
        results = [(p, r) for p, r in results if r["tier"] == args.tier]
        if not results:
            err(f"no bench result of tier {args.tier} in {', '.join(args.dirs)}")
            return EXIT_CONFIG
    if not args.baselines:
        results = [(p, r) for p, r in results if r["model"].get("kind") != "baseline"] or results
    if (problem := comparable_problem(results)) is not None:
        err(problem)
        return EXIT_CONFIG
    results, problem = one_row_per_model(results)
    if problem is not None:
        err(problem)
        return EXIT_CONFIG
    rows = leaderboard(results)
    first = results[0][1]
    title = f"{first['suite'].get('title', first['suite'].get('version'))}, tier {first['tier']}"
    head, body = leaderboard_cells(rows)
    show(head, body, format_rows(head, body), left=2, title=title)
    if (note := generation_note(rows)) is not None:
        print(note)
    if any(r.get("tied") for r in rows):
        print("rank n=: tied (the rows' intervals overlap); a row ranks below another only when its interval lies "
              "wholly below it")
    written = []
    for path, text in ((args.csv, leaderboard_csv(rows)), (args.json, leaderboard_json(rows)),
                       (args.html, leaderboard_html(rows, title))):
        if not path:
            continue
        try:
            write_atomic(Path(path), text)
        except OSError as exc:  # named as given (exc.filename is the .tmp written first)
            err(f"cannot write {path}: {exc.strerror or exc}")
            return EXIT_CONFIG
        written.append(path)
    if written:
        print(f"written: {', '.join(written)}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    from ..formats.benchsuite import TIERS

    b = sub.add_parser("bench", help="one model, one comparable score: the bench suite played and scored",
                       description="Play the bench suite (configs/bench/v2.toml: GAMA-Bench's eight games, EconArena's "
                                   "three against rational players, GLEE, NegotiationArena and the fruit trade "
                                   "against fixed opponents) with MODEL and score it 0-100: per game, per family "
                                   "and overall, with 95% intervals. Writes OUT/<model>/bench.json and "
                                   "scorecard.html; running it again continues where it stopped.")
    b.add_argument("models", nargs="+", metavar="MODEL",
                   help="PROVIDER[:MODEL] (openai:gpt-4o-mini, anthropic:claude-..., hf for the bundled model), "
                        "MODEL@URL (an OpenAI-compatible server), rational or random (baselines), or a TOML file "
                        "with a player table or a models file of aliases")
    b.add_argument("--tier", choices=TIERS, default="quick",
                   help="quick (minutes, a smoke test), standard (the measurement; GAMA-Bench as published) or "
                        "full (more sessions); default quick")
    b.add_argument("--out", default="runs/bench", help="where results go: OUT/<model>/ (default runs/bench)")
    b.add_argument("--label", help="the model's name in the results (default: provider/model)")
    b.add_argument("--prices", metavar="FILE.toml", help="USD per million tokens by model or label: cost and score "
                   "per dollar, the --dry-run cost bound, --max-cost")
    b.add_argument("--max-cost", type=_positive_usd, metavar="USD",
                   help="stop starting calls once this much has been spent on the model (all invocations of this "
                        "bench directory together); the result is marked incomplete, never ranked; run again with "
                        "a higher limit to go on")
    b.add_argument("--dry-run", action="store_true",
                   help="print each tier's LLM calls and cost bound; run nothing")
    b.add_argument("--suite", metavar="FILE.toml",
                   help="another suite file (default: the bundled configs/bench/v2.toml)")
    b.add_argument("--no-baselines", action="store_true", help="do not play the rational and random baselines' rows")
    b.add_argument("--concurrency", type=_concurrency, default=16,
                   help="decisions in flight per game (default 16)")
    b.add_argument("--quiet", action="store_true", help="no progress bars")
    b.add_argument("--no-cache", action="store_true", help="do not read or write the LLM response cache")
    b.add_argument("--cache-dir", help="where the response cache lives")
    b.add_argument("--shard", type=_shard, metavar="K/N",
                   help="play only shard K of N of every game (OUT/<model>-shard-K-of-N/); merge each game's "
                        "shards with `econarena merge` into OUT/<model>/<game>, then run again without --shard")
    add_ray_arguments(b)
    b.set_defaults(func=cmd_bench, stop_signals=True)

    lb = sub.add_parser("leaderboard", help="many bench results in one table (terminal, CSV, JSON, HTML)",
                        description="Collect bench.json files (each DIR is one, or a folder searched for them) into "
                                    "one table, best overall first. Results of different suite versions, edited "
                                    "suite files or tiers are refused (exit 2); incomplete results are listed "
                                    "after the ranked ones, unranked.")
    lb.add_argument("dirs", nargs="+", metavar="DIR", help="bench result folders (searched for bench.json)")
    lb.add_argument("--tier", choices=TIERS, help="only results of this tier")
    lb.add_argument("--baselines", action="store_true", help="include the baselines' rows (_baselines/)")
    lb.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    lb.add_argument("--json", metavar="FILE", help="also write it as JSON")
    lb.add_argument("--html", metavar="FILE", help="also write it as an HTML page")
    lb.set_defaults(func=cmd_leaderboard, stop_signals=ANALYSIS)
