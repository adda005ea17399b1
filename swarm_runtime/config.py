"""Settings from flags, environment and ``runtime.yaml``, resolved in one place (SPEC §5.3).

Precedence, highest first: explicit argument (a CLI flag, an API argument, a pytest option)
→ environment → ``runtime.yaml`` → default. Every invalid value is a ConfigError that
says where it came from. The environment is passed in as a mapping, so only the edges
(the CLI, the pytest plugin) ever read ``os.environ``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swarm_runtime.config_file import ENGINE_KEYS, GEMINI_MODES, RECORD_VIA, read_config
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.spec import Budget
from swarm_runtime.record import Record, field

MODES = ("stub", "replay", "record", "sdk", "cli")
"""Every mode, in the order messages list them: the stub, recorded sdk calls, live ones."""
DEFAULT_RUNS_DIR = Path("swarm/runs")
NAVIGATOR_MODES = ("llm", "deterministic")
"""How a navigator step's move is chosen (SPEC §4.5): ask the navigator, or take the first
candidate whose condition holds, with no call."""
MAX_RETRY_AFTER_S = 30.0
"""The longest wait a server's ``retry-after`` may ask for before a retry, by default: past
it the attempt is the last (SPEC §7.3)."""


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
    max_retry_after_s: float = MAX_RETRY_AFTER_S
    """The longest wait a server's ``retry-after`` may ask for (SWARM_MAX_RETRY_AFTER_S, file)."""
    config_source: str = ""
    """The runtime.yaml the settings came from (empty when none)."""
    sources: dict[str, str] = field(default_factory=dict)


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
    max_retry_after_s: float | None = None,
) -> Settings:
    """Resolve every setting: explicit argument, then ``env``, then runtime.yaml, then default."""
    base = cwd or Path.cwd()
    config, config_source = read_config(config_path, base)
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
            if name not in ENGINE_KEYS
        },
        gemini_mode=gemini_mode,
        record_via=record_via,
        navigator=navigator,
        max_run_mb=config.get("max_run_mb"),
        max_depth=int(navigator_section.get("max_depth", 4)),
        budget=config.get("budget"),
        max_retry_after_s=_max_retry_after(
            env, config, config_source, sources, explicit=max_retry_after_s
        ),
        config_source=config_source,
        sources=sources,
    )


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


def _max_retry_after(
    env: Mapping[str, str],
    config: dict[str, Any],
    config_source: str,
    sources: dict[str, str],
    *,
    explicit: float | None,
) -> float:
    """The ``retry-after`` cap: argument, SWARM_MAX_RETRY_AFTER_S, runtime.yaml, else 30 s."""
    given = (
        (explicit, "max_retry_after_s"),
        (env.get("SWARM_MAX_RETRY_AFTER_S") or None, "SWARM_MAX_RETRY_AFTER_S"),
        (config.get("max_retry_after_s"), f"{config_source}: max_retry_after_s"),
    )
    for raw, source in given:
        if raw is None:
            continue
        try:
            value = float(raw) if not isinstance(raw, bool) else -1.0
        except (TypeError, ValueError):
            value = -1.0
        if not 0 <= value <= 86400:
            raise ConfigError(f"{source}: {raw!r} is not a number of seconds from 0 to 86400")
        sources["max_retry_after_s"] = source
        return value
    sources["max_retry_after_s"] = "default"
    return MAX_RETRY_AFTER_S
