"""The navigator's call (SPEC §4.5): one engine call that chooses a move after a step.

It goes through the engine that ran the step, in the run's mode, as a call of its own
(``StepContext.call == "navigator"``, agent ``navigator``): a recorded or replayed call has
its own cassette (``<step>-navigator-<iteration>.yaml``), its transcript is
``<flow>/llm/<step>-navigator-<iteration>.jsonl``, and its tokens and cost count in the run's
totals and its flow's (it is not a step execution). It is made once, never retried: a
failure falls back to the golden path.
"""

from __future__ import annotations

import json
import math
from typing import Any

from swarm_runtime.engines.base import Prompt, StepContext, StepEngine, StepOutcome
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.bounded import cut
from swarm_runtime.orchestrator.checkpoint import RunControl
from swarm_runtime.orchestrator.navigator import Move, NavigatorAnswer
from swarm_runtime.orchestrator.recorder import RunRecorder, TranscriptLine
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.record import replace
from swarm_runtime.timeutil import Clock, format_ts

OUTPUT_CHARS = 4_000
"""How much of the step's reply the navigator reads (its end, where the handoff is)."""

SYSTEM = (
    "You are the navigator of an agent flow. After a step, you choose the flow's next move "
    "from the candidates you are given, and only from them: you never invent a move. End "
    "your reply with a handoff block naming your choice by its id, one sentence of "
    "rationale, and your confidence from 0 to 1:\n\n"
    "```handoff\nchoice: <candidate id>\nrationale: <why>\nconfidence: <0..1>\n```"
)


def _move_text(move: Move) -> str:
    if move.kind == "edge":
        what = f"go to step '{move.to}'" if move.to is not None else "end the flow"
    elif move.kind == "detour":
        what = f"detour into '{move.to}', then come back"
    else:
        what = f"run the utility flow '{move.to}', then come back"
    return f"- {move.id}: {what}" + (f" (its condition held: {move.when})" if move.when else "")


def navigator_prompt(
    flow: FlowSpec,
    step: StepSpec,
    outcome: StepOutcome,
    candidates: tuple[Move, ...],
    golden: str | None,
) -> Prompt:
    """What the navigator is asked after ``step``: its reply, its handoff, the moves."""
    reply = outcome.text[-OUTPUT_CHARS:]
    handoff = json.dumps(outcome.handoff or {}, sort_keys=True, ensure_ascii=False)
    moves = "\n".join(_move_text(move) for move in candidates)
    path = f"step '{golden}'" if golden is not None else "the end of the flow"
    user = (
        f"# Flow: {flow.title} ({flow.key})\n\n"
        f"## The step that just ran: {step.id}\n{step.role}\n\n"
        f"## Its reply (the last {OUTPUT_CHARS} characters at most)\n{reply}\n\n"
        f"## Its handoff\n{handoff}\n\n"
        f"## Candidates\n{moves}\n\n"
        f"The golden path, when no candidate fits better, is {path}."
    )
    return Prompt(system=SYSTEM, user=user)


class NavigatorCall:
    """Asks the navigator through the step's engine and records the call."""

    def __init__(
        self, recorder: RunRecorder, state: RunState, control: RunControl, clock: Clock
    ) -> None:
        self.recorder = recorder
        self.state = state
        self.control = control
        self.clock = clock

    def ask(
        self,
        engine: StepEngine,
        ctx: StepContext,
        flow: FlowSpec,
        step: StepSpec,
        outcome: StepOutcome,
        candidates: tuple[Move, ...],
        golden: str | None,
    ) -> NavigatorAnswer:
        """One call; what it answered, or why it gave no usable answer."""
        prompt = navigator_prompt(flow, step, outcome, candidates, golden)
        asked = replace(
            ctx,
            call="navigator",
            step_agents=("navigator",),
            prompt=prompt,
            handoff_fields={"choice": tuple(c.id for c in candidates)},
            routing_kind="navigator",
            attempt=1,
            tools=(),
            extra={},
        )
        started = format_ts(self.clock())
        with self.control.engine_call():
            try:
                reply = engine.run_step(asked)
            except Exception as exc:  # an engine bug falls back like a failed call
                return NavigatorAnswer(error=f"call_failed:{type(exc).__name__}")
        for totals in (self.state.totals, self.state.flow(flow.key)):
            totals.add_call(reply.tokens, reply.cost_usd)
        self._record(flow, step, ctx.iteration, prompt, reply, started)
        if reply.result.status != "succeeded" or reply.result_code != "ok":
            return NavigatorAnswer(error=f"call_failed:{reply.result_code}")
        return answer_of(reply.handoff)

    def _record(
        self,
        flow: FlowSpec,
        step: StepSpec,
        iteration: int,
        prompt: Prompt,
        reply: StepOutcome,
        started: str,
    ) -> None:
        completed = format_ts(self.clock())
        lines: list[TranscriptLine] = [
            {"content": prompt.system, "role": "system", "timestamp": started},
            {"content": prompt.user, "role": "user", "timestamp": started},
        ]
        lines.extend({"timestamp": completed, **line} for line in reply.transcript)
        path = self.recorder.layout.navigator_transcript(flow.key, step.id, iteration)
        self.recorder.write_transcript(path, lines)


def answer_of(handoff: dict[str, Any] | None) -> NavigatorAnswer:
    """The navigator's handoff as an answer: a choice, and maybe a rationale and confidence."""
    values = handoff or {}
    choice = values.get("choice")
    rationale = values.get("rationale")
    raw = values.get("confidence")
    confidence: float | None = None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raw = None
    if raw is not None and math.isfinite(raw) and 0 <= raw <= 1:
        confidence = float(raw)
    return NavigatorAnswer(
        proposal=_proposal(values.get("proposed_edge")),
        choice=str(choice) if isinstance(choice, str | int) and str(choice) else None,
        rationale=cut(rationale) if isinstance(rationale, str) else None,
        confidence=confidence,
        error=None if isinstance(choice, str | int) and str(choice) else "no_choice",
    )


def _proposal(raw: Any) -> tuple[str, str | None] | None:
    """``proposed_edge``: a step id, or ``{to, rationale}``; anything else is no proposal."""
    if isinstance(raw, dict):
        to_step, why = raw.get("to"), raw.get("rationale")
        if isinstance(to_step, str) and to_step.strip():
            return cut(to_step.strip(), 200), cut(why) if isinstance(why, str) else None
        return None
    if isinstance(raw, str) and raw.strip():
        return cut(raw.strip(), 200), None
    return None
