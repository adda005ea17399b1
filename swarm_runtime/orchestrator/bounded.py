"""What a line of ``events.jsonl`` may hold: text from outside is cut, visibly.

A navigator's rationale, its choice, the edge it proposes, a fact's text, an engine's
error or a tool's input come from a model or an engine and may be any size. Each is cut
where it is made (:func:`cut`, with a marker that says how much went, as SPEC §6.3 marks a
prompt), and :func:`bounded_event` is the last guard of every event line: one longer than
:data:`MAX_EVENT_LINE` characters has its strings and lists cut, visibly, until it fits.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

import msgspec

from swarm_runtime.documents.payload import Event

MAX_EVENT_LINE = 32_768
"""The longest line of ``events.jsonl``, in characters."""
MAX_LOGGED_CHARS = 2_000
"""The most of one text from outside (a rationale, a fact) that an event keeps."""
_PASSES = ((4_000, 100, 12), (500, 20, 6), (80, 5, 3), (0, 0, 1))
"""What each pass of :func:`bounded_event` keeps: characters of a string, items of a list
(keys of a mapping: at least 16, so a payload's own keys all stay), levels of nesting."""
_KEYS = 16


def cut(text: str, limit: int = MAX_LOGGED_CHARS) -> str:
    """``text`` with at most ``limit`` of its characters, and a marker when more were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}[TRUNCATED: {len(text) - limit} of {len(text)} chars cut]"


def bounded_event(event: Event, line: str, encode: Callable[[Any], str]) -> str:
    """The line of ``event``, cut to fit :data:`MAX_EVENT_LINE` when ``line`` is longer.

    ``encode`` turns an event into its line. Strings are cut, then lists (a marker item
    says how many items went), harder on each pass; what the kernel writes itself (ids,
    kinds, numbers) is short and stays.
    """
    document: dict[str, Any] = msgspec.to_builtins(event)
    for chars, items, depth in _PASSES:
        if len(line) <= MAX_EVENT_LINE:
            break
        document = {**document, "payload": _cut_value(document["payload"], chars, items, depth)}
        line = encode(document)
    return line


def _cut_value(value: Any, chars: int, items: int, depth: int) -> Any:
    """``value`` with its strings, lists and mappings cut; ``depth``: levels left below it."""
    if isinstance(value, str):
        return cut(value, chars)
    if isinstance(value, dict | list | tuple) and depth <= 0:
        return f"[TRUNCATED: a {type(value).__name__} of {len(value)} items]"
    if isinstance(value, dict):
        keys = max(items, _KEYS)
        kept = {
            cut(str(key), max(chars, 80)): _cut_value(item, chars, items, depth - 1)
            for key, item in islice(value.items(), keys)
        }
        if len(value) > keys:
            kept["[TRUNCATED]"] = f"{len(value) - keys} of {len(value)} keys cut"
        return kept
    if isinstance(value, list | tuple):
        listed = [_cut_value(item, chars, items, depth - 1) for item in value[:items]]
        if len(value) > items:
            listed.append(f"[TRUNCATED: {len(value) - items} of {len(value)} items cut]")
        return listed
    return value
