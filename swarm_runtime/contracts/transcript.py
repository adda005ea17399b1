"""One line of a step transcript (docs/contract/transcript.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ValidationError

from swarm_runtime.contracts.base import Contract, Timestamp


class MessageLine(Contract):
    """A message of the conversation."""

    timestamp: Timestamp
    """When the line was written."""
    role: Literal["system", "user", "assistant"]
    """Who speaks: the system prompt, the user prompt, or the model's reply."""
    content: str
    """The message's text."""


class ToolUseLine(Contract):
    """The model called a tool."""

    timestamp: Timestamp
    """When the call began."""
    type: Literal["tool_use"]
    """A tool call."""
    tool: str
    """The tool's name."""
    input: Any = None
    """What the tool was given."""


class ToolResultLine(Contract):
    """A tool answered."""

    timestamp: Timestamp
    """When the answer came."""
    type: Literal["tool_result"]
    """A tool's answer."""
    tool: str
    """The tool's name."""
    success: bool
    """Whether the call succeeded."""
    output: Any = None
    """What the tool gave back."""


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


ALLOWED: dict[str, str] = {
    "timestamp": "an RFC 3339 UTC time ending in Z (the runtime stamps the lines an engine "
    "returns)",
    "role": "system, user or assistant",
    "content": "a string, the message's text (an engine's StepOutcome.transcript line is "
    '{"role": "assistant", "content": text})',
    "type": "tool_use or tool_result",
    "tool": "a string, the tool's name",
    "success": "true or false",
}
"""What each field of a transcript line takes, as a finding says it."""

_SHOWN = 120
"""How much of a received value a finding shows."""


def _shown(value: object) -> str:
    text = repr(value)
    if len(text) > _SHOWN:
        text = f"{text[:_SHOWN]}… ({len(text)} chars)"
    kind = "null" if value is None else type(value).__name__
    return f"{text} ({kind})"


def explain(exc: ValidationError, value: object) -> list[str]:
    """A finding per error of one line: the field, what it received, what it takes."""
    kind: type[Contract] = MessageLine
    if isinstance(value, dict) and "role" not in value:
        kind = ToolResultLine if value.get("type") == "tool_result" else ToolUseLine
    fields = ", ".join(kind.model_fields)
    found = []
    for error in exc.errors(include_url=False):
        name = ".".join(str(part) for part in error["loc"]) or "(line)"
        if error["type"] == "missing":
            found.append(f"{name}: missing; a {_line_name(value)} line has {fields}")
        elif error["type"] == "extra_forbidden":
            found.append(
                f"{name}: received {_shown(error['input'])}, a field no {_line_name(value)} "
                f"line has; allowed fields: {fields}"
            )
        else:
            allowed = ALLOWED.get(str(error["loc"][0]) if error["loc"] else "", "")
            found.append(
                f"{name}: received {_shown(error['input'])}; allowed: "
                + (allowed or str(error["msg"]))
            )
    return found


def _line_name(value: object) -> str:
    if isinstance(value, dict) and "role" in value:
        return "message"
    return str(value.get("type")) if isinstance(value, dict) else "transcript"
