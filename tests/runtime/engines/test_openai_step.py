"""openai-step through the official openai SDK and a local Chat Completions server.

Every error of the table in docs/contract/steps.md#result-codes ends as it says; the fault plans
that pass for claude-step pass for openai-step; a flow mixing both engines records against both
servers and replays with none; a changed teaching note fails the replay naming the part that
changed.
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
from tests.fakes.anthropic_server import AnthropicServer
from tests.fakes.openai_server import OpenAIServer, Reply, context_length_exceeded, error_reply
from tests.runtime.helpers import events_of, step_yaml, write_flow

pytest.importorskip("openai")  # the [openai] extra: the test extra brings it

FAKE_KEY = "sk-fake-openai-key-for-tests-0000"
FAKE_ANTHROPIC_KEY = "sk-ant-fake-key-for-tests-0000"


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    flows = tmp_path / "flows"
    write_flow(flows, "demo", [step_yaml("draft"), step_yaml("review")])
    return flows


def _choice(
    server: OpenAIServer | None,
    mode: str = "sdk",
    *,
    cassettes: Cassettes | None = None,
    plan: dict[str, Any] | None = None,
    **section: Any,
) -> EngineChoice:
    env = {"OPENAI_API_KEY": FAKE_KEY} if server is not None else {}
    if server is not None:
        env["OPENAI_BASE_URL"] = server.url + "/v1"
    return EngineChoice(
        engine_id="openai-step",
        mode=mode,
        cassettes=cassettes,
        env=env,
        sections={"openai": {"model": "gpt-4o-mini", **section}},
        faults=FaultPlan.from_mapping(plan, source="plan") if plan is not None else None,
        credentials=_credentials(),
    )


def _credentials() -> Any:
    from swarm_runtime.credentials import Credentials

    return Credentials.from_env(
        {"OPENAI_API_KEY": FAKE_KEY, "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY}
    )


def _run(
    flows: Path, runs: Path, choice: EngineChoice, slept: list[float] | None = None
) -> RunOutcome:
    return Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        deps=RunDeps(sleep=(slept if slept is not None else []).append, jitter=lambda: 0.0),
        engine=choice,
        refuse_values=_credentials(),
    ).run(RunSpec(flows=("demo",)))


def _receipt(outcome: RunOutcome, step: str, flow: str = "demo") -> dict[str, Any]:
    return json.loads((outcome.path / flow / "receipts" / f"{step}-worker.json").read_text())


def test_a_flow_runs_through_the_openai_sdk_streamed_with_usage_from_the_last_chunk(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer
) -> None:
    outcome = _run(flows, tmp_path / "runs", _choice(openai_server))
    assert outcome.status == "succeeded", outcome.error
    assert validate_run_dir(outcome.path) == []
    receipt = _receipt(outcome, "draft")
    assert (receipt["engine"], receipt["mode"], receipt["provider"]) == (
        "openai-step",
        "sdk",
        "openai_compat",
    )
    usage = openai_server.usage[0]
    assert receipt["tokens"]["prompt"] == usage["prompt_tokens"] > 0
    assert receipt["tokens"]["completion"] == usage["completion_tokens"] > 0
    assert receipt["cost"]["estimatedCostUsd"] > 0  # gpt-4o-mini is in the price table
    assert list((outcome.path / "demo" / "llm").glob("draft-worker-openai.jsonl"))
    request = openai_server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["stream"] is True
    assert request["body"]["stream_options"] == {"include_usage": True}
    assert [m["role"] for m in request["body"]["messages"]] == ["system", "user"]
    assert request["headers"]["authorization"] == f"Bearer {FAKE_KEY}"


def test_an_unknown_model_has_no_cost_and_a_plain_call_works_too(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer
) -> None:
    choice = _choice(openai_server, model="my-local-llama", stream=False)
    outcome = _run(flows, tmp_path / "runs", choice)
    assert outcome.status == "succeeded", outcome.error
    receipt = _receipt(outcome, "review")
    assert receipt["model"] == "my-local-llama"
    assert receipt["cost"]["estimatedCostUsd"] is None
    assert "stream" not in openai_server.requests[0]["body"]


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (error_reply(401, "invalid_request_error", code="invalid_api_key"), "fatal"),
        (error_reply(403, "permission_error"), "fatal"),
        (error_reply(404, "invalid_request_error", code="model_not_found"), "fatal"),
        (error_reply(400, "invalid_request_error"), "fatal"),
        (context_length_exceeded(), "fatal"),
        (error_reply(500, "server_error"), "retryable"),
        (error_reply(503, "server_error"), "retryable"),
        (error_reply(429, "requests", code="rate_limit_exceeded"), "retryable"),
        (Reply(drop=True), "retryable"),
        (Reply(cut_after=1), "retryable"),
    ],
    ids=["401", "403", "404", "400", "context_length", "500", "503", "429", "reset", "cut"],
)
def test_each_error_ends_as_the_result_code_table_says(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer, reply: Reply, code: str
) -> None:
    openai_server.script(reply, reply, reply)
    slept: list[float] = []
    outcome = _run(flows, tmp_path / "runs", _choice(openai_server), slept)
    assert outcome.status == "failed"
    receipt = _receipt(outcome, "draft")
    assert receipt["result_code"] == code
    assert receipt["attempt"] == (3 if code == "retryable" else 1)
    assert len(openai_server.requests) == receipt["attempt"]
    if code == "retryable":
        assert len(slept) == 2  # the backoff between three attempts
    assert FAKE_KEY not in json.dumps(receipt)
    assert [e["kind"] for e in events_of(outcome)][-2:] == ["step_error", "run_completed"]


def test_context_length_exceeded_is_fatal_whatever_its_status(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer
) -> None:
    reply = error_reply(500, "invalid_request_error", code="context_length_exceeded")
    openai_server.script(reply)
    outcome = _run(flows, tmp_path / "runs", _choice(openai_server))
    receipt = _receipt(outcome, "draft")
    assert (receipt["result_code"], receipt["attempt"]) == ("fatal", 1)
    assert "HTTP 500" in receipt["error"]


# Without retry-after: the backoff, 0.5 s × 2^0, spread by a jitter of 0 to its half.
@pytest.mark.parametrize(("header", "waited"), [({"retry-after": "2"}, 2.0), ({}, 0.25)])
def test_a_429_waits_what_retry_after_says_else_the_backoff(
    flows: Path,
    tmp_path: Path,
    openai_server: OpenAIServer,
    header: dict[str, str],
    waited: float,
) -> None:
    openai_server.script(error_reply(429, "requests", code="rate_limit_exceeded", headers=header))
    slept: list[float] = []
    outcome = _run(flows, tmp_path / "runs", _choice(openai_server), slept)
    assert outcome.status == "succeeded", outcome.error
    assert slept == [waited]
    assert _receipt(outcome, "draft")["attempt"] == 2


def test_a_stream_that_stalls_ends_at_the_deadline_and_is_retried(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer
) -> None:
    openai_server.script(Reply(pings_every_s=0.05))
    outcome = _run(flows, tmp_path / "runs", _choice(openai_server, timeout_s=0.5))
    assert outcome.status == "succeeded", outcome.error
    logs = [e["payload"] for e in events_of(outcome) if e["kind"] == "log"]
    assert "did not finish within 0.5 s" in logs[0]["error"]
    assert "engines.openai.timeout_s" in logs[0]["error"]
    assert _receipt(outcome, "draft")["attempt"] == 2


@pytest.mark.parametrize("kind", sorted(RETRYABLE_KINDS))
def test_the_fault_plans_of_claude_step_pass_for_openai_step(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer, kind: str
) -> None:
    fault: Any = {"kind": kind, "retry_after_ms": 0} if kind == "http_429" else kind
    slept: list[float] = []
    choice = _choice(openai_server, plan={"review": [fault]})
    outcome = _run(flows, tmp_path / "runs", choice, slept)
    assert outcome.status == "succeeded", outcome.error
    receipt = _receipt(outcome, "review")
    assert (receipt["mode"], receipt["result_code"], receipt["attempt"]) == ("sdk", "ok", 2)
    injected = next(e["payload"] for e in events_of(outcome) if e["kind"] == "log")
    assert (injected["fault"], injected["served"], injected["result_code"]) == (
        kind,
        True,
        "retryable",
    )
    assert len(openai_server.requests) == 2  # the fault never reached the server
    if kind == "http_429":
        assert slept == [0.0]


@pytest.mark.parametrize("stream", [True, False])
def test_a_malformed_handoff_and_an_empty_reply_come_in_the_apis_own_shape(
    tmp_path: Path, openai_server: OpenAIServer, stream: bool
) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "demo", [step_yaml("draft"), step_yaml("review")])
    plan = {"draft": ["empty_reply"], "review": ["malformed_handoff"]}
    outcome = _run(flows, tmp_path / "runs", _choice(openai_server, plan=plan, stream=stream))
    assert outcome.status == "failed"
    assert _receipt(outcome, "draft")["status"] == "succeeded"
    review = _receipt(outcome, "review")
    assert review["result_code"] == "fatal" and "handoff block is unusable" in review["error"]


def _mixed(tmp_path: Path, note: str = "Be brief.") -> Path:
    flows = tmp_path / "flows"
    write_flow(
        flows,
        "mixed",
        [
            step_yaml("draft") + "    engine: openai-step\n",
            step_yaml("review").replace("emphasis of review", note),
        ],
    )
    return flows


def _mixed_choice(
    mode: str,
    cassettes: Cassettes,
    openai_server: OpenAIServer | None,
    anthropic_server: AnthropicServer | None,
) -> EngineChoice:
    env: dict[str, str] = {}
    if openai_server is not None:
        env.update(OPENAI_API_KEY=FAKE_KEY, OPENAI_BASE_URL=openai_server.url + "/v1")
    if anthropic_server is not None:
        env.update(ANTHROPIC_API_KEY=FAKE_ANTHROPIC_KEY, ANTHROPIC_BASE_URL=anthropic_server.url)
    return EngineChoice(
        mode=mode,
        cassettes=cassettes,
        env=env,
        sections={"openai": {"model": "gpt-4o-mini"}, "claude": {"model": "claude-haiku-4-5"}},
        credentials=_credentials(),
    )


def _mixed_run(flows: Path, runs: Path, choice: EngineChoice) -> RunOutcome:
    return Orchestrator(
        FlowRegistry(flows), runs_dir=runs, engine=choice, refuse_values=_credentials()
    ).run(RunSpec(flows=("mixed",)))


def test_a_flow_mixing_both_engines_records_against_both_servers_and_replays_with_none(
    tmp_path: Path, openai_server: OpenAIServer, anthropic_server: AnthropicServer
) -> None:
    import http.client

    import httpx2

    patched = (http.client.HTTPConnection, httpx2.HTTPTransport.handle_request)
    openai_server.echo_key_header = "x-echoed-key"  # a careless server echoes the key
    flows = _mixed(tmp_path)
    directory = tmp_path / "cassettes"
    recording = Cassettes(directory, name="mixed", record=True, rerecord_command="record it")
    choice = _mixed_choice("record", recording, openai_server, anthropic_server)
    recorded = _mixed_run(flows, tmp_path / "rec", choice)
    assert recorded.status == "succeeded", recorded.error
    # Each engine's recorder kept cassettes open: all are undone, the process talks HTTP again.
    assert (http.client.HTTPConnection, httpx2.HTTPTransport.handle_request) == patched
    recording.commit()
    files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*.yaml"))
    assert files == ["mixed/draft-worker-0.yaml", "mixed/review-worker-0.yaml"]
    draft = (directory / "mixed" / "draft-worker-0.yaml").read_text()
    review = (directory / "mixed" / "review-worker-0.yaml").read_text()
    assert draft.startswith("engine: openai-step\n") and "/chat/completions" in draft
    assert review.startswith("engine: claude-step\n") and "/v1/messages" in review
    for path in [*directory.rglob("*"), *recorded.path.rglob("*")]:
        if path.is_file():
            text = path.read_text(errors="replace")
            assert FAKE_KEY not in text and FAKE_ANTHROPIC_KEY not in text, path
    receipts = {s: _receipt(recorded, s, "mixed") for s in ("draft", "review")}
    assert receipts["draft"]["engine"] == "openai-step"
    assert receipts["review"]["engine"] == "claude-step"

    served = len(openai_server.requests), len(anthropic_server.requests)
    replaying = Cassettes(directory, name="mixed", record=False, rerecord_command="record it")
    replayed = _mixed_run(flows, tmp_path / "rep", _mixed_choice("replay", replaying, None, None))
    assert replayed.status == "succeeded", replayed.error
    assert (len(openai_server.requests), len(anthropic_server.requests)) == served
    for step in ("draft", "review"):
        again = _receipt(replayed, step, "mixed")
        assert again["request_sha256"] == receipts[step]["request_sha256"]
        assert again["tokens"] == receipts[step]["tokens"]
    assert replaying.unplayed == [] and replaying.never_asked_for() == []

    edited = _mixed(tmp_path / "edited", note="Be thorough.")
    missed = Cassettes(directory, name="mixed", record=False, rerecord_command="record it")
    failed = _mixed_run(edited, tmp_path / "miss", _mixed_choice("replay", missed, None, None))
    assert failed.status == "failed"
    assert _receipt(failed, "draft", "mixed")["status"] == "succeeded"  # untouched step replays
    (divergence,) = missed.divergences
    assert "mixed/review" in divergence and "prompt" in divergence
    assert "Be thorough." in divergence and "Re-record with: record it" in divergence
    # Re-recording records both engines' calls: the hint names what each needs.
    assert "ANTHROPIC_API_KEY set" in divergence and "OPENAI_API_KEY set" in divergence


def test_a_stubbed_fault_of_openai_step_words_its_error_as_the_openai_api(
    flows: Path, tmp_path: Path
) -> None:
    choice = EngineChoice(
        engine_id="openai-step",
        faults=FaultPlan.from_mapping(
            {"draft": ["http_500", "http_500", "http_500"]}, source="plan"
        ),
    )
    outcome = _run(flows, tmp_path / "runs", choice)
    receipt = _receipt(outcome, "draft")
    assert (receipt["engine"], receipt["result_code"]) == ("openai-step", "retryable")
    assert receipt["model"] == "openai-stub"  # the stub under openai-step says whose it is
    assert "OpenAI API answered HTTP 500" in receipt["error"]


def test_a_models_price_in_engines_openai_prices_gives_it_a_cost(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer
) -> None:
    prices = {"my-local-llama": {"input": 1.0, "output": 2.0}}
    choice = _choice(openai_server, model="my-local-llama", prices=prices)
    outcome = _run(flows, tmp_path / "runs", choice)
    receipt = _receipt(outcome, "draft")
    tokens = receipt["tokens"]
    expected = (tokens["prompt"] * 1.0 + tokens["completion"] * 2.0) / 1_000_000
    assert receipt["cost"]["estimatedCostUsd"] == pytest.approx(expected)


def test_a_bad_engines_openai_setting_is_refused_naming_it(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer
) -> None:
    from swarm_runtime.errors import ConfigError

    with pytest.raises(ConfigError, match=r"engines\.openai\.max_tokens must be >= 1, got 0"):
        _run(flows, tmp_path / "runs", _choice(openai_server, max_tokens=0))
    assert not (tmp_path / "runs").exists()  # refused before the run began
    assert openai_server.requests == []


def test_a_connection_error_the_sdk_lets_through_unwrapped_is_retried(
    flows: Path, tmp_path: Path, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some SDK releases let the HTTP library's own error through: still the network's."""
    import httpcore2

    from swarm_runtime.engines.openai_step import OpenAIEngine

    sent = OpenAIEngine.send
    calls: list[int] = []

    def send_once_broken(self: OpenAIEngine, ctx: Any, *more: Any) -> Any:
        calls.append(ctx.attempt)
        if len(calls) == 1:
            raise httpcore2.RemoteProtocolError("Server disconnected without sending a response.")
        return sent(self, ctx, *more)

    monkeypatch.setattr(OpenAIEngine, "send", send_once_broken)
    outcome = _run(flows, tmp_path / "runs", _choice(openai_server))
    assert outcome.status == "succeeded", outcome.error
    assert _receipt(outcome, "draft")["attempt"] == 2


