"""Record: the frozen, slotted value type the run path uses instead of dataclasses."""

from __future__ import annotations

import pickle
from typing import Any

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


def _shapes() -> list[type[Record]]:
    class Plain(Record):
        a: int
        b: str

    class Mixed(Record):
        a: int
        b: int = 2
        c: list[int] = field(default_factory=list)
        d: str = field(default="d", compare=False)

    class Checked(Record):
        a: int
        b: int = 0

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("a must be >= 0")

    return [Plain, Mixed, Checked]


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((1,), {}),
    ((1, "x"), {}),
    ((1, 2, [3], "e"), {}),
    ((1, 2, [3], "e", 5), {}),
    ((), {"a": 1, "b": "y"}),
    ((1,), {"b": 5, "c": [9]}),
    ((1,), {"a": 2}),
    ((1,), {"z": 2}),
    ((-1,), {}),
    ((1,), {"c": MISSING}),
]


def test_a_record_is_built_alike_before_and_after_it_is_hot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import swarm_runtime.record as record_module

    outcomes: dict[bool, list[Any]] = {}
    for compiled in (False, True):
        monkeypatch.setattr(record_module, "HOT", -1 if compiled else 10**9)
        results: list[Any] = []
        for cls in _shapes():  # new classes: none has been built yet
            for args, kwargs in CALLS:
                try:
                    built = cls(*args, **kwargs)
                except (TypeError, ValueError) as exc:
                    results.append(type(exc))
                else:
                    results.append({k: getattr(built, k) for k in type(built).__record_fields__})
        outcomes[compiled] = results
    assert outcomes[True] == outcomes[False]
    assert {dict, type} <= {type(r) for r in outcomes[True]}  # values built, and refusals
    assert TypeError in outcomes[True] and ValueError in outcomes[True]
