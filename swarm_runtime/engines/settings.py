"""The built-in engines' own settings, read and checked by the engines themselves.

``engines.claude`` and ``engines.gemini`` of runtime.yaml, and the environment.

Each returns the mapping the engine's builders read (:func:`.sdk.build_sdk_engine`,
:func:`.cli.build_cli_engine`). The API key comes from the environment only (never from a
file); the credentials no run may write are the edge's (:class:`EngineOptions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swarm_runtime.engines.options import EngineOptions, engine_setting, one_of
from swarm_runtime.errors import ConfigError

CLAUDE_KEYS = (
    "mode",
    "provider",
    "model",
    "max_tokens",
    "prices",
    "env",
    "stream",
    "cli",
    "cli_args",
    "timeout_s",
    "record_via",
)
"""What ``engines.claude`` may hold (``mode`` is read as the run's ``mode``: the old key)."""
GEMINI_KEYS = ("mode", "model", "cli", "cli_args", "timeout_s", "env")
OPENAI_KEYS = (
    "provider",
    "base_url",
    "api_key_env",
    "model",
    "max_tokens",
    "stream",
    "timeout_s",
    "prices",
)
"""What ``engines.openai`` in runtime.yaml may hold."""
GEMINI_MODES = ("stub", "cli")
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
OPENAI_DEFAULT_KEY_ENV = "OPENAI_API_KEY"
RECORD_VIA = ("sdk", "cli")


def claude_config(options: EngineOptions) -> dict[str, Any]:
    """What the claude-step builders need, from ``engines.claude`` and the environment.

    The base URL from ``ANTHROPIC_BASE_URL``, else ``engines.claude.env.ANTHROPIC_BASE_URL``.
    """
    claude, env, where = options.section, options.env, options.where
    file_env = claude.get("env") or {}
    if not isinstance(file_env, dict):
        raise ConfigError(f"{where}: 'engines.claude.env' must be a mapping")
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
        config["stream"] = check_bool(claude["stream"], f"{where}: engines.claude.stream")
    if claude.get("max_tokens") is not None:
        config["max_tokens"] = check_count(
            claude["max_tokens"], f"{where}: engines.claude.max_tokens"
        )
    config["process_env"] = dict(env)
    config["claude_cli"] = cli_section(claude, where, "claude", env.get("SWARM_CLAUDE_CLI"))
    if "timeout_s" in config["claude_cli"]:  # one call's deadline, in every mode of the engine
        config["timeout_s"] = config["claude_cli"]["timeout_s"]
    config["record_via"] = engine_setting(
        options, "record_via", env="SWARM_RECORD_VIA", read=one_of(*RECORD_VIA), default="sdk"
    )
    return config


def gemini_config(options: EngineOptions) -> dict[str, Any]:
    """What gemini-step needs: its CLI's settings and its own mode (stub unless told)."""
    gemini = cli_section(
        options.section, options.where, "gemini", options.env.get("SWARM_GEMINI_CLI")
    )
    texts = {"1": "stub", "0": "cli"}

    def read_env(raw: str) -> str:
        if raw not in texts:
            raise ValueError("is not one of 1 (stub, the default), 0 (run the Gemini CLI)")
        return texts[raw]

    mode = engine_setting(
        options,
        "mode",
        env="SWARM_GEMINI_STUB",
        flag="--gemini-mode",
        read=one_of(*GEMINI_MODES),
        read_env=read_env,
        default="stub",
    )
    return {"gemini": gemini, "mode": mode, "process_env": dict(options.env)}


def check_bool(value: Any, where: str) -> bool:
    """``value`` when it is true or false; else a ConfigError naming ``where``."""
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def check_count(value: Any, where: str) -> int:
    """``value`` when it is a whole number >= 1; else a ConfigError naming ``where``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{where} must be >= 1, got {value!r}")
    return value


def check_seconds(value: Any, where: str) -> float:
    """``value`` as seconds above 0 and at most a day; else a ConfigError naming ``where``."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 86_400:
        raise ConfigError(
            f"{where} must be a number of seconds above 0 and at most 86400, got {value!r}"
        )
    return float(value)


def cli_section(
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
        out["timeout_s"] = check_seconds(body["timeout_s"], f"{where}: engines.{name}.timeout_s")
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


def section_secrets(item: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An engine's settings that may be secrets: its keys and its ``env``, by name.

    ``engines.openai.api_key`` in runtime.yaml is as secret as ``OPENAI_API_KEY`` exported in
    the shell: the run refuses to write either. A ``*_env`` setting (``api_key_env``) names
    the variable that holds a key: the name is no secret (:func:`named_secrets`).
    """
    name, body = item
    found = {
        f"engines.{name}.{key}": value
        for key, value in body.items()
        if not (key.endswith("_env") and isinstance(value, str))
    }
    inner = body.get("env")
    if isinstance(inner, dict):
        found.update({f"engines.{name}.env.{key}": value for key, value in inner.items()})
    return found


def named_secrets(
    sections: Mapping[str, dict[str, Any]], env: Mapping[str, str]
) -> list[tuple[str, str]]:
    """The values of the variables ``*_env`` settings name (``api_key_env: LLM_AUTH``).

    Secret whatever the variable is called: a key read from ``LLM_AUTH`` is as secret as
    one read from ``OPENAI_API_KEY``.
    """
    return [
        (value, env[value])
        for body in sections.values()
        for key, value in body.items()
        if key.endswith("_env") and isinstance(value, str) and env.get(value)
    ]


def openai_settings(options: EngineOptions) -> dict[str, Any]:
    """``engines.openai`` and the environment, checked: base URL, key, model, limits."""
    section, env, where = options.section, options.env, options.where
    key_env = section.get("api_key_env", OPENAI_DEFAULT_KEY_ENV)
    if not isinstance(key_env, str) or not key_env:
        raise ConfigError(f"{where}: engines.openai.api_key_env must name a variable")
    base_url = env.get("OPENAI_BASE_URL") or section.get("base_url") or None
    if base_url is not None and not isinstance(base_url, str):
        raise ConfigError(f"{where}: engines.openai.base_url must be a URL")
    provider = str(section.get("provider") or ("openai_compat" if base_url else "openai"))
    if provider not in ("openai", "openai_compat"):
        raise ConfigError(
            f"{where}: engines.openai.provider {provider!r} is not openai or openai_compat"
        )
    out: dict[str, Any] = {
        "api_key": env.get(key_env) or None,
        "key_env": key_env,
        "base_url": base_url,
        "provider": provider,
        "model": str(section.get("model") or OPENAI_DEFAULT_MODEL),
        "stream": True,
        "max_tokens": 0,
        "timeout_s": None,
        "prices": section.get("prices"),
    }
    if section.get("stream") is not None:
        out["stream"] = check_bool(section["stream"], f"{where}: engines.openai.stream")
    if section.get("max_tokens") is not None:
        out["max_tokens"] = check_count(
            section["max_tokens"], f"{where}: engines.openai.max_tokens"
        )
    if section.get("timeout_s") is not None:
        out["timeout_s"] = check_seconds(section["timeout_s"], f"{where}: engines.openai.timeout_s")
    return out
