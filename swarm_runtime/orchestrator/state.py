"""The state of a run in progress: everything a checkpoint must save to resume it.

Its ``meta.json`` and its ``run_completed`` are made from it here, for flow runs and plan
cycles alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from swarm_runtime.documents.receipt import Tokens
from swarm_runtime.documents.run import FlowTotals, RunStatus, RunSummary
from swarm_runtime.documents.run_events import Ended, RunCompleted
from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.orchestrator.facts import Facts
from swarm_runtime.orchestrator.history import History, HistoryBudget
from swarm_runtime.orchestrator.loops import LoopCounters
from swarm_runtime.orchestrator.stack import Frame


class Totals:
    """Counters of a run, or of one flow in it."""

    __slots__ = (
        "completion_tokens",
        "cost_usd",
        "duration_ms",
        "executed",
        "loops",
        "prompt_tokens",
        "steps_completed",
        "steps_without_cost",
    )

    def __init__(self) -> None:
        self.steps_completed = self.executed = self.loops = 0
        self.prompt_tokens = self.completion_tokens = self.duration_ms = 0
        self.cost_usd = 0.0
        self.steps_without_cost = 0
        """Calls whose cost is unknown (a model missing from the price table)."""

    def add_call(self, tokens: TokenUsage, cost_usd: float | None) -> None:
        """Count the tokens and cost of one step execution."""
        self.prompt_tokens += tokens.prompt
        self.completion_tokens += tokens.completion
        if cost_usd is None:
            self.steps_without_cost += 1
        else:
            self.cost_usd += cost_usd

    @property
    def cost(self) -> float | None:
        """The total cost; None when any call's cost is unknown (never a guess)."""
        return None if self.steps_without_cost else round(self.cost_usd, 6)

    def tokens(self) -> Tokens:
        """The ``tokens`` object of ``meta.json``."""
        prompt, completion = self.prompt_tokens, self.completion_tokens
        return Tokens(prompt=prompt, completion=completion, total=prompt + completion)

    def as_flow_document(self) -> FlowTotals:
        """One flow's entry in ``meta.json``'s ``flow_totals``."""
        return FlowTotals(
            steps_executed=self.executed,
            loop_iterations=self.loops,
            tokens=self.prompt_tokens + self.completion_tokens,
            cost_usd=self.cost,
            steps_without_cost=self.steps_without_cost,
            duration_ms=self.duration_ms,
        )


class RunState:
    """Where a run stands: counters, history, facts, loops and the next event number."""

    __slots__ = (
        "error",
        "executions",
        "facts",
        "flow_totals",
        "history",
        "journals",
        "loops",
        "seq",
        "stack",
        "status",
        "totals",
    )

    def __init__(self, budget: HistoryBudget) -> None:
        self.status: RunStatus = "pending"
        self.error: str | None = None
        self.seq = 0
        """The last event number written; the next event gets ``seq + 1``."""
        self.executions: dict[tuple[str, str], int] = {}
        """How often each (flow, step) has started in this run."""
        self.loops = LoopCounters()
        self.totals = Totals()
        self.flow_totals: dict[str, Totals] = {}
        self.history = History(budget)
        self.facts = Facts()
        self.journals: dict[str, int] = {}
        """Lines written to each journal (``facts``, ``graph_proposals``), for the checkpoint."""
        self.stack: list[Frame] = []
        """The flows paused by detours and utility flows, bottom first (SPEC §4.6)."""

    def flow(self, flow_key: str) -> Totals:
        """The totals of one flow, created on first use."""
        totals = self.flow_totals.get(flow_key)
        if totals is None:
            totals = self.flow_totals[flow_key] = Totals()
        return totals

    def next_iteration(self, flow_key: str, step_id: str) -> int:
        """Count a new execution of a step; return its 0-based iteration."""
        iteration = self.executions.get((flow_key, step_id), 0)
        self.executions[(flow_key, step_id)] = iteration + 1
        return iteration

    def summary(
        self,
        run_id: str,
        flows: Sequence[str],
        choice: tuple[str, str, str],
        created_at: str,
        completed_at: str | None,
    ) -> RunSummary:
        """``meta.json`` as the run stands; ``choice`` is its (backend, mode, engine)."""
        totals = self.totals
        backend, mode, engine = choice
        return RunSummary(
            run_id=run_id,
            status=self.status,
            flows=list(flows),
            backend=backend,
            mode=mode,
            engine=engine,
            created_at=created_at,
            completed_at=completed_at,
            error=self.error,
            steps_completed=totals.steps_completed,
            total_steps_executed=totals.executed,
            loop_iterations=totals.loops,
            tokens=totals.tokens(),
            cost_usd=totals.cost,
            steps_without_cost=totals.steps_without_cost,
            flow_totals={key: ft.as_flow_document() for key, ft in self.flow_totals.items()},
        )

    def completed(self, status: Ended) -> RunCompleted:
        """The ``run_completed`` of an attempt that ends with ``status``."""
        return RunCompleted(
            status=status,
            error=self.error,
            steps_completed=self.totals.steps_completed,
            total_steps_executed=self.totals.executed,
        )
