"""The cost of one LLM call in this process: where the CPU goes between the Host and the wire.

Against an OpenAI-compatible fake server that answers at once (``tests/fakeservers.py --latency 0``, in
its own process, so its CPU is not ours), with 64 calls in flight:

1. the Host: a 5-player beauty contest of ``agent = "openai"`` players, 2,000 decisions, no response
   cache: decisions per second of one process (prompt rendering, judging, logging and the SDK included);
2. the same run under cProfile, its CPU split into our code, the OpenAI SDK (with httpx2 and pydantic),
   its aiohttp transport, the event loop, and the rest (builtins are charged to whoever called them);
3. the layers below the Host on their own: our provider (``LLMAgent.decide``), the SDK's
   ``chat.completions.create``, its generic ``client.post`` with a typed reply, ``client.post`` with the body
   and reply as bytes (what our provider sends to api.openai.com; a ``base_url`` server gets the lean path,
   measured by items 1 and 4), and plain aiohttp posting the same body.

Each rate is the median of ``--repeat`` runs after a warm-up.

4. CPU per call at the margin (``--margin``, what the performance goal is stated in): a fresh process per
   measurement plays a warm-up, then N1 and N2 calls, and the CPU of the extra N2 - N1 calls divided by
   their number is the figure: imports, first connections and a run's fixed costs (directories, summary)
   fall out. Measured through ``LLMAgent.decide`` (the provider layer, 64 in flight) and through the Host
   (a 5-player beauty contest). ``--against DIR`` (DIR holds an ``econarena`` folder, e.g. made with
   ``git archive 7886629``) measures that copy of the package the same way, alternating process by process
   with this one, so both see the same load on a shared machine; the spread over ``--repeat`` is printed.
   ``--lm-eval PYTHON`` adds lm-evaluation-harness's own aiohttp loop (bench/lmeval_loop.py, run by an
   interpreter that has lm-eval, e.g. a throwaway venv) on the same server, measured the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_concurrency import PLAYERS, start_server, timed_run, via_agent  # noqa: E402
from figures import load_average, median, show  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
INFLIGHT = 64
BODY_MESSAGES = [{"role": "system", "content": "You are a player in an economic experiment."},
                 {"role": "user", "content": "Pick a number between 0 and 100. " * 30}]


def experiment(port: int, decisions: int) -> dict[str, Any]:
    return {"experiment": {"name": "bench-llm-cost", "game": "beauty_contest", "sessions": decisions // PLAYERS,
                           "seed": 1},
            "players": [{"agent": "openai", "model": "fake-model", "base_url": f"http://127.0.0.1:{port}/v1",
                         "api_key_env": "FAKE_KEY", "max_connections": INFLIGHT, "timeout_s": 30,
                         "count": PLAYERS}]}


def host_once(port: int, decisions: int, tmp: Path, profiler: cProfile.Profile | None = None,
              cache: bool = False) -> tuple[float, float]:
    """(decisions/s, CPU seconds of this process per decision) of one Host run."""
    import time

    from econarena.hosts.config import parse_experiment

    exp = parse_experiment(experiment(port, decisions), "bench_llm_cost.toml")
    out = tmp / f"host-{os.urandom(4).hex()}"
    if profiler is not None:
        profiler.enable()
    cpu = time.process_time()
    try:
        if cache:  # the response cache on, every call a miss (a fresh file): what a first run pays
            os.environ["ECONARENA_CACHE_DIR"] = str(tmp / f"cache-{os.urandom(4).hex()}")
        result, elapsed = timed_run(exp, out, INFLIGHT, cache=cache)
    finally:
        if profiler is not None:
            profiler.disable()
    return result.decisions / elapsed, (time.process_time() - cpu) / result.decisions


SDK_PACKAGES = ("openai", "httpx", "httpx2", "httpcore", "pydantic", "pydantic_core", "anyio", "sniffio",
                "distro", "typing_extensions", "annotated_types", "h11")
TRANSPORT_PACKAGES = ("aiohttp", "yarl", "multidict", "aiohappyeyeballs", "frozenlist", "propcache",
                      "aiosignal", "attr")


def _ours() -> str:
    """Where the econarena package being measured lives (this tree, or another one put on PYTHONPATH)."""
    import econarena

    return str(Path(econarena.__file__).resolve().parent).replace("\\", "/")


OURS = _ours()


def category(filename: str) -> str:
    """Whose code a profiled function is: ours, the SDK's, its transport's (aiohttp, or our own HTTP client on
    the lean path, kept apart so "ours" means the same as before it), the event loop's, or other."""
    path = filename.replace("\\", "/")
    if "site-packages/" in path:
        top = path.split("site-packages/", 1)[1].split("/", 1)[0]
        if top in SDK_PACKAGES or top.startswith("openai"):
            return "OpenAI SDK (openai, httpx2, pydantic)"
        if top in TRANSPORT_PACKAGES:
            return "aiohttp transport"
        return "other packages"
    if path.startswith(OURS + "/agents/providers/http11.py"):  # the lean path's client: the transport's share
        return "HTTP client (ours, agents/providers/http11.py)"
    if path.startswith(OURS + "/") and "/bench/" not in path:
        return "econarena (ours)"
    if "/asyncio/" in path or path.endswith(("selectors.py", "socket.py", "events.py")):
        return "event loop (asyncio)"
    return "stdlib and other"


