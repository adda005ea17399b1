"""What every run-service backend shares: reading runs, and building orchestrators.

A backend (SPEC §8.1) starts runs and controls them; where they run differs (threads of
this process in :mod:`swarm_runtime.service`, ``swarm worker`` processes in
:mod:`swarm_runtime.distributed.backend`), but every backend reads runs the same way, from
the run dirs: a run's summary is its ``meta.json`` with its status as seen now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import ConfigError, RunControlError
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.orchestrator.runner import Orchestrator

if TYPE_CHECKING:
    from swarm_runtime.plugins import SwarmPlugins

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
    from swarm_runtime.orchestrator.assembly import build_orchestrator
    from swarm_runtime.orchestrator.deps import EngineChoice, RunDeps
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
