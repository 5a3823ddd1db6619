"""Experiments on a real local Ray instance (hosts/ray_engine.py, agents/cluster.py): the same records as the
local engine whatever the workers and concurrency, workers and drivers killed for real, cluster-wide
provider limits, the response cache shared with local runs, local models as replica actors, suite."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from golden_experiments import experiments, golden_path, normalised
from timing import budget

from econarena.agents.llm import RuntimeOptions
from econarena.analysis.metrics import write_summary
from econarena.hosts.config import parse_experiment
from econarena.hosts.host import Host, HostOptions
from econarena.hosts.steer import SteerHost

pytestmark = pytest.mark.usefixtures("ray_cluster")
GOLDEN = experiments()


@pytest.fixture(scope="module")
def engine(ray_cluster: Any) -> Any:
    """Two session workers on the session's Ray instance, shared by this module's tests (a worker process
    takes seconds to start; an experiment on warm workers well under one)."""
    from econarena.hosts.ray_engine import RayEngine

    eng = RayEngine(workers=2, cpus_per_worker=0.25)  # room beside it for the tests' own engines
    yield eng
    eng.close()


def play(doc: dict[str, Any], out: Path, engine: Any = None, concurrency: int = 4, cache: bool = False,
         cache_dir: Path | None = None, resume: bool = False) -> Any:
    exp = parse_experiment(doc, "t.toml")
    options = HostOptions(concurrency=concurrency, quiet=True, resume=resume, engine=engine,
                          runtime=RuntimeOptions(cache=cache, cache_path=str(cache_dir) if cache_dir else None))
    result = asyncio.run((SteerHost if exp.steer is not None else Host)(exp, out, options).run())
    write_summary(out)
    return result


def logs(out: Path, base: str = "") -> dict[str, list[str]]:
    """The run directory's normalised logs (tests/golden_experiments.py), without the engine's name."""
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.pop("engine", None)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return normalised(out, base)


def with_server(doc: dict[str, Any], url: str) -> dict[str, Any]:
    return json.loads(json.dumps(doc).replace("{BASE}", url))


# ---- the same records as the local engine ----

@pytest.mark.parametrize("name,concurrency", [
    ("beauty_contest", 1), ("bc-grid-shuffle", 7), ("bc-rational-history-cot", 3), ("spa-self-reask", 1),
    ("bargaining", 4), ("negotiation-baselines", 2), ("resource_exchange", 5), ("english_auction", 3),
    ("guessing_game", 2), ("persuasion", 4), ("guessing-llm", 1), ("bargaining-llm", 6)])
def test_ray_run_equals_the_golden_local_run(name: str, concurrency: int, engine: Any, server: Any,
                                             tmp_path: Path) -> None:
    """Golden files were written by the local engine (concurrency 4); on two Ray workers at another
    concurrency every record, metric and prompt is the same (LLM players: a deterministic server)."""
    server.reset()
    expected = json.loads(gzip.decompress(golden_path(name).read_bytes()))
    os.environ["GOLDEN_KEY"] = "sk-golden-test"
    result = play(with_server(GOLDEN[name], server.url), tmp_path / name, engine, concurrency)
    assert result.status == "complete"
    got = logs(tmp_path / name, server.url)
    assert sorted(got) == sorted(expected)
    for file, lines in expected.items():
        assert got[file] == lines, f"{name}/{file} differs from the local run"


def steer_doc(url: str) -> dict[str, Any]:
    return {"experiment": {"name": "steer-bargain", "game": "bargaining", "environment": "self",
                           "players_per_game": 2, "sessions": 3, "seed": 5},
            "game": {"money": 100.0, "delta_alice": 0.9, "delta_bob": 0.9},
            "players": [{"agent": "openai", "label": "fake", "model": "fake", "base_url": f"{url}/v1"}],
            "steer": {"seat": 1, "actions": "tones", "samples": 2, "iterations": 20, "every": 5, "report_at": 20}}


def bargainer(protocol: str, body: Any) -> str:
    text = body["messages"][-1]["content"]
    if "- decision" in text:
        return '{"decision": "reject"}' if "be assertive" in text else '{"decision": "accept"}'
    alice_first = text.find("- alice_gain") < text.find("- bob_gain")
    return '{"alice_gain": 60, "bob_gain": 40}' if alice_first else '{"alice_gain": 30, "bob_gain": 70}'


def test_steering_on_ray_equals_local(engine: Any, server: Any, tmp_path: Path) -> None:
    pytest.importorskip("pyspiel", reason="OpenSpiel is not installed (pip install 'econarena[steer]')")
    server.reset()
    server.reply = bargainer
    local = play(steer_doc(server.url), tmp_path / "local")
    remote = play(steer_doc(server.url), tmp_path / "ray", engine)
    assert local.status == remote.status == "complete" and remote.runs_done == 3 * 8
    assert logs(tmp_path / "ray", server.url) == logs(tmp_path / "local", server.url)


# ---- faults: real processes killed ----

def slow_doc(url: str, **extra: Any) -> dict[str, Any]:
    """Sessions of 6 runs x 3 rounds, one LLM seat on a server with 50 ms latency: a session takes about a
    second, so a kill lands mid-session."""
    return {"experiment": {"name": "slow", "game": "guessing_game", "sessions": 6, "runs": 6, "seed": 3,
                           "history": "actions", **extra},
            "game": {"rounds": 3},
            "players": [{"agent": "openai", "label": "gpt", "model": "fake", "base_url": f"{url}/v1",
                         "max_tokens": 20}, {"agent": "rational", "count": 2}]}


def guesser(protocol: str, body: Any) -> str:
    """Deterministic, and different for every prompt (so a replayed run with another history would show)."""
    return json.dumps({"answer": len(json.dumps(body["messages"])) % 90})


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def test_a_killed_worker_loses_nothing_and_duplicates_nothing(engine: Any, server: Any, tmp_path: Path) -> None:
    import ray

    server.reset()
    server.reply = guesser
    server.latency = 0.05
    reference = play(slow_doc(server.url), tmp_path / "ref")
    calls_alone = server.count()
    assert reference.status == "complete"
    server.reset()
    server.reply = guesser
    server.latency = 0.05
    out = tmp_path / "ray"
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(play(slow_doc(server.url), out, engine, concurrency=3)))
    thread.start()
    deadline = time.monotonic() + 60
    while len(lines_of(out / "runs.jsonl")) < 6 and time.monotonic() < deadline:
        time.sleep(0.02)
    busy = max(range(len(engine.workers)), key=lambda i: engine._in_flight[i])
    assert engine._in_flight[busy] > 0, "no session in flight: the experiment finished before the kill"
    pid = ray.get(engine.workers[busy].pid.remote())
    written_before = len(lines_of(out / "runs.jsonl"))
    os.kill(pid, signal.SIGKILL)
    thread.join(120)
    assert done and done[0].status == "complete", done
    assert written_before < 36, "the experiment finished before the kill"
    assert ray.get(engine.workers[busy].pid.remote()) != pid, "Ray restarted the worker in a new process"
    runs = lines_of(out / "runs.jsonl")
    keys = [(r["lineup"], r["session"], r["run"]) for r in runs]
    assert len(keys) == len(set(keys)) == 36, "a run lost or written twice"
    assert logs(out, server.url) == logs(tmp_path / "ref", server.url)
    # the killed sessions went on after their last shipped run: at most the runs in play were asked again
    assert server.count() - calls_alone <= 3 * 3, (server.count(), calls_alone)


def test_a_killed_driver_resumes_exactly(engine: Any, server: Any, tmp_path: Path, arena: Any) -> None:
    """`econarena run --ray ADDRESS` killed with SIGKILL, then `--resume`: the same records as an
    uninterrupted run, and the killed driver's actors are gone with it."""
    import ray

    server.reset()
    server.reply = guesser
    server.latency = 0.03
    toml = tmp_path / "slow.toml"
    toml.write_text(arena.to_toml(slow_doc(server.url, sessions=8)))
    ref = tmp_path / "ref"
    play(slow_doc(server.url, sessions=8), ref)
    out = tmp_path / "killed"
    address = ray.get_runtime_context().gcs_address
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen([arena.ECONARENA, "run", str(toml), "--out", str(out), "--quiet", "--no-cache",
                             "--ray", address, "--ray-workers", "1"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while len(lines_of(out / "runs.jsonl")) < 8 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert proc.poll() is None, f"finished before the kill: {proc.communicate()}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    written = len(lines_of(out / "runs.jsonl"))
    assert 8 <= written < 48
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"
    pid_tag = f"-{proc.pid}-"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # Ray ends the actors of a dead owner
        left = [a for a in ray.util.list_named_actors(all_namespaces=True) if pid_tag in a["name"]]
        if not left:
            break
        time.sleep(0.5)
    assert not left, left
    again = arena.cli("run", str(toml), "--out", str(out), "--quiet", "--no-cache", "--resume", timeout=120)
    assert again.returncode == 0, again.stderr
    runs = lines_of(out / "runs.jsonl")
    assert len(runs) == 48 == len({(r["session"], r["run"]) for r in runs})
    got, want = logs(out, server.url), logs(ref, server.url)
    for file in ("runs.jsonl", "decisions.jsonl", "summary.json", "config.toml"):
        assert got[file] == want[file], file


# ---- LLM players on a cluster: limits and cache for the whole cluster ----

def test_four_workers_never_pass_max_connections(server: Any, tmp_path: Path) -> None:
    """4 workers x concurrency 8 against max_connections = 8: the server never has more than 8 requests
    in flight (and does reach 8: the limit is used, not serialised). On the same 4 workers, a golden
    experiment at concurrency 1 still equals the local run."""
    from econarena.hosts.ray_engine import RayEngine

    server.reset()
    server.latency = 0.05
    doc = {"experiment": {"name": "limits", "game": "beauty_contest", "sessions": 24, "runs": 1, "seed": 1},
           "players": [{"agent": "openai", "model": "fake", "base_url": f"{server.url}/v1", "max_connections": 8,
                        "count": 5}]}
    eng = RayEngine(workers=4, cpus_per_worker=0.25)
    try:
        result = play(doc, tmp_path / "limits", eng, concurrency=8)
        assert result.status == "complete" and result.decisions == 120
        assert server.count() == 120
        assert server.max_in_flight == 8, server.max_in_flight
        stats = eng.services.stats.remote()
        import ray

        (gate,) = ray.get(stats).values()
        assert gate["peak"] == 8 and gate["granted"] == 120 and gate["held"] == 0
        assert len(set(ray.get([w.pid.remote() for w in eng.workers]))) == 4
        server.reset()
        name = "bc-grid-shuffle"
        expected = json.loads(gzip.decompress(golden_path(name).read_bytes()))
        play(GOLDEN[name], tmp_path / name, eng, concurrency=1)
        assert logs(tmp_path / name) == expected
    finally:
        eng.close()


def test_retry_after_pauses_every_worker(engine: Any, server: Any, tmp_path: Path) -> None:
    """A 429 with Retry-After: 1 seen by one worker holds back the requests of the other worker too."""
    from fakeservers import status

    server.reset()
    server.script(status(429, headers={"Retry-After": "1"}))
    doc = {"experiment": {"name": "pause", "game": "beauty_contest", "sessions": 8, "runs": 1, "seed": 1},
           "players": [{"agent": "openai", "model": "fake", "base_url": f"{server.url}/v1", "max_connections": 1,
                        "count": 2}]}
    result = play(doc, tmp_path / "pause", engine, concurrency=4)
    assert result.status == "complete"
    times = sorted(s.t for s in server.seen)
    assert len(times) == 17
    assert times[1] - times[0] >= 0.95, "the second request came before the pause ended"


def test_the_cluster_shares_the_local_response_cache(engine: Any, server: Any, tmp_path: Path) -> None:
    """Replies cached by a run on Ray are found by a local run of the same experiment, and the reverse:
    one sqlite file on the driver's machine, owned by one actor."""
    server.reset()
    server.reply = guesser
    cache = tmp_path / "cache"
    doc = slow_doc(server.url, sessions=2, runs=2)
    play(doc, tmp_path / "ray", engine, cache=True, cache_dir=cache)
    asked = server.count()
    assert asked == 2 * 2 * 3
    play(doc, tmp_path / "local", cache=True, cache_dir=cache)
    play(doc, tmp_path / "ray2", engine, cache=True, cache_dir=cache)
    assert server.count() == asked, "a cached reply was asked again"
    llm = [d for d in lines_of(tmp_path / "ray2" / "decisions.jsonl") if d["label"] == "gpt"]
    assert len(llm) == asked and all(d["cached"] for d in llm)
    assert logs(tmp_path / "ray2", server.url)["runs.jsonl"] == logs(tmp_path / "ray", server.url)["runs.jsonl"]


# ---- local models as replica actors ----

def test_a_local_model_runs_as_a_replica_actor_and_batches(ray_cluster: Any, tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the hf extra is not installed")
    from hf_fixtures import build_tiny_llama

    from econarena.hosts.ray_engine import RayEngine

    model = build_tiny_llama(tmp_path / "tiny")
    doc = {"experiment": {"name": "hf", "game": "beauty_contest", "sessions": 4, "runs": 1, "seed": 2},
           "players": [{"agent": "hf", "model": str(model), "max_tokens": 8, "count": 4}]}
    eng = RayEngine(workers=1, cpus_per_worker=0.25)
    try:
        result = play(doc, tmp_path / "out", eng, concurrency=16)
        import ray

        (replica,) = next(iter(eng.replicas.values()))
        stats = ray.get(replica.stats.remote())
    finally:
        eng.close()
    assert result.status == "complete" and result.decisions == 16
    assert stats["requests"] == 16 and max(stats["sizes"]) > 1, stats  # one actor batched every session
    decisions = lines_of(tmp_path / "out" / "decisions.jsonl")
    assert len(decisions) == 16 and all(d["error"] is None and d["model"] for d in decisions)


# ---- the command line ----

def test_suite_runs_experiments_side_by_side_on_ray(engine: Any, tmp_path: Path, arena: Any) -> None:
    from econarena.cli import main

    folder = tmp_path / "suite"
    folder.mkdir()
    for name in ("beauty_contest", "spa-self-reask"):
        doc = json.loads(json.dumps(GOLDEN[name]))
        doc["experiment"]["name"] = name
        (folder / f"{name}.toml").write_text(arena.to_toml(doc))
    assert main(["suite", str(folder), "--out", str(tmp_path / "runs"), "--no-report", "--quiet", "--ray",
                 "--ray-workers", "1"]) == 0
    for name in ("beauty_contest", "spa-self-reask"):
        expected = json.loads(gzip.decompress(golden_path(name).read_bytes()))
        got = logs(tmp_path / "runs" / name)
        for file in ("runs.jsonl", "decisions.jsonl", "summary.csv"):
            assert got[file] == expected[file], (name, file)


def test_ray_refuses_human_players(tmp_path: Path, arena: Any) -> None:
    toml = tmp_path / "h.toml"
    toml.write_text(arena.to_toml(arena.experiment_dict("beauty_contest", [{"agent": "human"}, {"agent": "random"}])))
    script = tmp_path / "replies.txt"
    script.write_text('{"answer": 3}\n')
    r = arena.cli("run", str(toml), "--out", str(tmp_path / "o"), "--ray", "--human-input", str(script))
    assert r.returncode == 2 and "not on a Ray cluster" in r.stderr and "Traceback" not in r.stderr


def test_run_ray_starts_and_stops_a_local_instance(tmp_path: Path, arena: Any) -> None:
    """`econarena run FILE --ray`: a Ray instance of its own on this machine (beside the tests' one),
    started and stopped by the command, and the same records as a local run."""
    toml = tmp_path / "bc.toml"
    toml.write_text(arena.to_toml(GOLDEN["bc-grid-shuffle"]))
    r = arena.cli("run", str(toml), "--out", str(tmp_path / "ray"), "--quiet", "--ray", "--ray-workers", "1",
                  timeout=180)
    assert r.returncode == 0, r.stderr
    assert "complete, 6/6 runs" in r.stdout
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert manifest["engine"] == {"engine": "ray", "address": "local", "workers": 1}
    expected = json.loads(gzip.decompress(golden_path("bc-grid-shuffle").read_bytes()))
    assert logs(tmp_path / "ray") == expected


def test_ray_options_without_ray_are_refused(tmp_path: Path, arena: Any) -> None:
    """--replicas 4 without --ray ran one local model in silence."""
    toml = tmp_path / "bc.toml"
    toml.write_text(arena.to_toml(GOLDEN["beauty_contest"]))
    for flags, named in ((["--replicas", "4"], "--replicas"), (["--ray-workers", "2", "--gpus-per-replica", "0.5"],
                                                              "--ray-workers, --gpus-per-replica")):
        r = arena.cli("run", str(toml), "--out", str(tmp_path / "o"), *flags)
        assert r.returncode == 2 and f"econarena: error: {named}: only with --ray" in r.stderr, r.stderr
        assert not (tmp_path / "o" / "manifest.json").exists()
    r = arena.cli("run", str(toml), "--out", str(tmp_path / "o"), "--ray", "--gpus-per-replica", "-1")
    assert r.returncode == 2 and "expected a number of GPUs >= 0" in r.stderr


def test_an_unreachable_cluster_is_a_clear_error_at_once(tmp_path: Path, arena: Any) -> None:
    toml = tmp_path / "bc.toml"
    toml.write_text(arena.to_toml(GOLDEN["beauty_contest"]))
    started = time.monotonic()
    r = arena.cli("run", str(toml), "--out", str(tmp_path / "o"), "--ray", "127.0.0.1:1")
    assert r.returncode == 2 and "--ray 127.0.0.1:1: no Ray cluster answers there" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and time.monotonic() - started < budget(30)
    assert not (tmp_path / "o" / "manifest.json").exists()


def test_an_address_that_is_no_host_port_is_named_as_such(tmp_path: Path, arena: Any, monkeypatch: Any) -> None:
    """``--ray notahost`` said "no Ray cluster answers there (invalid literal for int() with base 10: ...)":
    a cluster blamed for a typo. Said before any connection; RAY_ADDRESS named when ``auto`` read it."""
    toml = tmp_path / "bc.toml"
    toml.write_text(arena.to_toml(GOLDEN["beauty_contest"]))
    for flag, shown in (("notahost", "notahost"), ("auto", "127.0.0.1:99999 (from RAY_ADDRESS)")):
        monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:99999")
        r = arena.cli("run", str(toml), "--out", str(tmp_path / "o"), "--ray", flag)
        assert r.returncode == 2 and f"--ray {shown}: expected a cluster's address as HOST:PORT" in r.stderr, r.stderr
        assert "invalid literal" not in r.stderr and "Traceback" not in r.stderr
        assert not (tmp_path / "o" / "manifest.json").exists()


# econarena's main in a process of its own that sends itself SIGTERM at a fixed point: inside ray.init (just
# after Ray set its own SIGTERM handler, sys.exit(15)) or while the summary is written after the games.
SIGTERM_AT = """\
import os, signal, sys
import ray
import econarena.analysis.metrics as metrics
where = sys.argv[1]
target = (ray, "init") if where == "init" else (metrics, "write_summary")
real = getattr(*target)
def patched(*args, **kwargs):
    out = real(*args, **kwargs) if where == "init" else None
    os.kill(os.getpid(), signal.SIGTERM)
    return out if where == "init" else real(*args, **kwargs)
setattr(*target, patched)
from econarena.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("where", ["init", "summary"])
def test_sigterm_around_a_ray_run_exits_130_not_15(where: str, tmp_path: Path, arena: Any) -> None:
    """Found by trying: ray.init sets SIGTERM to sys.exit(15), so a SIGTERM while Ray started, or after
    the games (the summary), ended `econarena run --ray` with 15 and no message instead of 130."""
    toml = tmp_path / "bc.toml"
    toml.write_text(arena.to_toml(GOLDEN["beauty_contest"]))
    out = tmp_path / "o"
    r = subprocess.run([sys.executable, "-c", SIGTERM_AT, where, "run", str(toml), "--out", str(out), "--quiet",
                        "--ray", "--ray-workers", "1"], capture_output=True, text=True, timeout=240,
                       stdin=subprocess.DEVNULL, start_new_session=True)
    assert r.returncode == 130 and "interrupted by SIGTERM" in r.stderr, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    if where == "summary":
        assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def test_a_run_stopped_while_ray_places_its_workers_leaves_no_unretrieved_error(ray_cluster: Any) -> None:
    """Found by trying: a stop signal while the session workers started left the gathered pid calls with a
    CancelledError nobody retrieved: a traceback on stderr after "interrupted by SIGTERM"."""
    import gc
    from types import SimpleNamespace

    from econarena.hosts.ray_engine import RayEngine

    engine = RayEngine(workers=1, cpus_per_worker=0.25)
    host = SimpleNamespace(options=SimpleNamespace(concurrency=1))
    reported: list[dict[str, Any]] = []

    async def stopped_while_starting() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reported.append(context))
        start = asyncio.ensure_future(engine._start(host))
        while not engine.workers:  # the actors are asked for; their pids come once their processes run
            await asyncio.sleep(0.001)
        start.cancel()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in others:  # what run_until_signalled does with what is left: cancel, then wait
            t.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        gc.collect()
        await asyncio.sleep(0)

    try:
        asyncio.run(stopped_while_starting())
    finally:
        engine.close()
    assert not [c for c in reported if "never retrieved" in c.get("message", "")], reported


# econarena's main in a process of its own that sends itself SIGTERM in the middle of ray.init: once the raylet
# of the local instance runs and has started its dashboard and runtime-env agents (pids printed first).
SIGTERM_IN_START = """\
import os, signal, sys, time
import ray
import ray._private.node as node
import psutil
real = node.Node.start_raylet
def patched(self, *args, **kwargs):
    real(self, *args, **kwargs)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        agents = [p for p in psutil.Process().children(recursive=True)
                  if p.cmdline()[:1] and p.cmdline()[0].startswith(("ray::DashboardAgent", "ray::RuntimeEnvAgent"))]
        if len(agents) == 2:
            break
        time.sleep(0.05)
    print("AGENTS", *[p.pid for p in agents], file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
node.Node.start_raylet = patched
from econarena.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_while_ray_starts_leaves_no_ray_process_behind(tmp_path: Path, arena: Any) -> None:
    """Found by trying: a SIGTERM while ray.init started the local instance left its DashboardAgent and
    RuntimeEnvAgent running for good (they ignore SIGTERM, and the raylet that should stop them was gone):
    a Ray instance the run started, the run stops, every process of it."""
    import psutil

    toml = tmp_path / "bc.toml"
    toml.write_text(arena.to_toml(GOLDEN["beauty_contest"]))
    r = subprocess.run([sys.executable, "-c", SIGTERM_IN_START, "run", str(toml), "--out", str(tmp_path / "o"),
                        "--quiet", "--ray", "--ray-workers", "1"], capture_output=True, text=True, timeout=240,
                       stdin=subprocess.DEVNULL, start_new_session=True)
    assert r.returncode == 130 and "interrupted by SIGTERM" in r.stderr, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    agents = [int(x) for x in r.stderr.split("AGENTS", 1)[1].split("\n", 1)[0].split()]
    assert len(agents) == 2, r.stderr[-2000:]
    deadline = time.monotonic() + 10
    left = agents
    while left and time.monotonic() < deadline:
        left = [p for p in agents if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.1)
    assert not left, [psutil.Process(p).cmdline() for p in left]


def test_ray_auto_joins_only_a_cluster_it_is_told_about(ray_cluster: Any, tmp_path: Path, arena: Any) -> None:
    """Found by trying: with no RAY_ADDRESS and no `ray start` cluster recorded, `--ray auto` fell back to Ray's
    scan for any Ray process of the machine, joined another program's private instance (here: the test
    session's own) and ended with Ray's "The actor never ran - it was cancelled" once that one stopped."""
    toml = tmp_path / "bc.toml"
    toml.write_text(arena.to_toml(GOLDEN["beauty_contest"]))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_TMPDIR"] = str(tmp_path)  # where Ray looks for the address file `ray start` writes: none here
    r = subprocess.run([arena.ECONARENA, "run", str(toml), "--out", str(tmp_path / "o"), "--ray", "auto"], env=env,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.strip().splitlines()[-1] == (
        "econarena: error: --ray auto: no cluster to join (RAY_ADDRESS is not set and no `ray start` cluster is "
        "recorded on this machine); start one with `ray start --head`, set RAY_ADDRESS, give its address "
        "(--ray HOST:6379), or use --ray alone for one on this machine")
    assert not (tmp_path / "o" / "manifest.json").exists()


TOKEN_AS_NAME = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"[:34]


def test_ray_env_and_stall_options_are_checked(tmp_path: Path, arena: Any, capsys: Any) -> None:
    """A value given where a name belongs is refused without being echoed (it may be a key); a name not set
    here is refused before Ray is joined; the options without --ray are refused like the other Ray options."""
    from econarena.cli import main

    toml = tmp_path / "bc.toml"
    toml.write_text(arena.to_toml(GOLDEN["beauty_contest"]))
    for flags, said in ((["--ray", "127.0.0.1:1", "--ray-env", "sk-secret-value-123"],
                         "expected the NAME of an environment variable"),
                        (["--ray", "127.0.0.1:1", "--ray-env", "EA_UNSET_VARIABLE_X"],
                         "--ray-env EA_UNSET_VARIABLE_X: not set in this environment"),
                        # a token with a name's letters (hf_..., ghp_...) was echoed by the 'not set' message
                        (["--ray", "127.0.0.1:1", "--ray-env", "CUDA_VISIBLE_DEVICES"],
                         "CUDA_VISIBLE_DEVICES: Ray sets it for each worker and replica"),
                        (["--ray", "127.0.0.1:1", "--ray-env", "HOME", "--ray-env", TOKEN_AS_NAME],
                         "--ray-env #2 (a name of 37 characters, not shown: it looks like a key"),
                        (["--ray", "127.0.0.1:1", "--ray-stall-timeout", "0"], "expected a number of seconds > 0"),
                        (["--ray-stall-timeout", "5", "--ray-env", "HOME"],
                         "--ray-stall-timeout, --ray-env: only with --ray")):
        try:
            code = main(["run", str(toml), "--out", str(tmp_path / "o"), "--quiet", *flags])
        except SystemExit as exc:  # argparse's own refusal
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and said in err and "sk-secret-value-123" not in err and TOKEN_AS_NAME not in err, (
            flags, err)
        assert not (tmp_path / "o" / "manifest.json").exists()


def test_a_ray_env_name_set_but_empty_is_forwarded_empty(monkeypatch: Any) -> None:
    """--ray-env NAME with NAME set to "" here was accepted and then not forwarded: a node kept its own value
    of it. A key variable the players read still goes only when it holds a key."""
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.ray_engine import RayEngine

    monkeypatch.setenv("EA_EMPTY_ON_PURPOSE", "")
    monkeypatch.setenv("EA_SET_ONE", "x y")
    monkeypatch.setenv("OPENAI_API_KEY", "")
    exp = parse_experiment(GOLDEN["beauty_contest"], "bc.toml")
    engine = RayEngine("127.0.0.1:1", env=["EA_EMPTY_ON_PURPOSE", "EA_SET_ONE"])
    assert engine.forwarded(exp) == {"EA_EMPTY_ON_PURPOSE": "", "EA_SET_ONE": "x y"}


def test_a_cancelled_session_leaves_the_other_batches_of_its_shipment_delivered(ray_cluster: Any) -> None:
    """A worker ships every session's finished runs in one ledger call. The driver cancels a session whose
    worker it believes lost while its batch waits in that call: the other sessions' batches still reach the
    ledger and their waiters are answered. Before, answering the cancelled waiter raised InvalidStateError
    and left the rest of the shipment unanswered (a run that hung, then "API errors" in CI)."""
    import ray

    from econarena.hosts.ray_engine import Ledger, _Shipper

    ledger = Ledger.remote()  # type: ignore[attr-defined]
    keys = [(0, "lineup", s) for s in range(3)]
    epochs = [ray.get(ledger.begin.remote(k))[0] for k in keys]

    async def ship() -> list[Any]:
        shipper = _Shipper(ledger)
        futures = [shipper.ship(k, e, {"run": None, "end": True}) for k, e in zip(keys, epochs)]
        futures[1].cancel()  # its session's call was cancelled before the shipment went out
        assert shipper.task is not None
        await shipper.task  # raises if answering the batch's waiters failed
        return [f.cancelled() or f.result() for f in futures]

    assert asyncio.run(ship()) == [True, True, True]
    delivered = ray.get(ledger.take.remote(0, 0.0))
    assert len(delivered) == 3  # the shipment went out whole: the cancelled session's batch is stale later
    ray.kill(ledger)
