"""What a long run is doing: runs and decisions done, decisions per second, tokens and cost so far, time left.

On a terminal, one rich progress bar per experiment (a suite stacks them: each finished bar stays on
screen). Elsewhere (CI, nohup, a log file) plain lines: the first at once, then after 2, 4, 8 ... seconds
up to every LOG_EVERY_S, so a log shows the run started and how fast it goes without flooding. Rates
count only this process's work, never the runs a resume found finished. Cost is shown only when a price
file names the label or its model (``--prices``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any

from ..formats.prices import cost_usd, price_of


def _isatty(stream: Any) -> bool:
    """Whether ``stream`` is a terminal; False for a closed or missing one (``2>&-`` leaves None)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _tokens(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e4 else str(n)


class Progress:
    """Progress of one experiment. ``step`` is called on every run and decision (the Host's hot path), so
    it does the least it can: counts, and at most ten redraws a second."""

    LOG_EVERY_S = 30.0
    FIRST_LOG_S = 2.0

    def __init__(self, total: int, label: str, enabled: bool, done_before: int = 0,
                 prices: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.total, self.label = total, label
        self.enabled = enabled
        self.tty = _isatty(sys.stderr)
        self.before = done_before
        self.runs = 0
        self.decisions = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.cost: float | None = None  # USD so far; None while no decision had a known price
        self.prices = dict(prices or {})
        self.start = time.perf_counter()
        self._last = self.start
        self._gap = self.FIRST_LOG_S
        self._bar: Any = None
        if enabled and not self.tty:
            resumed = f", {done_before} already complete" if done_before else ""
            self._write(f"{label}: started, {total - done_before} of {total} runs to play{resumed}\n")
        elif enabled:
            try:
                self._bar = _Bar(self)
            except (OSError, ValueError, AttributeError):  # the terminal went away before the first draw
                self.enabled = False

    def _write(self, text: str) -> None:
        """Progress is a courtesy: a terminal that went away (SIGHUP, EIO) or a closed stderr must not
        fail the run or keep its manifest from being written, so the line is dropped and progress stops."""
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            self.enabled = False

    def _left(self) -> str:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        done = self.before + self.runs
        if self.runs > 0 and done < self.total:
            return f"about {duration((self.total - done) * elapsed / self.runs)} left"
        return ""

    def line(self) -> str:
        """The plain line (logs): runs, decisions and their rate, time left."""
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        left = self._left()
        return (f"{self.label}: {self.before + self.runs}/{self.total} runs, {self.decisions} decisions "
                f"({self.decisions / elapsed:.1f}/s){', ' + left if left else ''}")

    def stats(self) -> str:
        """The bar's text: the plain line's numbers plus tokens and, with prices, cost so far."""
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        parts = [f"{self.before + self.runs}/{self.total} runs",
                 f"{self.decisions:,} decisions ({self.decisions / elapsed:.1f}/s)"]
        if self.tokens_in or self.tokens_out:
            parts.append(f"{_tokens(self.tokens_in)} in / {_tokens(self.tokens_out)} out tokens")
        if self.cost is not None:
            parts.append(f"${self.cost:.4f}")
        left = self._left()
        if left:
            parts.append(left)
        return " · ".join(parts)

    def usage(self, label: str, model: str | None, tokens_in: int | None, tokens_out: int | None,
              cached: bool = False) -> None:
        """Count one reply's tokens (and its cost, when a price names the label or the model); a reply from
        the response cache counts too: the bar shows what the run's calls are worth."""
        tin, tout = tokens_in or 0, tokens_out or 0
        if not (tin or tout):
            return
        self.tokens_in += tin
        self.tokens_out += tout
        if self.prices:
            price = price_of(self.prices, label, [model] if model else [])
            if price is not None:
                self.cost = (self.cost or 0.0) + cost_usd(price, tin, tout)

    def step(self, runs: int = 0, decisions: int = 0) -> None:
        self.runs += runs
        self.decisions += decisions
        if not self.enabled:
            return
        now = time.perf_counter()
        finished = self.before + self.runs >= self.total
        if self.tty and (now - self._last > 0.1 or (runs and finished)):
            self._last = now
            self._drawn(self._bar.update)
        elif not self.tty and now - self._last >= self._gap:
            self._last = now
            self._gap = min(self._gap * 2, self.LOG_EVERY_S)
            self._write(self.line() + "\n")

    def _drawn(self, draw: Any) -> None:
        """A redraw of the bar, dropped (and the bar with it) when the terminal has gone away."""
        try:
            draw()
        except (OSError, ValueError, AttributeError):
            self.enabled = False

    def close(self) -> None:
        if self._bar is not None:
            if self.enabled:
                self._drawn(self._bar.close)
            else:
                self._drawn(self._bar.rich.stop)
            self._bar = None


class _Bar:
    """A rich progress bar on stderr, redrawn by ``Progress.step`` (not by a refresh thread of its own)."""

    def __init__(self, progress: Progress) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        self.owner = progress
        self.rich = Progress(TextColumn("[bold]{task.description}"), BarColumn(bar_width=24),
                             TextColumn("{task.fields[stats]}"), console=Console(file=sys.stderr),
                             auto_refresh=False, transient=False)
        self.task = self.rich.add_task(progress.label, total=max(progress.total, 1), completed=progress.before,
                                       stats=progress.stats())
        self.rich.start()

    def update(self) -> None:
        p = self.owner
        self.rich.update(self.task, completed=p.before + p.runs, stats=p.stats())
        self.rich.refresh()

    def close(self) -> None:
        self.update()
        self.rich.stop()
