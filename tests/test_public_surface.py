"""The public surface: what ``swarm_runtime``, ``swarm_runtime.plan`` and ``pytest_swarm``
export. Everything else is internal and may change; the docs and the examples import only
from these. A name added or dropped here is a change users see: update the list on purpose."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.conftest import REPO

PUBLIC = {
    "swarm_runtime": {
        "Backend",
        "ConfigError",
        "CredentialLeak",
        "EngineChoice",
        "EngineError",
        "EngineOptions",
        "EngineRegistry",
        "FlowDefinitionError",
        "FlowRegistry",
        "HandoffError",
        "HistoryBudget",
        "Orchestrator",
        "ReplayDivergence",
        "RoutingError",
        "RunControlError",
        "RunDeps",
        "RunLimits",
        "RunOutcome",
        "RunSpec",
        "Scenario",
        "ScenarioError",
        "StepContext",
        "StepEngine",
        "StepOutcome",
        "StepResult",
        "StorageError",
        "StubEngine",
        "SwarmError",
        "SwarmRunError",
        "SwarmUsageError",
        "TokenUsage",
        "default_registry",
        "get_backend",
        "load_flow",
        "register_backend",
    },
    "swarm_runtime.tools": {"ToolRegistry", "ToolSpec", "tool"},
    "pytest_swarm": {"RunRecord", "swarm_expect"},
}
PUBLIC_MODULES = {*PUBLIC, "swarm_runtime.plan"}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_a_public_module_exports_exactly_its_names(module: str) -> None:
    loaded = importlib.import_module(module)
    assert set(loaded.__all__) == PUBLIC[module]
    for name in loaded.__all__:
        getattr(loaded, name)  # every name resolves (lazy ones too)


def test_the_docs_and_the_examples_import_only_public_modules() -> None:
    texts = [
        REPO / "README.md",
        *sorted((REPO / "docs").rglob("*.md")),
        *sorted((REPO / "examples").rglob("*.py")),
    ]
    found: set[str] = set()
    for path in texts:
        text = path.read_text(encoding="utf-8")
        found.update(
            re.findall(r"^\s*from ((?:swarm_runtime|pytest_swarm)[\w.]*) import", text, re.M)
        )
    assert found, "the docs show no import at all"
    assert found <= PUBLIC_MODULES, (
        f"internal modules in user-facing code: {found - PUBLIC_MODULES}"
    )
