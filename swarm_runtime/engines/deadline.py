"""An overall deadline for one HTTP call of a step, whatever the server keeps sending.

HTTP clients bound each read, not a whole call: a stream that sends a ``ping`` every few
seconds never reaches a read timeout and never ends. A :class:`CallDeadline` bounds the
call as a whole: the request carries an httpcore ``trace`` hook that notes the connection
it goes out on (beneath any recorder that wraps the transport), and a timer shuts that
connection's socket down when the time is up, so the blocked read returns at once and the
call fails in whatever way the client reports a dropped connection. The engine then sees
:attr:`CallDeadline.expired` and ends the attempt as a retryable timeout.

A client made with :func:`deadline_hooks` opens a connection per call (no keep-alive), so
every call's connection is one the hook sees being made.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

_current: ContextVar[CallDeadline | None] = ContextVar("swarm_call_deadline", default=None)

_CONNECTED = ("connection.connect_tcp.complete", "connection.start_tls.complete")
"""The httpcore trace events whose ``return_value`` is the network stream of the call."""


class CallDeadline:
    """The deadline of one call: ``expired`` once its time ran out and its socket was shut."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._streams: list[Any] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """Httpcore's trace callback: keep the network stream the call goes out on."""
        if event in _CONNECTED and info.get("return_value") is not None:
            with self._lock:
                self._streams.append(info["return_value"])
                if self.expired:  # connected just as time ran out
                    self._shut(info["return_value"])

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for stream in self._streams:
                self._shut(stream)

    @staticmethod
    def _shut(stream: Any) -> None:
        with contextlib.suppress(Exception):  # already closed: nothing left to wake
            sock = stream.get_extra_info("socket")
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def call_deadline(seconds: float) -> Iterator[CallDeadline]:
    """Bound the HTTP calls made inside the block (through a :func:`deadline_hooks` client)."""
    deadline = CallDeadline(seconds)
    token = _current.set(deadline)
    deadline._timer.start()
    try:
        yield deadline
    finally:
        deadline._timer.cancel()
        _current.reset(token)


def _attach(request: Any) -> None:
    deadline = _current.get()
    if deadline is not None:
        request.extensions = {**request.extensions, "trace": deadline.trace}


def deadline_hooks() -> dict[str, Any]:
    """Keyword arguments for an httpx client whose calls :func:`call_deadline` can bound."""
    import httpx2

    return {
        "event_hooks": {"request": [_attach]},
        "limits": httpx2.Limits(max_connections=100, max_keepalive_connections=0),
    }
