"""Hooks the plugin adds to pytest (registered with ``pytest_addhooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_swarm.run_record import RunRecord
    from swarm_runtime.engines.registry import EngineRegistry


def pytest_swarm_register_engines(registry: EngineRegistry) -> None:
    """Deprecated: the runtime's ``swarm_register_engines`` hook replaces it.

    Called for one more release, with a DeprecationWarning, once per session:
    ``registry.register("my-step", factory)`` adds an engine to the registry the plugin's
    fixtures run with; ``replace=True`` overrides a built-in one.
    """


def pytest_swarm_normalize(record: RunRecord) -> None:
    """Add volatile fields of your own to the normalisation of a run before it is compared.

    Call ``record.add_volatile(key)`` with the name of each field that differs between
    runs: its value becomes ``<VOLATILE>`` wherever that key stands, at any depth of any
    file of the run (a key name, not a file path).
    """
