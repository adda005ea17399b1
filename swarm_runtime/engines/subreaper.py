"""The run process as the reaper of what a step's CLI leaves behind (a child subreaper).

A daemon a CLI started (double fork and ``setsid``) is orphaned when the CLI exits; with
``PR_SET_CHILD_SUBREAPER`` it is reparented to this process rather than to init, so it
is ours to end and to reap (:func:`swarm_runtime.engines.process.end_marked`). The
commands that run steps ask for it (:func:`reap_orphans`); it is set when the first CLI
of a step is launched (:func:`take_orphans`), so a run without a CLI step pays nothing.
Elsewhere (no Linux, no ``prctl``) nothing changes: orphans go to init, which reaps them.
"""

from __future__ import annotations

import sys

_PR_SET_CHILD_SUBREAPER = 36
_wanted = False
_taken: bool | None = None


def reap_orphans() -> None:
    """Ask that this process become a child subreaper before its first CLI runs."""
    global _wanted
    _wanted = True


def take_orphans() -> bool:
    """If asked (:func:`reap_orphans`), make this process a child subreaper, once.

    Whether it is one. Not inherited across fork; kept across exec.
    """
    global _taken
    if not _wanted:
        return False
    if _taken is None:
        _taken = False
        if sys.platform.startswith("linux"):
            import ctypes

            try:
                libc = ctypes.CDLL(None, use_errno=True)
                _taken = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):  # no libc or no prctl: the group kill only
                _taken = False
    return _taken
