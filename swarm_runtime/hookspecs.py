"""The hooks a plugin may implement: what swarm-stepwise calls, when, and with what.

A plugin is a module (or any object) with functions named as these hooks; a function takes
any of its hook's arguments, by name, and no decorator is needed (:data:`hookimpl` from
:mod:`swarm_runtime.plugins` adds pluggy's options, such as ``tryfirst=True``). Plugins
come from the entry point group ``swarm_runtime``, from ``conftest.py`` files and pytest
plugins under pytest, and from code (:mod:`swarm_runtime.plugins`).

The listener hooks (``swarm_event``, ``swarm_step_result``, ``swarm_run_end``) are called
in the process where they happen: where a run is executed (``swarm run``, a ``swarm
worker``, Flow Studio, pytest), and, for ``swarm_event`` and ``swarm_run_end``, in a
process that follows a run another process executes (``swarm run --backend celery``,
``get_backend("celery").wait``), with ``followed=True``. A listener that raises is reported
once and hears no more of that run; the run never notices.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from swarm_runtime.engines.base import StepResult
    from swarm_runtime.engines.registry import EngineRegistry
    from swarm_runtime.orchestrator.state import RunOutcome
    from swarm_runtime.tools.registry import ToolRegistry

PROJECT = "swarm_runtime"
"""pluggy's project name: the markers' and the entry point group's."""

hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def swarm_register_engines(registry: EngineRegistry) -> None:
    """Add engines: ``registry.register("my-step", factory, section="my")``.

    Called once per engine registry, before its first engine is built, so
    ``replace=True`` overrides a built-in engine. ``section`` names the engine's own
    ``engines.<section>`` of runtime.yaml.
    """


@hookspec
def swarm_register_tools(registry: ToolRegistry) -> None:
    """Add Python tools a step may offer its model: ``registry.register(function)``.

    Called once per run, before runtime.yaml's ``tools:`` are added (a name both give is
    an error naming both). ``registry.register(f, name="lookup", pure=True)`` names the tool
    and marks it pure (replay runs it again instead of serving its recorded answer).
    """


@hookspec
def swarm_event(event: dict[str, Any], run_dir: Path, followed: bool) -> None:
    """Every event of a run, in ``seq`` order, once its line is in ``events.jsonl``.

    ``event`` is the line as a mapping (``run_id``, ``seq``, ``ts``, ``kind``,
    ``flow_key``, ``step_id``, ``agent_key``, ``payload``); ``run_dir`` the run's
    directory. ``followed`` is False where the run is executed and True where it is
    followed from its files: a plugin installed on the workers and where runs are started
    (an exporter) skips followed events to see each event once.
    """


@hookspec
def swarm_step_result(run_dir: Path, flow_key: str, result: StepResult) -> None:
    """Every engine call's result, where the step is executed (the call's flow key)."""


@hookspec
def swarm_run_end(outcome: RunOutcome, followed: bool) -> None:
    """A run's attempt ended (completed, paused or stopped) and its ``meta.json`` says so.

    ``outcome.summary`` is that ``meta.json``; ``followed`` as for :func:`swarm_event`.
    """


HOOKS = (
    "swarm_register_engines",
    "swarm_register_tools",
    "swarm_event",
    "swarm_step_result",
    "swarm_run_end",
)
"""Every hook's name: a function of a plugin named so is that hook's implementation."""
