"""Keeping a reasoning model's thinking apart from its answer, for every form a reply arrives in.

Why a module of its own, pure and provider-independent: the answer is what the game judges, the reasoning
is what we store and count, and mixing them changes numbers in silence (a draft ``{"answer": 90}`` inside
``<think>`` judged as the move). Every provider (and any lean HTTP path reading a raw JSON message) calls
the same two functions on plain strings and dicts and gets one small frozen :class:`ReplyParts` back.

Forms understood:

- an OpenAI-compatible message dict: ``content`` beside ``reasoning_content`` (DeepSeek, SGLang, older
  vLLM), ``reasoning`` (vLLM, Ollama, OpenRouter, Groq) or ``thinking`` (Ollama's own API), and
  OpenRouter's ``reasoning_details`` list (``reasoning.text``, ``reasoning.summary``, and
  ``reasoning.encrypted``, which is hidden reasoning);
- reasoning inline in the text: ``<think>...</think>`` (also ``<thinking>``), in any case, with attributes
  or self-closed; a closing tag with no opening one (the chat template opened it in the prompt, as Qwen3's
  and the DeepSeek-R1 distills' do); several blocks (a second ``<think>`` after an answer); or a
  configurable end marker for other templates (gpt-oss: ``<|channel|>final<|message|>``).

The rules, chosen so that nothing written inside reasoning can ever be judged as the move:

- every reasoning block is removed from the answer, wherever it stands;
- a tag inside a JSON object of the answer that parses whole (``{"reason": "I <think> it is 40"}``), or a
  word that only begins like one (``<think-tank>``), is text of the answer, not a block;
- a reply that ends inside a reasoning block (an opening tag never closed, or, with ``opened=True`` or an
  end marker, no end at all) is ``unfinished``; what stands before the block is still its answer. At the
  token limit the caller records it as truncated, never as a move; where the server said the model
  stopped on its own, the answer before the block is judged, and a reply with none is said to have ended
  inside its reasoning (``agents/llm.py``, ``hosts/host.py``), not to have hit a token limit;
- an answer left empty after the reasoning stays empty (the game then judges it unreadable);
- with a server-side reasoning parser, ``content`` of ``null`` beside reasoning text means the parser
  never saw the reasoning end: unfinished; an empty string ``""`` is an empty answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ReplyParts", "reasoning_tokens", "split_message", "split_text"]


@dataclass(slots=True)
class ReplyParts:
    """A reply split into what the game judges and what the model thought first (read-only by convention:
    not frozen, because a frozen dataclass's constructor costs four times as much, on every call).

    ``reasoning`` is the reasoning as text ("" when there is none or it was not shown); ``hidden`` says the
    model reasoned but the text was withheld (encrypted, redacted, or only counted in tokens);
    ``unfinished`` says the reply ended inside its reasoning; ``tokens`` is the provider's count of
    reasoning tokens, when it gives one.
    """

    answer: str
    reasoning: str = ""
    hidden: bool = False
    unfinished: bool = False
    tokens: int | None = None

    @property
    def reasoned(self) -> bool:
        """Whether any reasoning happened (shown, hidden or counted)."""
        return bool(self.reasoning) or self.hidden or bool(self.tokens)


# an opening tag: <think>, <THINK>, <think type="x">, <thinking>, and self-closed <think/>; a closing tag.
# The name ends at a space, '/' or '>': <think-tank> and <thinker> are words of the answer, not tags
_TAG = re.compile(r"<(/?)\s*(?:think|thinking)(?=[\s/>])[^<>]*?(/?)>", re.IGNORECASE)
_DECODER = json.JSONDecoder()
_MOST_OBJECTS = 256  # '{' tried as the start of a JSON object per reply: a reply of braces stays linear


def _json_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds whole JSON objects (start, end), left to right: a tag inside one is the text of
    one of its strings. Only an object that parses counts, so an unbalanced quote in prose never hides a
    block (a draft inside it stays reasoning)."""
    spans: list[tuple[int, int]] = []
    at, tries = text.find("{"), 0
    while at >= 0 and tries < _MOST_OBJECTS:
        tries += 1
        try:
            _, end = _DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):
            at = text.find("{", at + 1)
            continue
        spans.append((at, end))
        at = text.find("{", end)
    return spans
# what must be in a text for a tag to be possible (cheap test before the regex)
_HINT = re.compile(r"think", re.IGNORECASE)


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else None


