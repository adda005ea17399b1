"""Immutable records with slots: the value types of the run path.

``dataclasses`` costs more to import (it pulls in ``inspect``) and to apply than a stub
run of a small flow takes, and ``swarm run`` pays that on every start. A :class:`Record`
declares its fields as annotations, like a frozen, slotted dataclass; its metaclass
builds ``__slots__`` and one ``__init__`` per class, and the base class gives equality,
hashing, ``repr`` and immutability. Type checkers see dataclass semantics through
``dataclass_transform``.

    class Point(Record):
        x: int
        y: int = 0
        tags: list[str] = field(default_factory=list)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, dataclass_transform

_MISSING: Any = object()
_R = TypeVar("_R", bound="Record")


class _Field:
    __slots__ = ("compare", "default", "default_factory", "repr")

    def __init__(
        self,
        default: Any,
        default_factory: Callable[[], Any] | None,
        compare: bool,
        repr: bool,
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    compare: bool = True,
    repr: bool = True,
) -> Any:
    """Declare a field's default, default factory, and whether it counts in == and repr."""
    return _Field(default, default_factory, compare, repr)


def record_fields(cls: type[Record]) -> dict[str, tuple[Any, Callable[[], Any] | None]]:
    """A record class's fields in declaration order: name -> (default, default factory).

    A field without a default has ``MISSING`` as its default.
    """
    return {
        name: (spec.default, spec.default_factory) for name, spec in cls.__record_specs__.items()
    }


MISSING = _MISSING
"""The default of a field that has none (see :func:`record_fields`)."""


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with some fields changed (like ``dataclasses.replace``)."""
    values = {name: getattr(record, name) for name in type(record).__record_fields__}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field(s) {', '.join(sorted(unknown))}")
    values.update(changes)
    return type(record)(**values)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class _RecordMeta(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> _RecordMeta:
        annotations: dict[str, str] = namespace.get("__annotations__", {})
        names = tuple(
            key
            for key, value in annotations.items()
            if not key.startswith("__")
            and not str(value).startswith(("ClassVar", "typing.ClassVar"))
        )
        specs: dict[str, _Field] = {}
        for key in names:
            value = namespace.pop(key, _MISSING)
            specs[key] = value if isinstance(value, _Field) else _Field(value, None, True, True)
        namespace["__slots__"] = names
        namespace["__record_fields__"] = names
        namespace["__record_specs__"] = specs
        namespace["__record_compare__"] = tuple(k for k in names if specs[k].compare)
        namespace["__record_repr__"] = tuple(k for k in names if specs[k].repr)
        cls = super().__new__(mcls, name, bases, namespace)
        _check_order(name, names, specs)
        if names:
            cls.__init__ = _deferred_init(cls, names, specs, "__post_init__" in namespace)  # type: ignore[misc]
        return cls


def _check_order(name: str, names: tuple[str, ...], specs: dict[str, _Field]) -> None:
    """Refuse a field without a default after one with a default, as dataclasses do."""
    seen_default = False
    for key in names:
        spec = specs[key]
        if spec.default is not _MISSING or spec.default_factory is not None:
            seen_default = True
        elif seen_default:
            raise TypeError(f"{name}: field '{key}' without a default follows one with a default")


HOT = 8
"""Builds of a record class after which its ``__init__`` is compiled (see below)."""


def _deferred_init(
    cls: type, names: tuple[str, ...], specs: dict[str, _Field], post_init: bool
) -> Callable[..., None]:
    """A generic ``__init__`` that puts a compiled one in its place once the class is hot.

    Compiling an ``__init__`` costs 25 to 200 us (more with more fields), while a command
    builds most of its record classes once or twice (its settings, its run spec): those
    are built by this generic one, which binds arguments as a compiled one would and
    raises the same TypeErrors, only slower. A class built more than :data:`HOT` times
    (a step's context, say) gets the compiled one.
    """
    name = cls.__name__
    count = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal count
        count += 1
        if count > HOT:
            real = _make_init(name, names, specs, post_init)
            setattr(cls, "__init__", real)  # noqa: B010 - mypy forbids assigning to __init__
            real(self, *args, **kwargs)
            return
        if len(args) > len(names):
            raise TypeError(
                f"{name}.__init__() takes {len(names) + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        values = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in specs:
                raise TypeError(f"{name}.__init__() got an unexpected keyword argument '{key}'")
            if key in values:
                raise TypeError(f"{name}.__init__() got multiple values for argument '{key}'")
            values[key] = value
        missing = [key for key in names if key not in values and _no_default(specs[key])]
        if missing:
            raise TypeError(
                f"{name}.__init__() missing {len(missing)} required argument(s): "
                + ", ".join(repr(key) for key in missing)
            )
        for key in names:
            if key in values:
                value = values[key]
            else:
                spec = specs[key]
                factory = spec.default_factory
                value = factory() if factory is not None else spec.default
            if value is _MISSING and specs[key].default_factory is not None:
                value = specs[key].default_factory()  # type: ignore[misc]
            object.__setattr__(self, key, value)
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{name}.__init__"
    return __init__


def _no_default(spec: _Field) -> bool:
    return spec.default is _MISSING and spec.default_factory is None


def _make_init(
    name: str, names: tuple[str, ...], specs: dict[str, _Field], post_init: bool
) -> Callable[..., None]:
    # One generated __init__ per class (as dataclasses does), so building a record in a
    # hot loop costs what a hand-written __init__ would.
    params: list[str] = []
    body: list[str] = []
    scope: dict[str, Any] = {"_set": object.__setattr__, "_MISSING": _MISSING}
    seen_default = False
    for key in names:
        spec = specs[key]
        if spec.default_factory is not None:
            scope[f"_factory_{key}"] = spec.default_factory
            params.append(f"{key}=_MISSING")
            body.append(f"_set(self, {key!r}, _factory_{key}() if {key} is _MISSING else {key})")
            seen_default = True
            continue
        if spec.default is not _MISSING:
            scope[f"_default_{key}"] = spec.default
            params.append(f"{key}=_default_{key}")
            seen_default = True
        elif seen_default:
            raise TypeError(f"{name}: field '{key}' without a default follows one with a default")
        else:
            params.append(key)
        body.append(f"_set(self, {key!r}, {key})")
    if post_init:
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, scope)
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{name}.__init__"
    return init


class Record(metaclass=_RecordMeta):
    """Base of frozen, slotted value records (see the module docstring)."""

    __slots__ = ()
    __record_fields__: ClassVar[tuple[str, ...]] = ()
    __record_specs__: ClassVar[dict[str, _Field]] = {}
    __record_compare__: ClassVar[tuple[str, ...]] = ()
    __record_repr__: ClassVar[tuple[str, ...]] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set '{name}'")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete '{name}'")

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, key) for key in self.__record_compare__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.__class__, self._key()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={getattr(self, key)!r}" for key in self.__record_repr__)
        return f"{type(self).__name__}({inner})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, tuple(getattr(self, key) for key in self.__record_fields__))
