"""``swarm worker``: a Celery worker that runs runs handed to it.

See docs/run-control.md#runs-across-machines.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm_runtime.cli.common import path_arg


def add_parser(commands: Any) -> None:
    """Register ``swarm worker``."""
    text = (
        "run runs from a Celery broker (Redis) on this machine: "
        "pip install 'swarm-stepwise[celery]'"
    )
    parser = commands.add_parser(
        "worker",
        help=text,
        description=text + ". Every worker and submitter must see the same runs dir at the same "
        "path (shared storage); the run dir stays the single source of truth.",
    )
    parser.add_argument(
        "--broker", help="Celery broker URL, e.g. redis://host:6379/0 (also SWARM_BROKER_URL)"
    )
    parser.add_argument("--runs-dir", type=path_arg, required=True, help="the shared runs dir")
    parser.add_argument(
        "--concurrency", type=_count, default=1, metavar="N", help="runs at once (default 1)"
    )
    parser.add_argument("--queue", default="swarm", metavar="NAME", help="queue (default swarm)")
    parser.add_argument(
        "--lease",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long a run's lease lasts unless renewed (default 30); a lost worker's runs "
        "are taken up again about this long after it is lost",
    )
    parser.add_argument(
        "--give-up-after",
        type=_seconds_long,
        default=300.0,
        metavar="SECONDS",
        help="a task whose run is not in the runs dir (deleted, or storage not mounted) is "
        "delivered again, for a worker that sees it, for about this long, then dropped "
        "(default 300)",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Check the broker and the runs dir, then serve until stopped."""
    from swarm_runtime.distributed.app import BROKER_ENV, check_broker, import_celery
    from swarm_runtime.distributed.worker import WorkerOptions, run_worker

    import_celery()
    broker = args.broker or os.environ.get(BROKER_ENV, "")
    check_broker(broker)
    runs_dir = Path(args.runs_dir)
    check_writable(runs_dir)
    return run_worker(
        WorkerOptions(
            broker=broker,
            runs_dir=runs_dir,
            concurrency=args.concurrency,
            queue=args.queue,
            lease_s=args.lease,
            give_up_after_s=args.give_up_after,
        )
    )


def check_writable(runs_dir: Path) -> None:
    """ConfigError naming ``runs_dir`` when this process cannot make runs' files in it."""
    import tempfile

    from swarm_runtime.errors import ConfigError

    if not runs_dir.is_dir():
        raise ConfigError(
            f"runs dir {runs_dir} is not a directory: a worker uses the submitters' runs dir "
            "(shared storage, the same path everywhere), it does not make one"
        )
    try:
        with tempfile.NamedTemporaryFile(dir=runs_dir, prefix=".swarm-worker-", suffix=".tmp"):
            pass
    except OSError as exc:
        raise ConfigError(
            f"runs dir {runs_dir}: this worker cannot write there ({exc.strerror or exc}); "
            "give the worker's user write access to the shared runs dir"
        ) from None


def _bounded(convert: Callable[[str], float], low: float, high: float, what: str) -> Any:
    """An argparse type: ``convert(text)`` within ``low``..``high``, else exit 2 saying ``what``."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not allowed: give {what}")
        return value

    return parse


_count = _bounded(int, 1, 256, "a whole number 1..256")
_seconds = _bounded(float, 1.0, 3600.0, "seconds, 1..3600")
_seconds_long = _bounded(float, 1.0, 86400.0, "seconds, 1..86400")
