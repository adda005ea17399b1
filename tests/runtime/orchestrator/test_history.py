"""History in prompts (SPEC §6.2–§6.3): newest first, within budgets, cuts visible."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarm_runtime.engines.base import HistoryItem, truncate_output
from swarm_runtime.orchestrator.history import History, HistoryBudget
from tests.runtime.helpers import receipt, run_flows, step_yaml, write_flow


def _item(n: int, size: int) -> HistoryItem:
    return HistoryItem("f", f"s{n}", "a", 0, str(n % 10) * size)


def _history(budget: HistoryBudget, sizes: list[int]) -> History:
    history = History(budget)
    for n, size in enumerate(sizes):
        history.add(_item(n, size))
    return history


def test_everything_fits_newest_first() -> None:
    rendered = _history(HistoryBudget(), [5, 6, 7]).render()
    assert (
        rendered.text.index("### f/s2")
        < rendered.text.index("### f/s1")
        < rendered.text.index("### f/s0")
    )
    assert "[CONTEXT_TRUNCATED" not in rendered.text
    assert rendered.truncation == {}
    assert [i.step_id for i in rendered.items] == ["s2", "s1", "s0"]


def test_recent_and_older_budgets_cut_with_a_visible_marker() -> None:
    budget = HistoryBudget(total_chars=1000, recent_chars=50, older_chars=20)
    rendered = _history(budget, [30, 30, 80]).render()
    assert "2" * 50 + "\n[CONTEXT_TRUNCATED: 30 of 80 chars of this output cut]" in rendered.text
    assert "1" * 20 + "\n[CONTEXT_TRUNCATED: 10 of 30 chars" in rendered.text
    assert rendered.truncation == {"items_dropped": 0, "chars_dropped": 30 + 10 + 10}


def test_total_budget_drops_oldest_items_and_says_so() -> None:
    budget = HistoryBudget(total_chars=100, recent_chars=60, older_chars=40)
    rendered = _history(budget, [40, 40, 40, 60]).render()
    # newest 60, then 40 fits exactly, the rest is dropped
    assert [i.step_id for i in rendered.items] == ["s3", "s2"]
    assert rendered.text.endswith("[CONTEXT_TRUNCATED: 2 older step output(s) dropped, 80 chars]")
    assert rendered.truncation == {"items_dropped": 2, "chars_dropped": 80}


@pytest.mark.parametrize(
    "sizes",
    [
        [50, 80, 90, 30],  # everything fits: the fast path
        [50, 80, 90, 250],  # the newest is too long for an older slot but fits as newest
        [50, 120, 90, 30],  # an older item is cut: the slow path
    ],
)
def test_fast_and_slow_rendering_agree(sizes: list[int]) -> None:
    budget = HistoryBudget(total_chars=10_000, recent_chars=300, older_chars=100)
    history = _history(budget, sizes)
    fast = history.render()
    slow = history._render_slowly()
    assert fast.text == slow.text
    assert fast.truncation == slow.truncation
    assert fast.items == slow.items
    if max(sizes[:-1]) <= budget.older_chars:
        assert fast.json_text is not None  # the cached escapes were used
        assert json.dumps(fast.text, ensure_ascii=False)[1:-1] == fast.json_text


def test_truncation_reaches_the_receipt(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "long", [step_yaml("talk"), step_yaml("listen")])
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("long",),
        scenario={"talk": {"text": "word " * 20_000}},
        history_budget=HistoryBudget(recent_chars=1000),
    )
    listen = receipt(outcome, "long", "listen", "worker")
    # History carries the StepResult output, itself cut below 50 KB with a marker.
    output = truncate_output("word " * 20_000)
    assert output.endswith("[OUTPUT_TRUNCATED: full text in the transcript]")
    assert listen["context_truncation"] == {"items_dropped": 0, "chars_dropped": len(output) - 1000}
    assert "context_truncation" not in receipt(outcome, "long", "talk", "worker")
    lines = (outcome.path / "long/llm/listen-worker-claude.jsonl").read_text().splitlines()
    assert "[CONTEXT_TRUNCATED:" in json.loads(lines[1])["content"]
