"""One way in for extensions: a pluggy plugin manager holding the hooks of :mod:`.hookspecs`.

The process has one set of plugins (:func:`process_plugins`): those of the entry point
group ``swarm_runtime`` (each entry point names a module or object; loaded once, on first
use), and those registered on it, as the pytest plugin registers every ``conftest.py`` and
pytest plugin that implements a hook. A caller adds listeners of its own for the runs it
makes with :meth:`SwarmPlugins.with_listeners` (``swarm run``'s progress lines, Flow
Studio's run index, the pytest plugin's counters): they hear those runs beside the
process's plugins, and nothing is added to the process's.

A run calls its listeners through :class:`RunListeners`, each on its own: a listener that
raises is reported once (one line naming the plugin, the error and where) and hears no
more of that run; the run, its files and the other listeners go on as if it were not there.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from swarm_runtime import hookspecs
from swarm_runtime.engines.registry import EngineRegistry, default_registry
from swarm_runtime.errors import ConfigError
from swarm_runtime.hookspecs import HOOKS, PROJECT

if TYPE_CHECKING:
    from swarm_runtime.engines.base import StepResult
    from swarm_runtime.orchestrator.state import RunOutcome
    from swarm_runtime.tools.registry import ToolRegistry

ENTRY_POINT_GROUP = PROJECT
"""The entry point group plugins are installed under: ``[project.entry-points.swarm_runtime]``."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a hook implementation that needs pluggy's options (``@hookimpl(tryfirst=True)``)."""

Report = Callable[[str, str], None]
"""Told of a plugin that failed: its name, and the line that says what happened."""


def _to_stderr(_plugin: str, line: str) -> None:
    print(f"swarm: warning: {line}", file=sys.stderr, flush=True)


HOOK_PREFIX = "swarm_"
"""How every hook's name begins (a test holds :data:`HOOKS` to it)."""