def split(stats: pstats.Stats) -> dict[str, float]:
    """Own CPU time per category. Builtins and the standard library (json, typing, copy, ...) are charged to
    whoever called them, in proportion to the time each caller spent in them: a ``json.dumps`` called by
    the SDK is the SDK's cost, one called by our logging is ours."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    memo: dict[Any, dict[str, float]] = {}

    def owner(func: Any, seen: frozenset[Any]) -> dict[str, float]:
        """The categories a function's own time belongs to, as weights summing to 1."""
        filename = func[0]
        cat = category(filename) if filename != "~" else "stdlib and other"
        if cat != "stdlib and other" or func in seen:
            return {cat: 1.0}
        if func in memo:
            return memo[func]
        callers = raw.get(func, (0, 0, 0, 0, {}))[4]
        total = sum(c[2] for c in callers.values())
        if not callers or total <= 0:
            return {cat: 1.0}
        mix: dict[str, float] = defaultdict(float)
        for caller, c in callers.items():
            for k, w in owner(caller, seen | {func}).items():
                mix[k] += w * c[2] / total
        memo[func] = dict(mix)
        return memo[func]

    out: dict[str, float] = defaultdict(float)
    for func, (_cc, _nc, tt, _ct, _callers) in raw.items():
        for k, w in owner(func, frozenset()).items():
            out[k] += tt * w
    return dict(out)


async def sdk_rate(port: int, n: int, mode: str) -> float:
    """Requests/s of the OpenAI SDK alone with its aiohttp transport, INFLIGHT at a time."""
    import time

    import httpx2
    import openai
    import orjson
    from openai.types.chat import ChatCompletion

    client = openai.AsyncOpenAI(api_key="sk-bench", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0,
                                http_client=openai.DefaultAioHttpClient(
                                    limits=httpx2.Limits(max_connections=INFLIGHT,
                                                         max_keepalive_connections=INFLIGHT)))
    sem = asyncio.Semaphore(INFLIGHT)
    body = {"model": "fake-model", "messages": BODY_MESSAGES, "max_tokens": 50}

    async def one() -> None:
        async with sem:
            if mode == "create":
                await client.chat.completions.create(model="fake-model", messages=BODY_MESSAGES,  # type: ignore[arg-type]
                                                     max_tokens=50)
            elif mode == "post":
                await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
            else:  # what our provider sends now: the body as bytes, the reply as bytes
                orjson.loads(await client.post("/chat/completions", content=orjson.dumps(body), cast_to=bytes))

    await asyncio.gather(*(one() for _ in range(INFLIGHT)))  # warm-up: connections
    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    elapsed = time.perf_counter() - start
    await client.close()
    return n / elapsed


