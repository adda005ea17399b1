"""Run control as a user drives it: ``swarm pause|stop|resume`` from another process.

The run is held by a gate in ``plan/compare_design_options`` (the stub's ``wait_for``)
until the request has been made, so it lands at the boundary after that step however
slow the machine is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.storage.store import read_event_log
from tests.conftest import REPO
from tests.e2e.processes import wait_for_step

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub


def _swarm(*args: str) -> list[str]:
    return [sys.executable, "-m", "swarm_runtime.cli.main", *args]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _swarm(*args), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
    )


def _start(tmp_path: Path, scenario: str, *flows: str) -> subprocess.Popen[str]:
    scenario = scenario.replace("GATE", str(tmp_path / "gate"))
    (tmp_path / "scenario.yaml").write_text(scenario, encoding="utf-8")
    return subprocess.Popen(
        _swarm(
            "run",
            *flows,
            "--flows-dir",
            str(REPO / "flows"),
            "--runs-dir",
            str(tmp_path / "runs"),
            "--scenario",
            str(tmp_path / "scenario.yaml"),
            "--progress",
            "always",
        ),
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run_dir(tmp_path: Path) -> Path:
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


def _events(run_dir: Path) -> list[dict[str, Any]]:
    return read_event_log(run_dir / "events.jsonl").events


def _meta(run_dir: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((run_dir / "meta.json").read_text("utf-8"))
    return value


HELD_PLAN = "plan/compare_design_options:\n  wait_for: GATE\n"
"""The step answers once the test creates ``tmp_path / "gate"``."""


def _let_go(tmp_path: Path, proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Open the gate and read the run's output to its end (its pipes closed)."""
    (tmp_path / "gate").touch()
    try:
        return proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:  # a hang: end it, then fail
        proc.kill()
        proc.communicate()
        raise


def test_pause_from_another_process_then_resume(tmp_path: Path) -> None:
    proc = _start(tmp_path, HELD_PLAN, "plan")
    try:
        wait_for_step(proc, "plan/compare_design_options")
        run_dir = _run_dir(tmp_path)
        asked = _cli(tmp_path, "pause", str(run_dir), "--reason", "lunch")
        assert asked.returncode == 0, asked.stderr
        assert f"asked run {run_dir.name} (pid {proc.pid}" in asked.stdout
    finally:
        _, err = _let_go(tmp_path, proc)
    assert proc.returncode == 130, err
    assert f"paused at a step boundary; resume with: swarm resume {run_dir.name}" in err
    kinds = [e["kind"] for e in _events(run_dir)]
    assert kinds[-3:] == ["route_decision", "run_pausing", "run_paused"]
    assert _events(run_dir)[-1]["payload"]["reason"] == "lunch"
    assert _meta(run_dir)["status"] == "paused"
    assert not (run_dir / "control.json").exists()  # a request is acted on once
    checked = _cli(tmp_path, "runs", "validate", str(run_dir))
    assert checked.returncode == 0 and "paused, resumable" in checked.stdout
    resumed = _cli(tmp_path, "resume", str(run_dir), "--progress", "never")
    assert resumed.returncode == 0, resumed.stderr
    kinds = [e["kind"] for e in _events(run_dir)]
    assert kinds.count("run_resumed") == 1 and kinds[-1] == "run_completed"
    assert kinds[kinds.index("run_paused") + 1] == "run_resumed"
    assert _meta(run_dir)["status"] == "succeeded"
    assert validate_run_dir(run_dir) == []


def _steps_ms(run_dir: Path) -> dict[str, int]:
    """Per flow, the time its steps took: every receipt's ``durationMs``, re-runs included."""
    spent: dict[str, int] = {}
    for path in run_dir.glob("*/receipts/*.json"):
        timing = json.loads(path.read_text("utf-8"))["timing"]
        spent[path.parent.parent.name] = (
            spent.get(path.parent.parent.name, 0) + timing["durationMs"]
        )
    return spent


