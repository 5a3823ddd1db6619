"""A response cache, so a repeated or resumed experiment never pays twice for the same decision.

SQLite in WAL mode in the user's cache directory: one small file, safe to share between processes
(two experiments at once) and fast enough to touch synchronously from the event loop (a lookup or an
insert takes well under a millisecond). Only successful generations are stored.

Each reply records the model build that made it (provider, model, a local model's weights digest or
revision, what a server reported: its model name and ``system_fingerprint``); the agent serves it only
while the build now configured is the same (:meth:`LLMAgent.decide`), so replaced weights are asked again.
No key or credential is in the record: a URL is not, and what a server reported is masked as a reply is.

The key covers everything that shapes the answer (provider, model, base_url, messages, sampling
settings) plus a *sample index*. Without it, two players who see the same prompt at temperature 0.7
would share one cached sample and their "independent" decisions would be identical. The index comes
from the experiment seed and the decision's coordinates (lineup, session, run, round, seat, ...), so the
same decision in a resumed or repeated experiment hits the cache and any other decision does not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from .base import Message

log = logging.getLogger(__name__)

CACHE_FILE = "responses.sqlite"
KEY_VERSION = 1  # bump when the key's contents change, so old entries are never misread


def default_cache_path() -> Path:
    """``$ECONARENA_CACHE_DIR/responses.sqlite``, else the platform's user cache directory."""
    env = os.environ.get("ECONARENA_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser() / CACHE_FILE
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("econarena")) / CACHE_FILE


def resolve_cache_path(path: str | os.PathLike[str] | None) -> Path:
    """A directory (existing, or named with a trailing slash) gets the standard file name inside it."""
    if path is None:
        return default_cache_path()
    p = Path(path).expanduser()
    if p.is_dir() or str(path).endswith(("/", os.sep)):
        return p / CACHE_FILE
    return p


