"""Plan step handlers: what one receives (:class:`StepCall`), and the registry by type.

A handler is a callable taking a :class:`StepCall` and returning its type's result (a
mapping, docs/plans.md). It validates its own payload: the core hands the payload over as the
plan wrote it and never interprets it. Raising fails the step; the core applies the
type's failure class. Third parties register handlers through the entry-point group
``swarm_runtime.plan_handlers`` (each entry point is a callable taking the registry),
after the built-ins (so a plugin may replace one, with ``replace=True``), or by
:meth:`HandlerRegistry.register`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import ConfigError, PlanError
from swarm_runtime.plan.kinds import KINDS
from swarm_runtime.record import Record, field

if TYPE_CHECKING:
    from swarm_runtime.plan.memory_store import MemoryStore

ENTRY_POINT_GROUP = "swarm_runtime.plan_handlers"


class HandlerError(Exception):
    """A handler's own refusal (a bad payload, nothing to work on): its message is shown."""


class LLMReply(Record):
    """What :meth:`StepCall.complete` answers: the reply's text, and who gave it."""

    text: str
    engine: str
    model: str


class StepCall(Record):
    """Everything a handler gets for one step: its payload and what the cycle knows."""

    step_id: str
    step_type: str
    payload: Any
    """The step's payload, deep-equal to the plan's (a copy: changing it changes nothing)."""
    results: Mapping[str, Mapping[str, Any]]
    """Results of the steps before it, by step id (read-only)."""
    input: str
    """The cycle's input (``swarm plan run --input``)."""
    session_ref: str
    metadata: Mapping[str, Any]
    """The plan's metadata (read-only)."""
    run_id: str
    repo_root: Path
    clock: Callable[[], datetime]
    memory: Callable[[], MemoryStore]
    """The plan store (opened on first use)."""
    complete: Callable[..., LLMReply]
    """``complete(prompt, system=None, engine=None)``: one model call through the run's
    engines (docs/engines.md), recorded in the step's receipt and transcript."""
    cancelled: threading.Event = field(default_factory=threading.Event)
    """Set when the step ran out of time: a handler that stores data must not commit."""


Handler = Callable[[StepCall], Mapping[str, Any]]


class HandlerRegistry:
    """Maps each v1 step type to its handler."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._entry_points_loaded = False

    def register(self, step_type: str, handler: Handler, *, replace: bool = False) -> None:
        """Handle ``step_type`` with ``handler``; a type already handled needs ``replace``."""
        if step_type not in KINDS:
            raise PlanError(
                f"no v1 step type {step_type!r}; handlers are registered for: {', '.join(KINDS)}",
                rule="type",
            )
        if step_type in self._handlers and not replace:
            raise ConfigError(
                f"a handler for {step_type} is registered already; pass replace=True to override it"
            )
        self._handlers[step_type] = handler

    def copy(self) -> HandlerRegistry:
        """A registry with the same handlers, to replace some in without touching this one."""
        other = HandlerRegistry()
        other._handlers = dict(self._handlers)
        other._entry_points_loaded = self._entry_points_loaded
        return other

    def get(self, step_type: str) -> Handler:
        """The handler of ``step_type``."""
        if step_type not in self._handlers:
            self.load_entry_points()
        handler = self._handlers.get(step_type)
        if handler is None:
            raise ConfigError(
                f"no handler for plan steps of type {step_type}; register one with "
                f"HandlerRegistry.register or the '{ENTRY_POINT_GROUP}' entry points"
            )
        return handler

    def load_entry_points(self) -> None:
        """Let the entry points of ``swarm_runtime.plan_handlers`` register (once)."""
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        from importlib.metadata import entry_points

        for entry in entry_points(group=ENTRY_POINT_GROUP):
            try:
                entry.load()(self)
            except Exception as exc:
                raise ConfigError(
                    f"plan handler plugin '{entry.name}' ({entry.value}) failed to load: {exc}"
                ) from exc
