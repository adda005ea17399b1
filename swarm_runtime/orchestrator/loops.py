"""Microloop counters: how often each loop of a run has gone round (SPEC §4.3–§4.4).

One bookkeeping, used by the orchestrator while it routes and by ``assert_routing`` when
it recomputes the decisions of a finished run from its event log, so the two agree.
"""

from __future__ import annotations

from swarm_runtime.flow.spec import StepSpec


def loop_key(step: StepSpec) -> str:
    """The ``loop_state`` key of a microloop step: ``<step>:<loop_target>``."""
    return f"{step.id}:{step.routing.loop_target}"


class LoopCounters:
    """Executions of each open microloop of a run, keyed by flow and loop."""

    __slots__ = ("_counts",)

    def __init__(self, counts: dict[tuple[str, str], int] | None = None) -> None:
        self._counts: dict[tuple[str, str], int] = dict(counts or {})

    def executions(self, flow_key: str, step: StepSpec) -> int:
        """The number of the execution about to be routed in its loop (1 for the first)."""
        return self._counts.get((flow_key, loop_key(step)), 0) + 1

    def after(
        self, flow_key: str, step: StepSpec, decision: str, *, skipped: bool
    ) -> dict[str, int]:
        """Count a routed execution; return the ``loop_state`` of its ``route_decision``.

        A loop that goes round keeps its count; one that exits starts afresh next time.
        """
        if step.routing.kind != "microloop" or skipped:
            return {}
        key = loop_key(step)
        executions = self._counts.get((flow_key, key), 0) + 1
        if decision == "loop":
            self._counts[(flow_key, key)] = executions
        else:
            self._counts.pop((flow_key, key), None)
        return {key: executions}

    def of_flow(self, flow_key: str) -> dict[str, int]:
        """A flow's open loops as ``{"<step>:<target>": executions}`` (what conditions see)."""
        return {key: count for (flow, key), count in self._counts.items() if flow == flow_key}

    def as_dict(self) -> dict[str, int]:
        """The open loops as ``{"<flow>/<step>:<target>": executions}`` (for checkpoints)."""
        return {f"{flow}/{key}": count for (flow, key), count in sorted(self._counts.items())}
