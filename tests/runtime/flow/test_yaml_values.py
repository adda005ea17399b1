"""Values in flow files: YAML numbers, branch keys and the flow key."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.loader import load_flow


def _flow_text(extra: str) -> str:
    return (
        "key: f\ntitle: T\ndescription: D\nsteps:\n"
        "  - id: a\n    agents: [w]\n    role: R\n"
        "    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}\n"
        + extra
    )


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        (
            "    routing: {kind: microloop, loop_target: a, loop_condition_field: s, "
            "loop_success_values: [OK], max_iterations: 0x10}\n",
            None,
            None,
        ),
        ("    budget: {tokens: 1:30}\n", None, None),
        ("    budget: {cost_usd: .nan}\n", "budget.cost_usd", "finite number"),
        ("    budget: {cost_usd: .inf}\n", "budget.cost_usd", "finite number"),
        ("    routing: {kind: branch, branches: {[1]: a}}\n", "routing.branches", "plain values"),
        (
            "    routing: {kind: branch, branches: {GO: a, go: a}}\n",
            "routing.branches.go",
            "repeats 'GO'",
        ),
    ],
)
def test_yaml_numbers_and_branch_keys(
    tmp_path: Path, extra: str, field: str | None, message: str | None
) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(_flow_text(extra))
    if message is None:
        load_flow(path)  # YAML 1.1 numbers (hex, sexagesimal) are numbers, not a crash
        return
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    assert info.value.field == field and message in str(info.value)
    assert info.value.line == 9


def test_flow_key_syntax_is_checked_at_load(tmp_path: Path) -> None:
    path = tmp_path / "UPPER.yaml"
    path.write_text(_flow_text("").replace("key: f", "key: UPPER"))
    with pytest.raises(FlowDefinitionError, match="flow key 'UPPER' is invalid") as info:
        load_flow(path)
    assert (info.value.line, info.value.field) == (1, "key")
