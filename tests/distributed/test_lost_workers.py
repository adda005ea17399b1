"""40 SDLC stub runs on two real ``swarm worker`` processes, SIGKILLed at seeded instants.

SPEC §8.3: delivery is at least once and a run is idempotent by its id. A worker killed
mid-run leaves its run with a stale lease and its task unacknowledged; the broker gives the
task again within about a lease, and a worker resumes the run from its checkpoint. In the
end no run failed, no step ran twice at once, and every run's receipts are those of an
uninterrupted run.
"""

from __future__ import annotations

import contextlib
import random
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.distributed.follow import follow
from swarm_runtime.storage.store import read_event_log
from tests.distributed.conftest import Workers, swarm, swarm_env
from tests.e2e.processes import delay_scenario, receipts, run_args

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

RUNS = 40
KILLS = 10
DELAY_MS = 15


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


def test_forty_runs_survive_workers_killed_at_random_instants(
    workers: Workers, tmp_path: Path
) -> None:
    scenario = delay_scenario(tmp_path / "delay.yaml", DELAY_MS)
    base = tmp_path / "base"
    done = subprocess.run(
        swarm(*run_args(base, scenario)), env=swarm_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    (base_run,) = base.iterdir()
    expected = receipts(base_run)
    assert len(expected) > 60

    pool = [workers.start(), workers.start()]
    broker = ["--backend", "celery", "--broker", workers.broker, "--detach"]
    args = [*run_args(workers.runs_dir, scenario), *broker]
    with ThreadPoolExecutor(max_workers=4) as submitters:
        pending = [submitters.submit(_submit, args) for _ in range(RUNS)]
        seeded = random.Random(20261126)
        for _ in range(KILLS):
            # The kill instant: not a wait for something to happen.
            with contextlib.suppress(subprocess.TimeoutExpired):
                pool[0].wait(timeout=seeded.uniform(0.5, 2.5))
            victim = pool.pop(seeded.randrange(len(pool)))
            workers.kill(victim)
            pool.append(workers.start())
        run_ids = [future.result() for future in pending]
    assert len(set(run_ids)) == RUNS

    resumed = 0
    for run_id in run_ids:
        run_dir = workers.runs_dir / run_id
        outcome = follow(run_dir, timeout=600)
        assert outcome.status == "succeeded", (run_id, outcome.error, workers.said)
        events = read_event_log(run_dir / "events.jsonl").events
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert [e["kind"] for e in events].count("run_completed") == 1
        assert _overlapping_steps(events) == []
        errors = [e["payload"]["error"] for e in events if e["kind"] == "step_error"]
        assert set(errors) <= {"interrupted"}, errors
        assert validate_run_dir(run_dir) == []
        assert receipts(run_dir) == expected, run_id
        resumed += any(e["kind"] == "run_resumed" for e in events)
    assert resumed >= KILLS // 2, f"only {resumed} runs were cut short by the kills"
