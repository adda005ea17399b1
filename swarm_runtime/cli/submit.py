"""``swarm run --backend celery``: hand the run to the workers, then follow it or detach."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from swarm_runtime.cli.common import EXIT_INTERRUPTED, EXIT_OK


def add_celery_options(parser: argparse.ArgumentParser) -> None:
    """``--broker``, ``--queue`` and ``--detach`` of ``swarm run --backend celery``."""
    parser.add_argument(
        "--broker",
        metavar="URL",
        help="--backend celery: the broker, e.g. redis://host:6379/0 (also SWARM_BROKER_URL)",
    )
    parser.add_argument(
        "--queue", default="swarm", metavar="NAME", help="--backend celery: queue (default swarm)"
    )
    parser.add_argument(
        "--detach",
        action="store_true",
        help="--backend celery: print the run id and return; the workers run it",
    )


def submit_and_follow(
    args: argparse.Namespace,
    prepare: Callable[[argparse.Namespace], Any],
    report: Callable[[Any, int], int],
    began: float,
) -> int:
    """Queue the run (its dir made here); print its id (``--detach``) or follow it to the end."""
    from swarm_runtime.cli.render import listeners
    from swarm_runtime.distributed.app import BROKER_ENV, import_celery, shown_url
    from swarm_runtime.distributed.follow import Patience, follow
    from swarm_runtime.distributed.submit import Submitter
    from swarm_runtime.errors import SwarmUsageError

    if args.backend != "celery":
        raise SwarmUsageError("--broker and --detach are for --backend celery")
    import_celery()
    broker = args.broker or os.environ.get(BROKER_ENV, "")
    submitter = Submitter(broker, queue=args.queue)
    submitter.check()  # an unreachable broker is said before any run is made
    orchestrator, spec, cassettes = prepare(args)
    if cassettes is not None:
        raise SwarmUsageError(
            "--backend celery runs stub, sdk and cli modes; a record or replay run runs here "
            "(leave --backend out)"
        )
    run_id = submitter.submit(orchestrator, spec)
    if args.detach:
        print(run_id, flush=True)
        return EXIT_OK
    print(
        f"swarm: run {run_id} queued on {shown_url(broker)} (queue {args.queue}); following it "
        "- Ctrl-C stops following, not the run",
        file=sys.stderr,
        flush=True,
    )
    try:
        outcome = follow(
            orchestrator.runs_dir / run_id,
            plugins=listeners(args.progress),
            patience=Patience(lambda text: print(f"swarm: {text}", file=sys.stderr, flush=True)),
        )
    except KeyboardInterrupt:
        print(
            f"swarm: stopped following run {run_id}; the workers go on with it "
            f"(swarm stop {run_id} stops it)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return report(outcome, int((time.monotonic() - began) * 1000))
