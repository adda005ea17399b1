"""Checking a run directory against the contracts (``swarm runs validate``).

Works on any directory in the docs/contract/run-dir.md layout, also one written by another tool.
Every finding names the file and line. Checks: spec.json and meta.json; every receipt (also earlier
executions, ``~n``) and transcript; every event line, its ``seq``, and the sequencing
invariants of docs/contract/events.md#where-events-may-stand; the tool calls of the events against
the transcripts and the tools each step allows (:mod:`~swarm_runtime.contracts.tools`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swarm_runtime.contracts.agreement import (
    check_meta_agrees,
    check_receipts_present,
    check_stray_files,
)
from swarm_runtime.contracts.sequence import check_event_sequence
from swarm_runtime.contracts.tools import check_tool_calls
from swarm_runtime.contracts.transcript import explain, parse_transcript_line
from swarm_runtime.contracts.violation import Violation
from swarm_runtime.documents.base import Invalid, Location, dotted, read
from swarm_runtime.documents.events import read_event
from swarm_runtime.documents.receipt import Receipt
from swarm_runtime.documents.run import RunSpecDocument, RunSummary
from swarm_runtime.errors import StorageError
from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json


def _key_line(text: str, path: Location) -> int | None:
    """The line of a (nested) key in pretty-printed JSON text, best effort."""
    lines = text.split("\n")
    start = 0
    found: int | None = None
    for part in path:
        if isinstance(part, int):
            continue
        pattern = re.compile(r'^\s*"' + re.escape(part) + r'"\s*:')
        for number in range(start, len(lines)):
            if pattern.match(lines[number]):
                found = number + 1
                start = number + 1
                break
        else:
            return found
    return found


def _messages(exc: Invalid, kind: object = None) -> list[tuple[Location, str]]:
    """Each problem of a document as ``field.path: what is wrong``, with its place.

    An event's payload problems name its kind: ``step_end.payload.duration_ms``.
    """
    found = []
    for where, what in exc.problems:
        field = dotted(where) or "(document)"
        if isinstance(kind, str) and where[:1] == ("payload",):
            field = f"{kind}.{field}"
        found.append((where, f"{field}: {what}"))
    return found


def _check_document(
    path: Path, root: Path, kind: type
) -> tuple[list[Violation], dict[str, Any] | None]:
    rel = str(path.relative_to(root))
    try:
        text = read_run_text(path)
        value = load_json(text)
    except FileNotFoundError:
        return [Violation(rel, None, "missing")], None
    except json.JSONDecodeError as exc:
        return [Violation(rel, exc.lineno, f"not valid JSON: {exc.msg}")], None
    except (OSError, ValueError) as exc:
        line = getattr(exc, "line", None)  # an InputRefused may name its line
        return [Violation(rel, line, f"unreadable: {_reason(exc)}")], None
    try:
        read(value, kind)
    except Invalid as exc:
        return [
            Violation(rel, _key_line(text, loc) or 1, message) for loc, message in _messages(exc)
        ], value if isinstance(value, dict) else None
    return [], value


def check_receipt_file(path: Path, root: Path) -> list[Violation]:
    """Violations in one file of the run at ``root`` (paths in findings are relative)."""
    return _receipt_file(path, root)[0]


def _receipt_file(path: Path, root: Path) -> tuple[list[Violation], dict[str, Any] | None]:
    found, value = _check_document(path, root, Receipt)
    if value is None:
        return found, None
    rel = str(path.relative_to(root))
    stem = path.name.removesuffix(".json").split("~")[0]
    step_id, agent = value.get("step_id"), value.get("agent_key")
    if isinstance(step_id, str) and isinstance(agent, str) and stem != f"{step_id}-{agent}":
        found.append(
            Violation(rel, 1, f"file name does not match step_id-agent_key ({step_id}-{agent})")
        )
    flow_dir = path.parent.parent
    transcript = value.get("transcript_path")
    if isinstance(transcript, str) and "~" not in path.name:
        target = (flow_dir / transcript).resolve()
        if flow_dir.resolve() not in target.parents:
            found.append(Violation(rel, 1, f"transcript_path {transcript!r} leaves the flow dir"))
        elif not target.is_file():
            found.append(Violation(rel, 1, f"transcript_path {transcript!r} names no file"))
        elif value.get("status") == "succeeded" and not _has_assistant_line(target):
            found.append(
                Violation(
                    rel, 1, f"succeeded, but its transcript {transcript!r} has no assistant line"
                )
            )
    return found, value


def _has_assistant_line(path: Path) -> bool:
    try:
        for text in read_run_text(path).splitlines():
            try:
                line = load_json(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("role") == "assistant":
                return True
    except (OSError, ValueError):
        return True  # reported by the transcript check itself
    return False


def check_transcript_file(path: Path, root: Path) -> list[Violation]:
    """Violations in one file of the run at ``root`` (paths in findings are relative)."""
    rel = str(path.relative_to(root))
    found: list[Violation] = []
    try:
        lines = read_run_text(path).split("\n")
    except (OSError, ValueError) as exc:
        return [Violation(rel, None, f"unreadable: {_reason(exc)}")]
    if lines and lines[-1] == "":
        lines.pop()
    roles: set[str] = set()
    for number, text in enumerate(lines, start=1):
        try:
            value = load_json(text)
            parsed = parse_transcript_line(value)
        except json.JSONDecodeError as exc:
            found.append(Violation(rel, number, f"not valid JSON: {exc.msg}"))
            continue
        except ValidationError as exc:
            found.extend(Violation(rel, number, msg) for msg in explain(exc, value))
            continue
        except ValueError as exc:
            found.append(Violation(rel, number, str(exc)))
            continue
        role = getattr(parsed, "role", None)
        if role:
            roles.add(role)
    for role in ("system", "user"):
        if role not in roles:
            found.append(Violation(rel, None, f"no '{role}' line"))
    return found


def check_events_file(path: Path, root: Path, *, crashed: bool = False) -> list[Violation]:
    """Violations in one file of the run at ``root`` (paths in findings are relative)."""
    return _events_file(path, root, crashed=crashed)[0]


def _events_file(
    path: Path, root: Path, *, crashed: bool
) -> tuple[list[Violation], list[tuple[int, dict[str, Any]]]]:
    """The findings in an event log, and its events that parsed (with their lines)."""
    rel = str(path.relative_to(root))
    try:
        raw = read_run_text(path)
    except FileNotFoundError:
        return [Violation(rel, None, "missing")], []
    except (OSError, ValueError) as exc:
        return [Violation(rel, None, f"unreadable: {_reason(exc)}")], []
    found: list[Violation] = []
    parsed: list[tuple[int, dict[str, Any]]] = []
    lines = raw.split("\n")
    tail = lines.pop()  # '' after a final newline, else a last line without one
    for number, text in enumerate(lines, start=1):
        try:
            event = load_json(text)
        except json.JSONDecodeError as exc:
            found.append(Violation(rel, number, f"not valid JSON ({exc.msg})"))
            continue
        except ValueError as exc:
            found.append(Violation(rel, number, str(exc)))
            continue
        if not isinstance(event, dict):
            found.append(Violation(rel, number, "an event must be a JSON object"))
            continue
        try:
            read_event(event)
        except Invalid as exc:
            messages = _messages(exc, event.get("kind"))
            found.extend(Violation(rel, number, msg) for _, msg in messages)
        parsed.append((number, event))
    if tail:
        try:
            event = load_json(tail)
        except ValueError:
            found.append(
                Violation(rel, len(lines) + 1, "torn last line (the writer was interrupted)")
            )
        else:
            found.append(Violation(rel, len(lines) + 1, "the last line has no newline"))
            if isinstance(event, dict):
                parsed.append((len(lines) + 1, event))
    found.extend(check_event_sequence(parsed, rel, crashed=crashed))
    return found, parsed


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def _walk(root: Path, pattern: str) -> Iterable[Path]:
    # Nothing is read through a symlink (check_stray_files reports them).
    real = os.path.realpath(root)
    return sorted(
        path
        for path in root.glob(pattern)
        if os.path.realpath(path) == os.path.join(real, os.path.relpath(path, root))
    )


def run_is_crashed(root: Path) -> bool:
    """Whether the run at ``root`` was killed and can be resumed (``swarm resume``)."""
    from swarm_runtime.storage.status import observed_status

    return observed_status(root) == "crashed"


def validate_run_dir(root: Path | str) -> list[Violation]:
    """Every contract violation in the run directory ``root``, sorted by file and line."""
    root = Path(root)
    if not root.is_dir():
        raise StorageError(f"{root} is not a directory")
    from swarm_runtime.storage.lock import read_holder

    found: list[Violation] = []
    found.extend(_check_document(root / "spec.json", root, RunSpecDocument)[0])
    meta_found, meta = _check_document(root / "meta.json", root, RunSummary)
    found.extend(meta_found)
    events_found, events = _events_file(root / "events.jsonl", root, crashed=run_is_crashed(root))
    found.extend(events_found)
    found.extend(check_meta_agrees(meta, events, root.name))
    holder = read_holder(root)
    found.extend(check_stray_files(root, live=holder is not None and holder.alive))
    receipts: list[tuple[Path, dict[str, Any]]] = []
    for path in _walk(root, "*/receipts/*.json"):
        receipt_found, receipt = _receipt_file(path, root)
        found.extend(receipt_found)
        receipts.extend([(path, receipt)] if receipt is not None else [])
    found.extend(check_receipts_present(events, [receipt for _, receipt in receipts]))
    found.extend(check_tool_calls(root, events, receipts))
    for path in _walk(root, "*/llm/*.jsonl"):
        found.extend(check_transcript_file(path, root))
    return sorted(found, key=lambda v: (v.file, v.line or 0, v.message))
