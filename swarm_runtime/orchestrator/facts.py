"""Facts (SPEC §4.7): requirements, solutions, traces, assumptions and decisions.

A reply declares a fact in its handoff (``facts: [{id: REQ-001, text: …}]``) or as a
marker line (``[REQ-001] text``); ids are ``REQ|SOL|TRC|ASM|DEC`` + ``-`` + digits. Each is
appended to ``facts.jsonl`` (``{id, kind, text, flow, step, iteration, seq}``), attributed to
the step whose reply held it; a later fact with the same id supersedes. The checkpoint
counts the journal's lines, so a resume cuts what a killed step had appended and reads the
rest back. Later prompts carry the current facts (:meth:`Facts.prompt_section`), and
conditions see them (:meth:`Facts.cel`).

Neither costs a step more as the facts pile up: the prompt's section is made from its
newest facts back until the budget is spent, and conditions see a list kept in CEL's
types that each fact is converted into once, when a condition first reads the facts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from swarm_runtime.documents.payload import Payload
from swarm_runtime.documents.route_events import (
    AssumptionRecorded,
    DecisionRecorded,
    FactsUpdated,
)
from swarm_runtime.orchestrator.bounded import cut

FACT_ID_RE = re.compile(r"(REQ|SOL|TRC|ASM|DEC)-[0-9]{1,9}")
MARKER_RE = re.compile(r"^\[((?:REQ|SOL|TRC|ASM|DEC)-[0-9]{1,9})\][ \t]+(\S[^\n]*)$", re.MULTILINE)
MAX_FACT_CHARS = 2_000
"""A fact's text is cut to this many characters (a marker says how many more it had)."""


def declared(text: str, handoff: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The facts a reply declares, in order: its marker lines, then its handoff's ``facts``."""
    found = [(m.group(1), m.group(2).strip()) for m in MARKER_RE.finditer(text)]
    listed = (handoff or {}).get("facts")
    for item in listed if isinstance(listed, list) else ():
        if not isinstance(item, Mapping):
            continue
        fact_id, fact_text = item.get("id"), item.get("text")
        good_id = isinstance(fact_id, str) and FACT_ID_RE.fullmatch(fact_id)
        if good_id and isinstance(fact_text, str) and fact_text.strip():
            found.append((str(fact_id), fact_text.strip()))
    return [(fact_id, cut(fact_text, MAX_FACT_CHARS)) for fact_id, fact_text in found]


class Facts:
    """The facts of a run: the journal's entries, and the current one of each id."""

    __slots__ = ("_cel", "_cel_at", "_changed", "current", "entries")

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        """Every ``facts.jsonl`` line so far, in order."""
        self.current: dict[str, dict[str, Any]] = {}
        """The latest entry of each id, in the order ids first appeared."""
        self._cel: Any = None
        """:attr:`current` in CEL's types, brought up to date when a condition reads it."""
        self._cel_at: dict[str, int] = {}
        """Where each id is in :attr:`_cel`."""
        self._changed: list[str] = []
        """Ids kept since :attr:`_cel` was last brought up to date."""

    def restore(self, entries: list[dict[str, Any]]) -> None:
        """Take the journal's first entries back (a resume)."""
        for entry in entries:
            self._keep(entry)

    def _keep(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)
        self.current[str(entry["id"])] = entry
        self._changed.append(str(entry["id"]))

    def add(
        self, found: list[tuple[str, str]], flow: str, step: str, iteration: int
    ) -> tuple[list[dict[str, Any]], list[Payload]]:
        """Record a step's facts: the new journal entries, and the events that say so."""
        added: list[str] = []
        updated: list[str] = []
        new: list[dict[str, Any]] = []
        events: list[Payload] = []
        for fact_id, text in found:
            (updated if fact_id in self.current else added).append(fact_id)
            entry = {
                "id": fact_id,
                "kind": fact_id.split("-", 1)[0],
                "text": text,
                "flow": flow,
                "step": step,
                "iteration": iteration,
                "seq": len(self.entries) + 1,
            }
            self._keep(entry)
            new.append(entry)
            if entry["kind"] == "ASM":
                events.append(AssumptionRecorded(id=fact_id, text=text))
            elif entry["kind"] == "DEC":
                events.append(DecisionRecorded(id=fact_id, text=text))
        if not new:
            return [], []
        return new, [FactsUpdated.counted(added, updated, len(self.current)), *events]

    def values(
        self, found: Sequence[tuple[str, str]] = (), flow: str = "", step: str = ""
    ) -> list[dict[str, Any]]:
        """The current facts as conditions see them, with a step's ``found`` ones on top.

        A step's routing sees what its own reply declared.
        """
        current = dict(self.current)
        for fact_id, text in found:
            current[fact_id] = _seen(fact_id, text, flow, step)
        return list(current.values())

    def cel(self, found: Sequence[tuple[str, str]] = (), flow: str = "", step: str = "") -> Any:
        """:meth:`values` in CEL's types, converting only the facts kept since last asked.

        With nothing ``found``, the list kept is given as it is; else a copy of it (of its
        references: nothing is converted again) with the step's own facts on top.
        """
        from swarm_runtime.flow.conditions import Converted, to_cel

        if self._cel is None:
            self._cel = to_cel([])
        for fact_id in dict.fromkeys(self._changed):
            _put(self._cel, self._cel_at, fact_id, to_cel(self.current[fact_id]))
        self._changed.clear()
        if not found:
            return Converted(self._cel)
        view = to_cel([])
        view.extend(self._cel)
        added: dict[str, int] = {}  # the step's new ids: where they are in the view
        for fact_id, text in found:
            value = to_cel(_seen(fact_id, text, flow, step))
            where = self._cel_at.get(fact_id, added.get(fact_id))
            if where is None:
                added[fact_id] = len(view)
                view.append(value)
            else:
                view[where] = value
        return Converted(view)

    def prompt_section(self, max_chars: int) -> str:
        """The current facts for a prompt, at most ``max_chars`` (the newest kept whole)."""
        if not self.current:
            return ""
        kept: list[str] = []
        used = 0
        for entry in reversed(self.current.values()):  # the newest back: never all of them
            line = f"[{entry['id']}] {entry['text']}"
            if used + len(line) + 1 > max_chars:
                break
            kept.append(line)
            used += len(line) + 1
        kept.reverse()
        dropped = len(self.current) - len(kept)
        head = f"[{dropped} older fact(s) not shown]\n" if dropped else ""
        return head + "\n".join(kept)


def _seen(fact_id: str, text: str, flow: str, step: str) -> dict[str, Any]:
    """A fact of the step being routed, as its conditions see it (not yet in the journal)."""
    kind = fact_id.split("-", 1)[0]
    return {"id": fact_id, "kind": kind, "text": text, "flow": flow, "step": step}


def _put(facts: list[Any], at: dict[str, int], fact_id: str, value: Any) -> None:
    """Put a fact in a list of facts: where its id is (it supersedes), else at the end."""
    where = at.get(fact_id)
    if where is None:
        at[fact_id] = len(facts)
        facts.append(value)
    else:
        facts[where] = value
