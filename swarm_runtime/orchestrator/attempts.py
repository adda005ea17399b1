"""The engine call of one step execution, made again while the engine answers ``retryable``.

SPEC §7.3: every attempt's events are recorded as they come; between attempts a ``log``
event says when the next one starts, and the run sleeps the engine's ``retry_after_ms``
when it gave one (up to ``max_retry_after_s``: a longer one ends the call at once), else an
equal-jitter backoff. An engine that raises ends the call.
"""

from __future__ import annotations

from collections.abc import Callable

from swarm_runtime.config import MAX_RETRY_AFTER_S
from swarm_runtime.documents.run_events import Log
from swarm_runtime.engines.base import (
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    TokenUsage,
)
from swarm_runtime.errors import ReplayDivergence
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.control import RunControl
from swarm_runtime.orchestrator.receipt import Call
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.verdict import backoff_delay, retry_after_refused
from swarm_runtime.record import replace
from swarm_runtime.timeutil import Clock, ms_between


class EngineCaller:
    """Calls the engine of a step execution, with its retries, and records its events."""

    def __init__(
        self,
        *,
        recorder: RunRecorder,
        control: RunControl,
        clock: Clock,
        sleep: Callable[[float], None],
        jitter: Callable[[], float],
        max_attempts: int,
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
    ) -> None:
        self.recorder = recorder
        self.control = control
        self.clock = clock
        self.sleep = sleep
        self.jitter = jitter
        self.max_attempts = max_attempts
        """Attempts per execution for a step that sets none itself."""
        self.max_retry_after_s = max_retry_after_s

    def call(self, engine: StepEngine, ctx: StepContext, flow: FlowSpec, step: StepSpec) -> Call:
        """The engine call, retried within the execution while it answers ``retryable``."""
        max_attempts = step.max_attempts or self.max_attempts
        attempt = llm_ms = waited_ms = 0
        earlier, earlier_cost = TokenUsage(), 0.0
        clock = self.clock
        while True:
            attempt += 1
            error: str | None = None
            unsent = False
            outcome: StepOutcome | None = None
            if attempt > 1:
                ctx = replace(ctx, attempt=attempt)
            began = clock()
            with self.control.engine_call():
                try:
                    outcome = engine.run_step(ctx)
                except Exception as exc:  # an engine bug must still end the step and the run
                    error = f"engine '{engine.engine_id}' raised {type(exc).__name__}: {exc}"
                    unsent = isinstance(exc, ReplayDivergence)
            llm_ms += ms_between(began, clock())
            for event in outcome.events if outcome else ():
                self.recorder.emit(
                    event.payload,
                    flow_key=flow.key,
                    step_id=step.id,
                    agent_key=step.primary_agent,
                    ts=event.ts,
                )
            if outcome is None:
                failed = StepOutcome(
                    result=StepResult(step_id=step.id, status="failed", error=error),
                    mode=engine.mode,
                    request_sha256=_digest(engine, ctx),
                    # A replay miss sent nothing: it cost nothing, not an unknown amount.
                    cost_usd=0.0 if unsent else None,
                )
                return Call(
                    failed, error, attempt, max_attempts, llm_ms, waited_ms, earlier, earlier_cost
                )
            if outcome.request_sha256 is None:
                outcome = replace(outcome, request_sha256=_digest(engine, ctx))
            retry = outcome.result_code == "retryable" and attempt < max_attempts
            error = retry_after_refused(outcome, attempt, self.max_retry_after_s) if retry else None
            if not retry or error:
                return Call(
                    outcome, error, attempt, max_attempts, llm_ms, waited_ms, earlier, earlier_cost
                )
            spent = outcome.tokens
            if spent.total:  # a retried answer's tokens still count (SPEC §10.7)
                earlier = TokenUsage(
                    earlier.prompt + spent.prompt, earlier.completion + spent.completion
                )
            earlier_cost += outcome.cost_usd or 0.0
            began = clock()
            self._wait_before_retry(flow, step, outcome, attempt, max_attempts)
            waited_ms += ms_between(began, clock())

    def _wait_before_retry(
        self, flow: FlowSpec, step: StepSpec, outcome: StepOutcome, attempt: int, max_attempts: int
    ) -> None:
        """Log the retry, then sleep: ``retry_after_ms`` when given, else backoff (§7.3)."""
        delay = backoff_delay(attempt, outcome.retry_after_ms, self.jitter())
        self.recorder.emit(
            Log(
                message=f"retrying {flow.key}/{step.id} in {delay:.3f} s "
                f"(attempt {attempt + 1} of {max_attempts})",
                attempt=attempt,
                max_attempts=max_attempts,
                error=outcome.result.error,
                retry_in_ms=round(delay * 1000),
            ),
            flow_key=flow.key,
            step_id=step.id,
            agent_key=step.primary_agent,
        )
        with self.control.engine_call():  # a second Ctrl-C aborts the wait like the call
            self.sleep(delay)


def _digest(engine: StepEngine, ctx: StepContext) -> str | None:
    """The engine's request digest for ``ctx``; None when it cannot say (its bug, not ours)."""
    try:
        return engine.request_sha256(ctx)
    except Exception:  # an engine bug must still end the step with its receipt
        return None
