"""Immutable records: the value types of the run path, as ``msgspec`` structs.

A :class:`Record` declares its fields as annotations, like a frozen, slotted dataclass:

    class Point(Record):
        x: int
        y: int = 0
        tags: list[str] = field(default_factory=list)

``msgspec`` builds each class's ``__init__``, equality, hashing, ``repr`` and pickling in
C, when the class is defined: no source is generated and compiled, and building a record
costs what a hand-written ``__init__`` would. Assigning to a field raises
``AttributeError``. The flow cache encodes and decodes records with ``msgspec``'s JSON
codec, straight from and into these classes. ``__post_init__`` runs after ``__init__``
(and after decoding), and may refuse values by raising ``ValueError`` or ``TypeError``.
A class's fields, with their types and defaults, are ``msgspec.structs.fields(cls)``; its
JSON Schema is ``msgspec.json.schema(cls)``.
"""

from __future__ import annotations

from typing import Any, TypeVar, dataclass_transform

import msgspec
import msgspec.structs

_R = TypeVar("_R", bound="Record")

field = msgspec.field
"""Declare a field's default or default factory: ``field(default_factory=list)``."""


@dataclass_transform(frozen_default=True, field_specifiers=(msgspec.field,))
class Record(msgspec.Struct, frozen=True):
    """Base of frozen value records (see the module docstring); subclasses are frozen too.

    (``dataclass_transform`` tells type checkers what ``msgspec`` does at run time: a
    subclass is frozen without saying so.)
    """


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with some fields changed (like ``dataclasses.replace``)."""
    return msgspec.structs.replace(record, **changes)
