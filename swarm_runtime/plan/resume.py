"""``swarm resume`` of a plan cycle: the kernel's one resume, given the cycle's plan.

The run's ``spec.json`` keeps what the cycle needs besides what a flow run keeps: the plan
as it ran (``origin.plan``), its store and the repository its handlers read. The
orchestrator is the one :func:`~swarm_runtime.orchestrator.assembly.orchestrator_for_run`
builds for any run, with the plan's flow and the plan's step engines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from swarm_runtime.errors import FailFast, PlanError, RunControlError
from swarm_runtime.orchestrator.assembly import ResumeChoices, orchestrator_for_run
from swarm_runtime.orchestrator.resume import read_run_spec
from swarm_runtime.plan.builtins import default_handlers
from swarm_runtime.plan.cycle import PLAN_BACKEND
from swarm_runtime.plan.engine import PlanCycle
from swarm_runtime.plan.kernel import PlanEngines, PlanFlows
from swarm_runtime.plan.validate import checked_plan

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.run import Orchestrator
    from swarm_runtime.orchestrator.state import RunOutcome
    from swarm_runtime.plan.memory_store import MemoryStore
    from swarm_runtime.plugins import SwarmPlugins


def orchestrator_to_resume(
    run_dir: Path,
    *,
    env: Mapping[str, str],
    choices: ResumeChoices | None = None,
    sleep: Callable[[float], None] | None = None,
    plugins: SwarmPlugins | None = None,
    notice: Callable[[str], None] = lambda _message: None,
) -> Orchestrator:
    """The one resume of any run, plan cycles too.

    A cycle is given its plan (:func:`orchestrator_for_cycle`), any other run is built as
    its ``spec.json`` says; ``swarm resume``, the run service, Flow Studio and the workers
    all resume through here.
    """
    resume: Callable[..., Orchestrator] = orchestrator_for_run
    if read_run_spec(run_dir)[1].get("backend") == PLAN_BACKEND:
        resume = orchestrator_for_cycle
    return resume(run_dir, env=env, choices=choices, sleep=sleep, plugins=plugins, notice=notice)


def failfast_of(run_dir: Path, outcome: RunOutcome) -> FailFast | None:
    """The FailFast a resumed run ended with, when it is a plan cycle's; else None.

    ``swarm resume`` reports it as ``swarm plan run`` does: the runtime stops (exit 3).
    """
    from swarm_runtime.plan.executor import cycle_result

    _, doc = read_run_spec(run_dir)
    if doc.get("backend") != PLAN_BACKEND or outcome.status != "failed":
        return None
    try:
        cycle_result(checked_plan((doc.get("origin") or {}).get("plan")), outcome)
    except FailFast as stopped:
        return stopped
    except PlanError:  # resumed with its plan, so this cannot be; a failed run it stays
        return None
    return None


def orchestrator_for_cycle(
    run_dir: Path,
    *,
    env: Mapping[str, str],
    choices: ResumeChoices | None = None,
    sleep: Callable[[float], None] | None = None,
    plugins: SwarmPlugins | None = None,
    notice: Callable[[str], None] = lambda _message: None,
) -> Orchestrator:
    """The orchestrator that resumes the plan cycle at ``run_dir`` as it began."""
    _, doc = read_run_spec(run_dir)
    origin = doc.get("origin") or {}
    try:
        plan = checked_plan(origin.get("plan"))
    except PlanError as exc:
        raise RunControlError(
            f"{run_dir / 'spec.json'}: origin.plan is not the plan a cycle ran ({exc}); the "
            "cycle cannot be resumed"
        ) from None
    repo = Path(str(origin.get("repo") or Path.cwd()))
    store = _Store(Path(str(origin.get("store") or "")))
    orchestrator = orchestrator_for_run(
        run_dir,
        env=env,
        choices=choices,
        sleep=sleep,
        plugins=plugins,
        notice=notice,
        flows=PlanFlows(plan, repo),
    )
    orchestrator.repo_root = repo
    PlanEngines.install(
        orchestrator,
        PlanCycle(plan, default_handlers(), store.open, repo, orchestrator.deps.clock),
        on_close=store.close,
    )
    return orchestrator


class _Store:
    """The cycle's plan store, opened on first use and closed with the run's engines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._store: MemoryStore | None = None

    def open(self) -> MemoryStore:
        if self._store is None:
            from swarm_runtime.plan.memory_store import MemoryStore

            self._store = MemoryStore(self.path)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
