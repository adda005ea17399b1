"""Two stub runs of the same flows give the same files once volatile values are normalised."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SHIPPED_FLOWS
from tests.runtime.helpers import normalised_tree, run_flows


def test_two_stub_runs_are_identical_after_normalisation(tmp_path: Path) -> None:
    first = run_flows(SHIPPED_FLOWS, tmp_path / "a")
    second = run_flows(SHIPPED_FLOWS, tmp_path / "b")
    assert first.run_id != second.run_id
    tree_a = normalised_tree(first.path, first.run_id)
    tree_b = normalised_tree(second.path, second.run_id)
    assert sorted(tree_a) == sorted(tree_b)
    assert len(tree_a) > 100  # receipts, transcripts, earlier executions, events, meta, spec
    for name in tree_a:
        assert tree_a[name] == tree_b[name], f"{name} differs between two stub runs"


def test_normalisation_does_not_hide_real_differences(tmp_path: Path) -> None:
    first = run_flows(SHIPPED_FLOWS, tmp_path / "a", ("signal",))
    second = run_flows(
        SHIPPED_FLOWS,
        tmp_path / "b",
        ("signal",),
        scenario={"normalize_request": {"text": "a different reply"}},
    )
    tree_a = normalised_tree(first.path, first.run_id)
    tree_b = normalised_tree(second.path, second.run_id)
    changed = sorted(name for name in tree_a if tree_a[name] != tree_b.get(name))
    assert "signal/receipts/normalize_request-signal-normalizer.json" in changed
    assert "signal/llm/normalize_request-signal-normalizer-claude.jsonl" in changed
