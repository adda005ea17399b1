"""``runtime.yaml``: where it is, how it is read, and what each of its keys may hold.

Every invalid value is a ConfigError naming the file and the key; resolving the values
against flags and the environment is :mod:`swarm_runtime.config`'s.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.budget_input import budget_from_mapping
from swarm_runtime.tools.config import TOOL_KEYS, tool_settings

DEFAULT_CONFIG_PATH = Path("swarm/config/runtime.yaml")
TOP_KEYS: tuple[str, ...] = (
    "mode",
    "runs_dir",
    "engines",
    "engine_strategy",
    "history",
    "max_run_mb",
)
TOP_KEYS += ("navigator", "budget", "max_retry_after_s", *TOOL_KEYS)
_SECTION_RE = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_HISTORY_KEYS = ("total_chars", "recent_chars", "older_chars")


def _load_yaml(path: Path) -> dict[str, Any]:
    import yaml

    from swarm_runtime.inputs.files import read_text_limited
    from swarm_runtime.inputs.yaml_input import describe_yaml_error, load_yaml

    try:
        raw = load_yaml(read_text_limited(path))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        message, line = describe_yaml_error(exc)
        where = f"{path}:{line}" if line else str(path)
        raise ConfigError(f"{where}: invalid YAML: {message}") from None
    except ValueError as exc:  # too big, not a regular file, not UTF-8, a bad date
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: runtime config must be a mapping (keys: {', '.join(TOP_KEYS)})")
    for key in raw:
        if key not in TOP_KEYS:
            raise ConfigError(f"{path}: unknown key '{key}' (allowed: {', '.join(TOP_KEYS)})")
    size = raw.get("max_run_mb")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        raise ConfigError(f"{path}: 'max_run_mb' must be a whole number of MiB >= 1, got {size!r}")
    if "runs_dir" in raw and not isinstance(raw["runs_dir"], str):
        raise ConfigError(f"{path}: 'runs_dir' must be a path (a string), got {raw['runs_dir']!r}")
    if "budget" in raw:
        raw["budget"] = budget_from_mapping(raw["budget"], f"{path}: 'budget'")
    _check_engines(path, raw.get("engines") or {})
    raw["tools_settings"] = tool_settings(raw, str(path))
    _check_navigator(path, raw.get("navigator") or {})
    strategy = raw.get("engine_strategy") or {}
    if not isinstance(strategy, dict) or not all(
        isinstance(steps, dict) and all(isinstance(v, str) for v in steps.values())
        for steps in strategy.values()
    ):
        raise ConfigError(f"{path}: 'engine_strategy' must map flow -> {{step: engine id}}")
    history = raw.get("history") or {}
    if not isinstance(history, dict):
        raise ConfigError(f"{path}: 'history' must be a mapping ({', '.join(_HISTORY_KEYS)})")
    for key, value in history.items():
        if key not in _HISTORY_KEYS:
            raise ConfigError(
                f"{path}: unknown key 'history.{key}' (allowed: {', '.join(_HISTORY_KEYS)})"
            )
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{path}: 'history.{key}' must be a whole number >= 0, got {value!r}")
    return raw


def _check_navigator(path: Path, navigator: Any) -> None:
    """``navigator:``: its ``mode`` (checked where it is chosen) and ``max_depth``."""
    if not isinstance(navigator, dict) or any(
        key not in ("mode", "max_depth") for key in navigator
    ):
        raise ConfigError(
            f"{path}: 'navigator' must be a mapping with 'mode' (llm, deterministic) and "
            "'max_depth' (the deepest flow stack, 1 to 16; default 4)"
        )
    depth = navigator.get("max_depth", 4)
    if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= 16:
        raise ConfigError(
            f"{path}: navigator.max_depth must be a whole number from 1 to 16, got {depth!r}"
        )


def _check_engines(path: Path, engines: Any) -> None:
    """runtime.yaml's ``engines``: each a mapping with a good name (its engine checks its keys)."""
    if not isinstance(engines, dict):
        raise ConfigError(f"{path}: 'engines' must be a mapping (claude, gemini, …)")
    for name, body in engines.items():
        if not isinstance(name, str) or not _SECTION_RE.fullmatch(name):
            raise ConfigError(
                f"{path}: 'engines.{name}': an engine's section is named in lower case "
                "letters, digits, '_' and '-' (claude, gemini, or a registered engine's)"
            )
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: 'engines.{name}' must be a mapping")


def read_config(config_path: Path | None, base: Path) -> tuple[dict[str, Any], str]:
    """runtime.yaml and where it was: ``--config``, else the default path under ``base``.

    No file at the default path is no config (empty, from nowhere); anything else there
    that is not a readable file is an error.
    """
    if config_path is not None:
        if not config_path.is_file():
            raise ConfigError(f"--config {config_path}: no such file")
        return _load_yaml(config_path), str(config_path)
    default = base / DEFAULT_CONFIG_PATH
    if default.is_file():
        return _load_yaml(default), str(default)
    if default.exists() or default.is_symlink():
        raise ConfigError(
            f"{default}: is not a readable file (a directory, a dangling "
            "symlink or a special file); make it a YAML file or remove it"
        )
    return {}, ""
