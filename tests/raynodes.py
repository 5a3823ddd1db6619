"""A real Ray cluster of several nodes on 127.0.0.1 for the tests: one ``ray start --head`` and
``ray start --address`` per worker node, each with its own temp dir and free ports, each node in a process
group of its own so that a test can kill one node (every process it started) by process group, and the
fixture can stop exactly what it started (never ``ray stop``: that stops every Ray instance of the machine,
other people's too).

Why process groups: ``ray start`` returns once its daemons run; they stay in the group of the ``ray start``
process (Ray starts them without a new session), and so do the worker processes a raylet forks. Killing a
group kills a node the way a crashed machine would (SIGKILL, nothing cleaned up).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ports() -> list[str]:
    """The ports a node listens on that have fixed defaults (two nodes of one machine, or another person's
    Ray instance, would collide on them): each a free one."""
    return ["--node-manager-port", str(free_port()), "--object-manager-port", str(free_port()),
            "--dashboard-agent-listen-port", str(free_port()), "--dashboard-agent-grpc-port", str(free_port()),
            "--runtime-env-agent-port", str(free_port()), "--metrics-export-port", str(free_port()),
            "--min-worker-port", "0", "--max-worker-port", "0"]


@dataclass
class Node:
    temp_dir: Path
    pgid: int
    env: dict[str, str]
    alive: bool = True

    @property
    def node_id(self) -> str:
        """Ray's id of this node (its session directory names its port files after it)."""
        for f in sorted((self.temp_dir / "session_latest").glob("*_port_*")):
            return f.name.rsplit("_", 1)[1]
        return ""

    def pids(self) -> list[int]:
        """Every live process of this node: its process group and their descendants (a raylet starts its
        worker processes in sessions of their own)."""
        parent: dict[int, int] = {}
        group = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                pid = int(entry)
                stat = Path(f"/proc/{pid}/stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp ...
                if fields[0] == "Z":
                    continue
                parent[pid] = int(fields[1])
                if int(fields[2]) == self.pgid:
                    group.add(pid)
        found = set(group)
        grew = True
        while grew:
            more = {p for p, pp in parent.items() if pp in found and p not in found}
            found |= more
            grew = bool(more)
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process of the node (a machine lost at once)."""
        deadline = time.monotonic() + 10
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        self.alive = False


@dataclass
class Cluster:
    """A head node and worker nodes started by this test run; ``address`` is the head's GCS address."""

    root: Path
    port: int
    env: dict[str, str] = field(default_factory=dict)  # what every node and driver needs (the auth token)
    nodes: list[Node] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start_node(self, cpus: int = 1, head: bool = False, env: dict[str, str] | None = None) -> Node:
        return self.start_nodes([cpus], head=head, env=env)[0]

    def start_nodes(self, cpus: list[int], head: bool = False, env: dict[str, str] | None = None) -> list[Node]:
        """One node per entry (the head alone, or worker nodes started side by side: each takes seconds)."""
        started = []
        for n in cpus:
            temp = Path(tempfile.mkdtemp(prefix="n", dir=self.root))  # short: Ray's socket paths have a limit
            environ = {**os.environ, **self.env, **(env or {})}
            where = ["--head", "--port", str(self.port), "--include-dashboard", "false"] if head else \
                ["--address", self.address]
            cmd = [RAY, "start", *where, "--temp-dir", str(temp), "--num-cpus", str(n), "--node-ip-address",
                   "127.0.0.1", "--disable-usage-stats", *_ports()]
            proc = subprocess.Popen(cmd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, text=True, start_new_session=True)
            node = Node(temp, proc.pid, environ)
            self.nodes.append(node)
            started.append((node, proc))
        for _node, proc in started:
            out, _ = proc.communicate(timeout=180)
            if proc.returncode != 0:
                raise RuntimeError(f"ray start failed ({proc.returncode}):\n{out[-3000:]}")
        return [node for node, _ in started]

    def stop(self) -> None:
        """SIGKILL every process of every node this cluster started, and remove its temp dirs."""
        for node in reversed(self.nodes):
            node.kill()
        self.nodes.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(cpus: tuple[int, ...] = (1, 1), env: dict[str, str] | None = None) -> Cluster:
    """A head node with ``cpus[0]`` CPUs and one worker node per further entry; stopped by :meth:`Cluster.stop`
    (call it in a ``finally``: a failed start stops what it started too)."""
    root = Path(tempfile.mkdtemp(prefix="rc", dir="/tmp"))
    # Ray 2.5x turns token authentication on for a head node when ~/.ray/auth_token exists, but a joining
    # node only with RAY_AUTH_MODE=token: one token of this cluster's own, given to every node and driver
    cluster = Cluster(root, free_port(), {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)})
    # Ray's GCS declares a node dead after 5 missed health checks 3 s apart (~15 s), and places its actors
    # elsewhere only then: checks every second, 3 missed, keep the tests that wait for it short
    fast = {"RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "1000",
            "RAY_health_check_failure_threshold": "3"}
    try:
        cluster.start_node(cpus[0], head=True, env={**fast, **(env or {})})
        if cpus[1:]:
            cluster.start_nodes(list(cpus[1:]), env=env)
    except BaseException:
        cluster.stop()
        raise
    return cluster
