"""A run's tool calls, read from its event log and held against its other files.

Each step execution's calls are the ``tool_start``/``tool_end`` pairs between its
``step_start`` and its ``step_end`` or ``step_error`` (:func:`step_executions`); a ``log``
event with ``retry_in_ms`` starts the execution's next attempt. What must agree
(:func:`check_tool_calls`):

- the transcript of an execution holds one ``tool_use`` and one ``tool_result`` line per
  call of its last attempt (the transcript is the answer that counted), in the same order,
  for the same tools, with the same ``success``;
- no call of a tool the step does not allow succeeded: a model may ask for one, but the
  runtime answers it with an error and never runs it, so its ``tool_end`` says
  ``success: false``. A step allows the tools its receipt's ``tools_allowed`` names (a
  CLI pattern such as ``Bash(git log:*)`` allows ``Bash``; ``server.tool`` allows the
  Claude Code CLI's ``mcp__server__tool``).

That a call's ``tool_end`` follows its ``tool_start`` is a sequencing invariant of the
event log itself (:mod:`swarm_runtime.contracts.sequence`).

See docs/tools.md#tools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from swarm_runtime.contracts.violation import Violation
from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.record import Record, field

INTERRUPTED = "interrupted"
"""The error of a ``step_error`` a crash or a stop left (its files moved aside)."""


class ToolCall(Record):
    """One call of a tool: its ``tool_start`` and, once it ended, its ``tool_end``."""

    tool: str
    input: Any
    start_line: int
    """The line of its ``tool_start`` in ``events.jsonl`` (1-based)."""
    started: str | None
    """The ``ts`` of its ``tool_start``."""
    success: bool | None = None
    """What its ``tool_end`` says; None while it has none."""
    output: Any = None
    end_line: int | None = None
    ended: str | None = None
    """The ``ts`` of its ``tool_end``."""

    def ms(self) -> int | None:
        """How long it took: its ``tool_end``'s ``ts`` less its ``tool_start``'s, in ms."""
        from swarm_runtime.timeutil import ms_between, parse_ts

        if self.started is None or self.ended is None:
            return None
        try:
            return ms_between(parse_ts(self.started), parse_ts(self.ended))
        except ValueError:
            return None  # a foreign run's timestamp: no time rather than a wrong one


class Execution(Record):
    """One execution of a step, as the event log tells it, with its tool calls in order."""

    flow_key: str
    step_id: str
    agent_key: str | None
    iteration: int | None
    start_line: int
    calls: list[ToolCall] = field(default_factory=list)
    """Every call of every attempt, in order."""
    last_attempt: int = 0
    """Where the calls of the last attempt begin in ``calls``."""
    end_line: int | None = None
    error: str | None = None
    """A ``step_error``'s error; None for a ``step_end`` (or no end yet)."""


def step_executions(events: Iterable[tuple[int, dict[str, Any]]]) -> list[Execution]:
    """Every step execution of an event log, in order, from its (line, event) pairs."""
    found: list[Execution] = []
    calls: list[ToolCall] = []
    current: dict[str, Any] | None = None
    for line, event in events:
        kind = event.get("kind")
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        assert isinstance(payload, dict)
        if kind == "step_start":
            if current is not None:  # it never ended (the sequence check reports it)
                found.append(Execution(**current, calls=calls))
            current, calls = _opened(line, event, payload), []
        elif current is None:
            continue
        elif kind == "tool_start":
            calls.append(_started(line, event, payload))
        elif kind == "tool_end":
            calls[-1:] = _ended(calls[-1:], line, event, payload)
        elif kind == "log" and "retry_in_ms" in payload:
            current["last_attempt"] = len(calls)
        elif kind in ("step_end", "step_error"):
            error = payload.get("error") if kind == "step_error" else None
            current.update(end_line=line, error=str(error) if error is not None else None)
            found.append(Execution(**current, calls=calls))
            current = None
    if current is not None:  # under way, or cut short
        found.append(Execution(**current, calls=calls))
    return found


