"""Judges (docs/judges.md#judges): a model grades a step's reply against a rubric, after the step.

A judge's call goes through an engine of the run's mode like any call: the stub answers
what a scenario's ``judges:`` scripts (else a score of 1); ``record`` and ``replay`` have its
own cassette (``<flow>/<step>-judge-<name>-<iteration>.yaml``, the call's agent being
``judge-<name>``), strict on a miss; its transcript is
``<flow>/llm/<step>-judge-<name>-<iteration>.jsonl``, and its tokens and cost count in the
run's totals and its flow's (it is not a step execution). It is made once, never retried.

The judge answers with a handoff block holding ``score`` (0 to 1) and ``reason``. A reply
with no score, or a score outside [0, 1], or a failed call fails the judgement with that
reason: it never passes. A judgement does not fail the step or the run; it is their
verdict on the output, which a test then holds (see ``pytest_swarm``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from swarm_runtime.documents.receipt import ReceiptJudgement
from swarm_runtime.documents.run_events import Judgement
from swarm_runtime.engines.base import Prompt, StepContext, StepEngine, StepOutcome
from swarm_runtime.flow.spec import FlowSpec, JudgeSpec, StepSpec
from swarm_runtime.orchestrator.checkpoint import RunControl
from swarm_runtime.orchestrator.recorder import RunRecorder, call_lines
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.record import replace
from swarm_runtime.timeutil import Clock, format_ts

REPLY_CHARS = 20_000
"""How much of the step's reply the judge is shown: its last characters."""
REASON_CHARS = 2_000
"""How much of a judge's reason is kept."""

SYSTEM = (
    "You are a judge. You grade the reply of one step of an agent flow against a rubric, "
    "and only against it. End your reply with a handoff block holding your score, a number "
    "from 0 (the reply fails the rubric entirely) to 1 (it meets it fully), and one sentence "
    "saying why:\n\n```handoff\nscore: <0..1>\nreason: <why>\n```"
)


def judge_agent(judge: JudgeSpec) -> str:
    """The agent a judge's call is made as: it names the call's cassette and transcript."""
    return f"judge-{judge.name}"


def judge_heading(flow: FlowSpec, step: StepSpec, rubric: str) -> str:
    """The fixed start of a judge's user prompt: the rubric, the step, its role."""
    return f"## Rubric\n{rubric}\n\n## The step: {flow.key}/{step.id}\n{step.role}\n\n## Its reply"


def judge_prompt(
    flow: FlowSpec, step: StepSpec, judge: JudgeSpec, reply: str, handoff: Any
) -> Prompt:
    """What a judge is asked: the rubric, then the step and what it said."""
    shown = reply[-REPLY_CHARS:]
    cut = f" (its last {REPLY_CHARS} characters)" if len(reply) > REPLY_CHARS else ""
    handed = json.dumps(handoff or {}, sort_keys=True, ensure_ascii=False)
    heading = judge_heading(flow, step, judge.rubric)
    user = f"{heading}{cut}\n{shown}\n\n## Its handoff\n{handed}"
    return Prompt(system=SYSTEM, user=user)


def score_of(handoff: dict[str, Any] | None) -> tuple[float | None, str]:
    """The score a judge's handoff gives and its reason; None and what is wrong when none."""
    values = handoff or {}
    raw = values.get("score")
    reason = values.get("reason")
    said = str(reason).strip()[:REASON_CHARS] if reason is not None else ""
    if handoff is None:
        return None, "the judge's reply has no handoff block with a score"
    if raw is None:
        return None, "the judge's handoff has no score" + (f" (its reason: {said})" if said else "")
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            return None, f"the judge's score {values.get('score')!r} is not a number"
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        return None, f"the judge's score {values.get('score')!r} is not a number"
    if not 0 <= raw <= 1:
        return None, f"the judge's score {raw!r} is outside [0, 1]"
    return float(raw), said or "(the judge gave no reason)"


