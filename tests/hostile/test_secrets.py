"""No credential reaches a run file in any mode: params, scenarios and error bodies are
scanned before their bytes reach the disk (SPEC §12)."""

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
    assert result.code == 1
    line = result.one_line_error("spec.json", variable, "sk-a…ef")
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
