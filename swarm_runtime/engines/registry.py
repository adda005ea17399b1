"""Engines by id: a registry mapping an engine id to a factory (and the section it owns).

An engine is one module with a factory, registered under its id: the factory gets the run's
mode and its own ``engines.<section>`` of runtime.yaml (``EngineOptions.section``), and
builds the engine for that mode; the engine names its provider in what it returns.

Third parties add engines through a plugin's ``swarm_register_engines(registry)`` hook
(:mod:`swarm_runtime.plugins`): a registry made with ``extend`` calls it once, before its
first engine is built. The entry point group ``swarm_runtime.engines`` (each entry point a
callable taking the registry) is still read, when an id is not found among the registered
engines, with a DeprecationWarning saying what to write instead; it goes in the next release.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from swarm_runtime.engines.base import DEFAULT_TIMEOUT_S, StepEngine
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError, EngineError
from swarm_runtime.record import Record, field
from swarm_runtime.record import replace as replace_record

ENTRY_POINT_GROUP = "swarm_runtime.engines"
"""Deprecated: a plugin's ``swarm_register_engines`` hook replaces it (read for one release)."""


class EngineOptions(Record):
    """What a factory may use to build an engine."""

    mode: str = "stub"
    scenario: Scenario | None = None
    sleep: Callable[[float], None] | None = None
    config: dict[str, Any] = field(default_factory=dict)
    section: dict[str, Any] = field(default_factory=dict)
    """The engine's own ``engines.<section>`` of runtime.yaml, as written (empty if none)."""


EngineFactory = Callable[[EngineOptions], StepEngine]


class EngineRegistry:
    """Maps engine ids to factories.

    ``extend`` (the plugins' engines) is called once, before the first engine is built or
    the ids are listed.
    """

    def __init__(self, *, extend: Callable[[EngineRegistry], None] | None = None) -> None:
        self._factories: dict[str, EngineFactory] = {}
        self._sections: dict[str, str] = {}
        self._entry_points_loaded = False
        self._extend = extend

    def register(
        self,
        engine_id: str,
        factory: EngineFactory,
        *,
        replace: bool = False,
        section: str | None = None,
    ) -> None:
        """Add an engine; an id already taken needs ``replace=True``.

        ``section`` names the engine's own part of runtime.yaml, ``engines.<section>``: its
        factory finds it in ``EngineOptions.section``.
        """
        if engine_id in self._factories and not replace:
            raise EngineError(
                f"engine '{engine_id}' is already registered; pass replace=True to override it"
            )
        self._factories[engine_id] = factory
        if section is not None:
            self._sections[engine_id] = section
        else:
            self._sections.pop(engine_id, None)

    def sections(self) -> dict[str, str]:
        """The runtime.yaml sections registered engines own: section -> engine id."""
        self._extended()
        self._load_entry_points()
        return {section: engine_id for engine_id, section in sorted(self._sections.items())}

    def copy(self) -> EngineRegistry:
        """A new registry with the same engines, to add to or replace in without touching this."""
        self._extended()
        self._load_entry_points()
        other = EngineRegistry()
        other._factories = dict(self._factories)
        other._sections = dict(self._sections)
        other._entry_points_loaded = True
        return other

    def ids(self) -> list[str]:
        """Every registered engine id, sorted."""
        self._extended()
        self._load_entry_points()
        return sorted(self._factories)

    def _extended(self) -> None:
        """Call ``extend`` once (first, so the plugins' engines are there for what follows)."""
        extend, self._extend = self._extend, None
        if extend is not None:
            extend(self)

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        from importlib.metadata import entry_points

        for entry in entry_points(group=ENTRY_POINT_GROUP):
            warnings.warn(
                f"engine plugin '{entry.name}' ({entry.value}) is in the entry point group "
                f"'{ENTRY_POINT_GROUP}', which is deprecated and read for one more release: "
                "name a module in the 'swarm_runtime' group instead, with a function "
                "swarm_register_engines(registry) that registers the engines",
                DeprecationWarning,
                stacklevel=3,
            )
            try:
                hook = entry.load()
                hook(self)
            except Exception as exc:
                raise EngineError(
                    f"engine plugin '{entry.name}' ({entry.value}) failed to load: {exc}"
                ) from exc

    def unknown(self, engine_id: str) -> str:
        """What is wrong with an engine id no engine is registered under."""
        return (
            f"no engine '{engine_id}' (registered: {', '.join(self.ids())}); a plugin adds "
            "engines with swarm_register_engines(registry)"
        )

    def create(self, engine_id: str, options: EngineOptions) -> StepEngine:
        """Build the engine ``engine_id`` for ``options.mode``."""
        self._extended()
        if engine_id not in self._factories:
            self._load_entry_points()
        factory = self._factories.get(engine_id)
        if factory is None:
            raise ConfigError(self.unknown(engine_id))
        section = self._sections.get(engine_id)
        if section is not None:
            own = (options.config.get("sections") or {}).get(section) or {}
            options = replace_record(options, section=dict(own))
        return factory(options)


