"""SIGKILL a real ``swarm run`` at seeded points of the run, ``swarm resume`` it: the same run.

docs/run-control.md#pause-stop-and-resume: a crashed-then-resumed stub run ends with the same
receipts and routing as an uninterrupted one, the interrupted step is closed by ``step_error{error:
"interrupted"}``, ``seq`` runs on with no gap or repeat, and the run validates. The kill points are
step executions chosen (seeded) from the whole run, each held by a gate until the kill has
landed: half inside the chosen step, half at the boundary after it (between its
``step_end`` and the next step, gated, whatever the run writes in between). Where a kill
lands does not depend on how fast the machine is.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.golden import normalise_value
from swarm_runtime.storage.store import read_event_log
from tests.e2e.processes import held_at, receipts, run_args, wait_for_step

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

KILL_POINTS = 24
"""Step executions the run is killed at, each in a run of its own."""


def _swarm(*args: str) -> list[str]:
    return [sys.executable, "-m", "swarm_runtime.cli.main", *args]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}


def _routing(events: list[dict[str, Any]]) -> list[Any]:
    return [
        (e["flow_key"], normalise_value(e["payload"]))
        for e in events
        if e["kind"] == "route_decision"
    ]


Execution = tuple[str, int]
"""``flow/step`` and its execution (0-based)."""


def _kill_at(workdir: Path, held: Execution, after: Execution | None) -> Path:
    """Run with ``held`` gated; SIGKILL the run inside it, or (``after``) once ``after``,
    the execution before it, has ended. The run dir, the gate opened."""
    gate = workdir / "gate"
    scenario = workdir / "gated.yaml"
    scenario.write_text(yaml.safe_dump(held_at({}, *held, gate)), encoding="utf-8")
    runs = workdir / "runs"
    proc = subprocess.Popen(
        _swarm(*run_args(runs, scenario, progress="always")),  # its lines say where it is
        cwd=workdir,
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


def _resume(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _swarm("resume", str(run_dir), "--progress", "never"),
        cwd=run_dir.parent.parent,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _check_resumed(
    run_dir: Path, expected: dict[str, Any], routing: list[Any], inside: Execution | None
) -> None:
    before = read_event_log(run_dir / "events.jsonl").events
    open_steps = [e for e in before if e["kind"] == "step_start"]
    ended = {e["seq"] for e in before if e["kind"] in ("step_end", "step_error")}
    result = _resume(run_dir)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    events = read_event_log(run_dir / "events.jsonl").events
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))  # no gap, no repeat
    assert [e["kind"] for e in events].count("run_resumed") == 1
    assert [e["kind"] for e in events].count("run_completed") == 1
    errors = [e for e in events if e["kind"] == "step_error"]
    assert all(e["payload"]["error"] == "interrupted" for e in errors), errors
    if inside is not None:  # killed inside the held step: it is the one closed
        (error,) = errors
        assert f"{error['flow_key']}/{error['step_id']}" == inside[0]
    if errors:  # the step the kill cut short, closed just before the run went on
        (error,) = errors
        assert events[events.index(error) + 1]["kind"] == "run_resumed"
        last_start = open_steps[-1]
        assert (error["flow_key"], error["step_id"]) == (
            last_start["flow_key"],
            last_start["step_id"],
        )
    elif open_steps:
        # The kill came after the step's checkpoint: the resume finished its events.
        assert len(ended) <= len(open_steps)
    assert receipts(run_dir) == expected
    assert _routing(events) == routing
    assert validate_run_dir(run_dir) == []
    assert json.loads((run_dir / "meta.json").read_text("utf-8"))["status"] == "succeeded"


def test_sigkill_at_seeded_points_then_resume_gives_the_uninterrupted_run(
    tmp_path: Path,
) -> None:
    base = tmp_path / "base"
    base.mkdir()
    done = subprocess.run(
        _swarm(*run_args(base / "runs")),
        cwd=base,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (base_run,) = (base / "runs").iterdir()
    expected = receipts(base_run)
    events = read_event_log(base_run / "events.jsonl").events
    routing = _routing(events)
    assert len(routing) > 60  # the whole SDLC: every step routed
    executions: list[Execution] = [
        (f"{e['flow_key']}/{e['step_id']}", e["payload"]["iteration"])
        for e in events
        if e["kind"] == "step_start"
    ]

    seeded = random.Random(20261123)
    chosen = sorted(seeded.sample(range(1, len(executions)), KILL_POINTS))
    cut: list[str] = []

    def attempt(number: int, index: int) -> None:
        workdir = tmp_path / f"kill-{number:02d}"
        workdir.mkdir()
        at_boundary = number % 2 == 1
        previous = executions[index - 1] if at_boundary else None
        run_dir = _kill_at(workdir, executions[index], previous)
        _check_resumed(run_dir, expected, routing, None if at_boundary else executions[index])
        resumed = next(
            e for e in read_event_log(run_dir / "events.jsonl").events if e["kind"] == "run_resumed"
        )
        cut.append(f"{resumed['payload']['flow_index']}/{resumed['payload']['step_id']}")

    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(attempt, n, i) for n, i in enumerate(chosen)]:
            future.result()
    # The points are all over the run: many distinct places it went on from.
    assert len(cut) == KILL_POINTS
    assert len(set(cut)) >= 12, cut
