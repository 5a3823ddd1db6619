"""GLEE's linear models (spec 1.7), for any game that declares regression factors (``GameInfo.factors``).

One OLS per (game, metric): ``metric ~ const + one-hot(factors) + one-hot(seat models)``. Each declared
factor is one-hot encoded with its reference level dropped (GLEE Table 8's baselines; a dict reference
merges several parameters into one variable, the paper's "market"); each seat's player (``p1_model``,
``p2_model``: the label by default, or the model name) is one-hot encoded with a reference player dropped
(the most frequent one unless named). An effect is a coefficient: the change of the metric against the
reference level, everything else equal. Reported x100 (percentage points of M, as the paper's tables) with
95% intervals coef +- 1.96 SE (the paper's normal interval; classical OLS standard errors).

Data: every complete run of the game in the run directories, read from ``runs.jsonl``: ``params`` give the
factor levels, ``labels``/``models`` the seats, ``metrics`` the outcomes. A per-seat metric (a list, e.g.
``"self_gain": [a, b]``) becomes one outcome per seat (``self_gain_p1``, ``self_gain_p2``); numeric scalars
are outcomes as they are; booleans and text are not modelled. As GLEE's pipeline: runs in which a seat broke
a rule are left out (GLEE never saved an aborted game), ``efficiency`` and ``fairness`` are clipped to
[0, 1], and a run with no value for a metric (None / NaN: undefined, e.g. persuasion efficiency when no
round was high quality) is left out of that metric's model only.

A level absent from the data cannot be a reference: the first level present is used and a note says so.
Columns that are linear combinations of earlier ones (e.g. only self-play, so p2_model = p1_model) cannot be
estimated and are dropped with a note, never silently given a minimum-norm value.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import sys
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...formats.csvcells import csv_text
from ...formats.rundir import RUNS, LogError, complete_runs, game_name, read_jsonl
from ...games import GAMES
from ...games.base import Setup
from ..cells import cell_of, cell_rank, grid_of, study_factors
from ..load import expand_run_dirs
from ..scan import Base, Dir
from .metagame import pure_equilibria

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

Z95 = 1.959963984540054  # the normal 97.5% quantile: the paper's coef +- 1.96 SE
FAMILY = "glee"
CLIPPED = ("efficiency", "fairness")  # GLEE clips these to [0, 1] before fitting (analyze/ML.py::load_data)
PAYOFF_METRIC = "self_gain"  # the per-seat metric that pays the players of the model-choice meta-game
CSV_COLUMNS = ("game", "metric", "term", "level", "reference", "effect_x100", "low_x100", "high_x100",
               "se_x100", "p_value", "n", "r2")
PAIR_COLUMNS = ("game", "metric", "p1", "p2", "runs", "p1_mean", "p2_mean", "equilibrium")
CONST = "const"


class AnalysisError(ValueError):
    """Run directories that cannot be analysed as asked; the message names the file, key or value."""


def level(v: Any) -> str:
    """A parameter value as a level name: TOML spelling for booleans, 10 significant digits for floats
    (so 0.9 read back from a file equals the declared 0.9), text as it is."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.10g}"
    return str(v)


def _sort_key(name: str) -> tuple[int, float, str]:
    try:
        return (0, float(name), name)
    except ValueError:
        return (1, 0.0, name)


@dataclass(frozen=True)
class Factor:
    """One categorical regressor: a parameter, or several merged (``keys``), with its reference level."""

    name: str
    keys: tuple[str, ...]
    reference: str

    def level_of(self, params: Mapping[str, Any]) -> str | None:
        if any(k not in params for k in self.keys):
            return None
        if len(self.keys) == 1 and self.keys[0] == self.name:
            return level(params[self.name])
        return ", ".join(f"{k}={level(params[k])}" for k in self.keys)

    def sort_key(self, name: str) -> tuple[Any, ...]:
        if len(self.keys) == 1 and self.keys[0] == self.name:
            return _sort_key(name)
        return tuple(_sort_key(part.split("=", 1)[-1]) for part in name.split(", "))


def factors_of(declared: Sequence[tuple[str, Any]]) -> list[Factor]:
    """``GameInfo.factors`` as :class:`Factor` objects (see games/base.py for the declaration)."""
    out = []
    for name, ref in declared:
        if isinstance(ref, Mapping):
            keys = tuple(ref)
            out.append(Factor(name, keys, ", ".join(f"{k}={level(ref[k])}" for k in keys)))
        else:
            out.append(Factor(name, (name,), level(ref)))
    return out


