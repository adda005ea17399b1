"""History in prompts (docs/flows.md#history, docs/flows.md#truncation): newest first, within
budgets, cuts visible."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.engines.base import HistoryItem, truncate_output
from swarm_runtime.orchestrator.context import History, HistoryBudget
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
        [50, 80, 90, 30],  # everything fits
        [50, 80, 90, 250],  # the newest is too long for an older slot but fits as newest
        [50, 120, 90, 30],  # an older item is cut
    ],
)
def test_rendering_agrees_with_the_reference(sizes: list[int]) -> None:
    budget = HistoryBudget(total_chars=10_000, recent_chars=300, older_chars=100)
    rendered = _history(budget, sizes).render()
    text, (kept, dropped, chars) = _reference([_item(n, s) for n, s in enumerate(sizes)], budget)
    assert rendered.text == text
    assert rendered.items == kept
    assert rendered.truncation == (
        {"items_dropped": dropped, "chars_dropped": chars} if dropped or chars else {}
    )


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


def _reference(items: list[HistoryItem], budget: HistoryBudget) -> tuple[str, tuple[Any, ...]]:
    """The history as first specified: walk every item, newest first, within the budgets."""
    parts: list[str] = []
    kept: list[HistoryItem] = []
    used = items_dropped = chars_dropped = dropped_whole = 0
    for position, item in enumerate(reversed(items)):
        limit = budget.recent_chars if position == 0 else budget.older_chars
        room = min(limit, budget.total_chars - used)
        if room <= 0:
            items_dropped += 1
            dropped_whole += len(item.output)
            continue
        text, took, cut = item.render(room)
        used += took
        chars_dropped += cut
        parts.append(text)
        kept.append(item)
    if items_dropped:
        parts.append(
            f"[CONTEXT_TRUNCATED: {items_dropped} older step output(s) dropped, "
            f"{dropped_whole} chars]"
        )
    chars_dropped += dropped_whole
    return "\n\n".join(parts), (tuple(kept), items_dropped, chars_dropped)


def test_rendering_matches_the_reference_on_many_histories() -> None:
    rng = random.Random(20261123)
    for case in range(400):
        budget = HistoryBudget(
            total_chars=rng.choice([0, 1, 50, 120, 400, 5000]),
            recent_chars=rng.choice([0, 1, 30, 80, 300]),
            older_chars=rng.choice([0, 1, 10, 40, 200]),
        )
        history = History(budget)
        items: list[HistoryItem] = []
        for n in range(rng.randint(1, 30)):
            size = rng.choice([0, 0, 1, 5, 9, 10, 11, 39, 40, 41, 79, 80, 81, 250, 700])
            item = HistoryItem("f", f"s{n}", "a", 0, 'x"\n' * (size // 3) + "x" * (size % 3))
            items.append(item)
            history.add(item)
            rendered = history.render()
            text, (kept, dropped, chars) = _reference(items, budget)
            where = f"case {case}, {len(items)} items, {budget}"
            assert rendered.text == text, where
            assert rendered.items == kept, where
            assert rendered.truncation == (
                {"items_dropped": dropped, "chars_dropped": chars} if dropped or chars else {}
            ), where


class _CountingList(list[HistoryItem]):
    """A list that counts how many of its items are read, however they are read."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        value = super().__getitem__(index)
        _CountingList.reads += len(value) if isinstance(index, slice) else 1
        return value

    def __iter__(self) -> Iterator[HistoryItem]:
        for item in super().__iter__():
            _CountingList.reads += 1
            yield item

    def __reversed__(self) -> Iterator[HistoryItem]:
        for item in super().__reversed__():
            _CountingList.reads += 1
            yield item


def test_once_the_budget_is_full_a_step_reads_the_same_few_items() -> None:
    budget = HistoryBudget(total_chars=2_000, recent_chars=600, older_chars=100)
    reads = {}
    for length in (200, 4_000):
        history = History(budget)
        for n in range(length):
            history.add(HistoryItem("f", f"s{n}", "a", 0, f"output {n} " + "y" * 150))
        history.items = _CountingList(history.items)
        _CountingList.reads = 0
        rendered = history.render()
        reads[length] = _CountingList.reads
        assert rendered.truncation["items_dropped"] == length - len(rendered.items)
    # Twenty older items of 100 chars fill 2 000 chars: what is read does not grow with
    # the run, and everything older is counted without being read.
    assert reads[200] == reads[4_000] <= 2 * (2_000 // 100 + 2)


def test_items_no_prompt_can_reach_are_let_go_and_still_counted() -> None:
    budget = HistoryBudget(total_chars=2_000, recent_chars=600, older_chars=100)
    held = {}
    for length in (200, 4_000):
        history = _history(budget, [150] * length)
        held[length] = len(history.items)
        assert len(history) == length
        rendered = history.render()
        assert rendered.truncation["items_dropped"] == length - len(rendered.items)
        # The prompt shows exactly total_chars of outputs; every other char is counted.
        assert rendered.truncation["chars_dropped"] == 150 * length - 2_000
    # A long run holds no more than the budget can show: twenty 100-char older items,
    # the newest, and the one that is not let go yet.
    assert held[200] == held[4_000] <= 2_000 // 100 + 2
