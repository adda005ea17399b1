"""The CLI's loopback server, and the faults of a plan it serves (docs/faults.md, cli mode).

A CLI step that records or replays talks to a server on 127.0.0.1 (see
:mod:`.cli_cassette`). While a fault of the plan is armed for the attempt, the first
request the CLI sends is answered by the fault and never reaches the provider or the
cassette: nothing is recorded for it, and a replay neither plays a recorded call for it
nor counts it as a miss. Later requests go on as usual. A reply fault (a malformed
handoff, an empty reply) stands in for the model's reply, so a replay counts the recorded
call it replaces as played.

How each kind reaches the CLI, over a real socket, so the CLI's own error paths run:

- ``http_429`` / ``http_500`` / ``http_529``: that status with the API's error body
  (``rate_limit_error``, ``api_error``, ``overloaded_error``); a 429 with
  ``retry_after_ms`` carries ``retry-after-ms`` and ``retry-after`` headers.
- ``connection_reset``: the connection is reset (a TCP RST) with no reply.
- ``timeout``: the connection is closed with no reply. The CLI's own read timeout is
  minutes long; waiting it out would stall the run, so the server gives up instead, the
  way a proxy's idle timeout does.
- ``stream_cut``: a streamed reply that starts, then stops in the middle of an event,
  the chunked body never finished (even when the request asked for no stream).
- ``overloaded_mid_stream``: a streamed reply that starts, then an ``error`` event of
  type ``overloaded_error`` (a 529 when the request did not ask for a stream).
- ``malformed_handoff`` / ``empty_reply``: a whole reply whose handoff block is not a
  mapping, or with no content, streamed or not as the request asked. ``empty_reply``
  answers every request of its attempt (see :meth:`LoopbackFaults.take`).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from swarm_runtime.engines.fault_engine import MALFORMED_HANDOFF_TEXT
from swarm_runtime.engines.fault_replies import (
    HALF_EVENT,
    STATUS,
    error_body,
    message_body,
    message_events,
    sse,
)
from swarm_runtime.engines.faults import Fault, FaultInjector

REPLY_KINDS = frozenset({"malformed_handoff", "empty_reply"})
"""The kinds that answer in place of the model (a replay uses up the call they replace)."""

Answer = Callable[[str, str, Mapping[str, str], bytes], tuple[int, str, bytes]]
"""The reply to a request (method, path, headers, body): status, content type, body."""


class LoopbackFaults:
    """A plan's faults as the loopback server serves them, one attempt at a time."""

    def __init__(self, injector: FaultInjector | None) -> None:
        self.injector = injector
        self._lock = threading.Lock()
        self._sticky: Fault | None = None

    def next_attempt(self) -> None:
        """A new CLI process: an ``empty_reply`` of the last one is over."""
        with self._lock:
            self._sticky = None

    def take(self) -> Fault | None:
        """The fault for this request: the one armed for the attempt (once), or None.

        ``empty_reply`` answers every request of its attempt: the Claude Code CLI asks
        the model again when a reply is empty, and that request gets no content either.
        """
        if self.injector is None:
            return None
        with self._lock:
            fault = self.injector.take_armed() or self._sticky
            if fault is not None and fault.kind == "empty_reply":
                self._sticky = fault
            return fault


def start_loopback(
    answer: Answer, faults: LoopbackFaults, stand_in: Callable[[str, str, bytes], None]
) -> ThreadingHTTPServer:
    """A server on a free port of 127.0.0.1, serving in a thread of its own.

    ``answer`` replies to a request; ``stand_in`` is told of a request a reply fault
    (``malformed_handoff``, ``empty_reply``) answered in place of the model.
    """

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            fault = faults.take()
            if fault is not None:
                if fault.kind in REPLY_KINDS:  # before the reply: the CLI may ask again at once
                    stand_in(self.command, self.path, body)
                serve_fault(self, fault, body)
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, content_type, payload = answer(self.command, self.path, headers, body)
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_fault(handler: BaseHTTPRequestHandler, fault: Fault, body: bytes) -> None:
    """Answer the request ``handler`` has read with ``fault``, then end the connection."""
    handler.close_connection = True
    kind = fault.kind
    if kind == "connection_reset":
        # A zero linger makes the close a reset, not an orderly end of the stream.
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
        return
    if kind == "timeout":
        return  # closed with no reply once the handler returns
    if kind in STATUS:
        status, error_type = STATUS[kind]
        extra = {}
        if fault.retry_after_ms is not None:
            extra = {
                "retry-after-ms": str(fault.retry_after_ms),
                "retry-after": f"{fault.retry_after_ms / 1000:g}",
            }
        _whole(handler, status, error_body(error_type, kind), extra)
        return
    request = _json(body)
    model = str(request.get("model") or "unknown")
    streamed = bool(request.get("stream"))
    if kind in ("stream_cut", "overloaded_mid_stream"):
        if kind == "overloaded_mid_stream" and not streamed:  # no stream: the API's 529
            _whole(handler, 529, error_body("overloaded_error", kind))
            return
        _stream_start(handler)
        _chunk(handler, sse(message_events(model, "", whole=False)))
        if kind == "stream_cut":
            _chunk(handler, HALF_EVENT)
            return  # the chunked body is never finished
        _chunk(handler, sse([("error", error_body("overloaded_error", kind))]))
        handler.wfile.write(b"0\r\n\r\n")
        return
    text = MALFORMED_HANDOFF_TEXT if kind == "malformed_handoff" else ""
    if not streamed:
        _whole(handler, 200, message_body(model, text))
        return
    _stream_start(handler)
    _chunk(handler, sse(message_events(model, text)))
    handler.wfile.write(b"0\r\n\r\n")


def _json(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body or b"null")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _whole(
    handler: BaseHTTPRequestHandler,
    status: int,
    document: dict[str, Any],
    headers: Mapping[str, str] | None = None,
) -> None:
    payload = json.dumps(document).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(payload)))
    handler.send_header("connection", "close")
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(payload)


def _stream_start(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("transfer-encoding", "chunked")
    handler.send_header("connection", "close")
    handler.end_headers()


def _chunk(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
