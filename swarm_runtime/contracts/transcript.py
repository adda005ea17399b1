"""One line of a step transcript (SPEC §3.2)."""

from __future__ import annotations

from typing import Any, Literal

from swarm_runtime.contracts.base import Contract, Timestamp


class MessageLine(Contract):
    """A message of the conversation."""

    timestamp: Timestamp
    role: Literal["system", "user", "assistant"]
    content: str


class ToolUseLine(Contract):
    """The model called a tool."""

    timestamp: Timestamp
    type: Literal["tool_use"]
    tool: str
    input: Any = None


class ToolResultLine(Contract):
    """A tool answered."""

    timestamp: Timestamp
    type: Literal["tool_result"]
    tool: str
    success: bool
    output: Any = None


TranscriptLine = MessageLine | ToolUseLine | ToolResultLine


def parse_transcript_line(value: object) -> TranscriptLine:
    """Validate one decoded line: a message if it has ``role``, else a tool line by ``type``."""
    if isinstance(value, dict) and "role" in value:
        return MessageLine.model_validate(value)
    if isinstance(value, dict) and value.get("type") == "tool_result":
        return ToolResultLine.model_validate(value)
    if isinstance(value, dict) and value.get("type") == "tool_use":
        return ToolUseLine.model_validate(value)
    raise ValueError(
        "a transcript line needs 'role' (system|user|assistant) or 'type' (tool_use|tool_result)"
    )
