"""A recorded Messages API response read without the anthropic SDK (a replay's fast path).

In a replay the SDK's client would build its request, parse the recorded server-sent
events and assemble them into a Message: most of a replayed step's time, for a response
the cassette already holds. :func:`message_of` reads a recorded successful response — a
streamed one (``message_start`` … ``message_stop``) or a plain JSON Message — into the few
fields the engine reads (its content blocks, usage and model), as the SDK assembles them.
Anything else (an HTTP error, an ``error`` event mid-stream, a block or event it does not
know, a body it cannot parse) gives None, and the SDK replays the call as before, with
its own errors.
"""

from __future__ import annotations

import json
from typing import Any

_BLOCKS = ("text", "tool_use")
"""The content blocks read here: any other kind is left to the SDK."""
_EVENTS = frozenset(
    (
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    )
)


class Block:
    """A content block: ``text``, or a ``tool_use`` call (its id, name and input)."""

    def __init__(self, kind: str, text: str = "", id: str = "", name: str = "", input: Any = None):
        self.type = kind
        self.text = text
        self.id = id
        self.name = name
        self.input = input
        self.partial_json = ""


class Usage:
    """The tokens of a call."""

    def __init__(self, input_tokens: int, output_tokens: int) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens


class Message:
    """What the engine reads of a Messages API response."""

    def __init__(self, content: list[Block], usage: Usage, model: str) -> None:
        self.content = content
        self.usage = usage
        self.model = model


def message_of(recorded: dict[str, Any], *, streamed: bool) -> Message | None:
    """The Message of a recorded successful response, or None (the SDK reads it then)."""
    if recorded.get("status", {}).get("code") != 200:
        return None
    body = recorded.get("body", {}).get("string")
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    if not isinstance(text, str):
        return None
    try:
        return _streamed(text) if streamed else _plain(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
        return None  # whatever the SDK makes of it, as before


def _plain(value: Any) -> Message | None:
    if not isinstance(value, dict) or value.get("type") != "message":
        return None
    blocks = [_block(item) for item in value["content"]]
    if any(block is None for block in blocks):
        return None
    usage = value["usage"]
    return Message(
        [b for b in blocks if b is not None],
        Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)),
        str(value.get("model") or ""),
    )


def _block(item: dict[str, Any]) -> Block | None:
    kind = item.get("type")
    if kind == "text":
        return Block("text", text=str(item.get("text", "")))
    if kind == "tool_use":
        return Block("tool_use", id=str(item["id"]), name=str(item["name"]), input=item["input"])
    return None


def _streamed(text: str) -> Message | None:
    """The Message the events of a streamed response assemble into."""
    message: dict[str, Any] | None = None
    blocks: dict[int, Block] = {}
    input_tokens = output_tokens = 0
    stopped = False
    for kind, data in _events(text):
        if kind not in _EVENTS or stopped:
            return None  # an error event, one unknown, or anything after the stop
        if kind == "message_start":
            message = data["message"]
            usage = message.get("usage") or {}
            input_tokens = int(usage.get("input_tokens") or 0)
            output_tokens = int(usage.get("output_tokens") or 0)
        elif kind == "content_block_start":
            block = _block(data["content_block"])
            if block is None:
                return None
            blocks[int(data["index"])] = block
        elif kind == "content_block_delta":
            block, delta = blocks[int(data["index"])], data["delta"]
            if delta["type"] == "text_delta" and block.type == "text":
                block.text += delta["text"]
            elif delta["type"] == "input_json_delta" and block.type == "tool_use":
                block.partial_json += delta["partial_json"]
            else:
                return None
        elif kind == "content_block_stop":
            block = blocks[int(data["index"])]
            if block.type == "tool_use" and block.partial_json:
                block.input = json.loads(block.partial_json)
        elif kind == "message_delta":
            usage = data.get("usage") or {}
            if usage.get("output_tokens") is not None:
                output_tokens = int(usage["output_tokens"])
            if usage.get("input_tokens") is not None:
                input_tokens = int(usage["input_tokens"])
        elif kind == "message_stop":
            stopped = True
    if message is None or not stopped:
        return None
    content = [blocks[index] for index in sorted(blocks)]
    return Message(content, Usage(input_tokens, output_tokens), str(message.get("model") or ""))


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The server-sent events of a body: each one's name and its JSON data."""
    events: list[tuple[str, dict[str, Any]]] = []
    for chunk in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "", []
        for line in chunk.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if not name and not data:
            continue
        value = json.loads("\n".join(data)) if data else {}
        if not isinstance(value, dict):
            raise ValueError("an event's data is not an object")
        events.append((name or str(value.get("type", "")), value))
    return events
