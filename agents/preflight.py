"""Checks before a run: SDKs installed, keys present, local model settings sane; ``.env`` files.

Everything here runs before any game starts, so a missing key or a wrong device is one clear line, not a
run that stops on API errors. Keys are looked up, never printed or written.
"""

from __future__ import annotations

import importlib.util
import io
import ipaddress
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .base import AgentError
from .effort import reasoning_problems
from .keys import api_key, key_envs
from .providers import PROVIDERS, check_sdk
from .settings import LLMSettings

if TYPE_CHECKING:
    pass


def _module_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def is_loopback(base_url: str | list[str] | None) -> bool:
    """A server on this machine (vLLM, Ollama, llama.cpp, a test fake) usually takes no key. Several
    endpoints are loopback when every one is."""
    if not base_url:
        return False
    if isinstance(base_url, list):
        return all(is_loopback(u) for u in base_url)
    try:
        host = urlsplit(base_url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _key_optional(settings: LLMSettings) -> bool:
    """No key is demanded from a loopback server unless the player names a variable explicitly."""
    return not settings.api_key_env and is_loopback(settings.base_url)


def preflight(provider: str, settings: LLMSettings, where: str) -> list[str]:
    """Problems that would stop this player, found before any request: missing SDK, key or model.

    Messages name the variable or the pip extra, never a key's value.
    """
    info = PROVIDERS[provider]
    problems = []
    missing = [m for m in info.sdk_modules if not _module_available(m)]
    if missing:
        problems.append(
            f"{where}: agent '{provider}' needs {', '.join(missing)}: "
            f"pip install 'econarena[{info.extra}]'"
        )
    else:
        try:
            check_sdk(info)  # an SDK older than the record's minimum, said before any run starts
        except AgentError as exc:
            problems.append(f"{where}: {exc}")
    envs = key_envs(provider, settings)
    if envs and not _key_optional(settings) and api_key(provider, settings) is None:
        problems.append(f"{where}: agent '{provider}' needs an API key: set {' or '.join(envs)}"
                        " (in the environment or in .env)")
    if info.needs_model and not settings.model:
        problems.append(f"{where}: agent '{provider}' needs a model: set model = \"...\"")
    return problems + settings_problems(provider, settings, where)


def settings_problems(provider: str, settings: LLMSettings, where: str) -> list[str]:
    """Settings this provider cannot honour (a structured mode, a local model's path, device, dtype).

    Needs no key and loads no model, so ``validate`` runs it for every file.
    """
    info = PROVIDERS[provider]
    problems = []
    if settings.structured != "off" and settings.structured not in info.structured:
        modes = " or ".join(f'"{m}"' for m in ("off", *info.structured))
        problems.append(f"{where}: structured = \"{settings.structured}\" is not available for agent "
                        f"'{provider}' ({info.structured_note}); use structured = {modes}")
    if provider == "hf":
        problems += local_model_problems(settings, where)
    problems += reasoning_problems(provider, settings, where)
    urls = settings.base_url if isinstance(settings.base_url, list) else [settings.base_url or ""]
    if provider == "openai" and any("@" in urlsplit(u).netloc for u in urls):
        # aiohttp refuses URL credentials beside the Authorization header the SDK sends: every call failed as a
        # "malformed response" that --resume retried in vain. The URL itself is never printed (it holds a secret).
        problems.append(f"{where}: base_url carries credentials (user:password@host), which agent 'openai' cannot "
                        "send (its transport puts the key in the Authorization header and refuses URL credentials); "
                        "use a base_url without them and the key through api_key_env")
    return problems


_DTYPES = ("auto", "float32", "float16", "bfloat16", "float64")


def local_model_problems(settings: LLMSettings, where: str) -> list[str]:
    """What is wrong with an hf player's model, device or dtype, found without loading anything."""
    problems = []
    if settings.model is None:  # the bundled model: its package is looked up, never imported
        from .providers.hf import find_bundled_gguf

        found, missing = find_bundled_gguf()
        if found is None:
            problems.append(f"{where}: {missing}")
    if settings.dtype is not None and settings.dtype not in _DTYPES:
        problems.append(f"{where}: dtype = {settings.dtype!r} is not a dtype the hf provider knows "
                        f"(expected one of {', '.join(_DTYPES)})")
    model = settings.model
    if model:
        path = Path(model).expanduser()
        # "org/name" is a hub id unless it exists here; an explicit path or a .gguf file must exist
        explicit = model.endswith(".gguf") or model.startswith(("./", "../", "/", "~"))
        if explicit and not path.exists():
            problems.append(f"{where}: model = {model!r}: no such file or folder")
        elif path.is_dir() and not (path / "config.json").is_file():
            problems.append(f"{where}: model = {model!r}: the folder has no config.json (not a transformers "
                            "model folder)")
        elif path.is_file() and not model.endswith(".gguf"):
            problems.append(f"{where}: model = {model!r}: a file that is not a .gguf model (expected a model "
                            "folder with config.json, a .gguf file or a hub id such as org/name)")
        elif not path.exists() and not explicit and _offline_and_not_cached(model):
            problems.append(f"{where}: model = {model!r}: HF_HUB_OFFLINE is set and the hub id is not in the "
                            "Hugging Face cache (download it once without HF_HUB_OFFLINE, or give a local folder)")
    device = (settings.device or "cpu").strip()
    if not re.fullmatch(r"(cpu|cuda|mps|xpu)(:\d+)?|auto", device):
        problems.append(f"{where}: device = {device!r}: expected cpu, cuda, cuda:N, mps or xpu")
    elif device.startswith(("cuda", "mps", "xpu")) and _module_available("torch"):
        problems += _device_problems(device, where)
    return problems


def _offline_and_not_cached(model: str) -> bool:
    """With HF_HUB_OFFLINE set, a hub id missing from the local cache can only fail to load: say so before the
    run instead of recording every decision as an API error that --resume would retry in vain."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip() in ("", "0") or not _module_available("huggingface_hub"):
        return False
    from huggingface_hub import try_to_load_from_cache

    try:
        return not isinstance(try_to_load_from_cache(model, "config.json"), str)
    except Exception:  # noqa: BLE001 - an id the hub client rejects: the loader reports it as before
        return False


def _device_problems(device: str, where: str) -> list[str]:
    """Ask torch (already needed for hf) whether the accelerator exists; cheap, loads no model."""
    import torch

    kind, _, index = device.partition(":")
    backend = {"cuda": torch.cuda, "mps": getattr(torch.backends, "mps", None),
               "xpu": getattr(torch, "xpu", None)}[kind]
    if backend is None or not backend.is_available():
        return [f"{where}: device = {device!r}, but torch sees no {kind} device on this machine "
                "(use device = \"cpu\")"]
    if index and kind != "mps" and int(index) >= backend.device_count():
        return [f"{where}: device = {device!r}, but torch sees only {backend.device_count()} {kind} device(s)"]
    return []


DOTENV_MAX_BYTES = 1 << 20  # a .env holds a few keys: a larger file is no .env


def load_dotenv(path: str | os.PathLike[str] = ".env") -> list[str]:
    """Read a ``.env`` file into the environment without overriding what is already set.

    python-dotenv parses it (``export``, quotes, escapes, multi-line values, ``#`` comments); ``${NAME}`` is
    kept as written, since a key is taken verbatim. A variable set but empty counts as unset (as it does for
    keys). A line that is no assignment is skipped with a warning naming its number, never its text (it may
    hold a key). Returns the names it set, never values, so the caller may log them.
    """
    p = Path(path)
    if not p.is_file():
        if p.exists():  # a folder, a FIFO (never opened: it could block), a device
            print(f"econarena: warning: {p}: not read (not a regular file)", file=sys.stderr)
        return []
    try:
        if p.stat().st_size > DOTENV_MAX_BYTES:
            print(f"econarena: warning: {p}: not read (over {DOTENV_MAX_BYTES} bytes: expected a short "
                  "file of NAME=VALUE lines)", file=sys.stderr)
            return []
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:  # a binary or unreadable .env must not stop a run
        print(f"econarena: warning: {p}: not read ({getattr(exc, 'strerror', None) or 'not UTF-8 text'})",
              file=sys.stderr)
        return []
    from dotenv.parser import parse_stream

    loaded = []
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            print(f"econarena: warning: {p}:{binding.original.line}: not a NAME=VALUE line (skipped)",
                  file=sys.stderr)
            continue
        name, value = binding.key, binding.value
        if name is None or value is None or os.environ.get(name, "").strip():
            continue
        if "\0" in name or "\0" in value:  # the environment cannot hold it (os.environ raises)
            print(f"econarena: warning: {p}:{binding.original.line}: a NUL byte in the name or value "
                  "(skipped)", file=sys.stderr)
            continue
        os.environ[name] = value
        loaded.append(name)
    return loaded