class Codes:
    """Text values as small integers: ``names[codes[i]]`` is row i's value (a study's players or a factor's
    levels are a handful of names repeated over its games)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.codes = array("i")

    def code(self, name: str) -> int:
        c = self.index.get(name)
        if c is None:
            c = self.index[name] = len(self.names)
            self.names.append(name)
        return c

    def append(self, name: str) -> None:
        self.codes.append(self.code(name))

    def array(self) -> np.ndarray:
        return np.frombuffer(self.codes, dtype=np.int32) if len(self.codes) else np.zeros(0, dtype=np.int32)

    def value(self, i: int) -> str:
        return self.names[self.codes[i]]


@dataclass
class GameData:
    """The modelled runs of one game, as columns (one entry per run, directories in the order given and
    each directory's runs by (lineup, session, run)): the factor levels, each seat's player and the
    outcomes. ``rows`` gives them as one dict per run for code that wants rows; the models read columns,
    so a game of 200,000 runs is a few megabytes."""

    game: str
    family: str
    title: str
    factors: list[Factor]
    seats: int = 0
    metrics: list[str] = field(default_factory=list)  # outcome columns, in first-seen order
    dirs: list[str] = field(default_factory=list)
    dropped_invalid: int = 0
    levels: dict[str, Codes] = field(default_factory=dict)  # factor name -> its level per run
    players: list[Codes] = field(default_factory=list)  # per seat: the player per run
    values: dict[str, array] = field(default_factory=dict)  # outcome column -> value per run (NaN: none)
    origin: array = field(default_factory=lambda: array("i"))  # index into ``dirs`` per run
    lineups: Codes = field(default_factory=Codes)  # the lineup (table) of each run: ``lineup`` codes
    lineup: array = field(default_factory=lambda: array("i"))
    session: array = field(default_factory=lambda: array("q"))
    run: array = field(default_factory=lambda: array("q"))
    grid_dirs: set[int] = field(default_factory=set)  # indexes into ``dirs`` of the directories with a [grid]

    def __len__(self) -> int:
        return len(self.origin)

    def cells(self) -> tuple[list[str], np.ndarray]:
        """(cell names, each run's index into them): a run's [grid] cell read from its table's name
        (``analysis/cells.py``), ``""`` for a directory without a grid."""
        origin = np.frombuffer(self.origin, dtype=np.int32) if len(self.origin) else np.zeros(0, np.int32)
        lineup = np.frombuffer(self.lineup, dtype=np.int32) if len(self.lineup) else np.zeros(0, np.int32)
        if not self.grid_dirs:
            return [""], np.zeros(len(origin), dtype=np.int64)
        pairs, inverse = np.unique(np.stack([origin, lineup], axis=1), axis=0, return_inverse=True)
        names: list[str] = []
        code_of: dict[str, int] = {}
        codes = np.empty(len(pairs), dtype=np.int64)
        for k, (o, li) in enumerate(pairs):
            cell = cell_of(self.lineups.names[int(li)], int(o) in self.grid_dirs)
            codes[k] = code_of.setdefault(cell, len(names))
            if codes[k] == len(names):
                names.append(cell)
        return names, codes[np.asarray(inverse).reshape(-1)]

    def column(self, name: str) -> np.ndarray:
        """An outcome column as floats (NaN where a run has none)."""
        v = self.values.get(name)
        return np.frombuffer(v, dtype=float) if v is not None and len(v) else np.full(len(self), math.nan)

    def player_names(self) -> set[str]:
        return {seat.names[c] for seat in self.players for c in np.unique(seat.array())}

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One dict per run (``run_dir, lineup, session, run``, each factor, ``p1_model``..., outcomes)."""
        out = []
        for i in range(len(self)):
            row: dict[str, Any] = {"run_dir": self.dirs[self.origin[i]], "lineup": self.lineups.names[self.lineup[i]],
                                   "session": self.session[i], "run": self.run[i]}
            row.update({f.name: self.levels[f.name].value(i) for f in self.factors})
            row.update({f"p{k + 1}_model": seat.value(i) for k, seat in enumerate(self.players)})
            for m in self.metrics:
                x = self.values[m][i]
                if not (math.isnan(x) and _absent(x)):
                    row[m] = x
            out.append(row)
        return out


# An outcome a run does not have is a NaN with its own payload, apart from the NaN of a value it recorded
# as None (both are left out of every model; ``rows`` shows only the second, as the run recorded it).
_ABSENT = struct.unpack("<d", struct.pack("<Q", 0x7FF8DEADBEEF0001))[0]


def _absent(x: float) -> bool:
    return struct.pack("<d", x) == struct.pack("<d", _ABSENT)


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else math.nan


def _outcomes(metrics: Any, seats: int) -> dict[str, float]:
    """A run's ``metrics`` as outcome columns (see the module doc); None / NaN become NaN."""
    out: dict[str, float] = {}
    if not isinstance(metrics, Mapping):
        return out
    for name, v in metrics.items():
        if isinstance(v, (list, tuple)):
            if len(v) != seats or any(x is not None and _number(x) is None for x in v):
                continue
            for i, x in enumerate(v):
                out[f"{name}_p{i + 1}"] = math.nan if x is None else float(_number(x))  # type: ignore[arg-type]  # checked above
        elif v is None:
            out[name] = math.nan
        else:
            x = _number(v)
            if x is not None:
                out[name] = x
    for name in list(out):
        if base_metric(name) in CLIPPED and not math.isnan(out[name]):
            out[name] = min(1.0, max(0.0, out[name]))
    return out


def base_metric(column: str) -> str:
    """The metric an outcome column comes from: ``self_gain_p2`` -> ``self_gain``."""
    head, _, tail = column.rpartition("_p")
    return head if head and tail.isdigit() else column


def _game_name(run_dir: Path) -> str | None:
    return game_name(run_dir)


def players_of(run: Mapping[str, Any], by: str) -> list[str]:
    """Who sat in each seat: the label, or (``by="model"``) the model name where the seat had one."""
    labels = [str(x) for x in run.get("labels") or []]
    if by == "label":
        return labels
    models = run["models"] if isinstance(run.get("models"), list) else []
    return [str(models[i]) if i < len(models) and models[i] else lab for i, lab in enumerate(labels)]


def _ints(x: array | np.ndarray) -> np.ndarray:
    return np.frombuffer(x, dtype=np.int64 if x.typecode == "q" else np.int32) if isinstance(x, array) else x


class _DirRuns:
    """One directory's complete runs of a game while its log streams: numbers in arrays, text as codes."""

    def __init__(self, factors: int) -> None:
        self.lineup, self.session, self.run = array("i"), array("q"), array("q")
        self.seats, self.players, self.offset = array("i"), array("i"), array("q")
        self.valid = bytearray()
        self.levels = [array("i") for _ in range(factors)]
        self.missing: dict[int, list[str]] = {}
        self.values: dict[str, tuple[array, array]] = {}  # metric -> (values, place in the run's metrics)

    def __len__(self) -> int:
        return len(self.session)


class Collector(Base):
    """The scan's consumer for :func:`collect`: each directory's complete runs of a game with declared
    factors, kept as compact columns while the log streams and put in (lineup, session, run) order when the
    directory ends (the order the models have always read them in)."""

    def __init__(self, family: str | None = None, by: str = "label",
                 games: Mapping[str, Any] | None = None) -> None:
        self.family, self.by = family, by
        self.games = GAMES if games is None else games
        self.out: dict[str, GameData] = {}
        self.people = False  # a seat played by a person (GLEE's human games) somewhere
        self.error: AnalysisError | None = None  # the first directory that cannot be modelled, raised by result()
        # (game, metric) -> where it was first met, and whether as a number: a word where another run holds a
        # number would leave that run out of the metric's model in silence
        self._kinds: dict[tuple[str, str], tuple[bool, Path, int, Any]] = {}

    def begin(self, d: Dir) -> bool:
        name = d.game_name
        game = self.games.get(name) if name else None
        info = getattr(game, "info", None)
        if info is None or not info.factors or (self.family is not None and info.family != self.family):
            return False
        data = self.out.get(name)
        if data is None:
            data = self.out[name] = GameData(name, info.family, info.title, factors_of(info.factors))
            for f in data.factors:
                data.levels[f.name] = Codes()
        self.data: GameData = data  # the game of the directory being read
        self.name = name
        self.buf = _DirRuns(len(self.data.factors))
        self._keys = sorted({k for f in self.data.factors for k in f.keys})
        self._cells: dict[Any, tuple[int, ...]] = {}  # a cell's factor levels, met again in each of its runs
        return True

    def _levels(self, params: Mapping[str, Any], i: int) -> tuple[int, ...]:
        """Each factor's level code for these parameters (-1: a key is missing, noted for run ``i``)."""
        try:
            key: Any = tuple((type(params[k]), params[k]) if k in params else None for k in self._keys)
            return self._cells[key]
        except TypeError:
            key = None
        except KeyError:
            pass
        codes = []
        for f in self.data.factors:
            lev = f.level_of(params)
            if lev is None:
                self.buf.missing.setdefault(i, [k for k in f.keys if k not in params])
                key = None  # noted per run, never cached
            codes.append(-1 if lev is None else self.data.levels[f.name].code(lev))
        if key is not None and len(self._cells) < 100_000:
            self._cells[key] = tuple(codes)
        return tuple(codes)

    def run(self, d: Dir, number: int, r: dict[str, Any]) -> None:
        if not r.get("complete", True):
            return
        data, buf = self.data, self.buf
        i = len(buf)
        players = players_of(r, self.by)
        buf.lineup.append(data.lineups.code(r.get("lineup", "melee")))
        buf.session.append(r["session"])
        buf.run.append(r["run"])
        buf.seats.append(len(players))
        buf.offset.append(len(buf.players))
        while len(data.players) < len(players):
            data.players.append(Codes())
        for seat, p in zip(data.players, players):
            buf.players.append(seat.code(p))
        if HUMAN in players:
            self.people = True
        params = r["params"] if isinstance(r.get("params"), dict) else {}
        for level, code in zip(buf.levels, self._levels(params, i)):
            level.append(code)
        valid = all(bool(v) for v in r.get("valid") or [])
        buf.valid.append(valid)
        if isinstance(r.get("metrics"), Mapping):
            self._kinds_of(d, number, r["metrics"])
        if valid:
            for place, (m, x) in enumerate(_outcomes(r.get("metrics"), len(players)).items()):
                col = buf.values.get(m)
                if col is None:
                    col = buf.values[m] = (array("d", [_ABSENT]) * i, array("h", [0]) * i)
                col[0].append(x)
                col[1].append(place)
        for vals, places in buf.values.values():
            if len(vals) == i:
                vals.append(_ABSENT)
                places.append(0)

    def _kinds_of(self, d: Dir, number: int, metrics: Mapping[str, Any]) -> None:
        """Refuse a metric that is a word in one run and a number in another (of one game), naming both lines."""
        for name, v in metrics.items():
            if isinstance(v, bool) or v is None or isinstance(v, (list, tuple, Mapping)):
                continue
            numeric = isinstance(v, (int, float))
            if not numeric and not isinstance(v, str):
                continue
            seen = self._kinds.setdefault((self.name, name), (numeric, d.path / RUNS, number, v))
            if seen[0] != numeric:
                word, where = (v, f"line {number}") if not numeric else (seen[3], f"{seen[1]}: line {seen[2]}")
                other = f"line {number}" if numeric else f"{seen[1]}: line {seen[2]}"
                raise LogError(f"{d.path / RUNS}: 'metrics.{name}' of {self.name} is the word {str(word)[:40]!r} at "
                               f"{where} but a number at {other}: a run with a word there would drop out of the "
                               "metric's model in silence (edited by hand?)")

    # ------------------------------------------------------ the columnar copy (analysis/columnar.py)

    copy_name = "glee"

    @property
    def copy_version(self) -> str:
        """What the kept columns depend on besides the logs: who a seat is, the game's factors."""
        return f"2:{self.by}:{[(f.name, f.keys, f.reference) for f in self.data.factors]}"  # 2: words refused

    def save(self, d: Dir, copy: Any) -> None:
        """The directory's runs as read (before ``end`` orders them): numbers as they are, text as codes
        with their names, each outcome's bits as stored (a run without it keeps its marker)."""
        import pyarrow as pa

        buf, data = self.buf, self.data
        cols: dict[str, Any] = {"lineup": _ints(buf.lineup), "session": _ints(buf.session), "run": _ints(buf.run),
                                "seats": _ints(buf.seats), "offset": _ints(buf.offset),
                                "valid": np.frombuffer(bytes(buf.valid), dtype=np.uint8)}
        for k, col in enumerate(buf.levels):
            cols[f"level{k}"] = _ints(col)
        for k, (vals, places) in enumerate(buf.values.values()):
            cols[f"value{k}"] = np.frombuffer(vals, dtype=np.uint64) if len(vals) else np.zeros(0, np.uint64)
            cols[f"place{k}"] = np.frombuffer(places, dtype=np.int16) if len(places) else np.zeros(0, np.int16)
        info = {"lineups": data.lineups.names, "players": [seat.names for seat in data.players],
                "levels": [data.levels[f.name].names for f in data.factors], "metrics": list(buf.values),
                "missing": [[i, keys] for i, keys in buf.missing.items()]}
        copy.put(self.copy_name, self.copy_version, {
            "runs": pa.table({k: pa.array(np.asarray(v)) for k, v in cols.items()}),
            "players": pa.table({"player": pa.array(_ints(buf.players))})}, info)

    def restore(self, d: Dir, copy: Any) -> None:
        """The directory's runs from its copy, coded as reading them would have coded them (each name in
        the order it first appears), then ``end`` as after a read."""
        info, t = copy.info(self.copy_name), copy.table(self.copy_name, "runs")
        flat = copy.table(self.copy_name, "players").column("player").to_numpy().astype(np.int64)
        data, buf = self.data, _DirRuns(len(self.data.factors))
        col = {name: t.column(name).to_numpy() for name in t.column_names}
        seats, offset = col["seats"].astype(np.int64), col["offset"].astype(np.int64)
        while len(data.players) < (int(seats.max()) if len(seats) else 0):
            data.players.append(Codes())
        seat_of = np.arange(len(flat)) - np.repeat(offset, seats) if len(flat) else flat
        players = flat.copy()
        for s, names in enumerate(info["players"]):
            at = np.flatnonzero(seat_of == s)
            players[at] = _recode(flat[at], names, data.players[s])
            self.people = self.people or HUMAN in {names[c] for c in np.unique(flat[at])}
        buf.lineup.frombytes(_recode(col["lineup"], info["lineups"], data.lineups).astype(np.int32).tobytes())
        buf.session.frombytes(col["session"].astype(np.int64).tobytes())
        buf.run.frombytes(col["run"].astype(np.int64).tobytes())
        buf.seats.frombytes(seats.astype(np.int32).tobytes())
        buf.offset.frombytes(offset.tobytes())
        buf.players.frombytes(players.astype(np.int32).tobytes())
        buf.valid = bytearray(col["valid"].astype(np.uint8).tobytes())
        for k, (f, names) in enumerate(zip(data.factors, info["levels"])):
            buf.levels[k].frombytes(_recode(col[f"level{k}"], names, data.levels[f.name]).astype(np.int32).tobytes())
        buf.missing = {int(i): list(keys) for i, keys in info["missing"]}
        for k, m in enumerate(info["metrics"]):
            buf.values[m] = (array("d", col[f"value{k}"].astype(np.uint64).tobytes()),
                             array("h", col[f"place{k}"].astype(np.int16).tobytes()))
        self.buf = buf
        self.end(d)

    def end(self, d: Dir) -> None:
        try:
            if self.error is None:
                self._end(d)
        except AnalysisError as exc:
            self.error = exc
        self.buf = _DirRuns(0)

    def _end(self, d: Dir) -> None:
        data, name, buf = self.data, self.name, self.buf
        assert data is not None  # begin() found the game
        if not len(buf):
            return
        names = data.lineups.names
        lineup, session, run = _ints(buf.lineup), _ints(buf.session), _ints(buf.run)
        perm = np.array(sorted(range(len(buf)), key=lambda i: (names[lineup[i]], session[i], run[i])), dtype=np.int64)

        def where(i: int) -> str:
            return f"{d.path / RUNS}: run ({names[lineup[i]]}, {session[i]}, {run[i]})"

        seats = _ints(buf.seats)[perm]
        expected = data.seats or int(seats[0])
        bad = np.flatnonzero(seats != expected)
        if len(bad):
            i = int(perm[bad[0]])
            raise AnalysisError(f"{where(i)} has {seats[bad[0]]} seats, other runs of {name} have {expected}")
        data.seats = expected
        valid = np.frombuffer(bytes(buf.valid), dtype=np.uint8)[perm].astype(bool)
        data.dropped_invalid += int((~valid).sum())
        keep = perm[valid]
        for i in keep:
            if int(i) in buf.missing:
                raise AnalysisError(f"{where(int(i))}: 'params' has no "
                                    f"{', '.join(repr(x) for x in buf.missing[int(i)])} (a declared factor of {name})")
        if not len(keep):
            return
        n = len(data)
        for f, col in zip(data.factors, buf.levels):
            data.levels[f.name].codes.frombytes(_ints(col)[keep].astype(np.int32).tobytes())
        offsets = _ints(buf.offset)[keep]
        flat = _ints(buf.players)
        for s, seat in enumerate(data.players[:expected]):
            seat.codes.frombytes(flat[offsets + s].astype(np.int32).tobytes())
        first = {}
        for m, (vals, places) in buf.values.items():
            v = np.frombuffer(vals, dtype=float)[keep]
            present = np.flatnonzero(v.view(np.uint64) != np.float64(_ABSENT).view(np.uint64))
            if m not in data.values and len(present):
                first[m] = (int(present[0]), int(np.frombuffer(places, dtype=np.int16)[keep][present[0]]))
            if m in data.values or len(present):
                col = data.values.setdefault(m, array("d", [_ABSENT]) * n)
                col.frombytes(v.tobytes())
        data.metrics += sorted(first, key=lambda m: first[m])
        for col in data.values.values():
            if len(col) == n:
                col.frombytes(np.full(len(keep), _ABSENT).tobytes())
        data.origin.frombytes(np.full(len(keep), len(data.dirs), dtype=np.int32).tobytes())
        data.lineup.frombytes(lineup[keep].astype(np.int32).tobytes())
        data.session.frombytes(session[keep].tobytes())
        data.run.frombytes(run[keep].tobytes())
        if grid_of(d):  # its runs' tables name their [grid] cell
            data.grid_dirs.add(len(data.dirs))
        data.dirs.append(str(d.path))

    def result(self) -> dict[str, GameData]:
        if self.error is not None:
            raise self.error
        return {k: v for k, v in self.out.items() if len(v)}


def _recode(codes: np.ndarray, names: Sequence[str], target: Codes) -> np.ndarray:
    """Codes of another reading (into ``names``) as ``target``'s, each name coded in the order it first
    appears (as a reading codes them); -1 (no level) stays."""
    codes = np.asarray(codes, dtype=np.int64)
    known = codes >= 0
    present, first = np.unique(codes[known], return_index=True)
    table = np.full(len(names) + 1, -1, dtype=np.int64)
    for c in present[np.argsort(first, kind="stable")]:
        table[c] = target.code(names[c])
    return np.where(known, table[np.where(known, codes, len(names))], -1)


def collect(run_dirs: Iterable[str | Path], family: str | None = None, *, by: str = "label",
            games: Mapping[str, Any] | None = None) -> dict[str, GameData]:
    """The runs of every game with declared factors (of ``family``, if given), by game name: one read of
    each directory's ``runs.jsonl``, nothing else."""
    from ..scan import scan

    c = Collector(family, by, games)
    for w in scan(expand_run_dirs(run_dirs), [c]).warnings:  # a run met twice, a lone shard
        print(f"econarena: warning: {w}", file=sys.stderr)
    return c.result()


# ---------------------------------------------------------------------------------------------- fitting

@dataclass
class Fit:
    """One model's effects (rows with the :data:`CSV_COLUMNS`) and what had to be changed to fit it."""

    game: str
    metric: str
    n: int
    r2: float
    effects: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def model_reference(data: GameData, wanted: str | None = None) -> str:
    """The reference player: ``wanted`` if given, else the most frequent over all seats (ties by name)."""
    if wanted is not None:
        return wanted
    counts: Counter[str] = Counter()
    for seat in data.players:
        for code, n in enumerate(np.bincount(seat.array(), minlength=len(seat.names))):
            if n:
                counts[seat.names[code]] += int(n)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


PAIR = "pair"
PAIR_SEP = " | "


def _columns(data: GameData, keep: np.ndarray, pairs: bool) -> dict[str, tuple[list[str], np.ndarray]]:
    """Each term's (names, code per kept run): the factors, then the seats' players or their ordered pair."""
    cols = {f.name: (data.levels[f.name].names, data.levels[f.name].array()[keep]) for f in data.factors}
    seats = [(p.names, p.array()[keep]) for p in data.players]
    if pairs:
        names: list[str] = []
        index: dict[str, int] = {}
        combos = np.stack([c for _, c in seats], axis=1)
        uniq, inverse = np.unique(combos, axis=0, return_inverse=True)
        remap = np.zeros(len(uniq), dtype=np.int64)
        for u, combo in enumerate(uniq):
            name = PAIR_SEP.join(seats[i][0][c] for i, c in enumerate(combo))
            if name not in index:
                index[name] = len(names)
                names.append(name)
            remap[u] = index[name]
        cols[PAIR] = (names, remap[np.asarray(inverse).reshape(-1)])
    else:
        cols.update({f"p{i + 1}_model": seat for i, seat in enumerate(seats)})
    return cols


def _terms(data: GameData, cols: Mapping[str, tuple[list[str], np.ndarray]], model_ref: str, pairs: bool
           ) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(term, level, reference) of each dummy column, in order, and notes on replaced references."""
    out, notes = [], []
    specs: list[tuple[str, str, Callable[[str], tuple[Any, ...]]]] = [(f.name, f.reference, f.sort_key)
                                                                     for f in data.factors]
    if pairs:
        specs.append((PAIR, PAIR_SEP.join([model_ref] * data.seats), lambda s: (s,)))
    else:
        specs += [(f"p{i + 1}_model", model_ref, lambda s: (s,)) for i in range(data.seats)]
    for term, ref, key in specs:
        names, codes = cols[term]
        levels = sorted({names[c] for c in np.unique(codes)}, key=key)
        if ref not in levels:
            notes.append(f"{term}: reference level {ref!r} is absent from the data; {levels[0]!r} is used")
            ref = levels[0]
        out += [(term, lev, ref) for lev in levels if lev != ref]
    return out, notes


def _rank(X: np.ndarray, R: np.ndarray, cols: list[int]) -> int:
    """``np.linalg.matrix_rank(X[:, cols])`` from X's small triangular factor (X = QR: X's columns and R's
    have the same singular values), in microseconds instead of an SVD of every run; where a singular value
    lies within a factor 100 of the threshold (the two computations differ by rounding, some 1e-15), the
    matrix itself decides, so the answer is always the one matrix_rank gives."""
    s = np.linalg.svd(R[:, cols], compute_uv=False)
    tol = s.max() * max(X.shape[0], len(cols)) * np.finfo(s.dtype).eps
    if np.any((s > tol / 100) & (s < tol * 100)):
        return int(np.linalg.matrix_rank(X[:, cols]))
    return int((s > tol).sum())


@dataclass
class _Design:
    """What a fit needs besides the outcome, the same for every metric with the same runs kept: the dummy
    matrix, its identifiable columns and the statsmodels pseudo-inverse (GLEE's negotiation: 256,320 runs,
    an SVD and a QR per metric before)."""

    X: np.ndarray
    kept: list[tuple[str, str, str]]
    notes: list[str]
    ols: tuple[Any, ...] | None = None  # (pinv_wexog, normalized_cov_params, singular values, rank)


def _design(data: GameData, keep: np.ndarray, ref: str, pairs: bool) -> _Design:
    cols = _columns(data, keep, pairs)
    terms, notes = _terms(data, cols, ref, pairs)
    n = int(keep.sum())
    X = np.ones((n, 1 + len(terms)))
    for j, (term, lev, _ref) in enumerate(terms, 1):
        names, codes = cols[term]
        X[:, j] = codes == names.index(lev)
    keep_cols = [0]
    R = np.asarray(np.linalg.qr(X, mode="r"))  # mode "r": R alone (the stubs name one result type)
    for j in range(1, X.shape[1]):  # drop columns the others already explain (not identifiable)
        if _rank(X, R, keep_cols + [j]) > len(keep_cols):
            keep_cols.append(j)
        else:
            term, lev, _ = terms[j - 1]
            notes.append(f"{term}={lev}: not identifiable from these runs (collinear with other terms); left out")
    return _Design(X[:, keep_cols], [(CONST, "", "")] + [terms[j - 1] for j in keep_cols[1:]], notes)


def _ols(y: np.ndarray, d: _Design) -> Any:
    """``OLS(y, d.X).fit()``, the pseudo-inverse computed once per design: what ``fit`` does after it (the
    same products in the same order), so every number has the bits a fresh fit gives."""
    from statsmodels.regression.linear_model import OLS, OLSResults, RegressionResultsWrapper

    model = OLS(y, d.X)
    if d.ols is None:
        res = model.fit()
        d.ols = (model.pinv_wexog, model.normalized_cov_params, model.wexog_singular_values, model.rank)
        return res
    model.pinv_wexog, model.normalized_cov_params, model.wexog_singular_values, model.rank = d.ols
    model._df_model = float(model.rank - model.k_constant)
    model.df_resid = model.nobs - model.rank
    beta = np.dot(model.pinv_wexog, model.wendog)
    return RegressionResultsWrapper(OLSResults(model, beta, normalized_cov_params=model.normalized_cov_params))


def fit(data: GameData, metric: str, *, model_ref: str | None = None, pairs: bool = False,
        designs: dict[Any, _Design] | None = None) -> Fit:
    """OLS of ``metric`` on the one-hot factors and seat players (see the module doc).

    ``pairs``: one categorical ``pair`` (``p1 | p2``, the ordered pair of players) instead of one per seat,
    relative to the reference player's self-play (the paper's ``--models_interaction``). ``designs``: a
    dict shared by the fits of one ``data``, so metrics kept on the same runs share one design.
    """
    values = data.column(metric)
    keep = ~np.isnan(values)
    if not keep.any():
        return Fit(data.game, metric, 0, math.nan, [], [f"{metric}: no run has a value"])
    ref = model_reference(data, model_ref)
    key = (keep.tobytes(), ref, pairs)
    d = designs.get(key) if designs is not None else None
    if d is None:
        d = _design(data, keep, ref, pairs)
        if designs is not None:
            designs[key] = d
    y = values[keep]
    n, X, notes = len(y), d.X, list(d.notes)
    res = _ols(y, d)
    dof = n - X.shape[1]
    r2 = float(res.rsquared) if dof >= 0 and np.ptp(y) > 0 else math.nan
    effects = []
    for j, (term, lev, reference) in enumerate(d.kept):
        coef = float(res.params[j])
        se = float(res.bse[j]) if dof > 0 else math.nan
        p = float(res.pvalues[j]) if dof > 0 and se > 0 else math.nan
        effects.append({
            "game": data.game, "metric": metric, "term": term, "level": lev, "reference": reference,
            "effect_x100": 100 * coef, "low_x100": 100 * (coef - Z95 * se), "high_x100": 100 * (coef + Z95 * se),
            "se_x100": 100 * se, "p_value": p, "n": n, "r2": r2,
        })
    if dof <= 0:
        notes.append(f"{metric}: {n} run(s) for {X.shape[1]} coefficients: no standard errors")
    return Fit(data.game, metric, n, r2, effects, notes)


def fit_all(datas: Mapping[str, GameData], metrics: Sequence[str] | None = None, *,
            model_ref: str | None = None, pairs: bool = False) -> list[Fit]:
    """Every (game, metric) model; ``metrics`` names outcome columns or metric names (``self_gain`` fits
    ``self_gain_p1`` and ``self_gain_p2``)."""
    fits = []
    for name in sorted(datas):
        data = datas[name]
        chosen = data.metrics if not metrics else [m for m in data.metrics
                                                   if m in metrics or base_metric(m) in metrics]
        designs: dict[Any, _Design] = {}
        fits += [fit(data, m, model_ref=model_ref, pairs=pairs, designs=designs) for m in chosen]
    return fits


def effects_csv(fits: Sequence[Fit]) -> str:
    return csv_text(CSV_COLUMNS, (["" if isinstance(e[k], float) and math.isnan(e[k]) else e[k] for k in CSV_COLUMNS]
                                  for f in fits for e in f.effects))


def _num(x: float, digits: int = 1) -> str:
    if x is None or math.isnan(x):
        return "-"
    return f"{(x if round(x, digits) != 0 else 0.0):+.{digits}f}"  # no "-0.0" for rounding noise


def format_fit(f: Fit) -> str:
    """One model as text: each effect x100 with its 95% interval."""
    head = f"{f.game}: {f.metric} (n = {f.n}, R2 = {'-' if math.isnan(f.r2) else f'{f.r2:.3f}'}; effects x100)"
    lines = [head]
    width = max([len(f"{e['term']}={e['level']}") for e in f.effects] + [10])
    for e in f.effects:
        name = "const (all references)" if e["term"] == CONST else f"{e['term']}={e['level']}"
        ci = "" if math.isnan(e["se_x100"]) else f"  [{_num(e['low_x100'])}, {_num(e['high_x100'])}]"
        ref = "" if e["term"] == CONST else f"  vs {e['reference']}"
        lines.append(f"  {name:<{max(width, 22)}} {_num(e['effect_x100']):>8}{ci}{ref}")
    lines += [f"  note: {n}" for n in f.notes]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- model pairs

@dataclass
class PairTable:
    """Mean per-seat metric by ordered pair of players (rows: seat 1, columns: seat 2) and the pure
    equilibria of the meta-game in which each seat picks its player and is paid these means."""

    game: str
    metric: str
    rows: list[str]
    cols: list[str]
    p1: np.ndarray
    p2: np.ndarray
    runs: np.ndarray
    equilibria: list[tuple[int, int]]


def pair_table(data: GameData, metric: str = PAYOFF_METRIC) -> PairTable | None:
    """None unless the game has two seats and the per-seat ``metric`` (``<metric>_p1``/``_p2``)."""
    a, b = f"{metric}_p1", f"{metric}_p2"
    if data.seats != 2 or a not in data.metrics or b not in data.metrics:
        return None
    p1, p2 = data.players[0], data.players[1]
    c1, c2 = p1.array(), p2.array()
    rows_ = sorted({p1.names[c] for c in np.unique(c1)})
    cols_ = sorted({p2.names[c] for c in np.unique(c2)})
    va, vb = data.column(a), data.column(b)
    ok = ~(np.isnan(va) | np.isnan(vb))
    i = np.array([rows_.index(x) if x in rows_ else -1 for x in p1.names], dtype=int)[c1[ok]]
    j = np.array([cols_.index(x) if x in cols_ else -1 for x in p2.names], dtype=int)[c2[ok]]
    sums = np.zeros((2, len(rows_), len(cols_)))
    n = np.zeros((len(rows_), len(cols_)), dtype=int)
    np.add.at(sums[0], (i, j), va[ok])  # run by run, in order: the sums the loop over rows made
    np.add.at(sums[1], (i, j), vb[ok])
    np.add.at(n, (i, j), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(n > 0, sums / np.maximum(n, 1), np.nan)
    return PairTable(data.game, metric, rows_, cols_, means[0], means[1], n, pure_equilibria(means[0], means[1]))


def pairs_csv(tables: Sequence[PairTable]) -> str:
    return csv_text(PAIR_COLUMNS, ([t.game, t.metric, r, c, int(t.runs[i, j]), t.p1[i, j], t.p2[i, j],
                                    str((i, j) in set(t.equilibria)).lower()]
                                   for t in tables for i, r in enumerate(t.rows) for j, c in enumerate(t.cols)
                                   if t.runs[i, j]))


def format_equilibria(t: PairTable) -> str:
    if not t.equilibria:
        return f"{t.game}: model-choice meta-game on {t.metric}: no pure equilibrium among the observed pairs"
    eqs = "; ".join(f"({t.rows[i]}, {t.cols[j]})" for i, j in t.equilibria)
    return f"{t.game}: model-choice meta-game on {t.metric}: pure equilibria (p1, p2): {eqs}"


# ----------------------------------------------------------------------------------------------- report

EFFECTS_TITLE = "Linear-model effects"
PAIRS_TITLE = "Player pairs and the model-choice meta-game"


@dataclass
class Section:
    """A family's part of the report: its figures, notes, tables (title, DataFrame) and CSV files."""

    family: str
    figures: list[Any] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    tables: list[tuple[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


def excludes_zero(e: Mapping[str, Any]) -> bool:
    """Whether the 95% interval excludes 0 (rounding noise of an exact fit does not count)."""
    return not math.isnan(e["se_x100"]) and (e["low_x100"] > 1e-9 or e["high_x100"] < -1e-9)


def _ci_text(e: Mapping[str, Any]) -> str:
    if math.isnan(e["se_x100"]):
        return _num(e["effect_x100"])
    return f"{_num(e['effect_x100'])} [{_num(e['low_x100'])}, {_num(e['high_x100'])}]"


def effects_frame(fits: Sequence[Fit]) -> Any:
    """Rows ``term=level`` (vs reference), one column per metric: effect x100 [95% interval]."""
    import pandas as pd

    cells: dict[str, dict[str, str]] = {}
    for f in fits:
        for e in f.effects:
            name = "const (all references)" if e["term"] == CONST else f"{e['term']}={e['level']} (vs {e['reference']})"
            cells.setdefault(name, {})[f"{f.metric} (n={f.n})"] = _ci_text(e)
    return pd.DataFrame.from_dict(cells, orient="index").rename_axis("effect x100")


def pairs_frame(t: PairTable) -> Any:
    import pandas as pd

    eq = set(t.equilibria)
    rows = [[("-" if not t.runs[i, j] else f"{t.p1[i, j]:.3f} / {t.p2[i, j]:.3f} (n={int(t.runs[i, j])})"
              + (" *" if (i, j) in eq else "")) for j in range(len(t.cols))] for i in range(len(t.rows))]
    return pd.DataFrame(rows, index=pd.Index(t.rows, name="p1 \\ p2"), columns=t.cols)


def report_sections(run_dirs: Sequence[str | Path], figdir: Path, out: Path,
                    datas: Mapping[str, GameData] | None = None) -> list[Section]:
    """One section per family with declared factors among ``run_dirs`` (``datas``: what :func:`collect`
    gave for them, if already read); [] when there is none."""
    datas = collect(run_dirs) if datas is None else datas
    if not datas:
        return []
    from .. import figures as F

    sections: dict[str, Section] = {}
    try:
        import statsmodels  # noqa: F401
    except ImportError:
        statsmodels_missing = True
    else:
        statsmodels_missing = False
    fits_by_family: dict[str, list[Fit]] = {}
    pairs_by_family: dict[str, list[PairTable]] = {}
    for name in sorted(datas):
        data = datas[name]
        sec = sections.setdefault(data.family, Section(data.family))
        if data.dropped_invalid:
            sec.notes.append(f"{data.title}: {data.dropped_invalid} run(s) with a rule break are left out "
                             "(as in GLEE's data)")
        if statsmodels_missing:
            sec.skipped.append((f"{EFFECTS_TITLE}: {data.title}", "needs statsmodels: pip install 'econarena[report]'"))
        else:
            designs: dict[Any, _Design] = {}
            fits = [fit(data, m, designs=designs) for m in data.metrics]
            fits_by_family.setdefault(data.family, []).extend(fits)
            sec.tables.append((f"{data.title}: effects x100 [95% interval]", effects_frame(fits)))
            sec.notes += [f"{data.title}: {n}" for f in fits for n in f.notes]
            try:
                sec.figures.append(_figure_effects(data, fits, figdir, F))
            except F.Skip as exc:
                sec.skipped.append((f"{EFFECTS_TITLE}: {data.title}", str(exc)))
        t = pair_table(data)
        if t is None:
            sec.skipped.append((f"{PAIRS_TITLE}: {data.title}", f"needs two seats and a per-seat '{PAYOFF_METRIC}' "
                                "metric in the runs"))
            continue
        pairs_by_family.setdefault(data.family, []).append(t)
        # the model-choice game is GLEE's own pooling over the drawn parameters: said where a [grid] is pooled
        pooled = ", pooled over cells" if data.grid_dirs else ""
        sec.tables.append((f"{data.title}: mean {PAYOFF_METRIC} of p1 / p2 by pair (* = pure equilibrium{pooled})",
                           pairs_frame(t)))
        sec.notes.append(format_equilibria(t).replace(f"{t.game}:", f"{data.title}:", 1))
        sec.figures.append(_figure_pairs(data, t, figdir, F))
    for family, sec in sections.items():
        if family in fits_by_family:
            path = out / f"{family}_effects.csv"
            path.write_text(effects_csv(fits_by_family[family]), encoding="utf-8")
            sec.files.append(path)
        if family in pairs_by_family:
            path = out / f"{family}_pairs.csv"
            path.write_text(pairs_csv(pairs_by_family[family]), encoding="utf-8")
            sec.files.append(path)
    return [sections[k] for k in sorted(sections)]


def _figure_effects(data: GameData, fits: Sequence[Fit], figdir: Path, F: Any) -> Any:
    """One panel per metric: each effect x100 (a dot) with its 95% interval (a line), 0 marked."""
    shown = [f for f in fits if len(f.effects) > 1]
    if not shown:
        raise F.Skip("no metric has an effect to show (one level of every factor and player).")
    names: list[str] = []
    for f in shown:
        for e in f.effects[1:]:
            n = f"{e['term']}={e['level']}"
            if n not in names:
                names.append(n)
    ncol = min(len(shown), 4)
    nrow = math.ceil(len(shown) / ncol)
    fig, axes = F._subplots(nrow, ncol, (3.3 * ncol + 2.6, (0.26 * len(names) + 1.3) * nrow + 0.3))
    for ax in axes.flat[len(shown):]:
        ax.set_visible(False)
    for k, (ax, f) in enumerate(zip(axes.flat, shown)):
        ys = {n: i for i, n in enumerate(names)}
        for color, red in (("#2166ac", False), ("#b2182b", True)):  # one artist per colour and kind: a panel
            mine = [e for e in f.effects[1:] if excludes_zero(e) is red]  # of dozens of effects draws at once
            y = [ys[f"{e['term']}={e['level']}"] for e in mine]
            bars = [(yy, e) for yy, e in zip(y, mine) if not math.isnan(e["se_x100"])]
            if bars:
                ax.hlines([b[0] for b in bars], [b[1]["low_x100"] for b in bars], [b[1]["high_x100"] for b in bars],
                          color=color, lw=1.6)
            if mine:
                ax.plot([e["effect_x100"] for e in mine], y, "o", color=color, ms=4, linestyle="none")
        ax.axvline(0, color="black", lw=0.8)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names if k % ncol == 0 else [""] * len(names), fontsize=8)
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_title(f"{f.metric} (n={f.n})")
        ax.set_xlabel("effect x100 (points of M)")
    refs = ", ".join(f"{fa.name}={fa.reference}" for fa in data.factors)
    players = next((e["reference"] for f in shown for e in f.effects if e["term"].endswith("_model")), "-")
    fig.suptitle(f"{data.title}: effects relative to the references")
    key = f"effects_{data.game}"
    png, svg = F._save(fig, figdir, key, data.dirs)
    return F.Figure(key, f"{EFFECTS_TITLE}: {data.title}",
                    "One OLS per metric (columns) on the one-hot game parameters, the merged market variable and "
                    "each seat's player. Dot: the coefficient x100, the change of the metric (in points of M) "
                    "against the reference level with everything else equal; line: its 95% interval "
                    f"(coef ± 1.96 SE). Red: the interval excludes 0. References: {refs}; players: {players}.",
                    png, svg, data.dirs)


def _figure_pairs(data: GameData, t: PairTable, figdir: Path, F: Any) -> Any:
    """Two heatmaps (seat 1's and seat 2's mean metric by ordered pair), equilibria outlined."""
    from matplotlib.patches import Rectangle

    n_r, n_c = len(t.rows), len(t.cols)
    size = (2 * (0.75 * n_c + 2.2) + 1.0, 0.6 * n_r + 2.2)
    fig, axes = F._subplots(1, 2, size)
    for ax, values, who in ((axes[0, 0], t.p1, "p1 (row player)"), (axes[0, 1], t.p2, "p2 (column player)")):
        masked = np.ma.masked_invalid(values)
        im = ax.imshow(masked, cmap="viridis", aspect="auto")
        fig.colorbar(im, ax=ax, shrink=0.85, label=f"mean {t.metric}")
        for i in range(n_r):
            for j in range(n_c):
                if t.runs[i, j]:
                    v = values[i, j]
                    lo, hi = np.nanmin(values), np.nanmax(values)
                    dark = hi > lo and (v - lo) / (hi - lo) < 0.5
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                            color="white" if dark else "black")
        for i, j in t.equilibria:
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#d7301f", lw=2.5))
        ax.set_xticks(range(n_c))
        ax.set_xticklabels([F._wrap(c, 12) for c in t.cols], fontsize=8)
        ax.set_yticks(range(n_r))
        ax.set_yticklabels([F._wrap(r, 16) for r in t.rows], fontsize=8)
        ax.set_xlabel("p2 (seat 2) player")
        ax.set_ylabel("p1 (seat 1) player")
        ax.set_title(f"{t.metric} of {who}")
        ax.grid(False)
    eqs = "; ".join(f"({t.rows[i]}, {t.cols[j]})" for i, j in t.equilibria) or "none among the observed pairs"
    pooled = " (pooled over cells)" if data.grid_dirs else ""  # GLEE's meta-game pools the drawn parameters
    fig.suptitle(f"{data.title}: mean {t.metric} by pair{pooled}; red boxes: pure equilibria of the model choice")
    key = f"pairs_{data.game}"
    png, svg = F._save(fig, figdir, key, data.dirs)
    return F.Figure(key, f"{PAIRS_TITLE}: {data.title}",
                    f"Mean {t.metric} of the seat-1 player (left) and of the seat-2 player (right) for each ordered "
                    "pair (rows: seat 1, columns: seat 2; blank: not played). The meta-game: each seat picks its "
                    "player and is paid these means; a pair is a pure Nash equilibrium when neither seat gains by "
                    "switching alone (red boxes; ties count, a pair with an unplayed deviation is not certified). "
                    f"Equilibria: {eqs}.", png, svg, data.dirs)


