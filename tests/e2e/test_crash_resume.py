"""SIGKILL a real ``swarm run`` at seeded instants, ``swarm resume`` it: the same run.

SPEC §8.2: a crashed-then-resumed stub run ends with the same receipts and routing as an
uninterrupted one, the interrupted step is closed by ``step_error{error: "interrupted"}``,
``seq`` runs on with no gap or repeat, and the run validates. Every step of the SDLC flows
waits a little (``delay_ms``), so the kill instants fall all over the run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.golden import normalise_value
from swarm_runtime.storage.store import read_event_log
from tests.e2e.processes import delay_scenario, receipts, run_args

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

KILL_POINTS = 24
NEEDED = 20
"""Kill points that must land inside the run (after its directory exists, before its end)."""
DELAY_MS = 20


def _swarm(*args: str, cwd: Path) -> list[str]:
    return [sys.executable, "-m", "swarm_runtime.cli.main", *args]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}


def _routing(events: list[dict[str, Any]]) -> list[Any]:
    return [
        (e["flow_key"], normalise_value(e["payload"]))
        for e in events
        if e["kind"] == "route_decision"
    ]


def _kill_at(workdir: Path, scenario: Path, instant: float) -> tuple[str, Path | None]:
    """Start a run and SIGKILL it ``instant`` seconds later: how the kill landed."""
    runs = workdir / "runs"
    proc = subprocess.Popen(
        _swarm(*run_args(runs, scenario), cwd=workdir),
        cwd=workdir,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(timeout=instant)  # the kill instant: not a wait for something to happen
        return "too late", None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    dirs = list(runs.iterdir()) if runs.is_dir() else []
    if not dirs or not (dirs[0] / "spec.json").exists():
        return "too early", None
    meta = dirs[0] / "meta.json"
    if meta.exists() and json.loads(meta.read_text("utf-8"))["status"] == "succeeded":
        return "too late", None  # killed on its way out, after the run was complete
    return "landed", dirs[0]


def _resume(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _swarm("resume", str(run_dir), "--progress", "never", cwd=run_dir.parent),
        cwd=run_dir.parent.parent,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _check_resumed(run_dir: Path, expected: dict[str, Any], routing: list[Any]) -> None:
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


def test_sigkill_at_seeded_instants_then_resume_gives_the_uninterrupted_run(
    tmp_path: Path,
) -> None:
    scenario = delay_scenario(tmp_path / "delay.yaml", DELAY_MS)
    base = tmp_path / "base"
    base.mkdir()
    began = time.monotonic()
    done = subprocess.run(
        _swarm(*run_args(base / "runs", scenario), cwd=base),
        cwd=base,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    took = time.monotonic() - began  # to spread the kill instants over a whole run
    assert done.returncode == 0, done.stderr
    (base_run,) = (base / "runs").iterdir()
    expected = receipts(base_run)
    routing = _routing(read_event_log(base_run / "events.jsonl").events)
    assert len(routing) > 60  # the whole SDLC: every step routed

    seeded = random.Random(20261123)
    instants = sorted(seeded.uniform(0.08, 0.98) * took for _ in range(KILL_POINTS))
    landed: list[Path] = []
    outcomes: list[str] = []

    def attempt(number: int, instant: float) -> None:
        workdir = tmp_path / f"kill-{number:02d}"
        workdir.mkdir()
        how, run_dir = _kill_at(workdir, scenario, instant)
        outcomes.append(f"{instant:.2f}s: {how}")
        if run_dir is not None:
            _check_resumed(run_dir, expected, routing)
            landed.append(run_dir)

    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(attempt, n, t) for n, t in enumerate(instants)]:
            future.result()
    extra = 0
    while len(landed) < NEEDED and extra < 20:  # a loaded machine may shift instants
        attempt(KILL_POINTS + extra, seeded.uniform(0.2, 0.9) * took)
        extra += 1
    assert len(landed) >= NEEDED, outcomes
    # The instants hit different places of the run: many distinct interrupted steps.
    cut = set()
    for run_dir in landed:
        events = read_event_log(run_dir / "events.jsonl").events
        resumed = next(e for e in events if e["kind"] == "run_resumed")
        cut.add((resumed["payload"]["flow_index"], resumed["payload"]["step_id"]))
    assert len(cut) >= 10, cut
