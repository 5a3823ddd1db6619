"""The study as columnar tables in an embedded engine (DuckDB): what ``load`` held as pandas frames, written
as the logs are read and queried by aggregate, so a report's memory does not grow with its games.

Why DuckDB (measured on the 57,600-game GLEE bargaining grid and ten copies of its players table, 2 shared
cores; README, Performance): reading the JSON lines stays with orjson (``rundir.iter_records``: 1.4 s for
the 99 MB ``runs.jsonl`` at 13 MB, against DuckDB's ``read_json`` 1.8 s at 276 MB, Polars' ``scan_ndjson``
3.3 s at 198 MB, and pyarrow's reader, which refuses a column that holds a number in one game and text in
another); the rows go in as Arrow batches, and DuckDB holds them on disk in a temporary database with a
memory limit, joins the decisions' counts to the player-runs, orders and groups out of core and writes the
parquet exports with ``COPY`` (never a whole table in Python). Polars' streaming engine and pyarrow's
datasets answered the same queries in similar time, but neither spills a join or a sort to disk under a
limit as DuckDB does, and the queries read as the definitions (``analysis/tables.py``).

Exact results stay exact: sums whose order changes the last bit (a session's sums, a mean latency) are
never left to the engine; it returns a group's rows in log order and numpy adds them as the pandas code
did (``tests/test_analysis_golden.py`` pins every number).

Tables (internal; the exports add the setting columns and the sessions' keys):
- ``dirs``: one row per run directory (``dir`` index and the setting columns);
- ``players``: one row per player and complete run (see ``analysis/load.py`` for the columns);
- ``runs``: one row per run record kept (complete or not);
- ``decisions``: one row per decision of a complete run (the prompts' messages left out).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..formats.rundir import LogError, json_text
from ..games import GAMES
from ..games.text import storable
from .cells import cell_of, factors, grid_of
from .columnar import engine_interrupted
from .frames import SETTING_COLUMNS, Frames, experiment_row
from .scan import Base, Dir

BATCH = 5_000  # rows per Arrow batch handed to the engine (larger batches: more memory, no faster)
# rows per batch the engine hands the parquet writer, a row group each (larger groups outgrow the writer's
# dictionary pages for the replies' text, which it then writes plain: 3x the file, and slower)
EXPORT_BATCH = 10_000
USAGE_CHUNK = 300_000  # decisions counted per player-run at a time (a directory's range of sessions)
FINISH_LIMIT = "256MB"  # the engine's limit while it writes those counts into the player-runs' rows
# the engine spills to its temporary folder beyond this (sorts, the decisions' counts per player-run)
MEMORY_LIMIT = "64MB"
LEAN_LIMIT = "32MB"  # the limit of ``Store.lean``'s streamed passes (they hold a batch, spill any grouping)
# a copy with at least this many decisions is read where it lies (its Parquet files behind the tables' views)
# rather than inserted into the engine's tables: at 587,400 GLEE games inserting the copies took 16 s of a
# 77 s report, and the exports read Parquet twice as fast as the engine's own file under its memory limit.
# Smaller copies are inserted: each file read in place is a branch of the views' plans, and the exports
# read from Parquet hold about 70 MB more at their peak (57,600 games, 170,880 decisions: 529 MB in place,
# 480 MB inserted, in 0.3 s).
IN_PLACE = 500_000
TABLES = ("players", "runs", "decisions")

_PLAYER_TYPES = {
    "row": "int64", "dir": "int32", "lineup": "string", "session": "int64", "run": "int64", "seat": "int64",
    "label": "string", "agent": "string", "model": "string", "role": "string", "n_players": "int64",
    "action": "float64", "ne_action": "float64", "scale": "float64", "action_norm": "float64",
    "ne_action_norm": "float64", "valid": "bool", "broke": "bool", "payoff": "float64", "game_payoff": "float64",
    "ne_payoff": "float64", "deviation": "float64", "win": "bool", "void": "bool", "private_value": "float64",
    "assets": "float64",
}
_RUN_TYPES = {
    "row": "int64", "dir": "int32", "lineup": "string", "session": "int64", "run": "int64", "complete": "bool",
    "void": "bool", "rounds": "int64", "n_players": "int64", "scale": "float64", "params": "string",
}
_DECISION_TYPES = {
    "row": "int64", "dir": "int32", "lineup": "string", "session": "int64", "run": "int64", "round": "int64",
    "player": "int64", "label": "string", "agent": "string", "model": "string", "role": "string",
    "template": "string", "response": "string", "action": "string", "valid": "bool", "violation": "string",
    "detail": "string", "latency_s": "float64", "tokens_in": "float64", "tokens_out": "float64", "cached": "bool",
    "error": "string", "structured": "string",
}
# a reasoning model's decisions (agents/reasoning.py): kept beside the decisions, joined into them (and into
# decisions.parquet) only when a study has any, so every other export keeps its columns
_REASONING_TYPES = {
    "row": "int64", "reasoning_effort": "string", "reasoning_budget": "float64", "reasoning_tokens": "float64",
    "reasoning_hidden": "bool", "reasoning_chars": "int64",
}
REASONING_COLUMNS = tuple(c for c in _REASONING_TYPES if c != "row")
_SQL = {"int64": "BIGINT", "int32": "INTEGER", "string": "VARCHAR", "float64": "DOUBLE", "bool": "BOOLEAN"}


def _f(x: Any) -> float:
    try:
        return float(x) if x is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _at(seq: Any, i: int) -> Any:
    return seq[i] if isinstance(seq, (list, tuple)) and i < len(seq) else seq


def _text(x: Any) -> str | None:
    """A logged value as a text cell: text as it is, but a lone surrogate (a log written before replies were
    held to the text rule, games/text.py) as its escape, which UTF-8 tables cannot hold; else its JSON."""
    if x is None or type(x) is str and x.isascii():
        return x
    return storable(x) if isinstance(x, str) else json_text(x)


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def stakes(game: str, params: dict[str, Any]) -> float:
    """The size of the game's numbers: the mean of the setup key the game declares as its stakes."""
    found = GAMES.get(game)
    key = found.info.stakes_key if found is not None else None
    if not key:
        return math.nan
    x = params.get(key)
    if isinstance(x, (list, tuple)):
        vals = [float(v) for v in x if v is not None]
        return float(np.mean(vals)) if vals else math.nan
    return float(x) if x is not None else math.nan