NAVIGATOR_FLOW = """\
key: review
title: "Review"
description: "Write, critique, ship."
steps:
  - id: write_code
    agents: [author]
    role: "Write the code."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
  - id: critique_code
    agents: [critic]
    role: "Critique the code."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
    routing:
      kind: navigator
      default: ship
      candidates:
        - {id: ship_it, to: ship}
        - {id: again, to: write_code}
  - id: ship
    agents: [shipper]
    role: "Ship it."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
"""


def test_a_navigators_move_is_asked_of_openai_step_like_any_call(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "review.yaml").write_text(NAVIGATOR_FLOW)
    outcome = Orchestrator(
        FlowRegistry(flows), runs_dir=tmp_path / "runs", engine=_choice(openai_server)
    ).run(RunSpec(flows=("review",)))
    assert outcome.status == "succeeded", outcome.error
    asked = [r["body"]["messages"][1]["content"] for r in openai_server.requests]
    assert len(asked) == 4  # three steps and the navigator's one call after critique_code
    moves = [e["payload"] for e in events_of(outcome) if e["kind"] == "route_decision"]
    chosen = [m["reason"] for m in moves if str(m["reason"]).startswith("navigator:")]
    assert chosen == ["navigator:ship_it"]  # the move the navigator's reply declared


def test_a_cost_budget_counts_openai_step_calls(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "demo", [step_yaml("ask", "budget: {cost_usd: 0.0000001}")])
    outcome = _run(flows, tmp_path / "runs", _choice(openai_server))
    assert outcome.status == "failed"
    assert "budget_exceeded: step budget of 'demo/ask': cost_usd" in (outcome.error or "")
