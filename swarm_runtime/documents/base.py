"""What every run document is: a frozen ``msgspec`` struct, written and read as declared.

A :class:`Document` is declared once, as a class whose fields carry their types and
constraints (``Annotated[int, Meta(ge=0)]``) and a docstring line under each. The run
writes it by building it (mypy checks every writer against its fields) and encoding it
with the one encoder of :mod:`swarm_runtime.storage.store`; a reader gets it back with
:func:`read`, which checks the types and constraints and then the rules a type cannot
say (:meth:`Document.problems`: timestamps, sums, one field against another); ``swarm
schema`` prints its JSON Schema (:func:`json_schema`), descriptions from the docstrings.

A field that a document may leave out is ``UNSET`` when it is absent: it is left out of
the JSON too, so what a file holds is exactly what was given.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, cast, dataclass_transform

import msgspec
import msgspec.json
import msgspec.structs
from msgspec import UNSET, Meta

from swarm_runtime.timeutil import TIMESTAMP_RE, parse_ts
from swarm_runtime.versions import SCHEMA_VERSION

SchemaVersion = Literal["1"]
"""The contract version a document follows (``schema_version``)."""
CURRENT_VERSION = cast(SchemaVersion, SCHEMA_VERSION)
"""The version this runtime writes (:data:`~swarm_runtime.versions.SCHEMA_VERSION`)."""

Timestamp = Annotated[
    str,
    Meta(
        description="RFC 3339 UTC with exactly one trailing Z",
        extra_json_schema={"format": "date-time", "pattern": TIMESTAMP_RE.pattern},
    ),
]
"""A timestamp (:func:`~swarm_runtime.timeutil.format_ts`); checked by the reader."""

Location = tuple[str | int, ...]
"""Where in a document: field names and list indexes, outermost first."""
Problem = tuple[Location, str]
"""A rule a document breaks: where, and what is wrong (in our words)."""

D = TypeVar("D", bound="Document")


@dataclass_transform(frozen_default=True, field_specifiers=(msgspec.field,))
class Document(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A run document (or a part of one): frozen, unknown fields refused.

    Read by attribute (``receipt.status``) or, as its JSON reads, by item
    (``receipt["status"]``); a field it does not have (or left out) is a ``KeyError``
    naming the fields it has. (``dataclass_transform`` tells type checkers what
    ``msgspec`` does at run time: a subclass is frozen without saying so.)
    """

    def problems(self) -> list[Problem]:
        """The rules beyond its fields' types and constraints that it breaks (none here)."""
        return []

    def __getitem__(self, name: str) -> Any:
        value = getattr(self, name) if name in self.__struct_fields__ else UNSET
        if value is UNSET:
            raise KeyError(self._no_field(name))
        return value

    def __contains__(self, name: object) -> bool:
        return name in self.__struct_fields__ and getattr(self, str(name)) is not UNSET

    def get(self, name: str, default: Any = None) -> Any:
        """The field ``name``, or ``default`` when there is none."""
        try:
            return self[name]
        except KeyError:
            return default

    def _no_field(self, name: str) -> str:
        present = ", ".join(field for field in self.__struct_fields__ if field in self)
        others = (
            "" if self.__struct_config__.forbid_unknown_fields else " (this kind may carry others)"
        )
        return f"a {self._what()} has no field {name!r}; its fields: {present or 'none'}{others}"

    @classmethod
    def _what(cls) -> str:
        return cls.__name__


class Invalid(ValueError):
    """A value that is not the document it should be: every problem, each with its place."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(
            "; ".join(f"{dotted(where) or '(document)'}: {what}" for where, what in problems)
        )
        self.problems = problems


def dotted(where: Location) -> str:
    """``payload.candidates[0].id``."""
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.removeprefix(".")


_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_PART = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def _located(exc: msgspec.ValidationError) -> Problem:
    """Msgspec's one error as a problem: its path (``$.a[0].b``) split off the message."""
    message = str(exc)
    found = _AT.search(message)
    if found is None:
        return (), message
    where: list[str | int] = []
    for name, index in _PART.findall(found.group("path")):
        where.append(int(index) if index else name)
    return tuple(where), message[: found.start()]


