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

from swarm_runtime.engines.base import StepEngine
from swarm_runtime.engines.options import EngineOptions
from swarm_runtime.engines.request_parts import Expected
from swarm_runtime.errors import ConfigError, EngineError
from swarm_runtime.record import replace as replace_record

ENTRY_POINT_GROUP = "swarm_runtime.engines"
"""Deprecated: a plugin's ``swarm_register_engines`` hook replaces it (read for one release)."""


EngineFactory = Callable[[EngineOptions], StepEngine]


class EngineRegistry:
    """Maps engine ids to factories.

    ``extend`` (the plugins' engines) is called once, before the first engine is built or
    the ids are listed.
    """

    def __init__(self, *, extend: Callable[[EngineRegistry], None] | None = None) -> None:
        self._factories: dict[str, EngineFactory] = {}
        self._sections: dict[str, str] = {}
        self._keys: dict[str, tuple[str, ...]] = {}
        self._checks: dict[str, Callable[[EngineOptions], str | None]] = {}
        self._expected: dict[str, Callable[[EngineOptions], Expected]] = {}
        self._readers: dict[str, Callable[[EngineOptions], object]] = {}
        self._entry_points_loaded = False
        self._extend = extend

    def register(
        self,
        engine_id: str,
        factory: EngineFactory,
        *,
        replace: bool = False,
        section: str | None = None,
        keys: tuple[str, ...] | None = None,
        check: Callable[[EngineOptions], str | None] | None = None,
        expected: Callable[[EngineOptions], Expected] | None = None,
        settings: Callable[[EngineOptions], object] | None = None,
    ) -> None:
        """Add an engine; an id already taken needs ``replace=True``.

        ``section`` names the engine's own part of runtime.yaml, ``engines.<section>``: its
        factory finds it in ``EngineOptions.section``. ``keys``, when given, are the keys
        the section may hold: any other is refused by name before a run starts. ``check``
        says what a mode of the engine lacks before any step runs (a key, a package), or
        None: the pytest plugin and ``swarm run`` stop at start-up with what it says.
        ``expected`` gives the model and parameters an HTTP engine's calls send with the
        current settings: ``swarm cassettes status`` compares its recordings with them.
        ``settings`` reads and checks the engine's settings (its section, its variables):
        every run calls it before it begins, so a bad one is refused whether or not a step
        of the run uses the engine.
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
        if keys is not None and section is not None:
            self._keys[section] = tuple(keys)
        self._checks.pop(engine_id, None)
        self._expected.pop(engine_id, None)
        self._readers.pop(engine_id, None)
        if settings is not None:
            self._readers[engine_id] = settings
        if check is not None:
            self._checks[engine_id] = check
        if expected is not None:
            self._expected[engine_id] = expected

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
        other._keys = dict(self._keys)
        other._checks = dict(self._checks)
        other._expected = dict(self._expected)
        other._readers = dict(self._readers)
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
        from swarm_runtime.entry_points import entry_points

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

    def check_sections(self, sections: dict[str, dict[str, Any]], where: str) -> None:
        """Every ``engines.<name>`` of runtime.yaml is a registered engine's, with its keys."""
        self._extended()
        owned = {section: engine_id for engine_id, section in self._sections.items()}
        if any(name not in owned for name in sections):  # maybe a deprecated plugin's
            owned = self.sections()
        for name, body in sections.items():
            if name not in owned:
                raise ConfigError(
                    f"{where}: 'engines.{name}' is no registered engine's section (registered: "
                    f"{', '.join(sorted(owned))}); register the engine that reads it (a "
                    f"plugin's swarm_register_engines: registry.register(ID, FACTORY, "
                    f"section='{name}')) or fix the name"
                )
            keys = self._keys.get(name)
            for key in body if keys is not None else ():
                if keys is not None and key not in keys:
                    raise ConfigError(
                        f"{where}: unknown key 'engines.{name}.{key}' (allowed: {', '.join(keys)})"
                    )

    def section_of(self, engine_id: str) -> str | None:
        """The runtime.yaml section ``engine_id`` owns (None: none, or no such engine)."""
        self._extended()
        return self._sections.get(engine_id)

    def missing(self, engine_id: str, options: EngineOptions) -> str | None:
        """What the engine lacks for ``options.mode`` before any step runs, or None."""
        self._extended()
        check = self._checks.get(engine_id)
        return check(options) if check is not None else None

    def check_settings(self, options: Callable[[str], EngineOptions]) -> None:
        """Read every engine's settings from ``options(section)``: a bad one raises."""
        self._extended()
        for engine_id, read in sorted(self._readers.items()):
            read(options(self._sections.get(engine_id, "")))

    def expectations(self, options: Callable[[str], EngineOptions]) -> dict[str, Expected]:
        """By engine id: what each HTTP engine's calls send, from ``options(section)``."""
        self._extended()
        return {
            engine_id: expected(options(self._sections.get(engine_id, "")))
            for engine_id, expected in sorted(self._expected.items())
        }

    def create(
        self,
        engine_id: str,
        options: EngineOptions,
        *,
        sections: dict[str, dict[str, Any]] | None = None,
        given: dict[str, dict[str, Any]] | None = None,
    ) -> StepEngine:
        """Build the engine ``engine_id`` for ``options.mode``.

        ``sections`` are runtime.yaml's ``engines.*`` and ``given`` the flags' values by
        section: the engine is handed its own.
        """
        self._extended()
        if engine_id not in self._factories:
            self._load_entry_points()
        factory = self._factories.get(engine_id)
        if factory is None:
            raise ConfigError(self.unknown(engine_id))
        section = self._sections.get(engine_id)
        if section is not None and (sections is not None or given is not None):
            options = replace_record(
                options,
                section=dict((sections or {}).get(section) or {}),
                given=dict((given or {}).get(section) or {}),
                section_name=section,
            )
        return factory(options)


def default_registry(*, extend: Callable[[EngineRegistry], None] | None = None) -> EngineRegistry:
    """A registry with the built-in engines (``extend`` adds more: see the class)."""
    from swarm_runtime.engines.builtin import register_builtin_engines

    registry = EngineRegistry(extend=extend)
    register_builtin_engines(registry)
    return registry
