"""Artifacts (docs/contract/steps.md#artifacts), ``swarm runs verify``, ``swarm schema
step_input|step_output``, and a retry shown on the progress line as it happens, as a user meets
them: ``swarm`` as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from swarm_runtime.cli.render import ProgressPrinter
from swarm_runtime.contracts.check import validate_run_dir
from tests.conftest import REPO

SCENARIO = """\
signal/frame_problem:
  artifacts:
    - name: problem.md
      content: "# The problem\\nCarts are abandoned at checkout.\\n"
      content_type: text/markdown
signal/author_requirements:
  result_code: retryable
  error: overloaded
  retry_after_ms: 1
  failing_attempts: 1
"""


def _swarm(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_artifacts_are_written_listed_and_verified(tmp_path: Path) -> None:
    (tmp_path / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    run = _swarm(
        tmp_path,
        "run",
        "signal",
        "--flows-dir",
        str(REPO / "flows"),
        "--runs-dir",
        "runs",
        "--scenario",
        "scenario.yaml",
        "--progress",
        "always",
    )
    assert run.returncode == 0, run.stderr
    # The retry shows on the progress line when it happens.
    assert (
        "[wait] retrying signal/author_requirements in 0.0 s (attempt 2 of 3): overloaded"
        in run.stdout
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    artifact = run_dir / "signal" / "artifacts" / "problem.md"
    assert artifact.read_text("utf-8").startswith("# The problem")
    receipt = json.loads(
        (run_dir / "signal/receipts/frame_problem-problem-framer.json").read_text()
    )
    (ref,) = receipt["artifacts"]
    assert ref["kind"] == "pointer" and ref["uri"] == "signal/artifacts/problem.md"
    assert ref["sizeBytes"] == artifact.stat().st_size and len(ref["sha256"]) == 64
    assert set(receipt["timing"]) == {
        "startedAt",
        "completedAt",
        "durationMs",
        "llmWaitMs",
        "toolCallMs",
        "ioMs",
    }
    assert validate_run_dir(run_dir) == []

    verified = _swarm(tmp_path, "runs", "verify", str(run_dir))
    assert verified.returncode == 0, verified.stderr
    assert "problem.md: ok" in verified.stdout and "1 artifact(s) verified" in verified.stdout

    # A copy of the run dir elsewhere verifies on its own, the original still in place.
    copy = tmp_path / "archive" / run_dir.name
    shutil.copytree(run_dir, copy)
    copied = _swarm(tmp_path, "runs", "verify", str(copy))
    assert copied.returncode == 0, copied.stdout + copied.stderr
    assert "problem.md: ok" in copied.stdout

    data = bytearray(artifact.read_bytes())
    data[2] ^= 0x01  # one changed byte
    artifact.write_bytes(bytes(data))
    changed = _swarm(tmp_path, "runs", "verify", run_dir.name, "--runs-dir", "runs")
    assert changed.returncode == 1
    assert "problem.md: changed: sha256" in changed.stdout
    assert "1 of 1 artifact(s) do not match" in changed.stderr


def test_schemas_of_the_envelopes_are_camel_case(tmp_path: Path) -> None:
    step_input = _swarm(tmp_path, "schema", "step_input")
    assert step_input.returncode == 0
    properties = json.loads(step_input.stdout)["properties"]
    assert {"runId", "attemptNumber", "maxAttempts", "capabilitiesMode"} <= set(properties)
    step_output = json.loads(_swarm(tmp_path, "schema", "step_output").stdout)
    assert {"resultCode", "requiresApproval", "timing"} <= set(step_output["properties"])
    assert "retryAfterMs" in step_output["$defs"]["StepError"]["properties"]
    unknown = _swarm(tmp_path, "schema", "nope")
    assert unknown.returncode == 2 and "step_input" in unknown.stderr


def test_the_progress_line_of_a_retry() -> None:
    import io

    out = io.StringIO()
    ProgressPrinter(out, live=False).swarm_event(
        {
            "kind": "log",
            "flow_key": "build",
            "step_id": "implement",
            "payload": {
                "message": "retrying build/implement in 1.000 s (attempt 2 of 3)",
                "attempt": 1,
                "max_attempts": 3,
                "error": "529 overloaded",
                "retry_in_ms": 1000,
            },
        }
    )
    assert out.getvalue() == (
        "[wait] retrying build/implement in 1.0 s (attempt 2 of 3): 529 overloaded\n"
    )


def test_the_event_table_names_every_kind_a_run_writes_with_its_payload_fields(
    tmp_path: Path,
) -> None:
    """``swarm schema events`` is read from the kinds' declarations: a real run's events fit it."""
    table = _swarm(tmp_path, "schema", "events")
    assert table.returncode == 0, table.stderr
    rows = {}
    for line in table.stdout.splitlines()[2:]:
        kind, stands, fields = line.split(None, 2)
        rows[kind] = (stands, fields.split(", "))
    assert rows["stack_push"] == (
        "after_route",
        ["paused_flow", "paused_step", "injected_flow", "current_depth"],
    )
    assert rows["step_error"] == ("step_error", ["status", "duration_ms", "error", "engine"])
    assert rows["routing_decision"][0] == "routing" and rows["log"][0] == "in_step"
    (tmp_path / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    args = ("--flows-dir", str(REPO / "flows"), "--runs-dir", "runs")
    run = _swarm(tmp_path, "run", "signal", *args, "--scenario", "scenario.yaml")
    assert run.returncode == 0, run.stderr
    (events,) = (tmp_path / "runs").glob("run-*/events.jsonl")
    seen = set()
    for line in events.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        _, fields = rows[event["kind"]]
        required = {name for name in fields if not name.endswith(("?", "..."))}
        assert required <= set(event["payload"]), event
        if "..." not in fields:
            assert set(event["payload"]) <= {name.rstrip("?") for name in fields}, event
        seen.add(event["kind"])
    assert {"run_created", "step_start", "step_end", "route_decision", "log"} <= seen


def test_the_schema_command_offers_every_contract_the_package_has() -> None:
    from swarm_runtime.cli.schema import NAMES
    from swarm_runtime.contracts import SCHEMAS

    assert NAMES == SCHEMAS  # the command keeps its own list so that `swarm` starts fast
