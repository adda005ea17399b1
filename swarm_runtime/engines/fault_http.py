"""Faults served through an SDK's own HTTP transport (docs/faults.md), in the provider's shapes.

:func:`wrap_client` puts a :class:`FaultTransport` in front of an httpx2 client's
transport. A request made while a fault is armed (see :class:`~.faults.FaultInjector`) is
answered by the fault itself — a 429 with ``retry-after-ms``, a 500, a 529, a read timeout,
a connection reset, a streamed reply cut mid-event, an error mid-stream, a reply whose
handoff block is malformed, a reply with no content — and never reaches the transport
under it. Every other request passes through untouched: to the network, to vcrpy while
recording (so nothing is recorded for an injected fault), or to the cassettes while
replaying (so no recorded call is used up by one). The SDK's own error paths then run
exactly as they do for a real fault.

What each fault looks like on the wire is the provider's: a :class:`Wire` (the engine's)
says how its API words an error, a reply and a stream. Nothing here imports an SDK.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Protocol

import httpx2

from swarm_runtime.engines.fault_engine import MALFORMED_HANDOFF_TEXT
from swarm_runtime.engines.faults import Fault, FaultInjector

NOTE = "injected by the fault plan"

STATUS = {"http_429": 429, "http_500": 500, "http_529": 529}
"""The status kinds and the HTTP status each stands for."""


class Wire(Protocol):
    """How one provider's API answers, for faults served in its own shapes."""

    api_name: str
    """How messages name the API: ``Anthropic API``, ``OpenAI API``."""
    needs: str
    """What recording needs, for a re-record hint: its key or base URL variables."""
    half_event: bytes
    """Where ``stream_cut`` breaks a stream off: in the middle of an event."""

    def error_body(self, kind: str, status: int) -> dict[str, Any]:
        """The API's error body for ``status``, saying which fault it stands for."""
        ...

    def reply_body(self, model: str, text: str) -> dict[str, Any]:
        """A whole reply with ``text`` (no content when it is empty)."""
        ...

    def stream(self, model: str, text: str, *, whole: bool = True) -> bytes:
        """A streamed reply with ``text``; not ``whole``: its start only."""
        ...

    def stream_error(self, kind: str) -> bytes:
        """An error sent in the middle of a stream (the provider's overloaded error)."""
        ...


def wrap_client(http_client: Any, injector: FaultInjector, wire: Wire) -> Any:
    """``http_client`` (an httpx2 client for the SDK) with its transports behind the faults."""
    # httpx2 keeps the transport a client sends through (and one per proxy mount) in
    # these attributes; there is no public way to put a layer in front of them.
    http_client._transport = FaultTransport(http_client._transport, injector, wire)
    mounts = getattr(http_client, "_mounts", None)
    if isinstance(mounts, dict):
        for pattern, transport in list(mounts.items()):
            if transport is not None:
                mounts[pattern] = FaultTransport(transport, injector, wire)
    return http_client


class FaultTransport(httpx2.BaseTransport):
    """Answers the armed fault once, else hands the request to ``inner``."""

    def __init__(self, inner: httpx2.BaseTransport, injector: FaultInjector, wire: Wire) -> None:
        self.inner = inner
        self.injector = injector
        self.wire = wire

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """The fault's answer, or the inner transport's."""
        fault = self.injector.take_armed()
        if fault is None:
            return self.inner.handle_request(request)
        return fault_response(fault, request, self.wire)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


def _request_body(request: httpx2.Request) -> dict[str, Any]:
    try:
        body = json.loads(request.read() or b"null")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def fault_response(fault: Fault, request: httpx2.Request, wire: Wire) -> httpx2.Response:
    """What the API would answer (or how the connection would fail) for ``fault``."""
    kind = fault.kind
    if kind in STATUS:
        status = STATUS[kind]
        headers = {"content-type": "application/json"}
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = str(fault.retry_after_ms)
            headers["retry-after"] = f"{fault.retry_after_ms / 1000:g}"
        body = wire.error_body(kind, status)
        return httpx2.Response(status, headers=headers, json=body, request=request)
    if kind == "timeout":
        raise httpx2.ReadTimeout(f"the read timed out ({NOTE}: timeout)", request=request)
    if kind == "connection_reset":
        raise httpx2.ReadError(
            f"[Errno 104] Connection reset by peer ({NOTE}: connection_reset)", request=request
        )
    body = _request_body(request)
    model = str(body.get("model") or "unknown")
    streamed = bool(body.get("stream"))
    if kind in ("stream_cut", "overloaded_mid_stream"):
        if kind == "overloaded_mid_stream" and not streamed:  # no stream to break: a 529
            return httpx2.Response(529, json=wire.error_body(kind, 529), request=request)
        return _sse_response(_broken_stream(kind, model, wire), request)
    text = MALFORMED_HANDOFF_TEXT if kind == "malformed_handoff" else ""
    if streamed:
        return _sse_response(iter([wire.stream(model, text)]), request)
    return httpx2.Response(200, json=wire.reply_body(model, text), request=request)


def _broken_stream(kind: str, model: str, wire: Wire) -> Iterator[bytes]:
    """A stream that starts a reply, then breaks: mid-event, or with an error event."""
    yield wire.stream(model, "", whole=False)
    if kind == "overloaded_mid_stream":
        yield wire.stream_error(kind)
        return
    yield wire.half_event
    raise httpx2.RemoteProtocolError(
        f"peer closed connection without sending complete message body ({NOTE}: stream_cut)"
    )


class _Stream(httpx2.SyncByteStream):
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def _sse_response(chunks: Iterator[bytes], request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=_Stream(chunks),
        request=request,
    )
