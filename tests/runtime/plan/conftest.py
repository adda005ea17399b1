"""Plans and runtimes for the execution-plan tests: a valid plan, and handlers that record."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.orchestrator.plan import RunDeps
from swarm_runtime.plan import (
    CANONICAL_ORDER,
    HandlerRegistry,
    PlanPaths,
    PlanRuntime,
    StepCall,
    default_handlers,
)
from tests.conftest import StepClock

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_PLAN = REPO / "examples" / "plans" / "answer-with-memory.json"


def plan_document() -> dict[str, Any]:
    """The shipped example plan, with its repository paths made to fit a test's repo."""
    plan = json.loads(EXAMPLE_PLAN.read_text("utf-8"))
    return copy.deepcopy(plan)


class Recorder:
    """Wraps every handler of a registry: notes each call's step id and payload."""

    def __init__(self, base: HandlerRegistry) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.registry = base.copy()
        for step_type in CANONICAL_ORDER:
            self.registry.register(step_type, self._wrap(base.get(step_type)), replace=True)

    def _wrap(self, handler: Callable[[StepCall], Mapping[str, Any]]) -> Any:
        def recorded(call: StepCall) -> Mapping[str, Any]:
            self.calls.append((call.step_id, copy.deepcopy(call.payload)))
            return handler(call)

        return recorded

    @property
    def steps(self) -> list[str]:
        return [step_id for step_id, _ in self.calls]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small repository the example plan's paths resolve in."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text(
        "# Demo\n\nRotate the postgres credentials every 90 days with the vault CLI.\n",
        "utf-8",
    )
    (root / "notes.txt").write_text("Nothing about databases here.\n", "utf-8")
    return root


@pytest.fixture
def recorder() -> Recorder:
    return Recorder(default_handlers())


@pytest.fixture
def make_runtime(tmp_path: Path, repo: Path, recorder: Recorder) -> Callable[..., PlanRuntime]:
    """A PlanRuntime over ``repo`` with a pinned clock, writing under ``tmp_path``."""
    built: list[PlanRuntime] = []

    def make(**options: Any) -> PlanRuntime:
        options.setdefault("handlers", recorder.registry)
        runtime = PlanRuntime(
            PlanPaths(
                runs_dir=tmp_path / "runs", store_path=tmp_path / "store.sqlite3", repo_root=repo
            ),
            deps=RunDeps(clock=StepClock(), sleep=lambda _s: None),
            **options,
        )
        built.append(runtime)
        return runtime

    yield make
    for runtime in built:
        runtime.close()
