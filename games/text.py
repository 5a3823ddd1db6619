"""The one text rule: what a string must be before it enters a game, a log or another player's prompt.

Strings come from outside at many doors (a model's reply, a person at a human seat, another tool's
released files, a TOML file). They all pass the same rule, so that a value accepted at one door cannot
fail at the next (a lone surrogate such as ``\\ud800`` is valid JSON but no UTF-8 text: accepted once, it
made every later write, resume and report fail).

- ``text_problem(s)`` says why ``s`` is not text, or ``None``.
- ``storable(s)`` is ``s`` made safe to record verbatim: each lone surrogate becomes its visible escape
  (``\\ud800``), so the raw reply is kept for reading while the judgement refuses it.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(s: str) -> str | None:
    """Why ``s`` cannot be stored or shown as UTF-8 text (a lone surrogate, with its position), or None."""
    if s.isascii():
        return None
    m = _SURROGATE.search(s)
    if m is None:
        return None
    return f"holds a lone surrogate U+{ord(m.group()):04X} at character {m.start()}, which is not text"


def storable(s: str) -> str:
    """``s`` with every lone surrogate written as its escape (``\\udXXX``); other text is unchanged."""
    if s.isascii() or _SURROGATE.search(s) is None:
        return s
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)
