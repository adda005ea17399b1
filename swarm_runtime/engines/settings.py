"""What the built-in engines' factories are given, from resolved settings and the environment.

``runtime.yaml``'s ``engines.claude`` and ``engines.gemini`` (checked here), the credentials
the run must never write, and every registered engine's own section as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swarm_runtime.config import Settings
from swarm_runtime.credentials import Credentials
from swarm_runtime.errors import ConfigError


def engine_config(settings: Settings, env: Mapping[str, str]) -> dict[str, Any]:
    """What the claude-step engine factories need, from runtime.yaml and the environment.

    The API key comes from ``ANTHROPIC_API_KEY`` only (never from a file); the base URL from
    ``ANTHROPIC_BASE_URL``, else ``engines.claude.env.ANTHROPIC_BASE_URL`` in runtime.yaml.
    """
    claude = settings.claude
    file_env = claude.get("env") or {}
    if not isinstance(file_env, dict):
        raise ConfigError("runtime.yaml: 'engines.claude.env' must be a mapping")
    config: dict[str, Any] = {
        "api_key": env.get("ANTHROPIC_API_KEY") or None,
        "base_url": env.get("ANTHROPIC_BASE_URL") or file_env.get("ANTHROPIC_BASE_URL") or None,
    }
    for key in ("provider", "model"):
        if claude.get(key) is not None:
            config[key] = str(claude[key])
    prices = claude.get("prices")
    if prices is not None:  # a mapping of models, or the path of a JSON file of one
        config["prices"] = prices if isinstance(prices, dict) else str(prices)
    if claude.get("stream") is not None:
        if not isinstance(claude["stream"], bool):
            raise ConfigError(
                "runtime.yaml: engines.claude.stream must be true or false, "
                f"got {claude['stream']!r}"
            )
        config["stream"] = claude["stream"]
    if claude.get("max_tokens") is not None:
        value = claude["max_tokens"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(
                f"runtime.yaml: engines.claude.max_tokens must be >= 1, got {value!r}"
            )
        config["max_tokens"] = value
    where = settings.config_source or "runtime.yaml"
    config["process_env"] = dict(env)
    config["claude_cli"] = _cli_settings(claude, where, "claude", env.get("SWARM_CLAUDE_CLI"))
    if "timeout_s" in config["claude_cli"]:  # one call's deadline, in every mode of the engine
        config["timeout_s"] = config["claude_cli"]["timeout_s"]
    gemini = _cli_settings(settings.gemini, where, "gemini", env.get("SWARM_GEMINI_CLI"))
    config["gemini"] = {**gemini, "mode": settings.gemini_mode}
    config["record_via"] = settings.record_via
    config["sections"] = settings.engine_sections
    # Every credential the run is given, from the environment and runtime.yaml alike.
    config["credentials"] = Credentials.from_envs(
        env,
        config["claude_cli"].get("env", {}),
        gemini.get("env", {}),
        *map(_section_secrets, settings.engine_sections.items()),
    )
    return config


def _section_secrets(item: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A registered engine's settings that may be secrets: its keys and its ``env``, by name.

    ``engines.openai.api_key`` in runtime.yaml is as secret as ``OPENAI_API_KEY`` exported in
    the shell: the run refuses to write either.
    """
    name, body = item
    found = {f"engines.{name}.{key}": value for key, value in body.items()}
    inner = body.get("env")
    if isinstance(inner, dict):
        found.update({f"engines.{name}.env.{key}": value for key, value in inner.items()})
    return found


def _cli_settings(
    body: dict[str, Any], where: str, name: str, executable: str | None
) -> dict[str, Any]:
    """A CLI engine's settings from runtime.yaml, checked; the executable from the env first."""
    out: dict[str, Any] = {}
    if executable or body.get("cli") is not None:
        value = executable or body["cli"]
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: engines.{name}.cli must be a path or a command name")
        out["executable"] = value
    if body.get("model") is not None:
        out["model"] = str(body["model"])
    if body.get("timeout_s") is not None:
        value = body["timeout_s"]
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 86_400:
            raise ConfigError(
                f"{where}: engines.{name}.timeout_s must be a number of seconds above 0 and at "
                f"most 86400, got {value!r}"
            )
        out["timeout_s"] = float(value)
    if body.get("cli_args") is not None:
        value = body["cli_args"]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where}: engines.{name}.cli_args must be a list of strings")
        out["cli_args"] = list(value)
    if body.get("env") is not None:
        value = body["env"]
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise ConfigError(f"{where}: engines.{name}.env must map names to strings")
        out["env"] = dict(value)
    return out
