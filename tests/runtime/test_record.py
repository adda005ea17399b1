"""Record: the frozen, slotted value type the run path uses instead of dataclasses."""

from __future__ import annotations

import pickle

import pytest

from swarm_runtime.record import MISSING, Record, field, record_fields


class Point(Record):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    notes: dict[str, int] = field(default_factory=dict, compare=False, repr=False)


def test_defaults_factories_and_keywords() -> None:
    first, second = Point(1), Point(1)
    assert (first.x, first.y, first.tags) == (1, 0, ())
    assert first.notes == {} and first.notes is not second.notes
    assert Point(x=2, y=3, tags=("a",)).tags == ("a",)
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, z=3)  # type: ignore[call-arg]


def test_immutable_and_slotted() -> None:
    point = Point(1)
    with pytest.raises(AttributeError, match="immutable"):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del point.x
    assert not hasattr(point, "__dict__")


def test_equality_hash_and_repr_respect_compare_and_repr() -> None:
    assert Point(1, notes={"a": 1}) == Point(1)
    assert Point(1) != Point(1, 2)
    assert hash(Point(1, tags=("a",))) == hash(Point(1, tags=("a",)))
    assert repr(Point(1)) == "Point(x=1, y=0, tags=())"
    assert Point(1) != (1, 0, ())


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
    with pytest.raises(TypeError, match="'b' without a default follows"):

        class Bad(Record):
            a: int = 0
            b: int  # type: ignore[misc]


def test_pickles_and_lists_fields() -> None:
    point = Point(1, 2, ("t",))
    assert pickle.loads(pickle.dumps(point)) == point
    fields = record_fields(Point)
    assert list(fields) == ["x", "y", "tags", "notes"]
    assert fields["x"] == (MISSING, None)
    assert fields["notes"][1] is dict
