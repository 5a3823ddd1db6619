"""Progress on the terminal (a rich bar per experiment: runs, decisions/s, tokens, cost so far, time left) and
in logs (the plain lines, unchanged); rich tables for summary on a terminal; no GGUF conversion bar in a log."""

from __future__ import annotations

import io
import sys

import pytest

from econarena.hosts.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_tokens_and_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = _Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setenv("COLUMNS", "200")
    p = Progress(4, "exp", enabled=True, prices={"gpt-x": (2.0, 8.0)})
    p.usage("api", "gpt-x", 1000, 500)  # priced by its model: 1000 x $2/M + 500 x $8/M = $0.006
    p.usage("local", "other", 20_000, 0)  # no price: tokens only
    p.usage("api", "gpt-x", None, None)  # a reply without token counts changes nothing
    p.step(runs=2, decisions=7)
    p._last = 0.0  # the next step redraws at once
    p.step(runs=1, decisions=1)
    p.close()
    out = screen.getvalue()
    assert "exp" in out and "3/4 runs" in out and "8 decisions (" in out and "left" in out
    assert "21.0k in / 500 out tokens" in out and "$0.0060" in out
    assert p.cost == pytest.approx(0.006) and (p.tokens_in, p.tokens_out) == (21_000, 500)
    assert "started," not in out  # the plain log lines are for logs only


def test_cost_is_shown_only_when_a_price_is_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Terminal())
    p = Progress(1, "exp", enabled=True)
    p.usage("api", "gpt-x", 100, 10)
    assert p.cost is None and "$" not in p.stats() and "100 in / 10 out tokens" in p.stats()
    p.close()


def test_the_plain_lines_are_those_of_before(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(Progress, "LOG_EVERY_S", 0.0)
    monkeypatch.setattr(Progress, "FIRST_LOG_S", 0.0)
    p = Progress(4, "exp", enabled=True, done_before=1, prices={"m": (1.0, 1.0)})
    p.usage("a", "m", 10, 10)
    p.step(runs=1, decisions=3)
    p.close()
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "exp: started, 3 of 4 runs to play, 1 already complete"
    assert err[1].startswith("exp: 2/4 runs, 3 decisions (") and err[1].endswith(" left")
    assert "tokens" not in err[1] and "$" not in err[1] and "\x1b" not in "".join(err)


def test_summary_prints_a_rich_table_on_a_terminal(tmp_path, arena, monkeypatch: pytest.MonkeyPatch) -> None:
    from econarena.cli import main

    doc = arena.experiment_dict("beauty_contest", [{"agent": "rational"}, {"agent": "random"}])
    arena.run_experiment(doc, tmp_path / "r")
    screen = _Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["summary", str(tmp_path / "r")]) == 0
    out = screen.getvalue()
    assert "┏" in out and "label" in out and "rule breaks %" in out  # a boxed table, not the plain text
    assert "rational" in out and "complete runs: 1" in out and "--------" not in out


def test_the_gguf_conversion_draws_no_bar() -> None:
    """transformers' GGUF reader wraps its tensors in a tqdm bar that ignores disable_progress_bar(); in a log
    file each redraw is a line. While converting it is a plain iteration, and restored after."""
    pytest.importorskip("transformers")
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    from econarena.agents.providers.hf import _quiet_gguf_progress

    original = gguf_utils.tqdm
    err = io.StringIO()
    with _quiet_gguf_progress():
        items = list(gguf_utils.tqdm(range(5), desc="Converting and de-quantizing GGUF tensors...", file=err))
    assert items == [0, 1, 2, 3, 4] and err.getvalue() == "" and gguf_utils.tqdm is original
