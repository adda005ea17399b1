"""The move a run's kernel makes when a step's candidate set has a choice.

``assert_routing`` recomputes each route from the flow: for a step with navigator routing,
detours or utility flows that may be injected, the candidate set is rebuilt from the
conditions over what the step left (its handoff, receipt, the run's params, loop state and
the facts as they stood), and the navigator's recorded choice is applied to it.

See docs/flows.md#navigator, docs/flows.md#detours-and-utility-flows and docs/flows.md#facts.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_swarm.run_record import RunRecord
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.flow.spec import FlowSpec, StepSpec
    from swarm_runtime.orchestrator.routing import Decision
    from swarm_runtime.orchestrator.state import LoopCounters


def may_choose(flows: FlowRegistry, flow: FlowSpec, step: StepSpec) -> bool:
    """Whether the step's candidate set may hold more than its routing's own move."""
    return bool(
        step.routing.kind == "navigator" or step.detours or (flows.utilities() and not flow.utility)
    )


def navigated(
    record: RunRecord,
    flows: FlowRegistry,
    at: tuple[FlowSpec, StepSpec],
    receipt: dict[str, Any],
    span: tuple[int, int],
    loops: LoopCounters,
    own: Decision | None,
) -> Decision:
    """The move after the step whose ``step_end`` and ``route_decision`` are at ``span``.

    The navigator's answer is the ``routing_decision`` the run wrote (none: it was not
    asked, or the run was deterministic); a ``stack_overflow_prevented`` means the detour
    chosen was not made and the golden path taken.
    """
    from swarm_runtime.orchestrator.routing import NavigatorAnswer, candidate_moves, route
    from swarm_runtime.record import replace

    flow, step = at
    written = record.event_dicts[span[0] + 1 : span[1]]
    asked = next((e for e in written if e.get("kind") == "routing_decision"), None)
    chosen = (asked.get("payload") or {}).get("chosen") if asked else None
    values = {
        "handoff": receipt.get("handoff") or {},
        "receipt": receipt,
        "params": record.spec.get("params") or {},
        "loop_state": loops.of_flow(flow.key),
        "facts": facts_at(record, span),
    }
    origin = record.spec.get("origin") or {}
    mode = "llm" if asked is not None else str(origin.get("navigator") or "llm")
    moves = candidate_moves(
        flow,
        step,
        own,
        utilities=flows.utilities(),
        entry=lambda key: flows.get(key).steps[0].id,
    )
    moved = route(
        flow,
        step,
        values,
        moves=moves,
        own=own,
        mode=mode,
        ask=lambda _held, _golden: NavigatorAnswer(
            choice=chosen, error=None if chosen else "recorded"
        ),
    )
    refused = next((e for e in written if e.get("kind") == "stack_overflow_prevented"), None)
    if refused is not None and moved.detour is not None and moved.golden is not None:
        reason = f"stack_overflow_prevented:{moved.detour.id}"
        return replace(moved.golden, reason=reason)
    return moved.decision


def facts_at(record: RunRecord, span: tuple[int, int]) -> list[dict[str, Any]]:
    """The facts the kernel routed the step at ``span`` with: earlier ones, its own on top."""
    events = record.event_dicts
    before = sum(_facts_written(event) for event in events[: span[0]])
    own = 0
    for event in events[span[1] + 1 :]:
        if event.get("kind") == "step_start":
            break
        own += _facts_written(event)
    if before + own == 0:
        return []
    entries = _journal(record)[: before + own]
    current: dict[str, dict[str, Any]] = {}
    for position, entry in enumerate(entries):
        if position >= before:  # the step's own, as its routing saw them
            keys = ("id", "kind", "text", "flow", "step")
            entry = {key: entry.get(key) for key in keys}
        current[str(entry.get("id"))] = entry
    return list(current.values())


def _facts_written(event: dict[str, Any]) -> int:
    if event.get("kind") != "facts_updated":
        return 0
    payload = event.get("payload") or {}
    added, updated = payload.get("added_count"), payload.get("updated_count")
    if isinstance(added, int) and isinstance(updated, int):  # the lists hold the first 100
        return added + updated
    return len(payload.get("added") or []) + len(payload.get("updated") or [])


def _journal(record: RunRecord) -> list[dict[str, Any]]:
    path = record.path / "facts.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [json.loads(line) for line in lines if line.strip()]
