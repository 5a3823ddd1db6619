"""Operating on a real Ray cluster of several nodes: a head and worker nodes started with ``ray start`` on
127.0.0.1, each with its own temp dir and ports (tests/raynodes.py), worker nodes killed for real (every
process of the node, SIGKILL). A lost node never hangs a run: its sessions go on on the nodes left, a node
that joins takes over, and with nothing left the run stops for ``--resume`` naming the node; the players'
keys and ``--ray-env`` variables reach workers on nodes that lack them, and no file or log holds a value;
``--ray auto`` joins only a cluster it is told about.

One cluster for the module (a node takes seconds to start): a head without CPUs, so that every session
worker runs on a worker node a test can kill, while the driver, its ledger and services actors stay on
the head."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from golden_experiments import normalised
from timing import budget

pytest.importorskip("ray", reason="Ray is not installed: pip install 'econarena[ray]' (make install)")

SECRET = "sk-node-secret-8f2c41d9"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from raynodes import start_cluster

    c = start_cluster((0,))  # stopped (every process by pid, temp dirs removed) however the module ends
    try:
        yield c
    finally:
        c.stop()


def guesser(protocol: str, body: Any) -> str:
    """Deterministic, and different for every prompt (a run replayed with another history would show)."""
    return json.dumps({"answer": len(json.dumps(body["messages"])) % 90})


def doc(url: str) -> dict[str, Any]:
    """16 sessions of 4 runs x 3 rounds, one LLM seat whose key only the driver has (api_key_env)."""
    return {"experiment": {"name": "nodes", "game": "guessing_game", "sessions": 16, "runs": 4, "seed": 3,
                           "history": "actions"},
            "game": {"rounds": 3},
            "players": [{"agent": "openai", "label": "gpt", "model": "fake", "base_url": f"{url}/v1",
                         "max_tokens": 20, "api_key_env": "EA_NODE_KEY"}, {"agent": "rational", "count": 2}]}


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def wait_runs(out: Path, n: int, proc: subprocess.Popen[Any]) -> int:
    deadline = time.monotonic() + budget(120)
    while (k := len(lines_of(out / "runs.jsonl"))) < n and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended before the node was killed: {proc.returncode}"
    assert k >= n, f"only {k} runs after {budget(120):.0f} s"
    return k


def start_driver(arena: Any, args: list[str], env: dict[str, str], logs: Path) -> subprocess.Popen[Any]:
    return subprocess.Popen([arena.ECONARENA, *args], env=env, stdin=subprocess.DEVNULL,
                            stdout=(logs / "stdout").open("w"), stderr=(logs / "stderr").open("w"))


@pytest.fixture(scope="module")
def reference(server: Any, tmp_path_factory: Any) -> Any:
    """The experiment played by the local engine (once for the module): what every cluster run must equal."""
    from econarena.agents.llm import RuntimeOptions
    from econarena.hosts.config import parse_experiment
    from econarena.hosts.host import Host, HostOptions

    made: dict[str, dict[str, list[str]]] = {}

    def get() -> dict[str, list[str]]:
        if not made:
            out = tmp_path_factory.mktemp("local") / "out"
            os.environ["EA_NODE_KEY"] = SECRET
            try:
                exp = parse_experiment(doc(server.url), "t.toml")
                result = asyncio.run(Host(exp, out, HostOptions(concurrency=24, quiet=True,
                                                                runtime=RuntimeOptions(cache=False))).run())
            finally:
                del os.environ["EA_NODE_KEY"]
            assert result.status == "complete"
            made.update(records(out))
        return made

    return get


def records(out: Path) -> dict[str, list[str]]:
    got = normalised(out)
    return {k: got[k] for k in ("runs.jsonl", "decisions.jsonl")}


def holding(root: Path, secret: str) -> list[str]:
    """Every regular file under ``root`` whose bytes hold ``secret``."""
    found = []
    for d, _, files in os.walk(root):
        for f in files:
            p = Path(d) / f
            try:
                if p.is_file() and not p.is_symlink() and secret.encode() in p.read_bytes():
                    found.append(str(p))
            except OSError:
                continue
    return found


def test_a_lost_node_moves_its_sessions_a_joining_node_takes_over_and_keys_reach_nodes_without_them(
        cluster: Any, server: Any, tmp_path: Path, arena: Any, reference: Any) -> None:
    """Two worker nodes, neither with the player's key in its environment: the driver has it and forwards
    it (and OPENAI_ORG_ID, by --ray-env) to the workers. The first node killed mid-run: its sessions go on
    on the second. The second killed too, none left: the run waits, a third node joins, Ray places a
    worker there and the run completes, every run once, equal to a local run. stderr names each lost node
    by Ray id and says nothing of API errors; no file of the run, of any node's Ray temp dir (logs
    included) or of the driver's output holds the key. Before: one lost node read "lost its Ray worker
    too often" and "N run(s) stopped on API errors", and a loss with no free CPU left hung the run."""
    assert "EA_NODE_KEY" not in os.environ and "OPENAI_ORG_ID" not in os.environ
    first, second = cluster.start_nodes([1, 1])
    server.reset()
    server.reply = guesser
    server.latency = 0.05
    toml = tmp_path / "nodes.toml"
    toml.write_text(arena.to_toml(doc(server.url)))
    out = tmp_path / "out"
    env = {**os.environ, **cluster.env, "EA_NODE_KEY": SECRET, "OPENAI_ORG_ID": "org-forwarded",
           "RAY_ADDRESS": cluster.address}
    proc = start_driver(arena, ["run", str(toml), "--out", str(out), "--no-cache", "--quiet", "--ray", "auto",
                         "--ray-workers", "2", "--concurrency", "2", "--ray-env", "OPENAI_ORG_ID",
                         "--ray-stall-timeout", "60"], env, tmp_path)
    try:
        wait_runs(out, 8, proc)
        first.kill()
        wait_runs(out, len(lines_of(out / "runs.jsonl")) + 12, proc)
        second.kill()
        cluster.start_node(2)  # joins while the run waits for a live worker: Ray places both workers there
        rc = proc.wait(budget(120))
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (tmp_path / "stderr").read_text()
    assert rc == 0, err[-3000:]
    assert f"Ray node {first.node_id} (" in err and f"Ray node {second.node_id} (" in err, err[-3000:]
    assert "API errors" not in err and "too often" not in err and "Traceback" not in err
    runs = lines_of(out / "runs.jsonl")
    assert len(runs) == 64 == len({(r["session"], r["run"]) for r in runs}), "a run lost or written twice"
    asked = [{k.lower(): v for k, v in s.headers.items()} for s in server.seen]
    assert asked and all(h.get("authorization") == f"Bearer {SECRET}" for h in asked)
    assert all(h.get("openai-organization") == "org-forwarded" for h in asked)
    assert records(out) == reference()
    for where in (out, cluster.root, tmp_path / "stdout", tmp_path / "stderr"):
        assert not holding(where, SECRET), holding(where, SECRET)


