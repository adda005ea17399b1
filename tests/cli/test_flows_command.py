"""``swarm flows``: listing and validating flows as a user does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult


def test_flows_list_shows_a_broken_flow_instead_of_failing(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    (tmp_path / "flows" / "broken.yaml").write_text("key: broken\n")
    result = cli("flows", "list")
    assert result.code == 0
    assert "INVALID:" in result.out and "signal" in result.out
