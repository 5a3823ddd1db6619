"""The columnar copy of finished run directories (analysis/columnar.py) and the bootstrap's draws.

A copy must never change a number: a report read from the copies equals the pinned golden outputs (the
same check as tests/test_analysis_golden.py, on its second read), and a copy is never read once its logs
changed, while a directory is unfinished, or when its reading warned.
"""

from __future__ import annotations

import gzip
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_experiment

pytest.importorskip("pandas")


@pytest.fixture
def copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "columns"
    monkeypatch.setenv("ECONARENA_COLUMNS", str(root))
    return root


def _grid(root: Path, sessions: int = 4) -> Path:
    doc = {"experiment": {"name": "glee-grid", "game": "bargaining", "sessions": sessions, "runs": 1, "seed": 5,
                          "environment": "melee"},
           "game": {"max_rounds": 12},
           "grid": {"game": {"delta_alice": [0.8, 0.9], "money": [100, 10000]}},
           "players": [{"agent": "rational", "label": "R"}, {"agent": "random", "label": "X"}]}
    out = root / "glee-grid"
    run_experiment(doc, out)
    return out


class _NoLogs:
    """Fails the test if the scan parses a log: a directory with a copy is read from the copy."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from econarena.analysis import scan

        def refuse(path: Path, kind: str) -> Any:
            raise AssertionError(f"{path} was parsed although its copy is there")
        monkeypatch.setattr(scan, "iter_records", refuse)


def _outputs(dirs: list[Path], out: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import test_analysis_golden as golden

    return golden.outputs_of(dirs, out, root, monkeypatch)


@pytest.mark.parametrize("mode", ["inserted", "in place", "mixed"])
def test_report_from_the_copies_equals_the_pinned_numbers(tmp_path: Path, copies: Path, mode: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Copies inserted into the engine's tables (small ones), read in place behind its views (large ones),
    and both beside a directory read from its logs between them: the same numbers, rows in the same order."""
    import shutil

    import test_analysis_golden as golden

    from econarena.analysis import columnar, store

    dirs = [golden._write_dir(n, tmp_path / "runs") for n in golden.DIRS] + [golden._glee_grid(tmp_path / "runs")]
    first = _outputs(dirs, tmp_path / "report", tmp_path, monkeypatch)
    written = {p.name for p in copies.glob("*/*.parquet")}
    assert {"store.players.parquet", "glee.runs.parquet", "distributions.values.parquet",
            "transcripts.runs.parquet"} <= written
    logs = set()
    if mode == "mixed":  # one directory in the middle loses its copy: read from its logs between the others
        logs = {dirs[len(dirs) // 2]}
        shutil.rmtree(columnar.open_copy(dirs[len(dirs) // 2], {}).folder)  # type: ignore[union-attr]
    with monkeypatch.context() as m:
        # every directory with its copy is read from it: no log of it is parsed
        from econarena.analysis import scan

        parsed: list[Path] = []
        real = scan.iter_records

        def counted(path: Path, kind: str) -> Any:
            parsed.append(path.parent)
            return real(path, kind)
        m.setattr(scan, "iter_records", counted)
        if mode != "inserted":  # mixed: the larger half of the copies read in place, the rest inserted
            sizes = sorted((d / "decisions.jsonl").read_bytes().count(b"\n") for d in dirs)
            m.setattr(store, "IN_PLACE", 0 if mode == "in place" else sizes[len(sizes) // 2])
            assert mode == "in place" or sizes[0] < sizes[len(sizes) // 2]
        second = _outputs(dirs, tmp_path / "report2", tmp_path, monkeypatch)
    assert set(parsed) == logs
    pinned = json.loads(gzip.decompress(golden.PIN.read_bytes()))
    assert golden.differences(first, pinned) == []
    second = {k: [x.replace("report2", "report") for x in v] for k, v in second.items()}
    assert second == first  # the same machine: the copies give the first read's bits, LAPACK's included


def test_a_second_read_parses_no_log_and_gives_the_same_report(tmp_path: Path, copies: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from econarena.analysis.report import build_report

    run = _grid(tmp_path / "runs")
    build_report([run], tmp_path / "r1", n_boot=50, seed=1, transcripts=3)
    guard = monkeypatch.context()
    with guard as m:
        _NoLogs(m)
        build_report([run], tmp_path / "r2", n_boot=50, seed=1, transcripts=3)
    for name in ("metrics.csv", "glee_effects.csv", "glee_pairs.csv"):
        assert (tmp_path / "r1" / name).read_bytes() == (tmp_path / "r2" / name).read_bytes(), name
    import pandas as pd

    for name in ("players.parquet", "runs.parquet", "decisions.parquet"):
        a, b = pd.read_parquet(tmp_path / "r1" / name), pd.read_parquet(tmp_path / "r2" / name)
        pd.testing.assert_frame_equal(a, b)
    page = [(tmp_path / r / "report.html").read_text(encoding="utf-8").split("</p>", 1)[1] for r in ("r1", "r2")]
    assert page[0] == page[1]  # every table and conversation (the first paragraph holds the build time)


def test_a_copy_is_written_in_row_order_whatever_order_the_engine_scans(tmp_path: Path, copies: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB 2.0 once scanned a few of a follower's 3.2 million decisions last (GLEE at 587,400 games), and
    the copy held them there: the report that streams it stopped on "out of log order". Here every batch
    goes into the engine reversed, so the table's order is not the rows' order: that report's sums are
    still those of log order, the copy is written in row order, and the report from it equals them too."""
    import pyarrow.parquet as pq

    from econarena.analysis import store as store_mod
    from econarena.analysis.report import build_report

    run = _grid(tmp_path / "runs")
    build_report([run], tmp_path / "r1", n_boot=50, seed=1, transcripts=0)  # from the logs, in order
    shutil.rmtree(copies)
    flush = store_mod._Buffer.flush

    def reversed_flush(self: Any) -> None:
        self.pending.reverse()
        flush(self)
    with monkeypatch.context() as m:
        m.setattr(store_mod._Buffer, "flush", reversed_flush)
        build_report([run], tmp_path / "r2", n_boot=50, seed=1, transcripts=0)  # writes the copy
    for name in ("metrics.csv", "glee_effects.csv"):  # streamed out of order, the pass went again sorted
        assert (tmp_path / "r1" / name).read_bytes() == (tmp_path / "r2" / name).read_bytes(), name
    parts = sorted(copies.rglob("store.*.parquet"))
    assert {p.name for p in parts} == {"store.decisions.parquet", "store.players.parquet", "store.runs.parquet"}
    for p in parts:
        rows = pq.read_table(p, columns=["row_in_dir"]).column(0).to_pylist()
        assert rows == sorted(rows) and len(rows) > 1, p.name
    with monkeypatch.context() as m:
        _NoLogs(m)
        build_report([run], tmp_path / "r3", n_boot=50, seed=1, transcripts=0)  # from that copy
    for name in ("metrics.csv", "glee_effects.csv"):
        assert (tmp_path / "r1" / name).read_bytes() == (tmp_path / "r3" / name).read_bytes(), name


def test_row_order_is_checked_across_row_groups(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from econarena.analysis.store import _in_row_order

    for rows, ok in (([0, 1, 2, 3, 4, 5], True), ([0, 1, 2, 5, 3, 4], False), ([0, 1, 3, 2, 4, 5], False),
                     ([0, 2, 2, 3, 4, 5], False), ([], True)):
        path = tmp_path / f"{len(rows)}-{ok}-{rows[:4]}.parquet"
        pq.write_table(pa.table({"row_in_dir": pa.array(rows, type=pa.int64())}), path, row_group_size=3)
        assert _in_row_order(path) is ok, rows


def test_a_changed_log_is_read_again(tmp_path: Path, copies: Path) -> None:
    """Appending a run (or editing one) changes the key: the numbers follow the logs, never the copy."""
    from econarena.analysis.load import load

    run = _grid(tmp_path / "runs")
    before = load(run)
    lines = (run / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    rec = json.loads(lines[0])
    rec["session"] = 999
    rec["payoffs"] = [7.0, 3.0]
    with (run / "runs.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")
    after = load(run)
    assert len(after.runs) == len(before.runs) + 1
    assert 999 in set(after.players["session"])
    assert after.players[after.players["session"] == 999]["game_payoff"].tolist() == [7.0, 3.0]


def test_no_copy_of_an_unfinished_directory_nor_of_one_that_warned(tmp_path: Path, copies: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from econarena.analysis.load import load

    run = _grid(tmp_path / "runs")
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}), encoding="utf-8")
    load(run)
    assert not list(copies.glob("*/*.parquet"))
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with (run / "decisions.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("this line is no JSON\n")
    for _ in range(2):  # the warning shows on every read: no copy hides it
        load(run)
        assert "skipped 1 unreadable line" in capsys.readouterr().err
    assert not list(copies.glob("*/store*.parquet"))


def test_extra_record_fields_are_read_and_copied(tmp_path: Path, copies: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A newer writer's optional keys (reasoning tokens, say) neither break the copy nor change a number."""
    from econarena.analysis.load import load

    run = _grid(tmp_path / "runs")
    plain = load(run).players
    for name, extra in (("decisions.jsonl", {"reasoning_tokens": 12, "reasoning": "hm"}),
                        ("runs.jsonl", {"notes": {"k": [1, 2]}})):
        lines = (run / name).read_text(encoding="utf-8").splitlines()
        (run / name).write_text("".join(json.dumps({**json.loads(x), **extra}) + "\n" for x in lines),
                                encoding="utf-8")
    first = load(run).players
    with monkeypatch.context() as m:
        _NoLogs(m)
        second = load(run).players
    import pandas as pd

    pd.testing.assert_frame_equal(first, plain)
    pd.testing.assert_frame_equal(second, plain)


def test_copies_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from econarena.analysis import columnar

    monkeypatch.setenv("ECONARENA_COLUMNS", "off")
    assert columnar.root() is None
    monkeypatch.setenv("ECONARENA_COLUMNS", "")
    monkeypatch.setenv("ECONARENA_CACHE_DIR", str(tmp_path / "c"))
    assert columnar.root() == tmp_path / "c" / "columns"


def _replicate_sums_before(vectors: list[np.ndarray], stratum: np.ndarray, rng: np.random.Generator,
                           n_boot: int) -> list[np.ndarray]:
    """The bootstrap's replicate totals as they were computed before (every draw through the stratum's index
    array, every stratum gathered): the reference the faster code must equal to the bit."""
    from econarena.analysis.stats import _blocks

    out = [np.zeros(n_boot) for _ in vectors]  # (_blocks: as the code under test splits them)
    for s in np.unique(stratum):
        part = np.flatnonzero(stratum == s)
        for start, rows in _blocks(n_boot, len(part)):
            idx = part[rng.integers(0, len(part), size=(rows, len(part)))]
            for j, v in enumerate(vectors):
                out[j][start:start + rows] += v[idx].sum(axis=1)
    return out


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("layout", ["one", "sorted", "interleaved"])
def test_bootstrap_draws_and_sums_unchanged(layout: str, threads: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from econarena.analysis import stats
    from econarena.analysis.stats import _replicate_sums

    if threads:  # the gathers on threads, blocks small enough that several wait at once
        monkeypatch.setattr(stats, "THREADED", 1)
        monkeypatch.setattr(stats, "BLOCK", 20_000)

    g = np.random.default_rng(11)
    k = 3000
    stratum = {"one": np.zeros(k, dtype=int), "sorted": np.repeat([0, 1, 2], [1000, 1500, 500]),
               "interleaved": g.integers(0, 3, size=k)}[layout]
    vectors = [g.random(k) * 1e3, g.integers(0, 5, size=k).astype(float), np.full(k, 2.0)]
    got = _replicate_sums(vectors, stratum, np.random.default_rng(4), 300)
    want = _replicate_sums_before(vectors, stratum, np.random.default_rng(4), 300)
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()


def test_shards_read_together_use_their_copies(tmp_path: Path, copies: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards of one experiment (one config, runs split by session) each keep a copy; read together again,
    none is parsed, and the tables equal the first read's."""
    import shutil

    import pandas as pd

    from econarena.analysis.load import load

    whole = _grid(tmp_path / "runs")
    shards = []
    for k in (0, 1):
        d = tmp_path / "runs" / f"shard-{k}"
        shutil.copytree(whole, d)
        for name in ("runs.jsonl", "decisions.jsonl"):
            lines = (whole / name).read_text(encoding="utf-8").splitlines(keepends=True)
            (d / name).write_text("".join(x for x in lines if json.loads(x)["session"] % 2 == k), encoding="utf-8")
        shards.append(d)
    first = load(shards)
    assert {p.name for p in copies.glob("*/scan.keys.parquet")} == {"scan.keys.parquet"}
    assert len(list(copies.glob("*/store.players.parquet"))) == 2
    with monkeypatch.context() as m:
        _NoLogs(m)
        second = load(shards)
    for a, b in ((first.players, second.players), (first.runs, second.runs), (first.decisions, second.decisions)):
        pd.testing.assert_frame_equal(a, b)
    assert sorted(first.players["session"].unique()) == sorted(load(whole).players["session"].unique())


def test_a_copy_that_cannot_be_written_fails_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache folder that is a file (or a full disk): the read gives its numbers and writes no copy."""
    from econarena.analysis.load import load

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("ECONARENA_COLUMNS", str(blocker))
    run = _grid(tmp_path / "runs")
    assert len(load(run).players) == len(load(run).players) > 0


@pytest.mark.parametrize("lineups", [["melee"], ["b", "a", "ab", "a b"], ["a", "a|b", "a|", "c"], ["x", "x"]])
def test_sessions_are_ordered_by_their_keys_text(lineups: list[str]) -> None:
    """The streamed per-session sums put each label's sessions in the order of their keys' text, as
    cluster_sums sorts them ('a|10' before 'a|9'; a lineup holding '|' falls back on the whole keys)."""
    from econarena.analysis.tables import _key_order

    g = np.random.default_rng(2)
    groups = [(lu, {"session": np.sort(g.choice(1200, size=40 + 7 * i, replace=False))})
              for i, lu in enumerate(lineups)]
    keys = [f"{lu}|{s}" for lu, c in groups for s in c["session"].tolist()]
    lus = [lu for lu, c in groups for _ in c["session"]]
    order, strata = _key_order(groups)
    want = sorted(range(len(keys)), key=keys.__getitem__)
    assert order.tolist() == want
    rank = {lu: k for k, lu in enumerate(sorted(set(lus)))}
    assert strata.tolist() == [rank[lus[k]] for k in want]


@pytest.mark.parametrize("damage", ["flipped", "truncated", "missing"])
def test_a_damaged_copy_is_read_from_the_logs_and_rewritten(tmp_path: Path, copies: Path, damage: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy's file damaged (bytes changed in place, cut short, deleted) is never read: the logs are, with the
    same numbers, and the part is written again whole."""
    from econarena.analysis import columnar, scan, store
    from econarena.analysis.report import build_report

    run = _grid(tmp_path / "runs")
    build_report([run], tmp_path / "r1", n_boot=50, seed=1, transcripts=0)
    target = next(copies.glob("*/store.decisions.parquet"))
    data = target.read_bytes()
    if damage == "flipped":
        target.write_bytes(data[:100] + bytes(b ^ 0xFF for b in data[100:140]) + data[140:])
    elif damage == "truncated":
        target.write_bytes(data[: len(data) // 2])
    else:
        target.unlink()
    parsed: list[Path] = []
    real = scan.iter_records

    def counted(path: Path, kind: str) -> Any:
        parsed.append(path)
        return real(path, kind)
    with monkeypatch.context() as m:
        m.setattr(scan, "iter_records", counted)
        m.setattr(store, "IN_PLACE", 0)  # a copy read in place would meet the damage in the middle of a query
        build_report([run], tmp_path / "r2", n_boot=50, seed=1, transcripts=0)
    assert parsed  # the logs were read
    for name in ("metrics.csv", "glee_effects.csv", "glee_pairs.csv"):
        assert (tmp_path / "r1" / name).read_bytes() == (tmp_path / "r2" / name).read_bytes(), name
    meta = json.loads((target.parent / "meta.json").read_text(encoding="utf-8"))
    assert columnar.file_digest(target) == meta["parts"]["store"]["files"]["decisions"]
    with monkeypatch.context() as m:  # and the rewritten copy is read again
        _NoLogs(m)
        m.setattr(store, "IN_PLACE", 0)
        build_report([run], tmp_path / "r3", n_boot=50, seed=1, transcripts=0)
    assert (tmp_path / "r1" / "metrics.csv").read_bytes() == (tmp_path / "r3" / "metrics.csv").read_bytes()


@pytest.mark.parametrize("spread,collide", [(1, False), (10**12, False), (1, True)])
def test_metric_table_sums_equal_the_frames_with_sessions_far_apart(tmp_path: Path, copies: Path, spread: int,
                                                                    collide: bool,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The streamed per-session sums give the metric table of the rows (cluster_sums on the frames) to the
    last bit, also when session numbers lie far apart (a cell per session, not per number in between), when
    the (label, lineup) pairs' hashes collide (the texts are streamed instead), and from a copy read in place
    as from the logs."""
    from econarena.analysis import store as store_mod
    from econarena.analysis import tables
    from econarena.analysis.load import study
    from econarena.analysis.tables import METRICS, SETTING_COLUMNS, metric_table

    run = _grid(tmp_path / "runs", sessions=5)
    if spread != 1:
        for name in ("runs.jsonl", "decisions.jsonl"):
            lines = (run / name).read_text(encoding="utf-8").splitlines()
            recs = [json.loads(x) for x in lines]
            for r in recs:
                r["session"] = r["session"] * spread + 7
            (run / name).write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    by = (*SETTING_COLUMNS, "label")
    streamed: list[str] = []
    real = tables._text_pairs

    def texts(index: dict[tuple[Any, Any], int]) -> Any:
        streamed.append("texts")
        return real(index)
    if collide:  # every pair one hash
        monkeypatch.setattr(tables, "PAIR_HASH", "hash(0)")
    monkeypatch.setattr(tables, "_text_pairs", texts)
    for in_place in (False, True):
        with monkeypatch.context() as m:
            m.setattr(store_mod, "IN_PLACE", 0 if in_place else 10**9)
            store, _ = study([run])
            try:
                got = metric_table(store, tuple(METRICS), by, n_boot=40, seed=2)
                want = metric_table(store.frames(), tuple(METRICS), by, n_boot=40, seed=2)
            finally:
                store.close()
        assert len(got) == len(want) > 0
        assert got.to_csv(float_format="%.17g") == want.to_csv(float_format="%.17g")
    assert bool(streamed) == collide


def test_a_failed_export_stops_its_reading_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exports' batches come from a second thread: a write that fails raises here, and that thread stops
    after its batch rather than reading the rest of the table."""
    import threading

    import pyarrow.parquet as pq

    from econarena.analysis import store as store_mod
    from econarena.analysis.load import study

    monkeypatch.setenv("ECONARENA_COLUMNS", "off")
    run = _grid(tmp_path / "runs")
    monkeypatch.setattr(store_mod, "EXPORT_BATCH", 2)
    store, _ = study([run])
    try:
        calls = {"n": 0}

        def failing(self: Any, batch: Any, *a: Any, **k: Any) -> None:
            calls["n"] += 1
            raise OSError("disk full")
        monkeypatch.setattr(pq.ParquetWriter, "write_batch", failing)
        with pytest.raises(OSError, match="disk full"):
            store.export(tmp_path / "out")
        assert calls["n"] == 1
        assert not [t for t in threading.enumerate() if t.name == "export"]
    finally:
        store.close()


def _parquet_rows(out: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    return {n: pq.read_table(out / f"{n}.parquet") for n in ("decisions", "runs", "players")}


def test_the_export_beside_the_figures_writes_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A large study's exports are written on a thread and cursor of their own while the figures are drawn:
    the same tables, the same metrics, and the files listed in the same order as an export after them."""
    import threading

    from econarena.analysis import report
    from econarena.analysis import store as store_mod

    run = _grid(tmp_path / "runs", sessions=6)
    names: list[str] = []
    real = store_mod.Store.export

    def export(self: Any, *a: Any, **k: Any) -> Any:
        names.append(threading.current_thread().name)
        return real(self, *a, **k)
    monkeypatch.setattr(store_mod.Store, "export", export)
    after = report.build_report([run], tmp_path / "after", n_boot=50, seed=1, transcripts=0)
    monkeypatch.setattr(report, "EXPORT_BESIDE", 0)
    beside = report.build_report([run], tmp_path / "beside", n_boot=50, seed=1, transcripts=0)
    assert names == ["MainThread", "econarena-export"]
    assert [p.name for p in after.files] == [p.name for p in beside.files]
    a, b = _parquet_rows(tmp_path / "after"), _parquet_rows(tmp_path / "beside")
    assert all(a[n].num_rows > 0 and a[n].equals(b[n]) for n in a)
    assert (tmp_path / "after" / "metrics.csv").read_bytes() == (tmp_path / "beside" / "metrics.csv").read_bytes()


@pytest.mark.parametrize("fails", ["figures", "export"])
def test_a_failure_beside_the_export_stops_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str) -> None:
    """The figures failing (or Ctrl-C while they are drawn) stop the export beside them at its next batch,
    and an export that failed is the report's error: neither leaves its thread running or hides the other."""
    import threading

    import pyarrow.parquet as pq

    from econarena.analysis import report
    from econarena.analysis import store as store_mod

    run = _grid(tmp_path / "runs", sessions=6)
    monkeypatch.setattr(report, "EXPORT_BESIDE", 0)
    monkeypatch.setattr(store_mod, "EXPORT_BATCH", 2)
    written = {"n": 0}
    started = threading.Event()
    real_write = pq.ParquetWriter.write_batch

    def write(self: Any, batch: Any, *a: Any, **k: Any) -> None:
        written["n"] += 1
        started.set()
        if fails == "export":
            raise OSError("disk full")
        time.sleep(0.01)
        real_write(self, batch, *a, **k)
    monkeypatch.setattr(pq.ParquetWriter, "write_batch", write)
    if fails == "figures":
        def draw(*a: Any, **k: Any) -> Any:
            assert started.wait(30)
            raise KeyboardInterrupt
        monkeypatch.setattr(report, "_draw", draw)
    with pytest.raises(KeyboardInterrupt if fails == "figures" else OSError):
        report.build_report([run], tmp_path / "rep", n_boot=50, seed=1, transcripts=0)
    assert not [t for t in threading.enumerate() if t.name in ("econarena-export", "export")]
    batches = len((run / "decisions.jsonl").read_text(encoding="utf-8").splitlines()) / 2
    assert 0 < written["n"] < batches / 2  # stopped long before the decisions' batches of 2 rows were all written


EDGE_ = 64 * 1024  # the key's digest covers this much of each end of a log (columnar.EDGE)


def _contest(root: Path, sessions: int = 400) -> Path:
    """A beauty contest whose runs.jsonl is larger than the two 64 KB edges of the key's digest."""
    from conftest import experiment_dict

    out = root / "contest"
    run_experiment(experiment_dict("beauty_contest", [{"agent": "rational"}, {"agent": "random"}],
                                   {"upper_bound": 100, "prize": 100}, sessions=sessions, runs=1, seed=3), out)
    return out


def _mean_payoffs(report: Path) -> dict[str, float]:
    import csv

    with open(report / "metrics.csv", encoding="utf-8", newline="") as f:
        return {r["label"]: float(r["value"]) for r in csv.DictReader(f) if r["metric"] == "mean_payoff"}


def _logged_means(run: Path) -> dict[str, float]:
    runs = [json.loads(x) for x in (run / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    out: dict[str, list[float]] = {}
    for r in runs:
        for label, pay in zip(r["labels"], r["payoffs"]):
            out.setdefault(label, []).append(pay)
    return {k: sum(v) / len(v) for k, v in out.items()}


def test_a_same_size_edit_with_its_mtime_restored_is_read_from_the_logs(tmp_path: Path, copies: Path) -> None:
    """`touch -r` sets the mtime back, never the ctime: the key changes, and the report follows the logs."""
    import os

    from econarena.analysis.report import build_report

    run = _contest(tmp_path / "runs")
    assert (run / "runs.jsonl").stat().st_size > 3 * EDGE_
    build_report([run], tmp_path / "r1", n_boot=20, seed=1, transcripts=0)
    assert _mean_payoffs(tmp_path / "r1") == pytest.approx(_logged_means(run))
    log = run / "runs.jsonl"
    before = log.stat()
    text = log.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    middle = range(len(lines) // 3, 2 * len(lines) // 3)  # outside both 64 KB edges
    swapped = 0
    for i in middle:  # the winner's prize moved to the loser: the same bytes, in another order
        if '"payoffs":[100.0,0.0]' in lines[i]:
            lines[i] = lines[i].replace('"payoffs":[100.0,0.0]', '"payoffs":[0.0,100.0]')
            swapped += 1
    assert swapped > 10
    edited = "".join(lines)
    assert len(edited) == len(text) and edited[:EDGE_] == text[:EDGE_] and edited[-EDGE_:] == text[-EDGE_:]
    log.write_text(edited, encoding="utf-8")
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))  # touch -r: the mtime restored
    assert (log.stat().st_size, log.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    build_report([run], tmp_path / "r2", n_boot=20, seed=1, transcripts=0)
    means = _mean_payoffs(tmp_path / "r2")
    assert means == pytest.approx(_logged_means(run))  # the logs' numbers, by hand
    n = len(lines)
    old = _mean_payoffs(tmp_path / "r1")
    assert means["rational"] == pytest.approx(old["rational"] - 100 * swapped / n)
    assert means["random"] == pytest.approx(old["random"] + 100 * swapped / n)


@pytest.mark.parametrize("forged", ["link", "writable by others"])
def test_a_copy_folder_not_ones_own_is_never_read(tmp_path: Path, copies: Path, forged: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy folder replaced by a link (to a folder of forged parts with a matching meta.json), or one anyone
    may write, is read as absent: the logs are read, and a report follows them."""
    import os
    import shutil

    from econarena.analysis import scan
    from econarena.analysis.report import build_report

    run = _contest(tmp_path / "runs", sessions=40)
    build_report([run], tmp_path / "r1", n_boot=20, seed=1, transcripts=0)
    [folder] = [p for p in copies.iterdir() if p.is_dir()]
    assert folder.stat().st_mode & 0o077 == 0  # written for this user alone
    if forged == "link":
        elsewhere = tmp_path / "planted"
        shutil.move(str(folder), elsewhere)
        folder.symlink_to(elsewhere, target_is_directory=True)
    else:
        folder.chmod(0o777)
    parsed: list[Path] = []
    real = scan.iter_records

    def counted(path: Path, kind: str) -> Any:
        parsed.append(path)
        return real(path, kind)
    with monkeypatch.context() as m:
        m.setattr(scan, "iter_records", counted)
        build_report([run], tmp_path / "r2", n_boot=20, seed=1, transcripts=0)
    assert run / "runs.jsonl" in parsed  # the logs were read, not the planted copy
    assert (tmp_path / "r1" / "metrics.csv").read_bytes() == (tmp_path / "r2" / "metrics.csv").read_bytes()
    assert not folder.is_symlink() and folder.stat().st_mode & 0o077 == 0  # rewritten as this user's own
    if forged == "link":
        assert os.listdir(tmp_path / "planted")  # what the link led to is left as it was, never written
