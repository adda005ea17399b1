"""Mode parity: what a run in any mode must share with the stub's run.

A real model does not route like the stub: a critic passes a first draft, a branch takes
another value, a loop runs more or fewer times. So mode parity (:func:`parity_problems`,
behind ``assert_mode_parity``) compares what every mode must agree on, and routes only
where a scenario scripts them:

1. the run's own files (``spec.json``, ``meta.json``, ``events.jsonl``, …): the same set;
2. for each step both runs executed, the kinds of file it wrote: its receipt and its
   transcript (earlier executions' ``~N`` copies aside), named alike;
3. for each such step, the receipt's fields (those that only some modes have aside:
   ``cassette``, ``cost``, ``timing``, ``context_truncation``, ``handoff``);
4. the event grammar: ``run_created``, ``run_started``, then step executions, each
   ``step_start``, tool and ``log`` events, then ``step_end`` and ``route_decision`` or a
   ``step_error``, then ``run_completed`` (pause, stop and resume events where they may
   be); which steps and how many is the route's business, not the grammar's;
5. routes of the steps the reference run's scenario scripts (``flow/step`` or ``step``
   keys of its stub scenario): the same ``route_decision`` targets, in order;
6. tool calls of the steps whose ``tools`` that scenario scripts: in each execution both
   runs made (the first, the second, …), the same tools called in the same order (of the
   execution's last attempt). A real model calls tools its own way where nothing scripts
   them, as it routes.

See docs/pytest.md#one-contract-suite-for-every-mode.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from swarm_runtime.documents.events import stands_of
from swarm_runtime.documents.payload import Stands
from swarm_runtime.documents.run_events import RouteDecision

if TYPE_CHECKING:
    from pytest_swarm.run_record import RunRecord

OPTIONAL_FIELDS = frozenset({"cassette", "cost", "timing", "context_truncation", "handoff"})
"""Receipt fields only some modes write."""

_GRAMMAR: dict[tuple[str, Stands], str] = {
    ("start", Stands.FIRST): "created",
    ("created", Stands.START): "between",
    ("between", Stands.STEP_START): "step",
    ("between", Stands.LAST): "end",
    ("step", Stands.TOOL_START): "tool",
    ("tool", Stands.TOOL_END): "step",
    # A warning while a tool runs; a step that fails mid-call (killed, past its deadline).
    ("tool", Stands.IN_STEP): "tool",
    ("tool", Stands.STEP_ERROR): "between",
    ("step", Stands.IN_STEP): "step",
    ("step", Stands.STEP_END): "ended",
    ("step", Stands.STEP_ERROR): "between",
    ("ended", Stands.ROUTE): "between",
    # How a navigator chose (docs/flows.md#navigator), between a step's end and its route_decision.
    ("ended", Stands.ROUTING): "ended",
    # Facts and the flow stack (docs/flows.md#detours-and-utility-flows, docs/flows.md#facts), after
    # the route_decision.
    ("between", Stands.AFTER_ROUTE): "between",
}
"""The event grammar as (state, where the kind stands) -> next state. Pause, stop and
resume events are allowed between executions, and a blocked step's pause inside one (see
``_PAUSES``); where each kind stands is its declaration's."""
_PAUSES = frozenset({Stands.PAUSE, Stands.RESUME, Stands.STOP, Stands.START})
_COPY = re.compile(r"~\d+(?=\.json(?:l)?$)")


def parity_problems(record: RunRecord, reference: RunRecord) -> list[str]:
    """Every way ``record`` breaks parity with ``reference`` (see the module's rules)."""
    problems = _run_files(record, reference)
    both = record.receipts.keys() & reference.receipts.keys()
    for key in sorted(both):
        problems.extend(_step(record, reference, key))
    problems.extend(_grammar(record, reference.mode))
    problems.extend(_scripted_routes(record, reference))
    problems.extend(_scripted_tools(record, reference))
    return problems


def _run_files(record: RunRecord, reference: RunRecord) -> list[str]:
    def own(run: RunRecord) -> set[str]:
        return {name for name in run.files() if "/" not in name}

    mine, theirs = own(record), own(reference)
    return [f"{name}: missing (the {reference.mode} run has it)" for name in sorted(theirs - mine)]


def _step_files(run: RunRecord, key: tuple[str, str]) -> set[str]:
    flow, step = key
    agent = run.receipts[key].get("agent_key")
    prefix = f"{step}-{agent}"
    names = set()
    for name in run.files():
        parts = name.split("/")
        if (
            len(parts) == 3
            and parts[0] == flow
            and parts[1] in ("receipts", "llm")
            and parts[2].startswith((f"{prefix}.", f"{prefix}~", f"{prefix}-"))
        ):
            names.add(f"{parts[1]}/{_COPY.sub('', parts[2])}")
    return names


