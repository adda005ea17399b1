"""Run control: stop and abort requests, and the engine call they may interrupt.

A first request (Ctrl-C, SIGTERM, another thread) stops the run before its next step; a
second also aborts the engine call or retry wait under way. Nothing is interrupted
mid-write, so the run's files stay whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Interrupted", "RunControl"]


class Interrupted(Exception):
    """Carries a stop or an abort out of a step, so the run can be closed cleanly."""

    def __init__(self, *, aborted: bool) -> None:
        super().__init__("aborted" if aborted else "stopped at a step boundary")
        self.aborted = aborted


class RunControl:
    """The stop and abort flags of one orchestrator, and whether an engine call is open."""

    __slots__ = ("abort_requested", "in_engine", "stop_requested")

    def __init__(self) -> None:
        self.stop_requested = False
        self.abort_requested = False
        self.in_engine = False

    def reset(self) -> None:
        """Clear the flags before a new run."""
        self.stop_requested = self.abort_requested = self.in_engine = False

    def interrupt(self) -> bool:
        """Ask the run to stop; a second call asks it to abort.

        Returns True when an engine call (or retry wait) is under way and should be
        aborted, so a signal handler raises KeyboardInterrupt there.
        """
        if self.stop_requested:
            self.abort_requested = True
        self.stop_requested = True
        return self.abort_requested and self.in_engine

    def check_boundary(self) -> None:
        """At a step boundary: raise :class:`Interrupted` when a stop was asked for."""
        if self.stop_requested:
            raise Interrupted(aborted=self.abort_requested)

    @contextmanager
    def engine_call(self) -> Iterator[None]:
        """Around an engine call or a retry wait: the part an abort may cut short."""
        self.in_engine = True
        try:
            if self.abort_requested:  # asked while the step was being prepared
                raise Interrupted(aborted=True)
            yield
        except KeyboardInterrupt:
            raise Interrupted(aborted=True) from None
        finally:
            self.in_engine = False
