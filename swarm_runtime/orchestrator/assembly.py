"""One assembly of an :class:`Orchestrator` from resolved settings.

``swarm run`` and the pytest plugin both build their orchestrator here, so
``runtime.yaml`` (engine strategy, history budgets, engine settings) means the same under
``pytest`` as under ``swarm run``. What differs between the two is passed in: where runs
go, the engines (the plugin adds its hooks' engines and cassettes), the observers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from swarm_runtime.config import Settings, engine_config
from swarm_runtime.engines.base import StepResult
from swarm_runtime.engines.registry import EngineRegistry
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.recorder import EventObserver
from swarm_runtime.orchestrator.runner import Orchestrator

__all__ = ["build_orchestrator"]


def build_orchestrator(
    settings: Settings,
    flows: FlowRegistry,
    *,
    env: Mapping[str, str],
    runs_dir: Path | None = None,
    engines: EngineRegistry | None = None,
    engine_id: str = "claude-step",
    mode: str | None = None,
    scenario: Scenario | None = None,
    observer: EventObserver | None = None,
    result_observer: Callable[[str, StepResult], None] | None = None,
    max_steps: int | None = None,
    max_run_mb: int | None = None,
    engine_overrides: Mapping[str, object] | None = None,
    sleep: Callable[[float], None] | None = None,
    origin: Mapping[str, object] | None = None,
) -> Orchestrator:
    """The orchestrator ``settings`` describe.

    ``mode`` is the engines' mode when it differs from ``settings.mode`` (a recorded or
    replayed call is an sdk call); ``engine_overrides`` replace engine settings (replay
    needs no key; ``cassettes`` records or replays); ``sleep`` waits between retries
    (replay passes one that does not wait: a recorded 429 costs no time). Credential values
    from ``env`` and from the engines' ``env`` in runtime.yaml are refused in every file of
    the run, in every mode.
    """
    engine_mode = mode or settings.mode
    config = engine_config(settings, env)
    config.update(engine_overrides or {})
    return Orchestrator(
        flows,
        runs_dir=runs_dir or settings.runs_dir,
        engines=engines,
        engine_id=engine_id,
        mode=engine_mode,
        scenario=scenario,
        engine_strategy=settings.engine_strategy,
        durable=settings.durable,
        history_budget=HistoryBudget(**settings.history),
        observer=observer,
        result_observer=result_observer,
        max_steps=max_steps,
        max_run_mb=max_run_mb or settings.max_run_mb,
        engine_config=config,
        refuse_values=config["credentials"],
        sleep=sleep,
        origin=dict(origin or {}),
    )
