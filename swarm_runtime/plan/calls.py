"""One handler call: within its time limit, and the model calls it makes through the engines.

The handler runs in a worker thread only when its type has a time limit in
``metadata.timeouts``; when the limit passes, the step fails naming it and the handler is
told to give up (``StepCall.cancelled``: a store write rolls back). Events the handler's
model calls produce are kept and handed to the kernel with the step's answer, so a late
worker never writes into a later step. A model that answers ``retryable`` ends the
handler's attempt (:class:`RetryableAnswer`): the kernel's attempts run the step again,
with the one backoff every step has (docs/contract/steps.md#result-codes).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import Prompt, StepContext, StepEngine, StepOutcome
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


class RetryableAnswer(Exception):
    """The model answered ``retryable``: this attempt of the step ends here."""

    def __init__(self, outcome: StepOutcome) -> None:
        super().__init__(outcome.result.error or "retryable")
        self.outcome = outcome


class ModelCalls:
    """``StepCall.complete`` for one attempt of a step: budget check, engine call, record."""

    def __init__(
        self,
        *,
        engine_for: Callable[[str | None], StepEngine],
        context: Callable[[Prompt], StepContext],
        prompt_budget: int | None,
    ) -> None:
        self.engine_for = engine_for
        self.context = context
        self.prompt_budget = prompt_budget
        self.outcomes: list[tuple[StepEngine, StepOutcome, Prompt]] = []
        """Each call made, in order: the engine, its answer, and what it was asked."""

    def __call__(
        self, prompt: str, *, system: str | None = None, engine: str | None = None
    ) -> LLMReply:
        """One model call; the reply, or a HandlerError saying why not.

        A ``retryable`` answer raises :class:`RetryableAnswer`: the kernel retries the step.
        """
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
        asked = self.context(parts)
        outcome = built.run_step(asked)
        if outcome.request_sha256 is None:
            outcome = replace(outcome, request_sha256=built.request_sha256(asked))
        self.outcomes.append((built, outcome, parts))
        code = outcome.result_code
        if code == "retryable":
            raise RetryableAnswer(outcome)
        if code not in ("ok", "skipped"):
            reason = outcome.result.error or "no reason given"
            raise HandlerError(f"the model call failed ({code}): {reason}")
        return LLMReply(text=outcome.text, engine=built.engine_id, model=outcome.model)
