"""Settings from flags, environment and ``runtime.yaml``, resolved in one place (SPEC §5.3).

Precedence, highest first: explicit argument (a CLI flag, an API argument, a pytest option)
→ environment → ``runtime.yaml`` → default. Every invalid value is a ConfigError that
says where it came from. The environment is passed in as a mapping, so only the edges
(the CLI, the pytest plugin) ever read ``os.environ``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.budget_input import budget_from_mapping
from swarm_runtime.flow.spec import Budget
from swarm_runtime.record import Record, field

MODES = ("stub", "replay", "record", "sdk", "cli")
"""Every mode, in the order messages list them: the stub, recorded sdk calls, live ones."""
DEFAULT_CONFIG_PATH = Path("swarm/config/runtime.yaml")
DEFAULT_RUNS_DIR = Path("swarm/runs")
_TOP_KEYS: tuple[str, ...] = ("runs_dir", "engines", "engine_strategy", "history", "max_run_mb")
_TOP_KEYS += ("navigator", "budget")
NAVIGATOR_MODES = ("llm", "deterministic")
"""How a navigator step's move is chosen (SPEC §4.5): ask the navigator, or take the first
candidate whose condition holds, with no call."""
_ENGINE_KEYS = {
    "claude": (
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
    ),
    "gemini": ("mode", "model", "cli", "cli_args", "timeout_s", "env"),
}
GEMINI_MODES = ("stub", "cli")
RECORD_VIA = ("sdk", "cli")
_SECTION_RE = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_HISTORY_KEYS = ("total_chars", "recent_chars", "older_chars")


class Settings(Record):
    """Resolved settings, each with the place it came from (for messages)."""

    mode: str = "stub"
    runs_dir: Path = DEFAULT_RUNS_DIR
    flows_dir: Path | None = None
    durable: bool = False
    engine_strategy: dict[str, dict[str, str]] = field(default_factory=dict)
    history: dict[str, int] = field(default_factory=dict)
    claude: dict[str, Any] = field(default_factory=dict)
    gemini: dict[str, Any] = field(default_factory=dict)
    engine_sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    """runtime.yaml's ``engines.<name>`` of engines not built in, as written: each is its
    registered engine's to read (``EngineRegistry.register(..., section=name)``)."""
    gemini_mode: str = "stub"
    """gemini-step's mode: ``stub`` or ``cli`` (SWARM_GEMINI_STUB, engines.gemini.mode)."""
    record_via: str = "sdk"
    """What ``record`` mode records claude-step through: the SDK or the Claude Code CLI."""
    navigator: str = "llm"
    """How a navigator step's move is chosen: ``llm`` or ``deterministic`` (SPEC §4.5)."""
    max_run_mb: int | None = None
    """How big a run dir may grow, in MiB (runtime.yaml ``max_run_mb``); None: the default."""
    max_depth: int = 4
    """The deepest flow stack (runtime.yaml ``navigator.max_depth``, SPEC §4.6)."""
    budget: Budget | None = None
    """The run budget (runtime.yaml ``budget:``, SPEC §10.7); ``--budget`` wins."""
    config_source: str = ""
    """The runtime.yaml the settings came from (empty when none)."""
    sources: dict[str, str] = field(default_factory=dict)


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
        raise ConfigError(
            f"{path}: runtime config must be a mapping (keys: {', '.join(_TOP_KEYS)})"
        )
    for key in raw:
        if key not in _TOP_KEYS:
            raise ConfigError(f"{path}: unknown key '{key}' (allowed: {', '.join(_TOP_KEYS)})")
    size = raw.get("max_run_mb")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        raise ConfigError(f"{path}: 'max_run_mb' must be a whole number of MiB >= 1, got {size!r}")
    if "runs_dir" in raw and not isinstance(raw["runs_dir"], str):
        raise ConfigError(f"{path}: 'runs_dir' must be a path (a string), got {raw['runs_dir']!r}")
    if "budget" in raw:
        raw["budget"] = budget_from_mapping(raw["budget"], f"{path}: 'budget'")
    _check_engines(path, raw.get("engines") or {})
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
    """runtime.yaml's ``engines``: claude's and gemini's keys; other sections by name only."""
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
        if name not in _ENGINE_KEYS:
            continue  # a registered engine's own section: build_orchestrator checks the name
        for key in body:
            if key not in _ENGINE_KEYS[name]:
                raise ConfigError(
                    f"{path}: unknown key 'engines.{name}.{key}' "
                    f"(allowed: {', '.join(_ENGINE_KEYS[name])})"
                )


