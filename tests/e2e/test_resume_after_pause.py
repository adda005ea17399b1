"""``swarm resume`` right after a run says ``paused``, while the process that paused it is
still letting go of it (docs/run-control.md#pause-stop-and-resume): the resume waits for it, says
so, and takes the run.

The run runs in this test's process (the run service), so the test can hold it at the
instant under test: its step ``signal/frame_problem`` waits on a gate (the stub's
``wait_for``) until ``swarm pause`` has asked, and the run's closing (where it lets go of
its lock) waits until the resume has said that it waits. Nothing depends on timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.service import get_backend, reset_backends
from swarm_runtime.storage.status import observed_status
from swarm_runtime.storage.store import read_event_log
from tests.conftest import SHIPPED_FLOWS
from tests.e2e.processes import step_started, wait_for_event

pytestmark = pytest.mark.swarm_modes("stub")


@pytest.fixture(autouse=True)
def _fresh_service() -> Any:
    reset_backends()
    yield
    reset_backends()


def _swarm(*args: str, **options: Any) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    return subprocess.Popen(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def test_a_resume_right_after_paused_waits_for_the_pausing_process_and_takes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.orchestrator.recorder import RunRecorder

    closing, release = threading.Event(), threading.Event()
    close = RunRecorder.close

    def held_close(recorder: RunRecorder) -> None:
        closing.set()  # the run has paused and not yet let go of its lock
        release.wait()
        close(recorder)

    monkeypatch.setattr(RunRecorder, "close", held_close)
    gate = tmp_path / "gate"
    backend = get_backend(
        "claude-step-orchestrator",
        runs_dir=tmp_path / "runs",
        flows_dir=SHIPPED_FLOWS,
        env={},
        scenario=Scenario.from_mapping({"signal/frame_problem": {"wait_for": str(gate)}}),
    )
    run_id = backend.start(RunSpec(flows=("signal",)))
    run_dir = tmp_path / "runs" / run_id
    wait_for_event(run_dir, step_started("signal/frame_problem"))
    try:
        asked = _swarm("pause", str(run_dir))
        _, why = asked.communicate()
        assert asked.returncode == 0, why
    finally:
        gate.touch()
    assert closing.wait(120)
    # What a user reads now says paused, and so does the log.
    assert observed_status(run_dir) == "paused"
    assert read_event_log(run_dir / "events.jsonl").events[-1]["kind"] == "run_paused"

    resume = _swarm("resume", str(run_dir), "--progress", "never")
    try:
        assert resume.stderr is not None
        said = resume.stderr.readline()  # blocks until the resume says what it waits for
    finally:
        release.set()
        out, err = resume.communicate()
    assert f"run {run_id} has just paused; waiting for pid " in said, said + err
    assert "which paused it, to let go of it" in said
    assert resume.returncode == 0, said + err
    assert f"run {run_id}: succeeded" in out
    kinds = [e["kind"] for e in read_event_log(run_dir / "events.jsonl").events]
    assert kinds[kinds.index("run_paused") + 1] == "run_resumed"
    assert kinds.count("run_resumed") == 1 and kinds[-1] == "run_completed"
    assert backend.wait(run_id, timeout=120)["status"] == "succeeded"
    assert validate_run_dir(run_dir) == []
