"""What the studio's buttons do: start, pause, stop and resume runs, through the run service.

A run started from the page runs in a worker of this process
(docs/run-control.md#backends-and-the-run-service), heard by the process's plugins and the studio's
own listeners (its run index). Pause and stop go to that worker; a run another process is running
(``swarm run`` in a terminal) is asked through its control file instead, as ``swarm pause|stop``
does. Resume continues a paused, stopped or crashed run in a worker here, with the backend and mode
it was made with.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from swarm_runtime.errors import RunControlError, SwarmUsageError
from swarm_runtime.orchestrator.assembly import BackendBase
from swarm_runtime.service import known_backends, new_backend
from swarm_runtime.studio.files import RunFiles

MODES = ("stub", "sdk", "cli")
"""The modes a run can be started in from the page (stub is the default)."""


class RunActions:
    """Starts and controls runs of one runs dir, each backend and mode built once."""

    def __init__(
        self,
        runs_dir: Path,
        flows_dir: Path | None,
        *,
        env: Mapping[str, str] | None = None,
        listeners: Sequence[object] = (),
    ) -> None:
        from swarm_runtime.plugins import process_plugins

        self.files = RunFiles(runs_dir)
        self.flows_dir = flows_dir
        self.env = os.environ if env is None else env
        self.plugins = process_plugins().with_listeners(*listeners)
        """Who hears the runs this studio starts and resumes."""
        self._backends: dict[tuple[str, str], BackendBase] = {}
        self._lock = threading.Lock()

    def backend(self, backend_id: str, mode: str) -> BackendBase:
        """The backend ``backend_id`` in ``mode``, made on first use."""
        if backend_id not in known_backends():
            raise SwarmUsageError(
                f"backend {backend_id!r} is not known; known: {', '.join(known_backends())}"
            )
        if mode not in MODES:
            raise SwarmUsageError(f"mode {mode!r} is not one of {', '.join(MODES)}")
        with self._lock:
            key = (backend_id, mode)
            if key not in self._backends:
                self._backends[key] = new_backend(
                    backend_id,
                    runs_dir=self.files.runs_dir,
                    flows_dir=self.flows_dir,
                    mode=mode,
                    env=self.env,
                    plugins=self.plugins,
                )
            return self._backends[key]

    def start(self, body: Any) -> str:
        """Start a run from a request body ``{flows, backend, mode}``; its id."""
        if not isinstance(body, dict):
            raise SwarmUsageError("the body must be a JSON object {flows, backend, mode}")
        unknown = set(body) - {"flows", "backend", "mode", "params"}
        if unknown:
            raise SwarmUsageError(f"unknown field(s) {', '.join(sorted(unknown))}")
        flows = body.get("flows")
        if not isinstance(flows, list) or not flows or not all(isinstance(f, str) for f in flows):
            raise SwarmUsageError("'flows' must be a non-empty list of flow keys")
        backend_id = str(body.get("backend") or "claude-step-orchestrator")
        mode = str(body.get("mode") or "stub")
        params = body.get("params") or {}
        if not isinstance(params, dict):
            raise SwarmUsageError("'params' must be an object")
        return self.backend(backend_id, mode).start(
            {"flows": flows, "params": params, "initiator": "studio"}
        )

    def working_on(self, run_id: str) -> bool:
        """Whether a worker of this studio is running (or closing) ``run_id`` now."""
        return self._worker_backend(run_id) is not None

    def _worker_backend(self, run_id: str) -> BackendBase | None:
        with self._lock:
            backends = list(self._backends.values())
        for backend in backends:
            if backend.is_running(run_id):
                return backend
        return None

    def request(self, run_id: str, action: str) -> str:
        """Pause or stop a running run; what was done, in words."""
        from swarm_runtime.orchestrator.checkpoint import ask_running_process

        run_dir = self.files.run_dir(run_id)
        reason = f"{action} requested from the studio"
        backend = self._worker_backend(run_id)
        if backend is not None:
            getattr(backend, action)(run_id, reason)
            return f"asked run {run_id} to {action} at its next step boundary"
        holder = ask_running_process(run_dir, action, reason)
        return f"asked run {run_id} ({holder}) to {action} at its next step boundary"

    def resume(self, run_id: str) -> str:
        """Resume a paused, stopped or crashed run in a worker of this process."""
        from swarm_runtime.orchestrator.resume import read_run_spec

        run_dir = self.files.run_dir(run_id)
        _, spec = read_run_spec(run_dir)
        mode = str(spec.get("mode") or "stub")
        if mode not in MODES:
            raise RunControlError(
                f"run {run_id} ran in mode {mode!r}; the studio resumes {', '.join(MODES)} runs "
                f"(use 'swarm resume {run_id} --mode …')"
            )
        backend_id = str(spec.get("backend") or "claude-step-orchestrator")
        if backend_id == "celery" and not self.env.get("SWARM_BROKER_URL"):
            backend_id = "claude-step-orchestrator"  # no broker here: resumed in this process
        self.backend(backend_id, mode).resume(run_id)
        return f"resumed run {run_id}"

    def shutdown(self) -> None:
        """Cancel the runs still going in this process's workers."""
        with self._lock:
            backends = list(self._backends.values())
        for backend in backends:
            backend.shutdown()
