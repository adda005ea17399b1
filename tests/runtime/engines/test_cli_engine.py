"""The CLI engine when the CLI misbehaves: every case ends the step cleanly and in time.

A missing executable, a non-zero exit, a timeout, a malformed line, a stream with no
result line, a process that ignores SIGTERM: each ends the step with a clear
``step_error`` (the run then ends ``failed`` and validates), the whole process group is
gone, and the step took no longer than its timeout plus a few seconds (read off the run's
own event times, not a timer in the test).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from tests.runtime.helpers import claude_choice, events_of, receipt, step_yaml, write_flow

FAKE = Path(__file__).with_name("fake_cli.py")
TIMEOUT_S = 1.0
GRACE_S = 5.0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its exit status is left


def _run(tmp_path: Path, case: str, *, executable: Path | None = None) -> RunOutcome:
    flows = tmp_path / "flows"
    write_flow(flows, "solo", [step_yaml("only") + f"    timeout_s: {TIMEOUT_S}\n"])
    if executable is None:
        executable = tmp_path / "claude"
        executable.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
        executable.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "FAKE_CLI_CASE": case,
        "FAKE_CLI_PIDS": str(tmp_path / "pids"),
    }
    orchestrator = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=claude_choice("cli", env=env, cli=str(executable)),
    )
    return orchestrator.run(RunSpec(flows=("solo",)))


def _step_seconds(events: list[dict[str, Any]]) -> float:
    start = next(e for e in events if e["kind"] == "step_start")["ts"]
    end = next(e for e in events if e["kind"] in ("step_end", "step_error"))["ts"]
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def test_a_well_behaved_cli_gives_its_reply_tokens_and_cost(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "ok")
    assert outcome.status == "succeeded"
    doc = receipt(outcome, "solo", "only", "worker")
    assert doc["mode"] == "cli" and doc["model"] == "claude-fake"
    assert doc["tokens"] == {"prompt": 100, "completion": 7, "total": 107}
    assert doc["cost"]["estimatedCostUsd"] == 0.0125  # the CLI's total_cost_usd
    transcript = (outcome.path / "solo" / doc["transcript_path"]).read_text()
    assert '"role": "assistant"' in transcript and "read " in transcript
    assert validate_run_dir(outcome.path) == []


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("exit_3", "Claude Code CLI exited with status 3 without a result line: fatal: something"),
        ("malformed", "line 2 of the claude output is not a JSON object"),
        ("no_result", "Claude Code CLI ended its output without a result line"),
        ("timeout", "Claude Code CLI did not finish within 1 s and was stopped (raise the step's"),
        (
            "ignores_sigterm",
            "did not finish within 1 s and was stopped; it ignored SIGTERM and was",
        ),
        ("overloaded", "the API answered HTTP 529: API Error: 529 overloaded"),
    ],
)
def test_a_misbehaving_cli_ends_the_step_cleanly(tmp_path: Path, case: str, message: str) -> None:
    outcome = _run(tmp_path, case)
    assert outcome.status == "failed"
    events = events_of(outcome)
    assert [e["kind"] for e in events][-2:] == ["step_error", "run_completed"]
    error = events[-2]["payload"]["error"]
    assert message in error, error
    assert _step_seconds(events) <= TIMEOUT_S + GRACE_S
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert not any(_alive(pid) for pid in pids), "the CLI's process group outlived the step"
    assert validate_run_dir(outcome.path) == []


def test_a_retryable_cli_error_is_retried_then_ends_the_step(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "overloaded")
    logs = [e for e in events_of(outcome) if e["kind"] == "log"]
    assert len(logs) == 2  # three attempts: 529 is retryable (docs/contract/steps.md#result-codes)
    assert receipt(outcome, "solo", "only", "worker")["attempt"] == 3


def test_a_missing_executable_names_it_and_how_to_install(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "ok", executable=tmp_path / "no-such-claude")
    events = events_of(outcome)
    error = events[-2]["payload"]["error"]
    assert events[-2]["kind"] == "step_error"
    assert f"no executable '{tmp_path / 'no-such-claude'}'" in error
    assert "npm install -g @anthropic-ai/claude-code" in error and "SWARM_CLAUDE_CLI" in error
    assert validate_run_dir(outcome.path) == []


def test_a_cli_that_leaves_a_daemon_holding_its_pipes_ends_its_step(tmp_path: Path) -> None:
    import threading

    outcomes: list[RunOutcome] = []
    worker = threading.Thread(target=lambda: outcomes.append(_run(tmp_path, "setsid_child")))
    worker.start()
    worker.join(timeout=60)  # a guard against the hang this test is about, not a speed limit
    hung = worker.is_alive()
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    survivors = [pid for pid in pids if _alive(pid)]
    for pid in survivors:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # so a failure here leaves nothing behind
    worker.join()
    assert not hung, "the step hung on pipes its CLI's daemon held open"
    assert survivors == [], "a process the CLI started in a session of its own outlived the step"
    (outcome,) = outcomes
    assert outcome.status == "succeeded", outcome.error
    assert validate_run_dir(outcome.path) == []


def test_a_daemon_the_cli_started_by_double_fork_and_setsid_does_not_outlive_the_step(
    tmp_path: Path,
) -> None:
    outcome = _run(tmp_path, "daemon")
    cli, daemon = [int(p) for p in (tmp_path / "pids").read_text().split()]
    alive = _alive(daemon)
    if alive:
        os.kill(daemon, signal.SIGKILL)  # so a failure here leaves nothing behind
    assert not alive, "the CLI's daemon outlived the step"
    assert not _alive(cli)
    assert outcome.status == "succeeded", outcome.error
