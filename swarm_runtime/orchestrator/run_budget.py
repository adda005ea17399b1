"""A run's budget: how many step executions it may make, how big its run dir may grow.

Past either, the run ends, failed, at its next step boundary, with a message that says
which limit it met and what to do: raise the limit, or fix the loop that spends it.
"""

from __future__ import annotations

from collections.abc import Sequence

from swarm_runtime.orchestrator.deps import RunLimits
from swarm_runtime.orchestrator.plan import DEFAULT_MAX_RUN_MB, FlowSlice, default_max_steps
from swarm_runtime.record import Record


class RunBudget(Record):
    """The step executions and the run-dir size one run may spend."""

    steps: int
    """Step executions (``--max-steps``, else :func:`default_max_steps` of the plan)."""
    size: int
    """Characters written to the run dir (``--max-run-mb``, else ``DEFAULT_MAX_RUN_MB``)."""

    @classmethod
    def of(cls, limits: RunLimits, plan: Sequence[FlowSlice]) -> RunBudget:
        """The budget of a run with these ``limits`` and this ``plan``."""
        return cls(
            limits.max_steps or default_max_steps(plan),
            (limits.max_run_mb or DEFAULT_MAX_RUN_MB) << 20,
        )

    def spent(self, where: str, *, executed: int, size: int) -> str | None:
        """Why the run ends before step ``where`` (``flow/step``) runs, or None.

        ``executed``: the step executions made so far; ``size``: the run dir's size.
        """
        if executed >= self.steps:
            return (
                f"{where}: the run reached its limit of {self.steps} "
                "step executions; a route loops without end (a next or branch back to an "
                "earlier step?) - fix the flow, or raise the limit with --max-steps"
            )
        if size > self.size:
            return (
                f"{where}: the run dir has grown to "
                f"{size >> 20} MiB, past its limit of "
                f"{self.size >> 20} MiB; the run ends here - raise the limit with "
                "--max-run-mb (or max_run_mb in runtime.yaml), or look for a loop whose "
                "prompts keep growing"
            )
        return None
