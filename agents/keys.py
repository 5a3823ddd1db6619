"""Reading each provider's API key from the variables its record names (``providers/__init__.py``).

Keys are looked up by name here, never logged; only the variable's name ever appears in a message.
"""

from __future__ import annotations

import os

from .providers import PROVIDERS
from .settings import LLMSettings


def _record_envs(provider: str) -> tuple[str, ...]:
    record = PROVIDERS.get(provider)
    return record.key_envs if record is not None else ()


def key_envs(provider: str, settings: LLMSettings) -> tuple[str, ...]:
    """The variables this player reads, first set wins (its api_key_env replaces the record's)."""
    return (settings.api_key_env,) if settings.api_key_env else _record_envs(provider)


def api_key_source(provider: str, settings: LLMSettings) -> tuple[str, str] | None:
    """(variable, value) of the key this player uses, first set variable wins."""
    for env in key_envs(provider, settings):
        value = os.environ.get(env, "").strip()
        if value:
            return env, value
    return None


def api_key(provider: str, settings: LLMSettings) -> str | None:
    found = api_key_source(provider, settings)
    return found[1] if found else None


def key_value(provider: str, api_key_env: str | None = None) -> str | None:
    """The key a player of ``provider`` (with its ``api_key_env``, if any) would send, or None: masked in its
    ``base_url`` wherever that is written (a proxy's URL may carry the key in its path)."""
    for env in (api_key_env,) if api_key_env else _record_envs(provider):
        value = os.environ.get(env, "").strip()
        if value:
            return value
    return None



def known_keys(*envs: str | None) -> list[str]:
    """The value of every key variable this process could send (each provider's, and the ``envs`` named by
    api_key_env), longest first, those of 8 characters or more: what no file, message or page may show."""
    names = {e for record in PROVIDERS.values() for e in record.key_envs} | {e for e in envs if e}
    values = {os.environ.get(n, "").strip() for n in names}
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def mask_keys(text: str, *envs: str | None) -> str:
    """``text`` with every known key (:func:`known_keys`), as typed or percent-encoded, replaced by ``***``:
    the one masking rule for what the harness writes from what a person typed (a MODEL argument, a URL's
    path, a model name that is a key pasted in the wrong place)."""
    from urllib.parse import quote

    for key in known_keys(*envs):
        for form in dict.fromkeys((key, quote(key, safe=""), quote(key))):
            if form in text:
                text = text.replace(form, "***")
    return text
