"""Golden runs: a run normalised for comparison, and the diff of two of them (docs/goldens.md).

A normalised run has the docs/contract/run-dir.md layout, with every value that changes from one run
to the next replaced by a stable placeholder at any depth: run ids, timestamps, durations,
absolute paths, and cost and timing (which live calls make volatile). Everything else is
kept exactly; JSON documents are written with sorted keys and one trailing newline.

:func:`diff_runs` compares two run or golden directories file by file and step by step,
and :func:`markdown_report` renders that for a pull-request comment.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.record import Record

PLACEHOLDERS = {
    "run_id": "<RUN_ID>",
    "timestamp": "<TIMESTAMP>",
    "duration": "<DURATION_MS>",
    "path": "<PATH>",
    "cost": "<COST>",
    "timing": "<TIMING>",
    "initiator": "<INITIATOR>",
}
RUN_ID_RE = re.compile(r"run-[0-9]{8}-[0-9]{6}-[a-z0-9]{6}")
TIMESTAMP_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z")
DURATION_KEYS = frozenset({"duration_ms", "durationMs", "llmWaitMs", "toolCallMs", "ioMs"})
COST_KEYS = frozenset({"cost", "cost_usd", "estimatedCostUsd", "total_cost_usd"})
TIMING_KEYS = frozenset({"timing"})
PATH_KEYS = frozenset({"flows_dir", "scenario_file", "config", "cassette_dir"})
"""Local paths in ``spec.json``'s ``origin``: where the run was made, not what it did."""
RESUME_STATE = frozenset({"checkpoint.json", "history.jsonl", "control.json"})
"""What only a resume reads: left out of goldens, like the lock."""
INITIATOR_KEYS = frozenset({"initiator"})
"""Who started the run (``cli``, ``pytest``, ``api``): the same run whoever started it."""


def normalise_value(value: Any, *, roots: Iterable[str] = (), volatile: Iterable[str] = ()) -> Any:
    """``value`` with volatile fields replaced, at every depth.

    ``roots`` are absolute directory paths to replace by ``<PATH>``; ``volatile`` are extra
    key names (from the ``pytest_swarm_normalize`` hook) whose values become ``<VOLATILE>``.
    """
    root_list = sorted((r for r in roots if r), key=len, reverse=True)
    extra = frozenset(volatile)

    def walk(item: Any, key: str | None) -> Any:
        if key is not None:
            if key in DURATION_KEYS and isinstance(item, int | float):
                return PLACEHOLDERS["duration"]
            if key in COST_KEYS and item is not None:
                return PLACEHOLDERS["cost"]
            if key in TIMING_KEYS and item is not None:
                return PLACEHOLDERS["timing"]
            if key in INITIATOR_KEYS and isinstance(item, str):
                return PLACEHOLDERS["initiator"]
            if key in PATH_KEYS and isinstance(item, str):
                return PLACEHOLDERS["path"]
            if key in extra:
                return "<VOLATILE>"
        if isinstance(item, dict):
            return {str(k): walk(v, str(k)) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v, None) for v in item]
        if isinstance(item, str):
            return _normalise_text(item, root_list)
        return item

    return walk(value, None)


def _normalise_text(text: str, roots: list[str]) -> str:
    for root in roots:
        if root in text:
            text = text.replace(root, PLACEHOLDERS["path"])
    text = RUN_ID_RE.sub(PLACEHOLDERS["run_id"], text)
    return TIMESTAMP_RE.sub(PLACEHOLDERS["timestamp"], text)


def _render(relative: str, raw: str, roots: list[str], volatile: Iterable[str]) -> str:
    if relative.endswith(".jsonl"):
        lines = []
        for line in raw.splitlines():
            if not line.strip():
                continue
            value = normalise_value(json.loads(line), roots=roots, volatile=volatile)
            lines.append(json.dumps(value, sort_keys=True, ensure_ascii=False))
        return "\n".join(lines) + "\n"
    if relative.endswith(".json"):
        value = normalise_value(json.loads(raw), roots=roots, volatile=volatile)
        return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    return _normalise_text(raw, roots)


def golden_files(
    run_dir: Path, *, roots: Iterable[str] = (), volatile: Iterable[str] = ()
) -> dict[str, str]:
    """Every file of a run, by path relative to the run, as its normalised golden text.

    A directory that is already a golden (normalised) run gives the same texts back.
    Lock and temporary files, the resume state (checkpoint, history journal, control
    requests) and files of interrupted executions are left out.
    """
    base = Path(run_dir)
    root_list = sorted(
        {str(base.resolve()), str(base.resolve().parent), *roots}, key=len, reverse=True
    )
    files: dict[str, str] = {}
    # A run never writes a symlink: one planted in a run dir is not followed out of it.
    for path in sorted(p for p in base.rglob("*") if p.is_file() and not p.is_symlink()):
        relative = path.relative_to(base).as_posix()
        if (
            path.suffix == ".tmp"
            or path.name.endswith(".lock")
            or relative in RESUME_STATE
            or "/interrupted/" in relative
        ):
            continue
        try:
            files[relative] = _render(relative, read_run_text(path), root_list, volatile)
        except (OSError, ValueError, RecursionError) as exc:
            reason = (
                exc.strerror
                if isinstance(exc, OSError)
                else "nested too deeply"
                if isinstance(exc, RecursionError)
                else str(exc)
            )
            raise ValueError(f"{path}: {reason}") from None
    return files


