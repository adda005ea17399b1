"""Facts (SPEC §4.7): requirements, solutions, traces, assumptions and decisions.

A reply declares a fact in its handoff (``facts: [{id: REQ-001, text: …}]``) or as a
marker line (``[REQ-001] text``); ids are ``REQ|SOL|TRC|ASM|DEC`` + ``-`` + digits. Each is
appended to ``facts.jsonl`` (``{id, kind, text, flow, step, iteration, seq}``), attributed to
the step whose reply held it; a later fact with the same id supersedes. The checkpoint
counts the journal's lines, so a resume cuts what a killed step had appended and reads the
rest back. Later prompts carry the current facts (:meth:`Facts.prompt_section`), and
conditions see them (:meth:`Facts.values`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from swarm_runtime.orchestrator import payloads

FACT_ID_RE = re.compile(r"(REQ|SOL|TRC|ASM|DEC)-[0-9]{1,9}")
MARKER_RE = re.compile(r"^\[((?:REQ|SOL|TRC|ASM|DEC)-[0-9]{1,9})\][ \t]+(\S[^\n]*)$", re.MULTILINE)
MAX_FACT_CHARS = 2_000
"""A fact's text is cut to this many characters."""


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
    return [(fact_id, fact_text[:MAX_FACT_CHARS]) for fact_id, fact_text in found]


class Facts:
    """The facts of a run: the journal's entries, and the current one of each id."""

    __slots__ = ("current", "entries")

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        """Every ``facts.jsonl`` line so far, in order."""
        self.current: dict[str, dict[str, Any]] = {}
        """The latest entry of each id, in the order ids first appeared."""

    def restore(self, entries: list[dict[str, Any]]) -> None:
        """Take the journal's first entries back (a resume)."""
        for entry in entries:
            self._keep(entry)

    def _keep(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)
        self.current[str(entry["id"])] = entry

    def add(
        self, found: list[tuple[str, str]], flow: str, step: str, iteration: int
    ) -> tuple[list[dict[str, Any]], list[tuple[str, Mapping[str, object]]]]:
        """Record a step's facts: the new journal entries, and the events that say so."""
        added: list[str] = []
        updated: list[str] = []
        new: list[dict[str, Any]] = []
        events: list[tuple[str, Mapping[str, object]]] = []
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
                events.append(("assumption_recorded", payloads.fact(fact_id, text)))
            elif entry["kind"] == "DEC":
                events.append(("decision_recorded", payloads.fact(fact_id, text)))
        if not new:
            return [], []
        update = payloads.facts_updated(added, updated, len(self.current))
        return new, [("facts_updated", update), *events]

    def values(
        self, found: Sequence[tuple[str, str]] = (), flow: str = "", step: str = ""
    ) -> list[dict[str, Any]]:
        """The current facts as conditions see them, with a step's ``found`` ones on top.

        A step's routing sees what its own reply declared.
        """
        current = dict(self.current)
        for fact_id, text in found:
            kind = fact_id.split("-", 1)[0]
            current[fact_id] = {
                "id": fact_id,
                "kind": kind,
                "text": text,
                "flow": flow,
                "step": step,
            }
        return list(current.values())

    def prompt_section(self, max_chars: int) -> str:
        """The current facts for a prompt, at most ``max_chars`` (the newest kept whole)."""
        if not self.current:
            return ""
        lines = [f"[{entry['id']}] {entry['text']}" for entry in self.current.values()]
        kept: list[str] = []
        used = 0
        for line in reversed(lines):
            if used + len(line) + 1 > max_chars:
                break
            kept.append(line)
            used += len(line) + 1
        kept.reverse()
        dropped = len(lines) - len(kept)
        head = f"[{dropped} older fact(s) not shown]\n" if dropped else ""
        return head + "\n".join(kept)