def _step(record: RunRecord, reference: RunRecord, key: tuple[str, str]) -> list[str]:
    where = f"step '{key[0]}/{key[1]}'"
    problems = []
    mine, theirs = _step_files(record, key), _step_files(reference, key)
    if mine != theirs:
        problems.append(
            f"{key[0]}/: {where} wrote {sorted(mine)}, the {reference.mode} run {sorted(theirs)}"
        )
    fields = set(record.receipts[key]) - OPTIONAL_FIELDS
    want = set(reference.receipts[key]) - OPTIONAL_FIELDS
    if fields != want:
        agent = record.receipts[key].get("agent_key")
        problems.append(
            f"{key[0]}/receipts/{key[1]}-{agent}.json: {where}: fields differ: extra "
            f"{sorted(fields - want)}, missing {sorted(want - fields)}"
        )
    return problems


def _grammar(record: RunRecord, reference_mode: str) -> list[str]:
    state = "start"
    events = record.event_dicts
    for line, event in enumerate(events, start=1):
        kind = str(event.get("kind"))
        stands = stands_of(kind)
        following = _GRAMMAR.get((state, stands)) if stands is not None else None
        if following is None and stands in _PAUSES and state in ("between", "step"):
            following = state
        if following is None:
            return [
                f"events.jsonl:{line}: {kind} of step '{event.get('flow_key')}/"
                f"{event.get('step_id')}' breaks the event grammar every mode shares with the "
                f"{reference_mode} run"
            ]
        state = following
    if state != "end":
        return [f"events.jsonl: ends before run_completed (the {reference_mode} run has one)"]
    return []


def _scripted_routes(record: RunRecord, reference: RunRecord) -> list[str]:
    origin = reference.spec.get("origin") or {}
    scenario = origin.get("scenario") or {}
    scripted = {str(key) for key in scenario if key != "navigator"}
    problems = []
    for step in sorted(scripted):
        mine, theirs = _routes(record, step), _routes(reference, step)
        if mine != theirs:
            problems.append(
                f"events.jsonl: step '{step}' (scripted by the scenario) routed to {mine}, "
                f"the {reference.mode} run to {theirs}"
            )
    return problems


def _routes(run: RunRecord, step: str) -> list[Any]:
    flow, _, step_id = step.rpartition("/")
    return [
        (e.get("payload") or {}).get("to_step")
        for e in run.event_dicts
        if e.get("kind") == RouteDecision.kind
        and e.get("step_id") == step_id
        and (not flow or e.get("flow_key") == flow)
    ]


def _scripted_tools(record: RunRecord, reference: RunRecord) -> list[str]:
    origin = reference.spec.get("origin") or {}
    scenario = origin.get("scenario") or {}
    scripted = [str(key) for key, entry in scenario.items() if _scripts_tools(entry)]
    mine, theirs = _tool_calls(record), _tool_calls(reference)
    problems = []
    for step in sorted(scripted):
        flow, _, step_id = step.rpartition("/")
        keys = {key for key in mine.keys() | theirs.keys() if key[1] == step_id}
        for key in sorted(k for k in keys if not flow or k[0] == flow):
            pairs = zip(mine.get(key, []), theirs.get(key, []), strict=False)
            for number, (called, want) in enumerate(pairs, start=1):
                if called != want:
                    problems.append(
                        f"events.jsonl: step '{key[0]}/{key[1]}' (its tools scripted by the "
                        f"scenario), execution {number}: called {called}, the "
                        f"{reference.mode} run {want}"
                    )
    return problems


def _scripts_tools(entry: Any) -> bool:
    """Whether a scenario entry (one outcome, or one per execution) scripts tool calls."""
    outcomes = entry if isinstance(entry, list) else [entry]
    return any(isinstance(outcome, dict) and "tools" in outcome for outcome in outcomes)


def _tool_calls(run: RunRecord) -> dict[tuple[str, str], list[list[str]]]:
    """The tools each step execution called (its last attempt), in order, per step."""
    from swarm_runtime.contracts.tools import INTERRUPTED, step_executions

    found: dict[tuple[str, str], list[list[str]]] = {}
    for execution in step_executions(enumerate(run.event_dicts, start=1)):
        if execution.error == INTERRUPTED:
            continue  # cut short by a crash or a stop, and run again
        calls = execution.calls[execution.last_attempt :]
        key = (execution.flow_key, execution.step_id)
        found.setdefault(key, []).append([call.tool for call in calls])
    return found