def _opened(line: int, event: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    iteration = payload.get("iteration")
    agent = event.get("agent_key")
    return {
        "flow_key": str(event.get("flow_key")),
        "step_id": str(event.get("step_id")),
        "agent_key": agent if isinstance(agent, str) else None,
        "iteration": iteration if isinstance(iteration, int) else None,
        "start_line": line,
    }


def _started(line: int, event: dict[str, Any], payload: dict[str, Any]) -> ToolCall:
    ts = event.get("ts")
    return ToolCall(
        tool=str(payload.get("tool")),
        input=payload.get("input"),
        start_line=line,
        started=ts if isinstance(ts, str) else None,
    )


def _ended(
    last: list[ToolCall], line: int, event: dict[str, Any], payload: dict[str, Any]
) -> list[ToolCall]:
    """The calls a ``tool_end`` leaves: its call ended, or a call with no start before it."""
    tool, ts = str(payload.get("tool")), event.get("ts")
    ended: dict[str, Any] = {
        "success": payload.get("success") is True,
        "output": payload.get("output"),
        "end_line": line,
        "ended": ts if isinstance(ts, str) else None,
    }
    if last and last[0].end_line is None and last[0].tool == tool:
        call = last[0]
        return [ToolCall(call.tool, call.input, call.start_line, call.started, **ended)]
    return [*last, ToolCall(tool, None, line, None, **ended)]  # the sequence check reports it


def allows(allowed: Sequence[str], tool: str) -> bool:
    """Whether a step whose ``tools:`` are ``allowed`` lets ``tool`` run (see the module)."""
    for name in allowed:
        if tool == name or (name.endswith(")") and tool == name.partition("(")[0]):
            return True
        server, dot, rest = name.partition(".")
        if dot and tool == f"mcp__{server}__{rest}":
            return True
    return False


def check_tool_calls(
    root: Path,
    events: Sequence[tuple[int, dict[str, Any]]],
    receipts: Sequence[tuple[Path, dict[str, Any]]],
) -> list[Violation]:
    """How the tool calls of the run at ``root`` disagree across its files (see the module).

    ``events`` are the event log's (line, event) pairs that parsed; ``receipts`` every
    receipt that parsed, with its path (earlier executions' ``~N`` copies too).
    """
    by_execution: dict[tuple[Any, ...], tuple[Path, dict[str, Any]]] = {}
    by_step: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path, document in receipts:
        key = (path.parent.parent.name, document.get("step_id"), document.get("agent_key"))
        by_execution[(*key, document.get("iteration"))] = (path, document)
        by_step.setdefault(key, document)
    found: list[Violation] = []
    for execution in step_executions(events):
        key = (execution.flow_key, execution.step_id, execution.agent_key)
        kept = by_execution.get((*key, execution.iteration))
        receipt = kept[1] if kept else by_step.get(key)
        if receipt is not None:
            found.extend(_unallowed(execution, receipt))
        if kept is not None and execution.error != INTERRUPTED and execution.end_line:
            found.extend(_transcript_disagrees(root, execution, *kept))
    return found


def _unallowed(execution: Execution, receipt: dict[str, Any]) -> list[Violation]:
    listed = receipt.get("tools_allowed")
    allowed = [str(name) for name in listed] if isinstance(listed, list) else []
    said = ", ".join(allowed) if allowed else "none"
    return [
        Violation(
            "events.jsonl",
            call.end_line,
            f"step '{execution.flow_key}/{execution.step_id}': tool '{call.tool}' ran and "
            f"succeeded, but the step does not allow it (its tools: {said}); a call for a "
            "tool the step does not allow is answered with an error and never runs",
        )
        for call in execution.calls
        if call.success and not allows(allowed, call.tool)
    ]


def _transcript_disagrees(
    root: Path, execution: Execution, path: Path, receipt: dict[str, Any]
) -> list[Violation]:
    transcript = _transcript_of(path, receipt)
    if transcript is None:
        return []  # the receipt and transcript checks report a missing or unreadable one
    lines = _tool_lines(transcript)
    said = [shown for _, shown in lines]
    happened: list[str] = []
    for call in execution.calls[execution.last_attempt :]:
        happened.append(f"tool_use {call.tool}")
        if call.end_line is not None:
            happened.append(f"tool_result {call.tool} {_outcome(call.success)}")
    if said == happened:
        return []
    first = next((i for i, (a, b) in enumerate(zip(said, happened, strict=False)) if a != b), None)
    where = lines[first][0] if first is not None else None
    attempt = " (its last attempt)" if execution.last_attempt else ""
    return [
        Violation(
            str(transcript.relative_to(root)),
            where,
            f"step '{execution.flow_key}/{execution.step_id}' (iteration "
            f"{execution.iteration}): its tool lines [{', '.join(said)}] do not match the tool "
            f"events of its execution{attempt} from events.jsonl:{execution.start_line} "
            f"[{', '.join(happened)}]",
        )
    ]


def _outcome(success: bool | None) -> str:
    return "ok" if success else "failed"


def _transcript_of(receipt_path: Path, receipt: dict[str, Any]) -> Path | None:
    """The transcript a receipt names; an earlier execution's ``~N`` receipt has ``~N``'s.

    (A receipt names its transcript before both are moved aside when the step runs again.)
    """
    named = receipt.get("transcript_path")
    if not isinstance(named, str) or not named.startswith("llm/") or ".." in named:
        return None
    copy = re.search(r"~[0-9]+(?=\.json$)", receipt_path.name)
    if copy is not None:
        named = re.sub(r"(~[0-9]+)?\.jsonl$", f"{copy.group(0)}.jsonl", named)
    path = receipt_path.parent.parent / named
    return path if path.is_file() and not path.is_symlink() else None


def _tool_lines(path: Path) -> list[tuple[int, str]]:
    """The tool lines of a transcript as (line, ``tool_use NAME`` | ``tool_result NAME ok``)."""
    try:
        text = read_run_text(path)
    except (OSError, ValueError):
        return []
    found: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        try:
            line = load_json(raw)
        except ValueError:
            continue  # the transcript check reports it
        if not isinstance(line, dict) or "role" in line:
            continue
        if line.get("type") == "tool_use":
            found.append((number, f"tool_use {line.get('tool')}"))
        elif line.get("type") == "tool_result":
            found.append(
                (number, f"tool_result {line.get('tool')} {_outcome(line.get('success'))}")
            )
    return found
