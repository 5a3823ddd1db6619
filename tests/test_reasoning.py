"""The reasoning splitter (agents/reasoning.py): every form a reply arrives in, and the hostile set.

Each case states what the game must judge (the answer) and whether the reply ended inside its reasoning:
no draft written inside reasoning may ever reach the answer.
"""

from __future__ import annotations

import pytest

from econarena.agents.reasoning import ReplyParts, reasoning_tokens, split_message, split_text

DRAFT = 'I could say {"answer": 90}'


@pytest.mark.parametrize(("text", "answer", "reasoning", "unfinished"), [
    ('{"answer": 5}', '{"answer": 5}', "", False),  # no reasoning at all
    (f'<think>{DRAFT}</think>{{"answer": 50}}', '{"answer": 50}', DRAFT, False),
    (f"<think>{DRAFT}</think>", "", DRAFT, False),  # the case: nothing after the reasoning
    (f"<think>{DRAFT}</think>   \n", "", DRAFT, False),  # only whitespace after it
    (f"<think>{DRAFT}", "", DRAFT, True),  # cut while still thinking
    (f'<THINK>{DRAFT}</Think>{{"answer": 7}}', '{"answer": 7}', DRAFT, False),  # odd case
    (f'<think type="x" id=1>{DRAFT}</think >{{"answer": 7}}', '{"answer": 7}', DRAFT, False),  # attributes
    (f'<thinking>{DRAFT}</thinking>{{"answer": 7}}', '{"answer": 7}', DRAFT, False),
    (f'{DRAFT}</think>{{"answer": 3}}', '{"answer": 3}', DRAFT, False),  # the template opened the block
    ('{"answer": 3}</think>', "", '{"answer": 3}', False),  # all of it was reasoning
    (f'<think>a</think>{{"answer": 4}}<think>{DRAFT}</think>', '{"answer": 4}', f"a\n{DRAFT}", False),
    (f'<think>a</think>{{"answer": 4}}<think>{DRAFT}', '{"answer": 4}', f"a\n{DRAFT}", True),  # second, open
    ('<think/>{"answer": 2}', '{"answer": 2}', "", False),  # self-closed: empty reasoning
    ('<think>\n\n</think>\n\n{"answer": 2}', '{"answer": 2}', "", False),  # thinking switched off (Qwen3)
    (f'<think>x<think>{DRAFT}</think>y</think>{{"answer": 1}}', '{"answer": 1}', f"x\n{DRAFT}\ny", False),
    (f'Sure. <think>{DRAFT}</think> {{"answer": 6}}', 'Sure.  {"answer": 6}', DRAFT, False),
    ('I think {"answer": 8}', 'I think {"answer": 8}', "", False),  # the word, not a tag
    # a tag inside a JSON string of the answer is the model's words, not a block
    ('{"chosen_number": 40, "reason": "I <think> it is 40"}',
     '{"chosen_number": 40, "reason": "I <think> it is 40"}', "", False),
    ('{"answer": 4, "why": "no </think> here"}', '{"answer": 4, "why": "no </think> here"}', "", False),
    ('{"a": "say \\"<think>\\" now"}', '{"a": "say \\"<think>\\" now"}', "", False),  # escaped quotes
    # a word that only begins like a tag
    ('<think-tank> {"answer": 9}', '<think-tank> {"answer": 9}', "", False),
    ('<thinker>{"answer": 9}</thinker>', '<thinker>{"answer": 9}</thinker>', "", False),
    # after a closed string, a tag is a tag again; the answer before an unclosed block stays the answer
    (f'{{"answer": 40}} <think>{DRAFT}', '{"answer": 40}', DRAFT, True),
    (f'{{"r": "a"}} <think>{DRAFT}</think>{{"answer": 2}}', '{"r": "a"} {"answer": 2}', DRAFT, False),
    # an unbalanced quote, or an escaped backslash before a quote, never hides a block: the draft stays
    # reasoning (only a JSON object that parses whole holds tags as its words)
    (f'He said "hi <think>{DRAFT}</think>{{"answer": 5}}', 'He said "hi {"answer": 5}', DRAFT, False),
    (f'{{"a": "x\\\\"}} <think>{DRAFT}</think>{{"answer": 1}}', '{"a": "x\\\\"} {"answer": 1}', DRAFT, False),
    (f'{{"a": "<think>{DRAFT}</think>"}}', '{"a": ""}', DRAFT, False),
    ("", "", "", False),
])
def test_hostile_inline(text: str, answer: str, reasoning: str, unfinished: bool) -> None:
    parts = split_text(text)
    assert (parts.answer, parts.reasoning, parts.unfinished, parts.hidden) == (answer, reasoning, unfinished, False)
    assert "90" not in parts.answer  # no draft from inside reasoning is ever the move


