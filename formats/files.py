"""The one rule every reader of a file follows: a regular file only, and a bounded one where it is small by nature.

Why: a ``config.toml``, ``manifest.json`` or ``decisions.jsonl`` that is a link to ``/dev/zero`` grew memory
until the kernel killed the process, a FIFO in its place hung every reader, and a ``/proc`` file reads as a
regular file of size 0 with other processes' secrets in it. So every reader opens through
:func:`open_regular`: opened without blocking (a FIFO's open would wait for a writer), checked with
``fstat`` on the open descriptor (what is read is what was checked, even if the name is swapped after), and
refused unless it is a regular file outside ``/proc``, ``/sys`` and ``/dev``. Files that are small by
nature (a config, a price list, a manifest, a suite, a released JSON file, ``bench.json``) are read with a
size bound; the logs are streamed, so they need none.

A refusal is a :class:`FileRefused` (a ValueError: exit 2 at the CLI) naming the file and what it is.
This module imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import IO

# the bounds of files that are small by nature: far above any real one, far below a memory problem
CONFIG_BYTES = 8 * 2**20  # a config.toml, a price list, a models file, a suite, .env
TOML_UTF8 = "; TOML files must be UTF-8"  # said of a config that is not UTF-8 text
MANIFEST_BYTES = 8 * 2**20  # manifest.json, bench.json, a shard's state
RELEASED_BYTES = 512 * 2**20  # one released JSON file of another tool (a whole study's log can be large)

# kernel file systems: their "regular" files are endless, change as they are read, or belong to other processes
_KERNEL = ("/proc", "/sys", "/dev")


class FileRefused(ValueError):
    """A path that is not a regular file, lies in /proc, /sys or /dev, or is larger than its bound."""


def kernel_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` resolves into /proc, /sys or /dev (links followed)."""
    real = os.path.realpath(path)
    return any(real == k or real.startswith(k + "/") for k in _KERNEL)


_DEVICES: frozenset[int] | None = None


def _kernel_devices() -> frozenset[int]:
    """The devices of /proc and /sys (the file systems whose "regular" files are the kernel's), once."""
    global _DEVICES
    if _DEVICES is None:
        found = set()
        for k in ("/proc", "/sys"):
            with contextlib.suppress(OSError):
                found.add(os.stat(k).st_dev)
        _DEVICES = frozenset(found)
    return _DEVICES


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> IO[bytes]:
    """``path`` opened for reading in binary, if it is a regular file (links to one are followed) outside
    /proc, /sys and /dev and, with ``max_bytes``, no larger than that; else :class:`FileRefused`.
    A missing file raises FileNotFoundError as ``open`` does."""
    if kernel_path(path):
        raise FileRefused(f"{path}: lies in /proc, /sys or /dev ({os.path.realpath(path)}), which is no file "
                          "of results or settings; give a regular file")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):  # as open() says it: callers name a directory their own way
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{path}: is {_kind(st.st_mode)}, not a regular file; give a regular file")
        if st.st_dev in _kernel_devices():  # a link swapped to /proc/... between the path's check and the open
            raise FileRefused(f"{path}: lies in /proc or /sys, which is no file of results or settings; give a "
                              "regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileRefused(f"{path}: is {st.st_size:,} bytes, more than the {max_bytes:,} such a file can "
                              "be; is it the right file?")
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (it is checked again while reading: a file that
    grows after the check is still cut off and refused)."""
    with open_regular(path, max_bytes) as fh:
        size = os.fstat(fh.fileno()).st_size  # read what it holds (+1 to see growth), not a max_bytes buffer
        data = fh.read(size + 1)
        if len(data) > size:  # it grew since: read on, up to the bound
            data += fh.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise FileRefused(f"{path}: holds more than the {max_bytes:,} bytes such a file can be; is it the right "
                          "file?")
    return data


def read_text(path: str | os.PathLike[str], max_bytes: int, encoding: str = "utf-8") -> str:
    """:func:`read_bytes` decoded (UnicodeDecodeError as ``Path.read_text`` raises it)."""
    return read_bytes(path, max_bytes).decode(encoding)


def read_config_text(path: str | os.PathLike[str], what: str = "a TOML file", utf8_note: str = "") -> str:
    """:func:`read_text` of a file a person writes (a config, a suite), bounded by ``CONFIG_BYTES``; every
    failure is a FileRefused naming the file and what was wrong, so all such files are refused alike."""
    try:
        return read_text(path, CONFIG_BYTES)
    except FileNotFoundError:
        raise FileRefused(f"{path}: no such file") from None
    except IsADirectoryError:
        raise FileRefused(f"{path}: is a directory, expected {what}") from None
    except UnicodeDecodeError as exc:
        raise FileRefused(f"{path}: not UTF-8 text (byte {exc.start}){utf8_note}") from None
    except OSError as exc:
        raise FileRefused(f"{path}: cannot read ({exc.strerror})") from None


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file outside /proc, /sys and /dev (links followed), without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode) and not kernel_path(path)
    except OSError:
        return False


def inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether ``path``, links followed, lies in ``folder`` (links followed too) and not in /proc, /sys or
    /dev: what a search of a folder may read (a released archive's link to ``/proc`` or ``/home`` is not
    part of it)."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return (real == top or real.startswith(top.rstrip(os.sep) + os.sep)) and not kernel_path(real)
