"""What every ``swarm`` command shares: the exit codes and where the flows are.

Exit codes (SPEC §11): 0 success, 1 run failed, 2 usage or definition error, 3 FailFast,
130 interrupted.
"""

from __future__ import annotations

import os
from pathlib import Path

from swarm_runtime.errors import SwarmUsageError

__all__ = [
    "EXIT_FAILED",
    "EXIT_FAILFAST",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "default_flows_dir",
    "path_arg",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_FAILFAST = 3
EXIT_INTERRUPTED = 130


def path_arg(text: str) -> Path:
    """A path argument; an empty one (which would mean the current directory) is refused."""
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not allowed; name a directory or file")
    return Path(text)


def default_flows_dir(explicit: Path | None) -> Path:
    """``--flows-dir``, else ``SWARM_FLOWS_DIR``, else ``./flows``, else the packaged flows."""
    if explicit is not None:
        return explicit
    if os.environ.get("SWARM_FLOWS_DIR"):
        return Path(os.environ["SWARM_FLOWS_DIR"])
    local = Path("flows")
    if local.is_dir():
        return local
    from swarm_runtime.flow.registry import packaged_flows_dir

    packaged = packaged_flows_dir()
    if packaged is None:
        raise SwarmUsageError(
            "no ./flows directory here; pass --flows-dir DIR or set SWARM_FLOWS_DIR"
        )
    return packaged
