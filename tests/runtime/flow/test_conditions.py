"""Conditions (docs/flows.md#conditions): CEL over handoff, receipt, params, loop_state and
facts."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from swarm_runtime.flow import cel, conditions
from swarm_runtime.flow.conditions import condition_error, evaluate


@pytest.fixture(params=cel.IMPLEMENTATIONS)
def implementation(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """Each CEL implementation in turn evaluates the test's conditions."""
    monkeypatch.setenv("SWARM_CEL", request.param)
    cel.implementation.cache_clear()
    conditions._program.cache_clear()
    assert cel.implementation().name == request.param
    yield request.param
    cel.implementation.cache_clear()
    conditions._program.cache_clear()


@pytest.mark.parametrize(
    ("source", "values", "held", "error"),
    [
        ("handoff.status != 'VERIFIED'", {"handoff": {"status": "NEEDS_WORK"}}, True, None),
        (
            "a && b || c".replace("a", "true").replace("b", "false").replace("c", "true"),
            {},
            True,
            None,
        ),
        ("handoff.missing == 1", {"handoff": {}}, False, "missing"),
        ("has(handoff.missing)", {}, False, None),
        ("size(facts) == 1 && facts[0].id == 'DEC-1'", {"facts": [{"id": "DEC-1"}]}, True, None),
        ("params.n + 1", {"params": {"n": 1}}, False, "gave a int, not true or false"),
        ("loop_state['critic:author'] >= 2", {"loop_state": {"critic:author": 2}}, True, None),
    ],
)
def test_a_condition_holds_fails_or_errs_as_false(
    source: str, values: dict[str, object], held: bool, error: str | None, implementation: str
) -> None:
    assert condition_error(source) is None
    result = evaluate(source, values)
    assert result.value is held
    assert (result.error is None) if error is None else (error in str(result.error))


def test_a_condition_keeps_working_after_its_library_is_imported_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pytest's in-process pytester drops the modules its inner session imported: the next
    # import makes new classes, and a condition must not mix the two.
    assert condition_error("handoff.x ==") is not None  # imports and caches the library
    for name in [m for m in sys.modules if m == "celpy" or m.startswith("celpy.")]:
        monkeypatch.delitem(sys.modules, name)
    assert "is not a CEL expression" in str(condition_error("handoff.status =="))
    assert evaluate("handoff.status == 'OK'", {"handoff": {"status": "OK"}}).value is True


HOSTILE = {
    "3000 nested parentheses": "(" * 3000 + "handoff.ok" + ")" * 3000,
    "20 000 '!'": "!" * 20_000 + "true",
    "40 000-term &&": " && ".join(["handoff.ok"] * 40_000),
    "a 97 KB condition": "handoff.note == '" + "x" * 97_000 + "'",
    "brackets 20 deep, short": "(" * 20 + "true" + ")" * 20,
    "300 '!', short": "!" * 300 + "true",
}


@pytest.mark.parametrize("source", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_condition_too_big_is_refused_from_its_text_before_any_parse(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.flow import conditions

    def no_parser() -> None:
        raise AssertionError("the CEL implementation was asked to parse it")

    monkeypatch.setattr(conditions, "_cel", no_parser)
    why = condition_error(source)
    assert why is not None and "at most" in why, why


def test_a_condition_whose_parse_tree_is_too_deep_is_refused_at_load() -> None:
    """Short, few operators and no brackets, but each member access is a level of the tree:
    evaluated, it would exhaust the stack."""
    source = "handoff" + ".a" * 150 + " == 1"
    why = condition_error(source)
    assert why is not None and "nested too deeply" in why and "at most" in why, why


def test_a_plain_condition_is_well_inside_the_limits() -> None:
    source = " && ".join(f"handoff.field_{n} == 'VALUE_{n}'" for n in range(20))
    assert condition_error(source) is None
    assert condition_error("facts.exists(f, f.id == 'DEC-001') && (params.a || params.b)") is None


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("source", "values"),
    [
        ("handoff.x == 1", {"handoff": {"x": _nested(5000)}}),
        ("size(facts) > 0", {"facts": [{"id": "DEC-1", "text": _nested(100_000)}]}),
    ],
    ids=["deep-value", "very-deep-fact"],
)
def test_evaluation_never_raises_what_goes_wrong_counts_as_false(
    source: str, values: dict[str, object], implementation: str
) -> None:
    result = evaluate(source, values)
    assert result.value is False
    assert result.error is not None and "nests too deeply" in result.error


def test_a_condition_too_deep_for_cel_python_is_false_there_and_answered_by_the_other() -> None:
    """Never loaded from a flow (its operators are over the limit): evaluated as it is."""
    source = "!" * 1500 + "true"
    by_python = _evaluate_with("cel-python", source)
    assert by_python.value is False
    assert by_python.error is not None and "nests too deeply" in by_python.error
    assert _evaluate_with("cel-expr-python", source).value is True  # 1500 negations of true


def _evaluate_with(name: str, source: str) -> conditions.Evaluation:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SWARM_CEL", name)
        cel.implementation.cache_clear()
        conditions._program.cache_clear()
        try:
            return evaluate(source, {})
        finally:
            cel.implementation.cache_clear()
            conditions._program.cache_clear()
