"""Run control: pause, stop and abort requests, and the engine call they may interrupt.

Requests come from another thread (the run service), from another process (``swarm
pause|stop`` write ``control.json`` into the run dir, read at every step boundary) or from
Ctrl-C. Pause and stop take effect at the next step boundary; an abort (a second Ctrl-C,
SIGTERM, ``cancel``) also cuts short the engine call or retry wait under way. Nothing is
interrupted mid-write, so the run's files stay whole.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.checkpoint import BlockedStep

CONTROL_REQUESTS = ("pause", "stop")


class Interrupted(Exception):
    """Carries a pause, stop or abort out of a step, so the run can be closed cleanly."""

    def __init__(self, *, aborted: bool, pause: bool = False, reason: str = "") -> None:
        what = "aborted" if aborted else "paused" if pause else "stopped"
        super().__init__(f"{what} at a step boundary" if not aborted else what)
        self.aborted = aborted
        self.pause = pause and not aborted
        self.reason = reason or ("interrupted" if aborted else f"{what} on request")


class Blocked(Exception):
    """A step answered ``blocked``: the run pauses with the step open (SPEC §7.3)."""

    def __init__(self, step: BlockedStep) -> None:
        super().__init__(f"{step.flow_key}/{step.step_id} is blocked: {step.reason}")
        self.step = step


def write_request(control_file: Path, request: str, reason: str) -> None:
    """Ask the process running a run to pause or stop (``swarm pause|stop``)."""
    from swarm_runtime.storage.store import write_json_atomic

    document = {"request": request, "reason": reason, "pid": os.getpid()}
    write_json_atomic(control_file, document)


def ask_running_process(run_dir: Path, request: str, reason: str) -> str:
    """Ask the process that runs ``run_dir`` to pause or stop; who it is (``pid … on …``).

    RunControlError when no live process runs it (``swarm resume`` is then the way on).
    """
    from swarm_runtime.errors import RunControlError
    from swarm_runtime.storage.lock import read_holder
    from swarm_runtime.storage.status import observed_status

    status = observed_status(run_dir)
    holder = read_holder(run_dir)
    if status not in ("pending", "running") or holder is None:
        hint = (
            f"; 'swarm resume {run_dir.name}' continues it"
            if status in ("paused", "stopped", "crashed")
            else ""
        )
        raise RunControlError(
            f"run {run_dir.name} is {status}, not running: there is nothing to {request}" + hint
        )
    write_request(run_dir / "control.json", request, reason)
    return holder.describe()


class RunControl:
    """The request flags of one run, and whether an engine call is open."""

    __slots__ = (
        "abort_requested",
        "control_file",
        "in_engine",
        "pause_requested",
        "reason",
        "stop_requested",
    )

    def __init__(self) -> None:
        self.control_file: Path | None = None
        """``control.json`` of the run, read at each boundary (None: no other process)."""
        self.reset()

    def reset(self) -> None:
        """Clear the flags before a new run."""
        self.stop_requested = self.abort_requested = self.in_engine = False
        self.pause_requested = False
        self.reason = ""

    def interrupt(self, reason: str = "interrupted (Ctrl-C)") -> bool:
        """Ctrl-C: ask the run to stop; a second call asks it to abort.

        Returns True when an engine call (or retry wait) is under way and should be
        aborted, so a signal handler raises KeyboardInterrupt there.
        """
        if self.stop_requested:
            self.abort_requested = True
        self.stop_requested = True
        self.reason = self.reason or reason
        return self.abort_requested and self.in_engine

    def request(self, request: str, reason: str = "") -> None:
        """``pause``, ``stop`` or ``cancel`` (stop and abort the step under way)."""
        if request == "pause":
            self.pause_requested = True
        elif request == "stop":
            self.stop_requested = True
        elif request == "cancel":
            self.stop_requested = self.abort_requested = True
        else:
            raise ValueError(f"unknown run control request {request!r}")
        self.reason = reason or f"{request} requested"

    def check_boundary(self) -> None:
        """At a step boundary: raise :class:`Interrupted` when a stop or pause was asked."""
        if self.control_file is not None:
            self._read_control_file(self.control_file)
        if self.stop_requested:
            raise Interrupted(aborted=self.abort_requested, reason=self.reason)
        if self.pause_requested:
            raise Interrupted(aborted=False, pause=True, reason=self.reason)

    def _read_control_file(self, path: Path) -> None:
        if not os.access(path, os.F_OK):  # the usual case: one syscall, no exception
            return
        try:
            raw = read_run_text(path, 1 << 16)
        except (OSError, ValueError):
            return  # gone already, or unreadable for now: the next boundary tries again
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a request is acted on once
        try:
            document = load_json(raw)
            request = str(document["request"])
            reason = str(document.get("reason") or "")
        except (ValueError, KeyError, TypeError):
            return  # half-written by hand or garbage: ignore it, it is gone
        if request in CONTROL_REQUESTS:
            self.request(request, reason or f"{request} requested by another process")

    def engine_call(self) -> _EngineCall:
        """Around an engine call or a retry wait: the part an abort may cut short."""
        return _EngineCall(self)


class _EngineCall:
    """The context of :meth:`RunControl.engine_call` (a class: it is entered every step)."""

    __slots__ = ("control",)

    def __init__(self, control: RunControl) -> None:
        self.control = control

    def __enter__(self) -> None:
        control = self.control
        control.in_engine = True
        if control.abort_requested:  # asked while the step was being prepared
            control.in_engine = False
            raise Interrupted(aborted=True, reason=control.reason)

    def __exit__(self, kind: type[BaseException] | None, error: object, trace: object) -> None:
        control = self.control
        control.in_engine = False
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            raise Interrupted(aborted=True, reason=control.reason) from None
