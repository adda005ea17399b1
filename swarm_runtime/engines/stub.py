"""The deterministic stub engine: no network, same input, same output (docs/engines.md#the-stub).

By default a microloop's condition step declares a failing value on its first execution
and a success value on its second, and a branch step declares its first branch key, so
every routing kind is exercised. A :class:`Scenario` overrides that per step and execution.

An execution scripted ``wait_for: PATH`` answers only once the file PATH exists, looking
for it every :data:`GATE_POLL_S` through the injected sleep (so a cancel or Ctrl-C cuts the
wait short) and no longer than the step's deadline. Tests use it as a gate: a kill, pause
or stop lands inside the chosen step, whatever the load of the machine. Without the key
nothing waits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import (
    DEFAULT_TIMEOUT_S,
    ResultCode,
    RunEvent,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    TokenUsage,
    truncate_output,
)
from swarm_runtime.engines.handoff import format_handoff
from swarm_runtime.engines.scenario import Outcome, Scenario
from swarm_runtime.engines.tool_calls import StepTools
from swarm_runtime.flow.kinds import NO_FURTHER_HELP_FIELD, stub_handoff
from swarm_runtime.timeutil import interruptible_sleep

if TYPE_CHECKING:
    from swarm_runtime.engines.options import EngineOptions

STUB_MODEL = "claude-stub"
"""claude-step's stub model; every engine's stub names its own (:func:`stub_model`)."""


def stub_model(engine_short: str) -> str:
    """The model a stub under an engine says it is: ``openai`` -> ``openai-stub``."""
    return f"{engine_short}-stub"


ECHO_CHARS = 2000
"""How much of the prompt a reply with ``echo_prompt`` repeats."""
GATE_POLL_S = 0.02
"""How often an execution scripted ``wait_for`` looks for its gate file."""


def estimate_tokens(text: str) -> int:
    """ceil(characters / 4), the stub's token count."""
    return math.ceil(len(text) / 4)


