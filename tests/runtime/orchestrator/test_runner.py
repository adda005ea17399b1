"""The orchestrator's own settings are checked when it is built."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.runner import Orchestrator
from tests.conftest import SHIPPED_FLOWS


@pytest.mark.parametrize("value", [0, -1, True])
def test_a_step_limit_below_one_is_refused(tmp_path: Path, value: int) -> None:
    with pytest.raises(ConfigError, match=r"max_steps must be a whole number >= 1"):
        Orchestrator(FlowRegistry(SHIPPED_FLOWS), runs_dir=tmp_path, max_steps=value)
