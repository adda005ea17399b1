"""40 SDLC stub runs on two real ``swarm worker`` processes, ten SIGKILLed inside a step.

docs/run-control.md#runs-across-machines: delivery is at least once and a run is idempotent by its
id. A worker killed mid-run leaves its run with a stale lease and its task unacknowledged; the
broker gives the task again within about a lease, and a worker resumes the run from its checkpoint.
In the end no run failed, no step ran twice at once, and every run's receipts are those of an
uninterrupted run.

Ten of the runs each have one step execution (seeded, all over the run) held by a gate
(the stub's ``wait_for``): once a worker is inside it, that worker is killed, a new one
started, and the gate opened. So exactly those ten runs are cut short, wherever the test
chose, however slow the machine is.
"""

from __future__ import annotations

import random
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.distributed.follow import follow
from swarm_runtime.storage.store import read_event_log
from tests.distributed.conftest import Workers, swarm, swarm_env
from tests.e2e.processes import held_at, receipts, run_args, step_started, wait_for_event

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

RUNS = 40
KILLS = 10
"""Runs whose worker is killed inside a chosen step: every fourth one submitted."""


def _submit(args: list[str]) -> str:
    done = subprocess.run(swarm(*args), env=swarm_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _overlapping_steps(events: list[dict[str, Any]]) -> list[str]:
    """Steps started while another was open and not closed by a resume first."""
    problems, open_step = [], None
    for event in events:
        kind = event["kind"]
        where = f"{event['flow_key']}/{event['step_id']} (seq {event['seq']})"
        if kind == "step_start":
            if open_step is not None:
                problems.append(f"{where} began while {open_step} was open")
            open_step = where
        elif kind in ("step_end", "step_error"):
            open_step = None
    return problems


def test_forty_runs_survive_workers_killed_inside_chosen_steps(
    workers: Workers, tmp_path: Path
) -> None:
    base = tmp_path / "base"
    done = subprocess.run(swarm(*run_args(base)), env=swarm_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (base_run,) = base.iterdir()
    expected = receipts(base_run)
    assert len(expected) > 60
    executions = [
        (f"{e['flow_key']}/{e['step_id']}", e["payload"]["iteration"])
        for e in read_event_log(base_run / "events.jsonl").events
        if e["kind"] == "step_start"
    ]
    held = random.Random(20261126).sample(executions, KILLS)
    gates = [tmp_path / f"gate-{n}" for n in range(KILLS)]
    scenarios: list[Path | None] = [None] * RUNS
    for n, (where, execution) in enumerate(held):
        scenario = scenarios[n * RUNS // KILLS] = tmp_path / f"held-{n}.yaml"
        scenario.write_text(yaml.safe_dump(held_at({}, where, execution, gates[n])), "utf-8")

    workers.start()
    workers.start()
    broker = ["--backend", "celery", "--broker", workers.broker, "--detach"]
    with ThreadPoolExecutor(max_workers=4) as submitters:
        pending = [
            submitters.submit(_submit, [*run_args(workers.runs_dir, scenario), *broker])
            for scenario in scenarios
        ]
        run_ids = [future.result() for future in pending]
    assert len(set(run_ids)) == RUNS
    cut_short = {run_ids[n * RUNS // KILLS]: n for n in range(KILLS)}

    pool = threading.Lock()

    def kill_inside(run_id: str, n: int) -> None:
        """Once a worker is in the held step: kill it, start another, open the gate."""
        run_dir = workers.runs_dir / run_id
        wait_for_event(run_dir, step_started(*held[n]))
        with pool:
            workers.kill(workers.holding(run_dir))
            workers.start()
        gates[n].touch()

    with ThreadPoolExecutor(max_workers=KILLS) as killers:
        for future in [killers.submit(kill_inside, *item) for item in cut_short.items()]:
            future.result()

    for run_id in run_ids:
        run_dir = workers.runs_dir / run_id
        outcome = follow(run_dir, timeout=600)
        assert outcome.status == "succeeded", (run_id, outcome.error, workers.said)
        events = read_event_log(run_dir / "events.jsonl").events
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert [e["kind"] for e in events].count("run_completed") == 1
        assert _overlapping_steps(events) == []
        errors = [e for e in events if e["kind"] == "step_error"]
        assert {e["payload"]["error"] for e in errors} <= {"interrupted"}, errors
        assert validate_run_dir(run_dir) == []
        assert receipts(run_dir) == expected, run_id
        resumed = [e for e in events if e["kind"] == "run_resumed"]
        if run_id in cut_short:  # resumed once, after the step its worker died in
            where = held[cut_short[run_id]][0]
            assert [f"{e['flow_key']}/{e['step_id']}" for e in errors] == [where], run_id
            assert len(resumed) == 1, run_id
        else:
            assert resumed == [], run_id
