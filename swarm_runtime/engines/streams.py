"""Readers of the CLIs' ``stream-json`` output, fed one line at a time as the process writes.

Claude Code (``claude -p --output-format stream-json --verbose``) writes a ``system/init``
line, one ``assistant`` line per content block (text or ``tool_use``), a ``user`` line per
tool result, and a final ``result`` line whose ``usage`` holds the call's tokens (summed
over its turns) and ``total_cost_usd`` what it cost; the usage on ``assistant`` lines is
only the stream-start count and is never summed. The Gemini CLI (``gemini -p …
--output-format stream-json``) writes ``init``, ``message`` deltas, ``tool_use``,
``tool_result`` and a ``result`` line with ``stats``. Both readers build the same
:class:`StreamReport`: assistant text, transcript lines and tool events in order, tokens,
cost, and the error the CLI reported. A tool the CLI knows by another name (an MCP tool's
``mcp__fs__write_file``) is named as the flow names it (``fs.write_file``). Unknown line
types are skipped (newer CLIs add some); a line that is not a JSON object raises
:class:`StreamBroken`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from swarm_runtime.documents.run_events import ToolEnd, ToolStart
from swarm_runtime.engines.base import ResultCode, RunEvent, TokenUsage
from swarm_runtime.engines.process import StreamBroken
from swarm_runtime.engines.status import code_for_status
from swarm_runtime.timeutil import format_ts

_STATUS_IN_TEXT = re.compile(
    r'"code"\s*:\s*(\d{3})|API Error:?\s*(\d{3})|status(?: code)?\s*(\d{3})'
)


def _now() -> str:
    return format_ts(datetime.now(UTC))


def _as_text(value: Any) -> str:
    """A tool result's content: a string, or a list of blocks whose text is joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(
            str(block.get("text", "")) if isinstance(block, dict) else str(block) for block in value
        )
    return "" if value is None else json.dumps(value)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class StreamReport:
    """What a CLI's stream said, built line by line."""

    def __init__(
        self,
        cli: str,
        clock: Callable[[], str] = _now,
        *,
        names: Mapping[str, str] | None = None,
    ) -> None:
        self.cli = cli
        self.clock = clock
        self.names = dict(names or {})
        """The CLI's name of a tool -> the flow's, where they differ."""
        self.lines = 0
        self.texts: list[str] = []
        """Assistant text blocks, in order."""
        self.transcript: list[dict[str, Any]] = []
        self.events: list[RunEvent] = []
        self.model: str | None = None
        self.result: dict[str, Any] | None = None
        """The ``result`` line, once it arrived."""
        self.tokens = TokenUsage()
        self.cost_usd: float | None = None
        self.final_text: str | None = None
        """The reply's last text as the CLI's result gives it (Claude) or None."""
        self.error: str | None = None
        """The error the CLI reported (``is_error``, an error result), if any."""
        self.error_code: ResultCode = "fatal"
        self._tools: dict[str, str] = {}

    def feed(self, line: str) -> None:
        """Take one line of the stream (a subclass reads it)."""
        raise NotImplementedError

    def load(self, line: str) -> dict[str, Any]:
        """One line as a JSON object, or StreamBroken naming the line."""
        self.lines += 1
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            shown = line if len(line) <= 120 else line[:120] + "…"
            raise StreamBroken(
                f"line {self.lines} of the {self.cli} output is not a JSON object with a "
                f"'type': {shown!r}"
            )
        return value

    @property
    def text(self) -> str:
        """The whole reply: its text blocks, in order."""
        if not self.texts and self.final_text:
            return self.final_text
        return "\n\n".join(self.texts)

    def add_text(self, text: str) -> None:
        if not text:
            return
        self.texts.append(text)
        self.transcript.append({"timestamp": self.clock(), "role": "assistant", "content": text})

    def tool_start(self, tool_id: str, tool: str, tool_input: Any) -> None:
        ts = self.clock()
        tool = self.names.get(tool, tool)
        self._tools[tool_id] = tool
        self.events.append(RunEvent(ToolStart(tool=tool, input=tool_input), ts))
        self.transcript.append(
            {"timestamp": ts, "type": "tool_use", "tool": tool, "input": tool_input}
        )

    def tool_end(self, tool_id: str, success: bool, output: Any) -> None:
        ts = self.clock()
        tool = self._tools.get(tool_id, "unknown")
        self.events.append(RunEvent(ToolEnd(tool=tool, success=success, output=output), ts))
        line = {"type": "tool_result", "tool": tool, "success": success, "output": output}
        self.transcript.append({"timestamp": ts, **line})

    def fail(self, message: str, status: int | None) -> None:
        self.error = message
        self.error_code = code_for_status(status) if status is not None else "fatal"