def read(value: object, kind: Any) -> Any:
    """``value`` (decoded JSON) as the document type ``kind``; :class:`Invalid` when not.

    The types and constraints are checked first (msgspec stops at the first break), then,
    on a value that has them, every rule of :meth:`Document.problems`.
    """
    try:
        document = msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise Invalid([_located(exc)]) from None
    problems = document.problems() if isinstance(document, Document) else []
    if problems:
        raise Invalid(problems)
    return document


def timestamp_problems(where: Location, *stamps: tuple[str, str | None]) -> list[Problem]:
    """Each ``(field, value)`` that is not a timestamp; None and UNSET are left to the types."""
    found: list[Problem] = []
    for name, value in stamps:
        if isinstance(value, str):
            try:
                parse_ts(value)
            except ValueError as exc:
                found.append(((*where, name), str(exc)))
    return found


def elapsed_problems(
    where: Location, started: str, completed: str, duration_ms: int, names: tuple[str, str, str]
) -> list[Problem]:
    """``completed`` not before ``started``, and ``duration_ms`` what lies between (1 ms)."""
    try:
        begun, ended = parse_ts(started), parse_ts(completed)
    except ValueError:
        return []  # reported as a timestamp
    start_name, end_name, duration_name = names
    if ended < begun:
        return [((*where, end_name), f"{end_name} is before {start_name}")]
    elapsed = (ended - begun).total_seconds() * 1000
    if abs(elapsed - duration_ms) > 1.0:
        return [
            (
                (*where, duration_name),
                f"{duration_name} is {duration_ms} but the timestamps are {elapsed:.3f} ms apart",
            )
        ]
    return []


# -- JSON Schema ------------------------------------------------------------------------


@cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring line under each field of a class (and its bases), by field name."""
    import ast
    import inspect
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ in ("builtins", "msgspec") or klass is Document:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0]
        assert isinstance(body, ast.ClassDef)
        for before, after in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(before, ast.AnnAssign)
                and isinstance(before.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[before.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _described(schema: dict[str, Any], types: dict[str, type]) -> dict[str, Any]:
    """Each component's fields described by their docstring lines."""
    for name, component in schema.get("$defs", {}).items():
        cls = types.get(name)
        properties = component.get("properties")
        if cls is None or not isinstance(properties, dict):
            continue
        renamed = {f.encode_name: f.name for f in msgspec.structs.fields(cls)}
        docs = field_docs(cls)
        for key, entry in properties.items():
            doc = docs.get(renamed.get(str(key), str(key)))
            if doc and "description" not in entry:
                entry["description"] = doc
    return schema


def json_schema(
    kind: Any, *, schema_hook: Callable[[type], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The JSON Schema of a document type (or a union of them), with field descriptions.

    The root is inlined (as pydantic writes it) when it is one struct; the parts it uses
    stay under ``$defs``.
    """
    (root,), components = msgspec.json.schema_components(
        [kind], schema_hook=schema_hook, ref_template="#/$defs/{name}"
    )
    types = _struct_types(kind)
    schema = _described({"$defs": dict(components)}, types)
    defs = schema["$defs"]
    ref = root.get("$ref", "") if isinstance(root, dict) else ""
    name = ref.rpartition("/")[2]
    inline = name in defs and list(root) == ["$ref"]
    document = dict(defs.pop(name)) if inline else dict(root)
    if defs:
        document["$defs"] = defs
    return document


def _struct_types(kind: Any) -> dict[str, type]:
    """Every struct type reachable from ``kind``, by the name its schema component has."""
    found: dict[str, type] = {}

    def visit(value: Any) -> None:
        if isinstance(value, type) and issubclass(value, msgspec.Struct):
            if value.__name__ in found:
                return
            found[value.__name__] = value
            for item in msgspec.structs.fields(value):
                visit(item.type)
            return
        for arg in getattr(value, "__args__", ()) or ():
            visit(arg)
        origin = getattr(value, "__origin__", None)
        if origin is not None and origin is not value:
            visit(origin)

    visit(kind)
    return found


def unset_to_none(value: Any) -> Any:
    """``value``, or None for UNSET (a field a document left out)."""
    return None if value is UNSET else value
