"""``swarm worker``'s process: a Celery worker whose one task runs runs.

Runs go on in threads of the worker process (``--concurrency``), each with its own
orchestrator, as in the run service; a run that finds its run held by a live lease asks
to be delivered again a little later instead of holding a thread while it waits. A worker
that loses the broker says so and connects again, also when it notices only by failing to
acknowledge a task.

See docs/run-control.md#runs-across-machines.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from swarm_runtime.distributed.app import TASK_NAME, make_app, shown_url
from swarm_runtime.distributed.task import (
    BadTask,
    Delivery,
    NotInRunsDir,
    handle,
    read_delivery,
)
from swarm_runtime.errors import SwarmError
from swarm_runtime.record import Record


class WorkerOptions(Record):
    """What ``swarm worker`` was asked for."""

    broker: str
    runs_dir: Path
    concurrency: int = 1
    queue: str = "swarm"
    lease_s: float = 30.0
    give_up_after_s: float = 300.0
    """How long a task whose run no worker that took it could see is delivered again."""


_SAID = {
    "ran": "ran (it ended or paused)",
    "done": "nothing to do (ended, paused or handed over again)",
    "wait": "held by a live lease elsewhere; delivered again later",
    "refused": "refused (the reason is in its refused.json)",
}


def retry_after(lease_s: float) -> float:
    """How long a delivery that found its run held waits before it is delivered again."""
    return max(0.5, min(lease_s / 3, 10.0))


class TaskServer:
    """What the worker does with each delivery of the task, and what it says of it."""

    def __init__(self, options: WorkerOptions) -> None:
        self.options = options
        self.runs_dir = options.runs_dir.resolve()
        self.host = os.uname().nodename
        self.wait_s = retry_after(options.lease_s)

    def serve(self, task: Any, args: Sequence[object], kwargs: Mapping[str, object]) -> str:
        """Act on one delivery (``task`` is Celery's bound task, for its retries)."""
        try:
            delivery = read_delivery(args, kwargs)
            verdict = handle(self.runs_dir, delivery, host=self.host)
        except BadTask as exc:  # can never be run: acknowledged and said once, never again
            _say(f"dropped a task: {exc}")
            return "dropped"
        except NotInRunsDir as exc:
            return self._unseen(task, delivery, exc)
        except SwarmError as exc:  # its lease lost, …: said once
            _say(f"run {delivery.run_id}: {exc}")
            return "error"
        _say(f"run {delivery.run_id}: {_SAID[verdict]}")
        if verdict == "wait":
            raise task.retry(countdown=self.wait_s, kwargs={})
        return verdict

    def _unseen(self, task: Any, delivery: Delivery, exc: NotInRunsDir) -> str:
        """Kept for a worker that sees the run for about ``give_up_after_s``, then dropped.

        Said on the first delivery and when dropped, not on every one between.
        """
        run, limit = f"run {delivery.run_id}", self.options.give_up_after_s
        if delivery.unseen == 0:
            _say(f"{run}: {exc}; delivered again for up to {limit:g} s")
        if delivery.unseen * self.wait_s >= limit:
            _say(
                f"{run}: dropped its task: not in the runs dir of the workers that took it for "
                f"{limit:g} s (deleted, or their shared storage is not mounted)"
            )
            return "dropped"
        raise task.retry(countdown=self.wait_s, kwargs={"unseen": delivery.unseen + 1})


def run_worker(options: WorkerOptions) -> int:
    """Start the worker and serve until it is told to stop; its exit code."""
    from celery import signals

    from swarm_runtime.plugins import process_plugins
    from swarm_runtime.storage.lock import set_lease_seconds

    set_lease_seconds(options.lease_s)
    # Loaded now (one that fails is said now), and heard by every run of this worker.
    plugins = process_plugins().names()
    app = make_app(options.broker, lease_s=options.lease_s, queue=options.queue)
    app.conf.broker_connection_max_retries = None  # a worker waits out any broker outage
    server = TaskServer(options)

    @app.task(name=TASK_NAME, bind=True, max_retries=None, acks_late=True)  # type: ignore[untyped-decorator]
    def run(self: Any, *args: Any, **kwargs: Any) -> str:
        return server.serve(self, args, kwargs)

    def ready(**_kwargs: Any) -> None:
        _say(
            f"ready on {shown_url(options.broker)}, queue {options.queue}, runs dir "
            f"{server.runs_dir}, {options.concurrency} at once, lease {options.lease_s:g} s"
            + (f", plugins: {', '.join(plugins)}" if plugins else "")
        )

    signals.worker_ready.connect(ready, weak=False)
    request_cls, consumer_cls = _reconnecting(shown_url(options.broker))
    run.Request = request_cls
    worker = app.Worker(
        consumer_cls=consumer_cls,
        hostname=f"swarm{os.getpid()}@{server.host}",
        pool="threads",
        concurrency=options.concurrency,
        queues=[options.queue],
        loglevel="WARNING",
        quiet=True,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
    )
    worker.start()
    return int(worker.exitcode or 0)


def _say(text: str) -> None:
    print(f"swarm worker: {text}", file=sys.stderr, flush=True)


def _reconnecting(url: str) -> tuple[type[Any], type[Any]]:
    """Celery's task request and consumer, made to connect again when the broker is lost.

    Celery logs a failed acknowledgement (the broker went away while a run went on) and
    carries on, but kombu's Redis transport still counts that message as unacknowledged:
    a worker that takes one task at a time would never consume again. Here the connection
    error reaches the consumer's loop, which connects again (``broker_connection_retry``)
    on a fresh channel. The message, never acknowledged, is given again after the
    visibility timeout and finds its run ended: delivery stays at least once.
    """
    from celery.exceptions import CPendingDeprecationWarning
    from celery.worker.consumer import Consumer
    from celery.worker.request import Request, logger

    class AckOrReconnect(Request):  # type: ignore[misc]
        acknowledged: bool

        def acknowledge(self) -> None:
            if not self.acknowledged:
                self._on_ack(logger, ())  # no error is "logged and done"
                self.acknowledged = True

        def reject(self, requeue: bool = False) -> None:
            if not self.acknowledged:
                self._on_reject(logger, (), requeue)
                self.acknowledged = True

    class SayReconnects(Consumer):  # type: ignore[misc]
        def on_connection_error_after_connected(self, exc: BaseException) -> None:
            _say(f"lost the broker at {url} ({str(exc) or type(exc).__name__}); connecting again")
            with warnings.catch_warnings():
                # That Celery 6 will cancel the tasks under way: runs here go on (see app.py).
                warnings.simplefilter("ignore", CPendingDeprecationWarning)
                super().on_connection_error_after_connected(exc)

        def on_ready(self) -> None:
            if self.restart_count > 0:  # not its first start
                _say(f"connected to the broker at {url} again; taking runs")
            super().on_ready()

    return AckOrReconnect, SayReconnects
