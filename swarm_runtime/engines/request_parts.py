"""Which part of a provider request differs from another: prompt, model, tools, parameters.

A recorded call stops matching when a part of its request changes
(docs/record-replay.md#stale-cassettes): the ``prompt`` (the system prompt and the messages:
persona, teaching notes, role, the request and the history), the ``model``, the ``tools``, or the
``parameters`` (everything else the body carries: ``max_tokens``, ``stream``, …). A replay miss and
``swarm cassettes status`` both name the parts this module finds.
"""

from __future__ import annotations

from typing import Any

from swarm_runtime.record import Record

PARTS = ("prompt", "model", "tools", "parameters")
"""The parts of a request, in the order messages name them."""

_PART_OF_KEY = {"system": "prompt", "messages": "prompt", "model": "model", "tools": "tools"}


def part_of(key: str) -> str:
    """The part a top-level key of a request body belongs to."""
    return _PART_OF_KEY.get(key, "parameters")


def changed_parts(recorded: Any, sent: Any) -> tuple[str, ...]:
    """The parts in which two request bodies differ, in :data:`PARTS` order.

    Bodies that are not JSON objects differ as a whole (``prompt``), when they differ.
    """
    if not isinstance(recorded, dict) or not isinstance(sent, dict):
        return () if recorded == sent else ("prompt",)
    found = {
        part_of(key) for key in recorded.keys() | sent.keys() if recorded.get(key) != sent.get(key)
    }
    return tuple(part for part in PARTS if part in found)


def changed_line(parts: tuple[str, ...]) -> str:
    """The line a replay miss starts its detail with."""
    if not parts:
        return "changed: nothing in the body (the method or path differs)"
    return "changed: " + ", ".join(parts)


class Expected(Record):
    """What every call of one engine, with the current settings, sends besides its prompt.

    An HTTP engine registers how it reads this from its settings (``expected=`` in
    :meth:`~swarm_runtime.engines.registry.EngineRegistry.register`), so ``swarm cassettes
    status`` can say which recorded calls the current settings would no longer send.
    """

    model: str
    params: dict[str, Any]
    """Every other key of the body (``max_tokens``, ``stream``, …) and its value."""