class ClaudeStream(StreamReport):
    """Reads ``claude -p --output-format stream-json --verbose``."""

    def __init__(
        self, clock: Callable[[], str] = _now, *, names: Mapping[str, str] | None = None
    ) -> None:
        super().__init__("claude", clock, names=names)

    def feed(self, line: str) -> None:
        """Take one line of the stream."""
        item = self.load(line)
        kind = item["type"]
        if kind == "system" and item.get("subtype") == "init":
            self.model = str(item.get("model") or "") or self.model
        elif kind == "assistant":
            self._assistant(item.get("message"))
        elif kind == "user":
            self._tool_results(item.get("message"))
        elif kind == "result":
            self._result(item)

    def _assistant(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if message.get("model"):
            self.model = str(message["model"])
        for block in message.get("content") or ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                self.add_text(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                self.tool_start(
                    str(block.get("id", "")), str(block.get("name", "")), block.get("input")
                )

    def _tool_results(self, message: Any) -> None:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self.tool_end(
                    str(block.get("tool_use_id", "")),
                    not block.get("is_error", False),
                    _as_text(block.get("content")),
                )

    def _result(self, item: dict[str, Any]) -> None:
        self.result = item
        usage = _mapping(item.get("usage"))
        self.tokens = TokenUsage(
            _count(usage.get("input_tokens"))
            + _count(usage.get("cache_creation_input_tokens"))
            + _count(usage.get("cache_read_input_tokens")),
            _count(usage.get("output_tokens")),
        )
        cost = item.get("total_cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
            self.cost_usd = float(cost)
        if isinstance(item.get("result"), str):
            self.final_text = item["result"]
        if item.get("is_error") or str(item.get("subtype", "success")) != "success":
            status = item.get("api_error_status")
            detail = self.final_text or ", ".join(map(str, item.get("errors") or ())) or "no detail"
            subtype = item.get("subtype", "?")
            if isinstance(status, int):
                self.fail(f"Claude Code CLI: the API answered HTTP {status}: {detail}", status)
            elif detail.startswith("API Error:"):
                # An API call with no HTTP status: the connection or the stream broke
                # (docs/contract/steps.md#result-codes: connection errors are retryable).
                self.fail(f"Claude Code CLI: the API call broke off: {detail}", None)
                self.error_code = "retryable"
            else:
                self.fail(f"Claude Code CLI reported an error ({subtype}): {detail}", None)


class GeminiStream(StreamReport):
    """Reads ``gemini -p … --output-format stream-json``."""

    def __init__(
        self, clock: Callable[[], str] = _now, *, names: Mapping[str, str] | None = None
    ) -> None:
        super().__init__("gemini", clock, names=names)
        self._pending: list[str] = []

    def _flush(self) -> None:
        self.add_text("".join(self._pending))
        self._pending = []

    def feed(self, line: str) -> None:
        """Take one line of the stream."""
        item = self.load(line)
        kind = item["type"]
        if kind == "init":
            self.model = str(item.get("model") or "") or self.model
        elif kind == "message" and item.get("role") == "assistant":
            content = item.get("content")
            if isinstance(content, str):
                if not item.get("delta"):
                    self._flush()
                self._pending.append(content)
        elif kind == "tool_use":
            self._flush()
            self.tool_start(
                str(item.get("tool_id", "")), str(item.get("tool_name", "")), item.get("parameters")
            )
        elif kind == "tool_result":
            error = item.get("error")
            output = item.get("output")
            if output is None and isinstance(error, dict):
                output = error.get("message")
            self.tool_end(str(item.get("tool_id", "")), item.get("status") == "success", output)
        elif kind == "result":
            self._flush()
            self._result(item)

    def _result(self, item: dict[str, Any]) -> None:
        self.result = item
        stats = _mapping(item.get("stats"))
        models = _mapping(stats.get("models"))
        if models and self.model in (None, "", "auto"):
            self.model = list(models)[-1]  # with "auto", a router model is listed first
        self.tokens = TokenUsage(
            _count(stats.get("input_tokens")), _count(stats.get("output_tokens"))
        )
        if item.get("status") != "success":
            error = _mapping(item.get("error"))
            message = str(error.get("message") or item.get("status") or "no detail")
            self.fail(f"Gemini CLI reported an error: {message}", status_in(message))


def status_in(message: str) -> int | None:
    """The HTTP status an error message names, if it names one."""
    found = _STATUS_IN_TEXT.search(message)
    if not found:
        return None
    return int(next(group for group in found.groups() if group))
