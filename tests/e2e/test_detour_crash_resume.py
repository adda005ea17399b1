"""SIGKILL a real ``swarm run`` whose route goes through detours and a utility flow three
flows deep, inside each of its steps and at each boundary between them, then ``swarm
resume`` it: the run that was never killed.

docs/flows.md#detours-and-utility-flows: the flow stack is part of the checkpoint, so a run killed
inside an injected flow resumes inside it and returns to the same address. Each kill point is held
by a gate (the stub's ``wait_for``) until the kill has landed, so where it lands does not depend on
how fast the machine is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.golden import normalise_value
from swarm_runtime.storage.store import read_event_log
from tests.e2e.processes import held_at, wait_for_step
from tests.runtime.orchestrator.test_detours import EVERY_DETOUR, _flows

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

STACK = ("stack_push", "flow_injected", "stack_pop")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}


def _args(project: Path, runs: Path, scenario: Path, progress: str = "never") -> list[str]:
    return [
        sys.executable,
        "-m",
        "swarm_runtime.cli.main",
        "run",
        "build",
        *("--flows-dir", str(project / "flows"), "--runs-dir", str(runs)),
        *("--scenario", str(scenario), "--progress", progress),
    ]


def _project(root: Path) -> Path:
    _flows(root / "flows")
    (root / "scenario.yaml").write_text(yaml.safe_dump(EVERY_DETOUR), encoding="utf-8")
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


Execution = tuple[str, int]
"""``flow/step`` and its execution (0-based)."""


def _kill_at(project: Path, workdir: Path, held: Execution, after: Execution | None) -> Path:
    """Run with ``held`` gated; SIGKILL the run inside it, or (``after``) once ``after``,
    the execution before it, has ended. The run dir, the gate opened."""
    gate = workdir / "gate"
    scenario = workdir / "held.yaml"
    step = held[0].split("/")[1]  # the scenario names steps by their ids alone
    gated = held_at(EVERY_DETOUR, step, held[1], gate)
    scenario.write_text(yaml.safe_dump(gated), encoding="utf-8")
    runs = workdir / "runs"
    proc = subprocess.Popen(
        _args(project, runs, scenario, "always"),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        if after is None:
            wait_for_step(proc, *held)  # inside the step: the gate holds it there
        else:
            wait_for_step(proc, *after, ended=True)  # somewhere before the gate
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    gate.touch()  # the resumed run runs the held step again: let it through
    (run_dir,) = runs.iterdir()
    return run_dir


def test_sigkill_inside_injected_flows_then_resume_gives_the_uninterrupted_run(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    done = subprocess.run(
        _args(project, tmp_path / "base", project / "scenario.yaml"),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (base,) = (tmp_path / "base").iterdir()
    expected = _what_it_did(base)
    assert [m[0] for m in expected["moves"]].count("stack_push") == 3
    executions: list[Execution] = [
        (f"{e['flow_key']}/{e['step_id']}", e["payload"]["iteration"])
        for e in read_event_log(base / "events.jsonl").events
        if e["kind"] == "step_start"
    ]

    # Inside every step, and at every boundary between two steps.
    points = [(held, None) for held in executions]
    points += [(held, executions[i]) for i, held in enumerate(executions[1:])]
    inside = 0
    for number, (held, after) in enumerate(points):
        workdir = tmp_path / f"kill-{number:02d}"
        workdir.mkdir()
        run_dir = _kill_at(project, workdir, held, after)
        saved = run_dir / "checkpoint.json"
        stacked = saved.exists() and bool(json.loads(saved.read_text("utf-8")).get("stack"))
        if after is None:  # killed inside the held step: in an injected flow, saved so
            assert stacked == (not held[0].startswith("build/")), held
        inside += stacked
        resumed = subprocess.run(
            [sys.executable, "-m", "swarm_runtime.cli.main", "resume", str(run_dir)],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert _what_it_did(run_dir) == expected, held
        assert validate_run_dir(run_dir) == []
    assert inside >= 6  # killed inside an injected flow, resumed inside it