def _action_scale(game: str, params: dict[str, Any], seat: int) -> float:
    found = GAMES.get(game)
    key = found.info.scale_key if found is not None else None
    if key is None:
        return math.nan
    value = params.get(key)
    return _f(_at(value, seat)) if isinstance(value, list) else _f(value)


class _Buffer:
    """Rows of one table, handed to the engine as an Arrow batch every :data:`BATCH` rows."""

    def __init__(self, store: Store, table: str, types: dict[str, str]) -> None:
        self.store, self.table, self.types = store, table, types
        self.pending: list[tuple[Any, ...]] = []
        self.rows = 0

    def add(self, values: tuple[Any, ...]) -> None:
        self.pending.append(values)
        self.rows += 1
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        if not self.pending:
            return
        kinds = {"int64": pa.int64(), "int32": pa.int32(), "string": pa.string(), "float64": pa.float64(),
                 "bool": pa.bool_()}
        columns = zip(*self.pending)  # column by column, in C
        batch = pa.table({c: pa.array(v, type=kinds[t], from_pandas=True)
                          for (c, t), v in zip(self.types.items(), columns)})
        self.store.con.register("_batch", batch)
        self.store.con.execute(f"INSERT INTO {self.table} BY NAME SELECT * FROM _batch")
        self.store.con.unregister("_batch")
        self.pending = []


