"""SIGKILL a real ``swarm run`` whose route goes through detours and a utility flow three
flows deep, at seeded instants, then ``swarm resume`` it: the run that was never killed.

SPEC §4.6: the flow stack is part of the checkpoint, so a run killed inside an injected
flow resumes inside it and returns to the same address. Each step waits a little
(``delay_ms``) so the kill instants fall all over the run, most of them inside an
injected flow.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.golden import normalise_value
from swarm_runtime.storage.store import read_event_log
from tests.runtime.orchestrator.test_detours import EVERY_DETOUR, _flows

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

KILL_POINTS = 10
MAX_KILLS = 24
"""More kill points when a loaded machine shifts the instants out of the steps."""
NEEDED = 6
DELAY_MS = 120
STACK = ("stack_push", "flow_injected", "stack_pop")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}


def _args(project: Path, runs: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "swarm_runtime.cli.main",
        "run",
        "build",
        *("--flows-dir", str(project / "flows"), "--runs-dir", str(runs)),
        *("--scenario", str(project / "scenario.yaml"), "--progress", "never"),
    ]


def _project(root: Path) -> Path:
    _flows(root / "flows")
    steps = ["write_code", "critique", "ship", "fetch", "replay", "push", "fix_conflict"]
    steps += ["check", "scan"]
    scenario: dict[str, Any] = {step: {"delay_ms": DELAY_MS} for step in steps}
    for step, entry in EVERY_DETOUR.items():
        scenario[step] = entry if step == "navigator" else {**entry, "delay_ms": DELAY_MS}
    (root / "scenario.yaml").write_text(yaml.safe_dump(scenario), encoding="utf-8")
    return root


def _what_it_did(run_dir: Path) -> dict[str, Any]:
    events = read_event_log(run_dir / "events.jsonl").events
    return {
        "moves": [
            normalise_value([e["kind"], e["flow_key"], e["step_id"], e["payload"]])
            for e in events
            if e["kind"] in ("route_decision", "routing_offroad", *STACK)
        ],
        "receipts": {
            str(p.relative_to(run_dir)): normalise_value(json.loads(p.read_text("utf-8")))
            for p in sorted(run_dir.glob("*/receipts/*.json"))
        },
    }


def _kill_at(project: Path, runs: Path, instant: float) -> Path | None:
    """Start a run and SIGKILL it ``instant`` seconds later: its dir, if the kill landed."""
    proc = subprocess.Popen(
        _args(project, runs),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(timeout=instant)  # the kill instant: not a wait for something to happen
        return None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    dirs = list(runs.iterdir()) if runs.is_dir() else []
    if not dirs or not (dirs[0] / "spec.json").exists():
        return None
    meta = dirs[0] / "meta.json"
    if meta.exists() and json.loads(meta.read_text("utf-8"))["status"] == "succeeded":
        return None
    return dirs[0]


def test_sigkill_inside_injected_flows_then_resume_gives_the_uninterrupted_run(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    began = time.monotonic()
    done = subprocess.run(
        _args(project, tmp_path / "base"), env=_env(), capture_output=True, text=True, timeout=300
    )
    took = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    (base,) = (tmp_path / "base").iterdir()
    expected = _what_it_did(base)
    assert [m[0] for m in expected["moves"]].count("stack_push") == 3

    seeded = random.Random(20261125)
    landed: list[Path] = []
    inside = 0
    for number in range(MAX_KILLS):
        if number >= KILL_POINTS and len(landed) >= NEEDED and inside >= 2:
            break
        runs = tmp_path / f"kill-{number:02d}"
        run_dir = _kill_at(project, runs, seeded.uniform(0.15, 0.95) * took)
        if run_dir is None:
            continue
        saved = run_dir / "checkpoint.json"
        inside += saved.exists() and bool(json.loads(saved.read_text("utf-8")).get("stack"))
        resumed = subprocess.run(
            [sys.executable, "-m", "swarm_runtime.cli.main", "resume", str(run_dir)],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert _what_it_did(run_dir) == expected
        assert validate_run_dir(run_dir) == []
        landed.append(run_dir)
    assert len(landed) >= NEEDED
    assert inside >= 2  # killed inside an injected flow, resumed inside it
