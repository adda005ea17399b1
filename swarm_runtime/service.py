"""The run service: backends that start runs in workers and control them.

``get_backend(id)`` gives the backend of ``claude-step-orchestrator``,
``gemini-step-orchestrator``, ``celery`` (runs on ``swarm worker`` processes,
docs/run-control.md#runs-across-machines) or one added with :func:`register_backend`. A backend's
``start(spec)`` creates the run directory and returns its id at once; the run goes on in
a worker thread. ``pause``, ``stop`` and ``cancel`` are requests the run acts on at its
next step boundary (``cancel`` also cuts short the engine call or wait under way);
``resume`` continues a paused, stopped, blocked or crashed run in a new worker. Each run
has its own orchestrator, so runs started at once share nothing but the runs dir.

    backend = get_backend("claude-step-orchestrator", runs_dir=Path("runs"))
    run_id = backend.start(RunSpec(flows=("signal",)))
    summary = backend.wait(run_id, timeout=60)

See docs/run-control.md#backends-and-the-run-service.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import ConfigError, RunControlError
from swarm_runtime.orchestrator.assembly import (
    BackendBase,
    OrchestratorFactory,
    orchestrator_factory,
    run_spec_from,
)
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.record import Record, replace

if TYPE_CHECKING:
    from swarm_runtime.plugins import SwarmPlugins

ResumeFactory = Callable[[Path, Callable[[float], None]], Orchestrator]
"""Builds the orchestrator that resumes the run dir given, with that sleep."""

BACKENDS = {"claude-step-orchestrator": "claude-step", "gemini-step-orchestrator": "gemini-step"}
"""The built-in backends and the engine each runs steps with."""


class _Worker(Record):
    orchestrator: Orchestrator
    thread: threading.Thread
    cancelled: threading.Event
    result: list[RunOutcome | BaseException]


class Backend(BackendBase):
    """Starts runs of one engine in worker threads, and reads and controls them."""

    def __init__(
        self,
        backend_id: str,
        runs_dir: Path,
        factory: OrchestratorFactory,
        env: Mapping[str, str] | None = None,
        resume: ResumeFactory | None = None,
        plugins: SwarmPlugins | None = None,
    ) -> None:
        super().__init__(backend_id, runs_dir)
        self._factory = factory
        environ: Mapping[str, str] = os.environ if env is None else env
        self._resume: ResumeFactory = resume or (
            lambda run_dir, sleep: _resumed(run_dir, environ, sleep, plugins)
        )
        """Builds a resumed run's orchestrator: as the run was made (its spec.json), through
        the one resume; a backend may pass its own to wrap what it injects (the sleep)."""
        self._workers: dict[str, _Worker] = {}
        self._lock = threading.Lock()

    # -- starting ------------------------------------------------------------------------

    def start(self, spec: RunSpec | Mapping[str, Any]) -> str:
        """Create the run (its directory and id) and run it in a worker; return its id."""
        run_spec = spec if isinstance(spec, RunSpec) else run_spec_from(spec)
        if run_spec.backend != self.backend_id:
            run_spec = replace(run_spec, backend=self.backend_id)
        return self._launch(lambda orchestrator: orchestrator.prepare(run_spec))

    def resume(self, run_id: str, *, external_input: str | None = None) -> None:
        """Continue a paused, stopped, blocked or crashed run in a new worker."""
        run_dir = self._run_dir(run_id)
        previous = self._workers.get(run_id)
        if previous is not None and previous.thread.is_alive():
            from swarm_runtime.storage.status import read_meta

            if (read_meta(run_dir) or {}).get("status") not in ("pending", "running"):
                # Paused or stopped, its worker is still closing the run (and holds the
                # lock): a resume asked for at that instant waits for it, not fails.
                previous.thread.join(30)
        self._launch(
            lambda orchestrator: orchestrator.prepare_resume(
                run_dir, external_input=external_input
            ),
            # As the run was made (its spec.json), not as this service makes new runs.
            factory=lambda sleep: self._resume(run_dir, sleep),
        )

    def _launch(
        self, prepare: Callable[[Orchestrator], Any], factory: OrchestratorFactory | None = None
    ) -> str:
        cancelled = threading.Event()

        def sleep(seconds: float) -> None:  # engines and retries wait here; cancel wakes it
            if cancelled.wait(seconds):
                raise KeyboardInterrupt  # turned into an abort of the step by the run

        orchestrator = (factory or self._factory)(sleep)
        prepared = prepare(orchestrator)  # errors (a bad flow, a live run) raise here
        result: list[RunOutcome | BaseException] = []

        def work() -> None:
            try:
                result.append(prepared.execute())
            except BaseException as exc:
                result.append(exc)

        thread = threading.Thread(target=work, name=f"swarm-{prepared.run_id}", daemon=True)
        with self._lock:
            self._workers[prepared.run_id] = _Worker(orchestrator, thread, cancelled, result)
        thread.start()
        return str(prepared.run_id)

    # -- control -------------------------------------------------------------------------

    def pause(self, run_id: str, reason: str = "") -> None:
        """Pause the run at its next step boundary."""
        self._live(run_id).orchestrator.control.request("pause", reason)

    def stop(self, run_id: str, reason: str = "") -> None:
        """Stop the run at its next step boundary (it ends ``stopped``, resumable)."""
        self._live(run_id).orchestrator.control.request("stop", reason)

    def cancel(self, run_id: str, reason: str = "") -> None:
        """Stop the run now: the step under way is cut short and closed as interrupted."""
        worker = self._live(run_id)
        worker.orchestrator.control.request("cancel", reason or "cancelled")
        worker.cancelled.set()

    def wait(self, run_id: str, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the run's worker to end; its summary. TimeoutError if it does not."""
        worker = self._workers.get(run_id)
        if worker is not None:
            worker.thread.join(timeout)
            if worker.thread.is_alive():
                raise TimeoutError(f"run {run_id} is still running after {timeout} s")
            if worker.result and isinstance(worker.result[0], BaseException):
                raise worker.result[0]
        return self.get_summary(run_id)

    # -- reading (the rest is BackendBase's) ------------------------------------------------

    def is_running(self, run_id: str) -> bool:
        """Whether a worker of this backend is running ``run_id`` now."""
        worker = self._workers.get(run_id)
        return worker is not None and worker.thread.is_alive()

    def _live(self, run_id: str) -> _Worker:
        worker = self._workers.get(run_id)
        if worker is None or not worker.thread.is_alive():
            status = self.get_summary(run_id).get("status")
            raise RunControlError(f"run {run_id} is {status}, not running in this service")
        return worker

    def shutdown(self, timeout: float = 30.0) -> None:
        """Cancel every run still going and wait for the workers to end."""
        for run_id, worker in list(self._workers.items()):
            if worker.thread.is_alive():
                self.cancel(run_id, "the run service shut down")
        for worker in list(self._workers.values()):
            worker.thread.join(timeout)
        self._workers.clear()


