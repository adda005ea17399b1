"""What the Anthropic API answers when it fails: the bodies a served fault is made of.

Shared by the SDK's fault transport (:mod:`.fault_http`) and the CLI's loopback server
(:mod:`.fault_loopback`), so a fault reads the same whichever way it is served.
"""

from __future__ import annotations

import json
from typing import Any

NOTE = "injected by the fault plan"

STATUS = {
    "http_429": (429, "rate_limit_error"),
    "http_500": (500, "api_error"),
    "http_529": (529, "overloaded_error"),
}
"""The status kinds: the HTTP status and the API's error type of each."""
ERROR_TYPES = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
"""The Messages API's error type of each status a fault is served with."""
HALF_EVENT = b'event: content_block_delta\ndata: {"type": "content_block_delta", "ind'
"""Where ``stream_cut`` breaks a stream off: in the middle of an event."""


def error_body(error_type: str, kind: str) -> dict[str, Any]:
    """The API's error body for ``error_type``, saying which fault it stands for."""
    return {"type": "error", "error": {"type": error_type, "message": f"{NOTE}: {kind}"}}


def message_body(model: str, text: str) -> dict[str, Any]:
    """A whole Messages API reply with ``text`` (no content when it is empty)."""
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


def message_events(model: str, text: str, *, whole: bool = True) -> list[tuple[str, Any]]:
    """The streamed events of a reply with ``text``; not ``whole``: its start only."""
    start = {**message_body(model, ""), "stop_reason": None, "usage": {"input_tokens": 0}}
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


def sse(events: list[tuple[str, Any]]) -> bytes:
    """Server-sent events, as the API streams them."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


class AnthropicWire:
    """The Messages API's shapes, for faults served to the anthropic SDK."""

    api_name = "Anthropic API"
    needs = "ANTHROPIC_API_KEY set, or ANTHROPIC_BASE_URL for a local Anthropic-compatible server"
    half_event = HALF_EVENT

    def error_body(self, kind: str, status: int) -> dict[str, Any]:
        """The API's error body for ``status``."""
        return error_body(ERROR_TYPES.get(status, "api_error"), kind)

    def reply_body(self, model: str, text: str) -> dict[str, Any]:
        """A whole Messages reply."""
        return message_body(model, text)

    def stream(self, model: str, text: str, *, whole: bool = True) -> bytes:
        """A streamed Messages reply (its start only, when not ``whole``)."""
        return sse(message_events(model, text, whole=whole))

    def stream_error(self, kind: str) -> bytes:
        """An ``error`` event of type ``overloaded_error``."""
        return sse([("error", error_body("overloaded_error", kind))])