def _mode(value: str, source: str) -> str:
    if value not in MODES:
        raise ConfigError(f"{source}: mode {value!r} is not one of {', '.join(MODES)}")
    return value


def resolve_settings(
    *,
    env: Mapping[str, str],
    mode: str | None = None,
    runs_dir: Path | None = None,
    flows_dir: Path | None = None,
    durable: bool | None = None,
    config_path: Path | None = None,
    cwd: Path | None = None,
    gemini_mode: str | None = None,
    record_via: str | None = None,
    navigator: str | None = None,
) -> Settings:
    """Resolve every setting: explicit argument, then ``env``, then runtime.yaml, then default."""
    base = cwd or Path.cwd()
    config, config_source = _read_config(config_path, base)
    claude = dict((config.get("engines") or {}).get("claude") or {})
    sources: dict[str, str] = {}
    resolved_mode = _claude_mode(env, claude, config_source, sources, explicit=mode)
    resolved_runs = _runs_dir(env, config, config_source, sources, explicit=runs_dir)
    if not resolved_runs.is_absolute():
        resolved_runs = base / resolved_runs
    resolved_flows = flows_dir
    if resolved_flows is None and env.get("SWARM_FLOWS_DIR"):
        resolved_flows = Path(env["SWARM_FLOWS_DIR"])
    gemini = dict((config.get("engines") or {}).get("gemini") or {})
    gemini_mode = _gemini_mode(env, gemini, config_source, sources, explicit=gemini_mode)
    record_via = _record_via(env, claude, config_source, sources, explicit=record_via)
    navigator_section = dict(config.get("navigator") or {})
    navigator = _navigator(env, navigator_section, config_source, sources, explicit=navigator)
    return Settings(
        mode=resolved_mode,
        runs_dir=resolved_runs,
        flows_dir=resolved_flows,
        durable=_durable(env, explicit=durable),
        engine_strategy=dict(config.get("engine_strategy") or {}),
        history=dict(config.get("history") or {}),
        claude=claude,
        gemini=gemini,
        engine_sections={
            name: dict(body)
            for name, body in (config.get("engines") or {}).items()
            if name not in _ENGINE_KEYS
        },
        gemini_mode=gemini_mode,
        record_via=record_via,
        navigator=navigator,
        max_run_mb=config.get("max_run_mb"),
        max_depth=int(navigator_section.get("max_depth", 4)),
        budget=config.get("budget"),
        config_source=config_source,
        sources=sources,
    )


def _read_config(config_path: Path | None, base: Path) -> tuple[dict[str, Any], str]:
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


def _claude_mode(
    env: Mapping[str, str],
    claude: dict[str, Any],
    config_source: str,
    sources: dict[str, str],
    *,
    explicit: str | None,
) -> str:
    """claude-step's mode: argument, SWARM_CLAUDE_STEP_ENGINE_MODE, engines.claude.mode, stub."""
    if explicit is not None:
        value, sources["mode"] = _mode(explicit, "--mode"), "argument"
    elif env.get("SWARM_CLAUDE_STEP_ENGINE_MODE"):
        value = _mode(env["SWARM_CLAUDE_STEP_ENGINE_MODE"], "SWARM_CLAUDE_STEP_ENGINE_MODE")
        sources["mode"] = "SWARM_CLAUDE_STEP_ENGINE_MODE"
    elif claude.get("mode") is not None:
        value = _mode(str(claude["mode"]), f"{config_source}: engines.claude.mode")
        sources["mode"] = config_source
    else:
        value, sources["mode"] = "stub", "default"
    return value


