"""What a run dir must agree with beyond each file's own contract (``swarm runs validate``).

``meta.json`` and the end of ``events.jsonl`` tell the same story (a run that ended on a
full disk may not have managed both: then this names which one is behind), no temporary
file of an interrupted write is left in a run that nobody runs, nothing in a run dir is a
symlink (files are never written or read through one), and every step execution that
ended with ``step_end`` left its receipt.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swarm_runtime.contracts.violation import Violation

TERMINAL = ("succeeded", "failed", "stopped")


def check_meta_agrees(
    meta: dict[str, Any] | None, events: Sequence[tuple[int, dict[str, Any]]], run_id: str
) -> list[Violation]:
    """``meta.json``'s status against the last event of the log."""
    if meta is None or not events:
        return []  # a missing or broken file is reported by its own check
    status = meta.get("status")
    line, last = events[-1]
    kind = last.get("kind")
    payload = last.get("payload") if isinstance(last.get("payload"), dict) else {}
    assert isinstance(payload, dict)
    if kind == "run_completed":
        ended = payload.get("status")
        if status == ended:
            return []
        hint = ""
        if status in ("pending", "running"):
            hint = (
                f"; meta.json was not rewritten when the run ended (a write error?) - "
                f"'swarm resume {run_id}' rewrites it"
            )
        return [
            Violation(
                "meta.json",
                None,
                f"says status {status}, but events.jsonl ends with run_completed "
                f"{{status: {ended}}} (line {line}){hint}",
            )
        ]
    if status in TERMINAL:
        error = meta.get("error")
        why = f"; meta.json's error: {error}" if error else ""
        return [
            Violation(
                "meta.json",
                None,
                f"says status {status}, but events.jsonl does not end with run_completed "
                f"(its last event is {kind}, line {line}){why}",
            )
        ]
    if status == "paused" and kind != "run_paused":
        return [
            Violation(
                "meta.json",
                None,
                f"says status paused, but events.jsonl ends with {kind} (line {line}), not "
                "run_paused",
            )
        ]
    return []


def check_stray_files(root: Path, *, live: bool) -> list[Violation]:
    """Symlinks anywhere in the run dir; temporary files when no process runs it."""
    found: list[Violation] = []
    for directory, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found.append(
                    Violation(
                        rel,
                        None,
                        f"is a symlink (to {os.readlink(path)}); run files are never symlinks, "
                        "and nothing is read or written through one",
                    )
                )
            elif name.endswith(".tmp") and not live:
                found.append(
                    Violation(
                        rel,
                        None,
                        "a temporary file left by an interrupted write; 'swarm resume' "
                        "removes it (or delete it)",
                    )
                )
    return found


def check_receipts_present(
    events: Sequence[tuple[int, dict[str, Any]]], receipts: Sequence[dict[str, Any]]
) -> list[Violation]:
    """Every ``step_end`` has its receipt: one of its step with its execution's iteration.

    A receipt without an ``iteration`` (written by another tool) counts for any execution
    of its step, as long as the step has as many receipts as ``step_end`` events.
    """
    kept: dict[tuple[Any, Any, Any], list[Any]] = {}
    for receipt in receipts:
        key = (receipt.get("flow_key"), receipt.get("step_id"), receipt.get("agent_key"))
        kept.setdefault(key, []).append(receipt.get("iteration"))
    ended: dict[tuple[Any, Any, Any], int] = {}
    found: list[Violation] = []
    iteration: Any = None
    for line, event in events:
        kind = event.get("kind")
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        assert isinstance(payload, dict)
        if kind == "step_start":
            iteration = payload.get("iteration")
            continue
        if kind != "step_end":
            continue
        key = (event.get("flow_key"), event.get("step_id"), event.get("agent_key"))
        ended[key] = ended.get(key, 0) + 1
        have = kept.get(key, [])
        if iteration in have or (None in have and len(have) >= ended[key]):
            continue
        flow, step, agent = key
        found.append(
            Violation(
                "events.jsonl",
                line,
                f"step_end of {flow}/{step} (iteration {iteration}) has no receipt: "
                f"{flow}/receipts/{step}-{agent}.json (or a ~N copy) with iteration "
                f"{iteration} is missing",
            )
        )
    return found
