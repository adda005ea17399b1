"""The ``swarm`` command line; ``swarm_runtime.cli:main`` is the console script.

This module (and the package's ``__init__``) is what the console script imports before
anything of ours runs, so it imports nothing that is not loaded already (not even
``typing``): a Ctrl-C while the rest of the command is still being imported ends
``swarm`` with one line and exit code 130, never a traceback.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see above
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swarm`` console script."""
    try:
        from swarm_runtime.cli.main import main as run_command

        return run_command(argv)
    except KeyboardInterrupt:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: not a traceback
        from swarm_runtime.cli.common import interrupted

        return interrupted()
