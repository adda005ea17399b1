"""Context handoff between steps (SPEC §6.2–§6.3): earlier outputs within budgets.

Items are taken newest first. The most recent step may use ``recent_chars``, each older
one ``older_chars``, all together ``total_chars``. Whatever is cut is marked in the text
with ``[CONTEXT_TRUNCATED …]`` and counted, so the receipt can say what the step missed.

Rendering happens before every step, so each item's text is rendered once and kept; when
everything fits (the usual case) a prompt's history is one join. Otherwise rendering walks
only the newest items that fit and counts everything older from running totals, so a step
costs the same however long the run has been. An item that no future prompt can reach
(the items between it and the newest already fill ``total_chars`` on their own) is let
go, and only counted: a run's memory does not grow with its length.
"""

from __future__ import annotations

from swarm_runtime.engines.base import HistoryItem
from swarm_runtime.record import Record, field


class HistoryBudget(Record):
    """Character budgets for the history part of a prompt."""

    total_chars: int = 200_000
    recent_chars: int = 60_000
    older_chars: int = 10_000


class RenderedHistory(Record):
    """The history text for a prompt, and what was cut from it."""

    text: str
    items: tuple[HistoryItem, ...] = ()
    """The items that appear in the text, newest first."""
    items_dropped: int = 0
    chars_dropped: int = 0
    truncation: dict[str, int] = field(default_factory=dict)


class History:
    """The outputs of a run so far, oldest first, rendered for prompts within a budget."""

    def __init__(self, budget: HistoryBudget | None = None) -> None:
        self.budget = budget or HistoryBudget()
        self.items: list[HistoryItem] = []
        """The items a prompt may still show, oldest first (see :meth:`_let_go`)."""
        self.released = 0
        """How many older items were let go: no prompt can show them any more."""
        self._used: list[int] = []
        """The chars each item takes as an older item, ``min(output, older_chars)``."""
        self._older: list[str] = []
        """Each item rendered within ``older_chars``, oldest first."""
        self._older_chars = 0
        self._cut: list[bool] = []
        self._cut_count = 0
        """How many items do not fit within ``older_chars`` whole."""
        self._chars_before = [0]
        """``_chars_before[i]``: the output chars of the ``released + i`` oldest items,
        for counting what a full budget drops without walking it."""

    def __len__(self) -> int:
        """How many items the run has added, including those let go."""
        return self.released + len(self.items)

    def add(self, item: HistoryItem) -> None:
        """Append the output of a finished step execution."""
        text, used, cut = item.render(self.budget.older_chars)
        self.items.append(item)
        self._older.append(text)
        self._used.append(used)
        self._older_chars += used
        self._cut.append(cut > 0)
        self._cut_count += cut > 0
        self._chars_before.append(self._chars_before[-1] + len(item.output))
        self._let_go()

    def _let_go(self) -> None:
        """Drop the oldest items no prompt can reach any more.

        Rendering takes items newest first until ``total_chars`` is used, each older item
        taking ``min(output, older_chars)``. Once the items strictly between the oldest
        and the newest take ``total_chars`` on their own, the oldest is never shown again
        (later items only add to what is in front of it): it is dropped here, and counted
        in ``released`` and ``_chars_before[0]`` for the truncation marker.
        """
        total = self.budget.total_chars
        while len(self.items) > 2 and self._older_chars - self._used[0] - self._used[-1] >= total:
            self._older_chars -= self._used[0]
            self._cut_count -= self._cut[0]
            for kept in (self.items, self._older, self._used, self._cut):
                del kept[0]
            del self._chars_before[0]
            self.released += 1

    def render(self) -> RenderedHistory:
        """The history text for the next step's prompt.

        The newest item takes up to ``recent_chars``; then older items, newest first, each
        its text rendered by :meth:`add` while at least ``older_chars`` of ``total_chars``
        is left; the first item with less room left is cut to it, and everything older is
        dropped whole and counted from the running totals, never read.
        """
        budget = self.budget
        items = self.items
        if not items:
            return RenderedHistory(text="")
        total, older = budget.total_chars, budget.older_chars
        newest = items[-1]
        parts: list[str] = []
        kept: list[HistoryItem] = []
        room = min(budget.recent_chars, total)
        newest_dropped = room <= 0
        chars_dropped = used = 0
        if not newest_dropped:
            text, used, chars_dropped = self._newest(room)
            parts.append(text)
            kept.append(newest)
        end = len(items) - 1
        left, room = self._whole_from(total - used)
        if left < end:  # items[left:end] are shown whole, as add() rendered them
            parts.extend(reversed(self._older[left:end]))
            kept.extend(reversed(items[left:end]))
            shown = self._chars_before[end] - self._chars_before[left]
            chars_dropped += shown - (total - used - room)
        while left and older > 0 and room > 0:  # less than older_chars left: cut to it
            left -= 1
            text, took, cut = items[left].render(room)
            parts.append(text)
            kept.append(items[left])
            room -= took
            chars_dropped += cut
        items_dropped = self.released + left + newest_dropped
        dropped_whole = self._chars_before[left]
        if newest_dropped:
            dropped_whole += len(newest.output)
        if items_dropped:
            parts.append(
                f"[CONTEXT_TRUNCATED: {items_dropped} older step output(s) dropped, "
                f"{dropped_whole} chars]"
            )
        chars_dropped += dropped_whole
        return RenderedHistory(
            text="\n\n".join(parts),
            items=tuple(kept),
            items_dropped=items_dropped,
            chars_dropped=chars_dropped,
            truncation=(
                {"items_dropped": items_dropped, "chars_dropped": chars_dropped}
                if items_dropped or chars_dropped
                else {}
            ),
        )

    def _newest(self, room: int) -> tuple[str, int, int]:
        """The newest item within ``room``: (text, chars used, chars cut)."""
        newest = self.items[-1]
        if len(newest.output) <= room and not self._cut[-1]:
            return self._older[-1], len(newest.output), 0
        return newest.render(room)  # cut within its room, or cut as an older item only

    def _whole_from(self, room: int) -> tuple[int, int]:
        """Where the older items shown whole begin, and the room they leave.

        Walking newest first, an item is shown whole while ``older_chars`` of the ``room``
        is left; when even the oldest finds it left, all are, and nothing is walked.
        """
        older = self.budget.older_chars
        left = len(self.items) - 1
        whole = self._older_chars - self._used[-1]
        if left and older > 0 and room - whole + self._used[0] >= older:
            return 0, room - whole
        while left and older > 0 and room >= older:
            left -= 1
            room -= self._used[left]
        return left, room
