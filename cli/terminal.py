"""Tables on the terminal: rich's boxed tables when stdout is a terminal, the plain aligned text otherwise.

Why both: a person at a terminal reads a boxed, coloured table more easily; a log, a pipe or a test reads
the plain text, which stays byte for byte what it was (scripts parse it).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def is_terminal() -> bool:
    return sys.stdout.isatty()


def show(head: Sequence[str], rows: Sequence[Sequence[str]], plain: str, *, left: int = 1, title: str | None = None,
         footer: str | None = None) -> None:
    """Print the table: rich on a terminal (columns before ``left`` left-aligned, the rest right-aligned
    numbers), else ``plain`` as it is."""
    if not is_terminal():
        print(plain)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i < left else "right", overflow="fold")
    for r in rows:
        table.add_row(*map(str, r))
    console = Console()
    console.print(table)
    if footer:
        console.print(footer, highlight=False)
