"""Context handoff between steps (SPEC §6.2–§6.3): earlier outputs within budgets.

Items are taken newest first. The most recent step may use ``recent_chars``, each older
one ``older_chars``, all together ``total_chars``. Whatever is cut is marked in the text
with ``[CONTEXT_TRUNCATED …]`` and counted, so the receipt can say what the step missed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["HistoryBudget", "HistoryItem", "RenderedHistory", "render_history"]


@dataclass(frozen=True, slots=True)
class HistoryBudget:
    """Character budgets for the history part of a prompt."""

    total_chars: int = 200_000
    recent_chars: int = 60_000
    older_chars: int = 10_000


@dataclass(frozen=True, slots=True)
class HistoryItem:
    """The output of one earlier step execution."""

    flow_key: str
    step_id: str
    agent_key: str
    iteration: int
    output: str

    def as_dict(self) -> dict[str, Any]:
        """A plain mapping for StepContext.history."""
        return {
            "flow_key": self.flow_key,
            "step_id": self.step_id,
            "agent_key": self.agent_key,
            "iteration": self.iteration,
            "output": self.output,
        }


@dataclass(frozen=True, slots=True)
class RenderedHistory:
    """The history text for a prompt, and what was cut from it."""

    text: str
    items: tuple[HistoryItem, ...] = ()
    items_dropped: int = 0
    chars_dropped: int = 0
    truncation: dict[str, int] = field(default_factory=dict)


def render_history(items_oldest_first: list[HistoryItem], budget: HistoryBudget) -> RenderedHistory:
    """Render history newest first within ``budget``, marking every cut."""
    parts: list[str] = []
    used = 0
    items_dropped = 0
    chars_dropped = 0
    dropped_chars_whole = 0
    kept: list[HistoryItem] = []
    newest_first = list(reversed(items_oldest_first))
    for position, item in enumerate(newest_first):
        limit = budget.recent_chars if position == 0 else budget.older_chars
        room = min(limit, budget.total_chars - used)
        if room <= 0:
            items_dropped += 1
            dropped_chars_whole += len(item.output)
            continue
        text = item.output
        header = (
            f"### {item.flow_key}/{item.step_id} ({item.agent_key}, execution {item.iteration + 1})"
        )
        if len(text) > room:
            cut = len(text) - room
            chars_dropped += cut
            text = (
                text[:room]
                + f"\n[CONTEXT_TRUNCATED: {cut} of {len(item.output)} chars of this output cut]"
            )
        used += min(len(item.output), room)
        parts.append(f"{header}\n{text}")
        kept.append(item)
    if items_dropped:
        parts.append(
            f"[CONTEXT_TRUNCATED: {items_dropped} older step output(s) dropped, "
            f"{dropped_chars_whole} chars]"
        )
    chars_dropped += dropped_chars_whole
    truncation = (
        {"items_dropped": items_dropped, "chars_dropped": chars_dropped}
        if items_dropped or chars_dropped
        else {}
    )
    return RenderedHistory(
        text="\n\n".join(parts),
        items=tuple(kept),
        items_dropped=items_dropped,
        chars_dropped=chars_dropped,
        truncation=truncation,
    )
