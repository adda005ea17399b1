"""The event kinds of a run and of its step executions, one class each.

Each is a :class:`~swarm_runtime.documents.payload.Payload`: its fields are the payload's,
``kind`` its name, ``stands`` where it may come in the log.

See docs/contract/events.md#event-kinds.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, UnsetType

from swarm_runtime.documents.payload import Payload, Stands

NonNegative = Annotated[int, Meta(ge=0)]

RouteMove = Literal["loop", "advance", "terminate", "pending"]
"""What a route_decision (and a receipt's ``routing``) decides."""
RoutingSource = Literal[
    "fast_path", "deterministic", "navigator", "navigator:detour", "envelope_fallback", "escalate"
]
"""Who chose a route (docs/flows.md#decisions)."""
Ended = Literal["succeeded", "failed", "stopped"]
"""How an attempt of a run ends."""


class RunCreated(Payload):
    """The run was made: its flows, its backend, who started it."""

    kind = "run_created"
    stands = Stands.FIRST
    flows: list[str]
    """The flows it runs, in order."""
    backend: str
    """What runs it: ``claude-step-orchestrator`` (``swarm run``, pytest and the API by default),
    ``gemini-step-orchestrator``, ``celery`` (on ``swarm worker`` processes),
    ``plan-executor`` (a cycle of an execution plan) or the id of a backend added with
    ``register_backend``."""
    initiator: str
    """Who started it (``cli``, ``pytest``, …)."""
    stepwise: Literal[True]
    """Every run goes one step at a time."""


class RunStarted(Payload):
    """The run's steps begin (again, after a resume of a run that had not started)."""

    kind = "run_started"
    stands = Stands.START
    mode: Literal["stepwise"]
    """How steps are run: one at a time."""
    routing_enabled: bool
    """Routing is on."""


class StepStart(Payload):
    """A step execution begins."""

    kind = "step_start"
    stands = Stands.STEP_START
    role: str
    """What the step does."""
    agents: list[str]
    """Who runs it, the primary agent first."""
    step_index: Annotated[int, Meta(ge=1)]
    """Its place in its flow, from 1."""
    engine: str
    """The engine that runs it."""
    iteration: NonNegative = 0
    """Earlier executions of the step in this run."""


class ToolStart(Payload):
    """The step's model called a tool."""

    kind = "tool_start"
    stands = Stands.TOOL_START
    tool: str
    """The tool's name."""
    input: Any = None
    """What the tool was given."""


class ToolEnd(Payload):
    """The tool call ended."""

    kind = "tool_end"
    stands = Stands.TOOL_END
    tool: str
    """The tool's name."""
    success: bool
    """Whether it succeeded."""
    output: Any = None
    """What it gave back."""


class Log(Payload, forbid_unknown_fields=False):
    """A message of the step under way: a retry, an injected fault, a warning."""

    kind = "log"
    stands = Stands.IN_STEP
    message: str
    """What happened, for a person."""
    attempt: int | UnsetType = UNSET
    """The attempt it concerns."""
    max_attempts: int | UnsetType = UNSET
    """How many attempts the execution has."""
    error: str | UnsetType | None = UNSET
    """Why the attempt failed."""
    retry_in_ms: int | UnsetType = UNSET
    """How long until the next attempt."""
    fault: str | UnsetType = UNSET
    """The kind of fault a fault plan injected."""
    served: bool | UnsetType = UNSET
    """Whether the injected fault reached the engine's request."""
    result_code: str | UnsetType = UNSET
    """What the attempt answered."""
    tool: str | UnsetType = UNSET
    """The tool a message is about: a refused, failed or timed-out call (docs/tools.md#tools)."""


class Judgement(Payload):
    """A judge graded the reply of the step under way against its rubric (docs/judges.md#judges)."""

    kind = "judgement"
    stands = Stands.IN_STEP
    name: str
    """The judge."""
    step: str
    """The step it graded."""
    score: Annotated[float, Meta(ge=0, le=1)] | None
    """What it gave, from 0 to 1; null when its reply held no score it could read."""
    threshold: Annotated[float, Meta(ge=0, le=1)]
    """The lowest score that passes."""
    passed: bool
    """score >= threshold (a judgement with no score never passes)."""
    reason: str
    """Why: the judge's own words, or what was wrong with its reply."""
    engine: str
    """The engine that graded."""
    model: str
    """The model it called."""
    error: str | UnsetType = UNSET
    """Why the judge's call failed, when it did: no verdict was given (score null)."""


class StepEnd(Payload):
    """A step execution succeeded (or was skipped); its route_decision follows."""

    kind = "step_end"
    stands = Stands.STEP_END
    status: Literal["succeeded", "skipped"]
    """How it ended."""
    duration_ms: NonNegative
    """How long it took."""
    engine: str
    """The engine that ran it."""


class StepError(Payload):
    """A step execution failed, or was cut short (``error: interrupted``)."""

    kind = "step_error"
    stands = Stands.STEP_ERROR
    status: Literal["failed"]
    """It failed."""
    duration_ms: NonNegative
    """How long it ran."""
    error: str
    """Why."""
    engine: str
    """The engine that ran it."""


class RouteDecision(Payload):
    """Where the run goes after a step, and why (docs/flows.md#decisions)."""

    kind = "route_decision"
    stands = Stands.ROUTE
    from_step: str
    """The step that ended."""
    to_step: str | None
    """The next step (null: the flow ends)."""
    decision: RouteMove
    """loop, advance, terminate (or pending)."""
    reason: str
    """Why (``success_value:VERIFIED``, ``max_iterations``, ``end_step:…``)."""
    loop_state: dict[str, int]
    """Executions of the flow's loop steps so far."""
    routing_source: RoutingSource
    """Who chose. ``envelope_fallback`` and ``escalate`` are declared, but the runtime
    never writes them."""


class _Reason(Payload, forbid_unknown_fields=False):
    reason: str
    """Why."""


class _Pause(_Reason, forbid_unknown_fields=False):
    step: str | UnsetType = UNSET
    """The step that waits for input (``flow/step``), when a step asked for the pause."""


class RunPausing(_Pause, forbid_unknown_fields=False):
    """A pause was asked for."""

    kind = "run_pausing"
    stands = Stands.PAUSE


class RunPaused(_Pause, forbid_unknown_fields=False):
    """The run is paused; ``swarm resume`` goes on."""

    kind = "run_paused"
    stands = Stands.PAUSE


class RunResumed(_Reason, forbid_unknown_fields=False):
    """The run goes on after a pause, a stop or a crash."""

    kind = "run_resumed"
    stands = Stands.RESUME
    previous_status: str | UnsetType = UNSET
    """How it had ended: paused, stopped, blocked or crashed."""
    flow_index: NonNegative | UnsetType = UNSET
    """The flow it goes on in."""
    step_id: str | UnsetType | None = UNSET
    """The step it goes on from (null: the flow's first)."""
    external_input: bool | UnsetType = UNSET
    """Whether a waiting step was given its input."""
    repairs: list[str] | UnsetType = UNSET
    """What was mended in the run dir (a torn line, temporary files, moved files)."""


class RunStopping(_Reason, forbid_unknown_fields=False):
    """A stop was asked for."""

    kind = "run_stopping"
    stands = Stands.STOP


class RunStopped(_Reason, forbid_unknown_fields=False):
    """The run stopped; its run_completed follows."""

    kind = "run_stopped"
    stands = Stands.STOP


class RunCompleted(Payload):
    """The attempt ended (every attempt ends with exactly one)."""

    kind = "run_completed"
    stands = Stands.LAST
    status: Ended
    """How."""
    error: str | None
    """Why it did not succeed."""
    steps_completed: NonNegative
    """Step executions that succeeded, in the whole run."""
    total_steps_executed: NonNegative
    """Step executions begun, in the whole run."""