def call_failure(answer: StepOutcome) -> str | None:
    """Why a judge's call gave no reply to grade (an API error, a timeout), or None."""
    if answer.result.status == "succeeded" and answer.result_code == "ok":
        return None
    failed = answer.result.error or answer.result_code
    return f"the judge's call failed ({answer.result_code}): {failed}"


class JudgeCall:
    """Grades a step's reply with each of its judges and records the calls."""

    def __init__(
        self,
        recorder: RunRecorder,
        state: RunState,
        control: RunControl,
        clock: Clock,
        engine_of: Callable[[str], StepEngine] | None = None,
    ) -> None:
        self.recorder = recorder
        self.state = state
        self.control = control
        self.clock = clock
        self.engine_of = engine_of
        """The engine a judge names (``engine:``), of the run's mode."""

    def grade(
        self,
        engine: StepEngine,
        ctx: StepContext,
        flow: FlowSpec,
        step: StepSpec,
        outcome: StepOutcome,
    ) -> tuple[list[Judgement], list[ReceiptJudgement]]:
        """Every judge of ``step`` on ``outcome``: their events and their receipt entries."""
        events: list[Judgement] = []
        entries: list[ReceiptJudgement] = []
        reply = outcome.text or outcome.result.output
        for judge in step.judges:
            judged_by = engine
            if judge.engine is not None and self.engine_of is not None:
                judged_by = self.engine_of(judge.engine)
            event, entry = self._one(judged_by, ctx, flow, step, judge, reply, outcome.handoff)
            events.append(event)
            entries.append(entry)
        return events, entries

    def _one(
        self,
        engine: StepEngine,
        ctx: StepContext,
        flow: FlowSpec,
        step: StepSpec,
        judge: JudgeSpec,
        reply: str,
        handoff: Any,
    ) -> tuple[Judgement, ReceiptJudgement]:
        prompt = judge_prompt(flow, step, judge, reply, handoff)
        asked = replace(
            ctx,
            call="judge",
            step_agents=(judge_agent(judge),),
            prompt=prompt,
            handoff_fields={"score": (), "reason": ()},
            routing_kind="judge",
            attempt=1,
            tools=(),
            extra={"judge": judge.name},
        )
        score, reason, answer, failed = self._ask(engine, asked)
        model, tokens, cost = "unknown", 0, None
        if answer is not None:
            model, tokens, cost = answer.model, answer.tokens.total, answer.cost_usd
        verdict: dict[str, Any] = {
            "name": judge.name,
            "score": score,
            "threshold": judge.threshold,
            "passed": score is not None and score >= judge.threshold,
            "reason": reason,
            "engine": engine.engine_id,
            "model": model,
        }
        if failed:
            verdict["error"] = reason
        entry = ReceiptJudgement(**verdict, tokens=tokens, cost_usd=cost)
        return Judgement(**verdict, step=step.id), entry

    def _ask(
        self, engine: StepEngine, asked: StepContext
    ) -> tuple[float | None, str, StepOutcome | None, bool]:
        """The judge's call, counted and recorded: score, reason, answer, whether it failed.

        A call that failed (an API error, a timeout) gave no verdict.
        """
        started = format_ts(self.clock())
        with self.control.engine_call():
            try:
                answer = engine.run_step(asked)
            except Exception as exc:  # an engine bug fails the judgement, not the run
                return None, f"the judge's call failed: {type(exc).__name__}: {exc}", None, True
        for totals in (self.state.totals, self.state.flow(asked.flow_key)):
            totals.add_call(answer.tokens, answer.cost_usd)
        self._record(asked, answer, started)
        failure = call_failure(answer)
        if failure is not None:
            return None, failure, answer, True
        score, reason = score_of(answer.handoff)
        return score, reason, answer, False

    def _record(self, asked: StepContext, answer: StepOutcome, started: str) -> None:
        prompt = asked.prompt or Prompt(system="", user="")
        lines = call_lines(prompt, answer.transcript, started, format_ts(self.clock()))
        judge = str(asked.extra.get("judge"))
        layout = self.recorder.layout
        path = layout.judge_transcript(asked.flow_key, asked.step_id, judge, asked.iteration)
        self.recorder.write_transcript(path, lines)
