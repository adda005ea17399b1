"""checkpoint.json written from cached parts is byte for byte what encoding it whole gives."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.checkpoint import (
    Checkpoint,
    CheckpointText,
    Position,
    totals_document,
)
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.runner import Orchestrator, RunSpec
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.storage.store import dump_json, encode_line
from tests.conftest import SHIPPED_FLOWS


def test_the_text_matches_the_whole_document_through_a_long_random_run() -> None:
    rng = random.Random(20261123)
    state = RunState(HistoryBudget())
    encoder = CheckpointText()
    flows = ["signal", "plan", "b\u00e9ta", 'q"uote']
    for n in range(400):
        if n in (150, 300):  # counts set whole, as a resume restores them
            state.executions = {key: count + n for key, count in state.executions.items()}
        flow = rng.choice(flows)
        step = rng.choice(["a", "b", "c\\d", f"s{rng.randint(0, 30)}"])
        state.next_iteration(flow, step)
        totals = state.flow(flow)
        totals.executed += 1
        totals.add_call(TokenUsage(rng.randint(0, 99), rng.randint(0, 9)), rng.random() / 7)
        state.totals.add_call(TokenUsage(1, 2), None if n % 50 == 0 else 0.1)
        if rng.random() < 0.2:
            state.loops.after(flow, _Step(step), "loop", skipped=False)
        state.seq += rng.randint(1, 4)
        pending = [
            {"kind": "step_end", "seq": state.seq + 1, "payload": {"n": n, "t": "\u00e9\n"}},
            {"kind": "route_decision", "seq": state.seq + 2, "payload": {"to": None}},
        ]
        position = Position(rng.randint(0, 3), rng.choice([None, step]))
        history = (n, f"{n:064x}")
        text = encoder.text(
            state,
            "run-x",
            position,
            history=history,
            pending=[encode_line(event) for event in pending],
            flow=flow,
        )
        whole = Checkpoint.capture(state, "run-x", position, history=history, pending=pending)
        assert text == dump_json(whole), n
    if not state.loops.as_dict():
        pytest.fail("the loops were never exercised")


def test_the_totals_document_holds_every_counter() -> None:
    from swarm_runtime.orchestrator.state import Totals

    assert sorted(totals_document(Totals())) == sorted(Totals.__slots__)


class _Step:
    """What LoopCounters.after needs of a step."""

    def __init__(self, step_id: str) -> None:
        self.id = step_id
        self.routing = _Routing(step_id)


class _Routing:
    kind = "microloop"
    max_iterations = 9

    def __init__(self, step_id: str) -> None:
        self.loop_target = step_id


def test_every_checkpoint_of_a_run_is_the_canonical_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    original = RunRecorder.write_checkpoint

    def keep(self: RunRecorder, document: Any) -> None:
        written.append(document if isinstance(document, str) else dump_json(document))
        original(self, document)

    monkeypatch.setattr(RunRecorder, "write_checkpoint", keep)
    registry = FlowRegistry(SHIPPED_FLOWS)
    outcome = Orchestrator(registry, runs_dir=tmp_path).run(RunSpec(flows=tuple(registry.order())))
    assert outcome.status == "succeeded"
    assert len(written) == outcome.summary["total_steps_executed"]
    for text in written:
        document = json.loads(text)
        assert dump_json(document) == text
        assert Checkpoint.parse(document, "checkpoint").next_seq > 0


def test_an_event_line_is_what_the_encoder_gives() -> None:
    from swarm_runtime.orchestrator.recorder import _event_line

    rng = random.Random(7)
    texts = ["", "plain", "\u00e9\u4e2d\U0001f600", 'q"uo\\te', "line\nbreak\t\x00", "</script>"]
    for n in range(500):
        event: dict[str, Any] = {
            "run_id": rng.choice(texts),
            "seq": rng.randint(0, 10**12),
            "ts": rng.choice(texts),
            "kind": rng.choice(texts),
            "flow_key": rng.choice([None, *texts]),
            "step_id": rng.choice([None, *texts]),
            "agent_key": rng.choice([None, *texts]),
            "payload": {
                rng.choice(texts): rng.choice([None, 1.5, -0.0, True, [1, {"z": "a", "b": n}]])
                for _ in range(rng.randint(0, 4))
            },
        }
        assert _event_line(event) == encode_line(event), event
    # Anything else is left to the encoder, which says what it is.
    odd: dict[str, Any] = {"seq": True, "kind": "x", "extra": 1}
    assert _event_line(odd) == encode_line(odd)
    with pytest.raises(TypeError):
        _event_line({**event, "payload": {"x": object()}})
