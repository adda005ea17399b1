"""Record: the frozen value type of the run path (a msgspec struct)."""

from __future__ import annotations

import pickle

import msgspec
import pytest

from swarm_runtime.record import Record, field, replace


class Point(Record):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)


def test_defaults_factories_and_keywords() -> None:
    first, second = Point(1), Point(1)
    assert (first.x, first.y, first.tags) == (1, 0, ())
    assert first.notes == [] and first.notes is not second.notes
    assert Point(x=2, y=3, tags=("a",)).tags == ("a",)
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, z=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, 2, (), [], 5)  # type: ignore[call-arg]


def test_immutable_and_slotted() -> None:
    point = Point(1)
    with pytest.raises(AttributeError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del point.x
    assert not hasattr(point, "__dict__")


def test_equality_hash_and_repr() -> None:
    assert Point(1) == Point(1) and Point(1) != Point(1, 2)
    assert hash(Point(1, tags=("a",), notes=None)) == hash(Point(1, tags=("a",), notes=None))  # type: ignore[arg-type]
    assert repr(Point(1)) == "Point(x=1, y=0, tags=(), notes=[])"
    assert Point(1) != (1, 0, (), [])


def test_post_init_runs_and_can_refuse() -> None:
    class Positive(Record):
        value: int

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    assert Positive(1).value == 1
    with pytest.raises(ValueError, match="negative"):
        Positive(-1)


def test_field_without_default_after_default_is_refused() -> None:
    with pytest.raises(TypeError):

        class Bad(Record):
            a: int = 0
            b: int  # type: ignore[misc]


def test_pickles_replaces_and_lists_fields() -> None:
    point = Point(1, 2, ("t",))
    assert pickle.loads(pickle.dumps(point)) == point
    assert replace(point, y=5) == Point(1, 5, ("t",)) and point.y == 2
    with pytest.raises(TypeError):
        replace(point, z=1)
    fields = {f.name: f for f in msgspec.structs.fields(Point)}
    assert list(fields) == ["x", "y", "tags", "notes"]
    assert fields["x"].required
    assert fields["y"].default == 0 and not fields["y"].required
    assert fields["notes"].default_factory is list
