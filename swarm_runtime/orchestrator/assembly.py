"""The one way a run is resumed: an orchestrator built as the run's ``spec.json`` says.

``swarm resume``, the run service and Flow Studio all resume through
:func:`orchestrator_for_run`: the run's mode, engine, flows dir, stub scenario, step and
size limits and config come from ``spec.json`` (its ``origin``), so a run resumed from any
of them goes on exactly as it began. A caller may override the mode, flows dir, scenario
or config (``swarm resume --mode …``); each override is announced through ``notice``.
A run whose flows are no flows dir (a plan cycle's) is given them by its caller.

One assembly of an :class:`Orchestrator` from resolved settings.

``swarm run`` and the pytest plugin both build their orchestrator here, so
``runtime.yaml`` (engine strategy, history budgets, engine settings) means the same under
``pytest`` as under ``swarm run``. What differs between the two is passed in: where runs
go, the engines (the plugin adds its hooks' engines and cassettes), the listeners.

What every run-service backend shares: reading runs, and building orchestrators.

A backend (docs/run-control.md#backends-and-the-run-service) starts runs and controls them; where
they run differs (threads of this process in :mod:`swarm_runtime.service`, ``swarm worker``
processes in :mod:`swarm_runtime.distributed.backend`), but every backend reads runs the same way,
from the run dirs: a run's summary is its ``meta.json`` with its status as seen now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.config import Settings
from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.options import options_for
from swarm_runtime.engines.settings import named_secrets, section_secrets
from swarm_runtime.errors import ConfigError, RunControlError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.context import HistoryBudget
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunLimits, RunSpec
from swarm_runtime.orchestrator.resume import read_run_spec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import DEFAULT_MAX_DEPTH
from swarm_runtime.record import Record, replace
from swarm_runtime.tools.registry import ToolRegistry

if TYPE_CHECKING:
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
    deps = deps or RunDeps()
    chosen = _engine_choice(settings, env, engine or EngineChoice(mode=settings.mode), deps)
    asked = limits or RunLimits()
    return Orchestrator(
        flows,
        runs_dir=runs_dir or settings.runs_dir,
        deps=deps,
        engine=chosen,
        limits=replace(
            asked,
            max_run_mb=asked.max_run_mb or settings.max_run_mb,
            max_depth=settings.max_depth,
            budget=asked.budget or settings.budget,
            history_budget=HistoryBudget(**settings.history),
            durable=settings.durable,
            max_retry_after_s=settings.max_retry_after_s,
        ),
        refuse_values=chosen.credentials,
        origin=dict(origin or {}),
    )


def _engine_choice(
    settings: Settings, env: Mapping[str, str], chosen: EngineChoice, deps: RunDeps
) -> EngineChoice:
    """``chosen`` with what runtime.yaml and the environment give every engine, checked.

    Every ``engines.<name>`` is a registered engine's, and every engine's settings read
    well (whether or not a step of the run uses it); the credentials are those of the
    environment and of runtime.yaml alike.
    """
    where, sections = settings.config_source or "runtime.yaml", settings.engine_sections
    deps.engines.check_sections(sections, where)
    given = {**settings.engine_given}
    for name, values in chosen.given.items():
        given[name] = {**given.get(name, {}), **values}
    checked = replace(settings, engine_given=given)
    deps.engines.check_settings(lambda name: options_for(checked, env, name, mode=chosen.mode))
    return replace(
        chosen,
        strategy=settings.engine_strategy,
        navigator=settings.navigator,
        sections=settings.engine_sections,
        given=given,
        env=dict(env),
        credentials=Credentials(
            [
                *Credentials.from_envs(
                    env,
                    *map(section_secrets, sections.items()),
                    *(server.env for server in settings.tools.mcp_servers.values()),
                ).pairs,
                *named_secrets(sections, env),
            ]
        ),
        where=where,
        tools=settings.tools,
        tool_registry=_tool_registry(settings, deps),
    )


def _tool_registry(settings: Settings, deps: RunDeps) -> ToolRegistry:
    """The run's Python tools: every plugin's (``swarm_register_tools``), then runtime.yaml's."""
    from swarm_runtime.tools.registry import ToolRegistry

    registry = ToolRegistry()
    deps.plugins.register_tools(registry)
    where = f"{settings.config_source or 'runtime.yaml'}: tools"
    registry.add_references(settings.tools.references, where, base=Path.cwd())
    return registry


OrchestratorFactory = Callable[[Callable[[float], None]], Orchestrator]
"""Builds a fresh orchestrator for one run, given the sleep its engines must use."""