def test_a_node_lost_for_good_stops_the_run_for_resume(cluster: Any, server: Any, tmp_path: Path, arena: Any,
                                                       reference: Any) -> None:
    """The only worker node killed mid-run, none left and none joining: the run stops within the stall
    bound (exit 3, incomplete), naming the node and the exact --resume command (on the same cluster, found
    by --ray auto in the address file `ray start` writes); a node joins, and that command finishes the
    run equal to a local run."""
    alive = [n for n in cluster.nodes[1:] if n.alive]
    node = alive[0] if alive else cluster.start_node(1)
    for other in alive[1:]:
        other.kill()
    server.reset()
    server.reply = guesser
    server.latency = 0.05
    toml = tmp_path / "nodes.toml"
    toml.write_text(arena.to_toml(doc(server.url)))
    out = tmp_path / "out"
    ray_tmp = tmp_path / "raytmp"
    (ray_tmp / "ray").mkdir(parents=True)
    (ray_tmp / "ray" / "ray_current_cluster").write_text(cluster.address)  # what `ray start --head` records
    env = {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, **cluster.env, "EA_NODE_KEY": SECRET,
           "RAY_TMPDIR": str(ray_tmp)}
    proc = start_driver(arena, ["run", str(toml), "--out", str(out), "--no-cache", "--quiet", "--ray", "auto",
                         "--ray-workers", "1", "--concurrency", "2", "--ray-stall-timeout", "3"], env, tmp_path)
    try:
        wait_runs(out, 8, proc)
        killed = time.monotonic()
        node.kill()
        rc = proc.wait(budget(120))
        took = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (tmp_path / "stderr").read_text()
    assert rc == 3, err[-3000:]
    # Ray's actor error comes within seconds (its node table says "dead" after ~15 s of missed heartbeats)
    assert took < budget(40), took
    stop = [x for x in err.splitlines() if x.startswith("econarena: error:")]
    assert len(stop) == 1 and f"Ray node {node.node_id} (" in stop[0], err[-3000:]
    assert "no node left could run the session workers for 3 s" in stop[0]
    command = f"econarena run {toml} --out {out} --seed 3 --resume --ray auto"
    assert stop[0].endswith(f"continue with {command}"), stop[0]
    assert "API errors" not in err and "too often" not in err and "Traceback" not in err
    manifest = json.loads((out / "manifest.json").read_text())
    kept = len(lines_of(out / "runs.jsonl"))
    assert manifest["status"] == "incomplete" and manifest["stopped"] and 8 <= kept < 64
    assert manifest["runs_complete"] == kept and manifest["runs_incomplete"] == 0
    joining = threading.Thread(target=cluster.start_node, args=(2,))  # the command waits for its workers
    joining.start()
    try:
        again = subprocess.run([arena.ECONARENA, *shlex.split(command)[1:], "--quiet", "--no-cache"], env=env,
                               capture_output=True, text=True, timeout=budget(180), stdin=subprocess.DEVNULL)
    finally:
        joining.join()
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((out / "manifest.json").read_text()).get("stopped") is None
    runs = lines_of(out / "runs.jsonl")
    assert len(runs) == 64 == len({(r["session"], r["run"]) for r in runs})
    assert records(out) == reference()