class StubEngine(StepEngine):
    """A registered engine like any other, scriptable by a scenario."""

    mode = "stub"

    def __init__(
        self,
        *,
        engine_id: str = "claude-step",
        engine_short: str | None = None,
        scenario: Scenario | None = None,
        sleep: Callable[[float], None] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        api_name: str = "",
        options: EngineOptions | None = None,
    ) -> None:
        self.engine_id = engine_id
        self.options = options
        """The run's options: its tools (a scenario's tool call without ``output`` runs the
        real one), credentials and fault injector."""
        self.api_name = api_name
        """The API the engine calls in its live modes (how a stubbed fault words it)."""
        if engine_short is not None:  # else derived from the id, like any engine's
            self.engine_short = engine_short
        self.scenario = scenario or Scenario()
        self._sleep = sleep or interruptible_sleep
        self.timeout_s = timeout_s
        """How long a call may take in all (a step's own ``timeout_s`` comes first)."""

    def _reply(self, ctx: StepContext, outcome: Outcome | None) -> tuple[str, dict[str, Any]]:
        handoff = stub_handoff(ctx.routing_kind, ctx.handoff_fields, ctx.iteration)
        if outcome is not None and outcome.handoff is not None:
            if NO_FURTHER_HELP_FIELD in handoff and (
                set(outcome.handoff) & set(ctx.handoff_fields)
            ):
                # The scenario drives this loop: do not let the default end it early.
                handoff[NO_FURTHER_HELP_FIELD] = "yes"
            handoff.update(outcome.handoff)
        if outcome is not None and outcome.text is not None:
            body = outcome.text
        elif ctx.extra.get("echo_prompt") and ctx.prompt is not None:
            # An execution plan's model call: what the stub was asked shows in its reply,
            # so what a cycle summarises and remembers follows from its input.
            asked = " ".join(ctx.prompt.user.split())
            body = (
                f"[stub] {ctx.flow_key}/{ctx.step_id} (execution {ctx.iteration + 1})\n"
                f"Asked: {asked[:ECHO_CHARS]}\n"
                f"Result: done."
            )
        else:
            # Nothing here depends on the prompt's text, so editing one step's teaching
            # notes changes that step's files only, not every later step's history.
            body = (
                f"[stub] {ctx.flow_key}/{ctx.step_id} (step {ctx.step_index} of "
                f"{ctx.total_steps}, execution {ctx.iteration + 1})\n"
                f"Role: {ctx.step_role}\n"
                f"Earlier outputs seen: {len(ctx.history)}\n"
                f"Result: done."
            )
        if outcome is not None and outcome.text is not None and "```handoff" in outcome.text:
            return body, handoff  # the scripted text brings its own handoff block, as-is
        text = body + "\n\n" + format_handoff(handoff) if handoff else body
        return text, handoff

    def _timed_out(self, ctx: StepContext, what: str, limit: float) -> StepOutcome:
        error = (
            f"{what} is past the step's deadline of {limit:g} s (its timeout_s); the call "
            "was cut off"
        )
        return stub_failure(ctx, "retryable", error, model=stub_model(self.engine_short))

    def _wait(self, ctx: StepContext, outcome: Outcome) -> StepOutcome | None:
        """The scripted gate, then the scripted delay; a timed-out call when they overrun."""
        limit = ctx.timeout_s or self.timeout_s  # the deadline every engine keeps
        waited = 0.0
        if outcome.wait_for is not None:
            import os

            while not os.path.exists(outcome.wait_for):
                if waited >= limit:
                    return self._timed_out(ctx, f"the stub's gate {outcome.wait_for}", limit)
                self._sleep(GATE_POLL_S)
                waited += GATE_POLL_S
        if outcome.delay_ms:
            if waited + outcome.delay_ms / 1000.0 > limit:
                self._sleep(max(0.0, limit - waited))
                delay = f"the stub's scripted delay of {outcome.delay_ms} ms"
                return self._timed_out(ctx, delay, limit)
            self._sleep(outcome.delay_ms / 1000.0)
        return None

    def _navigate(self, ctx: StepContext) -> StepOutcome:
        """The navigator's answer: the scenario's choice, else the first candidate."""
        from swarm_runtime.engines.handoff import parse_handoff

        offered = ctx.handoff_fields.get("choice", ())
        scripted = self.scenario.navigator_choice(ctx.flow_key, ctx.step_id, ctx.iteration)
        choice = scripted if scripted is not None else (offered[0] if offered else "")
        why = "as the scenario says" if scripted is not None else "the first candidate"
        text = (
            f"[stub] navigator after {ctx.flow_key}/{ctx.step_id}: {choice} ({why})\n\n"
            + format_handoff({"choice": choice, "rationale": why, "confidence": 1.0})
        )
        return StepOutcome(
            result=StepResult(step_id=ctx.step_id, status="succeeded", output=text),
            text=text,
            handoff=parse_handoff(text),
            tokens=TokenUsage(prompt=0, completion=0),
            model=stub_model(self.engine_short),
            provider="none",
            mode="stub",
            transcript=({"role": "assistant", "content": text},),
            cost_usd=0.0,
        )

    def _judge(self, ctx: StepContext) -> StepOutcome:
        """A judge's answer: the scenario's ``judges:`` reply, else a score of 1."""
        from swarm_runtime.engines.handoff import parse_handoff

        name = str(ctx.extra.get("judge", ""))
        scripted = self.scenario.judge_reply(ctx.flow_key, ctx.step_id, name, ctx.iteration)
        where = f"[stub] judge {name} of {ctx.flow_key}/{ctx.step_id}"
        if scripted is None:
            text = f"{where}\n\n" + format_handoff(
                {"score": 1.0, "reason": "the stub's default score: no judges: entry scripts one"}
            )
        elif scripted.text is not None:
            text = scripted.text
        else:
            text = f"{where}\n\n" + format_handoff(
                {"score": scripted.score, "reason": scripted.reason}
            )
        prompt_chars = len(ctx.prompt.system) + len(ctx.prompt.user) if ctx.prompt else 0
        return StepOutcome(
            result=StepResult(step_id=ctx.step_id, status="succeeded", output=text),
            text=text,
            handoff=parse_handoff(text),
            tokens=TokenUsage(math.ceil(prompt_chars / 4), estimate_tokens(text)),
            model=stub_model(self.engine_short),
            provider="none",
            mode="stub",
            transcript=({"role": "assistant", "content": text},),
            cost_usd=0.0,
        )

    def run_step(self, ctx: StepContext) -> StepOutcome:
        """Produce the scripted (or default) reply for the step."""
        from swarm_runtime.engines.handoff import parse_handoff

        # Outcomes are counted per execution (the run's count, so a resumed run gets the
        # same ones); a retry within an execution keeps its outcome (see code_for).
        if ctx.call == "navigator":
            return self._navigate(ctx)
        if ctx.call == "judge":
            return self._judge(ctx)
        outcome = self.scenario.outcome_for(ctx.flow_key, ctx.step_id, ctx.iteration)
        if outcome is not None and (outcome.delay_ms or outcome.wait_for is not None):
            timed_out = self._wait(ctx, outcome)
            if timed_out is not None:
                return timed_out
        text, _ = self._reply(ctx, outcome)
        handoff = parse_handoff(text)
        events: list[RunEvent] = []
        lines: list[dict[str, Any]] = []
        tool_ms = 0
        if outcome is not None and outcome.tools:  # no call scripted: no tools to set up
            try:
                tools = self._tool_calls(ctx, outcome)
            except Exception as exc:
                from swarm_runtime.engines.tool_calls import TooManyToolCalls
                from swarm_runtime.tools.mcp import McpServerError

                if not isinstance(exc, TooManyToolCalls | McpServerError):
                    raise
                return stub_failure(ctx, "fatal", str(exc), model=stub_model(self.engine_short))
            events, lines, tool_ms = tools.events, tools.lines, tools.tool_ms
        lines.append({"role": "assistant", "content": text})
        code = outcome.code_for(ctx.attempt, "input" in ctx.extra) if outcome else "ok"
        status, error = _status(code, outcome)
        return StepOutcome(
            result=StepResult(
                step_id=ctx.step_id,
                status=status,  # type: ignore[arg-type]
                output=truncate_output(text),
                error=error,
                artifacts=outcome.artifacts if outcome else (),
            ),
            events=tuple(events),
            result_code=code,  # type: ignore[arg-type]
            text=text,
            handoff=handoff,
            tokens=_tokens(ctx, outcome, text),
            model=stub_model(self.engine_short),
            provider="none",
            mode="stub",
            transcript=tuple(lines),
            retry_after_ms=outcome.retry_after_ms if outcome else None,
            cost_usd=0.0,
            tool_call_ms=tool_ms,
        )

    def _tool_calls(self, ctx: StepContext, outcome: Outcome | None) -> StepTools:
        """The scenario's tool calls, in order.

        The real tool runs unless the entry gives ``output`` (or the run has no tool of that
        name: then it is shown as scripted).
        """
        from swarm_runtime.engines.tool_calls import ToolCall, wire_name

        options = self.options
        tools = StepTools(
            options.tools if options is not None else None,
            ctx,
            credentials=options.credentials if options is not None else None,
            faults=options.faults if options is not None else None,
        )
        calls = outcome.tools if outcome else ()
        if any(not call.scripted for call in calls):
            tools.offered(known_only=True)
        for index, call in enumerate(calls):
            if call.scripted or not tools.has(call.tool):
                tools.scripted(call.tool, call.input, call.success, call.output)
                continue
            given = call.input if call.input is not None else {}
            tools.answer(ToolCall(id=f"stub-{index}", name=wire_name(call.tool), input=given))
        return tools


