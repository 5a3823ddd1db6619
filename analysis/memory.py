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
import os
import sys
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


ARROW_POOL = "ARROW_DEFAULT_MEMORY_POOL"


def system_allocator_for_arrow() -> None:
    """Arrow's buffers from the C library's allocator (``malloc``) rather than the mimalloc that pyarrow
    ships as its default, unless ``ARROW_DEFAULT_MEMORY_POOL`` already names one.

    Why: mimalloc keeps what the analysis's Arrow tables freed (the copies read, the exports' batches), out
    of :func:`release`'s reach. Measured with ``econarena report``, two tries each: 57,600 GLEE games 487-499
    MB -> 420 MB, 587,400 games 898-930 MB -> 781-805 MB, in the same time. Before pyarrow's first import
    the variable is enough (and reaches every pool Arrow makes); after it, pyarrow's default is replaced."""
    if os.environ.get(ARROW_POOL):
        return
    if "pyarrow" not in sys.modules:
        os.environ[ARROW_POOL] = "system"
        return
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
