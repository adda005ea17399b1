"""A tool call as a cassette keeps it: one more recorded call of the step, in order.

A step's cassette holds its model calls and its tool calls as they happened. A tool call is
kept in the shape of an HTTP call, so one reader, one matcher and one credential scan serve
both: ``POST swarm-tool://local/<tool>`` whose body is the tool and its input (JSON, sorted
keys), answered with a 200 whose body is ``{"success": …, "output": …}``.

See docs/tools.md#tools-in-record-and-replay.
"""

from __future__ import annotations

import json
from typing import Any

TOOL_SCHEME = "swarm-tool"
TOOL_METHOD = "POST"


def tool_uri(tool: str) -> str:
    """Where a cassette files a call of ``tool``."""
    return f"{TOOL_SCHEME}://local/{tool}"


def tool_body(tool: str, tool_input: Any) -> bytes:
    """The recorded request of a call: the tool and its input, as canonical JSON."""
    return json.dumps(
        {"tool": tool, "input": tool_input}, sort_keys=True, ensure_ascii=False
    ).encode()


def tool_response(success: bool, output: str) -> dict[str, Any]:
    """The recorded answer of a call, as a cassette holds a response."""
    body = json.dumps({"success": success, "output": output}, ensure_ascii=False)
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": {"content-type": ["application/json"]},
        "body": {"string": body},
    }


def tool_answer(response: dict[str, Any], where: str) -> tuple[bool, str]:
    """(success, output) of a recorded answer; ValueError naming ``where`` when it is not one."""
    text = response.get("body", {}).get("string")
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        value = None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("success"), bool)
        or not isinstance(value.get("output"), str)
    ):
        raise ValueError(
            f"{where}: a recorded tool answer must be {{success: true|false, output: text}}"
        )
    return value["success"], value["output"]


def is_tool_uri(uri: str) -> bool:
    """Whether a recorded call is a tool call (not an HTTP call of the provider)."""
    return uri.startswith(f"{TOOL_SCHEME}://")
