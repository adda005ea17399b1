"""Settings from flags, environment and ``runtime.yaml``, resolved in one place.

Each setting a flag, a variable or the file may give is one row of :data:`SETTINGS`, and
:func:`_resolve` applies the one precedence to every row: explicit argument (a CLI flag,
an API argument, a pytest option) → environment → ``runtime.yaml`` → default. Every
invalid value is a ConfigError that names where it came from (the flag, the variable, or
the file and key) and what is allowed. The environment is passed in as a mapping, so only
the edges (the CLI, the pytest plugin) ever read ``os.environ``.

See docs/engines.md#configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from swarm_runtime.config_file import read_config
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.spec import Budget
from swarm_runtime.record import Record, field
from swarm_runtime.tools.config import ToolSettings

MODES = ("stub", "replay", "record", "sdk", "cli")
"""Every mode, in the order messages list them: the stub, recorded sdk calls, live ones."""
DEFAULT_RUNS_DIR = Path("swarm/runs")
NAVIGATOR_MODES = ("llm", "deterministic")
"""How a navigator step's move is chosen (docs/flows.md#navigator): ask the navigator, or take the
first candidate whose condition holds, with no call."""
MAX_RETRY_AFTER_S = 30.0
"""The longest wait a server's ``retry-after`` may ask for before a retry, by default: past
it the attempt is the last (docs/contract/steps.md#result-codes)."""


class Settings(Record):
    """Resolved settings, each with the place it came from (for messages)."""

    mode: str = "stub"
    runs_dir: Path = DEFAULT_RUNS_DIR
    flows_dir: Path | None = None
    durable: bool = False
    engine_strategy: dict[str, dict[str, str]] = field(default_factory=dict)
    history: dict[str, int] = field(default_factory=dict)
    engine_sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    """runtime.yaml's ``engines.<name>``, as written: each is its registered engine's to
    read (``EngineRegistry.register(..., section=name)``)."""
    engine_given: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Flags' values for an engine's section (``--gemini-mode cli``), by section."""
    notices: tuple[str, ...] = ()
    """What to tell the user about the settings (an old key that moved, and where to)."""
    navigator: str = "llm"
    """How a navigator step's move is chosen: ``llm`` or ``deterministic``
    (docs/flows.md#navigator)."""
    max_run_mb: int | None = None
    """How big a run dir may grow, in MiB (runtime.yaml ``max_run_mb``); None: the default."""
    max_depth: int = 4
    """The deepest flow stack (runtime.yaml ``navigator.max_depth``,
    docs/flows.md#detours-and-utility-flows)."""
    budget: Budget | None = None
    """The run budget (runtime.yaml ``budget:``, docs/budgets.md); ``--budget`` wins."""
    tools: ToolSettings = field(default_factory=ToolSettings)
    """runtime.yaml's Python tools, MCP servers and limits of tool calls (docs/tools.md)."""
    max_retry_after_s: float = MAX_RETRY_AFTER_S
    """The longest wait a server's ``retry-after`` may ask for (SWARM_MAX_RETRY_AFTER_S, file)."""
    config_source: str = ""
    """The runtime.yaml the settings came from (empty when none)."""
    sources: dict[str, str] = field(default_factory=dict)


def _one_of(allowed: tuple[str, ...]) -> Callable[[Any], str]:
    def check(raw: Any) -> str:
        if raw not in allowed:
            raise ValueError(f"is not one of {', '.join(allowed)}")
        return str(raw)

    return check


def _texts(meanings: dict[str, tuple[Any, str]]) -> Callable[[Any], Any]:
    """A variable's own texts (``1``, ``0``), each with its value and what it means."""

    def read(raw: Any) -> Any:
        if raw not in meanings:
            allowed = ", ".join(f"{text} ({meaning})" for text, (_, meaning) in meanings.items())
            raise ValueError(f"is not one of {allowed}")
        return meanings[raw][0]

    return read


def _path(raw: Any) -> Path:
    if raw == "":
        raise ValueError("is not a path: name a directory, or leave the setting out")
    return Path(raw)


def _seconds(raw: Any) -> float:
    try:
        value = float(raw) if not isinstance(raw, bool) else -1.0
    except (TypeError, ValueError):
        value = -1.0
    if not 0 <= value <= 86400:  # NaN too
        raise ValueError("is not a number of seconds from 0 to 86400")
    return value


class Setting(Record):
    """One setting a flag, a variable or ``runtime.yaml`` may give, and how it is read."""

    flag: str
    """How a value given as an argument is named in messages (the CLI's flag)."""
    env: str
    """The environment variable (empty: unset)."""
    key: str
    """Its dotted key in ``runtime.yaml`` ("" when the file has none)."""
    default: Any
    read: Callable[[Any], Any]
    """The value of what was given, or ValueError saying what is allowed."""
    read_env: Callable[[Any], Any] | None = None
    """How the variable is read, when not as ``read`` reads the rest."""


SETTINGS: dict[str, Setting] = {
    "mode": Setting("--mode", "SWARM_CLAUDE_STEP_ENGINE_MODE", "mode", "stub", _one_of(MODES)),
    "runs_dir": Setting("--runs-dir", "SWARM_RUNS_DIR", "runs_dir", DEFAULT_RUNS_DIR, _path),
    "flows_dir": Setting("--flows-dir", "SWARM_FLOWS_DIR", "", None, _path),
    "durable": Setting(
        "--durable",
        "SWARM_DURABLE",
        "",
        False,
        bool,
        _texts({"1": (True, "fsync every write"), "0": (False, "the default")}),
    ),
    "navigator": Setting(
        "--navigator", "SWARM_NAVIGATOR", "navigator.mode", "llm", _one_of(NAVIGATOR_MODES)
    ),
    "max_retry_after_s": Setting(
        "max_retry_after_s",
        "SWARM_MAX_RETRY_AFTER_S",
        "max_retry_after_s",
        MAX_RETRY_AFTER_S,
        _seconds,
    ),
}
"""The settings resolved by precedence, by their name in :class:`Settings`."""


def _resolve(
    name: str,
    explicit: Any,
    env: Mapping[str, str],
    config: dict[str, Any],
    config_source: str,
    key: str | None = None,
) -> tuple[Any, str]:
    """One setting's value and where it came from, by precedence, highest first.

    The explicit argument, then the environment (an empty variable is unset), then
    ``runtime.yaml`` (at ``key``: the setting's own, or the old key it was read from), then
    the default. The first given is the value, or a ConfigError.
    """
    setting = SETTINGS[name]
    key = key or setting.key
    in_file: Any = config if key else None
    for part in filter(None, key.split(".")):
        in_file = (in_file or {}).get(part)  # config_file checked each level is a mapping
    given = (
        (explicit, setting.flag, setting.read),
        (env.get(setting.env) or None, setting.env, setting.read_env or setting.read),
        (in_file, f"{config_source}: {key}", setting.read),
    )
    for raw, where, read in given:
        if raw is not None:
            try:
                return read(raw), where
            except ValueError as exc:
                raise ConfigError(f"{where}: {raw!r} {exc}") from None
    return setting.default, "default"


def resolve_settings(
    *,
    env: Mapping[str, str],
    mode: str | None = None,
    runs_dir: Path | None = None,
    flows_dir: Path | None = None,
    durable: bool | None = None,
    config_path: Path | None = None,
    cwd: Path | None = None,
    engine_given: Mapping[str, Mapping[str, Any]] | None = None,
    navigator: str | None = None,
    max_retry_after_s: float | None = None,
) -> Settings:
    """Resolve every setting: explicit argument, then ``env``, then runtime.yaml, then default.

    ``engine_given`` are flags' values for engines' own sections (``{"gemini": {"mode":
    "cli"}}``): each engine reads its own.
    """
    from swarm_runtime.flow.cel import choice_error

    cel_problem = choice_error(env)
    if cel_problem is not None:
        raise ConfigError(cel_problem)
    base = cwd or Path.cwd()
    config, config_source = read_config(config_path, base)
    notices, moved = _moved_keys(config, config_source)
    explicit = {
        "mode": mode,
        "runs_dir": runs_dir,
        "flows_dir": flows_dir,
        "durable": durable,
        "navigator": navigator,
        "max_retry_after_s": max_retry_after_s,
    }
    values, sources = {}, {}
    for name in SETTINGS:
        values[name], sources[name] = _resolve(
            name, explicit[name], env, config, config_source, moved.get(name)
        )
    if not values["runs_dir"].is_absolute():
        values["runs_dir"] = base / values["runs_dir"]
    engines = config.get("engines") or {}
    return Settings(
        **values,
        engine_strategy=dict(config.get("engine_strategy") or {}),
        history=dict(config.get("history") or {}),
        engine_sections={name: dict(body) for name, body in engines.items()},
        engine_given={
            name: {key: value for key, value in given.items() if value is not None}
            for name, given in (engine_given or {}).items()
        },
        notices=notices,
        max_run_mb=config.get("max_run_mb"),
        max_depth=int((config.get("navigator") or {}).get("max_depth", 4)),
        budget=config.get("budget"),
        tools=config.get("tools_settings") or ToolSettings(),
        config_source=config_source,
        sources=sources,
    )


def _moved_keys(config: dict[str, Any], where: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """What to say of the keys of runtime.yaml that moved, and the old key each is read from.

    ``engines.claude.mode`` was the run's mode when claude-step was the only engine with
    modes: it is read as ``mode`` when that is not given (a bad value is named as written).
    """
    notices: list[str] = []
    moved: dict[str, str] = {}
    old = ((config.get("engines") or {}).get("claude") or {}).get("mode")
    if old is not None:
        if config.get("mode") is None:
            moved["mode"] = "engines.claude.mode"
            notices.append(
                f"{where}: engines.claude.mode is the run's mode, read as 'mode: {old}'; "
                f"write 'mode: {old}' at the top of the file instead (every engine runs in it)"
            )
        else:
            notices.append(
                f"{where}: engines.claude.mode is not read when 'mode' is given; remove it"
            )
    return tuple(notices), moved