def test_the_head_node_lost_ends_the_run_at_once(cluster: Any, server: Any, tmp_path: Path, arena: Any) -> None:
    """The head node killed (its GCS, its raylet and the driver's ledger with them): the run stops within
    seconds, exit 3, saying the cluster's head was lost, with the --resume command. Found by trying: the
    driver was left for a minute in Ray's exit handler waiting on the dead GCS (then Ray killed it, exit 1,
    with no word of ours), and skipping that handler crashed the interpreter's exit. The last test of the
    module: the cluster is gone after it."""
    alive = [n for n in cluster.nodes[1:] if n.alive]
    if not alive:
        cluster.start_node(1)
    server.reset()
    server.reply = guesser
    server.latency = 0.05
    toml = tmp_path / "nodes.toml"
    toml.write_text(arena.to_toml(doc(server.url)))
    out = tmp_path / "out"
    env = {**os.environ, **cluster.env, "EA_NODE_KEY": SECRET}
    proc = start_driver(arena, ["run", str(toml), "--out", str(out), "--no-cache", "--quiet", "--ray",
                                cluster.address, "--ray-workers", "1", "--concurrency", "2"], env, tmp_path)
    try:
        wait_runs(out, 8, proc)
        killed = time.monotonic()
        cluster.nodes[0].kill()
        rc = proc.wait(budget(90))
        took = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (tmp_path / "stderr").read_text()
    assert rc == 3 and took < budget(20), (rc, took, err[-3000:])
    stop = [x for x in err.splitlines() if x.startswith("econarena: error:")]
    assert len(stop) == 1 and f"the Ray cluster's head (GCS at {cluster.address}) was lost" in stop[0], err[-3000:]
    assert stop[0].endswith(f"continue with econarena run {toml} --out {out} --seed 3 --resume --ray {cluster.address}")
    assert json.loads((out / "manifest.json").read_text())["status"] == "incomplete"
