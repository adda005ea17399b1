"""Writing and reading run files: atomic JSON documents and the append-only event log.

JSON documents are written to a temporary file in the same directory and moved into place
with ``os.replace``, so a reader never sees half a document. Event lines are written whole
with one ``write`` each and flushed; ``durable`` adds an fsync. A reader tolerates a torn
last line of ``events.jsonl`` (it reports and skips it), never a torn line in the middle.

Every run document is JSON written by one encoder, ``msgspec``'s (this is the hot path),
with sorted keys: receipts, lines and the checkpoint on one line (``{"a": 1, "b": [2, 3]}``,
the layout ``json.dumps`` gives, so a ``grep '"kind": "log"'`` finds what it always did), the
run-level documents (spec, meta) indented for people. A NaN or an infinity is written as null, as
JavaScript's ``JSON.stringify`` does: every input a run reads refuses them, so only a
model's own output (a tool call's input, say) could hold one.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import msgspec.json

from swarm_runtime.errors import StorageError
from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.inputs.limits import InputRefused
from swarm_runtime.record import Record, field

_tmp_counter = itertools.count()
_PID = os.getpid()
_ENCODER = msgspec.json.Encoder(order="sorted")
"""The one JSON encoder of run documents: keys sorted, UTF-8 as is, no spaces."""
_encode = _ENCODER.encode
_format = msgspec.json.format

StrPath = str | os.PathLike[str]

_write = os.write
"""Every byte of a run file goes through this (tests replace it to fail like a full disk)."""


def encode_line(value: Any) -> str:
    """One JSON line (sorted keys, a space after each ``:`` and ``,``, trailing newline)."""
    return _format(_encode(value), indent=0).decode("utf-8") + "\n"


def encode_line_bytes(value: Any) -> bytes:
    """:func:`encode_line` as the bytes written."""
    return _format(_encode(value), indent=0) + b"\n"


_last_string: tuple[str, bytes] = ("", b'""')


def json_string(text: str) -> bytes:
    """``text`` as a JSON string, as the encoder writes it in a document or a line.

    The last one asked is kept: a step's user prompt is encoded for its request digest,
    then again for its transcript.
    """
    global _last_string
    last, data = _last_string
    if last is not text:
        data = _encode(text)
        _last_string = (text, data)
    return data


def message_line(content: str, role: str, timestamp: str) -> bytes:
    """``encode_line({"content": …, "role": …, "timestamp": …})``, as bytes.

    A transcript's message line, built around the encoded strings: a prompt or a reply of
    many KiB is not read again to lay out a line it has no structure in.
    """
    return b"".join(
        (
            b'{"content": ',
            json_string(content),
            b', "role": ',
            _encode(role),
            b', "timestamp": ',
            _encode(timestamp),
            b"}\n",
        )
    )


def encoded(line: str) -> Any:
    """A line :func:`encode_line` wrote, to stand in a document as the value it encodes.

    The checkpoint carries the events it writes ahead of the log: their lines are put in
    it as they are, not encoded a second time.
    """
    return msgspec.Raw(line.rstrip("\n").encode("utf-8"))


def stamped_line(line: Mapping[str, Any], timestamp: str) -> bytes:
    """``encode_line({"timestamp": timestamp, **line})`` as bytes: a transcript line."""
    if len(line) == 2:
        content, role = line.get("content"), line.get("role")
        if type(content) is str and type(role) is str:
            return message_line(content, role, timestamp)
    return encode_line_bytes({"timestamp": timestamp, **line})


def dump_json(document: Any, *, pretty: bool = False) -> str:
    """The JSON text of a run document with sorted keys and a trailing newline."""
    return _format(_encode(document), indent=2 if pretty else 0).decode("utf-8") + "\n"


def dump_json_bytes(document: Any) -> bytes:
    """``dump_json(document)`` as the bytes written (a receipt, the checkpoint)."""
    return _format(_encode(document), indent=0) + b"\n"


def json_escape(text: str) -> str:
    """``text`` as the inside of a JSON string, exactly as the encoder writes it."""
    return _encode(text)[1:-1].decode("utf-8")


def write_text_atomic(path: StrPath, text: str | bytes, *, durable: bool = False) -> None:
    """Write ``text`` (or its UTF-8 bytes) to ``path`` so that readers see all of it or none."""
    target = os.fspath(path)
    tmp = f"{target}.{_PID}.{next(_tmp_counter)}.tmp"  # same directory, so replace is atomic
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[_write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise StorageError(f"could not write {target}: {describe_os_error(exc)}") from None


def write_json_atomic(
    path: StrPath, document: Any, *, durable: bool = False, pretty: bool = False
) -> None:
    """Write ``document`` as JSON to ``path`` so that readers see all of it or none."""
    write_text_atomic(path, dump_json(document, pretty=pretty), durable=durable)


def write_jsonl_atomic(
    path: StrPath, lines: list[dict[str, Any] | str], *, durable: bool = False
) -> None:
    """Write a whole JSON-lines file atomically (used for transcripts).

    A line is a mapping, or a string that is already one encoded line.
    """
    text = "".join(line if isinstance(line, str) else encode_line(line) for line in lines)
    write_text_atomic(path, text, durable=durable)


def preserve_previous(path: StrPath, *, first: int = 1) -> str | None:
    """If ``path`` exists, rename it to ``<stem>~<n><suffix>`` with the next free n >= first.

    Called before a step's receipt or transcript is written again, so earlier executions
    are kept in execution order (``~1`` is the first). The caller that knows how many
    executions came before passes ``first``, so a step run thousands of times costs one
    probe, not thousands.
    """
    target = os.fspath(path)
    if not os.path.exists(target):
        return None
    stem, suffix = os.path.splitext(target)
    n = max(1, first)
    while os.path.exists(f"{stem}~{n}{suffix}"):
        n += 1
    try:
        os.replace(target, f"{stem}~{n}{suffix}")
    except OSError as exc:
        raise StorageError(f"could not keep {target} as ~{n}: {describe_os_error(exc)}") from None
    return f"{stem}~{n}{suffix}"


def describe_os_error(exc: OSError) -> str:
    """``ENOSPC (No space left on device)``: the errno's name and what it means."""
    name = errno.errorcode.get(exc.errno or 0)
    text = exc.strerror or str(exc)
    return f"{name} ({text})" if name else text


