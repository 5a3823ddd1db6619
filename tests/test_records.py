"""How records are written, read back and counted: orjson lines with json.dumps's content, the summary
counted while a run writes (formats/tally.py) against the summary recomputed from the files, and the parse cache
that lets a report read each runs.jsonl once."""

from __future__ import annotations

import asyncio
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from econarena.analysis.metrics import summarize, write_summary
from econarena.formats.rundir import RUNS, dumps_line, iter_jsonl, loads_line, read_jsonl
from econarena.formats.tally import ExactSum
from econarena.hosts.config import parse_experiment
from econarena.hosts.host import Host, HostOptions

# ---- the encoding -----------------------------------------------------------------------------------


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-10**6, 10**6)
    if kind == 2:
        return rng.choice([0.1, 1e-7, 1e16, 1e22, -0.0, 123456789.123, 5e-324, 1.7976931348623157e308,
                           rng.uniform(-1e9, 1e9), round(rng.gauss(50, 10), 2)])
    if kind == 3:
        return "".join(rng.choice(["a", "é", "中", "😀", '"', "\\", "\n", "\t", "\x00", "/", " ", "\x85",
                                   "\u2028", "\u2029", "\x1e", "\x0c"])
                       for _ in range(rng.randrange(8)))
    if kind == 4:
        return rng.choice([2**63 - 1, -2**63, 2**64 - 1, 10**19])
    if kind == 5:
        return rng.choice(["", "```", "NaN", "null"])
    if kind in (6, 7):
        return {f"k{i}{rng.choice(['', ' ', 'é'])}": _random_value(rng, depth + 1) for i in range(rng.randrange(4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_lines_hold_what_json_dumps_wrote() -> None:
    """Same keys, order, strings and numbers as json.dumps; the stdlib where orjson cannot write or would
    read differently (integers beyond 64 bits, non-string keys, surrogates, NaN tokens of older logs)."""
    rng = random.Random(5)
    for _ in range(3000):
        rec = {"lineup": "melee", "x": _random_value(rng), "y": _random_value(rng)}
        line = dumps_line(rec)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert len(line.decode("utf-8").splitlines()) == 1  # one line for readers that split on U+2028 too
        back = loads_line(line)
        assert back == json.loads(json.dumps(rec)) and list(back) == list(rec)
        assert loads_line(json.dumps(rec).encode()) == json.loads(json.dumps(rec))  # lines of older releases
    beyond = {"big": 10**30, "neg": -(2**63) - 1, "keys": {1: "a"}, "s": "\ud800"}
    line = dumps_line(beyond)  # orjson refuses all four: json.dumps writes the line
    assert loads_line(line) == json.loads(json.dumps(beyond))
    assert type(loads_line(line)["big"]) is int  # not the float orjson would read
    for old in (b'{"a": NaN, "b": -Infinity}\n', b'{"a": 1e999}\n', b'{"a": "\\ud800"}\n'):
        assert repr(loads_line(old)) == repr(json.loads(old))
    for bad in (b"{", b"not json", b'{"a": 1} x'):
        with pytest.raises(ValueError):
            loads_line(bad)


def test_a_reply_with_unicode_line_breaks_stays_one_record_per_line(tmp_path: Path, arena) -> None:
    """A model's reply may hold U+0085, U+2028 or U+2029 (a random-weight model wrote one): JSON allows them
    raw, but str.splitlines() cuts a line there. Every log line must stay one record for such readers."""
    reply = 'I pick\u2028{"answer": 10}\x85 done\u2029'
    doc = arena.experiment_dict("beauty_contest", [{"agent": "scripted", "label": "M", "responses": [reply]},
                                                   {"agent": "rational", "count": 2}], sessions=2)
    out = tmp_path / "o"
    arena.run_experiment(doc, out)
    text = (out / "decisions.jsonl").read_text(encoding="utf-8")
    records = [json.loads(x) for x in text.splitlines()]
    assert len(records) == text.count("\n") == 6
    assert [r["response"] for r in records if r["label"] == "M"] == [reply, reply]
    assert [r["action"] for r in records if r["label"] == "M"] == [10, 10]


def test_a_non_finite_number_is_written_as_null() -> None:
    """The one difference from json.dumps: it wrote the invalid token NaN; a line is valid JSON now."""
    assert json.loads(dumps_line({"a": math.nan, "b": [math.inf]})) == {"a": None, "b": [None]}


# ---- exact sums --------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 5, 1023, 1024, 1025, 5000])
def test_exact_sums_are_fsum_of_everything_in_any_order(n: int) -> None:
    rng = random.Random(n)
    pools = [lambda: rng.uniform(-1e6, 1e6), lambda: rng.choice([1e16, -1e16, 1.0, 1e-16, 3.3]),
             lambda: round(rng.gauss(100, 20), 2), lambda: rng.randint(-10**6, 10**6)]
    for draw in pools:
        xs = [None if rng.random() < 0.05 else math.nan if rng.random() < 0.02 else draw() for _ in range(n)]
        numbers = [x for x in xs if x is not None and x == x]
        for order in (xs, list(reversed(xs)), rng.sample(xs, len(xs))):
            s = ExactSum()
            for x in order:
                s.add(x)
            assert s.value() == math.fsum(numbers)
            assert s.mean() == (math.fsum(numbers) / len(numbers) if numbers else None)
    huge = [1e300, 1e300, -1e300, 1e-300, 3.0] * 900  # cancellation over eleven hundred orders of magnitude
    s = ExactSum()
    for x in huge:
        s.add(x)
    assert s.value() == math.fsum(huge) and s.n > 0  # folded, and still exact


# ---- the summary counted while writing ---------------------------------------------------------------

class _FailsOnce:
    """A text-path agent whose 7th call fails with an API-like error (a run left incomplete)."""

    kind = "openai"
    model = "m"

    def __init__(self, label: str, fail: bool) -> None:
        from econarena.agents.baselines import ScriptedAgent

        self.label, self.fail, self.calls = label, fail, 0
        self.inner = ScriptedAgent(label, ['{"answer": 30}', "no idea", '{"answer": 10, "why": "x"}'])

    async def decide(self, request):  # noqa: ANN001, ANN201
        from econarena.agents.base import Reply

        self.calls += 1
        if self.fail and self.calls == 7:
            return Reply(text="", model=self.model, error="CallError: boom")
        reply = await self.inner.decide(request)
        return Reply(text=reply.text, model=self.model, latency_s=0.001 * self.calls, tokens_in=11,
                     tokens_out=3, cached=self.calls % 2 == 0)


def _play(doc: dict[str, Any], out: Path, monkeypatch: pytest.MonkeyPatch, *, fail: bool, resume: bool) -> Host:
    import econarena.hosts.host as host_mod
    from econarena.agents.registry import create_agent

    def make(agent: str, label: str, **kw: Any) -> Any:
        return _FailsOnce(label, fail) if label == "M" else create_agent(agent, label, **kw)

    monkeypatch.setattr(host_mod, "create_agent", make)
    host = Host(parse_experiment(doc, "t.toml"), out, HostOptions(concurrency=1, quiet=True, resume=resume))
    asyncio.run(host.run())
    return host


def test_the_counted_summary_equals_the_files_through_failures_and_resume(
        tmp_path: Path, arena, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = arena.experiment_dict("beauty_contest", [{"agent": "scripted", "label": "M", "responses": ["x"]},
                                                   {"agent": "random", "count": 2}, {"agent": "level_k", "k": 2}],
                                {"upper_bound": {"uniform": [10, 100]}}, sessions=4, runs=3, reask=1)
    out = tmp_path / "o"
    first = _play(doc, out, monkeypatch, fail=True, resume=False)
    assert first.incomplete == 1
    assert first.dir.tally is not None
    assert summarize(out, first.dir.tally) == summarize(out)  # an incomplete run counts nowhere
    second = _play(doc, out, monkeypatch, fail=False, resume=True)  # the kept runs are counted from the files
    assert second.incomplete == 0
    counted, recomputed = summarize(out, second.dir.tally), summarize(out)
    assert counted == recomputed and counted["runs_complete"] == 12 and counted["runs_incomplete"] == 0
    assert counted["labels"]["M"]["decisions"] > 12 and counted["labels"]["M"]["cached_decisions"] > 0
    written = write_summary(out, second.dir.tally)
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(written))


def test_records_of_an_earlier_process_mean_the_summary_reads_the_files(tmp_path: Path, arena) -> None:
    doc = arena.experiment_dict("beauty_contest", [{"agent": "rational", "count": 3}], sessions=2)
    out = tmp_path / "o"
    arena.run_experiment(doc, out)
    again = Host(parse_experiment(doc, "t.toml"), out, HostOptions(quiet=True))  # no --resume: it appends
    asyncio.run(again.run())
    assert again.dir.tally is None  # it never read the first process's records
    assert summarize(out)["runs_complete"] == 2  # the same runs twice: each counted once


# ---- one parse per runs.jsonl -------------------------------------------------------------------------

def test_a_run_log_is_parsed_once_while_it_is_unchanged(tmp_path: Path, arena, monkeypatch: pytest.MonkeyPatch) -> None:
    import econarena.formats.rundir as rundir

    doc = arena.experiment_dict("beauty_contest", [{"agent": "rational", "count": 3}], sessions=3)
    out = tmp_path / "o"
    arena.run_experiment(doc, out)
    parsed: list[Path] = []
    real = rundir._parse_flagged  # the one line parser (``_parse`` drops its flag: read by the stdlib or not)

    def counting(path: Path, *data: bytes):  # noqa: ANN202
        parsed.append(path)
        return real(path, *data)

    monkeypatch.setattr(rundir, "_parse_flagged", counting)
    first = read_jsonl(out / RUNS, kind="runs", strict=True)
    assert read_jsonl(out / RUNS) == first and list(iter_jsonl(out / RUNS, kind="runs")) == first
    assert parsed == [out / RUNS]
    read_jsonl(out / "decisions.jsonl")
    read_jsonl(out / "decisions.jsonl")
    assert parsed.count(out / "decisions.jsonl") == 2  # decision logs are streamed, never kept
    text = (out / RUNS).read_bytes()
    (out / RUNS).write_bytes(text.replace(b'"session":0', b'"session":7', 1))  # same size, same second
    assert sorted(r["session"] for r in read_jsonl(out / RUNS)) == [1, 2, 7]  # the bytes decide, not the clock
    assert parsed.count(out / RUNS) == 2
    (out / RUNS).write_bytes(text)
    with (out / RUNS).open("a") as fh:  # appended to: parsed again, the new line included
        fh.write('[1, 2]\n')
    assert read_jsonl(out / RUNS, kind="runs") == first and len(read_jsonl(out / RUNS)) == 4
    assert parsed.count(out / RUNS) == 3
    with pytest.raises(Exception, match="line 4: not a runs record"):
        read_jsonl(out / RUNS, kind="runs", strict=True)


# ---- finding the JSON in a reply --------------------------------------------------------------------

def _extract_by_characters(text: str) -> Any:
    """The reply scanner one character at a time, every balanced span compared with every object the
    fallback decodes: the reference the faster one must equal."""
    from econarena.games.fields import _DECODER, FALLBACK_ATTEMPTS, _fenced_blocks, _loads

    if not text:
        return None
    for block in reversed(_fenced_blocks(text)):
        obj = _loads(block)
        if obj is not None:
            return obj
    candidates, opened, spans, in_str, escape = [], [], [], False, False
    for i, ch in enumerate(text):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and opened:
            in_str = True
        elif ch == "{":
            opened.append(i)
        elif ch == "}" and opened:
            start = opened.pop()
            spans.append((start, i))
            if not opened:
                candidates.append(text[start:i + 1])
    for cand in reversed(candidates):
        obj = _loads(cand)
        if obj is not None:
            return obj
    best = None
    import re

    for start in [m.start() for m in re.finditer(r"\{", text)][-FALLBACK_ATTEMPTS:]:
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        inside = any(a < start and b > end - 1 for a, b in spans)  # part of a balanced {...} that is no JSON
        if isinstance(obj, dict) and (best is None or end > best[0]) and not inside:
            best = (end, obj)
    return best[1] if best else None


def test_the_reply_scanner_finds_what_a_character_by_character_scan_finds() -> None:
    from econarena.games.fields import extract_json

    rng = random.Random(11)
    pieces = ['{"answer": 7}', '{"a": "x\\\\"}', '"', "\\", "\\\\", '\\"', "{", "}", "{}", "```", "```json\n",
              '{"bid": 3, "why": "{not} \\"me\\""}', "I think", " ", "\n", "é", '{"k": [1, {"n": null}]}', ":",
              ",", "'", "NaN", '{"x": 1e999}', "reason: {", "}}", "{{", ",}", '{"n": {"answer": 2},}']
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        assert repr(extract_json(text)) == repr(_extract_by_characters(text)), text


def test_a_payoff_or_metric_that_is_not_finite_is_named_not_dropped(tmp_path: Path, arena: Any, capsys: Any) -> None:
    """A hand-edited runs.jsonl with a payoff of NaN (or a metric of Infinity) was read as a missing number:
    the label's mean payoff was taken over the other runs without a word. Summary and report stop with exit 2
    naming the file, the line and the key."""
    from econarena.cli import main

    out = tmp_path / "o"
    arena.run_experiment(arena.experiment_dict("guessing_game", [{"agent": "random"}, {"agent": "rational"}],
                                               sessions=2, seed=1), out)
    lines = (out / RUNS).read_text(encoding="utf-8").splitlines()
    for edit, shown in (("payoffs", "'payoffs[0]' is not a finite number"), ("metrics", "'metrics.x' is not a finite")):
        first = json.loads(lines[0])
        if edit == "payoffs":
            first["payoffs"][0] = float("nan")
        else:
            first["metrics"] = {**(first.get("metrics") or {}), "x": float("inf")}
        (out / RUNS).write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
        for argv in (["summary", str(out)], ["report", str(out), "--out", str(tmp_path / "rep"), "--boot", "20"]):
            capsys.readouterr()
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert f"{out / RUNS}: line 1: not a runs record: {shown}" in err and "Traceback" not in err, err