class _Manager(pluggy.PluginManager):
    """Takes a function named as a hook for its implementation, as pytest takes ``pytest_*``.

    Hook wrappers are refused: each implementation is called on its own (so one that
    raises cannot keep the others from being called), never around the others.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        if not name.startswith(HOOK_PREFIX):
            # Every hook is named swarm_*: pluggy would look each other attribute up
            # (a plugin object's ~30 dunders included) on every registration, as pytest
            # avoids with its pytest_* prefix. A run registers its listeners each time.
            return None
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name in HOOKS and inspect.isroutine(getattr(plugin, name, None)):
            return pluggy.HookimplOpts(
                wrapper=False,
                hookwrapper=False,
                optionalhook=False,
                tryfirst=False,
                trylast=False,
                specname=None,
            )
        if opts is not None and (opts.get("wrapper") or opts.get("hookwrapper")):
            raise pluggy.PluginValidationError(
                plugin, f"{name}: hook wrappers are not supported (each hook is called alone)"
            )
        return opts


@functools.cache
def _given(hook: str) -> tuple[str, ...]:
    """The arguments ``hook`` gives its implementations, by name."""
    return tuple(inspect.signature(getattr(hookspecs, hook)).parameters)


def _check_arguments(plugin: object, name: str) -> None:
    """ConfigError naming a hook function that takes an argument its hook does not give."""
    for hook in HOOKS:
        function = getattr(plugin, hook, None)
        if not inspect.isroutine(function):
            continue
        given = _given(hook)
        taken = list(inspect.signature(function).parameters)
        unknown = [argument for argument in taken if argument not in given]
        if unknown:
            raise ConfigError(
                f"plugin '{name}': {hook}({', '.join(taken)}) takes {', '.join(unknown)}, which "
                f"the hook does not give (it gives: {', '.join(given)})"
            )


def _call(impl: pluggy.HookImpl, arguments: dict[str, Any]) -> None:
    """Call one implementation with the arguments it names (a subset of its hook's)."""
    impl.function(*(arguments[argument] for argument in impl.argnames))


class SwarmPlugins:
    """Plugins, and through ``parent`` those of another set: the process's, for a child."""

    def __init__(self, *, parent: SwarmPlugins | None = None, entry_points: bool = False):
        self._manager = _Manager(PROJECT)
        self._manager.add_hookspecs(hookspecs)
        self.parent = parent
        self.report: Report | None = None
        """Where a failing plugin is said (default: the parent's, else one line on stderr)."""
        self._entry_points = entry_points
        self._loading = threading.Lock()

    def register(self, plugin: object, name: str | None = None) -> str:
        """Add a plugin (a module or object with hook functions); its name.

        ConfigError naming the plugin when a hook function takes an argument its hook
        does not have. Without ``name``: the module's name, else the object's class's.
        """
        if name is None:
            name = getattr(plugin, "__name__", None) or type(plugin).__qualname__
            taken, number = name, 1
            while self._manager.has_plugin(name):
                number += 1
                name = f"{taken}#{number}"
        _check_arguments(plugin, name)
        try:
            return str(self._manager.register(plugin, name))
        except pluggy.PluginValidationError as exc:
            raise ConfigError(f"plugin {name or plugin!r}: {exc}") from None

    def unregister(self, plugin: object) -> None:
        """Remove a plugin registered here."""
        if self._manager.is_registered(plugin):
            self._manager.unregister(plugin)

    def is_registered(self, plugin: object) -> bool:
        """Whether ``plugin`` is one of these plugins (or of the parent's)."""
        self.load()
        if self._manager.is_registered(plugin):
            return True
        return self.parent is not None and self.parent.is_registered(plugin)

    def names(self) -> list[str]:
        """The names of the plugins, the parent's included, sorted."""
        self.load()
        own = [str(name) for name, _ in self._manager.list_name_plugin()]
        return sorted({*own, *(self.parent.names() if self.parent is not None else ())})

    def with_listeners(self, *plugins: object) -> SwarmPlugins:
        """These plugins and ``plugins`` beside them, for the runs given the result.

        The listener hooks of ``plugins`` are called; engines are registered from the
        process's plugins only (see :func:`engine_registry`).
        """
        child = SwarmPlugins(parent=self)
        for plugin in plugins:
            child.register(plugin)
        return child

    def reporter(self) -> Report:
        """Where a plugin that failed is said."""
        if self.report is not None:
            return self.report
        return self.parent.reporter() if self.parent is not None else _to_stderr

    def implementations(self, hook: str) -> list[pluggy.HookImpl]:
        """The implementations of ``hook``, in the order pluggy calls them, then the parent's."""
        self.load()
        impls = list(reversed(getattr(self._manager.hook, hook).get_hookimpls()))
        return impls + (self.parent.implementations(hook) if self.parent is not None else [])

    def register_engines(self, registry: EngineRegistry) -> None:
        """Call every ``swarm_register_engines``; ConfigError naming the plugin that failed."""
        self._register("swarm_register_engines", registry)

    def _register(self, hook: str, registry: object) -> None:
        for impl in self.implementations(hook):
            try:
                _call(impl, {"registry": registry})
            except Exception as exc:
                raise ConfigError(
                    f"plugin '{impl.plugin_name}': {hook} failed: {type(exc).__name__}: {exc}"
                ) from exc

    def register_tools(self, registry: ToolRegistry) -> None:
        """Call every ``swarm_register_tools``; ConfigError naming the plugin that failed."""
        self._register("swarm_register_tools", registry)

    def for_run(self, *, followed: bool = False) -> RunListeners:
        """The listeners of one run (``followed``: a run another process executes)."""
        return RunListeners(self, followed=followed)

    def load(self) -> None:
        """Load the entry point group's plugins, once; one that fails is said and left out."""
        if not self._entry_points:
            return
        with self._loading:
            if not self._entry_points:
                return
            self._entry_points = False
            from swarm_runtime.entry_points import entry_points

            for entry in entry_points(group=ENTRY_POINT_GROUP):
                if self._manager.get_plugin(entry.name) is not None:
                    continue
                try:
                    self._manager.register(entry.load(), entry.name)
                except Exception as exc:
                    self.reporter()(
                        entry.name,
                        f"plugin '{entry.name}' ({entry.value}, entry point group "
                        f"'{ENTRY_POINT_GROUP}') is left out: {type(exc).__name__}: {exc}",
                    )


class RunListeners:
    """The listener hooks of one run, each plugin called on its own."""

    def __init__(self, plugins: SwarmPlugins, *, followed: bool = False) -> None:
        self.plugins = plugins
        self.followed = followed
        self._deaf: set[str] = set()
        """Plugins that raised: they hear no more of this run."""
        self._impls: dict[str, list[pluggy.HookImpl]] = {}

    @property
    def hear_events(self) -> bool:
        """Whether any listener hears ``swarm_event`` (an event need not be made for none)."""
        return bool(self._listening("swarm_event"))

    def event(self, event: dict[str, Any], run_dir: Path) -> None:
        """``swarm_event`` of every listener."""
        if not self._listening("swarm_event"):
            return
        where = f"event {event.get('seq')} ({event.get('kind')}) of run {run_dir.name}"
        self._call(
            "swarm_event", where, {"event": event, "run_dir": run_dir, "followed": self.followed}
        )

    def step_result(self, run_dir: Path, flow_key: str, result: StepResult) -> None:
        """``swarm_step_result`` of every listener."""
        if not self._listening("swarm_step_result"):
            return
        where = f"the result of {flow_key}/{result.step_id} in run {run_dir.name}"
        self._call(
            "swarm_step_result", where, {"run_dir": run_dir, "flow_key": flow_key, "result": result}
        )

    def run_end(self, outcome: RunOutcome) -> None:
        """``swarm_run_end`` of every listener."""
        where = f"the end of run {outcome.run_id}"
        self._call("swarm_run_end", where, {"outcome": outcome, "followed": self.followed})

    def _listening(self, hook: str) -> list[pluggy.HookImpl]:
        impls = self._impls.get(hook)
        if impls is None:  # the listeners of the run are those there when it first calls
            impls = self._impls[hook] = self.plugins.implementations(hook)
        return impls

    def _call(self, hook: str, where: str, arguments: dict[str, Any]) -> None:
        for impl in self._listening(hook):
            name = impl.plugin_name
            if name in self._deaf:
                continue
            try:
                _call(impl, arguments)
            except Exception as exc:  # a listener never breaks a run, nor the others
                self._deaf.add(name)
                self.plugins.reporter()(
                    name,
                    f"listener '{name}' raised {type(exc).__name__}: {exc} at {where}; it "
                    "hears no more of this run",
                )


_PROCESS: SwarmPlugins | None = None
_MAKING = threading.Lock()


def process_plugins() -> SwarmPlugins:
    """The plugins of this process: the entry point group's and those registered on it."""
    global _PROCESS
    if _PROCESS is None:
        with _MAKING:
            if _PROCESS is None:
                _PROCESS = SwarmPlugins(entry_points=True)
    return _PROCESS


def engine_registry() -> EngineRegistry:
    """The built-in engines and every plugin's (``swarm_register_engines``)."""
    return default_registry(extend=process_plugins().register_engines)