class Store(Base):
    """The columnar tables of the scanned directories (a scan consumer), and the queries on them."""

    wants_decisions = True

    def __init__(self, messages: bool = False, copy_only: bool = False) -> None:
        import duckdb

        self.tmp = Path(tempfile.mkdtemp(prefix="econarena-analysis-"))
        # a store kept only to write its copy (the run's follower, analysis/follow.py): one engine thread, as it
        # plays beside the run and writes the copy while a report waits for it (a second thread slowed its
        # finish on two shared cores, 57,600 games: UPDATE 0.4 -> 0.8 s), and the copies written under
        # FINISH_LIMIT (under MEMORY_LIMIT the players' COPY took 0.6 s, not 0.2 s)
        self.copy_only = copy_only
        self.threads = threads = 1 if copy_only else max(1, min(2, os.cpu_count() or 1))
        self.con = duckdb.connect(str(self.tmp / "study.duckdb"), config={
            "threads": threads, "memory_limit": MEMORY_LIMIT, "temp_directory": str(self.tmp / "spill"),
            "preserve_insertion_order": True})
        self.messages = messages
        dec_types = {**_DECISION_TYPES, **({"messages": "string"} if messages else {})}
        # the rows read from logs (and from small copies) go into the ``*_log`` tables; the names the queries
        # use (players, runs, decisions) are views made by ``finish``: those rows and the copies read in place,
        # directory by directory in the scan's order (``UNION ALL`` keeps it: the exports' row order)
        for name, types in (("players", _PLAYER_TYPES), ("runs", _RUN_TYPES), ("decisions", dec_types)):
            cols = ", ".join(f'"{c}" {_SQL[t]}' for c, t in types.items())
            if name == "players":  # a player-run's decisions, counted after the decisions are read (finish)
                cols += (", decisions BIGINT DEFAULT 0, violations BIGINT DEFAULT 0, tokens_in BIGINT DEFAULT 0,"
                         " tokens_out BIGINT DEFAULT 0, latency_s DOUBLE DEFAULT 0.0, structured VARCHAR")
            self.con.execute(f"CREATE TABLE {name}_log ({cols})")
        self.con.execute("CREATE TABLE reasoning (" + ", ".join(f'"{c}" {_SQL[t]}' for c, t in
                                                                _REASONING_TYPES.items()) + ")")
        self.reasoning = _Buffer(self, "reasoning", _REASONING_TYPES)
        self.has_reasoning = False
        self.players = _Buffer(self, "players_log", _PLAYER_TYPES)
        self.runs = _Buffer(self, "runs_log", _RUN_TYPES)
        self.decisions = _Buffer(self, "decisions_log", dec_types)
        self.experiments: list[dict[str, Any]] = []
        self.dirs: list[Dir] = []
        self.copy_name = "store-messages" if messages else "store"
        self._restored: set[int] = set()  # directories read from their copy: their counts are in their rows
        # directories whose copy is read in place: table -> (the snapshot of its file, its first row number)
        self._in_place: dict[int, dict[str, tuple[Path, int]]] = {}
        self._branches: dict[tuple[str, int], str] = {}  # (table, directory) -> its rows read in place (SQL)
        self._to_copy: list[tuple[Dir, Any, dict[str, Any]]] = []  # copies written once the counts are in
        self._scales: list[float] = []
        self._complete = self._incomplete = 0
        self.closed = False

    # ---------------------------------------------------------------------------------- the scan

    def begin(self, d: Dir) -> bool:
        try:
            d.name.encode("utf-8")
        except UnicodeEncodeError:  # bytes of another encoding in a name: no table, CSV or page can hold it
            raise LogError(f"{storable(d.name)}: the directory's path is not UTF-8 text, which the tables, exports "
                           "and pages name it in; rename it, or link it under a UTF-8 name (ln -s) and name the "
                           "link") from None
        self._scales, self._complete, self._incomplete = [], 0, 0
        self._game = d.game_name
        self._rational = d.exp.get("environment", "melee") == "rational"
        found = GAMES.get(self._game)
        self._stakes = found.info.stakes_key if found is not None else None
        self._scale_key = found.info.scale_key if found is not None else None
        self._params: dict[Any, tuple[float, str]] = {}  # a cell's parameters, met again in each of its runs
        return True

    def _setup(self, params: dict[str, Any]) -> tuple[float, str]:
        """(stakes, params as JSON text) of a run's parameters, once per distinct parameters."""
        try:
            key: Any = tuple((k, type(v), v) for k, v in params.items())
            return self._params[key]
        except TypeError:  # a list among them: computed each time
            key = None
        except KeyError:
            pass
        x = params.get(self._stakes) if self._stakes else None
        if not self._stakes:
            scale = math.nan
        elif isinstance(x, (list, tuple)):
            vals = [float(v) for v in x if v is not None]
            scale = float(np.mean(vals)) if vals else math.nan
        else:
            scale = float(x) if x is not None else math.nan
        found = (scale, json.dumps(params, sort_keys=True))
        if key is not None and len(self._params) < 10_000:
            self._params[key] = found
        return found

    def run(self, d: Dir, number: int, rec: dict[str, Any]) -> None:
        lineup, session, run = rec.get("lineup", "melee"), rec["session"], rec["run"]
        params = rec.get("params") or {}
        scale, text = self._setup(params)
        complete = bool(rec.get("complete", True))
        labels = rec.get("labels", [])
        self.runs.add((self.runs.rows, d.index, lineup, session, run, complete, bool(rec.get("void", False)),
                       _int(rec.get("rounds")), len(labels), scale, text))
        if not complete:
            self._incomplete += 1
            return
        self._complete += 1
        self._scales.append(scale)
        winners = rec.get("winners") or ()
        n = len(labels)
        valid_, payoffs, deviation = rec["valid"], rec["payoffs"], rec["deviation"]
        first = rec.get("first_valid")
        first = first if isinstance(first, list) else None
        cut = rec.get("truncated")  # seats whose unusable replies were all cut at max_tokens: no rule break
        cut = cut if isinstance(cut, list) else None                                        # (tally.broke)
        actions, ne_actions, ne_payoffs = rec.get("actions"), rec.get("ne_actions"), rec.get("ne_payoffs")
        agents, models, private = rec.get("agents"), rec.get("models"), rec.get("private_values")
        assets = params.get("assets")
        a_value = params.get(self._scale_key) if self._scale_key is not None else None
        void = bool(rec.get("void"))
        rational = self._rational
        add, rows = self.players.add, self.players.rows
        for i, label in enumerate(labels):
            if self._scale_key is None:
                a_scale = math.nan
            else:
                a_scale = _f(_at(a_value, i)) if isinstance(a_value, list) else _f(a_value)
            valid = bool(valid_[i])
            action = _f(_at(actions, i)) if valid else math.nan
            ne_action = _f(_at(ne_actions, i))
            first_ok = bool(first[i]) if first is not None and i < len(first) else True
            cut_only = cut is not None and i < len(cut) and cut[i] is True
            payoff = _f(payoffs[i])
            add((rows + i, d.index, lineup, session, run, i, label, _text(_at(agents, i)),
                 _text(_at(models, i)),
                 "opponent" if rational and label != lineup else "player", n, action, ne_action, a_scale,
                 action / a_scale if a_scale else math.nan, ne_action / a_scale if a_scale else math.nan,
                 valid, not first_ok or (not valid and not cut_only), payoff if valid else 0.0, payoff,
                 _f(_at(ne_payoffs, i)), _f(deviation[i]) if valid else math.nan, i in winners, void,
                 _f(_at(private, i)), _f(_at(assets, i))))

    def decision(self, d: Dir, rec: dict[str, Any]) -> None:
        label = rec.get("label")
        row: tuple[Any, ...] = (self.decisions.rows, d.index, rec.get("lineup", "melee"), rec["session"], rec["run"],
               _int(rec.get("round")), rec.get("player"), label, _text(rec.get("agent")),
               _text(rec.get("model")),
               "opponent" if self._rational and label != rec.get("lineup", "melee") else "player",
               _text(rec.get("template")), _text(rec.get("response")), json_text(rec.get("action")),
               bool(rec.get("valid")), _text(rec.get("violation")), _text(rec.get("detail")),
               _f(rec.get("latency_s")), _f(rec.get("tokens_in")), _f(rec.get("tokens_out")),
               bool(rec.get("cached")), _text(rec.get("error")), _text(rec.get("structured")))
        if self.messages:
            row = (*row, json.dumps(rec.get("messages")))
        if ("reasoning" in rec or "reasoning_tokens" in rec or "reasoning_effort" in rec
                or "reasoning_budget" in rec):
            text = rec.get("reasoning")
            effort = rec.get("reasoning_effort")
            self.reasoning.add((self.decisions.rows, effort if isinstance(effort, str) else None,
                                _f(rec.get("reasoning_budget")), _f(rec.get("reasoning_tokens")),
                                rec.get("reasoning_hidden") is True, len(text) if isinstance(text, str) else 0))
        self.decisions.add(row)

    def end(self, d: Dir) -> None:
        scales = np.asarray(self._scales, dtype=float)
        scale = float(np.nanmedian(scales)) if len(scales) and not np.isnan(scales).all() else math.nan
        self.experiments.append(experiment_row(d, scale, self._complete, self._incomplete))
        self.dirs.append(d)

    # ------------------------------------------------------------------- the columnar copy (columnar.py)

    # 3: the files in row order (a copy of 2 could hold a few rows out of it: DuckDB 2.0, see _write_copies)
    copy_version = (f"3:{sorted(_REASONING_TYPES.items())}:{sorted(_PLAYER_TYPES.items())}:"
                    f"{sorted(_RUN_TYPES.items())}:{sorted(_DECISION_TYPES.items())}")

    def save(self, d: Dir, copy: Any) -> None:
        """The directory's rows go into its copy once ``finish`` has counted its decisions."""
        scales = np.asarray(self._scales, dtype=float)
        scale = float(np.nanmedian(scales)) if len(scales) and not np.isnan(scales).all() else None
        self._to_copy.append((d, copy, {"scale": scale, "complete": self._complete,
                                        "incomplete": self._incomplete}))

    def restore(self, d: Dir, copy: Any) -> None:
        """The directory's rows from its copy, numbered after the rows already in (log order kept): a large
        copy without reasoning is read in place from a snapshot of its files (a hard link where the file
        system allows: a copy rewritten meanwhile by another process leaves the snapshot as it was), the rest
        inserted."""
        info = copy.info(self.copy_name)
        first_decision = self.decisions.rows
        changed = LogError(f"{d.path}: its columnar copy ({copy.folder}) changed while it was read (another "
                           "analysis rewrote it); run the command again")
        try:
            sizes = {t: int(self.con.execute(f"SELECT count(*) FROM read_parquet("
                                             f"'{_quote(copy.path(self.copy_name, t))}')").fetchall()[0][0])
                     for t in TABLES}
        except Exception as exc:  # noqa: BLE001 - removed or rewritten by another process since it was checked
            if engine_interrupted(exc):  # Ctrl-C during the count, not a copy rewritten meanwhile
                raise KeyboardInterrupt from exc
            raise changed from None
        in_place = not info.get("reasoning") and sizes["decisions"] >= IN_PLACE
        for table, buf in zip(TABLES, (self.players, self.runs, self.decisions)):
            if in_place:
                snapshot = self.tmp / f"copy-{d.index}-{table}.parquet"
                try:
                    _snapshot(copy.path(self.copy_name, table), snapshot)
                except OSError:
                    raise changed from None
                if not copy.unchanged(self.copy_name, table, snapshot):  # rewritten since it was checked
                    raise changed
                self._in_place.setdefault(d.index, {})[table] = (snapshot, buf.rows)
                buf.rows += sizes[table]
                continue
            buf.flush()
            path = _quote(copy.path(self.copy_name, table))
            n = self.con.execute(f"""INSERT INTO {buf.table} BY NAME SELECT * EXCLUDE (row_in_dir),
                {buf.rows} + row_in_dir AS row, {int(d.index)}::INTEGER AS dir
                FROM read_parquet('{path}')""").fetchall()[0][0]
            buf.rows += int(n)
        if info.get("reasoning"):  # its decisions' reasoning, numbered as its decisions were just now
            self.reasoning.flush()
            path = _quote(copy.path(self.copy_name, "reasoning"))
            n = self.con.execute(f"""INSERT INTO reasoning BY NAME SELECT * EXCLUDE (row_in_dir),
                {first_decision} + row_in_dir AS row FROM read_parquet('{path}')""").fetchall()[0][0]
            self.reasoning.rows += int(n)
        self._restored.add(d.index)
        scale = info["scale"]
        self.experiments.append(experiment_row(d, math.nan if scale is None else float(scale), int(info["complete"]),
                                               int(info["incomplete"])))
        self.dirs.append(d)

    def _write_copies(self) -> None:
        # the reasoning columns joined into the decisions (a study with reasoning) are kept apart in the copy,
        # as the reading keeps them, so a copy restores into a study with or without reasoning alike
        joined = "".join(f', "{c}"' for c in REASONING_COLUMNS) if self.has_reasoning else ""
        for d, copy, info in self._to_copy:
            tables: dict[str, Callable[[Path], None]] = {}  # part name -> its writer
            first = f"(SELECT min(row) FROM decisions_log WHERE dir = {d.index})"
            for table in TABLES:
                def write(path: Path, table: str = table, i: int = d.index) -> None:
                    # each row's place among the directory's rows (log order); the file in that order, which
                    # readers stream (DuckDB 2.0's scan of a table the follower filled returned a few rows of
                    # 3.2 million last: the file is checked, and written again sorted where that happened)
                    extra = joined if table == "decisions" else ""
                    query = f"""SELECT * EXCLUDE (row, dir{extra}), row - (SELECT min(row) FROM {table}_log WHERE
                        dir = {i}) AS row_in_dir FROM {table}_log WHERE dir = {i}"""
                    self.con.execute(f"COPY ({query}) TO '{_quote(path)}' (FORMAT parquet)")
                    if not _in_row_order(path):
                        self.con.execute(f"COPY ({query} ORDER BY row) TO '{_quote(path)}' (FORMAT parquet)")
                tables[table] = write
            n = self.con.execute(f"""SELECT count(*) FROM reasoning r JOIN decisions_log x ON r.row = x.row
                WHERE x.dir = {d.index}""").fetchall()[0][0] if self.has_reasoning else 0
            if n:
                def write_reasoning(path: Path, i: int = d.index, first: str = first) -> None:
                    self.con.execute(f"""COPY (SELECT r.* EXCLUDE (row), r.row - {first} AS row_in_dir
                        FROM reasoning r JOIN decisions_log x ON r.row = x.row WHERE x.dir = {i} ORDER BY r.row)
                        TO '{_quote(path)}' (FORMAT parquet)""")
                tables["reasoning"] = write_reasoning
            copy.put(self.copy_name, self.copy_version, tables, {**info, "reasoning": int(n)})
        self._to_copy = []

    def finish(self) -> Store:
        """After the scan: the last batches in, the directories' table and the player-runs' decision counts."""

        for b in (self.players, self.runs, self.decisions, self.reasoning):
            b.flush()
        if self.reasoning.rows:  # the reasoning columns join the decisions only in a study that has them
            self.has_reasoning = True
            for c in REASONING_COLUMNS:
                self.con.execute(f'ALTER TABLE decisions_log ADD COLUMN "{c}" {_SQL[_REASONING_TYPES[c]]}')
            self.con.execute("UPDATE decisions_log SET " + ", ".join(f'"{c}" = r."{c}"' for c in REASONING_COLUMNS)
                             + " FROM reasoning r WHERE decisions_log.row = r.row")
        # per player-run: decisions, rule breaks, tokens and latency in log order (the loop of load() added
        # latencies one by one: the engine adds them in that order too), the last constrained mode; written
        # into the players' own rows (an UPDATE keeps their order: no join or sort left for the exports).
        # Counted a directory and a range of sessions at a time (a run never spans two), so the engine's
        # ordered sums never hold more than ~USAGE_CHUNK decisions under its memory limit.
        self.con.execute(f"SET memory_limit = '{FINISH_LIMIT}'")  # an UPDATE keeps its changes in memory
        for d in self.dirs:                                         # until a checkpoint writes them out
            if d.index in self._restored:
                continue
            n, top = self.con.execute("SELECT count(*), max(session) FROM decisions_log WHERE dir = ?",
                                      [d.index]).fetchall()[0]
            if not n:
                continue
            step = max(1, (int(top) + 1) * USAGE_CHUNK // int(n))
            for lo in range(0, int(top) + 1, step):
                self.con.execute("""
                    UPDATE players_log SET decisions = u.decisions, violations = u.violations, tokens_in = u.tokens_in,
                        tokens_out = u.tokens_out, latency_s = u.latency_s, structured = u.structured
                    FROM (SELECT dir, lineup, session, run, player AS seat, count(*) AS decisions,
                            count(*) FILTER (WHERE violation <> 'truncated') AS violations,
                            sum(coalesce(tokens_in, 0))::BIGINT AS tokens_in,
                            sum(coalesce(tokens_out, 0))::BIGINT AS tokens_out,
                            sum(coalesce(latency_s, 0.0) ORDER BY row) AS latency_s,
                            arg_max(structured, row) FILTER (WHERE structured IS NOT NULL AND structured <> 'off')
                                AS structured
                          FROM decisions_log WHERE dir = ? AND session >= ? AND session < ? GROUP BY ALL) u
                    WHERE players_log.dir = u.dir AND players_log.lineup = u.lineup
                        AND players_log.session = u.session AND players_log.run = u.run
                        AND players_log.seat = u.seat""", [d.index, lo, lo + step])
                self.con.execute("CHECKPOINT")
        if not self.copy_only:
            self.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        self._write_copies()
        self.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        self._views()
        return self

    def _views(self) -> None:
        """The tables the queries read: each a view of the ``*_log`` rows and the copies read in place, a
        branch per run of directories of one kind, in the directories' order (so in row order). Each copy's
        branch is kept for ``relation``."""
        for table in TABLES:
            if not self._in_place:
                self.con.execute(f"CREATE VIEW {table} AS SELECT * FROM {table}_log")
                continue
            types = [(r[0], r[1]) for r in self.con.execute(f"DESCRIBE {table}_log").fetchall()]
            branches: list[str] = []
            logged: list[int] = []
            for d in [*self.dirs, None]:
                if d is not None and d.index not in self._in_place:
                    logged.append(d.index)
                    continue
                if logged:  # the directories read from logs since the last copy read in place
                    branches.append(f"SELECT * FROM {table}_log WHERE dir BETWEEN {logged[0]} AND {logged[-1]}")
                    logged = []
                if d is not None:
                    # the copy's rows with the columns (and their order) of the ``*_log`` table
                    path, first = self._in_place[d.index][table]
                    source = f"read_parquet('{_quote(path)}')"
                    have = {r[0] for r in self.con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
                    cols = [f"{first} + row_in_dir AS row" if c == "row" else f"{int(d.index)}::INTEGER AS dir"
                            if c == "dir" else f'"{c}"' if c in have else f'NULL::{t} AS "{c}"' for c, t in types]
                    self._branches[(table, d.index)] = f"SELECT {', '.join(cols)} FROM {source}"
                    branches.append(self._branches[(table, d.index)])
            self.con.execute(f"CREATE VIEW {table} AS " + " UNION ALL ".join(branches))

    @contextlib.contextmanager
    def lean(self) -> Iterator[None]:
        """One engine thread and a lower memory limit while inside: for the streamed passes (the metrics'
        sessions, the exports), whose rows come out in order anyway. Each of the engine's threads frees
        its work into a malloc arena of its own, which the process keeps: two threads cost the report
        ~50 MB of its peak (57,600 GLEE games) and saved no CPU time there."""
        self.con.execute(f"SET threads = 1; SET memory_limit = '{LEAN_LIMIT}'")
        try:
            yield
        finally:
            self.con.execute(f"SET threads = {self.threads}; SET memory_limit = '{MEMORY_LIMIT}'")

    def relation(self, table: str, d: int) -> str:
        """One directory's rows of ``table`` as a subquery: its copy's file when read in place, else its
        rows of the ``*_log`` table. Per-directory queries use it rather than the view, whose plan has a
        branch for every copy read in place (planning alone: 0.2 s a query with a thousand of them)."""
        if (table, d) in self._branches:
            return f"({self._branches[(table, d)]})"
        return f"(SELECT * FROM {table}_log WHERE dir = {int(d)})"

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.con.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------------------ exports, frames

    def _rows(self, table: str, middle: tuple[str, ...], columns: str, where: str = "", con: Any = None) -> Any:
        """A table's export columns, a stream of Arrow batches with rows in insertion (log) order: the
        settings, lineup, cell (where the study has a grid), session, run, ``middle``, the sessions' keys
        (``cluster``, ``stratum``), ``columns``. The engine streams the stored columns only (no join, no
        sort, so the rows come out in the order they went in); the columns made from a row's directory and
        lineup are made here from one value per directory or lineup, taken per row (as SQL expressions they
        were two thirds of the engine's time for the decisions' export: 7 of 11 s at 587,400 games)."""
        import pyarrow as pa

        inner = "".join(f'"{m}", ' for m in middle)
        reader = (con or self.con).sql(f"SELECT dir, lineup, session, run, {inner}{columns} FROM {table} {where}"
                              ).to_arrow_reader(EXPORT_BATCH)
        keys = _Keys(self.experiments, [grid_of(d) for d in self.dirs])
        stored = list(reader.schema)
        text = pa.string()
        head = 4 + len(middle)  # dir, lineup, session, run, middle
        fields = [*(pa.field(c, text) for c in SETTING_COLUMNS), stored[1],
                  *([pa.field("cell", text)] if keys.grid else []), *stored[2:head],
                  pa.field("cluster", text), pa.field("stratum", text), *stored[head:]]
        schema = pa.schema(fields)

        def batches() -> Iterator[Any]:
            try:
                for batch in reader:
                    yield pa.RecordBatch.from_arrays(keys.columns(batch, head), schema=schema)
            finally:
                reader.close()
        return pa.RecordBatchReader.from_batches(schema, batches())

    def _players_rows(self, where: str = "", con: Any = None) -> Any:
        return self._rows("players", (), """seat, label, agent, model, role, n_players, action, ne_action, scale,
            action_norm, ne_action_norm, valid, broke, payoff, game_payoff, ne_payoff, deviation, win, void,
            private_value, assets, decisions, violations, tokens_in, tokens_out, latency_s, structured""", where, con)

    def _runs_rows(self, where: str = "", con: Any = None) -> Any:
        return self._rows("runs", (), "complete, void, rounds, n_players, scale, params", where, con)

    def _decisions_rows(self, where: str = "", con: Any = None) -> Any:
        extra = (", messages" if self.messages else "") + (
            "".join(f", {c}" for c in REASONING_COLUMNS) if self.has_reasoning else "")
        return self._rows("decisions", ("round",), f"""player, label, agent, model, role, template, response,
            action, valid, violation, detail, latency_s, tokens_in, tokens_out, cached, error,
            structured{extra}""", where, con)

    def export(self, out: Path, con: Any = None, stop: Any = None) -> list[Path]:
        """``decisions.parquet``, ``runs.parquet`` and ``players.parquet``, streamed from the engine's tables
        in batches to a parquet writer (never a whole table in memory, nothing sorted). ``con``: a cursor of
        the store's connection, for an export on a thread of its own; ``stop``: an event that ends it (an
        error) at the next batch once set."""
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, rows in (("decisions.parquet", self._decisions_rows), ("runs.parquet", self._runs_rows),
                           ("players.parquet", self._players_rows)):
            _write_parquet(out / name, rows(con=con), stop)
            written.append(out / name)
        return written

    def start_export(self, out: Path) -> Export:
        """:meth:`export` on a thread and a cursor of its own, begun now; its files from ``result()``."""
        return Export(self, out)

    def frames(self, dirs: Sequence[int] | None = None) -> Any:
        """The pandas frames of ``load`` for these directories (all by default): for the figures and the
        comparisons of the experiments no family analyses, and for callers of ``load``."""
        import pandas as pd

        where = "" if dirs is None else f"WHERE dir IN ({', '.join(str(int(i)) for i in dirs) or '-1'})"
        keep = set(range(len(self.dirs))) if dirs is None else set(dirs)

        def frame(rows: Any) -> pd.DataFrame:
            df = rows.read_all().to_pandas()
            for col in ("session", "run"):
                df[col] = df[col].astype("int64")
            if "cell" not in df.columns and "lineup" in df.columns:  # no grid: every row in the one cell ""
                df.insert(int(df.columns.get_loc("lineup")) + 1, "cell", "")
            for col in df.columns:  # a text column with no value at all: None, as pandas made it from rows
                if df[col].dtype == "str" and df[col].isna().all():
                    df[col] = pd.Series([None] * len(df), index=df.index, dtype=object)
            return df

        exps = pd.DataFrame([e for i, e in enumerate(self.experiments) if i in keep],
                            columns=list(self.experiments[0]) if self.experiments else None)
        return Frames(frame(self._players_rows(where)), frame(self._runs_rows(where)),
                      frame(self._decisions_rows(where)),
                      exps,
                      [d.name for d in self.dirs if d.index in keep],
                      {d.name: factors(d.config) for d in self.dirs if d.index in keep and grid_of(d)})

    def query(self, sql: str, params: Sequence[Any] = ()) -> dict[str, np.ndarray]:
        return self.con.execute(sql, list(params)).fetchnumpy()

    def count(self, table: str) -> int:
        return int(self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])


# the export columns written without statistics: long free text (replies, keys, parameters), whose min and
# max no reader filters on; computing them was a fifth of the decisions' writing
NO_STATISTICS = frozenset({"lineup", "cluster", "stratum", "response", "action", "detail", "template", "error",
                           "structured", "run_dir", "params", "messages"})


@contextlib.contextmanager
def read_ahead(reader: Any, depth: int, name: str) -> Iterator[Iterator[Any]]:
    """The reader's batches, made on a thread called ``name`` up to ``depth`` ahead while the caller uses
    them (the engine and the parquet writer or numpy all let go of the interpreter, so the two overlap).
    The reader's error is raised where the batches are read; leaving early (an error, Ctrl-C, a caller done)
    stops the thread after the batch it is making, and the reader is closed."""
    import queue
    import threading

    found: queue.Queue[Any] = queue.Queue(maxsize=depth)
    failed: list[BaseException] = []
    stop = threading.Event()

    def produce() -> None:
        try:
            for batch in reader:
                if stop.is_set():
                    return
                found.put(batch)
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread, raised there
            failed.append(exc)
        finally:
            found.put(None)

    def batches() -> Iterator[Any]:
        while (batch := found.get()) is not None:
            yield batch
        if failed:
            raise failed[0]

    worker = threading.Thread(target=produce, name=name, daemon=True)
    worker.start()
    try:
        yield batches()
    finally:
        stop.set()
        while worker.is_alive():  # let the thread see the stop (the queue emptied under it)
            with contextlib.suppress(queue.Empty):
                found.get(timeout=0.05)
        reader.close()


class _Keys:
    """The export columns made from a row's directory (its settings) and lineup (its cell, its sessions'
    keys), one batch at a time: each directory's values once, each lineup's cell once, then per row an
    Arrow take or join (the strings SQL expressions per row made before, :func:`cell_of`'s cells)."""

    def __init__(self, experiments: Sequence[dict[str, Any]], grids: Sequence[bool]) -> None:
        import pyarrow as pa

        self.settings = [pa.array([str(e[c]) for e in experiments], pa.string()) for c in SETTING_COLUMNS]
        self.grid = any(grids)
        self.flags = pa.array(list(grids), pa.bool_())
        self.lineups: list[str] = []
        self.known = pa.array([], pa.string())
        self.cells = pa.array([], pa.string())

    def columns(self, batch: Any, head: int) -> list[Any]:
        """The export's arrays of one batch of ``dir, lineup, session, run, middle..., columns...``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        where, lineup, session = batch.column(0), batch.column(1), batch.column(2)
        settings = [pc.take(values, where) for values in self.settings]
        run_dir = settings[0]
        cell = [self._cells(lineup, where)] if self.grid else []
        cluster = pc.binary_join_element_wise(run_dir, lineup, pc.cast(session, pa.string()), "|")
        stratum = pc.binary_join_element_wise(run_dir, lineup, "|")
        return [*settings, lineup, *cell, *batch.columns[2:head], cluster, stratum, *batch.columns[head:]]

    def _cells(self, lineup: Any, where: Any) -> Any:
        """Each row's cell: its lineup's :func:`cell_of` where its directory played a grid, else ``""``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        codes = pc.index_in(lineup, value_set=self.known)
        new = pc.and_(pc.is_null(codes), pc.is_valid(lineup))
        if pc.any(new).as_py():
            self.lineups += pc.unique(pc.filter(lineup, new)).to_pylist()
            self.known = pa.array(self.lineups, pa.string())
            self.cells = pa.array([cell_of(x, True) for x in self.lineups], pa.string())
            codes = pc.index_in(lineup, value_set=self.known)
        cells = pc.if_else(pc.take(self.flags, where), pc.take(self.cells, codes), "")
        return pc.fill_null(cells, "")


def rows_follow(rows: np.ndarray, last: int) -> bool:
    """Whether ``rows`` increase and all come after ``last``: a batch of a table streamed in log order."""
    return not len(rows) or (rows[0] > last and (len(rows) < 2 or bool((rows[1:] > rows[:-1]).all())))


def _write_parquet(path: Path, batches: Any, stop: Any = None) -> None:
    """Write the batches to ``path``, a row group each: the engine makes them in a second thread while this
    one writes. A failed write (or Ctrl-C, or ``stop`` set) stops the engine's thread after the batch it is
    making."""
    import pyarrow.parquet as pq

    schema = batches.schema
    with read_ahead(batches, 4, "export") as found, pq.ParquetWriter(
            path, schema, write_statistics=[n for n in schema.names if n not in NO_STATISTICS]) as writer:
        for batch in found:
            if stop is not None and stop.is_set():
                raise RuntimeError(f"the export of {path.name} was stopped")
            writer.write_batch(batch)


class Export:
    """An export of a store running on a thread and a cursor of its own (:meth:`Store.start_export`).

    Why: a large study's export (587,400 GLEE games: 15 s) is the engine's reading and the parquet writer,
    which both let go of the interpreter, while the report's figures before it keep one core of two busy;
    side by side, the export is done by the time the figures are."""

    def __init__(self, store: Store, out: Path) -> None:
        import threading

        self.stop = threading.Event()
        self._con = store.con.cursor()
        self._files: list[Path] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(store, out), name="econarena-export", daemon=True)
        self._thread.start()

    def _run(self, store: Store, out: Path) -> None:
        try:
            self._files = store.export(out, con=self._con, stop=self.stop)
        except BaseException as exc:  # noqa: BLE001 - raised by result(), on the thread that waits for it
            self._error = exc
        finally:
            self._con.close()

    def result(self) -> list[Path]:
        """The written files, once the export is over; its error, if it failed."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._files

    def cancel(self) -> None:
        """Stop the export at its next batch and wait for its thread (a report that failed, or Ctrl-C)."""
        self.stop.set()
        self._thread.join()


def _in_row_order(path: Path) -> bool:
    """Whether a copy's file holds its rows in log order (``row_in_dir`` increasing), read a row group at a
    time: 3.2 million rows in about 0.1 s."""
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    last = -1
    for g in range(f.metadata.num_row_groups):
        rows = f.read_row_group(g, columns=["row_in_dir"]).column(0).to_numpy()
        if not rows_follow(rows, last):
            return False
        last = int(rows[-1]) if len(rows) else last
    return True


def _snapshot(source: Path, target: Path) -> None:
    """``target`` holds ``source`` as it is now: a hard link, or a copy across file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")
