"""``get_backend("celery")``: the run service's backend whose runs go to the workers.

Runs are made here and run by ``swarm worker`` processes (docs/run-control.md#runs-across-machines);
everything else is read from and asked through the run dir, as for a run of any other process:
``pause`` and ``stop`` write a request the run's holder acts on at its next step boundary,
``resume`` hands the run to the workers again, ``wait`` follows its events until it ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.distributed.app import BROKER_ENV, DEFAULT_QUEUE
from swarm_runtime.distributed.follow import follow
from swarm_runtime.distributed.submit import Submitter
from swarm_runtime.errors import ConfigError, RunControlError
from swarm_runtime.orchestrator.assembly import (
    BackendBase,
    OrchestratorFactory,
    orchestrator_factory,
    run_spec_from,
)
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.record import replace
from swarm_runtime.timeutil import interruptible_sleep

if TYPE_CHECKING:
    from swarm_runtime.plugins import SwarmPlugins


class CeleryBackend(BackendBase):
    """Starts runs on the workers of a Celery broker and reads and controls them."""

    def __init__(
        self,
        runs_dir: Path,
        factory: OrchestratorFactory,
        submitter: Submitter,
        plugins: SwarmPlugins | None = None,
    ) -> None:
        super().__init__("celery", runs_dir)
        self._factory = factory
        self.submitter = submitter
        self.plugins = plugins
        """Whose listeners hear what :meth:`wait` follows (default: the process's plugins)."""

    def start(self, spec: RunSpec | Mapping[str, Any]) -> str:
        """Make the run here and queue it for the workers; its id."""
        run_spec = spec if isinstance(spec, RunSpec) else run_spec_from(spec)
        if run_spec.backend != self.backend_id:
            run_spec = replace(run_spec, backend=self.backend_id)
        return self.submitter.submit(self._factory(interruptible_sleep), run_spec)

    def resume(self, run_id: str, *, external_input: str | None = None) -> None:
        """Hand a paused, stopped or crashed run to the workers again."""
        if external_input is not None:
            raise RunControlError(
                f"run {run_id}: a blocked run is resumed with its input where you are: "
                f"swarm resume {run_id} --input TEXT"
            )
        self.submitter.requeue(self._run_dir(run_id))

    def pause(self, run_id: str, reason: str = "") -> None:
        """Ask the worker running the run to pause it at its next step boundary."""
        self._ask(run_id, "pause", reason)

    def stop(self, run_id: str, reason: str = "") -> None:
        """Ask the worker running the run to stop it at its next step boundary."""
        self._ask(run_id, "stop", reason)

    def cancel(self, run_id: str, reason: str = "") -> None:
        """As :meth:`stop`: a step under way on another machine is not cut short."""
        self._ask(run_id, "stop", reason or "cancelled")

    def _ask(self, run_id: str, request: str, reason: str) -> None:
        from swarm_runtime.orchestrator.checkpoint import ask_running_process

        ask_running_process(self._run_dir(run_id), request, reason or f"{request} requested")

    def wait(self, run_id: str, timeout: float | None = None) -> dict[str, Any]:
        """Wait until the run ends or pauses; its summary. TimeoutError if it does not.

        The run's events are told to the listeners as they come (``followed=True``).
        """
        follow(self._run_dir(run_id), timeout=timeout, plugins=self.plugins)
        return self.get_summary(run_id)

    def is_running(self, run_id: str) -> bool:
        """Whether a live holder (a worker, here or elsewhere) runs ``run_id`` now."""
        from swarm_runtime.storage.lock import live_holder

        return live_holder(self._run_dir(run_id)) is not None


def celery_backend(
    runs_dir: Path | None,
    flows_dir: Path | None,
    mode: str | None,
    env: Mapping[str, str],
    **options: Any,
) -> CeleryBackend:
    """The celery backend.

    Its options: ``broker`` (or ``SWARM_BROKER_URL``), ``queue``, ``scenario``, ``plugins``.
    """
    broker = options.pop("broker", None) or env.get(BROKER_ENV, "")
    queue = options.pop("queue", DEFAULT_QUEUE)
    scenario = options.pop("scenario", None)
    plugins = options.pop("plugins", None)
    if options:
        raise ConfigError(
            f"backend 'celery': unknown option(s) {', '.join(sorted(options))}; "
            "allowed: broker, queue, scenario, plugins"
        )
    if not broker:
        raise ConfigError(f"backend 'celery' needs broker=URL or {BROKER_ENV}")
    runs, factory = orchestrator_factory(
        "claude-step", runs_dir, flows_dir, mode, env, scenario=scenario
    )
    return CeleryBackend(runs, factory, Submitter(broker, queue=queue), plugins)