_FACTORIES: dict[str, Callable[..., BackendBase]] = {}
_BACKENDS: dict[tuple[str, str], BackendBase] = {}


def register_backend(backend_id: str, factory: Callable[..., BackendBase]) -> None:
    """Add a backend: ``factory(**options)`` returns a backend (a :class:`BackendBase`)."""
    _FACTORIES[backend_id] = factory


def get_backend(
    backend_id: str,
    *,
    runs_dir: Path | None = None,
    flows_dir: Path | None = None,
    mode: str | None = None,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> BackendBase:
    """The backend ``backend_id``, one per id and runs dir (settings from ``env``)."""
    key = (backend_id, str(runs_dir))
    existing = _BACKENDS.get(key)
    if existing is not None:
        return existing
    backend = new_backend(
        backend_id, runs_dir=runs_dir, flows_dir=flows_dir, mode=mode, env=env, **options
    )
    _BACKENDS[key] = backend
    return backend


def new_backend(
    backend_id: str,
    *,
    runs_dir: Path | None = None,
    flows_dir: Path | None = None,
    mode: str | None = None,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> BackendBase:
    """A new backend ``backend_id`` of its own, not shared through :func:`get_backend`."""
    environ = os.environ if env is None else env
    if backend_id in _FACTORIES:
        return _FACTORIES[backend_id](
            runs_dir=runs_dir, flows_dir=flows_dir, mode=mode, env=environ, **options
        )
    if backend_id in BACKENDS:
        return _builtin(backend_id, runs_dir, flows_dir, mode, environ, **options)
    if backend_id == "celery":
        from swarm_runtime.distributed.backend import celery_backend

        return celery_backend(runs_dir, flows_dir, mode, environ, **options)
    raise ConfigError(f"no backend {backend_id!r}; known: {', '.join(known_backends())}")


def known_backends() -> list[str]:
    """The ids of the built-in and registered backends, sorted."""
    return sorted({*BACKENDS, "celery", *_FACTORIES})


def _builtin(
    backend_id: str,
    runs_dir: Path | None,
    flows_dir: Path | None,
    mode: str | None,
    env: Mapping[str, str],
    **options: Any,
) -> Backend:
    scenario = options.pop("scenario", None)
    plugins = options.pop("plugins", None)
    if options:
        raise ConfigError(
            f"backend {backend_id!r}: unknown option(s) {', '.join(sorted(options))}; "
            "allowed: scenario, plugins"
        )
    runs, factory = orchestrator_factory(
        BACKENDS[backend_id], runs_dir, flows_dir, mode, env, scenario=scenario, plugins=plugins
    )
    return Backend(backend_id, runs, factory, env=env, plugins=plugins)


def reset_backends() -> None:
    """Cancel and forget every backend's runs (the ``isolated_runs_env`` fixture calls it)."""
    for backend in list(_BACKENDS.values()):
        backend.shutdown()
    _BACKENDS.clear()


def _resumed(
    run_dir: Path,
    env: Mapping[str, str],
    sleep: Callable[[float], None],
    plugins: SwarmPlugins | None,
) -> Orchestrator:
    """A resumed run's orchestrator, through the one resume (plan cycles too)."""
    from swarm_runtime.plan.resume import orchestrator_to_resume

    return orchestrator_to_resume(run_dir, env=env, sleep=sleep, plugins=plugins)
