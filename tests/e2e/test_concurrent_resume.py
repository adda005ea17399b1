"""Eight ``swarm resume`` started at once on one crashed run: exactly one runs it
(docs/run-control.md#pause-stop-and-resume)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.storage.store import read_event_log
from tests.e2e.processes import wait_for_step

pytestmark = pytest.mark.swarm_modes("stub")  # real processes of the stub; nothing to replay

RESUMERS = 8
TRIALS = 6


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}


def _crashed_run(workdir: Path) -> Path:
    """A stepwise-demo run SIGKILLed inside its step ``write_spec``: a stale lock, an open
    step (the step is held by a gate until the kill; then the gate is opened)."""
    gate = workdir / "gate"
    scenario = workdir / "held.yaml"
    scenario.write_text(yaml.safe_dump({"write_spec": {"wait_for": str(gate)}}), "utf-8")
    runs = workdir / "runs"
    args = ["run", "stepwise-demo", "--runs-dir", str(runs), "--scenario", str(scenario)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args, "--progress", "always"],
        cwd=workdir,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for_step(proc, "stepwise-demo/write_spec")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    gate.touch()
    (run_dir,) = runs.iterdir()
    assert (run_dir / "run.lock").exists()
    return run_dir


def test_resumers_started_together_run_a_crashed_run_exactly_once(tmp_path: Path) -> None:
    crashed = _crashed_run(tmp_path)
    for trial in range(TRIALS):
        run_dir = tmp_path / f"trial-{trial}" / crashed.name
        shutil.copytree(crashed, run_dir)
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "swarm_runtime.cli.main",
                    "resume",
                    str(run_dir),
                    "--progress",
                    "never",
                ],
                cwd=tmp_path,
                env=_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(RESUMERS)
        ]
        results = [(proc.wait(timeout=300), *proc.communicate()) for proc in procs]
        winners = [r for r in results if r[0] == 0]
        assert len(winners) == 1, f"trial {trial}: {len(winners)} resumers ran the run"
        for code, _, err in results:
            if code != 0:
                assert code == 2 and "Traceback" not in err, err
        events = read_event_log(run_dir / "events.jsonl").events
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        kinds = [e["kind"] for e in events]
        assert kinds.count("run_resumed") == 1 and kinds.count("run_completed") == 1
        assert validate_run_dir(run_dir) == []
