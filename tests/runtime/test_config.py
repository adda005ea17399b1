"""runtime.yaml: engine settings reach the engines, and a wrong value names the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm_runtime.config import engine_config, resolve_settings
from swarm_runtime.errors import ConfigError


def _config(tmp_path: Path, text: str) -> dict[str, object]:
    path = tmp_path / "runtime.yaml"
    path.write_text(text)
    return engine_config(resolve_settings(env={}, config_path=path, cwd=tmp_path), {})


def test_streaming_is_on_unless_runtime_yaml_turns_it_off(tmp_path: Path) -> None:
    assert "stream" not in _config(tmp_path, "engines:\n  claude:\n    model: m\n")
    assert _config(tmp_path, "engines:\n  claude:\n    stream: false\n")["stream"] is False


def test_a_stream_setting_that_is_not_true_or_false_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"engines.claude.stream must be true or false"):
        _config(tmp_path, "engines:\n  claude:\n    stream: sometimes\n")
