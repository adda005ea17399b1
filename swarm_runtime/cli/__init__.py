"""The ``swarm`` command line; ``swarm_runtime.cli:main`` is the console script.

This module is what the console script imports first, so it imports nothing heavy: a
Ctrl-C while the rest of the command is still being imported ends ``swarm`` with one line
and exit code 130, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swarm`` console script."""
    try:
        from swarm_runtime.cli.main import main as run_command

        return run_command(argv)
    except KeyboardInterrupt:
        sys.stderr.write("swarm: interrupted\n")
        return 130
