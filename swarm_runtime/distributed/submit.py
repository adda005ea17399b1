"""Handing runs to the workers: the run dir made here, the task sent through the broker.

The submitter makes the run's directory and ``spec.json`` exactly as a local run would
(so a bad flow or flag fails here, before anything is queued), marks it queued with a new
ticket, lets its lock go and sends the task. A run that could not be sent is removed
again, so no half-made run is left behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.distributed.app import DEFAULT_QUEUE, TASK_NAME, check_broker, make_app
from swarm_runtime.errors import ConfigError, RunControlError
from swarm_runtime.storage.queued import clear_queued, new_ticket, write_queued
from swarm_runtime.timeutil import format_ts, system_clock
from swarm_runtime.versions import PACKAGE_VERSION

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.plan import RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator


class Submitter:
    """Sends runs to the workers listening on ``queue`` of the broker at ``broker``."""

    def __init__(self, broker: str, *, queue: str = DEFAULT_QUEUE) -> None:
        self.broker = broker
        self.queue = queue
        self._app: Any = None

    def check(self) -> None:
        """Reach the broker once (ConfigError naming the URL), before any run is made."""
        if self._app is None:
            check_broker(self.broker)
            self._app = make_app(self.broker, lease_s=30.0, queue=self.queue)

    def submit(self, orchestrator: Orchestrator, spec: RunSpec) -> str:
        """Make the run (its directory and spec) and queue it; its id."""
        from swarm_runtime.orchestrator.recorder import remove_run_dir

        self.check()
        prepared = orchestrator.prepare(spec)
        ticket = new_ticket()
        try:
            write_queued(prepared.path, ticket, queue=self.queue, since=_now())
        finally:
            prepared.hand_over()
        try:
            self._send(prepared.run_id, ticket)
        except BaseException:
            remove_run_dir(prepared.path)  # never sent: no run is left half made
            raise
        return prepared.run_id

    def requeue(self, run_dir: Path) -> None:
        """Hand a paused, stopped or crashed run to the workers again (they resume it)."""
        from swarm_runtime.storage.lock import live_holder
        from swarm_runtime.storage.status import observed_status

        self.check()
        status = observed_status(run_dir)
        holder = live_holder(run_dir)
        if holder is not None:
            raise RunControlError(f"run {run_dir.name} is being run by {holder.describe()}")
        if status not in ("paused", "stopped", "crashed", "queued", "refused"):
            raise RunControlError(
                f"run {run_dir.name} is {status}; only a paused, stopped or crashed run can be "
                "resumed - start a new run instead"
            )
        reason = _blocked_reason(run_dir)
        if reason is not None:
            raise RunControlError(
                f"run {run_dir.name} is blocked: {reason}; resume it here with "
                f"'swarm resume {run_dir.name} --input TEXT'"
            )
        ticket = new_ticket()
        write_queued(run_dir, ticket, queue=self.queue, since=_now())
        try:
            self._send(run_dir.name, ticket)
        except BaseException:
            clear_queued(run_dir)
            raise

    def _send(self, run_id: str, ticket: str) -> None:
        try:
            self._app.send_task(
                TASK_NAME,
                args=[run_id, ticket, PACKAGE_VERSION],
                queue=self.queue,
                retry=True,
                retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
            )
        except Exception as exc:  # the broker went away between the check and the send
            raise ConfigError(
                f"could not hand run {run_id} to the broker: {str(exc) or type(exc).__name__}"
            ) from None


def _now() -> str:
    return format_ts(system_clock())


def _blocked_reason(run_dir: Path) -> str | None:
    """Why the run's checkpoint says it is blocked on a step, or None."""
    from swarm_runtime.orchestrator.resume import read_json

    checkpoint = read_json(run_dir / "checkpoint.json")
    blocked = checkpoint.get("blocked") if isinstance(checkpoint, dict) else None
    return str(blocked.get("reason", "blocked")) if isinstance(blocked, dict) else None
