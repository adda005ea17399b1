"""A checkpoint that disagrees with the flow or the log is refused, and the run stays resumable.

A run crashed after its third step's checkpoint (in-process, deterministically); then its
checkpoint is damaged or its flow edited, and ``swarm resume`` is run as a user runs it:
one error line, exit 2, not a byte of the run changed; once the cause is mended, the same
command resumes the run to success and it validates.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.deps import EngineChoice, RunLimits
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.runner import Orchestrator
from tests.hostile.conftest import Outcome
from tests.runtime.helpers import crash_at_checkpoint, step_yaml, write_flow

STEPS = [f"s{n}" for n in range(1, 7)]


class _Crash(BaseException):
    """Stands for SIGKILL: nothing in the run catches it."""


@pytest.fixture
def crashed(swarm: Callable[..., Outcome], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of the linear flow ``demo`` killed just after its third step's checkpoint."""
    project = swarm("--help").cwd
    write_flow(project / "flows", "demo", [step_yaml(step) for step in STEPS])
    real = RunRecorder.write_checkpoint
    calls = {"n": 0}

    def crashing(self: RunRecorder, document: Any) -> None:
        real(self, document)
        calls["n"] += 1
        if calls["n"] == 3:
            raise _Crash

    monkeypatch.setattr(RunRecorder, "write_checkpoint", crashing)
    runs = project / "runs"
    with pytest.raises(_Crash):
        Orchestrator(FlowRegistry(project / "flows"), runs_dir=runs).run(RunSpec(flows=("demo",)))
    monkeypatch.undo()
    (run_dir,) = runs.iterdir()
    (run_dir / "run.lock").unlink(missing_ok=True)  # its holder was this process
    return run_dir


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _edit(run_dir: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = run_dir / "checkpoint.json"
    doc = json.loads(path.read_text("utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def _pending(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["pending_events"])


def _forged_completed(doc: dict[str, Any]) -> None:
    last = _pending(doc)[-1]
    doc["pending_events"].append(
        {
            **last,
            "seq": last["seq"] + 1,
            "kind": "run_completed",
            "payload": {"status": "succeeded", "error": None},
        }
    )
    doc["next_seq"] += 1


FORGERIES: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    (
        "a step the flow does not have",
        lambda d: d["position"].update(step_id="s9"),
        ["position.step_id names step 's9' of flow 'demo'", "s1, s2"],
    ),
    (
        "a path as a step id",
        lambda d: d["position"].update(step_id="../../x"),
        ["position.step_id names step '../../x'"],
    ),
    (
        "a flow past the last",
        lambda d: d["position"].update(flow_index=99),
        ["position.flow_index is 99, but the run has 1 flow(s)"],
    ),
    (
        "a negative flow index",
        lambda d: d["position"].update(flow_index=-1),
        ["position.flow_index is -1; it must be a whole number >= 0"],
    ),
    (
        "totals as text",
        lambda d: d["totals"].update(prompt_tokens="12"),
        ["totals.prompt_tokens is '12'"],
    ),
    (
        "a negative loop count",
        lambda d: d["loops"].update({"demo/s1": -2}),
        ["loops.demo/s1 is -2"],
    ),
    (
        "a forged run_completed",
        _forged_completed,
        ["pending_events[2] is a 'run_completed' event"],
    ),
    (
        "an event without seq",
        lambda d: d["pending_events"][0].pop("seq"),
        ["pending_events[0] has seq None"],
    ),
    (
        "an event of a step the flow lacks",
        lambda d: d["pending_events"][0].update(step_id="gone"),
        ["pending_events[0] names step 'gone'"],
    ),
    (
        "a seq the log never reached",
        lambda d: (
            d.update(next_seq=d["next_seq"] + 50)
            or [e.update(seq=e["seq"] + 50) for e in d["pending_events"]]
        ),
        ["the event log ends at seq"],
    ),
]


@pytest.mark.parametrize(
    ("change", "needles"), [f[1:] for f in FORGERIES], ids=[f[0] for f in FORGERIES]
)
def test_a_forged_checkpoint_is_refused_and_the_run_stays_resumable(
    swarm: Callable[..., Outcome],
    crashed: Path,
    change: Callable[[dict[str, Any]], None],
    needles: list[str],
) -> None:
    original = (crashed / "checkpoint.json").read_bytes()
    _edit(crashed, change)
    before = _snapshot(crashed)
    refused = swarm("resume", str(crashed), "--progress", "never")
    assert refused.code == 2, refused.err
    refused.one_line_error("checkpoint.json", *needles)
    assert _snapshot(crashed) == before  # nothing written, nothing failed for good
    (crashed / "checkpoint.json").write_bytes(original)
    resumed = swarm("resume", str(crashed), "--progress", "never")
    assert resumed.code == 0, resumed.err
    assert validate_run_dir(crashed) == []


def test_a_step_removed_from_the_flow_is_refused_until_the_flow_is_restored(
    swarm: Callable[..., Outcome], crashed: Path
) -> None:
    flow = crashed.parent.parent / "flows" / "demo.yaml"
    kept = flow.read_bytes()
    shutil.copy(flow, flow.with_suffix(".bak"))
    write_flow(flow.parent, "demo", [step_yaml(s) for s in STEPS if s != "s4"])
    refused = swarm("resume", str(crashed), "--progress", "never")
    assert refused.code == 2
    refused.one_line_error("names step 's4' of flow 'demo'", "restore the flow")
    flow.write_bytes(kept)
    resumed = swarm("resume", str(crashed), "--progress", "never")
    assert resumed.code == 0, resumed.err
    meta = json.loads((crashed / "meta.json").read_text("utf-8"))
    assert meta["status"] == "succeeded" and meta["steps_completed"] == len(STEPS)
    assert validate_run_dir(crashed) == []


def _frame(paused: str, step: str, injected: str, resume_to: str | None) -> dict[str, Any]:
    return {
        "paused_flow": paused,
        "paused_step": step,
        "injected_flow": injected,
        "resume_to": resume_to,
        "only_step": None,
    }


def _stack(frames: list[dict[str, Any]], step: str) -> Callable[[dict[str, Any]], None]:
    """A checkpoint whose run stands at ``step`` of the top frame's flow, inside ``frames``."""

    def change(doc: dict[str, Any]) -> None:
        doc["stack"] = frames
        doc["position"]["step_id"] = step

    return change


UTILITIES = ("u1", "u2", "u3", "u4")
STACK_FORGERIES: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    (
        "the run's own flow entered again",
        _stack([_frame("demo", "s3", "demo", "s4")], "s1"),
        ["stack[0] enters flow 'demo' from demo/s3", "'demo' is already on the stack (demo)"],
    ),
    (
        "a utility flow entered twice",
        _stack([_frame("demo", "s3", "u1", "s4"), _frame("u1", "go", "u1", None)], "go"),
        ["stack[1] enters flow 'u1' from u1/go", "already on the stack (demo > u1)"],
    ),
    (
        "a stack deeper than max_depth",
        _stack(
            [_frame("demo", "s3", "u1", "s4")]
            + [_frame(a, "go", b, None) for a, b in itertools.pairwise(UTILITIES)],
            "go",
        ),
        ["stack[3] enters flow 'u4' from u3/go", "would hold 5 flows, past max_depth 4"],
    ),
    (
        "41 frames re-entering the run's flow",
        _stack([_frame("demo", "s3", "demo", "s4")] * 41, "s1"),
        ["stack has 41 frames; a run's stack holds at most 15"],
    ),
    (
        "200 000 frames",
        _stack([_frame("demo", "s3", "demo", "s4")] * 200_000, "s1"),
        ["stack has 200000 frames"],
    ),
    (
        "a node injection of a step the flow lacks",
        _stack([{**_frame("demo", "s3", "u1", "s4"), "only_step": "gone"}], "go"),
        ["stack[0].only_step names step 'gone' of flow 'u1'"],
    ),
]


@pytest.mark.parametrize(
    ("change", "needles"),
    [f[1:] for f in STACK_FORGERIES],
    ids=[f[0] for f in STACK_FORGERIES],
)
def test_a_forged_stack_is_refused_by_the_kernels_own_push_rule(
    swarm: Callable[..., Outcome],
    crashed: Path,
    change: Callable[[dict[str, Any]], None],
    needles: list[str],
) -> None:
    flows = crashed.parent.parent / "flows"
    for key in UTILITIES:
        write_flow(flows, key, [step_yaml("go")], 'utility: true\ninjection_trigger: "false"\n')
    original = (crashed / "checkpoint.json").read_bytes()
    _edit(crashed, change)
    before = _snapshot(crashed)
    refused = swarm("resume", str(crashed), "--progress", "never")
    assert refused.code == 2, refused.err
    refused.one_line_error("checkpoint.json", *needles)
    assert _snapshot(crashed) == before
    (crashed / "checkpoint.json").write_bytes(original)
    resumed = swarm("resume", str(crashed), "--progress", "never")
    assert resumed.code == 0, resumed.err
    assert validate_run_dir(crashed) == []


def _detoured(project: Path, monkeypatch: pytest.MonkeyPatch, depth: int) -> Path:
    """A run of ``demo`` killed just after the checkpoint of its ``depth``-th detour.

    ``demo/s1`` detours into ``u1``, each ``u<n>/go`` into ``u<n+1>``; the stub's navigator
    takes each detour, so the stack the run made holds ``depth`` frames, its log says so.
    """
    flows = project / "flows"
    detour = "detours:\n  - {{id: d, flow: {}}}\n"
    write_flow(
        flows, "demo", [step_yaml("s1", detour.format("u1"))] + [step_yaml(s) for s in STEPS[1:]]
    )
    for number, key in enumerate(UTILITIES, start=1):
        after = detour.format(f"u{number + 1}") if number < len(UTILITIES) else ""
        write_flow(flows, key, [step_yaml("go", after), step_yaml("done")], "utility: true\n")
    choose = Scenario.from_mapping({"navigator": {"s1": "d", "go": "d"}})
    runs = project / "runs"
    deep = Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        engine=EngineChoice(scenario=choose),
        limits=RunLimits(max_depth=len(UTILITIES) + 1),
    )
    crash_at_checkpoint(
        monkeypatch, depth, before=False, run=lambda: deep.run(RunSpec(flows=("demo",)))
    )
    (run_dir,) = runs.iterdir()
    (run_dir / "run.lock").unlink(missing_ok=True)  # its holder was this process
    stack = json.loads((run_dir / "checkpoint.json").read_text("utf-8"))["stack"]
    assert len(stack) == depth
    return run_dir