class EventLog:
    """The append side of ``events.jsonl``: one whole line per ``write``, never a torn one.

    The file is opened without following a symlink and written with ``os.write`` (no
    buffer that could hold half a line to flush later). When a write fails or comes up
    short (a full disk, a file size limit), the file is cut back to its last whole line
    before the error is raised, so the log stays readable and resumable.
    """

    def __init__(self, path: StrPath, *, durable: bool = False) -> None:
        self.path = path
        self.durable = durable
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        try:
            self._fd: int | None = os.open(path, flags, 0o644)
            self._size = os.fstat(self._fd).st_size
        except OSError as exc:
            raise StorageError(f"cannot open {path}: {describe_os_error(exc)}") from None

    def append(self, event: Mapping[str, Any]) -> None:
        """Write one event as one line."""
        self.append_line(encode_line(event))

    def append_line(self, line: str | bytes) -> None:
        """Write encoded lines (each ending in a newline) whole, or not at all."""
        fd = self._fd
        if fd is None:
            raise StorageError(f"{self.path} is closed")
        data = line if isinstance(line, bytes) else line.encode("utf-8")
        try:
            written = _write(fd, data)
            while written < len(data):
                # A short write: a later one either finishes the line or raises.
                more = _write(fd, data[written:])
                if more == 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                written += more
            if self.durable:
                os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._size)  # back to the last whole line
            raise StorageError(
                f"could not append to {self.path}: {describe_os_error(exc)}"
            ) from None
        self._size += len(data)

    def close(self) -> None:
        """Close the file; further appends raise. Never raises itself."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


class TornLine(Record):
    """A last line of ``events.jsonl`` that was cut off mid-write."""

    line: int
    text: str

    def describe(self, path: Path) -> str:
        """A one-line report of the torn line."""
        preview = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"{path}:{self.line}: torn last line ignored ({len(self.text)} chars: {preview!r})"


class EventLogReadResult(Record):
    """Events read from a log, with the torn last line if there was one."""

    events: list[dict[str, Any]] = field(default_factory=list)
    torn: TornLine | None = None


def read_event_log(path: Path) -> EventLogReadResult:
    """Read ``events.jsonl``; a torn last line is reported, a bad middle line raises."""
    try:
        raw = read_run_text(path)
    except FileNotFoundError:
        raise StorageError(f"{path}: no event log (is this a run directory?)") from None
    except (OSError, ValueError) as exc:
        raise StorageError(f"{path}: cannot read event log: {exc}") from exc
    lines = raw.split("\n")
    body = lines[:-1]  # the part after the last newline is '' or a torn tail
    tail = lines[-1]
    events: list[dict[str, Any]] = []
    for number, text in enumerate(body, start=1):
        try:
            value = load_json(text)
        except InputRefused as exc:
            raise StorageError(f"{path}:{number}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise StorageError(
                f"{path}:{number}: line is not valid JSON ({exc.msg}); only the last line "
                "of an event log may be torn"
            ) from None
        if not isinstance(value, dict):
            raise StorageError(f"{path}:{number}: an event must be a JSON object")
        events.append(value)
    torn = None
    if tail:
        # Lines are written whole with their newline; a tail without one was cut off,
        # unless it is a whole event that only lost its newline.
        try:
            value = load_json(tail)
        except ValueError:
            value = None
        if isinstance(value, dict):
            events.append(value)
        else:
            torn = TornLine(line=len(body) + 1, text=tail)
    return EventLogReadResult(events=events, torn=torn)
