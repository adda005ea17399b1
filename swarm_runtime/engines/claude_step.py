"""``claude-step`` and ``gemini-step``: what each mode of the built-in engines builds.

``claude-step``: ``stub`` (no model), ``sdk`` (the anthropic SDK), ``record`` (through the
SDK and the HTTP layers, or through the Claude Code CLI when ``record_via: cli``),
``replay`` (each step the way its cassette was recorded) and ``cli`` (the Claude Code
CLI). ``gemini-step`` has its own mode (``engines.gemini.mode``, ``SWARM_GEMINI_STUB``,
``--gemini-mode``): ``stub`` or ``cli``, whatever the run's mode.
"""

from __future__ import annotations

from typing import Any

from swarm_runtime.engines.base import DEFAULT_TIMEOUT_S, StepEngine
from swarm_runtime.engines.options import EngineOptions
from swarm_runtime.engines.request_parts import Expected
from swarm_runtime.engines.settings import claude_config, gemini_config
from swarm_runtime.errors import ConfigError


def stub_engine(
    engine_id: str, engine_short: str, options: EngineOptions, timeout_s: Any, api_name: str = ""
) -> StepEngine:
    """The stub under ``engine_id``: no model is called."""
    from swarm_runtime.engines.stub import StubEngine

    return StubEngine(
        engine_id=engine_id,
        engine_short=engine_short,
        scenario=options.scenario,
        sleep=options.sleep,
        timeout_s=float(timeout_s or DEFAULT_TIMEOUT_S),
        api_name=api_name,
        options=options,
    )


def no_mode(engine_id: str, mode: str, available: str) -> ConfigError:
    """The error for a mode an engine does not have."""
    return ConfigError(
        f"engine '{engine_id}' has no '{mode}' mode in this version (available: {available})"
    )


def claude_step(options: EngineOptions) -> StepEngine:
    """``claude-step`` in the run's mode."""
    config = claude_config(options)
    mode = options.mode
    if mode == "stub":
        return stub_engine("claude-step", "claude", options, config.get("timeout_s"))
    if mode == "cli":
        return _cli("claude-step", config, options)
    if mode == "sdk" or (mode == "record" and config["record_via"] == "sdk"):
        return _sdk(config, options)
    if mode == "record":
        return _cli("claude-step", config, options)
    if mode == "replay":
        from swarm_runtime.engines.cassette import require_vcrpy
        from swarm_runtime.engines.replay_by_cassette import ReplayByCassette

        assert options.cassettes is not None
        require_vcrpy()  # say what to install before the first step, not at it
        return ReplayByCassette(
            options.cassettes,
            sdk=lambda: _sdk(config, options),
            cli=lambda: _cli("claude-step", config, options),
        )
    raise no_mode("claude-step", mode, "stub, sdk, record, replay, cli")


def gemini_step(options: EngineOptions) -> StepEngine:
    """``gemini-step`` in its own mode (stub unless told): the run's mode is claude-step's."""
    config = gemini_config(options)
    if config["mode"] == "stub":
        return stub_engine("gemini-step", "gemini", options, config["gemini"].get("timeout_s"))
    return _cli("gemini-step", config, options)


def _sdk(config: dict[str, Any], options: EngineOptions) -> StepEngine:
    from swarm_runtime.engines.fault_replies import AnthropicWire
    from swarm_runtime.engines.http_layers import HttpLayers
    from swarm_runtime.engines.sdk import build_sdk_engine

    layers = HttpLayers(options, AnthropicWire(), "claude-step")
    return build_sdk_engine(config, engine_id="claude-step", engine_short="claude", layers=layers)


def _cli(engine_id: str, config: dict[str, Any], options: EngineOptions) -> StepEngine:
    """The CLI engine of ``engine_id``; with cassettes, through the loopback cassette server."""
    from swarm_runtime.engines.cli import build_cli_engine

    tools = options.tools
    if options.cassettes is None:
        return build_cli_engine(engine_id, config, tools=tools)
    config = {**config, "replays": options.replays}
    from swarm_runtime.engines import cli_cassette

    engine_class = (
        cli_cassette.CassetteGeminiCliEngine
        if engine_id == "gemini-step"
        else cli_cassette.CassetteClaudeCliEngine
    )
    return build_cli_engine(
        engine_id,
        config,
        engine_class=engine_class,
        cassettes=options.cassettes,
        faults=options.faults,
        tools=tools,
    )


def missing(options: EngineOptions) -> str | None:
    """What a mode of claude-step lacks before any step runs (None: nothing).

    The anthropic package for sdk, record and replay; a key or an Anthropic-compatible
    server for sdk and record; the Claude Code CLI for cli (and a recording through it).
    """
    import importlib.util
    import shutil

    from swarm_runtime.install import install_command

    mode = options.mode
    config = claude_config(options)
    via_cli = mode == "cli" or (mode == "record" and config["record_via"] == "cli")
    needs_sdk = mode in ("sdk", "record", "replay") and not via_cli
    if needs_sdk and importlib.util.find_spec("anthropic") is None:
        return f"needs the anthropic package for claude-step: {install_command('sdk')}"
    if mode in ("sdk", "record") and not via_cli:
        if config["api_key"] or config["base_url"]:
            return None
        return (
            "makes live API calls and needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a "
            "local Anthropic-compatible server) for claude-step"
        )
    if via_cli:
        executable = config["claude_cli"].get("executable", "claude")
        if shutil.which(executable) is None:
            return (
                f"runs the Claude Code CLI, but {executable!r} is not on PATH; install it or "
                "set SWARM_CLAUDE_CLI to its path"
            )
    return None


def expected(options: EngineOptions) -> Expected:
    """The model and parameters claude-step's Messages API calls send with these settings."""
    from swarm_runtime.engines.request_parts import Expected
    from swarm_runtime.engines.sdk import DEFAULT_MAX_TOKENS, DEFAULT_MODEL

    config = claude_config(options)
    return Expected(
        model=str(config.get("model") or DEFAULT_MODEL),
        params={
            "max_tokens": int(config.get("max_tokens") or DEFAULT_MAX_TOKENS),
            **({"stream": True} if config.get("stream", True) else {}),
        },
    )
