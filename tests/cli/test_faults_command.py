"""``swarm run --faults FILE``, as a user runs it: a real process, a plan file, the run's files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHIPPED_FLOWS
from tests.fakes.anthropic_server import AnthropicServer

KEY = "sk-ant-cli-faults-not-a-key"


def _swarm(cwd: Path, *args: str, server: AnthropicServer | None = None) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    env["SWARM_CACHE_DIR"] = os.environ["SWARM_CACHE_DIR"]
    if server is not None:
        env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY=KEY)
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", "run", "stepwise-demo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(SHIPPED_FLOWS, tmp_path / "flows")
    return tmp_path


def _events(runs: Path) -> list[dict[str, Any]]:
    (run,) = runs.iterdir()
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def _receipt(runs: Path, name: str) -> dict[str, Any]:
    (run,) = runs.iterdir()
    return json.loads((run / "stepwise-demo" / "receipts" / name).read_text())


def test_a_429_then_a_clean_attempt_succeeds_on_attempt_2(project: Path) -> None:
    (project / "plan.yaml").write_text(
        "read_request:\n  - {kind: http_429, retry_after_ms: 0}\n  - null\n"
    )
    done = _swarm(project, "--faults", "plan.yaml", "--runs-dir", "runs")
    assert done.returncode == 0, done.stderr
    assert _receipt(project / "runs", "read_request-demo-intake.json")["attempt"] == 2
    logs = [e["payload"] for e in _events(project / "runs") if e["kind"] == "log"]
    assert logs[0]["fault"] == "http_429"
    assert logs[0]["message"].startswith("fault plan plan.yaml: http_429 (retry_after_ms 0)")
    assert logs[1]["message"].startswith("retrying stepwise-demo/read_request")


def test_faults_past_the_attempts_fail_the_run_with_exit_1(project: Path) -> None:
    # retry_after_ms 0: a process's retries wait what the fault says, here nothing.
    fault = {"kind": "http_429", "retry_after_ms": 0}
    (project / "plan.json").write_text(json.dumps({"write_spec": [fault] * 3}))
    done = _swarm(project, "--faults", "plan.json", "--runs-dir", "runs")
    assert done.returncode == 1
    assert "stepwise-demo/write_spec: still failing after 3 attempt(s)" in done.stderr
    assert _events(project / "runs")[-1]["payload"]["status"] == "failed"


@pytest.mark.parametrize(
    ("plan", "expected"),
    [
        ("write_spec: [http_418]\n", "plan.yaml: write_spec[0]: unknown fault kind 'http_418'"),
        ("write_specs: [http_500]\n", "plan.yaml: 'write_specs' names no step"),
        ("write_spec: [{kind: timeout, code: 3}]\n", "timeout takes no fields, not 'code'"),
        ("write_spec: [{kind: [http_500]}]\n", "write_spec[0]: unknown fault kind ['http_500']"),
        ("write_spec: [{kind: {a: 1}}]\n", "plan.yaml: write_spec[0]: unknown fault kind {'a': 1}"),
    ],
)
def test_a_bad_plan_exits_2_naming_the_file_and_key(
    project: Path, plan: str, expected: str
) -> None:
    (project / "plan.yaml").write_text(plan)
    done = _swarm(project, "--faults", "plan.yaml", "--runs-dir", "runs")
    assert done.returncode == 2
    assert expected in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (project / "runs").exists()


def test_a_replay_with_faults_runs_the_sdks_error_path_and_records_nothing(
    project: Path,
) -> None:
    server = AnthropicServer().start()
    try:
        done = _swarm(
            project, "--mode", "record", "--cassette-dir", "cas", "--runs-dir", "a", server=server
        )
    finally:
        server.stop()  # the replay below has no server to reach
    assert done.returncode == 0, done.stderr
    before = {p: p.read_bytes() for p in (project / "cas").rglob("*.yaml")}
    (project / "plan.yaml").write_text(
        "read_request: [{kind: http_429, retry_after_ms: 0}]\nwrite_spec: [stream_cut]\n"
    )
    done = _swarm(
        project,
        "--mode",
        "replay",
        "--cassette-dir",
        "cas",
        "--faults",
        "plan.yaml",
        "--runs-dir",
        "b",
    )
    assert done.returncode == 0, done.stderr
    for name in ("read_request-demo-intake.json", "write_spec-demo-spec-writer.json"):
        receipt = _receipt(project / "b", name)
        assert (receipt["attempt"], receipt["result_code"]) == (2, "ok")
        assert receipt["cassette"].startswith("stepwise-demo/")
    assert {p: p.read_bytes() for p in (project / "cas").rglob("*.yaml")} == before


def test_a_scenario_file_carries_its_faults_beside_its_outcomes(project: Path) -> None:
    (project / "scenario.yaml").write_text(
        "write_spec: {tokens: {prompt: 10, completion: 5}}\n"
        "faults:\n  write_spec: [{kind: http_429, retry_after_ms: 0}, null, empty_reply]\n"
    )
    done = _swarm(project, "--scenario", "scenario.yaml", "--runs-dir", "runs")
    assert done.returncode == 0, done.stderr
    receipt = _receipt(project / "runs", "write_spec-demo-spec-writer.json")
    assert (receipt["attempt"], receipt["tokens"]["prompt"]) == (2, 10)
    faults = [e["payload"].get("fault") for e in _events(project / "runs") if e["kind"] == "log"]
    assert [f for f in faults if f] == ["http_429"]  # write_spec runs once: 2 entries used
