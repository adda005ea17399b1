"""No credential reaches a run file in any mode: params, scenarios and error bodies are
scanned before their bytes reach the disk (docs/bad-input.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import FAKE_KEY, Outcome, files_under


def _holds(root: Path, value: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "GITHUB_TOKEN"])
def test_stub_mode_refuses_a_credential_in_a_param_before_any_run_dir(
    swarm: Callable[..., Outcome], variable: str
) -> None:
    result = swarm(
        "run",
        "stepwise-demo",
        "--runs-dir",
        "runs",
        "--param",
        f"token={FAKE_KEY}",
        env={variable: FAKE_KEY},
    )
    assert result.code == 2  # refused where params enter: a usage error
    line = result.one_line_error(
        "param 'token' holds the value of", variable, f"sk-a…, {len(FAKE_KEY)} characters"
    )
    assert FAKE_KEY not in line
    assert not (result.cwd / "runs").exists() or not files_under(result.cwd / "runs")
    assert not _holds(result.cwd, FAKE_KEY)


def test_stub_mode_refuses_a_credential_in_a_scenario(swarm: Callable[..., Outcome]) -> None:
    # The scenario is kept in spec.json (a resume replays it): refused there, before the
    # run dir exists.
    project = swarm("--help").cwd
    (project / "s.yaml").write_text(f"write_spec:\n  text: 'the key is {FAKE_KEY}'\n")
    result = swarm(
        "run",
        "stepwise-demo",
        "--scenario",
        "s.yaml",
        "--runs-dir",
        "runs",
        env={"ANTHROPIC_API_KEY": FAKE_KEY},
    )
    assert result.code == 1
    result.one_line_error("spec.json", "ANTHROPIC_API_KEY")
    assert FAKE_KEY not in result.err + result.out
    assert _holds(project, FAKE_KEY) == [str(project / "s.yaml")]  # only the input holds it
    assert not (project / "runs").exists()


def test_a_key_only_in_runtime_yaml_echoed_by_the_cli_is_never_written(
    swarm: Callable[..., Outcome],
) -> None:
    import sys

    from tests.runtime.helpers import step_yaml, write_flow

    project = swarm("--help").cwd
    write_flow(project / "flows", "solo", [step_yaml("only")])
    fake = Path(__file__).parent.parent / "runtime" / "engines" / "fake_cli.py"
    claude = project / "claude"
    claude.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    claude.chmod(0o755)
    secret = "zq9xK2pw"  # 8 characters, in runtime.yaml only (not in the environment)
    config = project / "swarm" / "config" / "runtime.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "engines:\n  claude:\n"
        f"    cli: {claude}\n"
        "    env:\n"
        f"      DB_PASSWORD: {secret}\n"
        "      FAKE_CLI_CASE: echo\n"
        "      FAKE_CLI_ECHO: DB_PASSWORD\n"
        f"      FAKE_CLI_PIDS: {project / 'pids'}\n"
    )
    result = swarm("run", "solo", "--mode", "cli", "--runs-dir", "runs")
    assert result.code == 1, result.err
    assert "DB_PASSWORD" in result.out + result.err
    # Nothing of a short secret shows: not even a fragment in a message or a run file.
    fragments = {secret[i : i + 3] for i in range(len(secret) - 2)}
    shown = (
        result.out
        + result.err
        + "".join(
            p.read_text("utf-8", "replace") for p in (project / "runs").rglob("*") if p.is_file()
        )
    )
    assert not [f for f in fragments if f in shown], shown
    assert _holds(project, secret) == [str(config)]  # only the config the user wrote


def test_a_key_pasted_as_resume_input_is_refused_and_the_run_stays_blocked(
    swarm: Callable[..., Outcome],
) -> None:
    from swarm_runtime.contracts.check import validate_run_dir

    project = swarm("--help").cwd
    (project / "s.yaml").write_text("frame_problem:\n  result_code: blocked\n  error: approve?\n")
    env = {"ANTHROPIC_API_KEY": FAKE_KEY}
    blocked = swarm("run", "signal", "--scenario", "s.yaml", "--runs-dir", "runs", env=env)
    assert blocked.code == 130, blocked.err
    (run_dir,) = (project / "runs").iterdir()
    pasted = swarm("resume", str(run_dir), "--input", f"here: {FAKE_KEY}", env=env)
    assert pasted.code == 2
    pasted.one_line_error("ANTHROPIC_API_KEY", "left as it is")
    assert not _holds(project, FAKE_KEY)
    resumed = swarm("resume", str(run_dir), "--input", "approve", "--progress", "never", env=env)
    assert resumed.code == 0, resumed.err
    assert validate_run_dir(run_dir) == []