async def aiohttp_rate(port: int, n: int) -> float:
    """Requests/s of plain aiohttp posting the same body and reading the JSON reply."""
    import time

    import aiohttp

    sem = asyncio.Semaphore(INFLIGHT)
    body = {"model": "fake-model", "messages": BODY_MESSAGES, "max_tokens": 50}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=INFLIGHT)) as session:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"

        async def one() -> None:
            async with sem, session.post(url, json=body, headers={"Authorization": "Bearer sk-bench"}) as r:
                data = await r.json()
                assert data["choices"][0]["message"]["content"]

        await asyncio.gather(*(one() for _ in range(INFLIGHT)))
        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        return n / (time.perf_counter() - start)


MARGIN_N = (500, 2500)  # calls in the two measured batches: the margin is their difference


def _worker(level: str, port: int, sizes: tuple[int, ...]) -> None:
    """In a fresh process (the package under test first on PYTHONPATH): a warm-up, then one batch per size;
    prints JSON: [cpu seconds, wall seconds] per batch."""
    import json
    import time

    os.environ["FAKE_KEY"] = "sk-bench-not-a-real-key"
    out = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for i, n in enumerate((200, *sizes)):  # the first: warm-up (imports, connections), not reported
            cpu, start = time.process_time(), time.perf_counter()
            if level == "agent":
                done, _ = via_agent(port, INFLIGHT, n)
                if done != n:
                    raise RuntimeError(f"{n - done} of {n} calls failed")
            else:
                host_once(port, n, tmp)
            if i:
                out.append([time.process_time() - cpu, time.perf_counter() - start])
    print("MARGIN " + json.dumps(out), flush=True)