# ---------------------------------------------------------------------------------- scorecard and section

CARD_METRICS = ("efficiency", "fairness", "self_gain")


def collector() -> Collector:
    """What the report's scan feeds for this family (``ctx.memo(FAMILY)`` holds it afterwards)."""
    return Collector()


def _collector(ctx: Any) -> Collector:
    def make() -> Collector:
        from ..scan import scan

        c = Collector()
        scan([Path(d) for d in ctx.run_dirs], [c])
        return c
    return ctx.memo(FAMILY, make)


def _datas(ctx: Any) -> dict[str, GameData]:
    try:
        return _collector(ctx).result()
    except AnalysisError:
        return {}  # the section says why (report_sections raises it with the file and run)


def _sums(xs: np.ndarray, cells: np.ndarray | None = None) -> Any:
    """Each game its own resampling unit (the card's intervals are over games): the Sums ``cluster_sums``
    gives for one session per value, made directly (a grid of 384 cells asks for thousands). ``cells``:
    each value's cell code, the strata (the values sorted by it)."""
    from ..stats import Sums

    ok = ~np.isnan(xs)
    vals = xs[ok]
    ones = np.ones(len(vals))
    stratum = np.zeros(len(vals), dtype=int) if cells is None else cells[ok]
    return Sums(vals + 0.0, ones, ones, stratum, np.arange(len(vals)))


