"""What every ``swarm`` command shares: the exit codes and where the flows are.

Exit codes (docs/reference/cli.md): 0 success, 1 run failed, 2 usage or definition error,
3 FailFast, 130 interrupted.
"""

from __future__ import annotations

from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_FAILFAST = 3
EXIT_INTERRUPTED = 130

RUNS_DIR_HELP = "where runs are (default: $SWARM_RUNS_DIR, else ./swarm/runs)"
FLOWS_DIR_HELP = "flows directory (default: ./flows)"


def interrupted() -> int:
    """Say that ``swarm`` was interrupted, in one line; the exit code.

    A second Ctrl-C while this is said is ignored: it would print a traceback instead.
    """
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stderr.write("swarm: interrupted\n")
    return EXIT_INTERRUPTED


def path_arg(text: str) -> Path:
    """A path argument; an empty one (which would mean the current directory) is refused."""
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not allowed; name a directory or file")
    return Path(text)
