"""What the end-to-end tests share: reading a child ``swarm`` process's output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.golden import normalise_value
from tests.conftest import REPO


def wait_for_line(proc: subprocess.Popen[str], needle: str) -> None:
    """Read the process's stdout until a line holds ``needle`` (blocks on the pipe)."""
    assert proc.stdout is not None
    for line in proc.stdout:  # blocks until the process prints; no sleeping
        if needle in line:
            return
    raise AssertionError(
        f"process ended before printing {needle!r}: {proc.stderr and proc.stderr.read()}"
    )


def delay_scenario(path: Path, delay_ms: int) -> Path:
    """A stub scenario in which every step of the shipped flows waits ``delay_ms``."""
    registry = FlowRegistry(REPO / "flows")
    entries = {
        f"{key}/{step.id}": {"delay_ms": delay_ms}
        for key in registry.order()
        for step in registry.get(key).steps
    }
    path.write_text(yaml.safe_dump(entries), encoding="utf-8")
    return path


def run_args(runs: Path, scenario: Path) -> list[str]:
    """``swarm run`` of the shipped flows into ``runs`` with ``scenario``, no progress lines."""
    flows = ["--flows-dir", str(REPO / "flows"), "--runs-dir", str(runs)]
    return ["run", *flows, "--scenario", str(scenario), "--progress", "never"]


def receipts(run_dir: Path) -> dict[str, Any]:
    """Every receipt of a run, by path, with what differs between runs normalised away."""
    return {
        str(path.relative_to(run_dir)): normalise_value(json.loads(path.read_text("utf-8")))
        for path in sorted(run_dir.glob("*/receipts/*.json"))
    }