def test_opened_by_template() -> None:
    """With the block opened in the prompt, a reply with no closing tag is all reasoning, unfinished."""
    assert split_text(DRAFT, opened=True) == ReplyParts("", DRAFT, False, True)
    assert split_text(f'{DRAFT}</think>{{"answer": 2}}', opened=True).answer == '{"answer": 2}'
    assert split_text("", opened=True).unfinished


def test_end_marker() -> None:
    end = "<|channel|>final<|message|>"
    text = f'<|channel|>analysis<|message|>{DRAFT}<|end|><|start|>assistant{end}{{"answer": 11}}'
    parts = split_text(text, end=end)
    assert parts.answer == '{"answer": 11}' and DRAFT in parts.reasoning and not parts.unfinished
    # the marker never came: all answer unless the template opened the reasoning
    assert split_text('{"answer": 11}', end=end) == ReplyParts('{"answer": 11}')
    assert split_text(f"<|channel|>analysis<|message|>{DRAFT}", end=end, opened=True).unfinished
    # <think> tags are not read when another end marker is set: the marker is the template's rule
    assert split_text(f"<think>{DRAFT}</think>", end=end).answer == f"<think>{DRAFT}</think>"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "thinking"])
def test_message_fields(field: str) -> None:
    parts = split_message({"role": "assistant", "content": '{"answer": 5}', field: DRAFT},
                          {"completion_tokens": 30, "completion_tokens_details": {"reasoning_tokens": 21}})
    assert parts == ReplyParts('{"answer": 5}', DRAFT, False, False, 21)


def test_message_parser_never_ended() -> None:
    """vLLM's parser with no end token: content null beside the reasoning; "" is a finished empty answer."""
    assert split_message({"content": None, "reasoning_content": DRAFT}) == ReplyParts("", DRAFT, False, True)
    assert split_message({"content": "", "reasoning_content": DRAFT}) == ReplyParts("", DRAFT, False, False)


def test_message_hidden_and_counted() -> None:
    """OpenAI's reasoning models count reasoning tokens but never show them: hidden."""
    usage = {"completion_tokens": 80, "completion_tokens_details": {"reasoning_tokens": 64}}
    assert split_message({"content": '{"answer": 1}'}, usage) == ReplyParts('{"answer": 1}', "", True, False, 64)
    zero = {"completion_tokens_details": {"reasoning_tokens": 0}}
    assert split_message({"content": "x"}, zero) == ReplyParts("x", "", False, False, 0)
    assert not split_message({"content": "x"}, zero).reasoned


def test_message_details_encrypted_and_summary() -> None:
    msg = {"content": "ok", "reasoning_details": [
        {"type": "reasoning.summary", "summary": "weighed both"},
        {"type": "reasoning.encrypted", "data": "gAAA..."}, "junk", {"type": "reasoning.text", "text": "step"}]}
    parts = split_message(msg)
    assert parts == ReplyParts("ok", "weighed both\nstep", True, False)
    only = split_message({"content": None, "reasoning_details": [{"type": "reasoning.encrypted", "data": "z"}]})
    assert only == ReplyParts("", "", True, False)


def test_message_field_and_inline_and_aliases() -> None:
    msg = {"content": f'<think>{DRAFT}</think>{{"answer": 9}}', "reasoning_content": "first",
           "reasoning": "first"}  # a server filling two aliases with one text: kept once
    parts = split_message(msg)
    assert parts.answer == '{"answer": 9}' and parts.reasoning == f"first\n{DRAFT}"


@pytest.mark.parametrize("content", [None, 5, ["a"], {"x": 1}])
def test_message_odd_content(content: object) -> None:
    assert split_message({"content": content}).answer == ""
    assert split_message({"content": "a", "reasoning_content": 7, "reasoning": None}) == ReplyParts("a")


@pytest.mark.parametrize(("usage", "n"), [
    (None, None), ({}, None), ({"completion_tokens_details": None}, None),
    ({"completion_tokens_details": {"reasoning_tokens": True}}, None),
    ({"completion_tokens_details": {"reasoning_tokens": -1}}, None),
    ({"reasoning_tokens": 12}, 12), ({"completion_tokens_details": {"reasoning_tokens": 3}}, 3),
])
def test_reasoning_tokens(usage: object, n: int | None) -> None:
    assert reasoning_tokens(usage) == n  # type: ignore[arg-type]


@pytest.mark.parametrize("usage", [7, "x", ["reasoning_tokens"], None])
def test_message_odd_usage(usage: object) -> None:
    """Whatever a caller passes as usage, no count is invented and nothing raises."""
    assert split_message({"content": "a"}, usage) == ReplyParts("a")  # type: ignore[arg-type]
    assert split_message({"content": "a", "reasoning": "r"}, usage) == ReplyParts("a", "r")  # type: ignore[arg-type]
