"""Fault plans through the anthropic SDK's own HTTP transport: sdk, record and replay modes.

The SDK's real error paths run (its status errors, its timeout and connection errors, its
stream decoder); an injected fault never reaches the server, is never recorded, and uses
up no recorded call in a replay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.engines.faults import RETRYABLE_KINDS, FaultPlan
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.record import replace
from tests.fakes.anthropic_server import AnthropicServer
from tests.runtime.helpers import claude_choice, events_of, step_yaml, write_flow

FAKE_KEY = "sk-ant-test-faults-not-a-real-key"


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    flows = tmp_path / "flows"
    write_flow(flows, "demo", [step_yaml("draft"), step_yaml("review")])
    return flows


def _run(
    flows: Path,
    runs: Path,
    mode: str,
    plan: dict[str, Any] | None,
    *,
    server: AnthropicServer | None = None,
    cassettes: Cassettes | None = None,
    slept: list[float] | None = None,
) -> RunOutcome:
    engine = claude_choice(
        mode,
        api_key=FAKE_KEY if server is not None else None,
        base_url=server.url if server is not None else None,
        cassettes=cassettes,
        model="claude-haiku-4-5",
    )
    if plan is not None:
        engine = replace(engine, faults=FaultPlan.from_mapping(plan, source="plan"))
    return Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        deps=RunDeps(sleep=(slept if slept is not None else []).append, jitter=lambda: 0.0),
        engine=engine,
    ).run(RunSpec(flows=("demo",)))


def _receipt(outcome: RunOutcome, step: str) -> dict[str, Any]:
    return json.loads((outcome.path / "demo" / "receipts" / f"{step}-worker.json").read_text())


def _logs(outcome: RunOutcome, step: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in events_of(outcome) if e["kind"] == "log" and e["step_id"] == step]


@pytest.mark.parametrize("kind", sorted(RETRYABLE_KINDS))
def test_a_retryable_fault_runs_the_sdks_error_path_then_the_retry_reaches_the_server(
    flows: Path, tmp_path: Path, anthropic_server: AnthropicServer, kind: str
) -> None:
    fault: Any = {"kind": kind, "retry_after_ms": 0} if kind == "http_429" else kind
    slept: list[float] = []
    outcome = _run(
        flows, tmp_path / "runs", "sdk", {"review": [fault]}, server=anthropic_server, slept=slept
    )
    assert outcome.status == "succeeded", outcome.error
    receipt = _receipt(outcome, "review")
    assert (receipt["mode"], receipt["result_code"], receipt["attempt"]) == ("sdk", "ok", 2)
    injected, retry = _logs(outcome, "review")
    assert (injected["fault"], injected["served"], injected["result_code"]) == (
        kind,
        True,
        "retryable",
    )
    assert "retrying demo/review" in retry["message"]
    assert len(anthropic_server.requests) == 2  # the fault never reached the server
    if kind == "http_429":
        assert slept == [0.0]  # the 429's retry-after header, read by the engine


def test_the_sdk_error_messages_say_what_broke(
    flows: Path, tmp_path: Path, anthropic_server: AnthropicServer
) -> None:
    plan = {"draft": ["http_529", "stream_cut", "overloaded_mid_stream"]}
    outcome = _run(flows, tmp_path / "runs", "sdk", plan, server=anthropic_server)
    assert outcome.status == "failed"
    errors = [log["error"] for log in _logs(outcome, "draft") if "error" in log]
    assert "HTTP 529" in errors[0]
    assert "broke off mid-stream" in errors[1]
    receipt = _receipt(outcome, "draft")
    assert (receipt["result_code"], receipt["attempt"]) == ("retryable", 3)
    assert "stream broke off with an error (529)" in receipt["error"]
    assert anthropic_server.requests == []
    assert [e["kind"] for e in events_of(outcome)][-2:] == ["step_error", "run_completed"]


@pytest.mark.parametrize("stream", [True, False])
def test_a_malformed_handoff_and_an_empty_reply_get_what_the_sdk_engine_makes_of_them(
    flows: Path, tmp_path: Path, anthropic_server: AnthropicServer, stream: bool
) -> None:
    config_plan = {"draft": ["empty_reply"], "review": ["malformed_handoff"]}
    engine = claude_choice("sdk", api_key=FAKE_KEY, base_url=anthropic_server.url, stream=stream)
    outcome = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=replace(engine, faults=FaultPlan.from_mapping(config_plan, source="plan")),
    ).run(RunSpec(flows=("demo",)))
    assert outcome.status == "failed"
    draft, review = _receipt(outcome, "draft"), _receipt(outcome, "review")
    assert (draft["status"], draft["result_code"]) == ("succeeded", "ok")
    assert (review["result_code"], review["attempt"]) == ("fatal", 1)
    assert "handoff block is unusable" in review["error"]
    assert anthropic_server.requests == []


@pytest.fixture
def recorded(flows: Path, tmp_path: Path, anthropic_server: AnthropicServer) -> Path:
    """Cassettes of the flow, recorded against the fake server with no faults."""
    cassettes = Cassettes(tmp_path / "cas", name="cas", record=True, rerecord_command="re-record")
    outcome = _run(
        flows, tmp_path / "rec", "record", None, server=anthropic_server, cassettes=cassettes
    )
    assert outcome.status == "succeeded", outcome.error
    cassettes.commit()
    return tmp_path / "cas"


def _cassette_files(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.rglob("*.yaml"))}


def test_a_recording_with_faults_records_only_the_clean_calls(
    flows: Path, tmp_path: Path, anthropic_server: AnthropicServer, recorded: Path
) -> None:
    cassettes = Cassettes(tmp_path / "cas2", name="cas2", record=True, rerecord_command="x")
    plan = {"draft": [{"kind": "http_429", "retry_after_ms": 0}], "review": ["stream_cut"]}
    outcome = _run(
        flows, tmp_path / "rec2", "record", plan, server=anthropic_server, cassettes=cassettes
    )
    assert outcome.status == "succeeded", outcome.error
    cassettes.commit()
    assert _receipt(outcome, "review")["attempt"] == 2
    with_faults = _cassette_files(tmp_path / "cas2")
    assert with_faults.keys() == _cassette_files(recorded).keys()
    for text in with_faults.values():
        assert text.count("request:") == 1 and "injected by the fault plan" not in text


def test_a_replay_with_a_429_then_success_and_a_stream_cut_plays_every_recorded_call(
    flows: Path, tmp_path: Path, recorded: Path
) -> None:
    before = _cassette_files(recorded)
    cassettes = Cassettes(recorded, name="cas", record=False, rerecord_command="re-record")
    plan = {
        "draft": [{"kind": "http_429", "retry_after_ms": 0}, None],
        "review": ["stream_cut"],
    }
    slept: list[float] = []
    outcome = _run(flows, tmp_path / "replay", "replay", plan, cassettes=cassettes, slept=slept)
    assert outcome.status == "succeeded", outcome.error
    for step, fault in (("draft", "http_429"), ("review", "stream_cut")):
        receipt = _receipt(outcome, step)
        assert (receipt["result_code"], receipt["attempt"]) == ("ok", 2)
        assert receipt["cassette"].startswith("cas/demo/")
        injected, retry = _logs(outcome, step)
        assert injected["fault"] == fault and retry["attempt"] == 1
    assert slept[0] == 0.0
    assert cassettes.divergences == [] and cassettes.never_asked_for() == []
    assert cassettes.unplayed == []  # closed with the run: every recorded call played
    assert _cassette_files(recorded) == before  # nothing new recorded
    assert validate_run_dir(outcome.path) == []


def test_a_replay_whose_faults_outlast_the_attempts_fails_the_step(
    flows: Path, tmp_path: Path, recorded: Path
) -> None:
    cassettes = Cassettes(recorded, name="cas", record=False, rerecord_command="re-record")
    outcome = _run(
        flows, tmp_path / "replay", "replay", {"draft": ["timeout"] * 3}, cassettes=cassettes
    )
    assert outcome.status == "failed"
    receipt = _receipt(outcome, "draft")
    assert (receipt["status"], receipt["result_code"], receipt["attempt"]) == (
        "failed",
        "retryable",
        3,
    )
    assert cassettes.divergences == []


@pytest.mark.parametrize("kind", ["stream_cut", "overloaded_mid_stream", "timeout"])
def test_without_streaming_the_stream_kinds_are_retryable_too(
    flows: Path, tmp_path: Path, anthropic_server: AnthropicServer, kind: str
) -> None:
    engine = claude_choice("sdk", api_key=FAKE_KEY, base_url=anthropic_server.url, stream=False)
    outcome = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=replace(engine, faults=FaultPlan.from_mapping({"draft": [kind]}, source="plan")),
    ).run(RunSpec(flows=("demo",)))
    assert outcome.status == "succeeded", outcome.error
    receipt = _receipt(outcome, "draft")
    assert (receipt["result_code"], receipt["attempt"]) == ("ok", 2)
    assert _logs(outcome, "draft")[0]["result_code"] == "retryable"
    assert len(anthropic_server.requests) == 2


def test_a_resumed_run_keeps_a_plan_given_on_its_own(flows: Path, tmp_path: Path) -> None:
    from swarm_runtime.orchestrator.assembly import orchestrator_for_run

    plan = FaultPlan.from_mapping({"review": ["http_500", None]}, source="plan.yaml")
    outcome = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=EngineChoice(faults=plan),
    ).run(RunSpec(flows=("demo",)))
    assert outcome.status == "succeeded", outcome.error
    resumed = orchestrator_for_run(outcome.path, env={})
    assert resumed.engine.faults == plan
