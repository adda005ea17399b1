"""An engine wrapped by a fault plan (docs/faults.md): each attempt of a step takes its entry.

In stub mode the fault is answered here, at the engine boundary, with the outcome the
live engine makes of it: ``retryable`` for the HTTP and connection kinds (a 429's
``retry_after_ms`` passed on), ``fatal`` for a malformed handoff block or a CLI's
non-zero exit, a succeeded step with no text and no handoff for an empty reply. In sdk,
record and replay modes the fault is armed for the SDK's next HTTP request, which the
transport of :mod:`swarm_runtime.engines.fault_http` answers, so the SDK's own error path
runs. In cli mode ``cli_exit`` replaces the CLI process by one that exits with the code,
and a CLI that records or replays gets the HTTP kinds from its loopback server
(:mod:`swarm_runtime.engines.fault_loopback`), which answers the CLI's first request.
Each injected fault adds a ``log`` event to the attempt, naming the fault and the plan.
"""

from __future__ import annotations

from typing import Any

from swarm_runtime.documents.run_events import Log
from swarm_runtime.engines.base import (
    RunEvent,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    TokenUsage,
)
from swarm_runtime.engines.faults import TOOL_KINDS, Fault, FaultInjector
from swarm_runtime.record import replace

STUB_ERRORS = {
    "http_429": "{api} answered HTTP 429: rate_limit_error (injected by the fault plan)",
    "http_500": "{api} answered HTTP 500: api_error (injected by the fault plan)",
    "http_529": "{api} answered HTTP 529: overloaded_error (injected by the fault plan)",
    "timeout": "the {api} call timed out (injected by the fault plan)",
    "connection_reset": "cannot reach the {api}: connection reset by peer "
    "(injected by the fault plan)",
    "stream_cut": "the {api} reply broke off mid-event (injected by the fault plan)",
    "overloaded_mid_stream": "{api} stream broke off with an error (529): "
    "overloaded_error (injected by the fault plan)",
}
"""What the stub's answer to each retryable kind says, as the engine's live mode words it
(``{api}``: the API the engine calls, ``Anthropic API`` unless it says)."""

MALFORMED_HANDOFF_TEXT = (
    "(a reply from the fault plan: malformed_handoff)\n\n```handoff\n[not, a, mapping]\n```"
)
"""A reply whose handoff block is not a mapping: what every engine refuses."""


class FaultyEngine(StepEngine):
    """``inner`` with a fault plan: the step's next entry is taken at every attempt."""

    def __init__(self, inner: StepEngine, injector: FaultInjector) -> None:
        self.inner = inner
        self.injector = injector
        self.engine_id = inner.engine_id
        self.engine_short = inner.engine_short
        self.mode = inner.mode
        self.fault_kinds: frozenset[str] | None = getattr(inner, "fault_kinds", None)
        """The kinds the inner engine serves (None: those of its mode)."""

    def run_step(self, ctx: StepContext) -> StepOutcome:
        """The inner engine's call, or the fault the plan gives this attempt."""
        if ctx.call != "step":  # a navigator call is not an attempt of the step
            return self.inner.run_step(ctx)
        fault = self.injector.next_fault(ctx.flow_key, ctx.step_id)
        if fault is None:
            return self.inner.run_step(ctx)
        if fault.kind in TOOL_KINDS:
            self.injector.tool_armed = fault
            try:
                outcome = self.inner.run_step(ctx)
            finally:
                served = self.injector.tool_armed is None
                self.injector.tool_armed = None
            return _with_log(outcome, ctx, fault, self.injector.plan.source, served=served)
        if self.inner.mode == "stub":
            api = str(getattr(self.inner, "api_name", "") or "Anthropic API")
            outcome = stub_fault_outcome(ctx, fault, api, self.inner.engine_short)
            served = True
        elif fault.kind == "cli_exit":
            exited = cli_exit_outcome(self.inner, ctx, fault)
            served = exited is not None
            outcome = exited if exited is not None else self.inner.run_step(ctx)
        else:
            self.injector.armed = fault
            try:
                outcome = self.inner.run_step(ctx)
            finally:
                served = self.injector.take_armed() is None
        return _with_log(outcome, ctx, fault, self.injector.plan.source, served=served)

    def close(self) -> None:
        """Close the inner engine."""
        self.inner.close()


