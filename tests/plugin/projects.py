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


# A user's flow with a judge on its one step (docs/judges.md#judges).
JUDGED_FLOW = """\
key: support
title: "Answer a support ticket"
description: "Drafts the reply to a ticket."
steps:
  - id: draft
    agents: [writer]
    role: "Draft the reply to the customer."
    teaching_notes:
      inputs: ["The ticket"]
      outputs: ["The reply"]
      emphasizes: ["Name the refund amount"]
      constraints: ["Be brief"]
    judges:
      - name: tone
        rubric: "The reply is polite and never blames the customer."
        threshold: 0.7
"""