def _runs_dir(
    env: Mapping[str, str],
    config: dict[str, Any],
    config_source: str,
    sources: dict[str, str],
    *,
    explicit: Path | None,
) -> Path:
    """Where runs go, as given: argument, SWARM_RUNS_DIR, runs_dir in runtime.yaml, default."""
    if explicit is not None:
        value, sources["runs_dir"] = explicit, "argument"
    elif env.get("SWARM_RUNS_DIR"):
        value, sources["runs_dir"] = Path(env["SWARM_RUNS_DIR"]), "SWARM_RUNS_DIR"
    elif config.get("runs_dir"):
        value, sources["runs_dir"] = Path(str(config["runs_dir"])), config_source
    else:
        value, sources["runs_dir"] = DEFAULT_RUNS_DIR, "default"
    return value


def _durable(env: Mapping[str, str], *, explicit: bool | None) -> bool:
    """Whether every write is fsynced: argument, else SWARM_DURABLE (0 or 1), else not."""
    if explicit is not None:
        return explicit
    raw = env.get("SWARM_DURABLE", "")
    if raw not in ("", "0", "1"):
        raise ConfigError(f"SWARM_DURABLE={raw!r}: allowed values are 0 and 1")
    return raw == "1"


def _gemini_mode(
    env: Mapping[str, str],
    gemini: dict[str, Any],
    config_source: str,
    sources: dict[str, str],
    *,
    explicit: str | None,
) -> str:
    """gemini-step's mode: argument, SWARM_GEMINI_STUB (1 = stub), engines.gemini.mode, stub."""
    if explicit is not None:
        if explicit not in GEMINI_MODES:
            raise ConfigError(f"--gemini-mode {explicit!r}: allowed values are stub and cli")
        sources["gemini_mode"] = "argument"
        return explicit
    flag = env.get("SWARM_GEMINI_STUB", "")
    if flag not in ("", "0", "1"):
        raise ConfigError(
            f"SWARM_GEMINI_STUB={flag!r}: allowed values are 1 (stub, the default) and 0 "
            "(run the Gemini CLI)"
        )
    if flag:
        sources["gemini_mode"] = "SWARM_GEMINI_STUB"
        return "stub" if flag == "1" else "cli"
    if gemini.get("mode") is not None:
        value = gemini["mode"]
        if value not in GEMINI_MODES:
            raise ConfigError(
                f"{config_source}: engines.gemini.mode {value!r} is not one of stub, cli"
            )
        sources["gemini_mode"] = config_source
        return str(value)
    sources["gemini_mode"] = "default"
    return "stub"


def _first_given(
    name: str,
    given: tuple[tuple[Any, str], ...],
    allowed: tuple[str, ...],
    sources: dict[str, str],
) -> str:
    """The first value given, in precedence order, checked against ``allowed``.

    Each value comes with where it came from; none given, the first allowed value.
    """
    for value, source in given:
        if value is None:
            continue
        if value not in allowed:
            raise ConfigError(f"{source}: {value!r} is not one of {', '.join(allowed)}")
        sources[name] = source
        return str(value)
    sources[name] = "default"
    return allowed[0]


def _record_via(
    env: Mapping[str, str],
    claude: dict[str, Any],
    config_source: str,
    sources: dict[str, str],
    *,
    explicit: str | None,
) -> str:
    """What record mode records claude-step through: argument, SWARM_RECORD_VIA, file, sdk."""
    given = (
        (explicit, "--record-via"),
        (env.get("SWARM_RECORD_VIA") or None, "SWARM_RECORD_VIA"),
        (claude.get("record_via"), f"{config_source}: engines.claude.record_via"),
    )
    return _first_given("record_via", given, RECORD_VIA, sources)


def _navigator(
    env: Mapping[str, str],
    section: dict[str, Any],
    config_source: str,
    sources: dict[str, str],
    *,
    explicit: str | None,
) -> str:
    """The navigator mode: argument, SWARM_NAVIGATOR, runtime.yaml navigator.mode, llm."""
    given = (
        (explicit, "--navigator"),
        (env.get("SWARM_NAVIGATOR") or None, "SWARM_NAVIGATOR"),
        (section.get("mode"), f"{config_source}: navigator.mode"),
    )
    return _first_given("navigator", given, NAVIGATOR_MODES, sources)
