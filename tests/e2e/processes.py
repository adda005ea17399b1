"""What the end-to-end tests share: reading a child ``swarm`` process's output."""

from __future__ import annotations

import subprocess


def wait_for_line(proc: subprocess.Popen[str], needle: str) -> None:
    """Read the process's stdout until a line holds ``needle`` (blocks on the pipe)."""
    assert proc.stdout is not None
    for line in proc.stdout:  # blocks until the process prints; no sleeping
        if needle in line:
            return
    raise AssertionError(
        f"process ended before printing {needle!r}: {proc.stderr and proc.stderr.read()}"
    )