def _effective_mode(engine_id: str, options: EngineOptions) -> str:
    """The mode a built-in engine runs in: a cassette-backed sdk call records or replays."""
    if engine_id == "gemini-step":  # its own setting: SWARM_GEMINI_STUB, engines.gemini.mode
        return str((options.config.get("gemini") or {}).get("mode") or "stub")
    cassettes = options.config.get("cassettes")
    if options.mode == "sdk" and cassettes is not None:
        return "record" if cassettes.record else "replay"
    return options.mode


def _stub(engine_id: str, engine_short: str, options: EngineOptions) -> StepEngine:
    from swarm_runtime.engines.stub import StubEngine

    return StubEngine(
        engine_id=engine_id,
        engine_short=engine_short,
        scenario=options.scenario,
        sleep=options.sleep,
        timeout_s=float(options.config.get("timeout_s") or DEFAULT_TIMEOUT_S),
    )


def _sdk(engine_id: str, engine_short: str, options: EngineOptions) -> StepEngine:
    from swarm_runtime.engines.sdk import build_sdk_engine

    return build_sdk_engine(options.config, engine_id=engine_id, engine_short=engine_short)


def _record(engine_id: str, engine_short: str, options: EngineOptions) -> StepEngine:
    """Through the SDK and vcrpy, or through the CLI when ``record_via`` says so."""
    config = options.config
    if config.get("record_via") == "cli":
        return _cli_engine(engine_id, config, config["cassettes"])
    return _sdk_cassette_engine(engine_id, config, config["cassettes"])


def _replay(engine_id: str, engine_short: str, options: EngineOptions) -> StepEngine:
    """Each step from its cassette, whichever way (SDK or CLI) it was recorded."""
    from swarm_runtime.engines.cassette import require_vcrpy
    from swarm_runtime.engines.replay_by_cassette import ReplayByCassette

    config, cassettes = options.config, options.config["cassettes"]
    require_vcrpy()  # say what to install before the first step, not at it
    return ReplayByCassette(
        cassettes,
        sdk=lambda: _sdk_cassette_engine(engine_id, config, cassettes),
        cli=lambda: _cli_engine(engine_id, config, cassettes),
    )


def _cli(engine_id: str, engine_short: str, options: EngineOptions) -> StepEngine:
    return _cli_engine(engine_id, options.config, options.config.get("cassettes"))


_BUILDERS: dict[tuple[str, str], Callable[[str, str, EngineOptions], StepEngine]] = {
    ("claude-step", "stub"): _stub,
    ("claude-step", "sdk"): _sdk,
    ("claude-step", "record"): _record,
    ("claude-step", "replay"): _replay,
    ("claude-step", "cli"): _cli,
    ("gemini-step", "stub"): _stub,
    ("gemini-step", "cli"): _cli,
}
"""The built-in engines: (engine id, mode) -> what builds it. The one place a mode
becomes an engine."""


def _builtin(engine_id: str, engine_short: str) -> EngineFactory:
    def factory(options: EngineOptions) -> StepEngine:
        mode = _effective_mode(engine_id, options)
        build = _BUILDERS.get((engine_id, mode))
        if build is None:
            available = ", ".join(m for e, m in _BUILDERS if e == engine_id)
            raise ConfigError(
                f"engine '{engine_id}' has no '{mode}' mode in this version "
                f"(available: {available})"
            )
        return build(engine_id, engine_short, options)

    return factory


def _sdk_cassette_engine(engine_id: str, config: dict[str, Any], cassettes: Any) -> StepEngine:
    """Recording through vcrpy; replay through the SDK client's own transport."""
    from swarm_runtime.engines.sdk import build_sdk_engine

    if cassettes.record:
        from swarm_runtime.engines.cassette import CassetteSdkEngine

        return build_sdk_engine(
            config,
            engine_id=engine_id,
            engine_short="claude",
            engine_class=CassetteSdkEngine,
            cassettes=cassettes,
            credentials=config.get("credentials"),
        )
    from swarm_runtime.engines.replay import ReplaySdkEngine

    built: list[ReplaySdkEngine] = []
    engine = build_sdk_engine(
        config,
        engine_id=engine_id,
        engine_short="claude",
        engine_class=ReplaySdkEngine,
        http_client=ReplaySdkEngine.http_client(built),
        cassettes=cassettes,
        credentials=config.get("credentials"),
    )
    assert isinstance(engine, ReplaySdkEngine)
    built.append(engine)
    return engine


def _cli_engine(engine_id: str, config: dict[str, Any], cassettes: Any) -> StepEngine:
    """The CLI engine of ``engine_id``; with cassettes, through the loopback cassette server."""
    from swarm_runtime.engines.cli import build_cli_engine

    if cassettes is None:
        return build_cli_engine(engine_id, config)
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
        cassettes=cassettes,
        faults=config.get("fault_injector"),
    )


def default_registry(*, extend: Callable[[EngineRegistry], None] | None = None) -> EngineRegistry:
    """A registry with the built-in engines (``extend`` adds more: see the class)."""
    registry = EngineRegistry(extend=extend)
    registry.register("claude-step", _builtin("claude-step", "claude"), section="claude")
    registry.register("gemini-step", _builtin("gemini-step", "gemini"), section="gemini")
    return registry
