"""SHA-256 without loading OpenSSL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_make: Callable[[], Any] | None = None


def sha256() -> Any:
    """A new SHA-256 hash object, without loading OpenSSL when the builtin one is there.

    ``hashlib`` imports the OpenSSL bindings, which cost ``swarm run`` milliseconds of
    start-up and megabytes of memory for a digest the run keeps on every step. Which
    module has it is found once: a failed import is a search of the whole path.
    """
    global _make
    if _make is None:
        try:
            from _sha2 import sha256 as make  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            try:
                from _sha256 import sha256 as make  # type: ignore[import-not-found,no-redef,unused-ignore]
            except ImportError:
                from hashlib import sha256 as make  # type: ignore[assignment,unused-ignore]
        _make = make
    return _make()
