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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

import msgspec
import msgspec.structs

_R = TypeVar("_R", bound="Record")

MISSING: Any = msgspec.NODEFAULT
"""The default of a field that has none (see :func:`record_fields`)."""

field = msgspec.field
"""Declare a field's default or default factory: ``field(default_factory=list)``."""


class _Probe(msgspec.Struct):
    value: list[Any] = msgspec.field(default_factory=list)


_FACTORY = type(_Probe.__struct_defaults__[0])
"""The type ``msgspec`` keeps a default factory in, among a class's defaults."""


@dataclass_transform(frozen_default=True, field_specifiers=(msgspec.field,))
class Record(msgspec.Struct, frozen=True):
    """Base of frozen value records (see the module docstring); subclasses are frozen too.

    (``dataclass_transform`` tells type checkers what ``msgspec`` does at run time: a
    subclass is frozen without saying so.)
    """


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with some fields changed (like ``dataclasses.replace``)."""
    return msgspec.structs.replace(record, **changes)


def record_fields(cls: type[Record]) -> dict[str, tuple[Any, Callable[[], Any] | None]]:
    """A record class's fields in declaration order: name -> (default, default factory).

    A field without a default has :data:`MISSING` as its default; one with a default
    factory has :data:`MISSING` as its default and the factory beside it.
    """
    names: tuple[str, ...] = cls.__struct_fields__
    defaults: tuple[Any, ...] = cls.__struct_defaults__
    found: dict[str, tuple[Any, Callable[[], Any] | None]] = {}
    first_default = len(names) - len(defaults)
    for index, name in enumerate(names):
        if index < first_default:
            found[name] = (MISSING, None)
            continue
        default = defaults[index - first_default]
        if isinstance(default, _FACTORY):
            found[name] = (MISSING, default.factory)
        else:
            found[name] = (default, None)
    return found
