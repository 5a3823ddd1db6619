"""Every number the analysis writes, pinned: ``report`` and ``analyze glee`` over fixed run directories give
the outputs recorded in ``tests/golden/analysis.json.gz`` (recorded with the pandas loader before
the analysis was rewritten to stream), so a change of the loader, the engine or the bootstrap's arithmetic
cannot move a metric, an interval or an export by one bit unnoticed. The OLS fits' outputs are the exception:
LAPACK's last bits depend on the CPU's kernels, so they are compared within a stated tolerance
(``LAPACK_REL``).

Inputs: the golden experiments' logs (tests/golden/, every family and the Host's options) written back as
run directories, plus a small GLEE bargaining grid with baseline players (so the linear models have
effects and intervals). Compared: every CSV the report writes, the three parquet exports (as text), the
scorecards' and detail tables' HTML, and ``analyze glee``'s printed models and CSVs. Latencies (clock
readings) are not in the golden logs. After an INTENDED change of a number, rewrite the pin with
``ECONARENA_WRITE_ANALYSIS=1 pytest tests/test_analysis_golden.py`` and say why in the commit.
"""

from __future__ import annotations

import difflib
import gzip
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import run_experiment
from golden_experiments import GOLDEN

pd = pytest.importorskip("pandas")

PIN = GOLDEN / "analysis.json.gz"
# one experiment of every kind the analysis treats differently, kept small so the test takes seconds
DIRS = ("beauty_contest", "bc-rational-history-cot", "bc-grid-shuffle", "spa-self-reask", "english_auction",
        "guessing_game", "guessing-llm", "el_farol_bar", "ultimatum", "resource_exchange-baselines", "buy_sell",
        "bargaining", "bargaining-llm", "negotiation-baselines", "persuasion-baselines", "prisoners_dilemma")
BOOT = 200


def _write_dir(name: str, root: Path) -> Path:
    """A golden experiment's logs as a run directory (lines in the golden files' sorted order)."""
    files = json.loads(gzip.decompress((GOLDEN / f"{name}.json.gz").read_bytes()))
    d = root / name
    d.mkdir(parents=True)
    for file, lines in files.items():
        if file.endswith(".jsonl"):
            text = "".join(line + "\n" for line in lines)
        elif file.endswith(".json"):
            text = "\n".join(lines)
        else:
            text = "\n".join(lines) + "\n"
        (d / file).write_text(text, encoding="utf-8")
    return d


def _glee_grid(root: Path) -> Path:
    """A 2 x 2 bargaining grid, rational Alice against a random Bob and the reverse, logs sorted."""
    doc = {"experiment": {"name": "glee-grid", "game": "bargaining", "sessions": 4, "runs": 1, "seed": 5},
           "game": {"max_rounds": 12},
           "grid": {"game": {"delta_alice": [0.8, 0.9], "money": [100, 10000]}},
           "players": [{"agent": "rational", "label": "R"}, {"agent": "random", "label": "X"}],
           }
    out = root / "glee-grid"
    run_experiment({**doc, "experiment": {**doc["experiment"], "environment": "melee"}}, out)
    for file in ("runs.jsonl", "decisions.jsonl"):  # a fixed line order, whatever the concurrency did
        lines = (out / file).read_text(encoding="utf-8").splitlines(keepends=True)
        (out / file).write_text("".join(sorted(lines)), encoding="utf-8")
    return out


def _clean(text: str, root: Path) -> str:
    return text.replace(str(root), "<ROOT>")


