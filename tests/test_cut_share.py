"""The share of replies cut at max_tokens stands beside the invalid share, in ``summary`` and the report's
table: a player whose every reply was cut broke no rule, so without it the table read as a clean run."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from fakeservers import FakeLLMServer, ok

from econarena.cli import main


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _row(table: str, label: str) -> list[str]:
    """The cells of ``label``'s row in a printed summary table (cells are split on two spaces or more)."""
    lines = table.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("label "))  # the table, not the findings above
    line = next(x for x in lines[start:] if x.startswith(label + " "))
    return re.split(r"\s{2,}", line.strip())


@pytest.mark.usefixtures("openai_path")
def test_an_all_cut_player_shows_its_cut_share_in_summary_and_report(
        server: FakeLLMServer, tmp_path: Path, arena: SimpleNamespace, capsys: pytest.CaptureFixture[str]) -> None:
    server.reset()
    doc = arena.experiment_dict("beauty_contest", [
        {"agent": "openai", "label": "cut", "model": "m", "base_url": f"{server.url}/v1", "max_tokens": 5},
        {"agent": "openai", "label": "mixed", "model": "m2", "base_url": f"{server.url}/v1", "max_tokens": 5},
        {"agent": "rational"}], sessions=4, seed=3)
    path = tmp_path / "bc.toml"
    path.write_text(arena.to_toml(doc), encoding="utf-8")
    # session by session (--concurrency 1), seat by seat: "cut" is always cut before its answer; "mixed" is cut
    # once, breaks the rules' shape once (no JSON) and answers twice
    server.script(ok('{"answer": 3', cut=True), ok('{"answer": 3', cut=True),
                  ok('{"answer": 3', cut=True), ok("no"),
                  ok('{"answer": 3', cut=True), ok('{"answer": 3}'),
                  ok('{"answer": 3', cut=True), ok('{"answer": 5}'))
    out = tmp_path / "o"
    code, _ = _cli(capsys, "run", str(path), "--out", str(out), "--concurrency", "1", "--no-cache")
    assert code == 0
    by_label: dict[str, list[str | None]] = {}
    for d in arena.sorted_decisions(out):
        by_label.setdefault(d["label"], []).append(d["violation"])
    assert by_label["cut"] == ["truncated"] * 4
    assert by_label["mixed"] == ["truncated", "parse_error", None, None]
    code, table = _cli(capsys, "summary", str(out))
    assert code == 0
    head = _row(table, "label")
    assert head[-2:] == ["cut at max_tokens %", "invalid %"]
    # cut: 4 of 4 replies cut, none invalid; mixed: 1 of 4 cut (25.0), 1 of 4 invalid (25.0); rational: 0 and 0
    assert _row(table, "cut")[-2:] == ["100.0", "0.0"]
    assert _row(table, "mixed")[-2:] == ["25.0", "25.0"]
    assert _row(table, "rational")[-2:] == ["0.0", "0.0"]
    assert _row(table, "cut")[head.index("rule breaks %")] == "0.0"  # what alone read as a clean run

    assert _cli(capsys, "report", str(out), "--out", str(tmp_path / "rep"))[0] == 0
    m = pd.read_csv(tmp_path / "rep" / "metrics.csv").set_index(["label", "metric"])["value"]
    assert m["cut", "truncated_pct"] == 100.0 and m["cut", "violations_per_decision_pct"] == 0.0
    assert m["mixed", "truncated_pct"] == 25.0 and m["mixed", "violations_per_decision_pct"] == 25.0
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    at = page.index("cut at max_tokens (% of decisions)")
    table_html = page[page.rindex("<table", 0, at):page.index("</table>", at)]
    heads = re.findall(r"<th>(.*?)</th>", table_html[:table_html.index("</thead>")])
    rows = {r[0]: r for r in (re.findall(r"<td>(.*?)</td>", tr) for tr in table_html.split("<tr>")) if r}
    column = heads.index("cut at max_tokens (% of decisions)")  # the first <th> heads the label column
    assert rows["cut"][column].startswith("100.000 ")  # the all-cut player is visible in the report view
    assert rows["mixed"][column].startswith("25.000 ")
    assert rows["cut"][heads.index("violations per decision (% of decisions)")].startswith("0.000 ")
