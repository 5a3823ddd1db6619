"""The report's peak memory: glibc's heap handed back between the report's phases.

Why: numpy, pandas, the engine (DuckDB) and the parquet writer free their large buffers between phases, but
glibc keeps freed heap memory mapped (its dynamic mmap threshold rises after each large free, so later
arrays land on the heap too, and the threads' arenas keep what their work freed). The process's resident
size then only climbs: measured on the 57,600-game GLEE grid, 600 MB at the exports while fewer than
100 MB of the heap were in use. ``release`` returns what is free (``malloc_trim``); elsewhere than glibc
(macOS, musl) it only collects the garbage.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from typing import Any


@functools.cache
def _libc() -> Any:
    """glibc's C library, or None where the C library is another (no ``malloc_trim``)."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        lib.gnu_get_libc_version  # noqa: B018 - only glibc has it
        lib.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return lib


def release() -> None:
    """Collect the garbage cycles (figures, frames) and hand the heap's free pages back to the system."""
    gc.collect()
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)
