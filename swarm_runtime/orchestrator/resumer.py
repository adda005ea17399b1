"""The one way a run is resumed: an orchestrator built as the run's ``spec.json`` says.

``swarm resume``, the run service and Flow Studio all resume through
:func:`orchestrator_for_run`: the run's mode, engine, flows dir, stub scenario, step and
size limits and config come from ``spec.json`` (its ``origin``), so a run resumed from any
of them goes on exactly as it began. A caller may override the mode, flows dir, scenario
or config (``swarm resume --mode …``); each override is announced through ``notice``.
A run whose flows are no flows dir (a plan cycle's) is given them by its caller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import RunControlError, SwarmUsageError
from swarm_runtime.orchestrator.resume import read_run_spec
from swarm_runtime.orchestrator.runner import Orchestrator
from swarm_runtime.orchestrator.stack import DEFAULT_MAX_DEPTH
from swarm_runtime.record import Record, replace

if TYPE_CHECKING:
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.deps import RunDeps, RunLimits
    from swarm_runtime.plugins import SwarmPlugins

RESUMED_MODES = ("stub", "sdk", "cli")


class ResumeChoices(Record):
    """What a caller may choose instead of the run's own (None: the run's)."""

    mode: str | None = None
    flows_dir: Path | None = None
    scenario: Path | None = None
    config: Path | None = None


def orchestrator_for_run(
    run_dir: Path,
    *,
    env: Mapping[str, str],
    choices: ResumeChoices | None = None,
    sleep: Callable[[float], None] | None = None,
    plugins: SwarmPlugins | None = None,
    notice: Callable[[str], None] = lambda _message: None,
    flows: FlowRegistry | None = None,
) -> Orchestrator:
    """The orchestrator that resumes the run at ``run_dir`` as it was made.

    ``flows``: the run's flows, when they are not its flows dir's (a plan cycle's).
    """
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.orchestrator.assembly import build_orchestrator
    from swarm_runtime.orchestrator.deps import EngineChoice

    chosen = choices or ResumeChoices()
    _, doc = read_run_spec(run_dir)
    origin: dict[str, Any] = doc.get("origin") or {}
    if origin.get("cassettes"):
        raise RunControlError(
            f"run {run_dir.name} recorded or replayed cassettes; such a run is not resumed "
            "(a resumed recording would be incomplete) - run it again"
        )
    mode = _override("--mode", chosen.mode, str(doc.get("mode") or "stub"), notice)
    if mode not in RESUMED_MODES:
        raise SwarmUsageError(f"--mode {mode}: a run is resumed in {', '.join(RESUMED_MODES)} mode")
    if flows is None:
        flows = _flows_dir(run_dir, doc, chosen, notice)
    config = chosen.config or (Path(origin["config"]) if origin.get("config") else None)
    settings = resolve_settings(
        env=env,
        mode=mode,
        runs_dir=run_dir.parent,
        flows_dir=flows.flows_dir,
        config_path=config,
        navigator=str(origin.get("navigator") or "llm"),  # as the run began
    )
    # The stack depth the run began with (its checkpoint's stack was pushed under it), not
    # what runtime.yaml says now.
    settings = replace(settings, max_depth=int(origin.get("max_depth") or DEFAULT_MAX_DEPTH))
    return build_orchestrator(
        settings,
        flows,
        env=env,
        runs_dir=run_dir.parent,
        deps=_deps(sleep, plugins, notice),
        engine=EngineChoice(
            engine_id=str(doc.get("engine") or "claude-step"),
            mode=settings.mode,
            scenario=_scenario(run_dir, origin, chosen.scenario, notice, Scenario),
            faults=_faults(origin),
        ),
        limits=_limits(run_dir, origin),
    )


def _deps(
    sleep: Callable[[float], None] | None,
    plugins: SwarmPlugins | None,
    notice: Callable[[str], None],
) -> RunDeps:
    """The resumed run's waiting, listeners (default: the process's plugins) and notices."""
    from swarm_runtime.orchestrator.deps import RunDeps
    from swarm_runtime.plugins import process_plugins
    from swarm_runtime.timeutil import interruptible_sleep

    return RunDeps(
        sleep=sleep or interruptible_sleep, plugins=plugins or process_plugins(), notice=notice
    )


def _flows_dir(
    run_dir: Path, doc: dict[str, Any], chosen: ResumeChoices, notice: Callable[[str], None]
) -> FlowRegistry:
    """The flows of the run's flows dir (or the one chosen instead)."""
    from swarm_runtime.flow.registry import FlowRegistry

    if doc.get("backend") == "plan-executor":
        raise RunControlError(
            f"{run_dir.name} is a cycle of an execution plan: resume it with 'swarm resume "
            f"{run_dir.name}'"
        )
    origin = doc.get("origin") or {}
    flows_dir = _override("--flows-dir", chosen.flows_dir, origin.get("flows_dir"), notice)
    if flows_dir is None or not Path(flows_dir).is_dir():
        raise SwarmUsageError(
            f"the flows dir of run {run_dir.name} ({flows_dir}) is not there; pass --flows-dir DIR"
        )
    return FlowRegistry(Path(flows_dir))


def _limits(run_dir: Path, origin: dict[str, Any]) -> RunLimits:
    """The limits the run began with, as its spec.json keeps them."""
    from swarm_runtime.orchestrator.deps import RunLimits

    return RunLimits(
        max_steps=origin.get("max_steps"),
        max_run_mb=origin.get("max_run_mb"),
        max_depth=int(origin.get("max_depth") or DEFAULT_MAX_DEPTH),
        budget=_budget(run_dir, origin),
    )


def _budget(run_dir: Path, origin: dict[str, Any]) -> Any:
    """The run budget the run began with (kept in spec.json), or None."""
    from swarm_runtime.flow.budget_input import budget_from_mapping

    raw = origin.get("budget")
    if raw is None:
        return None
    return budget_from_mapping(raw, f"{run_dir / 'spec.json'}: origin.budget")


def _scenario(
    run_dir: Path,
    origin: dict[str, Any],
    chosen: Path | None,
    notice: Callable[[str], None],
    scenario_type: Any,
) -> Any:
    """The run's stub scenario (kept whole in spec.json), or the one chosen instead."""
    if chosen is not None:
        notice(f"--scenario {chosen} replaces the run's scenario")
        return scenario_type.from_file(chosen)
    if origin.get("scenario") is not None:
        source = str(origin.get("scenario_file") or f"{run_dir / 'spec.json'}: origin.scenario")
        return scenario_type.from_mapping(origin["scenario"], source=source)
    if origin.get("scenario_file") and Path(str(origin["scenario_file"])).is_file():
        return scenario_type.from_file(str(origin["scenario_file"]))
    return None


def _faults(origin: dict[str, Any]) -> Any:
    """The run's own fault plan (``--faults``, the marker), kept whole in spec.json."""
    if origin.get("faults") is None:
        return None
    from swarm_runtime.engines.faults import FaultPlan

    return FaultPlan.from_mapping(origin["faults"], source=str(origin.get("faults_source")))


def _override(flag: str, given: Any, recorded: Any, notice: Callable[[str], None]) -> Any:
    """The chosen value when given (announced if it differs from the run's), else the run's."""
    if given is None:
        return recorded
    if recorded is not None and str(given) != str(recorded):
        notice(f"{flag} {given} overrides the run's {recorded}")
    return given
