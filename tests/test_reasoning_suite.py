"""The reasoning suite (configs/reasoning) end to end: ``econarena suite`` plays one reasoning model at three
efforts against an OpenAI-compatible loopback server that thinks as much as it is asked to, then the report
gives the reasoning section, its figure and ``reasoning.csv``, with numbers checked by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fakeservers  # noqa: E402
from fakeservers import ThinkingServer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ECONARENA = str(Path(sys.executable).with_name("econarena"))

pytestmark = pytest.mark.timeout(300)

# effort -> (reasoning words, the answer): more thinking, closer to the equilibrium (0); the stand-in
# reasoning model (tests/fakeservers.py) plays these three without jitter here
THINKING = {effort: fakeservers.THINKING[effort] for effort in ("low", "medium", "high")}
assert THINKING == {"low": (10, 50), "medium": (30, 30), "high": (90, 10)}


@pytest.fixture(scope="module")
def thinking_server() -> Any:
    srv = ThinkingServer().start()
    yield srv
    srv.stop()


def test_effort_suite_end_to_end(thinking_server: ThinkingServer, tmp_path: Path) -> None:
    models = tmp_path / "models.toml"
    models.write_text(f'["Reasoner"]\nagent = "openai"\nmodel = "fake-reasoner"\n'
                      f'base_url = "{thinking_server.url}/v1"\n', encoding="utf-8")
    prices = tmp_path / "prices.toml"
    prices.write_text('["Reasoner"]\ninput_per_mtok = 1.0\noutput_per_mtok = 4.0\n', encoding="utf-8")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    r = subprocess.run([ECONARENA, "suite", str(REPO / "configs" / "reasoning"), "--only", "^bc-", "--models",
                        str(models), "--out", str(out), "--no-cache", "--quiet", "--prices", str(prices),
                        "--boot", "50"], env=env, capture_output=True, text=True, timeout=280, cwd=tmp_path,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    efforts = {b["reasoning_effort"] for b in (s.body for s in thinking_server.seen)}
    assert efforts == set(THINKING)
    decisions = [json.loads(x) for x in (out / "bc-effort" / "decisions.jsonl").read_text().splitlines()]
    mine = [d for d in decisions if d["label"] == "Reasoner"]
    assert len(mine) == 3 * 3 * 2  # three efforts, three sessions, two runs
    for d in mine:
        words, answer = THINKING[d["reasoning_effort"]]
        assert d["action"] == answer and d["valid"]  # the draft inside the reasoning (answer + 40) is no move
        assert d["reasoning_tokens"] == words and d["reasoning"].endswith(f'{{"answer": {answer + 40}}}')
        assert d["response"] == json.dumps({"answer": answer})
        # the reasoning reached no prompt, its own later ones included (history is on)
        assert all("hmm hmm" not in m["content"] for m in d["messages"] or [])
    table = pd.read_csv(out / "report" / "reasoning.csv").set_index("effort")
    assert list(table.loc[list(THINKING), "reasoning tokens / decision"]) == [10.0, 30.0, 90.0]
    # beauty contest: deviation = |choice - 0| / upper bound 100
    assert list(table.loc[list(THINKING), "deviation from NE"]) == pytest.approx([0.5, 0.3, 0.1])
    assert (table["rule breaks %"] == 0).all() and (table["cut inside reasoning"] == 0).all()
    assert (table["decisions"] == 6).all()
    cost = list(table.loc[list(THINKING), "cost (USD)"])
    assert cost[0] < cost[1] < cost[2]  # same prompts, more output tokens billed
    # the output side of the cost by hand: (words + 3) tokens per decision at 4 USD per million
    tokens_in = sum(d["tokens_in"] for d in mine if d["reasoning_effort"] == "low")
    assert cost[0] == pytest.approx((tokens_in * 1.0 + 6 * 13 * 4.0) / 1e6)
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "data-figure='reasoning_axis'" in html and "Reasoning: effort and budget" in html
    exported = pd.read_parquet(out / "report" / "decisions.parquet")
    assert set(exported.loc[exported["label"] == "Reasoner", "reasoning_tokens"]) == {10.0, 30.0, 90.0}
    # compare: reasoning tokens per decision join the metrics when a side has reasoning
    # (the three efforts share one label here: (10 + 30 + 90) / 3 per decision)
    c = subprocess.run([ECONARENA, "compare", str(out / "bc-effort"), str(out / "bc-effort"), "--boot", "20"],
                       env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert c.returncode == 0, c.stderr[-2000:]
    block = c.stdout.split("== reasoning tokens per decision")[1]
    reasoner = next(line for line in block.splitlines() if line.startswith("Reasoner"))
    assert reasoner.split()[1] == "43.333"
    # the efforts in their natural order, not alphabetical
    rows = pd.read_csv(out / "report" / "reasoning.csv")
    assert list(rows.loc[rows["label"] == "Reasoner", "effort"]) == ["low", "medium", "high"]
    # each effort against low, paired on the session: the deviation falls by 0.2 and by 0.4, by hand
    c = subprocess.run([ECONARENA, "compare", str(out / "bc-effort"), "--by", "reasoning_effort", "--metrics",
                        "mean_deviation", "--boot", "20"], env=env, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert c.returncode == 0, c.stderr[-2000:]
    lines = [line.split() for line in c.stdout.splitlines()
             if " Reasoner " in f" {line} " and line.split()[0] in ("medium", "high")]
    assert [(x[0], x[1], x[8]) for x in lines] == [("medium", "Reasoner", "-0.200"), ("high", "Reasoner", "-0.400")]
    assert "paired on the session" in c.stdout and "2 comparisons, 1 trend" in c.stdout
    # the trend across the three efforts (steps 0, 1, 2): the line's change from low to high, -0.4 by hand
    assert "trend across reasoning_effort in steps (low < medium < high)" in c.stdout
    trend = next(line for line in c.stdout.splitlines() if line.startswith("Reasoner  low..high (3)"))
    assert trend.split()[3:7] == ["-0.400", "[-0.400,", "-0.400]", "*"]
    assert "rational" not in c.stdout and "level-1" not in c.stdout  # baselines: not against their own copies