def _with_log(
    outcome: StepOutcome, ctx: StepContext, fault: Fault, source: str, *, served: bool
) -> StepOutcome:
    """The outcome with a ``log`` event first, saying which fault this attempt got."""
    where = f"{ctx.flow_key}/{ctx.step_id}"
    message = (
        f"fault plan {source}: {fault.describe()} injected into attempt {ctx.attempt} of "
        f"{where} (execution {ctx.iteration + 1})"
        if served
        else f"fault plan {source}: {fault.describe()} for attempt {ctx.attempt} of {where} "
        + (
            "was not served: the step made no such tool call in this attempt"
            if fault.kind in TOOL_KINDS
            else "was not served: the engine made no HTTP request in this attempt"
        )
    )
    payload = Log(
        message=message,
        fault=fault.kind,
        attempt=ctx.attempt,
        served=served,
        result_code=outcome.result_code,
    )
    return replace(outcome, events=(RunEvent(payload), *outcome.events))


CLI_EXIT_SCRIPT = (
    "import sys; sys.stderr.write('exit {code} injected by the fault plan\\n'); sys.exit({code})"
)


def cli_exit_outcome(inner: StepEngine, ctx: StepContext, fault: Fault) -> StepOutcome | None:
    """A CLI engine's outcome for a process that exits with ``fault.code`` and no output.

    The process stands in for the CLI at the engine's process boundary, so the engine's
    own reading of an exit runs. None when ``inner`` is not a CLI engine.
    """
    import os
    import sys

    from swarm_runtime.engines.cli import CliEngine
    from swarm_runtime.engines.process import run_process

    if not isinstance(inner, CliEngine):
        return None
    report = inner.reader()
    timeout = ctx.timeout_s or inner.timeout_s
    end = run_process(
        [sys.executable, "-c", CLI_EXIT_SCRIPT.format(code=fault.code)],
        stdin="",
        env={"PATH": os.environ.get("PATH", "")},
        cwd=ctx.repo_root,
        timeout_s=timeout,
        grace_s=inner.grace_s,
        on_line=report.feed,
    )
    return inner.outcome(ctx, report, end, timeout)


def stub_fault_outcome(
    ctx: StepContext, fault: Fault, api: str = "Anthropic API", engine_short: str = "claude"
) -> StepOutcome:
    """What the stub answers for ``fault``: what a live engine makes of the same fault."""
    from swarm_runtime.engines.faults import RETRYABLE_KINDS
    from swarm_runtime.engines.stub import estimate_tokens, stub_failure, stub_model

    prompt_chars = len(ctx.prompt.system) + len(ctx.prompt.user) if ctx.prompt else 0
    common: dict[str, Any] = {
        "model": stub_model(engine_short),
        "provider": "none",
        "mode": "stub",
        "cost_usd": 0.0,
    }
    if fault.kind in RETRYABLE_KINDS:
        return stub_failure(
            ctx,
            "retryable",
            STUB_ERRORS[fault.kind].format(api=api),
            retry_after_ms=fault.retry_after_ms,
            model=common["model"],
        )
    if fault.kind == "cli_exit":
        error = (
            f"the CLI exited with status {fault.code} without a result line: exit "
            f"{fault.code} injected by the fault plan"
        )
        return stub_failure(ctx, "fatal", error, model=common["model"])
    text = MALFORMED_HANDOFF_TEXT if fault.kind == "malformed_handoff" else ""
    tokens = TokenUsage(estimate_tokens("x" * prompt_chars), estimate_tokens(text))
    transcript = ({"role": "assistant", "content": text},)
    if fault.kind == "malformed_handoff":
        from swarm_runtime.engines.handoff import parse_handoff
        from swarm_runtime.errors import HandoffError

        try:
            parse_handoff(text)
            problem = "it is not a mapping"
        except HandoffError as exc:
            problem = str(exc)
        return StepOutcome(
            result=StepResult(
                step_id=ctx.step_id,
                status="failed",
                error=f"the reply's handoff block is unusable: {problem}",
            ),
            result_code="fatal",
            text=text,
            tokens=tokens,
            transcript=transcript,
            **common,
        )
    return StepOutcome(  # empty_reply: a call that answered nothing
        result=StepResult(step_id=ctx.step_id, status="succeeded", output=""),
        text="",
        handoff=None,
        tokens=tokens,
        transcript=transcript,
        **common,
    )
