"""One handler call: within its time limit, and the model calls it makes through the engines.

The handler runs in a worker thread only when its type has a time limit in
``metadata.timeouts``; when the limit passes, the step fails naming it and the handler is
told to give up (``StepCall.cancelled``: a store write rolls back). Events the handler's
model calls produce are kept and written by the cycle once the handler is back, so a
late worker never writes into a later step.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Any

from swarm_runtime.config import MAX_RETRY_AFTER_S
from swarm_runtime.engines.base import Prompt, StepContext, StepEngine, StepOutcome
from swarm_runtime.orchestrator.verdict import backoff_delay, retry_after_refused
from swarm_runtime.plan.handlers import HandlerError, LLMReply
from swarm_runtime.record import replace

if TYPE_CHECKING:
    from swarm_runtime.plan.handlers import Handler, StepCall


class HandlerTimeout(Exception):
    """The handler did not answer within its limit."""


def call_handler(
    handler: Handler, call: StepCall, limit_ms: int | None, limit_name: str | None
) -> Mapping[str, Any]:
    """``handler(call)``; within ``limit_ms`` when one is set.

    The worker is a daemon thread rather than an executor's: a handler that never comes
    back must not keep the process from exiting once its step has failed.
    """
    if limit_ms is None:
        return handler(call)
    future: Future[Mapping[str, Any]] = Future()

    def work() -> None:
        try:
            future.set_result(handler(call))
        except BaseException as exc:  # handed to the caller's thread by future.result()
            future.set_exception(exc)

    worker = threading.Thread(target=work, name=f"plan-step-{call.step_id}", daemon=True)
    worker.start()
    if not wait((future,), timeout=limit_ms / 1000.0).done:
        call.cancelled.set()
        raise HandlerTimeout(
            f"{call.step_type} took longer than metadata.timeouts.{limit_name} = {limit_ms} ms"
        )
    return future.result()


class ModelCalls:
    """``StepCall.complete`` for one step: budget check, engine call, retries, record."""

    def __init__(
        self,
        *,
        engine_for: Callable[[str | None], StepEngine],
        context: Callable[[Prompt, int], StepContext],
        prompt_budget: int | None,
        max_attempts: int,
        sleep: Callable[[float], None],
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
    ) -> None:
        self.engine_for = engine_for
        self.max_retry_after_s = max_retry_after_s
        self.context = context
        self.prompt_budget = prompt_budget
        self.max_attempts = max_attempts
        self.sleep = sleep
        self.outcomes: list[tuple[StepEngine, StepOutcome, Prompt]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        """Events of the calls (tools, retries), for the cycle to write after the handler."""
        self.attempts = 0

    def __call__(
        self, prompt: str, *, system: str | None = None, engine: str | None = None
    ) -> LLMReply:
        """One model call (and its retries); the reply, or a HandlerError saying why not."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise HandlerError("the prompt is empty: there is nothing to ask the model")
        parts = Prompt(system=system or "", user=prompt)
        tokens = math.ceil((len(parts.system) + len(parts.user)) / 4)
        if self.prompt_budget is not None and tokens > self.prompt_budget:
            raise HandlerError(
                f"the prompt is about {tokens} tokens (ceil(chars / 4)), over "
                f"metadata.budgets.promptTokens = {self.prompt_budget}; the model was not called"
            )
        built = self.engine_for(engine)
        for attempt in range(1, self.max_attempts + 1):
            self.attempts = attempt
            asked = self.context(parts, attempt)
            outcome = built.run_step(asked)
            if outcome.request_sha256 is None:
                outcome = replace(outcome, request_sha256=built.request_sha256(asked))
            self.events.extend((event.kind, dict(event.payload)) for event in outcome.events)
            code = outcome.result_code
            retry = code == "retryable" and attempt < self.max_attempts
            cap = self.max_retry_after_s
            refused = retry_after_refused(outcome, attempt, cap) if retry else None
            if retry and refused is None:
                wait = backoff_delay(attempt, outcome.retry_after_ms, 1.0)
                self.events.append(
                    (
                        "log",
                        {
                            "message": f"retryable answer, attempt {attempt} of "
                            f"{self.max_attempts}; retrying in {wait:.1f} s",
                            "error": outcome.result.error,
                        },
                    )
                )
                self.sleep(wait)
                continue
            self.outcomes.append((built, outcome, parts))
            if code not in ("ok", "skipped"):
                reason = refused or outcome.result.error or "no reason given"
                raise HandlerError(f"the model call failed ({code}): {reason}")
            return LLMReply(text=outcome.text, engine=built.engine_id, model=outcome.model)
        raise AssertionError("unreachable: the last attempt returns or raises")
