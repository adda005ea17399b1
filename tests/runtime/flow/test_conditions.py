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
