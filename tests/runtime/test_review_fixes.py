"""Bad input that once crashed or misbehaved: each case here failed before its fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.errors import ConfigError, FlowDefinitionError, ScenarioError, SwarmUsageError
from swarm_runtime.flow.loader import load_flow
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.runner import Orchestrator, RunSpec
from swarm_runtime.storage.store import EventLog, read_event_log
from tests.conftest import SHIPPED_FLOWS, CliResult
from tests.runtime.helpers import events_of, kinds, run_flows, step_yaml, write_flow


def test_a_back_edge_hits_the_step_limit_and_the_run_still_completes(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "circle", [step_yaml("one"), step_yaml("two", "routing: {next: one}")])
    outcome = run_flows(flows, tmp_path / "runs", ("circle",), max_steps=7)
    assert outcome.status == "failed"
    assert "limit of 7 step executions" in (outcome.error or "")
    assert outcome.summary["total_steps_executed"] == 7
    assert kinds(outcome)[-1] == "run_completed"
    assert validate_run_dir(outcome.path) == []


def test_default_step_limit_scales_with_the_flows(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "circle", [step_yaml("one"), step_yaml("two", "routing: {next: one}")])
    outcome = run_flows(flows, tmp_path / "runs", ("circle",))
    assert outcome.summary["total_steps_executed"] == 100  # max(100, 10 per step)


def _flow_text(extra: str) -> str:
    return (
        "key: f\ntitle: T\ndescription: D\nsteps:\n"
        "  - id: a\n    agents: [w]\n    role: R\n"
        "    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}\n"
        + extra
    )


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        (
            "    routing: {kind: microloop, loop_target: a, loop_condition_field: s, "
            "loop_success_values: [OK], max_iterations: 0x10}\n",
            None,
            None,
        ),
        ("    budget: {tokens: 1:30}\n", None, None),
        ("    budget: {cost_usd: .nan}\n", "budget.cost_usd", "finite number"),
        ("    budget: {cost_usd: .inf}\n", "budget.cost_usd", "finite number"),
        ("    routing: {kind: branch, branches: {[1]: a}}\n", "routing.branches", "plain values"),
        (
            "    routing: {kind: branch, branches: {GO: a, go: a}}\n",
            "routing.branches.go",
            "repeats 'GO'",
        ),
    ],
)
def test_yaml_numbers_and_branch_keys(
    tmp_path: Path, extra: str, field: str | None, message: str | None
) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(_flow_text(extra))
    if message is None:
        load_flow(path)  # YAML 1.1 numbers (hex, sexagesimal) are numbers, not a crash
        return
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    assert info.value.field == field and message in str(info.value)
    assert info.value.line == 9


def test_flow_key_syntax_is_checked_at_load(tmp_path: Path) -> None:
    path = tmp_path / "UPPER.yaml"
    path.write_text(_flow_text("").replace("key: f", "key: UPPER"))
    with pytest.raises(FlowDefinitionError, match="flow key 'UPPER' is invalid") as info:
        load_flow(path)
    assert (info.value.line, info.value.field) == (1, "key")


def test_a_failing_observer_does_not_break_the_run(tmp_path: Path) -> None:
    def broken(event: dict[str, Any]) -> None:
        if event["kind"] == "step_start":
            raise BrokenPipeError("reader went away")

    outcome = Orchestrator(
        FlowRegistry(SHIPPED_FLOWS), runs_dir=tmp_path / "runs", observer=broken
    ).run(RunSpec(flows=("stepwise-demo",)))
    assert outcome.status == "succeeded"
    assert validate_run_dir(outcome.path) == []
    assert outcome.warnings == ("progress display stopped: BrokenPipeError: reader went away",)


def test_scenario_values_json_cannot_carry_are_refused() -> None:
    import datetime

    from swarm_runtime.engines.scenario import Scenario

    with pytest.raises(ScenarioError, match=r"s\.tools: holds a value JSON cannot carry"):
        Scenario.from_mapping({"s": {"tools": [{"tool": "t", "input": datetime.date(2024, 1, 1)}]}})
    with pytest.raises(ScenarioError, match=r"s\.tokens"):
        Scenario.from_mapping({"s": {"tokens": {"prompt": True}}})


def test_scripted_text_with_its_own_handoff_is_used_as_is(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    branch = "routing: {kind: branch, branch_field: decision, branches: {GO: two, STOP: three}}"
    write_flow(
        flows,
        "b",
        [step_yaml("one", branch), step_yaml("two", "routing: {next: three}"), step_yaml("three")],
    )
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("b",),
        scenario={"one": {"text": "done\n```handoff\ndecision: STOP\n```"}},
    )
    started = [e["step_id"] for e in events_of(outcome) if e["kind"] == "step_start"]
    assert started == ["one", "three"]


def test_event_log_write_errors_become_storage_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.errors import StorageError

    log = EventLog(tmp_path / "events.jsonl")
    real = log._handle
    assert real is not None
    real.close()

    class Full:
        def write(self, _text: str) -> int:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            pass

    monkeypatch.setattr(log, "_handle", Full())
    with pytest.raises(StorageError, match=r"could not append to .*No space left on device"):
        log.append({"seq": 1})


def test_validate_survives_foreign_shapes_and_reports_everything(tmp_path: Path) -> None:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path / "runs", ("stepwise-demo",))
    path = outcome.path / "events.jsonl"
    lines = path.read_text().splitlines()
    odd = json.loads(lines[4])
    odd["payload"] = [1, 2]
    odd["run_id"] = ["x"]
    lines[4] = json.dumps(odd)
    lines[6] = "{not json"
    path.write_text("\n".join(lines[:-1]) + "\n")  # and no run_completed
    found = [str(v) for v in validate_run_dir(outcome.path)]
    assert any(v.startswith("events.jsonl:5: ") for v in found), found
    assert (
        "events.jsonl:7: not valid JSON (Expecting property name enclosed in double quotes)"
        in found
    )
    assert any("no run_completed" in v for v in found), found


def test_a_whole_last_line_without_newline_is_an_event_not_torn(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"seq": 1}\n{"seq": 2}')
    result = read_event_log(path)
    assert [e["seq"] for e in result.events] == [1, 2] and result.torn is None


def test_config_mistakes_are_errors(tmp_path: Path) -> None:
    registry = FlowRegistry(SHIPPED_FLOWS)
    with pytest.raises(ConfigError, match="engine_strategy: flow 'signal' has no step 'nope'"):
        Orchestrator(
            registry, runs_dir=tmp_path / "r", engine_strategy={"signal": {"nope": "claude-step"}}
        ).run(RunSpec(flows=("signal",)))
    with pytest.raises(SwarmUsageError, match="no flow 'signl'"):
        Orchestrator(
            registry, runs_dir=tmp_path / "r", engine_strategy={"signl": {"x": "claude-step"}}
        ).run(RunSpec(flows=("signal",)))
    with pytest.raises(SwarmUsageError, match="listed more than once"):
        Orchestrator(registry, runs_dir=tmp_path / "r").run(RunSpec(flows=("signal", "signal")))
    assert not (tmp_path / "r").exists()


def test_cli_usage_errors_exit_2(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    result = cli("run", "stepwise-demo", "--runs-dir", str(tmp_path / "afile"))
    assert result.code == 2 and "exists and is not a directory" in result.err
    result = cli("run", "stepwise-demo", "--mode", "sdk")  # no key in this environment
    assert result.code == 2 and "sdk mode needs ANTHROPIC_API_KEY" in result.err
    result = cli("run", "stepwise-demo", "--mode", "cli")
    assert result.code == 2 and "no 'cli' mode" in result.err
    config = tmp_path / "rt.yaml"
    config.write_text("runs_dir: [a, b]\n")
    result = cli("run", "stepwise-demo", "--config", str(config))
    assert result.code == 2 and "'runs_dir' must be a path" in result.err
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("run", "--flows-dir", str(empty))
    assert result.code == 2 and str(empty) in result.err


def test_flows_list_shows_a_broken_flow_instead_of_failing(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    (tmp_path / "flows" / "broken.yaml").write_text("key: broken\n")
    result = cli("flows", "list")
    assert result.code == 0
    assert "INVALID:" in result.out and "signal" in result.out
