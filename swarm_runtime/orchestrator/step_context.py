"""What an engine is handed for one step execution: its :class:`StepContext`.

The parts that stay the same for a whole run (a flow's run base, a step's handoff fields)
are made once per run and kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swarm_runtime.engines.base import Prompt, StepContext
from swarm_runtime.flow.kinds import handoff_fields
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.history import RenderedHistory
from swarm_runtime.orchestrator.prompt import PromptParts
from swarm_runtime.storage.layout import RunLayout


class ContextMaker:
    """Makes the StepContext of every step execution of one run."""

    def __init__(
        self, *, prompts: PromptParts, layout: RunLayout, repo_root: Path, spec: dict[str, Any]
    ) -> None:
        self.prompts = prompts
        self.layout = layout
        self.repo_root = repo_root
        self.spec = spec
        """The run's ``spec.json`` document: one dict, handed to every step."""
        self._run_bases: dict[str, Path] = {}
        self._handoff_fields: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}

    def make(
        self, flow: FlowSpec, step: StepSpec, iteration: int, rendered: RenderedHistory, user: str
    ) -> StepContext:
        """The context of an execution of ``step``, with its system and ``user`` prompt."""
        system = self.prompts.system(flow, step)
        run_base = self._run_bases.get(flow.key)
        if run_base is None:
            run_base = self._run_bases[flow.key] = self.layout.flow_base(flow.key)
        return StepContext(
            repo_root=self.repo_root,
            run_id=self.layout.run_id,
            flow_key=flow.key,
            step_id=step.id,
            step_index=flow.index_of(step.id) + 1,
            total_steps=len(flow.steps),
            spec=self.spec,
            flow_title=flow.title,
            step_role=step.role,
            step_agents=step.agents,
            history=rendered.items,
            run_base=run_base,
            iteration=iteration,
            handoff_fields=dict(self._handoff_fields_of(flow, step)),
            routing_kind=step.routing.kind,
            prompt=Prompt(system, user),
            tools=step.tools or (),
            timeout_s=step.timeout_s,
        )

    def _handoff_fields_of(self, flow: FlowSpec, step: StepSpec) -> dict[str, tuple[str, ...]]:
        """A step's handoff fields (fixed by its flow): made once per run."""
        key = (flow.key, step.id)
        fields = self._handoff_fields.get(key)
        if fields is None:
            fields = self._handoff_fields[key] = handoff_fields(flow, step)
        return fields