@pytest.mark.parametrize("request_", ["pause", "stop"])
def test_a_resumed_run_counts_the_time_of_the_step_it_was_paused_after(
    tmp_path: Path, request_: str
) -> None:
    """The step the run was held in ends before the boundary it pauses (or stops) at: its
    time is the flow's, in ``meta.json`` and in the table of ``swarm resume``."""
    proc = _start(tmp_path, HELD_PLAN, "plan")
    try:
        wait_for_step(proc, "plan/compare_design_options")
        run_dir = _run_dir(tmp_path)
        assert _cli(tmp_path, request_, str(run_dir)).returncode == 0
    finally:
        _let_go(tmp_path, proc)
    assert proc.returncode == 130
    held = _steps_ms(run_dir)["plan"]
    assert held > 0  # the held step waited for the pause request, a process of its own
    assert _meta(run_dir)["flow_totals"]["plan"]["duration_ms"] >= held
    resumed = _cli(tmp_path, "resume", str(run_dir), "--progress", "never")
    assert resumed.returncode == 0, resumed.stderr
    table = {row.split()[0]: row.split() for row in resumed.stdout.splitlines() if row.strip()}
    steps_ms = _steps_ms(run_dir)
    assert _meta(run_dir)["flow_totals"]["plan"]["duration_ms"] >= steps_ms["plan"] >= held
    assert int(table["plan"][5]) >= steps_ms["plan"], resumed.stdout


def test_stop_from_another_process(tmp_path: Path) -> None:
    proc = _start(tmp_path, HELD_PLAN, "plan")
    try:
        wait_for_step(proc, "plan/compare_design_options")
        run_dir = _run_dir(tmp_path)
        assert _cli(tmp_path, "stop", run_dir.name, "--runs-dir", "runs").returncode == 0
    finally:
        _, err = _let_go(tmp_path, proc)
    assert proc.returncode == 130, err
    events = _events(run_dir)
    assert [e["kind"] for e in events][-3:] == ["run_stopping", "run_stopped", "run_completed"]
    assert events[-1]["payload"]["status"] == "stopped"
    assert _meta(run_dir)["status"] == "stopped"
    assert validate_run_dir(run_dir) == []
    # Nothing runs it any more: a second stop says so instead of writing a request.
    again = _cli(tmp_path, "stop", str(run_dir))
    assert again.returncode == 2 and "is stopped, not running" in again.stderr
    # A stopped run can be resumed, and ends as one run.
    assert _cli(tmp_path, "resume", str(run_dir), "--progress", "never").returncode == 0
    assert _meta(run_dir)["status"] == "succeeded"
    assert validate_run_dir(run_dir) == []


def test_a_second_process_cannot_run_a_live_run(tmp_path: Path) -> None:
    proc = _start(tmp_path, HELD_PLAN, "plan")
    try:
        wait_for_step(proc, "plan/compare_design_options")
        run_dir = _run_dir(tmp_path)
        second = _cli(tmp_path, "resume", str(run_dir))
        assert second.returncode == 2
        assert f"is being run by pid {proc.pid}" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        _let_go(tmp_path, proc)
    assert proc.returncode == 0
    assert validate_run_dir(run_dir) == []


def test_a_blocked_step_pauses_and_resumes_with_input(tmp_path: Path) -> None:
    scenario = "signal/frame_problem:\n  result_code: blocked\n  error: needs a human's approval\n"
    proc = _start(tmp_path, scenario, "signal")
    _, err = proc.communicate(timeout=120)
    run_dir = _run_dir(tmp_path)
    assert proc.returncode == 130, err
    assert "blocked: needs a human's approval" in err and "--input TEXT" in err
    kinds = [e["kind"] for e in _events(run_dir)]
    assert kinds[-3:] == ["step_start", "run_pausing", "run_paused"]
    assert _meta(run_dir)["status"] == "paused"
    without = _cli(tmp_path, "resume", str(run_dir))
    assert without.returncode == 2 and "resume it with --input TEXT" in without.stderr
    resumed = _cli(tmp_path, "resume", str(run_dir), "--input", "approve", "--progress", "never")
    assert resumed.returncode == 0, resumed.stderr
    events = _events(run_dir)
    mine = [e["kind"] for e in events if e["step_id"] == "frame_problem"]
    assert mine.count("step_start") == 1 and mine.count("step_end") == 1
    assert "step_error" not in mine
    transcript = run_dir / "signal" / "llm" / "frame_problem-problem-framer-claude.jsonl"
    user = [json.loads(line) for line in transcript.read_text("utf-8").splitlines()][1]
    assert user["role"] == "user" and user["content"].endswith("## External input\napprove")
    assert _meta(run_dir)["status"] == "succeeded"
    assert validate_run_dir(run_dir) == []
