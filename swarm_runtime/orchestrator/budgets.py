"""Step, flow and run budgets (SPEC §10.7), checked after every engine call of a run.

A step's budget bounds one execution (all its attempts); a flow's bounds everything the
flow spent in the run so far (every execution, loops and retries included, its time being
the time its steps took); the run's bounds the run's totals (its time: the time all its
steps took). The check reads the run's totals, so it is the same in every mode, and the
same after a resume (the totals come back from the checkpoint). Exceeding one fails the
step with an error that starts with ``budget_exceeded`` and names the budget, the measure,
the value and the limit.

The largest share of any budget used is kept per flow (and for the run), for the final
table of ``swarm run`` and the pytest summary.
"""

from __future__ import annotations

from collections.abc import Callable

from swarm_runtime.flow.spec import Budget, FlowSpec, StepSpec
from swarm_runtime.orchestrator.state import RunState, Totals

BUDGET_EXCEEDED = "budget_exceeded"
"""How the error of a step that broke a budget starts."""
RUN_KEY = ""
"""The key of the run budget's share in :attr:`BudgetCheck.used`."""


class Spent:
    """Tokens, cost in USD and time in ms: what one execution, flow or run has spent."""

    __slots__ = ("cost_usd", "duration_ms", "tokens")

    def __init__(self, tokens: int, cost_usd: float | None, duration_ms: int) -> None:
        self.tokens = tokens
        self.cost_usd = cost_usd
        """None when unknown (a model missing from the price table): never checked then."""
        self.duration_ms = duration_ms

    @classmethod
    def of(cls, totals: Totals, extra_ms: int) -> Spent:
        """What ``totals`` count, with ``extra_ms`` (the step not yet added) on their time."""
        return cls(
            totals.prompt_tokens + totals.completion_tokens,
            totals.cost_usd,
            totals.duration_ms + extra_ms,
        )

    def values(self) -> tuple[tuple[str, float | None], ...]:
        return (
            ("tokens", self.tokens),
            ("cost_usd", self.cost_usd),
            ("duration_ms", self.duration_ms),
        )


def exceeded(budget: Budget, spent: Spent, name: str) -> str | None:
    """Why ``spent`` breaks ``budget`` (called ``name``: ``flow budget of 'build'``), or None."""
    for measure, value in spent.values():
        limit = getattr(budget, measure)
        if limit is not None and value is not None and value > limit:
            return f"{BUDGET_EXCEEDED}: {name}: {measure} {_show(value)} > limit {_show(limit)}"
    return None


def largest_share(budget: Budget, spent: Spent) -> tuple[float, str] | None:
    """The largest fraction of ``budget`` that ``spent`` uses, and its measure; None if none."""
    best: tuple[float, str] | None = None
    for measure, value in spent.values():
        limit = getattr(budget, measure)
        if limit is None or value is None:
            continue
        share = value / limit if limit > 0 else (0.0 if value == 0 else float("inf"))
        if best is None or share > best[0]:
            best = (share, measure)
    return best


def share_percent(share: float) -> str:
    """``share`` as a whole percentage; only a share of exactly 1 reads ``100%``.

    A budget just past its limit (1728 tokens of 1727) reads ``101%``, not a
    rounded ``100%`` beside its budget_exceeded, and one just below it ``99%``.
    """
    text = f"{share:.0%}"
    if text == "100%" and share != 1.0:
        return "101%" if share > 1.0 else "99%"
    return text


def _show(value: float) -> str:
    return str(round(value, 6)) if isinstance(value, float) else str(value)


class BudgetCheck:
    """The budgets of one run: checked after each engine call, their largest shares kept."""

    __slots__ = ("run", "used")

    def __init__(self, run: Budget | None = None) -> None:
        self.run = run
        self.used: dict[str, tuple[float, str, str]] = {}
        """Per flow key (:data:`RUN_KEY` for the run budget): the largest share of a budget
        used so far, its measure and whose budget it is (``flow build``)."""

    def check(
        self, state: RunState, flow: FlowSpec, step: StepSpec, execution: Spent
    ) -> str | None:
        """After a call whose spending the totals already count: the budget it broke, or None.

        ``execution`` is what the step execution spent (its time so far included); the
        flow's and the run's time are their steps' time with this execution's added. When
        more than one is broken, the narrowest is named (step, then flow, then run).
        """
        error = None
        if step.budget is not None:
            error = self._one(step.budget, execution, flow.key, "step", f"{flow.key}/{step.id}")
        if flow.budget is not None:
            spent = Spent.of(state.flow(flow.key), execution.duration_ms)
            found = self._one(flow.budget, spent, flow.key, "flow", flow.key)
            error = error or found
        if self.run is not None:
            spent = Spent.of(state.totals, execution.duration_ms)
            for totals in state.flow_totals.values():
                spent.duration_ms += totals.duration_ms
            found = self._one(self.run, spent, RUN_KEY, "run", "")
            error = error or found
        return error

    def _one(self, budget: Budget, spent: Spent, key: str, kind: str, whose: str) -> str | None:
        """Check one budget (``kind`` step, flow or run, of ``whose``); keep its share."""
        share = largest_share(budget, spent)
        if share is None:
            return None
        best = self.used.get(key)
        if best is None or share[0] >= best[0]:
            self.used[key] = (share[0], share[1], f"{kind} {whose}" if whose else "the run")
        if share[0] < 1.0:
            return None  # every measure below its limit (exceeded() decides at 100% and up)
        name = "run budget" if kind == "run" else f"{kind} budget of '{whose}'"
        return exceeded(budget, spent, name)

    def shares(self, state: RunState, flows: Callable[[str], FlowSpec]) -> dict[str, str]:
        """Per flow key (``""``: the run), e.g. ``83% (tokens of flow build)``.

        The flows' and the run's shares are taken again from the totals as they end (a
        resumed run's included); ``flows`` gives the spec of a flow key.
        """
        for key, totals in state.flow_totals.items():
            budget = flows(key).budget
            if budget is not None:
                self._one(budget, Spent.of(totals, 0), key, "flow", key)
        if self.run is not None:
            spent = Spent.of(state.totals, 0)
            spent.duration_ms = sum(t.duration_ms for t in state.flow_totals.values())
            self._one(self.run, spent, RUN_KEY, "run", "")
        return {
            key: f"{share_percent(share)} ({measure} of {whose})"
            for key, (share, measure, whose) in self.used.items()
        }
