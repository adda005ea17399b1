"""Where an event kind may stand in a run's log is its declaration's, and only there.

A kind declared with a ``stands`` is placed by that alone: by the sequence checker of
``swarm runs validate``, by mode parity, by the checkpoint check of a resume. None of
them names a kind to place it.
"""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_swarm.parity
import swarm_runtime.contracts.sequence
import swarm_runtime.orchestrator.resume
from pytest_swarm.parity import _grammar
from pytest_swarm.run_record import RunRecord
from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.documents import events as declared
from swarm_runtime.documents.events import KINDS
from swarm_runtime.documents.payload import Payload, Stands
from swarm_runtime.orchestrator import resume
from swarm_runtime.orchestrator.state import RunOutcome
from tests.conftest import SHIPPED_FLOWS
from tests.runtime.helpers import run_flows

PLACERS = (
    swarm_runtime.contracts.sequence,
    # the checkpoint check, which resume.py holds beside what a resume mends
    resume.check_checkpoint,
    resume._problem,
    resume._pending_problem,
    resume._stack_problem,
    resume._logged_stack,
    resume._logged_stack_problem,
    pytest_swarm.parity,
)
"""The modules (and the checkpoint check's functions) that place events in a log."""


@pytest.fixture
def kinds() -> Iterator[dict[Stands, str]]:
    """Two kinds declared for the test: one after a route_decision, one inside a step."""

    class Remark(Payload):
        """A remark on the move just made."""

        kind = "test_remark"
        stands = Stands.AFTER_ROUTE
        text: str

    class Aside(Payload):
        """An aside inside the step under way."""

        kind = "test_aside"
        stands = Stands.IN_STEP
        text: str

    try:
        yield {Remark.stands: Remark.kind, Aside.stands: Aside.kind}
    finally:
        for kind in (Remark.kind, Aside.kind):
            KINDS.pop(kind, None)
        declared._union.cache_clear()


@pytest.fixture
def run(tmp_path: Path) -> RunOutcome:
    return run_flows(SHIPPED_FLOWS, tmp_path / "runs", ("signal",))


def _insert_after_first_route(run: RunOutcome, kind: str) -> None:
    """An event of ``kind`` right after the log's first route_decision, seq renumbered."""
    path = run.path / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    at = next(n for n, e in enumerate(events) if e["kind"] == "route_decision") + 1
    route = events[at - 1]
    events.insert(at, {**route, "kind": kind, "payload": {"text": "noted"}})
    for seq, event in enumerate(events, start=1):
        event["seq"] = seq
    path.write_text("".join(json.dumps(event) + "\n" for event in events))


def test_a_kind_declared_after_a_route_stands_there(
    run: RunOutcome, kinds: dict[Stands, str]
) -> None:
    _insert_after_first_route(run, kinds[Stands.AFTER_ROUTE])

    assert [str(v) for v in validate_run_dir(run.path)] == []
    assert _grammar(RunRecord(run.path), "stub") == []


def test_a_kind_declared_inside_a_step_does_not_stand_after_a_route(
    run: RunOutcome, kinds: dict[Stands, str]
) -> None:
    _insert_after_first_route(run, kinds[Stands.IN_STEP])

    found = [str(v) for v in validate_run_dir(run.path)]
    assert any("test_aside" in v and "outside any step execution" in v for v in found), found
    assert any("test_aside" in line for line in _grammar(RunRecord(run.path), "stub"))


def _kind_literals(module: object) -> set[str]:
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KINDS
    }


@pytest.mark.parametrize("module", PLACERS, ids=lambda placer: placer.__name__)
def test_no_placer_lists_kinds_by_name(module: object) -> None:
    # Every kind is placed by its declaration's ``stands``: a kind's name written out in
    # one of these modules would be a second list of where kinds go.
    assert _kind_literals(module) == set()


def test_a_kind_that_does_not_say_where_it_stands_is_not_declared() -> None:
    with pytest.raises(TypeError, match=r"'test_nowhere' .* declares no 'stands'"):

        class Nowhere(Payload):
            kind = "test_nowhere"
            text: str

    assert "test_nowhere" not in KINDS