class FileChange(Record):
    """One file that differs between two runs, with the steps it concerns."""

    path: str
    change: str
    """added | removed | modified."""
    steps: tuple[str, ...]
    """``flow/step`` of every step the change touches (``-`` for run-level files)."""
    diff: tuple[str, ...]


def _step_of_path(relative: str) -> str | None:
    # <flow>/receipts/<step>-<agent>.json, <flow>/llm/<step>-<agent>-<engine>.jsonl:
    # a step id has no '-', so it is the name up to the first one.
    parts = relative.split("/")
    if len(parts) == 3 and parts[1] in ("receipts", "llm"):
        return f"{parts[0]}/{parts[2].split('-', 1)[0]}"
    return None


def readable_lines(relative: str, text: str) -> list[str]:
    """The lines to diff: JSON-lines files with their long string fields opened up.

    A one-line change in a prompt then shows as that line, not as a whole JSON line.
    """
    if not relative.endswith(".jsonl"):
        return text.splitlines()
    out: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        if not isinstance(value, dict):
            out.append(line)
            continue
        head = {k: v for k, v in value.items() if not (isinstance(v, str) and "\n" in v)}
        out.append(f"#{number} " + json.dumps(head, sort_keys=True, ensure_ascii=False))
        for key, field in sorted(value.items()):
            if isinstance(field, str) and "\n" in field:
                out.extend(f"#{number}.{key}| {sub}" for sub in field.split("\n"))
    return out


def _steps_touched(relative: str, old: str, new: str) -> tuple[str, ...]:
    step = _step_of_path(relative)
    if step is not None:
        return (step,)
    if relative == "events.jsonl":
        touched: list[str] = []
        old_lines, new_lines = old.splitlines(), new.splitlines()
        matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            for line in old_lines[a1:a2] + new_lines[b1:b2]:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(event, dict) and event.get("step_id"):
                    name = f"{event.get('flow_key')}/{event.get('step_id')}"
                    if name not in touched:
                        touched.append(name)
        return tuple(touched) or ("-",)
    return ("-",)


def diff_runs(
    old: Mapping[str, str], new: Mapping[str, str], *, context: int = 2
) -> list[FileChange]:
    """File-by-file changes from ``old`` to ``new`` (as from :func:`golden_files`)."""
    changes: list[FileChange] = []
    for relative in sorted(set(old) | set(new)):
        before, after = old.get(relative), new.get(relative)
        if before == after:
            continue
        change = "added" if before is None else "removed" if after is None else "modified"
        diff = tuple(
            difflib.unified_diff(
                readable_lines(relative, before or ""),
                readable_lines(relative, after or ""),
                fromfile=f"a/{relative}",
                tofile=f"b/{relative}",
                n=context,
                lineterm="",
            )
        )
        changes.append(
            FileChange(relative, change, _steps_touched(relative, before or "", after or ""), diff)
        )
    return changes


def markdown_report(changes: list[FileChange], *, old_label: str, new_label: str) -> str:
    """A summary table of changed steps, then a diff per file, for a pull-request comment."""
    if not changes:
        return f"### Golden diff\n\nNo differences between `{old_label}` and `{new_label}`.\n"
    by_step: dict[str, list[FileChange]] = {}
    for change in changes:
        for step in change.steps:
            by_step.setdefault(step, []).append(change)
    lines = [
        "### Golden diff",
        "",
        f"`{old_label}` → `{new_label}`: {len(changes)} file(s) changed, "
        f"{len([s for s in by_step if s != '-'])} step(s) affected.",
        "",
        "| flow | step | files |",
        "|---|---|---|",
    ]
    for step, items in sorted(by_step.items()):
        flow, _, step_id = step.partition("/")
        files = ", ".join(f"`{c.path}` ({c.change})" for c in items)
        lines.append(f"| {flow if step != '-' else '(run)'} | {step_id or '-'} | {files} |")
    for change in changes:
        lines += [
            "",
            f"<details><summary><code>{change.path}</code> ({change.change}; "
            f"{', '.join(change.steps)})</summary>",
            "",
            "```diff",
            *change.diff,
            "```",
            "",
            "</details>",
        ]
    return "\n".join(lines) + "\n"
