"""``bench --max-cost`` stops where the cap stops it, and says how far it got: a decision is not refused
because other calls' reservations are in flight (that stopped a bench at 0-34 % of its cap saying the budget
was reached); it stops when what is spent plus the next call's worst case would pass the cap.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_bench import bench_args, prices_file, scripted_reply, served_usd, small_suite

from econarena.cli import main
from econarena.formats.prices import Budget

pytestmark = pytest.mark.timeout(300)


def test_reservations_in_flight_do_not_refuse_a_decision() -> None:
    """By hand: a 10 USD cap with 9 USD held for calls in flight and 1 spent lets the next decision start (its
    own attempt waits for room); with 10 spent it does not."""
    b = Budget(10.0, {"m": (1e6, 1e6)})  # a dollar a token
    assert b.hold(9.0)
    b.spent = 1.0
    assert b.allows() and b.refused == 0
    b.release(9.0)
    assert b.reserve("P", "m", 5, 4) == pytest.approx(9.0) and b.reserved == pytest.approx(9.0)
    assert b.reserve("P", "m", 1, 1) is None  # 1 + 9 + 2 > 10, but calls are in flight: not a refusal yet
    assert b.refused == 0
    b.release(9.0)
    assert b.reserve("P", "m", 6, 4) is None and b.refused == 1 and b.last_worst == pytest.approx(10.0)
    b.spent = 10.0
    assert not b.allows()


def test_a_capped_bench_spends_up_to_what_the_next_worst_case_allows(server: Any, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    server.reset()
    server.reply = scripted_reply
    server.latency = 0.02
    suite = small_suite(tmp_path)
    prices = prices_file(tmp_path)
    assert main(bench_args(server, suite, tmp_path / "whole" / "runs", "--prices", str(prices))) == 0
    cost = json.loads((tmp_path / "whole" / "runs" / "fake" / "bench.json").read_text(encoding="utf-8"))["cost_usd"]
    cap = 0.7 * cost
    n0 = server.count()
    capsys.readouterr()
    assert main(bench_args(server, suite, tmp_path / "runs", "--prices", str(prices), "--max-cost", str(cap),
                           "--concurrency", "16")) == 3
    result = json.loads((tmp_path / "runs" / "fake" / "bench.json").read_text(encoding="utf-8"))
    err = capsys.readouterr().err
    found = re.search(r"the --max-cost budget: \$([\d.]+) spent of \$([\d.e+]+), and the next call could cost up "
                      r"to \$([\d.]+)", err)
    assert found, err
    spent, limit, worst = (float(x) for x in found.groups())
    assert spent == pytest.approx(result["spent_usd"], abs=1e-4) and limit == pytest.approx(cap)
    assert served_usd(server, n0) <= cap  # still a cap
    assert spent + worst > cap  # it stopped because the next call could not fit, not while others were in flight