def _margin_once(level: str, port: int, tree: str | None, python: str | None = None) -> tuple[float, float]:
    """(CPU us per call at the margin, calls/s of the larger batch) of one fresh process; ``python``: run
    lm-eval's loop with that interpreter instead of ours."""
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("PYTHONPATH", None)
    if tree:
        env["PYTHONPATH"] = tree
    cmd = ([python, str(Path(__file__).with_name("lmeval_loop.py")), str(port)] if python else
           [sys.executable, __file__, "--worker", level, "--port", str(port)])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("MARGIN ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"margin worker failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    (c1, _w1), (c2, w2) = json.loads(line[7:])
    n1, n2 = MARGIN_N
    return 1e6 * (c2 - c1) / (n2 - n1), n2 / w2


def margin_table(port: int, repeat: int, against: str | None, lm_eval: str | None = None) -> None:
    """The margin figures of this tree (and of ``against``, and lm-eval's loop), interleaved, with their spread."""
    trees: list[str | None] = [None] + ([str(Path(against).resolve())] if against else [])
    if lm_eval:
        runs = [_margin_once("agent", port, None, lm_eval) for _ in range(repeat)]
        us = [r[0] for r in runs]
        print(f"lm-evaluation-harness's loop (LocalChatCompletion, aiohttp, 64 at once): {median(us):.0f} us CPU "
              f"per call at the margin (spread {min(us):.0f}-{max(us):.0f}; {median([r[1] for r in runs]):,.0f} "
              "calls/s wall)", flush=True)
    for level, what in (("agent", "LLMAgent.decide, 64 in flight"),
                        ("host", "the Host, 5-player beauty contest, 64 in flight")):
        cpu: dict[str | None, list[float]] = {t: [] for t in trees}
        rate: dict[str | None, list[float]] = {t: [] for t in trees}
        for _ in range(repeat):
            for t in trees:
                us, r = _margin_once(level, port, t)
                cpu[t].append(us)
                rate[t].append(r)
        mine = median(cpu[None])
        show(f"llm_margin_{level}_us", mine, "us",
             f"CPU per LLM call at the margin, {what} (spread {min(cpu[None]):.0f}-{max(cpu[None]):.0f}; "
             f"{median(rate[None]):,.0f} calls/s wall)", higher_is_better=False)
        for t in trees[1:]:
            theirs = median(cpu[t])
            print(f"   against {t}: {theirs:.0f} us (spread {min(cpu[t]):.0f}-{max(cpu[t]):.0f}; "
                  f"{median(rate[t]):,.0f} calls/s wall): this tree x{theirs / mine:.2f} less CPU per call "
                  f"(per-repeat ratios {', '.join(f'{b / a:.2f}' for a, b in zip(cpu[None], cpu[t]))})",
                  flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--decisions", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--margin", action="store_true", help="only the CPU per call at the margin (item 4)")
    ap.add_argument("--against", metavar="DIR", help="also measure the package in DIR/econarena (item 4)")
    ap.add_argument("--lm-eval", metavar="PYTHON", help="also lm-eval's loop, run by this interpreter (item 4)")
    ap.add_argument("--worker", choices=("agent", "host"), help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args.worker, args.port, MARGIN_N)
        return 0
    os.environ["FAKE_KEY"] = "sk-bench-not-a-real-key"
    # item 4 first (this tree alone unless --against/--lm-eval); --margin stops after it
    print(f"(instant fake server in its own process; CPU per call at the margin: calls {MARGIN_N[0]} to "
          f"{MARGIN_N[1]} of a fresh process; medians of {args.repeat}; {load_average()})")
    server, port = start_server(0.0)
    try:
        margin_table(port, args.repeat, args.against, args.lm_eval)
    finally:
        server.terminate()
        server.wait(5)
    if args.margin:
        return 0
    print(f"(instant fake server in its own process, {INFLIGHT} in flight, medians of {args.repeat}; "
          f"{load_average()})")
    server, port = start_server(0.0)
    try:
        with tempfile.TemporaryDirectory() as tmpdir:
            tmp = Path(tmpdir)
            host_once(port, 200, tmp)  # warm-up: SDK import, first connections
            runs = [host_once(port, args.decisions, tmp) for _ in range(args.repeat)]
            show("llm_host", median([r for r, _ in runs]), "decisions/s",
                 f"Host, {args.decisions} LLM decisions (5-player beauty contest), no response cache")
            show("llm_host_us", 1e6 * median([c for _, c in runs]), "us", "   CPU of this process per LLM decision",
                 higher_is_better=False)
            cached = [host_once(port, args.decisions, tmp, cache=True) for _ in range(args.repeat)]
            show("llm_host_cache", median([r for r, _ in cached]), "decisions/s",
                 "   the same with the response cache on (every call a miss, as on a first run)")
            prof = cProfile.Profile()
            host_once(port, args.decisions, tmp, prof)
            shares = split(pstats.Stats(prof))
            total = sum(shares.values())
            print("   where it goes (cProfile of one such run; builtins charged to their callers):")
            for cat, t in sorted(shares.items(), key=lambda kv: -kv[1]):
                print(f"     {cat:<40} {100 * t / total:5.1f}%  ({1e6 * t / args.decisions:6.0f} us/decision "
                      "under the profiler)")
            ours = shares.get("econarena (ours)", 0.0) / total
            print(f"   our own code's share of that CPU: {100 * ours:.1f}%")
            show("llm_ours_us", ours * 1e6 * median([c for _, c in runs]), "us",
                 "   our own code's CPU per LLM decision (that share of the CPU per decision)",
                 higher_is_better=False)
            agent = median([(lambda r: r[0] / r[1])(via_agent(port, INFLIGHT, args.decisions))
                            for _ in range(args.repeat)])
            show("llm_agent", agent, "calls/s", "our provider alone (LLMAgent.decide, no Host)")
            for mode, what in (("create", "chat.completions.create"),
                               ("post", "client.post, typed ChatCompletion (our provider before the lean path)"),
                               ("post_bytes", "client.post, body and reply as bytes (our SDK path)")):
                r = median([asyncio.run(sdk_rate(port, args.decisions, mode)) for _ in range(args.repeat)])
                show(f"llm_sdk_{mode}", r, "requests/s", f"the OpenAI SDK alone, {what}")
            r = median([asyncio.run(aiohttp_rate(port, args.decisions)) for _ in range(args.repeat)])
            show("llm_aiohttp", r, "requests/s", "plain aiohttp, the same body")
    finally:
        server.terminate()
        server.wait(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