class BackendBase:
    """A backend's reading side; starting and controlling runs is each backend's own."""

    def __init__(self, backend_id: str, runs_dir: Path) -> None:
        self.backend_id = backend_id
        self.runs_dir = Path(runs_dir)

    def start(self, spec: RunSpec | Mapping[str, Any]) -> str:
        """Create the run and have it run; its id."""
        raise NotImplementedError

    def resume(self, run_id: str, *, external_input: str | None = None) -> None:
        """Continue a paused, stopped, blocked or crashed run."""
        raise NotImplementedError

    def pause(self, run_id: str, reason: str = "") -> None:
        """Pause the run at its next step boundary."""
        raise NotImplementedError

    def stop(self, run_id: str, reason: str = "") -> None:
        """Stop the run at its next step boundary (it ends ``stopped``, resumable)."""
        raise NotImplementedError

    def cancel(self, run_id: str, reason: str = "") -> None:
        """Stop the run now."""
        raise NotImplementedError

    def wait(self, run_id: str, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the run to end (or pause); its summary."""
        raise NotImplementedError

    def is_running(self, run_id: str) -> bool:
        """Whether this backend runs ``run_id`` now."""
        raise NotImplementedError

    def shutdown(self, timeout: float = 30.0) -> None:
        """Let go of what this backend holds (its runs go on where they run)."""

    def get_summary(self, run_id: str) -> dict[str, Any]:
        """``meta.json`` of the run, its status as seen now (``crashed`` for a dead run)."""
        from swarm_runtime.storage.status import observed_status, read_meta

        run_dir = self._run_dir(run_id)
        meta = read_meta(run_dir)
        if meta is None:
            from swarm_runtime.storage.queued import read_queued

            return {"run_id": run_id, "status": "queued" if read_queued(run_dir) else "pending"}
        alive = self.is_running(run_id)
        return {**meta, "status": meta.get("status") if alive else observed_status(run_dir, meta)}

    def list_summaries(self) -> list[dict[str, Any]]:
        """Every run in the runs dir, newest first."""
        if not self.runs_dir.is_dir():
            return []
        runs = sorted((p.name for p in self.runs_dir.glob("run-*") if p.is_dir()), reverse=True)
        return [self.get_summary(run_id) for run_id in runs]

    def get_events(self, run_id: str, since_seq: int = 0) -> list[dict[str, Any]]:
        """The run's events after ``since_seq`` (a torn last line is left out)."""
        from swarm_runtime.storage.store import read_event_log

        path = self._run_dir(run_id) / "events.jsonl"
        if not path.exists():
            return []
        events = read_event_log(path).events
        return [e for e in events if isinstance(e.get("seq"), int) and e["seq"] > since_seq]

    def _run_dir(self, run_id: str) -> Path:
        from swarm_runtime.ids import RUN_ID_RE

        if not RUN_ID_RE.fullmatch(run_id) or not (self.runs_dir / run_id).is_dir():
            raise RunControlError(f"no run {run_id!r} in {self.runs_dir}")
        return self.runs_dir / run_id


def orchestrator_factory(
    engine_id: str,
    runs_dir: Path | None,
    flows_dir: Path | None,
    mode: str | None,
    env: Mapping[str, str],
    *,
    scenario: Any = None,
    plugins: SwarmPlugins | None = None,
) -> tuple[Path, OrchestratorFactory]:
    """The runs dir and a factory of orchestrators of ``engine_id`` as ``env`` sets them.

    ``plugins``: whose listeners hear the runs (default: the process's plugins).
    """
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.flow.registry import FlowRegistry, default_flows_dir
    from swarm_runtime.plugins import process_plugins

    settings = resolve_settings(env=env, mode=mode, runs_dir=runs_dir, flows_dir=flows_dir)
    flows = FlowRegistry(default_flows_dir(settings.flows_dir))
    engine = EngineChoice(engine_id=engine_id, mode=settings.mode, scenario=scenario)
    listening = plugins or process_plugins()

    def factory(sleep: Callable[[float], None]) -> Orchestrator:
        deps = RunDeps(sleep=sleep, plugins=listening)
        return build_orchestrator(settings, flows, env=env, deps=deps, engine=engine)

    return settings.runs_dir, factory


def run_spec_from(raw: Mapping[str, Any]) -> RunSpec:
    unknown = set(raw) - {"flows", "params", "backend", "initiator", "start_step", "end_step"}
    if unknown:
        raise ConfigError(f"run spec: unknown key(s) {', '.join(sorted(unknown))}")
    try:
        return RunSpec.from_document(raw)
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"a run spec needs 'flows', a list of flow keys ({exc})") from None
