"""What a recorded CLI request is matched on, and how a CLI cassette is told apart.

A CLI's requests carry things that change from run to run: session ids, dates, the
context blocks it adds itself (``<system-reminder>``, ``<session_context>``, its billing
header), its tool definitions and settings, the paths of the checkout and the home dir,
and what tools printed (they run again, live, in a replay). :func:`request_key` leaves
those out; what remains is the step: the model, our system prompt and the conversation.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MARKER = "recorded_via: cli"
DROPPED_KEYS = frozenset(
    {
        "metadata",
        "tools",
        "tool_choice",
        "systemInstruction",
        "generationConfig",
        "thinking",
        "context_management",
        "output_config",
        "max_tokens",
        "cache_control",
    }
)
"""Body keys that carry the CLI's own settings, ids or tool definitions, not the step."""
DROPPED_BLOCKS = ("<system-reminder>", "<session_context>", "x-anthropic-billing-header")
"""Text blocks the CLI adds itself (dates, directory listings, its version)."""
_VOLATILE = (
    (
        re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
        "<uuid>",
    ),
    (re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?"), "<date>"),
    (re.compile(r"\btoolu_\w+"), "<tool-id>"),
    (re.compile(r"\d{10,}"), "<n>"),
)


def recorded_via(path: Path) -> str:
    """``cli`` for a cassette a CLI step recorded, else ``sdk``."""
    from swarm_runtime.inputs.files import read_prefix

    try:
        head = read_prefix(path, len(MARKER))  # never blocks: a FIFO is refused, not read
    except (OSError, ValueError):
        return "sdk"  # missing or not a regular file: the sdk replay names the problem
    return "cli" if head == MARKER.encode() else "sdk"


def _normalize(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("type") == "tool_result" or "functionResponse" in value:
            # Tools run again, live, in a replay: what they print may differ; it is not the step.
            return {
                k: "<tool output>" if k in ("content", "functionResponse") else _normalize(v)
                for k, v in value.items()
                if k not in DROPPED_KEYS
            }
        return {k: _normalize(v) for k, v in value.items() if k not in DROPPED_KEYS}
    if isinstance(value, list):
        return [
            _normalize(item)
            for item in value
            if not (
                isinstance(item, dict)
                and isinstance(item.get("text"), str)
                and item["text"].lstrip().startswith(DROPPED_BLOCKS)
            )
        ]
    if isinstance(value, str):
        for pattern, placeholder in _VOLATILE:
            value = pattern.sub(placeholder, value)
    return value


def placeholders(text: str, paths: Mapping[str, str]) -> str:
    """``text`` with each of ``paths`` (longest first) replaced by ``<name>``."""
    for name, path in sorted(paths.items(), key=lambda item: -len(item[1])):
        if path and len(path) > 1:
            text = text.replace(path, f"<{name}>")
    return text


def restore(text: str, paths: Mapping[str, str]) -> str:
    """``text`` with each ``<name>`` placeholder of ``paths`` replaced by its path again."""
    for name, path in paths.items():
        if path and len(path) > 1:
            text = text.replace(f"<{name}>", path)
    return text


def request_key(method: str, path: str, body: str) -> str:
    """What a request is matched on, as canonical JSON (paths already made placeholders)."""
    parts = urllib.parse.urlsplit(path)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "key"]
    try:
        content: Any = _normalize(json.loads(body)) if body else None
    except ValueError:
        content = body
    return json.dumps(
        {"method": method, "path": parts.path, "query": query, "body": content},
        sort_keys=True,
        indent=1,
        ensure_ascii=False,
    )
