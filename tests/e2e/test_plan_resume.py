"""A plan cycle is a run of the kernel: SIGKILL or pause ``swarm plan run`` in a step,
``swarm resume`` it, and the cycle ends as an uninterrupted one does.

The cycle's model step (``answer``) waits on a gate (the stub's ``wait_for``) until the
test has killed or paused the process; the steps before it have run, so the resumed cycle
reads their results from the run, not from the memory of the process that is gone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from swarm_runtime.contracts.check import validate_run_dir
from tests.conftest import REPO
from tests.e2e.processes import held_at, receipts, wait_for_step

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

QUESTION = "how do we rotate the postgres credentials?"
MEMORY_ID = re.compile(r"mem-[0-9a-f]{16}")


def _swarm(*args: str) -> list[str]:
    return [sys.executable, "-m", "swarm_runtime.cli.main", *args]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}


def _project(where: Path) -> Path:
    """A user's project: a repository with a README, the example plan, a gated scenario."""
    (where / "repo").mkdir(parents=True)  # what the cycle writes stays out of what it scans
    (where / "repo" / "README.md").write_text(
        "# Billing\n\nRotate the postgres credentials every 90 days with the vault CLI.\n"
    )
    shutil.copy(REPO / "examples" / "plans" / "answer-with-memory.json", where / "plan.json")
    gated = held_at({}, "answer", 0, where / "gate")
    (where / "gated.yaml").write_text(yaml.safe_dump(gated), encoding="utf-8")
    return where


def _plan_run(project: Path) -> list[str]:
    return _swarm(
        "plan", "run", "plan.json", "--repo", "repo", "--input", QUESTION, "--session", "team-a",
        "--scenario", "gated.yaml", "--progress", "always",
    )  # fmt: skip


def _start(project: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _plan_run(project),
        cwd=project,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _cycle(project: Path) -> Path:
    (run_dir,) = (project / "swarm" / "runs").iterdir()
    return run_dir


def _resume(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _swarm("resume", str(run_dir), "--progress", "never"),
        cwd=run_dir.parent,  # not the project: spec.json says where the plan works
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _paused(project: Path) -> tuple[Path, str, str]:
    """``swarm plan run`` paused by ``swarm pause`` inside its model step, the gate then
    opened: the run dir and what the process printed (it exits 130)."""
    proc = _start(project)
    try:
        wait_for_step(proc, "cycle/answer")
        run_dir = _cycle(project)
        asked = subprocess.run(
            _swarm("pause", str(run_dir)), env=_env(), capture_output=True, text=True, check=False
        )
        assert asked.returncode == 0, asked.stderr
    finally:
        (project / "gate").touch()  # the step ends; the run pauses at the boundary after it
        out, err = proc.communicate()
    assert proc.returncode == 130, err
    return run_dir, out, err


def _what_it_left(project: Path) -> dict[str, Any]:
    """What a cycle leaves a user: receipts, transcripts, results, the store's rows."""
    run_dir = _cycle(project)
    transcripts = {
        str(path.relative_to(run_dir)): [
            (line["role"], MEMORY_ID.sub("mem-<ID>", line["content"]))
            for line in map(json.loads, path.read_text().splitlines())
        ]
        for path in sorted(run_dir.glob("cycle/llm/*.jsonl"))
    }
    results = {  # a memory's id is random, as a run's is
        path.name: json.loads(MEMORY_ID.sub("mem-<ID>", path.read_text()))
        for path in sorted(run_dir.glob("cycle/artifacts/*.json"))
    }
    kept = receipts(run_dir)
    for receipt in kept.values():  # the results are compared whole, above
        for artifact in receipt.get("artifacts", ()):
            artifact.pop("sha256")
    with sqlite3.connect(project / "swarm" / "plan-store.sqlite3") as db:
        stored = {
            table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("memories", "sessions")
        }
    return {
        "receipts": kept,
        "transcripts": transcripts,
        "results": results,
        "stored": stored,
    }


@pytest.fixture
def uninterrupted(tmp_path: Path) -> dict[str, Any]:
    base = _project(tmp_path / "base")
    (base / "gate").touch()
    done = subprocess.run(
        _plan_run(base), cwd=base, env=_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    left = _what_it_left(base)
    assert left["stored"] == {"memories": 1, "sessions": 1}
    return left


def test_a_cycle_killed_in_a_step_then_resumed_ends_as_an_uninterrupted_one(
    tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    project = _project(tmp_path / "killed")
    proc = _start(project)
    try:
        wait_for_step(proc, "cycle/answer")  # inside the model step: the gate holds it
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    (project / "gate").touch()
    run_dir = _cycle(project)
    assert json.loads((run_dir / "meta.json").read_text())["status"] == "running"
    resumed = _resume(run_dir)
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert _what_it_left(project) == uninterrupted
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    kinds = [event["kind"] for event in events]
    assert kinds.count("run_resumed") == 1 and kinds.count("run_completed") == 1
    closed = [e for e in events if e["kind"] == "step_error"]
    assert [(e["step_id"], e["payload"]["error"]) for e in closed] == [("answer", "interrupted")]
    assert validate_run_dir(run_dir) == []
    assert json.loads((run_dir / "meta.json").read_text())["status"] == "succeeded"


def test_a_cycle_paused_from_another_process_resumes_to_the_same_end(
    tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    project = _project(tmp_path / "paused")
    run_dir, out, err = _paused(project)
    assert f"cycle 1: paused, run {run_dir.name}" in out
    assert f"resume with: swarm resume {run_dir.name}" in err
    assert json.loads((run_dir / "meta.json").read_text())["status"] == "paused"
    resumed = _resume(run_dir)
    assert resumed.returncode == 0, resumed.stderr
    assert _what_it_left(project) == uninterrupted
    assert validate_run_dir(run_dir) == []


def test_a_paused_cycle_resumed_through_the_run_service_ends_as_an_uninterrupted_one(
    tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    """The run service (and so Flow Studio's Resume button) resumes a plan cycle as
    ``swarm resume`` does, given its plan from ``spec.json``, instead of refusing it."""
    from swarm_runtime.service import new_backend

    project = _project(tmp_path / "service")
    run_dir, _, _ = _paused(project)
    backend = new_backend("claude-step-orchestrator", runs_dir=run_dir.parent, env=_env())
    try:
        backend.resume(run_dir.name)
        summary = backend.wait(run_dir.name, timeout=300)
    finally:
        backend.shutdown()
    assert summary["status"] == "succeeded", summary
    assert _what_it_left(project) == uninterrupted
    assert validate_run_dir(run_dir) == []


def test_a_resumed_cycle_that_fails_fast_stops_the_runtime_as_swarm_plan_run_does(
    tmp_path: Path,
) -> None:
    """FailFast (a store write refused) exits 3 with its message after ``swarm resume``
    too, not 1 as an ordinary failed run."""
    project = _project(tmp_path / "failfast")
    plan = json.loads((project / "plan.json").read_text())
    plan["steps"][-1]["payload"] = {"meta": {}}  # PersistSession without its sessionRef
    (project / "plan.json").write_text(json.dumps(plan))
    run_dir, _, _ = _paused(project)
    resumed = _resume(run_dir)
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr
    assert "FailFast: step 'session' (PersistSession) failed" in resumed.stderr
    assert "the runtime stopped" in resumed.stderr and "Traceback" not in resumed.stderr
    assert json.loads((run_dir / "meta.json").read_text())["status"] == "failed"
    with sqlite3.connect(project / "swarm" / "plan-store.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