def _tokens(ctx: StepContext, outcome: Outcome | None, text: str) -> TokenUsage:
    """The scripted token counts, else an estimate from the prompt and the reply."""
    if outcome is not None and outcome.tokens is not None:
        return TokenUsage(*outcome.tokens)
    prompt_chars = len(ctx.prompt.system) + len(ctx.prompt.user) if ctx.prompt else 0
    return TokenUsage(math.ceil(prompt_chars / 4), estimate_tokens(text))


def _status(code: str, outcome: Outcome | None) -> tuple[str, str | None]:
    """The step status and error a result code stands for (a scripted error comes first)."""
    if code in ("fatal", "retryable", "blocked"):
        error = (outcome.error if outcome else None) or f"stub scenario: result_code {code}"
        return "failed", error
    if code == "skipped":
        return "skipped", None
    return "succeeded", None


def stub_failure(
    ctx: StepContext,
    code: ResultCode,
    error: str,
    *,
    retry_after_ms: int | None = None,
    model: str = STUB_MODEL,
) -> StepOutcome:
    """A stub call that failed with ``code``: no reply, nothing spent."""
    return StepOutcome(
        result=StepResult(step_id=ctx.step_id, status="failed", error=error),
        result_code=code,
        model=model,
        provider="none",
        mode="stub",
        retry_after_ms=retry_after_ms,
        cost_usd=0.0,
    )
