"""What an engine is built from: the run's mode, resolved once at the edge, and its own settings.

The CLI, the pytest plugin and the backends resolve the mode and everything it brings (the
cassettes a recording goes to or a replay comes from, the run's fault plan, the credentials
no file may hold, the environment they were given) into one :class:`EngineOptions`; the
registry adds the engine's own ``engines.<section>`` of runtime.yaml. An engine's factory
then decides what each mode means for it: nothing here, in the kernel or in the settings
names a built-in engine.

:func:`engine_setting` reads one setting of a section the way every setting is read: a
flag's value first, then an environment variable, then runtime.yaml, then the default,
with a ConfigError that names where a bad value came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from swarm_runtime.credentials import Credentials
from swarm_runtime.errors import ConfigError
from swarm_runtime.record import Record, field

if TYPE_CHECKING:
    from swarm_runtime.config import Settings
    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.engines.faults import FaultInjector
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.tools.box import ToolBox

ENGINE_MODES = ("stub", "replay", "record", "sdk", "cli")
"""Every mode a run may ask for; each engine says which of them it has."""


class EngineOptions(Record):
    """What a factory builds an engine from.

    ``mode`` is the run's mode as the user gave it (``stub``, ``sdk``, ``record``,
    ``replay``, ``cli``); ``cassettes`` is set in ``record`` and ``replay`` (and records
    or replays whatever the engine sends through the HTTP client it is handed);
    ``faults`` is the run's fault injector when a plan is given.
    """

    mode: str = "stub"
    scenario: Scenario | None = None
    sleep: Callable[[float], None] | None = None
    cassettes: Cassettes | None = None
    faults: FaultInjector | None = None
    credentials: Credentials = field(default_factory=Credentials)
    """Every credential value the run was given: no file may hold one."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The environment the edge was given (keys and base URLs are read from it)."""
    section: dict[str, Any] = field(default_factory=dict)
    """The engine's own ``engines.<section>`` of runtime.yaml, as written (empty if none)."""
    given: dict[str, Any] = field(default_factory=dict)
    """Values of the section given as flags (``--gemini-mode cli``): they come first."""
    section_name: str = ""
    where: str = "runtime.yaml"
    """The runtime.yaml the section came from, for messages."""
    navigator: str = "llm"
    tools: ToolBox | None = None
    """The run's tools (Python tools and MCP servers) for the steps that offer some."""

    @property
    def replays(self) -> bool:
        """Answered from cassettes: no server is reached."""
        return self.cassettes is not None and not self.cassettes.record


def engine_setting(
    options: EngineOptions,
    key: str,
    *,
    env: str = "",
    flag: str = "",
    read: Callable[[Any], Any] = lambda raw: raw,
    read_env: Callable[[str], Any] | None = None,
    default: Any = None,
) -> Any:
    """One setting of the engine's section: a flag, then ``env``, then runtime.yaml, else default.

    ``read`` turns what was given into the value or raises ValueError saying what is
    allowed; the ConfigError then names the flag (``flag``, else ``--<key>``), the variable
    or the file and key.
    """
    name = f"engines.{options.section_name}.{key}" if options.section_name else key
    given = (
        (options.given.get(key), flag or f"--{key.replace('_', '-')}", read),
        ((options.env.get(env) or None) if env else None, env, read_env or read),
        (options.section.get(key), f"{options.where}: {name}", read),
    )
    for raw, where, reader in given:
        if raw is not None:
            try:
                return reader(raw)
            except ValueError as exc:
                raise ConfigError(f"{where}: {raw!r} {exc}") from None
    return default


def one_of(*allowed: str) -> Callable[[Any], str]:
    """A reader of a value that must be one of ``allowed``."""

    def check(raw: Any) -> str:
        if raw not in allowed:
            raise ValueError(f"is not one of {', '.join(allowed)}")
        return str(raw)

    return check


def options_for(
    settings: Settings, env: Mapping[str, str], name: str, **more: Any
) -> EngineOptions:
    """The options of the engine whose section is ``engines.<name>``, from resolved settings."""
    return EngineOptions(
        env=env,
        section=dict(settings.engine_sections.get(name) or {}),
        given=dict(settings.engine_given.get(name) or {}),
        section_name=name,
        where=settings.config_source or "runtime.yaml",
        **more,
    )
