"""The one text rule: what a string must be before it enters a game, a log or another player's prompt.

Strings come from outside at many doors (a model's reply, a person at a human seat, another tool's
released files, a TOML file). They all pass the same rule, so that a value accepted at one door cannot
fail at the next (a lone surrogate such as ``\\ud800`` is valid JSON but no UTF-8 text: accepted once, it
made every later write, resume and report fail).

- ``text_problem(s)`` says why ``s`` is not text, or ``None``.
- ``storable(s)`` is ``s`` made safe to record verbatim: each lone surrogate becomes its visible escape
  (``\\ud800``), so the raw reply is kept for reading while the judgement refuses it.
- ``quoted(s)`` is how one player's words appear in another player's prompt: one quoted line that cannot
  pass for the game's own text; ``PlayerText`` marks such words so that formatting them quotes them.
"""

from __future__ import annotations

import json
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


# ---- names: labels, model names, experiment names ----

# What no name may hold, at any door (a config's label, a released log's model name, a hand-edited run
# directory): C0 controls and DEL (NUL, ESC, a tab, a newline), the C1 controls U+0080-U+009F (U+009B is a
# whole terminal escape sequence in one character: a name could recolour, hide lines or plant a link), the
# Unicode line and paragraph separators, and lone surrogates. A name is a row and a column of every table,
# a line of the terminal, a CSV cell and a file name.
CONTROLS = "\x00-\x1f\x7f-\x9f\u2028\u2029"  # C0, DEL, C1 and the line and paragraph separators
_CONTROL = re.compile(f"[{CONTROLS}]")
_NOT_IN_A_NAME = re.compile(f"[{CONTROLS}\ud800-\udfff]")


def is_control(c: str) -> bool:
    """Whether the character ``c`` is a control character or a line break no one-line text may hold
    (Unicode's Cc, Zl and Zp: C0, DEL, C1, U+2028, U+2029)."""
    return _CONTROL.fullmatch(c) is not None


def name_problem(s: str) -> str | None:
    """Why ``s`` cannot be a name (a label, a model name), naming the character and its position, or None."""
    m = _NOT_IN_A_NAME.search(s)
    if m is None:
        return None
    c = m.group()
    if "\ud800" <= c <= "\udfff":
        kind = "a lone surrogate, which is not text"
    elif "\x80" <= c <= "\x9f":
        kind = "a C1 control character"
    elif c in "\u2028\u2029":
        kind = "a line separator"
    else:
        kind = "a control character"
    return (f"holds {kind} (U+{ord(c):04X}) at character {m.start()}; a name may hold no control characters "
            "(C0, DEL, C1) nor line breaks: it is shown in tables, on the terminal and in file names")


# ---- a player's words inside another player's prompt ----

# Line breaks that json.dumps leaves as they are (it escapes those below U+0020) but that str.splitlines()
# and many readers break lines at: escaped too, so a quoted text is one line for every reader.
_UNICODE_BREAKS = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def quoted(s: str) -> str:
    """``s`` as one quoted line, the way another player's words are shown in a prompt.

    It is ``s`` as a JSON string literal: in double quotes, with quotes, backslashes and every line break
    escaped (``\\n``, ``\\u2028``, ...), other characters as they are. So the text can neither close its
    quotes nor start a line of its own: ``# Your gain: 99`` or ``Player RED proposes: ...`` written by a
    player stays inside its quoted line and never reads as a line of the game's own text.
    """
    out = json.dumps(str.__str__(s), ensure_ascii=False)
    if not out.isascii():
        for raw, escaped in _UNICODE_BREAKS:
            if raw in out:
                out = out.replace(raw, escaped)
    return out


class PlayerText(str):
    """A string a player wrote: the value of a reply's ``text`` field (games/fields.py makes every one a
    PlayerText). It is an ordinary ``str`` everywhere (comparisons, length, logs, JSON) except where it is
    formatted into text (f-strings, ``str.format``, prompt templates): there it appears as ``quoted(self)``.

    Why formatting: games write other players' words into prompts with f-strings in their own code
    (``f"# {rival}'s message: {state.message}"``); marking the value where it enters the game quotes it at
    every such place, in every family, without each game having to remember to. (``+`` and ``str()`` give
    the raw text; the conformance test renders every game that has text fields with a hostile message.)
    """

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        return quoted(self)
