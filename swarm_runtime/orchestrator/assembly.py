"""One assembly of an :class:`Orchestrator` from resolved settings.

``swarm run`` and the pytest plugin both build their orchestrator here, so
``runtime.yaml`` (engine strategy, history budgets, engine settings) means the same under
``pytest`` as under ``swarm run``. What differs between the two is passed in: where runs
go, the engines (the plugin adds its hooks' engines and cassettes), the listeners.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from swarm_runtime.config import Settings
from swarm_runtime.engines.registry import EngineRegistry
from swarm_runtime.engines.settings import engine_config
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.deps import EngineChoice, RunDeps, RunLimits
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.runner import Orchestrator
from swarm_runtime.record import replace


def build_orchestrator(
    settings: Settings,
    flows: FlowRegistry,
    *,
    env: Mapping[str, str],
    runs_dir: Path | None = None,
    deps: RunDeps | None = None,
    engine: EngineChoice | None = None,
    limits: RunLimits | None = None,
    origin: Mapping[str, object] | None = None,
) -> Orchestrator:
    """The orchestrator ``settings`` describe, with what the caller chose on top.

    ``engine`` is the engine and its mode (default: ``settings.mode``; a recorded or
    replayed call is an ``sdk`` call), and its ``config`` replaces engine settings (replay
    needs no key; ``cassettes`` records or replays); runtime.yaml gives the strategy.
    ``limits`` gives ``max_steps``, ``max_run_mb`` and the run ``budget`` (else
    runtime.yaml's); runtime.yaml
    gives the history budget and durability. ``deps.sleep`` waits between retries (replay
    passes one that does not wait: a recorded 429 costs no time). Credential values from
    ``env`` and from the engines' ``env`` in runtime.yaml are refused in every file of the
    run, in every mode.
    """
    chosen = engine or EngineChoice(mode=settings.mode)
    deps = deps or RunDeps()
    _check_sections(settings, deps.engines)
    config = engine_config(settings, env)
    config.update(chosen.config)
    asked = limits or RunLimits()
    return Orchestrator(
        flows,
        runs_dir=runs_dir or settings.runs_dir,
        deps=deps,
        engine=replace(
            chosen, strategy=settings.engine_strategy, config=config, navigator=settings.navigator
        ),
        limits=replace(
            asked,
            max_run_mb=asked.max_run_mb or settings.max_run_mb,
            max_depth=settings.max_depth,
            budget=asked.budget or settings.budget,
            history_budget=HistoryBudget(**settings.history),
            durable=settings.durable,
            max_retry_after_s=settings.max_retry_after_s,
        ),
        refuse_values=config["credentials"],
        origin=dict(origin or {}),
    )


def _check_sections(settings: Settings, engines: EngineRegistry) -> None:
    """Every ``engines.<name>`` of runtime.yaml is a registered engine's: else a typo."""
    if not settings.engine_sections:
        return  # claude and gemini only: no entry point needs loading to know them
    owned = engines.sections()
    for name in settings.engine_sections:
        if name not in owned:
            where = settings.config_source or "runtime.yaml"
            raise ConfigError(
                f"{where}: 'engines.{name}' is no registered engine's section (registered: "
                f"{', '.join(sorted(owned))}); register the engine that reads it (a plugin's "
                f"swarm_register_engines: registry.register(ID, FACTORY, section='{name}')) or "
                "fix the name"
            )