def _seat_values(data: GameData, player: str, metric: str, cells: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(values, their run's cell code): the metric of every seat ``player`` took, run by run and seat by
    seat (a self-play run twice); a value recorded as None is there (as NaN), a metric the run does not
    have is not. ``cells``: each run's cell code (``GameData.cells``), else every run in cell 0."""
    masks, cols = [], []
    for i, seat in enumerate(data.players):
        col = data.column(f"self_gain_p{i + 1}" if metric == "self_gain" else metric)
        present = col.view(np.uint64) != np.float64(_ABSENT).view(np.uint64)
        masks.append((seat.array() == seat.index.get(player, -1)) & present)
        cols.append(col)
    mask = np.stack(masks, axis=1)
    codes = np.zeros(len(data), dtype=np.int64) if cells is None else cells
    return np.stack(cols, axis=1)[mask], np.repeat(codes[:, None], len(cols), axis=1)[mask]


MAX_CARD_CELLS = 16  # more cells than this (GLEE's 384-configuration grid): the card pools them, saying so


def card_rows(data: GameData, n_boot: int, seed: int, found: Sequence[Any] = (), split: bool = True
              ) -> list[dict[str, Any]]:
    """The card's rows of one game: a row per player and [grid] cell (``cell`` ``""`` without a grid), each
    metric's Estimate over the cell's games only, and ``seats`` (the seats it played there); cells in their
    factors' natural order (``found``: the study's factors), best self-gain first within a cell.
    ``split=False``: one row per player over every cell (the pooled row a card shows for a large grid)."""
    rows, pooled = card_tables(data, n_boot, seed, found, pooled=not split)
    return rows if split else (pooled or [])


def _two_each(values: np.ndarray, cells: np.ndarray) -> bool:
    """Whether every cell that has a value has two: then resampling within cells shows each one's noise."""
    n = np.bincount(cells[~np.isnan(values)])
    return bool(n.sum() >= 2 and (n[n > 0] >= 2).all())


def card_tables(data: GameData, n_boot: int, seed: int, found: Sequence[Any] = (), pooled: bool | None = None
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(the rows of :func:`card_rows`, the pooled rows or None): pooled rows where there are more than
    :data:`MAX_CARD_CELLS` cells (``pooled`` True or False: say so). Where every cell holds two or more of
    a metric's values, its pooled interval resamples the games within cells (the grid's design fixes each
    cell's size) and each cell's row is its part of the same draws, one resampling for both; otherwise the
    pooled row resamples all the games as one and each cell its own, as every row does below that size."""
    from ..stats import NAN_ESTIMATE, bootstrap_many, bootstrap_strata

    names, codes = data.cells()
    want = len(names) > MAX_CARD_CELLS if pooled is None else pooled
    players = sorted(data.player_names())  # once: each call is a pass over every seat
    values, counts = {}, {}
    for p in players:
        for m in CARD_METRICS:
            vals, where = _seat_values(data, p, m, codes)
            idx = np.argsort(where, kind="stable")  # a cell's values keep their (run, seat) order
            values[(p, m)] = (vals, vals[idx], where[idx])
            counts[(p, m)] = np.bincount(where, minlength=len(names))
    est: dict[tuple[str, str], dict[str, Any]] = {}
    whole: dict[str, dict[str, Any]] = {p: {} for p in players}
    strata = [k for k, (_, v, c) in values.items() if want and len(names) > 1 and _two_each(v, c)]
    for (p, m), (e, cells) in zip(strata, bootstrap_strata([_sums(values[k][1], values[k][2]) for k in strata],
                                                           n_boot=n_boot, seed=seed)):
        whole[p][m] = dataclasses.replace(e, value=float(_sums(values[(p, m)][0]).num.sum() / e.n))  # run order
        for c, ce in cells.items():
            est.setdefault((p, names[c]), {})[m] = ce
    requests: list[tuple[Any, float]] = []
    slots: list[tuple[str, str | None, str]] = []  # (player, cell or None for the pooled row, metric)
    for k, (vals, v, at) in values.items():
        if k in strata:
            continue
        for i, chunk in enumerate(np.split(v, np.searchsorted(at, np.arange(1, len(names))))):
            requests.append((_sums(chunk), 1.0))
            slots.append((k[0], names[i], k[1]))
        if want:
            requests.append((_sums(vals), 1.0))
            slots.append((k[0], None, k[1]))
    for (p, cell, m), e in zip(slots, bootstrap_many(requests, n_boot=n_boot, seed=seed)):
        (whole[p] if cell is None else est.setdefault((p, cell), {}))[m] = e
    keys = [(p, cell) for i, cell in enumerate(names) for p in players  # a player sits in the cells it played
            if len(names) == 1 or any(counts[(p, m)][i] for m in CARD_METRICS)]
    seats = {(p, cell): max(int(counts[(p, m)][i]) for m in CARD_METRICS) for i, cell in enumerate(names)
             for p in players}
    per = {k: {m: est.get(k, {}).get(m, NAN_ESTIMATE) for m in CARD_METRICS} for k in keys}

    def order(k: tuple[str, str]) -> tuple[Any, ...]:
        e = per[k]["self_gain"]
        return (cell_rank(k[1], found), -(e.value if e.n else -1e300), k[0])

    def rows(per: dict[tuple[str, str], dict[str, Any]], seats: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
        return [{"player": k[0], "cell": k[1], **per[k], "seats": seats[k]} for k in sorted(per, key=order)]

    cell_rows = rows(per, seats)
    if not want:
        return cell_rows, None
    per = {(p, ""): {m: whole[p].get(m, NAN_ESTIMATE) for m in CARD_METRICS} for p in players}
    return cell_rows, rows(per, {(p, ""): max(len(values[(p, m)][0]) for m in CARD_METRICS) for p in players})


def _card_rows(ctx: Any, name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """:func:`card_tables` of one game, computed once for the card and the detail."""
    found = study_factors(ctx.frames) if ctx.frames is not None else []
    return ctx.memo(f"{FAMILY}/cells/{name}", lambda: card_tables(_datas(ctx)[name], ctx.n_boot, ctx.seed, found))


def scorecard(ctx: Any) -> Any:
    """Per game (bargaining, negotiation, persuasion) and player: mean efficiency and fairness of the games
    it played and its own self-gain (either seat), with 95% bootstrap intervals over games; best self-gain
    first. Where a directory has a [grid], a row per player and cell, over the cell's games only."""
    from .. import page

    datas = _datas(ctx)
    if not datas:
        return None
    parts, dirs, any_split, pooled = [], set(), False, []
    for name in sorted(datas):
        data = datas[name]
        dirs.update(data.dirs)
        rows, whole = _card_rows(ctx, name)
        split = any(r["cell"] for r in rows)
        if whole is not None:  # more than MAX_CARD_CELLS: pooled, said beside each row; per cell: below
            n = len({r["cell"] for r in rows})
            rows = [{**r, "cell": f"pooled over cells ({n})"} for r in whole]
            pooled.append(data.title)
        any_split = any_split or split
        body = [[page.esc(r["player"]), *([page.esc(r["cell"])] if split else []),
                 *(page.estimate_cell(r[m]) for m in CARD_METRICS), str(r["seats"])] for r in rows]
        parts.append(page.grid(("player", *(("cell",) if split else ()), "efficiency", "fairness", "self-gain",
                                "seats played"), body, page.esc(data.title), numeric_from=2 if split else 1))
    intro = ("Per game and player: efficiency and fairness of the games it played (0-1, clipped as GLEE does) and "
             "its own self-gain (share of the surplus it kept, either seat), each with a 95% bootstrap interval "
             "over games; runs with a rule break left out, as in GLEE's data. Best self-gain first.")
    if any_split:
        intro += " A row per player and [grid] cell, over that cell's games only."
    if pooled:
        intro += (f" {page.esc(', '.join(pooled))}: more than {MAX_CARD_CELLS} cells, so each player's row is "
                  "pooled over them (said beside it; where each cell has two games or more, its interval resamples "
                  "the games within each cell, whose sizes the grid fixes); the row of every cell is in the GLEE "
                  "detail below.")
    return page.Card(FAMILY, "GLEE: efficiency, fairness, self-gain", "".join(parts), intro, len(dirs))


def section(ctx: Any) -> Any:
    """The linear models' effect plots and pair heatmaps; their tables, notes and CSV files as detail."""
    from .. import page

    c = _collector(ctx)
    secs = report_sections(ctx.run_dirs, ctx.figdir, ctx.out, c.result()) if _datas(ctx) else []
    # people's games (GLEE's release): the only table that reads the logs again, and only when one is there
    people = human_section(ctx.run_dirs, ctx.out) if c.people else None
    if not secs and people is None:
        return None
    out = page.Section(FAMILY, "GLEE: linear models" + (" and people beside models" if people else ""))
    detail = []
    for name, data in sorted(_datas(ctx).items()):  # a grid the card pooled: every cell's row here
        rows, whole = _card_rows(ctx, name)
        if whole is not None:
            import pandas as pd

            table = pd.DataFrame([{"player": r["player"], "cell": r["cell"],
                                   **{m: r[m].fmt(3) for m in CARD_METRICS}, "seats played": r["seats"]}
                                  for r in rows])
            detail.append(f"<h4>{page.esc(data.title)}: efficiency, fairness, self-gain per cell</h4>"
                          + page.table_html(table, index=False))
    for sec in secs:
        out.figures += sec.figures
        out.skipped += sec.skipped
        out.files += sec.files
        detail.append(f"<h4>Linear models ({page.esc(sec.family)})</h4><p>One OLS per game and metric on the "
                      "game's declared parameters (one-hot, reference level dropped) and each seat's player; "
                      "effects x100 with 95% intervals (coef &plusmn; 1.96 SE). Also in "
                      + ", ".join(f"<code>{page.esc(p.name)}</code>" for p in sec.files) + ".</p>")
        detail += [f"<p class='note'>{page.esc(n)}</p>" for n in sec.notes]
        detail += [f"<h5>{page.esc(t)}</h5>{page.table_html(df)}" for t, df in sec.tables]
    if people is not None:  # GLEE's human games: each seat people played beside the models in the same seat
        out.files += people.files
        detail.append(f"<h4 id='people'>{page.esc(HUMAN_TITLE)}</h4>")
        detail += [f"<p class='note'>{page.esc(n)}</p>" for n in people.notes]
        detail += [f"<h5>{page.esc(t)}</h5>{page.table_html(df, index=False)}" for t, df in people.tables]
    out.detail = "".join(detail)
    return out

# --------------------------------------------------------------------- per-game table (glee_games.csv)

HUMAN = "human"  # the label of a person's seat (econarena import glee)
SEAT_NAMES = ("Alice", "Bob")
GAMES_COLUMNS = ("game_id", "family", "kind", "alice_model", "bob_model", "rounds", "deal", "purchases",
                 "alice_share", "final_price", "efficiency", "fairness", "alice_self_gain", "bob_self_gain",
                 "efficiency_code", "fairness_code", "alice_self_gain_code", "bob_self_gain_code", "replay_agrees",
                 "config", "params", "run_dir", "session")


def _readings(game: Any, record: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(paper, code) metrics of a run: an imported run's as recorded, a native run's recomputed from its
    round log by the game under each reading."""
    imported = record["imported"] if isinstance(record.get("imported"), Mapping) else None
    metrics = record["metrics"] if isinstance(record.get("metrics"), Mapping) else {}
    if imported is not None and isinstance(imported.get("metrics_code"), Mapping):
        return metrics, imported["metrics_code"]
    params = record["params"] if isinstance(record.get("params"), Mapping) else {}
    rounds = record.get("round_log") or []
    try:
        paper, code = (game.metrics(Setup(2, {**params, "metrics": reading}), rounds) for reading in ("paper", "code"))
        return paper, code
    except (KeyError, TypeError, ValueError, AttributeError):
        return metrics, {}


def _seat(v: Any, i: int) -> float | None:
    x = v[i] if isinstance(v, (list, tuple)) and len(v) > i else None
    return _number(x) if x is not None else None


def games_table(run_dirs: Iterable[str | Path], games: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per complete two-seat run of a GLEE game (imported or played here): GLEE's game id (the
    folder name; ``<run dir>#<session>`` for runs played here), the family, who played each seat
    (``human`` for a person), rounds played, whether a deal (persuasion: a purchase) happened, and the
    metrics by the paper's definitions, with the released code's readings in the ``*_code`` columns."""
    games = GAMES if games is None else games
    out = []
    for d in expand_run_dirs(run_dirs):
        name = _game_name(d)
        game = games.get(name) if name else None
        info = getattr(game, "info", None)
        if info is None or info.family != "glee" or not info.factors:
            continue
        factors = factors_of(info.factors)
        for (_lineup, session, run), r in sorted(complete_runs(read_jsonl(d / RUNS)).items()):
            labels = [str(x) for x in r.get("labels") or []]
            if len(labels) != 2:
                continue
            paper, code = _readings(game, r)
            imported = r["imported"] if isinstance(r.get("imported"), Mapping) else {}
            recorded = imported["recorded"] if isinstance(imported.get("recorded"), Mapping) else {}
            params = r["params"] if isinstance(r.get("params"), Mapping) else {}
            buys = [e.get("events", {}) for e in r.get("round_log") or []
                    if isinstance(e, Mapping) and e.get("events", {}).get("phase") == "buyer"]
            rounds = paper.get("rounds", recorded.get("rounds", len(buys) or None))
            purchases = recorded.get("purchases", sum(1 for e in buys if e.get("bought")) if buys else None)
            deal = paper.get("agreement") if "agreement" in paper else (purchases > 0 if purchases is not None
                                                                         else None)
            check = imported["check"] if isinstance(imported.get("check"), Mapping) else None
            out.append({
                "game_id": imported.get("game_id") or f"{d.name}#{session}" + (f".{run}" if run else ""),
                "family": name, "kind": imported.get("kind", "ours") if imported else "ours",
                "alice_model": labels[0], "bob_model": labels[1], "rounds": rounds, "deal": deal,
                "purchases": purchases,
                "alice_share": paper.get("alice_share"), "final_price": paper.get("final_price"),
                "efficiency": _number(paper.get("efficiency")), "fairness": _number(paper.get("fairness")),
                "alice_self_gain": _seat(paper.get("self_gain"), 0), "bob_self_gain": _seat(paper.get("self_gain"), 1),
                "efficiency_code": _number(code.get("efficiency")), "fairness_code": _number(code.get("fairness")),
                "alice_self_gain_code": _seat(code.get("self_gain"), 0),
                "bob_self_gain_code": _seat(code.get("self_gain"), 1),
                "replay_agrees": None if check is None else bool(check.get("agree")),
                "config": " | ".join(f"{f.name}: {f.level_of(params)}" for f in factors),
                "params": params, "run_dir": str(d), "session": session,
            })
    return out


def _csv_cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.12g}"
    if isinstance(v, Mapping):
        return json.dumps(v, sort_keys=True)
    return str(v)


def table_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    return csv_text(columns, ([_csv_cell(row.get(c)) for c in columns] for row in rows))


SUMMARY_COLUMNS = ("family", "kind", "seat", "player", "games", "deal_rate", "efficiency", "fairness", "self_gain",
                   "replay_agree_rate")


def _mean(xs: Iterable[Any]) -> float | None:
    vals = [float(x) for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return math.fsum(vals) / len(vals) if vals else None


def summary_table(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per family, kind (llm / human / ours), seat and player: games, deal rate and the mean of each metric
    (paper definitions, unclipped; self_gain is the seat's own)."""
    groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        for i, who in enumerate((r["alice_model"], r["bob_model"])):
            groups.setdefault((r["family"], r["kind"], SEAT_NAMES[i], who), []).append(r)
    out = []
    for (family, kind, seat, who), rs in sorted(groups.items()):
        own = "alice_self_gain" if seat == SEAT_NAMES[0] else "bob_self_gain"
        checked = [r["replay_agrees"] for r in rs if r["replay_agrees"] is not None]
        out.append({"family": family, "kind": kind, "seat": seat, "player": who, "games": len(rs),
                    "deal_rate": _mean(float(bool(r["deal"])) for r in rs if r["deal"] is not None),
                    "efficiency": _mean(r["efficiency"] for r in rs), "fairness": _mean(r["fairness"] for r in rs),
                    "self_gain": _mean(r[own] for r in rs),
                    "replay_agree_rate": _mean(float(x) for x in checked) if checked else None})
    return out


# ------------------------------------------------------------------- people beside models (GLEE's prize)

HUMAN_COLUMNS = ("family", "seat", "opponent", "player", "games", "configs", "deal_rate", "efficiency", "fairness",
                 "self_gain", "self_gain_se", "diff_vs_human", "diff_low", "diff_high")
HUMAN_TITLE = "People beside models (GLEE)"


def _clip(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else min(1.0, max(0.0, float(x)))


def _mean_se(xs: Sequence[float]) -> tuple[float | None, float | None]:
    if not xs:
        return None, None
    m = math.fsum(xs) / len(xs)
    if len(xs) < 2:
        return m, None
    var = math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    return m, math.sqrt(var / len(xs))


def human_vs_model(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For each family and seat a person played: the person beside every model that played the same seat
    against the same opponent, on the SAME configurations (GLEE's grid levels: the model's games are
    restricted to the configurations people played in that seat). Per player: games, configurations,
    deal rate, mean efficiency and fairness (clipped to [0, 1] as GLEE's pipeline does), the seat's mean
    self-gain with its standard error, and the model's self-gain minus the person's with a 95% normal
    interval (Welch). ``rows``: :func:`games_table`."""
    out = []
    for family in sorted({r["family"] for r in rows}):
        mine = [r for r in rows if r["family"] == family]
        for seat in (0, 1):
            who, other = ("alice_model", "bob_model") if seat == 0 else ("bob_model", "alice_model")
            own = "alice_self_gain" if seat == 0 else "bob_self_gain"
            people = [r for r in mine if r[who] == HUMAN and r[other] != HUMAN]
            for opponent in sorted({r[other] for r in people}):
                theirs = [r for r in people if r[other] == opponent]
                configs = {r["config"] for r in theirs}
                base = [float(r[own]) for r in theirs if r[own] is not None]
                hm, hse = _mean_se(base)
                players = sorted({r[who] for r in mine if r[who] != HUMAN and r[other] == opponent})
                for player in [HUMAN, *players]:
                    rs = theirs if player == HUMAN else [r for r in mine if r[who] == player and r[other] == opponent
                                                         and r["config"] in configs]
                    if not rs:
                        continue
                    gains = [float(r[own]) for r in rs if r[own] is not None]
                    m, se = _mean_se(gains)
                    diff = low = high = None
                    if player != HUMAN and m is not None and hm is not None:
                        diff = m - hm
                        if se is not None and hse is not None:
                            half = Z95 * math.sqrt(se ** 2 + hse ** 2)
                            low, high = diff - half, diff + half
                    out.append({"family": family, "seat": SEAT_NAMES[seat], "opponent": opponent, "player": player,
                                "games": len(rs), "configs": len({r["config"] for r in rs}),
                                "deal_rate": _mean(float(bool(r["deal"])) for r in rs if r["deal"] is not None),
                                "efficiency": _mean(_clip(r["efficiency"]) for r in rs),
                                "fairness": _mean(_clip(r["fairness"]) for r in rs), "self_gain": m,
                                "self_gain_se": se, "diff_vs_human": diff, "diff_low": low, "diff_high": high})
    return out


def format_human(table: Sequence[Mapping[str, Any]]) -> str:
    """The comparison as aligned text, one block per family and seat."""
    if not table:
        return "no game with a person in one seat (label 'human') among these runs"

    def f(x: Any, d: int = 3) -> str:
        return "-" if x is None else f"{x:+.{d}f}" if d == 2 else f"{x:.{d}f}"
    head = ["family", "seat", "opponent", "player", "games", "configs", "deal", "efficiency", "fairness",
            "self-gain", "model - person [95%]"]
    body = [[r["family"], r["seat"], r["opponent"], r["player"], str(r["games"]), str(r["configs"]),
             f(r["deal_rate"], 2).lstrip("+"), f(r["efficiency"]), f(r["fairness"]),
             f(r["self_gain"]) + ("" if r["self_gain_se"] is None else f" ± {1.96 * r['self_gain_se']:.3f}"),
             "" if r["diff_vs_human"] is None else f(r["diff_vs_human"], 2) + (
                 "" if r["diff_low"] is None else f" [{f(r['diff_low'], 2)}, {f(r['diff_high'], 2)}]")]
            for r in table]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["People beside models: each seat a person played, against the same opponent, on the configurations "
             "people played (self-gain in units of M; efficiency and fairness clipped to [0, 1])"]
    lines += ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    return "\n".join(lines)


def human_section(run_dirs: Sequence[str | Path], out: Path) -> Section | None:
    """The report's section on people beside models (a hook report.py calls); None without human games."""
    table = human_vs_model(games_table(run_dirs))
    if not table:
        return None
    import pandas as pd

    sec = Section("glee")
    path = out / "glee_human_vs_model.csv"
    path.write_text(table_csv(table, HUMAN_COLUMNS), encoding="utf-8")
    sec.files.append(path)
    for family, seat in dict.fromkeys((r["family"], r["seat"]) for r in table):
        rows = [r for r in table if r["family"] == family and r["seat"] == seat]
        frame = pd.DataFrame([{
            "opponent": r["opponent"], "player": r["player"], "games": r["games"], "configs": r["configs"],
            "deal rate": "-" if r["deal_rate"] is None else f"{r['deal_rate']:.2f}",
            "efficiency": "-" if r["efficiency"] is None else f"{r['efficiency']:.3f}",
            "fairness": "-" if r["fairness"] is None else f"{r['fairness']:.3f}",
            "self-gain": "-" if r["self_gain"] is None else f"{r['self_gain']:.3f}",
            "model - person [95%]": "" if r["diff_vs_human"] is None else f"{r['diff_vs_human']:+.3f}" + (
                "" if r["diff_low"] is None else f" [{r['diff_low']:+.3f}, {r['diff_high']:+.3f}]")}
            for r in rows])
        sec.tables.append((f"{family}: {seat} played by a person or a model", frame))
    sec.notes.append("Each table: one seat of one family that people played (GLEE's human games); the model rows are "
                     "the models' games in the same seat against the same opponent, restricted to the configurations "
                     "people played. Self-gain is the seat's own (units of M); efficiency and fairness are clipped "
                     "to [0, 1] as in GLEE's pipeline. The linear models above estimate the same contrast with "
                     "every factor held equal ('human' is a player level).")
    return sec