def split_text(text: str | None, *, end: str | None = None, opened: bool = False,
               tokens: int | None = None) -> ReplyParts:
    """Split a reply whose reasoning, if any, is inline in its text.

    ``end``: a template's own end-of-reasoning marker (case-sensitive, literal); everything before its
    first occurrence is reasoning, everything after it the answer; with no marker in the text the reply is
    unfinished when ``opened`` (the template started the reply inside its reasoning), else all answer.
    Without ``end``: ``<think>`` tags as described in the module's docstring; ``opened`` says the prompt
    already opened a block, so the text starts inside it.
    """
    if not text:
        return ReplyParts("", "", False, opened, tokens)
    if end:
        at = text.find(end)
        if at < 0:
            return ReplyParts("", text.strip(), False, True, tokens) if opened else ReplyParts(text, tokens=tokens)
        return ReplyParts(text[at + len(end):].strip(), text[:at].strip(), False, False, tokens)
    if not opened and _HINT.search(text) is None:  # the common case: no tag at all
        return ReplyParts(text, tokens=tokens)
    answer: list[str] = []
    thought: list[str] = []
    inside = opened
    pos = 0
    spans: list[tuple[int, int]] | None = None  # the JSON objects of the text, found at the first tag outside
    for m in _TAG.finditer(text):
        closing, selfclosed = m.group(1), m.group(2)
        chunk = text[pos:m.start()]
        if not inside and text.find("{", 0, m.start()) >= 0:  # only an object begun before it can hold it
            if spans is None:
                spans = _json_spans(text)
            if any(a < m.start() and m.end() <= b for a, b in spans):  # {"reason": "I <think> it is 40"}: words
                answer.append(text[pos:m.end()])
                pos = m.end()
                continue
        if closing:
            # a closing tag ends a block; one with no block open means the text up to here was reasoning
            # (the template opened it), so it is never answer either
            thought.append(chunk)
            inside = False
        elif selfclosed:  # <think/>: an empty block
            (thought if inside else answer).append(chunk)
        elif inside:  # an opening tag inside a block: the block goes on (nested tags are its text)
            thought.append(chunk)
        else:
            answer.append(chunk)
            inside = True
        pos = m.end()
    (thought if inside else answer).append(text[pos:])
    reasoning = "\n".join(t.strip() for t in thought if t.strip())
    return ReplyParts("".join(answer).strip(), reasoning, False, inside, tokens)


def reasoning_tokens(usage: Mapping[str, Any] | None) -> int | None:
    """The reasoning tokens an OpenAI-style ``usage`` reports: ``completion_tokens_details.reasoning_tokens``
    (OpenAI, vLLM, DeepSeek) or a top-level ``reasoning_tokens``; None when it says nothing."""
    if type(usage) is not dict and not isinstance(usage, Mapping):  # dict first: the ABC check is slow
        return None
    details = usage.get("completion_tokens_details")
    if details is not None and (type(details) is dict or isinstance(details, Mapping)):
        n = _int(details.get("reasoning_tokens"))
        if n is not None:
            return n
    return _int(usage.get("reasoning_tokens"))


_FIELDS = ("reasoning_content", "reasoning", "thinking")
_EXTRA = frozenset((*_FIELDS, "reasoning_details"))


def _details(items: Any) -> tuple[list[str], bool]:
    """OpenRouter's ``reasoning_details``: the texts and summaries it shows, and whether some were encrypted."""
    texts: list[str] = []
    hidden = False
    if not isinstance(items, list):
        return texts, hidden
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "reasoning.encrypted":
            hidden = True
        elif kind == "reasoning.summary" and isinstance(item.get("summary"), str):
            texts.append(item["summary"])
            hidden = True  # a summary stands for reasoning that was not shown
        elif isinstance(item.get("text"), str):
            texts.append(item["text"])
    return texts, hidden


def split_message(message: Mapping[str, Any], usage: Mapping[str, Any] | None = None, *,
                  end: str | None = None, opened: bool = False) -> ReplyParts:
    """Split an OpenAI-compatible chat message (the JSON ``choices[0].message`` as a dict).

    Reasoning may come in a separate field (see the module docstring), inline in ``content`` (a server with
    no reasoning parser), or both: all of it is kept, in that order. ``usage`` (the completion's, if given)
    supplies the reasoning token count; reasoning counted there but shown nowhere is ``hidden`` (OpenAI's
    own reasoning models never return the text). Non-string fields are ignored, never judged.
    """
    content = message.get("content")
    if not _EXTRA.intersection(message) and (not isinstance(usage, Mapping) or "reasoning_tokens" not in usage
                                             and "completion_tokens_details" not in usage):
        # the common case, a message with no reasoning field and usage without details
        return split_text(content if isinstance(content, str) else None, end=end, opened=opened)
    separate: list[str] = []
    for name in _FIELDS:
        value = message.get(name)
        # a server may fill two aliases with the same text: kept once
        if isinstance(value, str) and value.strip() and value.strip() not in separate:
            separate.append(value.strip())
    texts, hidden = _details(message.get("reasoning_details"))
    for t in texts:
        if t.strip() and t.strip() not in separate:
            separate.append(t.strip())
    tokens = reasoning_tokens(usage)
    if not isinstance(content, str):
        content = None
    inline = split_text(content, end=end, opened=opened and not separate, tokens=tokens)
    reasoning = "\n".join([*separate, inline.reasoning] if inline.reasoning else separate)
    # a parser that never saw the reasoning end leaves content null beside the reasoning
    unfinished = inline.unfinished or (content is None and bool(separate) and not hidden)
    hidden = hidden or (not reasoning and bool(tokens))
    if not separate and not hidden:
        return inline
    return ReplyParts(inline.answer, reasoning, hidden, unfinished, tokens)