def sample_index(coords: Mapping[str, Any], player: int | None = None, decision_index: int | None = None,
                 seed: int | None = None) -> str:
    """A stable name for one decision: the experiment seed and every coordinate the Host gives.

    The seed is part of it so that an experiment re-run with another ``--seed`` draws fresh samples,
    while a resume (same seed) finds every answer it already paid for.
    """
    data = {str(k): v for k, v in coords.items()}
    data["_player"] = player
    data["_decision"] = decision_index
    data["_seed"] = seed
    blob = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_key(*, provider: str, model: str | None, base_url: str | Sequence[str] | None, messages: Sequence[Message],
              settings: Mapping[str, Any], sample: str) -> str:
    """sha256 over a canonical JSON of everything that determines the reply."""
    blob = json.dumps({
        "v": KEY_VERSION,
        "provider": provider,
        "model": model,
        # several endpoints serve one model: the list as written is the key (a single one keeps old keys)
        "base_url": ((base_url or "").rstrip("/") or None) if base_url is None or isinstance(base_url, str)
        else [u.rstrip("/") for u in base_url],
        "messages": [[m.role, m.content] for m in messages],
        "settings": dict(settings),
        "sample": sample,
    }, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass: a conversation may hold a model's earlier reply with a lone surrogate (kept verbatim as
    # its rule break); any other text encodes as before, so no existing key changes
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class ReplyCache(Protocol):
    """What an LLM agent asks of its cache: the file itself (:class:`ResponseCache`), or the cluster's proxy
    to it (agents/cluster.py), whose lookup is awaited."""

    def get(self, key: str) -> Any: ...

    def put(self, key: str, *, text: str, model: str | None, tokens_in: int | None, tokens_out: int | None,
            latency_s: float, truncated: bool = False, reasoning: dict[str, Any] | None = None,
            build: dict[str, Any] | None = None) -> None: ...


class ResponseCache:
    """Key -> (text, model, tokens, latency). Failures to read or write disable it with one warning
    instead of stopping an experiment: a cache is an optimisation, never a reason to lose a run."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # one connection, possibly touched from worker threads
        self._db: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=5.0, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, model TEXT,"
            " tokens_in INTEGER, tokens_out INTEGER, latency_s REAL, created REAL, truncated INTEGER)")
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
        if "truncated" not in columns:  # a cache written before replies cut at max_tokens were marked
            with contextlib.suppress(sqlite3.OperationalError):  # another process added it just now
                self._db.execute("ALTER TABLE responses ADD COLUMN truncated INTEGER")
        if "reasoning" not in columns:  # a reasoning model's thinking (JSON), kept apart from the answer
            with contextlib.suppress(sqlite3.OperationalError):
                self._db.execute("ALTER TABLE responses ADD COLUMN reasoning TEXT")
        if "build" not in columns:  # the model build that made the reply (JSON): served only to the same build
            with contextlib.suppress(sqlite3.OperationalError):
                self._db.execute("ALTER TABLE responses ADD COLUMN build TEXT")
        self.hits = 0
        self.misses = 0

    def _disable(self, exc: Exception) -> None:
        log.warning("response cache %s disabled: %s", self.path, exc)
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            if self._db is None:
                return None
            try:
                row = self._db.execute(
                    "SELECT text, model, tokens_in, tokens_out, latency_s, truncated, reasoning, build FROM responses "
                    "WHERE key = ?",
                    (key,)).fetchone()
            except sqlite3.Error as exc:
                self._disable(exc)
                return None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        out = dict(zip(("text", "model", "tokens_in", "tokens_out", "latency_s", "truncated", "reasoning", "build"),
                       row))
        out["truncated"] = bool(out["truncated"])
        try:
            reasoning = json.loads(out["reasoning"]) if out["reasoning"] else None
        except ValueError:
            reasoning = None
        if isinstance(reasoning, dict):  # only then: a reply without reasoning reads back as before
            out["reasoning"] = reasoning
        else:
            del out["reasoning"]
        try:
            build = json.loads(out.pop("build") or "null")
        except ValueError:
            build = None
        if isinstance(build, dict):  # only then: an entry written before builds were recorded reads as before
            out["build"] = build
        if isinstance(out["text"], bytes):  # stored as bytes by put(): the reply exactly as it came
            out["text"] = out["text"].decode("utf-8", "surrogatepass")
        return out

    def put(self, key: str, *, text: str, model: str | None, tokens_in: int | None,
            tokens_out: int | None, latency_s: float, truncated: bool = False,
            reasoning: dict[str, Any] | None = None, build: dict[str, Any] | None = None) -> None:
        """``reasoning``: the reply's reasoning fields (text, hidden, tokens, unfinished), when it has any;
        ``build``: the model build that made it (provider, model, weights, what the server reported)."""
        with self._lock:
            if self._db is None:
                return
            row = (key, text, model, tokens_in, tokens_out, latency_s, time.time(), int(truncated),
                   json.dumps(reasoning) if reasoning else None, json.dumps(build, sort_keys=True) if build else None)
            insert = ("INSERT OR REPLACE INTO responses (key, text, model, tokens_in, tokens_out, latency_s, created, "
                      "truncated, reasoning, build) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            try:
                try:
                    self._db.execute(insert, row)
                except UnicodeEncodeError:  # a reply holding a lone surrogate is no UTF-8 text: kept as its
                    raw = text.encode("utf-8", "surrogatepass")  # bytes, so a resume reads back the same reply
                    try:
                        self._db.execute(insert, (key, raw, *row[2:]))
                    except UnicodeEncodeError:
                        # the model name is no text either: not cached, asked again next time (raised out of
                        # here it failed the call as an API error, so the run never finished)
                        return
            except sqlite3.Error as exc:
                self._disable(exc)

    def __len__(self) -> int:
        with self._lock:
            if self._db is None:
                return 0
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            db.close()


_OPEN: dict[Path, ResponseCache] = {}


def open_cache(path: str | os.PathLike[str] | None) -> ResponseCache:
    """One connection per file for the whole process, shared by every agent."""
    p = resolve_cache_path(path).resolve()
    cache = _OPEN.get(p)
    if cache is None or cache._db is None:
        cache = ResponseCache(p)
        _OPEN[p] = cache
    return cache


def close_caches() -> None:
    caches = list(_OPEN.values())
    _OPEN.clear()
    for c in caches:
        c.close()
