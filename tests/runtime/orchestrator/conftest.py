"""Fixtures of the orchestrator tests: a flow with a microloop."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtime.helpers import (
    step_yaml,
    write_flow,
)

LOOP = """\
routing:
  kind: microloop
  loop_target: author
  loop_condition_field: status
  loop_success_values: [VERIFIED]
  max_iterations: 3
"""


@pytest.fixture
def loop_flows(tmp_path: Path) -> Path:
    flows = tmp_path / "flows"
    write_flow(flows, "loopy", [step_yaml("author"), step_yaml("critic", LOOP), step_yaml("ship")])
    return flows
