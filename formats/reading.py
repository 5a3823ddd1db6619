"""One mapping from what reading a file can raise to the error of the layer that reads it.

Reading a file and parsing it raises OSError (missing, a folder, no permission), UnicodeDecodeError (not
UTF-8), ValueError (JSON's and TOML's decode errors are ValueErrors) or RecursionError (JSON nested past
Python's stack): each reader turns these into its own error naming the file, never a traceback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

READ_ERRORS: tuple[type[Exception], ...] = (OSError, UnicodeDecodeError, ValueError, RecursionError)


@contextlib.contextmanager
def read_errors_as(error: type[Exception], message: str) -> Iterator[None]:
    """Raise ``error(f"{message} ({the reason})")`` for any of :data:`READ_ERRORS` raised inside."""
    try:
        yield
    except READ_ERRORS as exc:
        raise error(f"{message} ({exc})") from None
