"""The flow stack (SPEC §4.6): detours and utility flows entered, and returned from.

A run starts in a flow of its plan; a detour or a utility flow taken after a step pushes a
:class:`Frame` (the paused flow, the step that left, where to come back to) and the run
goes on in the injected flow. When the injected flow ends, its frame is popped and the run
goes on at the frame's return address; a ``halt`` (or a golden path that ended the paused
flow) ends the paused flow too. The stack is part of the checkpoint, so a run killed
inside an injected flow resumes inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from swarm_runtime.documents.payload import Payload
from swarm_runtime.documents.route_events import (
    FlowInjected,
    NodeInjected,
    StackOverflowPrevented,
    StackPop,
    StackPush,
)
from swarm_runtime.record import Record

Events = list[Payload]

DEFAULT_MAX_DEPTH = 4
"""The largest ``current_depth`` (flows on the stack, the run's own included)."""
MAX_FRAMES = 15
"""The most frames any stack holds: ``navigator.max_depth`` is at most 16 flows."""


class Frame(Record):
    """A flow paused by an injection, and how the run comes back to it."""

    paused_flow: str
    paused_step: str
    injected_flow: str
    resume_to: str | None
    """The paused flow's step to go on with; None: the paused flow ends."""
    only_step: str | None = None
    """A node injection's one step (``step: FLOW/STEP``); None: the whole flow runs."""

    def as_document(self) -> dict[str, Any]:
        """The frame in a checkpoint's ``stack``."""
        return {
            "paused_flow": self.paused_flow,
            "paused_step": self.paused_step,
            "injected_flow": self.injected_flow,
            "resume_to": self.resume_to,
            "only_step": self.only_step,
        }

    @classmethod
    def parse(cls, doc: Any) -> Frame:
        """A frame from a checkpoint; ValueError naming what is wrong."""
        if not isinstance(doc, dict):
            raise ValueError("stack frames must be objects")
        texts: dict[str, str | None] = {}
        for name in ("paused_flow", "paused_step", "injected_flow", "resume_to", "only_step"):
            value = doc[name]
            optional = name in ("resume_to", "only_step")
            if not (isinstance(value, str) or (optional and value is None)):
                raise ValueError(f"stack.{name} is {value!r}; it must be text")
            texts[name] = value
        paused_flow, paused_step, injected = (
            str(texts["paused_flow"]),
            str(texts["paused_step"]),
            str(texts["injected_flow"]),
        )
        return cls(paused_flow, paused_step, injected, texts["resume_to"], texts["only_step"])


class Next(Record):
    """Where the run goes after a step: a flow and its step (None: that flow has ended)."""

    flow: str
    step: str | None


def on_stack(stack: Sequence[Frame], running: str) -> list[str]:
    """The flows on the stack, bottom first: the one the run started in, then each injected."""
    if not stack:
        return [running]
    return [stack[0].paused_flow, *(frame.injected_flow for frame in stack)]


def push_refusal(flows: Sequence[str], injected: str, max_depth: int) -> str | None:
    """Why ``injected`` may not be pushed onto a stack of ``flows`` (bottom first), or None.

    The rule of every push (SPEC §4.6), the kernel's and a resumed checkpoint's alike: a
    flow is on the stack at most once, and the stack holds at most ``max_depth`` flows.
    """
    if injected in flows:
        return f"flow {injected!r} is already on the stack ({' > '.join(flows)})"
    if len(flows) + 1 > max_depth:
        return f"the stack would hold {len(flows) + 1} flows, past max_depth {max_depth}"
    return None


def refused(stack: Sequence[Frame], at: tuple[str, str], injected: str, max_depth: int) -> Events:
    """``stack_overflow_prevented`` when entering ``injected`` from ``at`` may not be done."""
    if push_refusal(on_stack(stack, at[0]), injected, max_depth) is None:
        return []
    return [
        StackOverflowPrevented(
            paused_flow=at[0], paused_step=at[1], injected_flow=injected, max_depth=max_depth
        )
    ]


def enter(
    stack: list[Frame],
    at: tuple[str, str],
    target: tuple[str, str],
    *,
    only_step: bool,
    resume_to: str | None,
    trigger: str,
) -> tuple[Events, Next]:
    """Push a frame: leave ``at`` (flow, step) for ``target`` (flow, its first step)."""
    flow, step = at
    stack.append(Frame(flow, step, target[0], resume_to, target[1] if only_step else None))
    back = f"{flow}/{resume_to}" if resume_to is not None else None
    injected: Payload = (
        NodeInjected(step=f"{target[0]}/{target[1]}", into_flow=flow, after_step=step)
        if only_step
        else FlowInjected(flow=target[0], by_step=step, trigger=trigger, return_address=back)
    )
    push = StackPush(
        paused_flow=flow, paused_step=step, injected_flow=target[0], current_depth=len(stack) + 1
    )
    return [push, injected], Next(*target)


def leave(stack: list[Frame]) -> tuple[Events, Next]:
    """Pop frames until a paused flow goes on (or the run's own flow ends)."""
    events: Events = []
    while True:
        frame = stack.pop()
        events.append(
            StackPop(
                resumed_flow=frame.paused_flow,
                resumed_step=frame.resume_to,
                injected_flow=frame.injected_flow,
                current_depth=len(stack) + 1,
            )
        )
        if frame.resume_to is not None or not stack:
            return events, Next(frame.paused_flow, frame.resume_to)
