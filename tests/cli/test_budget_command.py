"""``swarm run --budget`` and runtime.yaml's ``budget:`` as a user runs them (docs/budgets.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.runtime.helpers import step_yaml, write_flow
from tests.runtime.orchestrator.conftest import LOOP

SCENARIO = """\
author: {tokens: {prompt: 6, completion: 4}}
critic:
  - {tokens: {prompt: 6, completion: 4}, handoff: {status: NEEDS_WORK}}
  - {tokens: {prompt: 6, completion: 4}, handoff: {status: VERIFIED}}
ship: {tokens: {prompt: 6, completion: 4}}
"""
"""Every call spends 10 tokens; loopy runs author, critic, author, critic, ship (50)."""


def _project(root: Path, head: str = "budget: {tokens: 100}\n") -> Path:
    flows = root / "flows"
    write_flow(
        flows,
        "loopy",
        [step_yaml("author"), step_yaml("critic", LOOP), step_yaml("ship")],
        head=head,
    )
    (root / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    return flows


def _swarm(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_run_past_its_budget_fails_and_the_table_shows_the_shares(tmp_path: Path) -> None:
    _project(tmp_path)
    args = ("run", "loopy", "--flows-dir", "flows", "--scenario", "scenario.yaml")
    done = _swarm(tmp_path, *args, "--budget", "tokens=35,cost_usd=1")
    assert done.returncode == 1, done.stderr
    assert "error: loopy/critic: budget_exceeded: run budget: tokens 40 > limit 35" in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["flow", "steps", "loops", "tokens", "cost_usd", "time_ms", "budget"]
    assert lines[2].startswith("loopy") and lines[2].endswith("40% (tokens of flow loopy)")
    assert lines[3].startswith("total") and lines[3].endswith("114% (tokens of the run)")
    (run_dir,) = (tmp_path / "swarm" / "runs").iterdir()
    assert f"run {run_dir.name}: failed" in done.stdout
    receipt = json.loads((run_dir / "loopy" / "receipts" / "critic-worker.json").read_text())
    assert receipt["result_code"] == "fatal" and receipt["error"].startswith("budget_exceeded")
    assert _swarm(tmp_path, "runs", "validate", str(run_dir)).returncode == 0
    within = _swarm(tmp_path, *args, "--budget", "tokens=50")
    assert within.returncode == 0, within.stderr
    assert within.stdout.splitlines()[3].endswith("100% (tokens of the run)")


def test_a_run_with_no_budget_prints_the_table_as_before(tmp_path: Path) -> None:
    _project(tmp_path, head="")
    done = _swarm(tmp_path, "run", "loopy", "--flows-dir", "flows")
    assert done.returncode == 0, done.stderr
    assert "budget" not in done.stdout.splitlines()[0]


def test_runtime_yaml_sets_the_run_budget_and_the_flag_wins(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    _project(tmp_path, head="")
    config = tmp_path / "swarm" / "config" / "runtime.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("budget: {tokens: 15}\n")
    args = ("run", "loopy", "--flows-dir", "flows", "--scenario", "scenario.yaml")
    from_config = cli(*args)
    assert from_config.code == 1
    assert "budget_exceeded: run budget: tokens 20 > limit 15" in from_config.err
    from_flag = cli(*args, "--budget", "tokens=25")
    assert from_flag.code == 1
    assert "budget_exceeded: run budget: tokens 30 > limit 25" in from_flag.err
    config.write_text("budget: {tokens: 15, money: 3}\n")
    bad = cli(*args)
    assert bad.code == 2
    assert f"{config}: 'budget': unknown budget key 'money'" in bad.err


def test_a_bad_budget_flag_is_a_usage_error_naming_the_key(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    _project(tmp_path)
    for flag, named in [
        ("tokens=10,money=2", "unknown budget key 'money' (allowed: tokens"),
        ("tokens=many", "tokens must be a whole number >= 1, got 'many'"),
        ("cost_usd=-1", "cost_usd must be a number >= 0 (USD), got -1"),
    ]:
        result = cli("run", "loopy", "--flows-dir", "flows", "--budget", flag)
        assert result.code == 2, flag
        (line,) = result.err.strip().splitlines()
        assert line.startswith("swarm: error: --budget") and named in line, line
    assert not (tmp_path / "swarm" / "runs").exists()


def test_a_budget_just_past_its_limit_never_reads_100_percent(tmp_path: Path) -> None:
    write_flow(tmp_path / "flows", "one", [step_yaml("only")])
    (tmp_path / "scenario.yaml").write_text("only: {tokens: {prompt: 300, completion: 101}}\n")
    args = ("run", "one", "--flows-dir", "flows", "--scenario", "scenario.yaml")
    over = _swarm(tmp_path, *args, "--budget", "tokens=400")
    assert over.returncode == 1, over.stderr
    assert "budget_exceeded: run budget: tokens 401 > limit 400" in over.stderr
    assert over.stdout.splitlines()[3].endswith("101% (tokens of the run)")
    under = _swarm(tmp_path, *args, "--budget", "tokens=402")
    assert under.returncode == 0, under.stderr
    assert under.stdout.splitlines()[3].endswith("99% (tokens of the run)")
