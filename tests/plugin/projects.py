"""Running a user project's own pytest suite as a subprocess, as its user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--swarm-runs-dir=runs"]
"""The project's suite, its runs kept in ./runs."""


def project_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment less our own swarm, provider and xdist settings, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k == "SWARM_CACHE_DIR"
        or not k.startswith(("SWARM_", "ANTHROPIC_", "PYTEST_XDIST", "PYTEST_ADDOPTS"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra or {})
    return env


def no_network() -> list[str]:
    """The command prefix that runs a command with no network, where this machine allows it."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False)
    return ["unshare", "-rn"] if probe.returncode == 0 else []
