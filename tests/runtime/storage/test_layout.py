"""Ids that would escape the runs dir are refused at load (docs/flows.md#files), and again by
RunLayout (docs/contract/run-dir.md).

The first fence is the loader (id and agent syntax). The second is RunLayout: a path built from
a forged id (a FlowSpec made by hand, bypassing the loader) raises StorageError before anything
is written outside runs_dir — also in a whole orchestrator run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm_runtime.errors import FlowDefinitionError, StorageError
from swarm_runtime.flow.loader import load_flow
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, RoutingSpec, StepSpec, TeachingNotes
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.storage.layout import RunLayout
from swarm_runtime.storage.store import read_event_log

RUN_ID = "run-20250115-100000-abc123"

FLOW_LINES = (
    "key: demo",  # 1
    'title: "Demo flow"',  # 2
    'description: "A flow for path fence tests."',  # 3
    "steps:",  # 4
    "  - id: draft",  # 5
    "    agents: [writer]",  # 6
    '    role: "Write the draft."',  # 7
    "    teaching_notes:",  # 8
    '      inputs: ["the request"]',  # 9
    '      outputs: ["draft.md"]',  # 10
    '      emphasizes: ["clarity"]',  # 11
    '      constraints: ["no code"]',  # 12
    "  - id: publish",  # 13
    "    agents: [publisher]",  # 14
    '    role: "Publish the draft."',  # 15
    "    teaching_notes:",  # 16
    '      inputs: ["draft.md"]',  # 17
    '      outputs: ["report.md"]',  # 18
    '      emphasizes: ["brevity"]',  # 19
    '      constraints: ["no new claims"]',  # 20
)


def flow_text(*edits: tuple[int, str, str]) -> str:
    """The flow above with line ``n`` replaced: each edit is (n, the line there now, new line)."""
    lines = list(FLOW_LINES)
    for number, old, new in edits:
        assert lines[number - 1] == old, f"line {number} is {lines[number - 1]!r}"
        assert "\n" not in new, "an edit must keep the line count"
        lines[number - 1] = new
    return "\n".join(lines) + "\n"


def write_flow(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "demo.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*")}


# -- first fence: the loader ---------------------------------------------------------------


def test_the_fence_flow_is_valid(tmp_path: Path) -> None:
    flow = load_flow(write_flow(tmp_path, flow_text()))
    assert [step.id for step in flow.steps] == ["draft", "publish"]


@pytest.mark.parametrize("step_id", ["../x", "../../escape", "/etc/passwd", "a/b", ".."])
def test_step_id_with_a_path_is_refused_at_load(tmp_path: Path, step_id: str) -> None:
    path = write_flow(tmp_path, flow_text((13, "  - id: publish", f'  - id: "{step_id}"')))
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    error = info.value
    assert (error.file, error.line, error.field) == (str(path), 13, "id")
    assert f"step id {step_id!r} is invalid" in str(error)
    assert str(error).startswith(f"{path}:13")


@pytest.mark.parametrize("agent", ["../../etc", "../x", "/etc/passwd", "a/b"])
def test_agent_key_with_a_path_is_refused_at_load(tmp_path: Path, agent: str) -> None:
    path = write_flow(
        tmp_path, flow_text((14, "    agents: [publisher]", f'    agents: ["{agent}"]'))
    )
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    error = info.value
    assert (error.file, error.line, error.field, error.step_id) == (
        str(path),
        14,
        "agents",
        "publish",
    )
    assert f"agent key {agent!r} is invalid" in str(error)


def test_second_agent_with_a_path_is_refused_too(tmp_path: Path) -> None:
    path = write_flow(
        tmp_path, flow_text((14, "    agents: [publisher]", "    agents: [publisher, ../../etc]"))
    )
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    assert (info.value.line, info.value.field) == (14, "agents")


def test_routing_target_with_a_path_is_refused_at_load(tmp_path: Path) -> None:
    # The notes of `draft` on one line (8) free line 12 for a routing block.
    notes = "    teaching_notes: {inputs: [a], outputs: [b], emphasizes: [c], constraints: [d]}"
    path = write_flow(
        tmp_path,
        flow_text(
            (8, "    teaching_notes:", notes),
            (9, '      inputs: ["the request"]', "    # inputs"),
            (10, '      outputs: ["draft.md"]', "    # outputs"),
            (11, '      emphasizes: ["clarity"]', "    # emphasizes"),
            (12, '      constraints: ["no code"]', "    routing: {next: ../x}"),
        ),
    )
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    assert (info.value.line, info.value.field, info.value.step_id) == (12, "routing.next", "draft")
    assert "step id '../x' is invalid" in str(info.value)


@pytest.mark.parametrize(
    ("line", "old", "new", "field"),
    [
        (13, "  - id: publish", '  - id: "publish\\n"', "id"),
        (14, "    agents: [publisher]", '    agents: ["publisher\\n"]', "agents"),
    ],
    ids=["step-id", "agent-key"],
)
def test_id_with_a_trailing_newline_is_refused_at_load(
    tmp_path: Path, line: int, old: str, new: str, field: str
) -> None:
    # ^[a-z][a-z0-9_]*$ with re.match lets "publish\n" through ($ matches before a final \n);
    # the id would become part of file names.
    path = write_flow(tmp_path, flow_text((line, old, new)))
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    assert (info.value.line, info.value.field) == (line, field)


# -- second fence: RunLayout ---------------------------------------------------------------

FORGED = ["../x", "../../escape", "../../../../escape", "/etc/passwd", "a/../../b", "..", ""]


@pytest.fixture
def layout(tmp_path: Path) -> RunLayout:
    return RunLayout(tmp_path / "runs", RUN_ID)


def test_a_valid_layout_stays_in_the_runs_dir(tmp_path: Path, layout: RunLayout) -> None:
    runs = (tmp_path / "runs").resolve()
    assert layout.root == runs / RUN_ID
    assert layout.flow_base("stepwise-demo") == runs / RUN_ID / "stepwise-demo"
    assert not (tmp_path / "runs").exists()  # naming the run's paths writes nothing
    receipt, transcript = layout.step_files("demo", "draft", "writer", "claude")
    assert Path(receipt) == runs / RUN_ID / "demo/receipts/draft-writer.json"
    assert Path(transcript) == runs / RUN_ID / "demo/llm/draft-writer-claude.jsonl"
    made = {p.relative_to(runs).as_posix() for p in runs.rglob("*")}
    assert made == {RUN_ID, f"{RUN_ID}/demo", f"{RUN_ID}/demo/receipts", f"{RUN_ID}/demo/llm"}


def _refused(tmp_path: Path, layout: RunLayout, match: str, *parts: str) -> None:
    """``step_files`` (the path the recorder writes through) refuses, and makes nothing."""
    with pytest.raises(StorageError, match=match):
        layout.step_files(*parts)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("step_id", FORGED)
def test_a_forged_step_id_names_no_file(tmp_path: Path, layout: RunLayout, step_id: str) -> None:
    _refused(tmp_path, layout, "step id", "demo", step_id, "writer", "claude")


@pytest.mark.parametrize("agent", [*FORGED, "../../etc"])
def test_a_forged_agent_key_names_no_file(tmp_path: Path, layout: RunLayout, agent: str) -> None:
    _refused(tmp_path, layout, "agent key", "demo", "draft", agent, "claude")


@pytest.mark.parametrize("flow_key", FORGED)
def test_a_forged_flow_key_names_no_path(tmp_path: Path, layout: RunLayout, flow_key: str) -> None:
    with pytest.raises(StorageError, match="flow key"):
        layout.flow_base(flow_key)
    with pytest.raises(StorageError, match="flow key"):
        layout.artifacts(flow_key)
    _refused(tmp_path, layout, "flow key", flow_key, "draft", "writer", "claude")


@pytest.mark.parametrize("engine_short", ["../x", "/abs", ""])
def test_a_forged_engine_name_names_no_transcript(
    tmp_path: Path, layout: RunLayout, engine_short: str
) -> None:
    _refused(tmp_path, layout, "engine name", "demo", "draft", "writer", engine_short)


@pytest.mark.parametrize(
    ("flow_key", "step_id", "agent"),
    [("demo", "draft\n", "writer"), ("demo", "draft", "writer\n"), ("demo\n", "draft", "writer")],
    ids=["step-id", "agent-key", "flow-key"],
)
def test_layout_refuses_a_trailing_newline_in_ids(
    tmp_path: Path, layout: RunLayout, flow_key: str, step_id: str, agent: str
) -> None:
    # Same `$`-before-final-newline gap as at load: the name must match the pattern exactly.
    _refused(tmp_path, layout, "must match", flow_key, step_id, agent, "claude")


@pytest.mark.parametrize(
    "run_id",
    [
        "../" + RUN_ID,
        RUN_ID + "/../../x",
        "..",
        "",
        "/tmp/" + RUN_ID,
        "run-20250115-100000-ABC123",
        "run-2025011-100000-abc123",
        "run-20250115-10000-abc123",
        "run-20250115-100000-abc12",
        "run-20250115-100000-abc1234",
        "run_20250115_100000_abc123",
        "run-20250115-100000-abc-12",
        RUN_ID + "\n",
        "run-\u0662\u0660\u0662\u0665\u0660\u0661\u0661\u0665-100000-abc123",
    ],
    ids=[
        "parent-prefix",
        "parent-suffix",
        "dotdot",
        "empty",
        "absolute",
        "upper-case",
        "short-date",
        "short-time",
        "short-suffix",
        "long-suffix",
        "underscores",
        "dash-in-suffix",
        "trailing-newline",
        "non-ascii-digits",
    ],
)
def test_run_layout_rejects_a_malformed_run_id(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(StorageError, match="run id"):
        RunLayout(tmp_path / "runs", run_id)
    assert files_under(tmp_path) == set()


def test_run_layout_accepts_the_run_id_format(tmp_path: Path) -> None:
    for run_id in (RUN_ID, "run-19991231-235959-000000", "run-20250115-100000-zzzzzz"):
        assert RunLayout(tmp_path / "runs", run_id).root.name == run_id


def test_relative_runs_dir_is_resolved_before_fencing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    layout = RunLayout(Path("a/../runs"), RUN_ID)
    assert layout.root == tmp_path.resolve() / "runs" / RUN_ID
    with pytest.raises(StorageError):
        layout.step_files("demo", "../../../escape", "writer", "claude")


# -- the whole run over a forged flow ------------------------------------------------------

NOTES = TeachingNotes(inputs=("in",), outputs=("out",), emphasizes=("e",), constraints=("c",))


def forged_step(step_id: str, agent: str = "writer") -> StepSpec:
    return StepSpec(
        id=step_id,
        agents=(agent,),
        role=f"Forged step {step_id}.",
        teaching_notes=NOTES,
        routing=RoutingSpec(),
        line=1,
    )


def forged_flow(path: Path, *steps: StepSpec, key: str = "demo") -> FlowSpec:
    return FlowSpec(
        key=key, title="Forged", description="Bypasses the loader.", steps=steps, path=path
    )


DEEP = "../../../../escape"  # from <runs>/<run>/demo/receipts/ this lands next to <runs>


@pytest.mark.parametrize(
    ("steps", "key", "what"),
    [
        ((forged_step(DEEP),), "demo", "step id"),
        ((forged_step("draft"), forged_step(DEEP)), "demo", "step id"),
        (
            (forged_step("draft"), forged_step("publish", agent="../../../../escape")),
            "demo",
            "agent key",
        ),
        ((forged_step("draft"),), "../../escape", "flow key"),
    ],
    ids=["first-step-id", "second-step-id", "agent-key", "flow-key"],
)
def test_orchestrator_run_over_a_forged_flow_writes_nothing_outside_runs_dir(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    steps: tuple[StepSpec, ...],
    key: str,
    what: str,
) -> None:
    work = tmp_path / "work"  # the working directory: relative writes would land here
    work.mkdir()
    monkeypatch.chdir(work)
    flows_dir = tmp_path / "flows"
    path = write_flow(flows_dir, flow_text())
    runs = tmp_path / "runs"
    forged = forged_flow(path, *steps, key=key)
    monkeypatch.setattr(FlowRegistry, "get", lambda self, flow_key: forged)
    before = files_under(tmp_path)

    outcome = Orchestrator(FlowRegistry(flows_dir), runs_dir=runs).run(RunSpec(flows=("demo",)))

    new = files_under(tmp_path) - before
    outside = sorted(str(p) for p in new if runs.resolve() not in p.resolve().parents)
    assert outside == [str(runs)]  # the runs dir itself, nothing else
    assert not any("escape" in p.name for p in files_under(tmp_path))
    assert not (tmp_path / "escape-writer.json").exists()
    assert not (tmp_path.parent / "escape-writer.json").exists()

    # What the run does: it does not raise; it ends failed, naming the refused id.
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("StorageError: refusing to build a path from " + what)
    events = read_event_log(outcome.path / "events.jsonl").events
    assert events[-1]["kind"] == "run_completed"
    assert [e["kind"] for e in events].count("run_completed") == 1
    assert events[-1]["payload"]["status"] == "failed"
    assert events[-1]["payload"]["error"] == outcome.error
    kinds = [e["kind"] for e in events]
    # Every step_start is closed by exactly one step_end or step_error
    # (docs/contract/events.md#where-events-may-stand).
    assert kinds.count("step_start") == kinds.count("step_end") + kinds.count("step_error")
    if what != "flow key":
        assert kinds[-2] == "step_error"
        assert events[-2]["payload"]["error"] == outcome.error
    # The run's own files are there and say failed.
    assert outcome.path.parent == runs.resolve()
    assert (outcome.path / "meta.json").is_file()
    assert (outcome.path / "spec.json").is_file()


@pytest.mark.parametrize("planted", ["demo", "demo/receipts", "demo/llm"])
def test_a_symlink_planted_in_a_run_dir_is_not_written_through(
    tmp_path: Path, layout: RunLayout, planted: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    link = layout.root / planted
    link.parent.mkdir(parents=True)
    link.symlink_to(outside, target_is_directory=True)
    with pytest.raises(StorageError, match=r"symlink|escapes the runs dir"):
        layout.step_files("demo", "draft", "writer", "claude")
    assert list(outside.iterdir()) == []
