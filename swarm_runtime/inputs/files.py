"""Reading a file within limits.

A regular file only (never a FIFO or a device, which could block or never end), at most
``limit`` bytes, and bytes that are not UTF-8 said so in our words.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from swarm_runtime.inputs.limits import MAX_INPUT_BYTES, MAX_RUN_FILE_BYTES, InputRefused


def read_bytes_limited(
    path: str | os.PathLike[str], limit: int, *, nofollow: bool = False
) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    ``nofollow`` refuses a symlink (for files inside a run dir). Raises ``OSError`` when
    the file cannot be opened and :class:`InputRefused` when it is not a regular file or is
    bigger than ``limit``.
    """
    fd = _open_regular(path, nofollow=nofollow)
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise InputRefused(f"is {info.st_size} bytes; at most {limit} are read")
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise InputRefused(f"is more than {limit} bytes; at most {limit} are read")
        return data
    finally:
        os.close(fd)


def _open_regular(path: str | os.PathLike[str], *, nofollow: bool) -> int:
    """A read descriptor of a regular file; InputRefused for anything else.

    A FIFO would block the reader and a device might never end; with ``nofollow`` a
    symlink is refused too.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block the open
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if nofollow and os.path.islink(path):
            raise InputRefused("is a symlink; files inside a run dir are never followed") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputRefused("is not a regular file")
    return fd


def read_prefix(path: str | os.PathLike[str], size: int) -> bytes:
    """Up to the first ``size`` bytes of a regular file (see :func:`read_bytes_limited`)."""
    fd = _open_regular(path, nofollow=False)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def read_text_limited(
    path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES, *, nofollow: bool = False
) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (see read_bytes_limited).

    Bytes that are not UTF-8 are an :class:`InputRefused` naming the byte, offset and line.
    """
    return decode_utf8(read_bytes_limited(path, limit, nofollow=nofollow))


def open_run_file(path: str | os.PathLike[str]) -> BinaryIO:
    """A file inside a run dir opened to read in binary, line by line: never a symlink."""
    return os.fdopen(_open_regular(path, nofollow=True), "rb")


def read_run_text(path: str | os.PathLike[str], limit: int = MAX_RUN_FILE_BYTES) -> str:
    """The text of a file inside a run dir: never through a symlink, never unbounded."""
    return decode_utf8(read_bytes_limited(path, limit, nofollow=True))


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 text; an :class:`InputRefused` naming the first bad byte if not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputRefused(
            f"is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8",
            line=line,
        ) from None
