"""The contract assertions, as plain functions over a :class:`RunRecord`.

Each raises ``AssertionError`` listing every problem it found, one per line, each naming
the run file, the line and the step. :func:`assert_run` runs them all. They hold in every
mode, so one contract suite serves the stub, replayed cassettes and live runs
(docs/pytest.md#one-contract-suite-for-every-mode).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_swarm.run_record import RunRecord
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.flow.spec import StepSpec
    from swarm_runtime.orchestrator.routing import Decision
    from swarm_runtime.orchestrator.state import LoopCounters

MAX_OUTPUT_BYTES = 50 * 1024


def _fail(what: str, record: RunRecord, problems: Iterable[str]) -> None:
    found = list(problems)
    if found:
        lines = "\n".join(f"  {problem}" for problem in found)
        raise AssertionError(f"{what} broken in run {record.run_id} ({record.path}):\n{lines}")


def _step_of(file: str) -> str:
    # "<flow>/receipts/<step>-<agent>.json" -> "<flow>/<step>-<agent>"
    parts = file.split("/")
    if len(parts) >= 3:
        return f"{parts[0]}/{parts[-1].split('.')[0].split('~')[0]}"
    return "-"


def assert_receipt_contract(record: RunRecord) -> None:
    """Every receipt matches docs/contract/receipt.md and belongs to this run and its flow dir.

    Every ``step_end`` has its receipt.
    """
    from swarm_runtime.contracts.agreement import check_receipts_present
    from swarm_runtime.contracts.check import check_receipt_file
    from swarm_runtime.storage.store import read_event_log

    problems: list[str] = []
    for path in sorted(record.path.glob("*/receipts/*.json")):
        for violation in check_receipt_file(path, record.path):
            problems.append(f"{violation} (step {_step_of(violation.file)})")
    events = read_event_log(record.path / "events.jsonl").events
    receipts = [receipt for runs in record.executions.values() for receipt in runs]
    problems.extend(str(v) for v in check_receipts_present(list(enumerate(events, 1)), receipts))
    for (flow, step), runs in record.executions.items():
        for receipt in runs:
            where = f"{flow}/receipts/{step}-{receipt.get('agent_key')}.json"
            if receipt.get("run_id") != record.run_id:
                problems.append(
                    f"{where}: step '{flow}/{step}': run_id is {receipt.get('run_id')!r}, "
                    f"the run is {record.run_id!r}"
                )
            if receipt.get("flow_key") != flow:
                problems.append(
                    f"{where}: step '{flow}/{step}': flow_key is {receipt.get('flow_key')!r} "
                    f"but the receipt lies in {flow}/"
                )
    _fail("receipt contract", record, problems)


def assert_transcript_contract(record: RunRecord) -> None:
    """Every transcript matches its contract and a succeeded step has its assistant line.

    See docs/contract/transcript.md.
    """
    from swarm_runtime.contracts.check import check_transcript_file

    problems: list[str] = []
    for path in sorted(record.path.glob("*/llm/*.jsonl")):
        for violation in check_transcript_file(path, record.path):
            problems.append(f"{violation} (step {_step_of(violation.file)})")
    for (flow, step), receipt in record.receipts.items():
        lines = record.transcripts.get((flow, step))
        where = f"{flow}/{receipt.get('transcript_path')}"
        if lines is None:
            problems.append(
                f"{where}: step '{flow}/{step}': transcript named by its receipt is missing"
            )
        elif receipt.get("status") == "succeeded" and not any(
            line.get("role") == "assistant" for line in lines
        ):
            problems.append(f"{where}: step '{flow}/{step}': succeeded but has no assistant line")
    _fail("transcript contract", record, problems)


def assert_event_sequence(record: RunRecord) -> None:
    """Every event is a known kind with its payload, and the rules of their order hold.

    See docs/contract/events.md#where-events-may-stand.
    """
    from swarm_runtime.contracts.check import check_events_file

    events = record.event_dicts
    problems = []
    for violation in check_events_file(record.path / "events.jsonl", record.path):
        text = str(violation)
        line = violation.line
        if line is not None and 0 < line <= len(events):
            event = events[line - 1]
            if event.get("step_id"):
                text += f" (step {event.get('flow_key')}/{event.get('step_id')})"
        problems.append(text)
    _fail("event sequence", record, problems)


def assert_tool_calls(record: RunRecord) -> None:
    """The tool calls of every step execution agree with its transcript and its tools.

    Its transcript's ``tool_use``/``tool_result`` lines are its calls (of its last attempt),
    in order; no tool its step does not allow ran (``tool_end`` with ``success: true``).
    That each ``tool_start`` has its ``tool_end`` is :func:`assert_event_sequence`'s.

    See docs/tools.md#tools.
    """
    import json

    from swarm_runtime.contracts.tools import check_tool_calls

    receipts = []
    for path in sorted(record.path.glob("*/receipts/*.json")):
        try:
            receipt = json.loads(path.read_text("utf-8"))
        except ValueError:
            continue  # the receipt contract reports it
        if isinstance(receipt, dict):
            receipts.append((path, receipt))
    events = list(enumerate(record.event_dicts, start=1))
    found = check_tool_calls(record.path, events, receipts)
    _fail("tool calls", record, [str(violation) for violation in found])


def _registry(record: RunRecord) -> FlowRegistry:
    if record.flows is None:
        raise AssertionError(
            f"run {record.run_id}: routing and teaching notes need the flows; "
            "build the RunRecord with flows=FlowRegistry(...)"
        )
    return record.flows


def assert_routing(record: RunRecord) -> None:
    """Each route_decision is what the flow's routing gives for the step's handoff/receipt.

    The decision is recomputed from the flow definition, the receipt of that execution
    and the loop counters replayed from the event log (docs/flows.md#routing).
    """
    from swarm_runtime.orchestrator.state import LoopCounters

    flows = _registry(record)
    problems: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    loops = LoopCounters()
    for index, event in enumerate(record.event_dicts):
        kind = event.get("kind")
        if kind not in ("step_end", "step_error"):
            continue
        if kind == "step_error" and (event.get("payload") or {}).get("error") == "interrupted":
            continue  # cut short by a crash or a stop: its files, if any, are in interrupted/
        key = (str(event.get("flow_key")), str(event.get("step_id")))
        number = seen.get(key, 0)
        seen[key] = number + 1
        if kind == "step_end":
            problems.extend(_route_problems(record, flows, loops, index, number))
    _fail("routing", record, problems)


def _route_problems(
    record: RunRecord, flows: FlowRegistry, loops: LoopCounters, index: int, number: int
) -> list[str]:
    """What is wrong with the route taken after the step_end at ``index``.

    ``number`` counts the step's earlier executions. The loop counters move past the step
    once its route could be recomputed, as the run moved them.
    """
    from pytest_swarm.navigation import may_choose, navigated
    from swarm_runtime.orchestrator.routing import decide

    events = record.event_dicts
    event = events[index]
    flow_key, step_id = str(event.get("flow_key")), str(event.get("step_id"))
    where = f"events.jsonl:{index + 1}: step '{flow_key}/{step_id}'"
    runs = record.executions.get((flow_key, step_id), [])
    if number >= len(runs):
        return [f"{where}: no receipt for execution {number + 1}"]
    receipt = runs[number]
    routed = index + 1
    while routed < len(events) and events[routed].get("kind") in _NAVIGATOR_KINDS:
        routed += 1  # a navigator's routing_decision and routing_offroad come first
    nxt = events[routed] if routed < len(events) else {}
    if nxt.get("kind") != "route_decision":
        return [f"{where}: step_end is not followed by a route_decision"]
    flow = flows.get(flow_key)
    step = flow.step(step_id)
    executions = loops.executions(flow_key, step)
    skipped = (event.get("payload") or {}).get("status") == "skipped"
    try:
        own = None
        if step.routing.kind != "navigator" or skipped:
            own = decide(
                flow,
                step,
                handoff=receipt.get("handoff"),
                receipt=receipt,
                executions=executions,
                linear_only=skipped,
            )
        expected = own
        if not skipped and may_choose(flows, flow, step) and not _ended_there(nxt, own):
            at = (flow, step)
            expected = navigated(record, flows, at, receipt, (index, routed), loops, own)
    except Exception as exc:  # a routing error should have been a step_error
        return [f"{where}: routed although routing fails: {exc}"]
    assert expected is not None
    got = nxt.get("payload") or {}
    problems = _decision_problems(got, expected, receipt, step, flow_key, routed + 1)
    counted = str(got.get("decision"))
    if got.get("routing_source") == "navigator:detour" and own is not None:
        counted = own.decision  # a detour keeps the loop it left where the golden path had it
    loops.after(flow_key, step, counted, skipped=skipped)
    went_wrong = _went_elsewhere(events, routed, f"{flow_key}/{step_id}")
    if went_wrong:
        problems.append(went_wrong)
    return problems


_NAVIGATOR_KINDS = (
    "routing_decision",
    "graph_extended",
    "routing_offroad",
    "stack_overflow_prevented",
)


def _ended_there(route: dict[str, Any], own: Decision | None) -> bool:
    """A non-navigator step the run ended at (``--to``, a node injection): no choice made."""
    reason = str((route.get("payload") or {}).get("reason", ""))
    return own is not None and reason.startswith("end_step:")


def _decision_problems(
    got: dict[str, Any],
    expected: Decision,
    receipt: dict[str, Any],
    step: StepSpec,
    flow_key: str,
    line: int,
) -> list[str]:
    """How the route_decision on ``line`` differs from ``expected``, and from its receipt."""
    step_id = step.id
    problems: list[str] = []
    if str(got.get("reason", "")).startswith("end_step:") and expected.decision != "loop":
        want_to, want_decision = None, "terminate"
    else:
        want_to, want_decision = expected.to_step, expected.decision
    handoff = receipt.get("handoff")
    if (got.get("to_step"), got.get("decision")) != (want_to, want_decision):
        problems.append(
            f"events.jsonl:{line}: step '{flow_key}/{step_id}': route_decision "
            f"{got.get('decision')} -> {got.get('to_step')!r}, but {step.routing.kind} "
            f"routing with handoff {handoff} gives {want_decision} -> {want_to!r} "
            f"({expected.reason})"
        )
    elif got.get("routing_source") != expected.source:
        problems.append(
            f"events.jsonl:{line}: step '{flow_key}/{step_id}': routing_source "
            f"{got.get('routing_source')!r}, expected {expected.source!r}"
        )
    routing = receipt.get("routing") or {}
    if routing.get("decision") != got.get("decision"):
        problems.append(
            f"{flow_key}/receipts/{step_id}-{receipt.get('agent_key')}.json: step "
            f"'{flow_key}/{step_id}': receipt routing.decision {routing.get('decision')!r} "
            f"differs from its route_decision {got.get('decision')!r}"
        )
    return problems


def _went_elsewhere(events: list[dict[str, Any]], index: int, where: str) -> str | None:
    """Why the step that ran after the route_decision at ``index`` is not the one it named."""
    got = events[index].get("payload") or {}
    flow_key = str(events[index].get("flow_key"))
    went = next((e for e in events[index + 1 :] if e.get("kind") == "step_start"), None)
    to_step = got.get("to_step")
    target = (flow_key, to_step)
    if isinstance(to_step, str) and "/" in to_step:  # a detour: FLOW/STEP of another flow
        target = to_step.partition("/")[::2]
    if (
        to_step is not None
        and (went is None or (went.get("flow_key"), went.get("step_id")) != target)
        and not _stopped_after(events, index)
    ):
        where_to = "nowhere" if went is None else f"{went.get('flow_key')}/{went.get('step_id')}"
        return (
            f"events.jsonl:{index + 1}: step '{where}': route_decision goes to "
            f"'{to_step}', but the next step that ran is {where_to}"
        )
    if to_step is None and went is not None and went.get("flow_key") == flow_key:
        return (
            f"events.jsonl:{index + 1}: step '{where}': route_decision ends the "
            f"flow, but '{flow_key}/{went.get('step_id')}' ran next"
        )
    return None


def _stopped_after(events: list[dict[str, Any]], index: int) -> bool:
    """Whether the run ended (stopped, failed, …) before another step could start."""
    for event in events[index + 1 :]:
        if event.get("kind") == "step_start":
            return False
        if event.get("kind") == "run_completed":
            payload = event.get("payload")
            return isinstance(payload, dict) and payload.get("status") != "succeeded"
    return True


def assert_teaching_notes(record: RunRecord) -> None:
    """A step's notes are in its own prompt and in no other step's prompt (docs/flows.md#prompt).

    Notes are matched as the prompt renders them, one ``- note`` line each, in the part of
    the prompt built from the step itself (the system prompt): the history that follows
    holds earlier outputs, which may quote anything, and is not the step's to answer for.
    """
    flows = _registry(record)
    prompts: dict[tuple[str, str], str] = {}
    for key, lines in record.transcripts.items():
        text = "\n".join(
            str(line.get("content", "")) for line in lines if line.get("role") == "system"
        )
        prompts[key] = f"\n{text}\n"
    notes: dict[str, tuple[str, str]] = {}
    for flow_key in {flow for flow, _ in prompts}:
        for step in flows.get(flow_key).steps:
            for note in step.teaching_notes.all_notes():
                notes.setdefault(note, (flow_key, step.id))
    problems: list[str] = []
    for (flow_key, step_id), text in prompts.items():
        receipt = record.receipts[(flow_key, step_id)]
        where = f"{flow_key}/{receipt.get('transcript_path')}"
        own = flows.get(flow_key).step(step_id).teaching_notes.all_notes()
        for note in own:
            if f"\n- {note}\n" not in text:
                problems.append(
                    f"{where}:1: step '{flow_key}/{step_id}': its note {note!r} is missing "
                    "from its prompt"
                )
        for note, owner in notes.items():
            if owner != (flow_key, step_id) and note not in own and f"\n- {note}\n" in text:
                problems.append(
                    f"{where}: step '{flow_key}/{step_id}': the note {note!r} of step "
                    f"'{owner[0]}/{owner[1]}' leaks into its prompt"
                )
    _fail("teaching notes", record, problems)


def assert_step_results(record: RunRecord) -> None:
    """Each engine result has its step, a known status, a duration and a bounded output.

    See docs/engines.md#the-engine-contract.
    """
    problems: list[str] = []
    executed = record.steps_executed()
    for number, (flow_key, result) in enumerate(record.results):
        expected = executed[number] if number < len(executed) else None
        where = f"result {number + 1} (step '{flow_key}/{result.step_id}')"
        if expected is not None and expected != (flow_key, result.step_id):
            problems.append(f"{where}: step_id does not match the step that ran ('{expected[1]}')")
        if result.status not in ("succeeded", "failed", "skipped"):
            problems.append(f"{where}: status {result.status!r} is not succeeded|failed|skipped")
        if result.duration_ms < 0:
            problems.append(f"{where}: negative duration_ms {result.duration_ms}")
        if len(result.output.encode("utf-8")) >= MAX_OUTPUT_BYTES:
            problems.append(f"{where}: output is 50 KB or more")
        if result.status == "failed" and not result.error:
            problems.append(f"{where}: failed without an error")
    _fail("step results", record, problems)


def assert_mode_parity(record: RunRecord, reference: RunRecord) -> None:
    """What every mode shares with ``reference`` (the stub's run of the same flows).

    The run's own files, each executed step's files and receipt fields, the event grammar,
    and the routes of the steps a scenario scripts; see :mod:`pytest_swarm.parity`.
    """
    from pytest_swarm.parity import parity_problems

    _fail("mode parity", record, parity_problems(record, reference))


def assert_run(record: RunRecord, *, reference: RunRecord | None = None) -> None:
    """Every assertion of the contract; mode parity too when ``reference`` is given."""
    assert_receipt_contract(record)
    assert_transcript_contract(record)
    assert_event_sequence(record)
    assert_tool_calls(record)
    assert_routing(record)  # both need the flows: a record without them fails, loudly
    assert_teaching_notes(record)
    assert_step_results(record)
    if reference is not None:
        assert_mode_parity(record, reference)
