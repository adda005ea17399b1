"""The step execution a crash left open: found, closed, its files moved aside (SPEC §8.2).

A resumed run closes it with ``step_error{error: "interrupted"}``; a receipt or transcript
it wrote goes to ``<flow>/interrupted/``, so the files of the step's re-run keep their
places.
"""

from __future__ import annotations

import os
from typing import Any

from swarm_runtime.documents.events import stands_of
from swarm_runtime.documents.payload import Stands
from swarm_runtime.documents.run_events import StepError
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.storage.layout import RunLayout
from swarm_runtime.timeutil import ms_between, parse_ts


def find_open_step(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``step_start`` that has no end in the log, if any."""
    open_step: dict[str, Any] | None = None
    for event in events:
        stands = stands_of(event.get("kind"))
        if stands is Stands.STEP_START:
            open_step = event
        elif stands in (Stands.STEP_END, Stands.STEP_ERROR):
            open_step = None
    return open_step


def interrupted_error(start: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """The ``step_error`` that closes a step a crash cut short.

    Its duration runs to the last event the dead process wrote.
    """
    try:
        duration = ms_between(parse_ts(str(start["ts"])), parse_ts(str(last["ts"])))
    except (KeyError, ValueError):
        duration = 0
    payload = start.get("payload") or {}
    engine = payload.get("engine") if isinstance(payload, dict) else None
    return {
        "payload": StepError(
            status="failed",
            duration_ms=duration,
            error="interrupted",
            engine=engine if isinstance(engine, str) else "unknown",
        ),
        "flow_key": start.get("flow_key"),
        "step_id": start.get("step_id"),
        "agent_key": start.get("agent_key"),
    }


def move_orphans(layout: RunLayout, start: dict[str, Any], state: RunState) -> list[str]:
    """Move files the interrupted execution wrote out of the way of its re-run."""
    flow_key, step_id = str(start.get("flow_key")), str(start.get("step_id"))
    base = layout.flow_base(flow_key)
    name = f"{step_id}-{start.get('agent_key')}"
    done = state.executions.get((flow_key, step_id), 0)
    moved: list[str] = []
    candidates = [base / "receipts" / f"{name}.json"]
    candidates += sorted((base / "llm").glob(f"{name}-*.jsonl")) if (base / "llm").is_dir() else []
    for path in candidates:
        stem = path.name[: -len(path.suffix)]
        earlier = path.with_name(f"{stem}~{done}{path.suffix}")
        if "~" in stem or not path.exists() or (done and not earlier.exists()):
            continue  # the latest file is an earlier execution's, not the interrupted one's
        target = base / "interrupted" / f"{stem}~seq{start.get('seq')}{path.suffix}"
        target.parent.mkdir(exist_ok=True)
        os.replace(path, target)
        moved.append(f"moved {path.relative_to(layout.root)} to {target.relative_to(layout.root)}")
    return moved
