"""runtime.yaml means the same under pytest as under ``swarm run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.helpers import step_yaml, write_flow

RUNTIME_YAML = """\
engine_strategy:
  triage:
    summarise: gemini-step
history:
  total_chars: 300
  recent_chars: 200
  older_chars: 40
"""

VOLATILE = ("run_id", "started_at", "completed_at", "duration_ms", "timing")


def _receipts(runs_dir: Path) -> dict[str, Any]:
    (run_dir,) = [p for p in runs_dir.iterdir() if p.is_dir()]
    found: dict[str, Any] = {}
    for path in sorted(run_dir.glob("*/receipts/*.json")):
        receipt = json.loads(path.read_text(encoding="utf-8"))
        found[path.name] = {k: v for k, v in receipt.items() if k not in VOLATILE}
    for path in sorted(run_dir.glob("*/llm/*.jsonl")):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        found[path.name] = [{k: v for k, v in x.items() if k != "timestamp"} for x in lines]
    return found


def test_runtime_yaml_gives_the_same_receipts_under_pytest_and_swarm_run(
    swarm_pytester: pytest.Pytester,
) -> None:
    project = swarm_pytester.path
    write_flow(
        project / "flows",
        "triage",
        [step_yaml("read_ticket"), step_yaml("summarise"), step_yaml("reply", agent="writer")],
    )
    (project / "swarm" / "config").mkdir(parents=True)
    (project / "swarm" / "config" / "runtime.yaml").write_text(RUNTIME_YAML)
    swarm_pytester.makepyfile(
        """
        def test_triage(flow_runner):
            record = flow_runner("triage", ticket="I was charged twice.")
            assert record.status == "succeeded"
        """
    )
    under_pytest = project / "pytest-runs"
    swarm_pytester.runpytest(f"--swarm-runs-dir={under_pytest}").assert_outcomes(passed=1)

    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "swarm_runtime.cli.main", "run", "triage"),
            *("--runs-dir", "cli-runs", "--param", "ticket=I was charged twice."),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr

    cli, plugin = _receipts(project / "cli-runs"), _receipts(under_pytest)
    # What runtime.yaml asks for is there: the strategy's engine, the history budget.
    assert cli["summarise-worker.json"]["engine"] == "gemini-step"
    assert "reply-writer-claude.jsonl" in cli and "summarise-worker-gemini.jsonl" in cli
    assert cli["reply-writer.json"]["context_truncation"]["chars_dropped"] > 0
    # ... and pytest runs the flow the same way, down to the prompts.
    assert plugin == cli


def test_the_old_mode_key_still_works_and_both_pytest_and_swarm_run_say_what_to_write(
    swarm_pytester: pytest.Pytester,
) -> None:
    project = swarm_pytester.path
    write_flow(project / "flows", "triage", [step_yaml("read_ticket")])
    (project / "swarm" / "config").mkdir(parents=True)
    (project / "swarm" / "config" / "runtime.yaml").write_text(
        "engines:\n  claude:\n    mode: stub\n"
    )
    swarm_pytester.makepyfile(
        """
        def test_triage(flow_runner):
            assert flow_runner("triage").status == "succeeded"
        """
    )
    result = swarm_pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["swarm: note: *engines.claude.mode is the run's mode*write 'mode: stub' at the top*"]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    done = subprocess.run(
        [sys.executable, "-m", "swarm_runtime", "run", "triage", "--runs-dir", "runs"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "write 'mode: stub' at the top of the file instead" in done.stderr
