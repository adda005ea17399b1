"""The Celery app of the workers and submitters: one task, configured from the lease.

Delivery is at least once: ``acks_late`` (a task is acknowledged when it ends), one task
prefetched per worker process, a task given back when its worker process is lost. The
broker's visibility timeout is the lease, and its sweep for unacknowledged tasks runs every
quarter of it, so a task lost with its worker is delivered again within about a lease,
not Redis' default hour.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.install import install_command

if TYPE_CHECKING:
    from celery import Celery

TASK_NAME = "swarm.run"
DEFAULT_QUEUE = "swarm"
BROKER_ENV = "SWARM_BROKER_URL"


def import_celery() -> Any:
    """The ``celery`` module, or a ConfigError saying how to install it."""
    try:
        import celery
    except ImportError:
        raise ConfigError(
            f"running on workers needs Celery and Redis: {install_command('celery')}"
        ) from None
    return celery


def make_app(broker: str, *, lease_s: float, queue: str = DEFAULT_QUEUE) -> Celery:
    """A Celery app on ``broker`` whose timeouts derive from a lease of ``lease_s``."""
    celery = import_celery()
    app: Celery = celery.Celery("swarm", broker=broker, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=queue,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        # A run under way goes on through a broker outage: its lease is in the run dir, and
        # its task is acknowledged when it ends or, if that fails, given again and found done.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_transport_options={
            "visibility_timeout": max(1, round(lease_s)),
            "unacked_restore_interval": max(1, round(lease_s / 4)),
            "unacked_restore_throttle": 1,
            "socket_connect_timeout": 5,
        },
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_send_task_events=False,
        worker_enable_remote_control=False,
    )
    return app


def shown_url(url: str) -> str:
    """The broker URL with any password masked, for messages."""
    from kombu.utils.url import maybe_sanitize_url

    try:
        return str(maybe_sanitize_url(url))
    except ValueError:  # not a URL kombu can parse (a bad port, a torn IPv6 address)
        return re.sub(r"(//[^/@]*?:)[^/@]*@", r"\1**@", url)


def check_broker(url: str, *, timeout: float = 5.0) -> None:
    """Connect to the broker once; ConfigError naming the URL when it cannot be reached."""
    if not url:
        raise ConfigError(f"no broker: pass --broker URL or set {BROKER_ENV}")
    app = make_app(url, lease_s=30.0)
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, interval_start=0, timeout=timeout)
    except Exception as exc:  # kombu and redis raise many kinds; each means "not reachable"
        reason = str(exc).strip() or type(exc).__name__
        raise ConfigError(
            f"cannot reach the broker at {shown_url(url)}: {reason}; start Redis there or "
            f"pass another --broker URL (redis://host:6379/0, redis+socket:///path/redis.sock)"
        ) from None