def _html_numbers(page: str, root: Path) -> list[str]:
    """The scorecards and every table of the page (numbers, intervals, published marks), without images,
    the build time and the conversations (their markup is not a number)."""
    page = re.sub(r"<section id='transcripts'.*?</section>", "", page, flags=re.S)
    blocks = re.findall(r"<section class='scorecard'.*?</section>|<table.*?</table>", page, flags=re.S)
    return [_clean(re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", b), root) for b in blocks]


def _no_drawing(fig: Any, out: Path, key: str, sources: Any) -> tuple[Path, Path]:
    """Figures are not numbers: laying them out and encoding them is most of a report's time, so here each
    is closed unsaved and leaves empty files."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    out.mkdir(parents=True, exist_ok=True)
    png, svg = out / f"{key}.png", out / f"{key}.svg"
    png.write_bytes(b"")
    svg.write_bytes(b"")
    return png, svg


def outputs(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    dirs = [_write_dir(n, root / "runs") for n in DIRS] + [_glee_grid(root / "runs")]
    return outputs_of(dirs, root / "report", root, monkeypatch)


def outputs_of(dirs: list[Path], out: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The pinned outputs of report (written to ``out``) and analyze glee over directories already written
    (tests/test_columnar.py reads them twice: from the logs, then from their copies)."""
    from econarena.analysis import figures
    from econarena.analysis.families import glee
    from econarena.analysis.report import build_report

    monkeypatch.setattr(figures, "_save", _no_drawing)
    build_report(dirs, out, n_boot=BOOT, seed=3, transcripts=2)
    found: dict[str, Any] = {}
    for f in sorted(out.glob("*.csv")):
        found[f.name] = _clean(f.read_text(encoding="utf-8"), root).splitlines()
    for f in sorted(out.glob("*.parquet")):
        df = pd.read_parquet(f)
        df = df.drop(columns=[c for c in df.columns if "latency" in c])
        buf = io.StringIO()
        df.to_csv(buf, index=False)
        found[f.name] = _clean(buf.getvalue(), root).splitlines()
    found["report.html"] = _html_numbers((out / "report.html").read_text(encoding="utf-8"), root)
    datas = glee.collect(dirs)
    fits = glee.fit_all(datas)
    found["analyze glee"] = [glee.format_fit(f) for f in fits]
    found["analyze glee --pairs"] = [glee.format_fit(f) for f in glee.fit_all(datas, pairs=True)]
    found["glee_effects.csv (analyze)"] = glee.effects_csv(fits).splitlines()
    tables = [t for t in (glee.pair_table(d) for _, d in sorted(datas.items())) if t is not None]
    found["glee_pairs.csv (analyze)"] = glee.pairs_csv(tables).splitlines()
    return found


# Outputs whose numbers come out of LAPACK (GLEE's OLS fits through statsmodels). OpenBLAS picks its kernels by
# CPU (OPENBLAS_CORETYPE), so their last bits differ between machines: these are compared within LAPACK_REL
# (relative) or one unit of the last printed digit where an output prints fewer digits. Everything else (sums,
# counts, bootstrap draws: orders our own code fixes) is compared to the last bit.
LAPACK_OUTPUTS = frozenset({"glee_effects.csv", "glee_effects.csv (analyze)", "analyze glee",
                            "analyze glee --pairs"})
LAPACK_REL = 1e-9
_NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _close(pinned: str, found: str) -> bool:
    """Two printed numbers agree within the LAPACK tolerance; whole numbers (counts) must be equal."""
    if pinned == found:
        return True
    if not any(c in pinned for c in ".eE"):
        return False
    a, b = float(pinned), float(found)
    mantissa, _, exp = pinned.lower().partition("e")
    places = len(mantissa.partition(".")[2])
    unit = 10.0 ** (int(exp or 0) - places)
    return abs(a - b) <= max(LAPACK_REL * max(abs(a), abs(b)), unit * 1.000001)


def lines_close(pinned: str, found: str) -> bool:
    """A line of a LAPACK output equals its pin but for numbers within the tolerance."""
    if pinned == found:
        return True
    if _NUMBER.split(pinned) != _NUMBER.split(found):
        return False
    return all(_close(a, b) for a, b in zip(_NUMBER.findall(pinned), _NUMBER.findall(found), strict=True))


def differences(found: dict[str, Any], pinned: dict[str, Any]) -> list[str]:
    """What differs from the pin: the exact outputs to the bit, the LAPACK ones within their tolerance."""
    if sorted(found) != sorted(pinned):
        return [f"outputs appeared or disappeared: {sorted(set(found) ^ set(pinned))}"]
    out = []
    for name, lines in pinned.items():
        now = found[name]
        if now == lines:
            continue
        if name in LAPACK_OUTPUTS and len(now) == len(lines) and all(map(lines_close, lines, now)):
            continue
        diff = "\n".join(list(difflib.unified_diff(lines, now, "pinned", "now", lineterm="", n=0))[:16])
        out.append(f"{name} differs from the pinned output:\n{diff[:5000]}")
    return out


def test_report_and_analyze_numbers_equal_the_pinned_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = outputs(tmp_path, monkeypatch)
    if os.environ.get("ECONARENA_WRITE_ANALYSIS"):
        data = json.dumps(found, indent=0, sort_keys=True, ensure_ascii=False).encode("utf-8")
        with open(PIN, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
            fh.write(data)
    pinned = json.loads(gzip.decompress(PIN.read_bytes()))
    problems = differences(found, pinned)
    if problems:
        pytest.fail("\n".join(problems))


def test_the_lapack_tolerance_is_a_tolerance() -> None:
    """The comparison of LAPACK outputs lets the last bits move and nothing more."""
    assert lines_close("a,0.37304124999999744,16", "a,0.37304125000001687,16")
    assert lines_close("coef 0.373 (se 3.742)", "coef 0.374 (se 3.742)")  # a rounding flip in the last digit
    assert not lines_close("coef 0.373 (se 3.742)", "coef 0.375 (se 3.742)")
    assert not lines_close("a,0.37304124999999744,16", "a,0.37304124999999744,17")  # counts stay exact
    assert not lines_close("a,0.373041249,16", "a,0.373051249,16")
    assert not lines_close("delta_alice,0.5", "money,0.5")
    assert not lines_close("a,1.5e-5", "a,1.7e-5")
