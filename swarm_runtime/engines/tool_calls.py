"""The tool calls of one step call (docs/tools.md#tools): checked, run, recorded, answered, counted.

An engine that runs a tool loop hands each tool call its model makes to :class:`StepTools`,
which answers it — always with an answer for the model, never by raising, except past the
step's ``max_tool_calls`` (:class:`TooManyToolCalls`, a fatal step), on a replay divergence,
or when an MCP server fails (:class:`~swarm_runtime.tools.mcp.McpServerError`, the step's
error). On the way it writes the ``tool_start``/``tool_end`` events and the
``tool_use``/``tool_result`` transcript lines, times the tools (``toolCallMs``) and scrubs
credential values out of inputs and outputs.

A call for a tool the step does not offer, or that does not exist, never runs: it is
answered as an error. Arguments that do not fit the tool's schema, a tool that raises, one
past its deadline, and output that is not JSON are answered as errors too; output past the
step's budget (``tool_output_chars``) is cut with a visible marker.

In record mode every call is kept in the step's cassette (``tape``); in replay a tool that
is not pure is never run — its recorded answer is served — and a pure tool runs again and
must answer what it answered when recorded. A fault plan's ``tool_error`` and
``tool_timeout`` answer a call without running it.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Protocol

from swarm_runtime.documents.run_events import Log, ToolEnd, ToolStart
from swarm_runtime.engines.base import RunEvent, StepContext
from swarm_runtime.record import Record

if TYPE_CHECKING:
    from swarm_runtime.credentials import Credentials
    from swarm_runtime.engines.faults import FaultInjector
    from swarm_runtime.tools.box import ToolBox
    from swarm_runtime.tools.registry import ToolSpec

WIRE_SEPARATOR = "__"
"""``server.tool`` goes to a provider as ``server__tool`` (the APIs allow no dots in names)."""


class ToolCall(Record):
    """A tool call a model made: its id (the provider's), the tool's name on the wire, input."""

    id: str
    name: str
    input: Any


class ToolAnswer(Record):
    """What the model is told of one call: success, and the text (or the error)."""

    call: ToolCall
    success: bool
    output: str


class TooManyToolCalls(Exception):
    """The step made more tool calls than its ``max_tool_calls``."""


class ToolTape(Protocol):
    """Where a recording keeps, and a replay finds, a step's tool answers (its cassette)."""

    replays: bool

    def recorded(self, ctx: StepContext, tool: str, tool_input: Any) -> tuple[bool, str] | None:
        """The recorded (success, output) of this call: None when there is none to play."""

    def keep(
        self, ctx: StepContext, tool: str, tool_input: Any, success: bool, output: str
    ) -> None:
        """Record the answer of a call that ran."""

    def missing(self, ctx: StepContext, tool: str, tool_input: Any) -> Exception:
        """The replay divergence of a call with no recording."""


def wire_name(name: str) -> str:
    """A tool's name as the provider sees it."""
    return name.replace(".", WIRE_SEPARATOR, 1)


class StepTools:
    """The tools one step call offers its model, and the calls it makes of them."""

    def __init__(
        self,
        box: ToolBox | None,
        ctx: StepContext,
        *,
        credentials: Credentials | None = None,
        tape: ToolTape | None = None,
        faults: FaultInjector | None = None,
    ) -> None:
        self.box = box
        self.ctx = ctx
        self.credentials = credentials
        self.tape = tape
        self.faults = faults
        from swarm_runtime.tools.config import ToolSettings

        settings = box.settings if box is not None else ToolSettings()
        self.max_calls = ctx.max_tool_calls or settings.max_tool_calls
        self.output_chars = settings.tool_output_chars
        self.events: list[RunEvent] = []
        self.lines: list[dict[str, Any]] = []
        self.tool_ms = 0
        self.calls = 0
        self._specs: dict[str, ToolSpec] = {}
        """The offered tools by wire name."""

    def offered(self, *, known_only: bool = False) -> list[ToolSpec]:
        """The specs of the step's ``tools:`` (starting the MCP servers they need).

        A name the run has no tool for raises UnknownTool (the step cannot be offered it);
        ``known_only`` leaves such names out instead (the stub, for a CLI engine's tools).
        """
        if not self.ctx.tools:
            return []
        from swarm_runtime.tools.box import UnknownTool

        if self.box is None and not known_only:
            raise UnknownTool(
                f"the step offers {', '.join(self.ctx.tools)}, but the run has no tools "
                "(register them in runtime.yaml tools: or mcp_servers:)"
            )
        if not self._specs and self.box is not None:
            for name in self.ctx.tools:
                if known_only and not self.has(name):
                    continue
                spec = self.box.spec(name)
                self._specs[wire_name(spec.name)] = spec
        return list(self._specs.values())

    def has(self, name: str) -> bool:
        """Whether the run has a tool of that name (a Python tool, or a declared server's)."""
        if self.box is None:
            return False
        server, dot, _ = name.partition(".")
        return name in self.box.registry or bool(dot and server in self.box.settings.mcp_servers)

    def scripted(self, tool: str, tool_input: Any, success: bool, output: Any) -> None:
        """A call the stub shows as its scenario scripts it: nothing runs."""
        tool_input, output = self._scrub(tool_input), self._scrub(output)
        self.events.append(RunEvent(ToolStart(tool=tool, input=tool_input)))
        self.lines.append({"type": "tool_use", "tool": tool, "input": tool_input})
        self.events.append(RunEvent(ToolEnd(tool=tool, success=success, output=output)))
        self.lines.append(
            {"type": "tool_result", "tool": tool, "success": success, "output": output}
        )

    def answer(self, call: ToolCall) -> ToolAnswer:
        """Run one call of the model (or refuse it) and say what the model is told."""
        self.calls += 1
        if self.calls > self.max_calls:
            raise TooManyToolCalls(
                f"the step made more than max_tool_calls={self.max_calls} tool calls (raise "
                "max_tool_calls on the step, its flow or in runtime.yaml)"
            )
        spec = self._specs.get(call.name)
        name = spec.name if spec is not None else call.name.replace(WIRE_SEPARATOR, ".", 1)
        tool_input = self._scrub(call.input)
        self.events.append(RunEvent(ToolStart(tool=name, input=tool_input)))
        self.lines.append({"type": "tool_use", "tool": name, "input": tool_input})
        started = time.monotonic()
        try:
            success, output = self._outcome(spec, name, call.input)
        finally:
            self.tool_ms += round((time.monotonic() - started) * 1000)
        output = self._cut(self._scrub(output))
        self.events.append(RunEvent(ToolEnd(tool=name, success=success, output=output)))
        self.lines.append(
            {"type": "tool_result", "tool": name, "success": success, "output": output}
        )
        return ToolAnswer(call=call, success=success, output=output)

    def log(self, message: str, **fields: Any) -> None:
        """A ``log`` event among the step's tool events."""
        self.events.append(RunEvent(Log(message=message, **fields)))

    # -- one call ------------------------------------------------------------------

    def _outcome(self, spec: ToolSpec | None, name: str, tool_input: Any) -> tuple[bool, str]:
        if spec is None:
            allowed = ", ".join(s.name for s in self._specs.values()) or "none"
            said = f"the step does not offer a tool named {name!r} (offered: {allowed})"
            self.log(f"refused a call of {name!r}: {said}", tool=name)
            return False, f"error: {said}"
        if not isinstance(tool_input, dict):
            return (
                False,
                f"error: the input of {name} must be a JSON object, got {tool_input!r:.80}",
            )
        fault = self.faults.take_tool_fault(name) if self.faults is not None else None
        if fault is not None:
            self.log(
                f"fault plan {self.faults.plan.source if self.faults else ''}: {fault.kind} "
                f"injected into the call of {name} in attempt {self.ctx.attempt} of "
                f"{self.ctx.flow_key}/{self.ctx.step_id}",
                fault=fault.kind,
                tool=name,
            )
            if fault.kind == "tool_timeout":
                return False, f"error: {name} did not answer within its deadline (injected)"
            return False, f"error: {name} failed (tool_error injected by the fault plan)"
        tape = self.tape
        filed = self._scrub(tool_input)  # the input as a cassette keeps it
        if tape is not None and tape.replays:
            recorded = tape.recorded(self.ctx, name, filed)
            if recorded is None:
                raise tape.missing(self.ctx, name, filed)
            if not spec.pure:
                return recorded
            fresh = self._run(spec, tool_input)
            scrubbed = (fresh[0], self._cut(self._scrub(fresh[1])))
            if scrubbed != recorded:
                raise self._pure_divergence(name, tool_input, recorded, scrubbed)
            return fresh
        if tape is not None:
            played = tape.recorded(self.ctx, name, filed)
            if played is not None:  # new episodes: the call is in the recording
                return played
        success, output = self._run(spec, tool_input)
        if tape is not None:
            tape.keep(self.ctx, name, filed, success, self._cut(self._scrub(output)))
        return success, output

    def _run(self, spec: ToolSpec, tool_input: dict[str, Any]) -> tuple[bool, str]:
        """Run the tool: (success, text for the model)."""
        from swarm_runtime.tools.box import ToolTimeout
        from swarm_runtime.tools.mcp import McpServerError, McpToolError
        from swarm_runtime.tools.registry import ToolInputError

        assert self.box is not None
        try:
            value = self.box.call(spec, tool_input)
        except McpServerError:
            raise  # the server is gone: the step fails, naming it
        except (ToolInputError, McpToolError) as exc:
            return False, f"error: {exc}"
        except ToolTimeout as exc:
            self.log(f"tool {spec.name} timed out: {exc}", tool=spec.name)
            return False, f"error: {exc}"
        except Exception as exc:
            self.log(f"tool {spec.name} raised {type(exc).__name__}: {exc}", tool=spec.name)
            return False, f"error: {spec.name} raised {type(exc).__name__}: {exc}"
        return _as_text(spec.name, value)

    def _scrub(self, value: Any) -> Any:
        return self.credentials.scrub_value(value) if self.credentials else value

    def _cut(self, text: str) -> str:
        room = self.output_chars
        if len(text) <= room:
            return text
        cut = len(text) - room
        marker = f"[CONTEXT_TRUNCATED: {cut} of {len(text)} chars of this tool output cut]"
        return f"{text[:room]}\n{marker}"

    def _pure_divergence(
        self, name: str, tool_input: Any, recorded: tuple[bool, str], fresh: tuple[bool, str]
    ) -> Exception:
        import difflib

        from swarm_runtime.errors import ReplayDivergence

        diff = "\n".join(
            list(
                difflib.unified_diff(
                    recorded[1].splitlines(), fresh[1].splitlines(), "recorded", "now", lineterm=""
                )
            )[:24]
        )
        if recorded[0] != fresh[0]:
            diff = f"success was {recorded[0]}, is {fresh[0]}\n{diff}"
        where = f"replay of {self.ctx.flow_key}/{self.ctx.step_id} iteration {self.ctx.iteration}"
        shown = json.dumps(self._scrub(tool_input), sort_keys=True)[:200]
        return ReplayDivergence(
            f"{where}: the pure tool {name} answered otherwise than when it was recorded "
            f"(input {shown}):\n{diff}"
        )


def _as_text(name: str, value: Any) -> tuple[bool, str]:
    """A tool's return as the text the model reads; a value JSON cannot carry is an error."""
    if isinstance(value, str):
        return True, value
    try:
        return True, json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return False, (
            f"error: {name} returned a {type(value).__name__}, which is not JSON ({exc}); a tool "
            "returns text or a JSON value"
        )
