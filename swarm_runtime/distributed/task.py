"""What a worker does with one delivery of a run's task (docs/run-control.md#runs-across-machines).

Delivery is at least once, so a task may come twice, late, or after its run was resumed
elsewhere. The run dir decides, never the message:

- another package version than the submitter's: refused, both versions said in the run;
- the run has ended (``succeeded``, ``failed``) or was handed over again (a newer
  ticket): nothing to do;
- a live holder's lease (a worker or a shell, here or on another machine): wait for it;
- queued under this delivery's ticket: run it; crashed (its lease stale): resume it from
  its checkpoint; paused or stopped: nothing (``swarm resume`` goes on with it).

A task whose arguments are not a run id, a ticket and a version can never be run: it is
a :class:`BadTask`, dropped. A run id this worker cannot see is :class:`NotInRunsDir`: kept
for a worker that can, for a while.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from swarm_runtime.errors import ConfigError, RunControlError, SwarmUsageError
from swarm_runtime.record import Record
from swarm_runtime.storage.lock import live_holder
from swarm_runtime.storage.queued import read_queued, read_refused, write_refused
from swarm_runtime.storage.status import read_meta
from swarm_runtime.versions import PACKAGE_VERSION

Verdict = Literal["ran", "done", "wait", "refused"]


class NotInRunsDir(ConfigError):
    """The run is not in this worker's runs dir (its shared storage not mounted, another path)."""


class BadTask(ConfigError):
    """A task no worker can ever run: its arguments are not a run id, a ticket and a version."""


class Delivery(Record):
    """One delivery of a run's task: what the message carries."""

    run_id: str
    ticket: str
    version: str
    unseen: int = 0
    """How many deliveries before this one found the run in no worker's runs dir."""


def read_delivery(args: Sequence[object], kwargs: Mapping[str, object]) -> Delivery:
    """The delivery a task's arguments carry; BadTask saying what they hold instead."""
    if len(args) != 3 or not all(isinstance(arg, str) for arg in args):
        raise BadTask(
            f"a task's arguments must be a run id, a ticket and a version (3 strings), not "
            f"{_shown(list(args))}"
        )
    unseen = kwargs.get("unseen", 0)
    if set(kwargs) - {"unseen"} or type(unseen) is not int or unseen < 0:
        raise BadTask(f"a task's options must be at most unseen=N (N >= 0), not {_shown(kwargs)}")
    run_id, ticket, version = (str(arg) for arg in args)
    return Delivery(run_id, ticket, version, unseen)


def _shown(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def decide(run_dir: Path, delivery: Delivery) -> Verdict | Literal["run"]:
    """What to do with ``delivery`` as ``run_dir`` stands now (nothing is changed).

    The holder is looked at before the status: a holder writes its last status (paused,
    stopped) before it lets the lock go, so a status read after the lock was seen free is
    the one it left, never the ``running`` of a moment before.
    """
    held = live_holder(run_dir) is not None
    status = (read_meta(run_dir) or {}).get("status")
    if status in ("succeeded", "failed"):
        return "done"
    if held:
        return "wait"
    queued = read_queued(run_dir)
    if queued is not None:
        return "run" if queued.get("ticket") == delivery.ticket else "done"
    if read_refused(run_dir) is not None:
        return "done"  # refused: it waits for a resume (which queues it afresh)
    if status in ("pending", "running"):
        return "run"  # crashed: its holder is gone (or its lease ran out)
    return "done"  # paused or stopped: resumed on request, not by a stale delivery


def handle(
    runs_dir: Path,
    delivery: Delivery,
    *,
    env: Mapping[str, str] | None = None,
    host: str = "",
    run: Callable[[Path], object] | None = None,
) -> Verdict:
    """Act on one delivery; what came of it (``wait``: deliver it again later)."""
    run_dir = _run_dir(runs_dir, delivery.run_id)
    verdict = decide(run_dir, delivery)
    if verdict != "run":
        return verdict
    where = host or os.uname().nodename
    if delivery.version != PACKAGE_VERSION:
        message = (
            f"a worker on {where} refused run {delivery.run_id}: it runs swarm-stepwise "
            f"{PACKAGE_VERSION}, the run was submitted with {delivery.version}; run workers "
            "of the submitter's version"
        )
        write_refused(run_dir, message, host=where)
        return "refused"
    try:
        (run or (lambda path: _resume(path, env)))(run_dir)
    except RunControlError as exc:
        # Another delivery took the lock between the look and the take, or ended the run.
        if live_holder(run_dir) is not None:
            return "wait"
        if decide(run_dir, delivery) == "run":
            write_refused(run_dir, f"a worker on {where} cannot run it: {exc}", host=where)
            return "refused"
        return "done"
    except SwarmUsageError as exc:  # its flows dir or config is not there on this worker
        write_refused(run_dir, f"a worker on {where} cannot run it: {exc}", host=where)
        return "refused"
    return "ran"


def _resume(run_dir: Path, env: Mapping[str, str] | None) -> None:
    """Run (or resume) the run as its spec.json says, in this thread, to its end or pause."""
    from swarm_runtime.plan.resume import orchestrator_to_resume

    orchestrator = orchestrator_to_resume(run_dir, env=os.environ if env is None else env)
    orchestrator.prepare_resume(run_dir).execute()


def _run_dir(runs_dir: Path, run_id: str) -> Path:
    from swarm_runtime.ids import RUN_ID_RE

    if not RUN_ID_RE.fullmatch(run_id):
        raise BadTask(
            f"{_shown(run_id)} is not a run id (run-YYYYMMDD-HHMMSS-xxxxxx): no worker can run it"
        )
    run_dir = runs_dir / run_id
    if not (run_dir / "spec.json").is_file():
        raise NotInRunsDir(
            f"run {run_id!r} is not in this worker's runs dir {runs_dir}: every worker must "
            "see the submitter's runs dir at the same path (shared storage)"
        )
    return run_dir
