"""A real ``swarm run`` process killed or interrupted mid-run leaves a readable run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from swarm_runtime.contracts.check import run_is_crashed, validate_run_dir
from swarm_runtime.storage.store import read_event_log
from tests.conftest import REPO
from tests.e2e.processes import wait_for_line


def _start(tmp_path: Path, delayed_step: str, *, gate: Path | None = None) -> subprocess.Popen[str]:
    scenario = tmp_path / "scenario.yaml"
    # By default long enough that the process is certainly inside this step when signalled;
    # with a gate, the step ends once the test creates the gate file.
    held = f"wait_for: {gate}" if gate is not None else "delay_ms: 600000"
    scenario.write_text(f"{delayed_step}:\n  {held}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "swarm_runtime.cli.main",
            "run",
            "--flows-dir",
            str(REPO / "flows"),
            "--runs-dir",
            str(tmp_path / "runs"),
            "--scenario",
            str(scenario),
            "--progress",
            "always",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run_dir(tmp_path: Path) -> Path:
    (run_dir,) = list((tmp_path / "runs").iterdir())
    return run_dir


def test_sigkill_mid_run_leaves_parseable_files(tmp_path: Path) -> None:
    proc = _start(tmp_path, "plan/compare_design_options")
    try:
        # The step before the delayed one has ended: the process is on its way into the delay.
        wait_for_line(proc, "[ ok ] plan/load_signal_context")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    run_dir = _run_dir(tmp_path)
    for path in run_dir.rglob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))  # every JSON document is whole
    assert not list(run_dir.rglob("*.tmp"))
    result = read_event_log(run_dir / "events.jsonl")  # at most a torn last line
    kinds = [event["kind"] for event in result.events]
    assert kinds[0] == "run_created" and "run_completed" not in kinds
    assert any(
        e["step_id"] == "load_signal_context" and e["kind"] == "step_end" for e in result.events
    )
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "running"
    # Its lock holder is dead: the run is seen as crashed, and resumable, not as broken.
    assert run_is_crashed(run_dir)
    assert validate_run_dir(run_dir) == []
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    swarm = [sys.executable, "-m", "swarm_runtime.cli.main"]
    listed = subprocess.run(
        [*swarm, "runs", "list", "--runs-dir", str(tmp_path / "runs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"{run_dir.name}  crashed" in listed.stdout
    # meta.json was written when the run started; the log counts the steps it began since.
    (row,) = [line.split() for line in listed.stdout.splitlines() if line.startswith("run-")]
    started = [e for e in result.events if e["kind"] == "step_start"]
    assert len(started) >= 2 and row[3] == str(len(started))
    checked = subprocess.run(
        [*swarm, "runs", "validate", str(run_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0
    assert f"crashed, resumable with 'swarm resume {run_dir.name}'" in checked.stdout


def test_ctrl_c_twice_aborts_the_step_exits_130_with_run_completed(tmp_path: Path) -> None:
    proc = _start(tmp_path, "plan/compare_design_options")
    try:
        # Printed after step_start is logged: the step is under way, past the boundary.
        wait_for_line(proc, "[ .. ] plan/compare_design_options")
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None
        first = proc.stderr.readline()  # the process says it heard the first Ctrl-C
        assert "stopping after the current step" in first
        proc.send_signal(signal.SIGINT)  # the step sleeps for minutes: abort it
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "aborted: the step under way was cut short" in err
    run_dir = _run_dir(tmp_path)
    events = read_event_log(run_dir / "events.jsonl").events
    assert [e["kind"] for e in events][-4:] == [
        "step_error",
        "run_stopping",
        "run_stopped",
        "run_completed",
    ]
    assert events[-4]["step_id"] == "compare_design_options"
    assert events[-4]["payload"]["error"] == "interrupted"
    assert events[-1]["payload"]["status"] == "stopped"
    assert validate_run_dir(run_dir) == []
    assert json.loads((run_dir / "meta.json").read_text())["status"] == "stopped"


def test_ctrl_c_once_stops_at_the_next_step_boundary(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    proc = _start(tmp_path, "plan/compare_design_options", gate=gate)
    try:
        wait_for_line(proc, "[ .. ] plan/compare_design_options")  # held in the step
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None
        assert "stopping after the current step" in proc.stderr.readline()
    finally:
        gate.touch()  # the step under way may finish now
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    # A clean stop is not an error: the user is told where the run stopped.
    assert "error:" not in err and "interrupted" not in err
    assert "stopped at a step boundary after" in err and _run_dir(tmp_path).name in err
    events = read_event_log(_run_dir(tmp_path) / "events.jsonl").events
    assert events[-1]["kind"] == "run_completed"
    assert events[-1]["payload"]["status"] == "stopped"
    # The step under way finished normally; no step was aborted, none started after.
    assert not [e for e in events if e["kind"] == "step_error"]
    ended = [e["step_id"] for e in events if e["kind"] == "step_end" and e["flow_key"] == "plan"]
    assert ended == ["load_signal_context", "compare_design_options"]
    # A stop says so in the log, then completes the run (docs/run-control.md#pause-stop-and-resume).
    assert [e["kind"] for e in events][-4:] == [
        "route_decision",
        "run_stopping",
        "run_stopped",
        "run_completed",
    ]
    assert "Ctrl-C" in events[-3]["payload"]["reason"]
    assert validate_run_dir(_run_dir(tmp_path)) == []


def test_sigterm_mid_step_closes_the_run(tmp_path: Path) -> None:
    proc = _start(tmp_path, "plan/compare_design_options")
    try:
        wait_for_line(proc, "[ .. ] plan/compare_design_options")
        proc.send_signal(signal.SIGTERM)  # what timeout(1) and CI cancellation send
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    run_dir = _run_dir(tmp_path)
    events = read_event_log(run_dir / "events.jsonl").events
    assert [e["kind"] for e in events][-4:] == [
        "step_error",
        "run_stopping",
        "run_stopped",
        "run_completed",
    ]
    assert events[-1]["payload"]["status"] == "stopped"
    assert validate_run_dir(run_dir) == []
