"""Building a step's prompt (SPEC §6.1).

System part: agent persona, flow title and step header, role, the four teaching-note
sections, and the handoff fields the step must declare. User part: the run's request and
the history. A step's teaching notes never appear in another step's prompt: the prompt of
a step is built from that step alone, and history carries outputs, never notes.
"""

from __future__ import annotations

import json
from typing import Any

from swarm_runtime.flow.kinds import HandoffField, step_handoff
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.history import RenderedHistory

SECTIONS = (
    ("Inputs", "inputs"),
    ("Outputs", "outputs"),
    ("Emphasizes", "emphasizes"),
    ("Constraints", "constraints"),
)


def handoff_instructions(fields: tuple[HandoffField, ...]) -> str:
    """Tell the model which handoff fields to declare, the values, and what each one does."""
    if not fields:
        return (
            "## Handoff\nYou may end your reply with a fenced block headed handoff holding "
            "YAML fields for the next step; routing of this step does not read it."
        )
    lines = [
        "## Handoff",
        "Routing reads your decision from a fenced block at the very end of your reply,",
        "opened with ```handoff and closed with ```, holding these YAML fields:",
    ]
    lines.extend(f"- {item.name}: {item.guide}" for item in fields)
    example = "\n".join(f"{item.name}: {item.values[0]}" for item in fields)
    lines.append(f"Example:\n```handoff\n{example}\n```")
    return "\n".join(lines)


def system_prompt(flow: FlowSpec, step: StepSpec, *, persona: str | None) -> str:
    """The system part: persona, step header, role, teaching notes, handoff fields."""
    index = flow.index_of(step.id) + 1
    system: list[str] = []
    if persona:
        system.append(persona.strip())
    system.append(f"# {flow.title}")
    system.append(
        f"## Step {index} of {len(flow.steps)}: {step.id}\n"
        f"Flow: {flow.key}\nAgent: {', '.join(step.agents)}\nRole: {step.role}"
    )
    for heading, attr in SECTIONS:
        notes: tuple[str, ...] = getattr(step.teaching_notes, attr)
        system.append(f"## {heading}\n" + "\n".join(f"- {note}" for note in notes))
    system.append(handoff_instructions(step_handoff(flow, step)))
    return "\n\n".join(system)


def request_text(params: dict[str, Any]) -> str:
    """The run's request as it appears in every user prompt."""
    body = json.dumps(params, indent=2, sort_keys=True, ensure_ascii=False) if params else "{}"
    return f"## Request\n{body}"


def user_prompt(request: str, history_text: str) -> str:
    """The user part: the request (from :func:`request_text`) and the history."""
    return f"{request}\n\n## History (newest first)\n{history_text or '(no earlier steps)'}"


MAX_CACHED_SYSTEM_PROMPTS = 512
"""System prompts kept per flow registry (the oldest go first): a loop finds its steps'
prompts, and a flow of thousands of distinct steps does not keep all of them."""


class PromptParts:
    """The prompt parts of one run: cached system prompts and the request."""

    def __init__(
        self,
        flows: FlowRegistry,
        params: dict[str, Any],
        cache: dict[tuple[str, str], str],
    ) -> None:
        self._flows = flows
        self._cache = cache
        self.request = request_text(params)

    def system(self, flow: FlowSpec, step: StepSpec) -> str:
        """A step's system prompt (fixed within a flow)."""
        key = (flow.key, step.id)
        cached = self._cache.get(key)
        if cached is None:
            text = system_prompt(flow, step, persona=self._flows.persona(step.primary_agent))
            if len(self._cache) >= MAX_CACHED_SYSTEM_PROMPTS:
                del self._cache[next(iter(self._cache))]
            cached = self._cache[key] = text
        return cached

    def user(self, rendered: RenderedHistory, external: str | None = None, facts: str = "") -> str:
        """The user prompt for ``rendered`` history (and the run's current ``facts``)."""
        text = user_prompt(self.request, rendered.text)
        if facts:  # only once a reply declared one: earlier prompts stay as they were
            text = f"{text}\n\n## Facts\n{facts}"
        if external is not None:  # a blocked step re-invoked with what it waited for
            text = f"{text}\n\n## External input\n{external}"
        return text
