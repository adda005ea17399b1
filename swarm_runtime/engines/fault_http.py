"""Faults served through the anthropic SDK's own HTTP transport (SPEC §10.7).

:func:`wrap_client` puts a :class:`FaultTransport` in front of an SDK client's transport.
A request made while a fault is armed (see :class:`~.faults.FaultInjector`) is answered
by the fault itself — a 429 with ``retry-after-ms``, a 500, a 529 ``overloaded_error``, a
read timeout, a connection reset, a streamed reply cut mid-event, an ``error`` event of
type ``overloaded_error`` mid-stream, a reply whose handoff block is malformed, a reply
with no content — and never reaches the transport under it. Every other request passes
through untouched: to the network, to vcrpy while recording (so nothing is recorded for
an injected fault), or to the cassettes while replaying (so no recorded call is used
up by one). The SDK's own error paths then run exactly as they do for a real fault.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2

from swarm_runtime.engines.fault_engine import MALFORMED_HANDOFF_TEXT
from swarm_runtime.engines.faults import Fault, FaultInjector

NOTE = "injected by the fault plan"

_STATUS = {
    "http_429": (429, "rate_limit_error"),
    "http_500": (500, "api_error"),
    "http_529": (529, "overloaded_error"),
}


def wrap_client(http_client: Any, injector: FaultInjector) -> Any:
    """``http_client`` (an httpx2 client for the SDK) with its transports behind the faults."""
    # httpx2 keeps the transport a client sends through (and one per proxy mount) in
    # these attributes; there is no public way to put a layer in front of them.
    http_client._transport = FaultTransport(http_client._transport, injector)
    mounts = getattr(http_client, "_mounts", None)
    if isinstance(mounts, dict):
        for pattern, transport in list(mounts.items()):
            if transport is not None:
                mounts[pattern] = FaultTransport(transport, injector)
    return http_client


class FaultTransport(httpx2.BaseTransport):
    """Answers the armed fault once, else hands the request to ``inner``."""

    def __init__(self, inner: httpx2.BaseTransport, injector: FaultInjector) -> None:
        self.inner = inner
        self.injector = injector

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """The fault's answer, or the inner transport's."""
        fault = self.injector.take_armed()
        if fault is None:
            return self.inner.handle_request(request)
        return fault_response(fault, request)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


def _request_body(request: httpx2.Request) -> dict[str, Any]:
    try:
        body = json.loads(request.read() or b"null")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def fault_response(fault: Fault, request: httpx2.Request) -> httpx2.Response:
    """What the API would answer (or how the connection would fail) for ``fault``."""
    kind = fault.kind
    if kind in _STATUS:
        status, error_type = _STATUS[kind]
        headers = {"content-type": "application/json"}
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = str(fault.retry_after_ms)
            headers["retry-after"] = f"{fault.retry_after_ms / 1000:g}"
        return httpx2.Response(
            status, headers=headers, json=_error(error_type, kind), request=request
        )
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
            return httpx2.Response(529, json=_error("overloaded_error", kind), request=request)
        return _sse_response(_broken_stream(kind, model), request)
    text = MALFORMED_HANDOFF_TEXT if kind == "malformed_handoff" else ""
    if streamed:
        return _sse_response(iter([_sse(_message_events(model, text))]), request)
    return httpx2.Response(200, json=_message(model, text), request=request)


def _error(error_type: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": f"{NOTE}: {kind}"}}


def _message(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "msg_fault_plan",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": (len(text) + 3) // 4},
    }


def _message_events(model: str, text: str, *, whole: bool = True) -> list[tuple[str, Any]]:
    start = {**_message(model, ""), "stop_reason": None, "usage": {"input_tokens": 0}}
    start["usage"]["output_tokens"] = 0
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": start})]
    if text or not whole:
        block = {"type": "text", "text": ""}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            )
        )
        delta = {"type": "text_delta", "text": text or "partial"}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    if not whole:
        return events
    if text:
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    end = {"stop_reason": "end_turn", "stop_sequence": None}
    usage = {"output_tokens": (len(text) + 3) // 4}
    events.append(("message_delta", {"type": "message_delta", "delta": end, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _sse(events: list[tuple[str, Any]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def _broken_stream(kind: str, model: str) -> Iterator[bytes]:
    """A stream that starts a reply, then breaks: mid-event, or with an ``error`` event."""
    yield _sse(_message_events(model, "", whole=False))
    if kind == "overloaded_mid_stream":
        yield _sse([("error", _error("overloaded_error", kind))])
        return
    yield b'event: content_block_delta\ndata: {"type": "content_block_delta", "ind'
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
