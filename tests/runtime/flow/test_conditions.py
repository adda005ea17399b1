"""Conditions (SPEC §4.8): CEL over handoff, receipt, params, loop_state and facts."""

from __future__ import annotations

import sys

import pytest

from swarm_runtime.flow.conditions import condition_error, evaluate


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
        ("handoff.missing == 1", {"handoff": {}}, False, "no such member"),
        ("has(handoff.missing)", {}, False, None),
        ("size(facts) == 1 && facts[0].id == 'DEC-1'", {"facts": [{"id": "DEC-1"}]}, True, None),
        ("params.n + 1", {"params": {"n": 1}}, False, "gave a int, not true or false"),
        ("loop_state['critic:author'] >= 2", {"loop_state": {"critic:author": 2}}, True, None),
    ],
)
def test_a_condition_holds_fails_or_errs_as_false(
    source: str, values: dict[str, object], held: bool, error: str | None
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
        ("!" * 1500 + "true", {}),  # never loaded from a flow: evaluated as it is
        ("handoff.x == 1", {"handoff": {"x": _nested(5000)}}),
    ],
    ids=["deep-condition", "deep-value"],
)
def test_evaluation_never_raises_what_goes_wrong_counts_as_false(
    source: str, values: dict[str, object]
) -> None:
    result = evaluate(source, values)
    assert result.value is False
    assert result.error is not None and "nests too deeply" in result.error


def test_a_syntax_error_shows_the_whole_short_expression_with_a_caret_under_the_column() -> None:
    why = str(condition_error("handoff.status != 'OK' &&"))
    excerpt, caret = why.splitlines()[-2:]
    assert excerpt.strip() == "handoff.status != 'OK' &&"
    assert excerpt[caret.index("^")] == "&"


def test_a_syntax_error_in_a_long_expression_shows_a_marked_window_around_it() -> None:
    terms = [f"handoff.field_{n} == {n}" for n in range(12)]
    source = " && ".join(terms[:6]) + " &&& " + " && ".join(terms[6:])
    why = str(condition_error(source))
    excerpt, caret = why.splitlines()[-2:]
    assert excerpt.strip().startswith("…") and excerpt.endswith("…"), excerpt
    assert excerpt[caret.index("^") :].startswith("& handoff.field_6"), (excerpt, caret)
    assert len(excerpt.strip()) < len(source)
