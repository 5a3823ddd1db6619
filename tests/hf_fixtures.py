"""A tiny randomly initialised Llama chat model, built from scratch in seconds with no hub access.

Shared by the hf provider tests and anything else that wants a real (if nonsensical) local model.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant{% endif %}"
)
# a thinking template in Qwen3's manner: the generation prompt opens <think> (the reply starts inside its
# reasoning) unless enable_thinking is false, when it writes an empty block the reply starts after
THINKING_TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant"
    "{% if enable_thinking is defined and enable_thinking is false %} <think> </think>{% else %} <think>{% endif %}"
    "{% endif %}"
)
SPECIALS = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "system user assistant you are a player in an economic game",
    "choose a number between 0 and 100 the winner is closest to two thirds of the average",
    "bid your value in a sealed bid auction the highest bid wins and pays the second price",
    "reply with json only number bid price value round player payoff rational",
    "0 1 2 3 4 5 6 7 8 9 10 20 33 50 67 100 { } : \" ,",
]


def build_tiny_llama(path: Path, *, hidden: int = 32, layers: int = 2, seed: int = 0,
                     byte_level: bool = False, thinking: bool = False, special_think: bool = False) -> Path:
    """Save a tokenizer with a chat template and a random Llama into ``path``.

    The default word-level tokenizer is quick and readable; ``byte_level=True`` trains a byte-level BPE
    instead, which can spell any text (JSON keys included), as constrained decoding needs. ``thinking=True``
    adds ``<think>`` and ``</think>`` as single tokens (marked special with ``special_think``, as some
    tokenizers do) and a chat template that opens a reasoning block, so the model's replies start inside it.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    if byte_level:
        raw = Tokenizer(models.BPE())
        raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        raw.decoder = decoders.ByteLevel()
        raw.train_from_iterator(CORPUS + ['{"answer":12.5,"bid":3,"decision":"stay","reasoning":"drop"}'],
                                trainers.BpeTrainer(vocab_size=420, special_tokens=SPECIALS,
                                                    initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    else:
        raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
        raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        raw.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=SPECIALS))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", unk_token="<unk>", bos_token="<|im_start|>",
        eos_token="<|im_end|>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    if thinking:
        tokenizer.add_tokens(["<think>", "</think>"], special_tokens=special_think)
        tokenizer.chat_template = THINKING_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