def test_a_run_keeps_its_own_max_depth_when_resumed(
    swarm: Callable[..., Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stack as deep as the run's own ``max_depth`` allowed is no forgery, whatever
    runtime.yaml says when it is resumed."""
    project = swarm("--help").cwd
    run_dir = _detoured(project, monkeypatch, depth=4)  # five flows: demo, u1 .. u4
    (project / "swarm" / "config").mkdir(parents=True)
    (project / "swarm" / "config" / "runtime.yaml").write_text("navigator:\n  max_depth: 2\n")
    resumed = swarm("resume", str(run_dir), "--progress", "never")
    assert resumed.code == 0, resumed.err
    assert json.loads((run_dir / "meta.json").read_text("utf-8"))["status"] == "succeeded"
    assert validate_run_dir(run_dir) == []


def _frames(*frames: tuple[str, str, str, str | None]) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["stack"] = [_frame(*frame) for frame in frames]
        doc["position"]["step_id"] = "go" if frames else "s2"

    return change


LOG_FORGERIES: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    (
        "a flow the log never entered",
        _frames(("demo", "s1", "u2", "s2")),
        ["stack[0].injected_flow is 'u2', but the event log's stack_push says 'u1'"],
    ),
    (
        "a frame the log never pushed",
        _frames(("demo", "s1", "u1", "s2"), ("u1", "go", "u2", "done")),
        ["stack has 2 frame(s), but the event log's stack_push and stack_pop events leave 1"],
    ),
    (
        "a frame the log never popped, dropped",
        _frames(),
        ["stack has 0 frame(s), but the event log's stack_push and stack_pop events leave 1"],
    ),
    (
        "another way back",
        _frames(("demo", "s1", "u1", "s5")),
        ["stack[0].resume_to is 's5', but the event log's flow_injected says 's2'"],
    ),
]


@pytest.mark.parametrize(
    ("change", "needles"), [f[1:] for f in LOG_FORGERIES], ids=[f[0] for f in LOG_FORGERIES]
)
def test_a_stack_the_event_log_does_not_hold_is_refused(
    swarm: Callable[..., Outcome],
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[dict[str, Any]], None],
    needles: list[str],
) -> None:
    """Each of these stacks obeys the push rule, but is not the one the run pushed: taken,
    the run would end 'succeeded' with a log ``swarm runs validate`` finds broken."""
    run_dir = _detoured(swarm("--help").cwd, monkeypatch, depth=1)
    original = (run_dir / "checkpoint.json").read_bytes()
    _edit(run_dir, change)
    before = _snapshot(run_dir)
    refused = swarm("resume", str(run_dir), "--progress", "never")
    assert refused.code == 2, refused.err + refused.out
    refused.one_line_error("checkpoint.json", *needles)
    assert _snapshot(run_dir) == before
    (run_dir / "checkpoint.json").write_bytes(original)
    resumed = swarm("resume", str(run_dir), "--progress", "never")
    assert resumed.code == 0, resumed.err
    assert validate_run_dir(run_dir) == []
