"""The cost of budget checking per stub step, as a ratio of a stub step.

Two figures, measured in one process:

1. The check itself: ``BudgetCheck.check`` with a step, a flow and a run budget all
   declared (the most work it does), timed over many calls, against the time of one stub
   step (``Orchestrator.run`` of the SDLC flows with no budget, per step executed).
   Target: <= 3% (``TARGET``). This is the figure judged.
2. End to end, alternating rounds: the SDLC in stub mode with every flow carrying a
   ``budget:`` and a run budget, against the same flows with none. Printed as the extra
   time per step, for the spread; on a shared machine it is mostly noise.

A measurement, not a gate: exits 0 whether the target is met or missed, 1 only when a run
fails.

    python bench/budget_cost.py [--rounds N] [--quick]

See docs/budgets.md and docs/performance.md.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import Budget
from swarm_runtime.orchestrator.context import HistoryBudget
from swarm_runtime.orchestrator.plan import RunLimits, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import BudgetCheck, RunState, Spent
from swarm_runtime.record import replace

REPO_ROOT = Path(__file__).resolve().parent.parent
FLOWS = REPO_ROOT / "flows"
TARGET = 0.03
LARGE = Budget(tokens=10**12, cost_usd=10.0**9, duration_ms=10**12)
"""Budgets no run reaches: every measure is checked, none fails."""


def _flows(into: Path, *, budgeted: bool) -> Path:
    """A copy of the shipped flows; ``budgeted``: with ``budget:`` atop every flow file."""
    shutil.copytree(FLOWS, into)
    for path in into.glob("*.yaml") if budgeted else ():
        text = path.read_text(encoding="utf-8")
        if text.startswith("key:"):
            head, _, rest = text.partition("\n")
            budget = (
                "budget: {tokens: 1000000000000, cost_usd: 1000000000, duration_ms: 1000000000000}"
            )
            path.write_text(f"{head}\n{budget}\n{rest}", encoding="utf-8")
    return into


def _run(flows: Path, runs: Path, budget: Budget | None) -> tuple[float, int]:
    """Seconds of one stub run of the SDLC, and its step executions."""
    registry = FlowRegistry(flows)
    orchestrator = Orchestrator(registry, runs_dir=runs, limits=RunLimits(budget=budget))
    spec = RunSpec(flows=tuple(registry.order()))
    gc.collect()
    began = time.perf_counter()
    outcome = orchestrator.run(spec)
    took = time.perf_counter() - began
    if outcome.status != "succeeded":
        raise SystemExit(f"bench: the run failed: {outcome.error}")
    shutil.rmtree(outcome.path)
    return took, int(outcome.summary["total_steps_executed"])


def _check_seconds(calls: int) -> float:
    """Seconds per ``BudgetCheck.check`` with a step, a flow and a run budget declared."""
    flow = FlowRegistry(FLOWS).get("build")
    flow = replace(flow, budget=LARGE)
    step = replace(flow.steps[0], budget=LARGE)
    state = RunState(HistoryBudget())
    for key in ("signal", "plan", "build", "review", "gate"):
        state.flow(key).duration_ms = 1234
        state.flow(key).prompt_tokens = 5678
    check = BudgetCheck(LARGE)
    spent = Spent(1234, 0.01, 56)
    gc.collect()
    began = time.perf_counter()
    for _ in range(calls):
        check.check(state, flow, step, spent)
    return (time.perf_counter() - began) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="alternating rounds (default 11)")
    parser.add_argument("--quick", action="store_true", help="3 rounds, a smoke test")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
        root = Path(tmp)
        flows = _flows(root / "plain", budgeted=False)
        budgeted = _flows(root / "budgeted", budgeted=True)
        _run(flows, root / "runs", None)  # warm-up: imports, the flow cache
        _run(budgeted, root / "runs", LARGE)
        plain: list[float] = []
        extra: list[float] = []
        for index in range(rounds):  # which goes first alternates too
            if index % 2:
                with_budgets, _steps = _run(budgeted, root / "runs", LARGE)
                seconds, steps = _run(flows, root / "runs", None)
            else:
                seconds, steps = _run(flows, root / "runs", None)
                with_budgets, _steps = _run(budgeted, root / "runs", LARGE)
            plain.append(seconds / steps)
            extra.append((with_budgets - seconds) / steps)
    step_s = statistics.median(plain)
    check_s = statistics.median(_check_seconds(20_000) for _ in range(5))
    ratio = check_s / step_s
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(f"stub step: {step_s * 1e6:.0f} us (median of {rounds} SDLC runs)")
    print(f"budget check (step + flow + run budgets): {check_s * 1e6:.2f} us per step")
    print(f"ratio: {ratio:.2%} of a stub step (target <= {TARGET:.0%}): {verdict}")
    print(
        f"end to end, every flow and the run budgeted: {statistics.median(extra) * 1e6:+.1f} us "
        f"per step ({statistics.median(extra) / step_s:+.1%}; noise on a shared machine)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
