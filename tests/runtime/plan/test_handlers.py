"""Handlers: the registry, third-party handlers through entry points, payload references."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from swarm_runtime.errors import ConfigError, PlanError
from swarm_runtime.plan import HandlerRegistry, PlanRuntime, StepCall, default_handlers
from tests.runtime.plan.conftest import plan_document


def shouting_summary(call: StepCall) -> Mapping[str, Any]:
    return {"summary": "SHOUTED", "keywords": ["loud"]}


def register_plugin(registry: HandlerRegistry) -> None:
    """What a third party's ``swarm_runtime.plan_handlers`` entry point does."""
    registry.register("SummarizeMemory", shouting_summary, replace=True)


def broken_plugin(registry: HandlerRegistry) -> None:
    raise RuntimeError("boom")


def _plugin(monkeypatch: pytest.MonkeyPatch, name: str, target: str) -> None:
    entry = importlib.metadata.EntryPoint(
        name=name,
        value=f"tests.runtime.plan.test_handlers:{target}",
        group="swarm_runtime.plan_handlers",
    )
    real = importlib.metadata.entry_points

    def entry_points(**select: Any) -> Any:
        if select.get("group") == "swarm_runtime.plan_handlers":
            return [entry]
        return real(**select)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)


def test_an_entry_point_handler_replaces_a_builtin(
    monkeypatch: pytest.MonkeyPatch, make_runtime: Callable[..., PlanRuntime]
) -> None:
    _plugin(monkeypatch, "shout", "register_plugin")
    result = make_runtime(handlers=default_handlers()).run_cycle(
        plan_document(), input="postgres", session="s"
    )
    assert result.status == "succeeded", result.error
    assert result.results["summarize"] == {"summary": "SHOUTED", "keywords": ["loud"]}


def test_a_broken_plugin_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin(monkeypatch, "bad", "broken_plugin")
    with pytest.raises(
        ConfigError, match=r"plan handler plugin 'bad' \(tests.*\) failed to load: boom"
    ):
        default_handlers()


def test_the_registry_refuses_what_it_cannot_hold() -> None:
    registry = HandlerRegistry()
    registry.register("LLMCall", lambda call: {"response": ""})
    with pytest.raises(ConfigError, match="a handler for LLMCall is registered already"):
        registry.register("LLMCall", lambda call: {"response": ""})
    with pytest.raises(PlanError, match="no v1 step type 'Branch'"):
        registry.register("Branch", lambda call: {})
    with pytest.raises(ConfigError, match="no handler for plan steps of type RepoScan"):
        registry.get("RepoScan")


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        ({"input": {"$ref": "steps.later.x"}, "sources": []}, "names step 'later'"),
        ({"input": {"$ref": "nowhere"}, "sources": []}, "$ref 'nowhere' is not understood"),
        ({"input": "x", "sources": ["../../etc/passwd"]}, "leaves the repository"),
        ({"input": "x", "sources": ["missing.md"]}, "no such file or directory"),
        ({"input": "x"}, "payload.sources is missing"),
        ({"input": "x", "sources": [], "extra": 1}, "payload.extra is not a ContextSelect field"),
    ],
)
def test_a_bad_payload_fails_its_step_saying_what_is_wrong(
    make_runtime: Callable[..., PlanRuntime], payload: dict[str, Any], said: str
) -> None:
    plan = plan_document()
    plan["steps"][1]["payload"] = payload
    result = make_runtime().run_cycle(plan, input="postgres", session="s")
    assert result.status == "failed" and result.failed_step == "context"
    assert said in (result.error or "")


def test_a_template_naming_an_unknown_var_says_which(
    make_runtime: Callable[..., PlanRuntime],
) -> None:
    plan = plan_document()
    plan["steps"][3]["payload"]["template"] = "{{question}} {{missing}}"
    result = make_runtime().run_cycle(plan, input="postgres", session="s")
    assert result.failed_step == "assemble"
    assert "template uses {{missing}} but vars has no such key" in (result.error or "")
