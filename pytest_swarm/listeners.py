"""The runtime's plugins under pytest: ``conftest.py`` listeners, and the plugin's own.

Every ``conftest.py`` and pytest plugin with a function named as one of the runtime's
hooks (:mod:`swarm_runtime.hookspecs`: ``swarm_event``, ``swarm_register_engines``, …) is
registered with the process's plugins for the session, so every run of the session's tests
calls it: ``flow_runner``'s, the run service's, and those followed from Celery workers. A
listener that raises is said in the session's ``swarm`` summary, once per listener.

The plugin's counters are listeners too, beside the user's: :class:`RunCounter` counts each
``flow_runner`` run as it ends, :class:`StepResults` keeps a run's engine results.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_swarm.summary import SwarmTotals
    from swarm_runtime.engines.base import StepResult
    from swarm_runtime.orchestrator.state import RunOutcome
    from swarm_runtime.plugins import Report, SwarmPlugins


class RuntimePlugins:
    """Registers the session's swarm hook implementations with the runtime (a pytest plugin)."""

    def __init__(self, totals: SwarmTotals) -> None:
        self.totals = totals
        self.added: list[object] = []
        self.attached = False
        self.previous: Report | None = None

    def pytest_plugin_registered(self, plugin: object, plugin_name: str) -> None:
        """A conftest or plugin implementing a swarm hook: registered with the runtime too."""
        from swarm_runtime.hookspecs import HOOKS

        if not any(inspect.isroutine(getattr(plugin, hook, None)) for hook in HOOKS):
            return
        from swarm_runtime.errors import ConfigError

        plugins = self.attach()
        if plugins.is_registered(plugin):  # an entry point of the 'swarm_runtime' group too
            return
        try:
            plugins.register(plugin, plugin_name)
        except ConfigError as exc:
            raise pytest.UsageError(f"swarm: {exc}") from None
        self.added.append(plugin)

    def attach(self) -> SwarmPlugins:
        """The process's plugins, their failures said in this session's summary from now on.

        Called once the runtime is in use (a hook found, a ``flow_runner``): a session that
        runs no flow does not import the runtime for this.
        """
        from swarm_runtime.plugins import process_plugins

        plugins = process_plugins()
        if not self.attached:
            self.attached = True
            self.previous, plugins.report = plugins.report, self.heard
        return plugins

    def heard(self, plugin: str, line: str) -> None:
        """A plugin that failed: said once per plugin, in the summary."""
        self.totals.plugin_warnings.setdefault(plugin, line)

    def pytest_unconfigure(self) -> None:
        """Take the session's plugins out of the runtime again."""
        if not self.attached:
            return
        plugins = self.attach()
        for plugin in self.added:
            plugins.unregister(plugin)
        plugins.report = self.previous
        self.added.clear()
        self.attached = False


class RunCounter:
    """The session's run counters as a listener of each ``flow_runner`` run."""

    def __init__(self, totals: SwarmTotals) -> None:
        self.totals = totals

    def swarm_run_end(self, outcome: RunOutcome) -> None:
        """Count a run (its steps, tokens, cost and budget shares) as it ends."""
        self.totals.add_run(outcome.summary, outcome.budget_use)


class StepResults:
    """The engine results of one run, in the order the calls were made."""

    def __init__(self) -> None:
        self.results: list[tuple[str, StepResult]] = []

    def swarm_step_result(self, flow_key: str, result: StepResult) -> None:
        """Keep one call's result."""
        self.results.append((flow_key, result))


PLUGINS_KEY = pytest.StashKey[RuntimePlugins]()
"""The session's :class:`RuntimePlugins` on ``config.stash``."""
