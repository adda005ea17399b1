"""claude-step in sdk mode, through the real anthropic SDK, against a local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.plugins import process_plugins
from tests.conftest import SHIPPED_FLOWS
from tests.fakes.anthropic_server import AnthropicServer, Reply, error_body
from tests.runtime.helpers import claude_choice, events_of, kinds, step_yaml, write_flow

FAKE_KEY = "sk-ant-test-0000-canary-not-a-real-key"


def _run(
    server: AnthropicServer,
    runs: Path,
    flows: tuple[str, ...] = ("stepwise-demo",),
    flows_dir: Path = SHIPPED_FLOWS,
    slept: list[float] | None = None,
    **config: Any,
) -> RunOutcome:
    config.setdefault("model", "claude-haiku-4-5")
    return Orchestrator(
        FlowRegistry(flows_dir),
        runs_dir=runs,
        deps=RunDeps(sleep=(slept if slept is not None else []).append, jitter=lambda: 1.0),
        engine=claude_choice("sdk", api_key=FAKE_KEY, base_url=server.url, **config),
    ).run(RunSpec(flows=flows))


@pytest.fixture
def one_step(tmp_path: Path) -> Path:
    flows = tmp_path / "flows"
    write_flow(flows, "one", [step_yaml("ask")])
    return flows


def test_a_flow_runs_through_the_sdk(anthropic_server: AnthropicServer, tmp_path: Path) -> None:
    outcome = _run(anthropic_server, tmp_path / "runs", model="claude-haiku-4-5")
    assert outcome.status == "succeeded", outcome.error
    assert validate_run_dir(outcome.path) == []
    receipts = [json.loads(p.read_text()) for p in outcome.path.glob("*/receipts/*.json")]
    assert {r["mode"] for r in receipts} == {"sdk"}
    assert {r["provider"] for r in receipts} == {"anthropic_compat"}
    assert {r["model"] for r in receipts} == {"claude-haiku-4-5"}
    first = anthropic_server.requests[0]
    assert first["path"] == "/v1/messages"
    sent = first["headers"].get("x-api-key") or first["headers"].get("authorization", "")
    assert FAKE_KEY in sent  # the key goes to the server, and (below) nowhere else
    assert first["body"]["system"].startswith("You are")
    reply_usage = receipts[0]["tokens"]
    assert reply_usage["total"] == reply_usage["prompt"] + reply_usage["completion"] > 0
    cost = receipts[0]["cost"]
    assert cost["estimatedCostUsd"] == pytest.approx(
        (reply_usage["prompt"] * 1 + reply_usage["completion"] * 5) / 1e6
    )
    # The local model declares what the prompt asks for: a failing verdict on a first
    # draft, then the success value; routing read both from the replies' handoff blocks.
    reasons = [
        e["payload"]["reason"]
        for e in events_of(outcome)
        if e["kind"] == "route_decision" and e["payload"]["routing_source"] == "deterministic"
    ]
    assert reasons == ["loop_iteration:1", "success_value:VERIFIED"]


def test_unknown_model_has_no_cost_estimate(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path
) -> None:
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step, model="my-own-model")
    receipt = json.loads(next(outcome.path.glob("one/receipts/*.json")).read_text())
    assert receipt["cost"]["estimatedCostUsd"] is None


def test_429_with_retry_after_is_retried_after_that_long(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path
) -> None:
    anthropic_server.script(
        Reply(
            status=429,
            headers={"retry-after": "2"},
            body=error_body("rate_limit_error", "slow down"),
        )
    )
    slept: list[float] = []
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step, slept=slept)
    assert outcome.status == "succeeded"
    assert slept == [2.0]
    assert len(anthropic_server.requests) == 2
    log = next(e for e in events_of(outcome) if e["kind"] == "log")
    assert "HTTP 429" in log["payload"]["error"] and "slow down" in log["payload"]["error"]


@pytest.mark.parametrize(
    "fault",
    [
        Reply(status=500, body=error_body("api_error", "boom")),
        Reply(status=529, body=error_body("overloaded_error", "busy")),
        Reply(drop=True),
    ],
    ids=["500", "529", "dropped-connection"],
)
def test_server_errors_and_dropped_connections_are_retried_with_backoff(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path, fault: Reply
) -> None:
    anthropic_server.script(fault, fault)
    slept: list[float] = []
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step, slept=slept)
    assert outcome.status == "succeeded", outcome.error
    assert slept == [0.5, 1.0]  # 0.5 s x 2^n, full jitter drawn as 1.0
    assert len(anthropic_server.requests) == 3


@pytest.mark.parametrize(
    ("status", "kind"), [(400, "invalid_request_error"), (401, "authentication_error")]
)
def test_client_errors_are_fatal_at_once(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path, status: int, kind: str
) -> None:
    anthropic_server.script(Reply(status=status, body=error_body(kind, "no")))
    slept: list[float] = []
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step, slept=slept)
    assert outcome.status == "failed"
    assert slept == [] and len(anthropic_server.requests) == 1
    assert f"Anthropic API answered HTTP {status}: no" in (outcome.error or "")
    assert kinds(outcome)[-2:] == ["step_error", "run_completed"]
    assert validate_run_dir(outcome.path) == []


def test_a_malformed_body_is_a_clear_step_error(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path
) -> None:
    anthropic_server.script(Reply(raw=b'{"id": "msg", "content": "not a list"'))
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step)
    assert outcome.status == "failed"
    error = events_of(outcome)[-2]["payload"]["error"]
    assert error.startswith("Anthropic API reply")
    assert kinds(outcome)[-2:] == ["step_error", "run_completed"]


def test_the_key_never_reaches_a_run_file(
    anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    outcome = _run(anthropic_server, tmp_path / "runs")
    for path in outcome.path.rglob("*"):
        if path.is_file():
            assert FAKE_KEY not in path.read_text(encoding="utf-8"), path


def test_sdk_mode_without_key_or_base_url_is_a_usage_error(tmp_path: Path) -> None:
    orchestrator = Orchestrator(
        FlowRegistry(SHIPPED_FLOWS), runs_dir=tmp_path / "runs", engine=EngineChoice(mode="sdk")
    )
    with pytest.raises(ConfigError, match="sdk mode needs ANTHROPIC_API_KEY"):
        orchestrator.run(RunSpec(flows=("stepwise-demo",)))
    assert not (tmp_path / "runs").exists()


def test_a_cost_budget_fails_the_step(anthropic_server: AnthropicServer, tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "dear", [step_yaml("ask", "budget: {cost_usd: 0.0000001}")])
    outcome = _run(anthropic_server, tmp_path / "runs", ("dear",), flows)
    assert outcome.status == "failed"
    assert "budget_exceeded: step budget of 'dear/ask': cost_usd 0.0" in (outcome.error or "")
    assert "> limit 0.0" in (outcome.error or "")


def test_a_reply_echoing_a_credential_is_refused_before_writing(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path
) -> None:
    anthropic_server.script(Reply(text=f"your key is {FAKE_KEY}"))
    outcome = Orchestrator(
        FlowRegistry(one_step),
        runs_dir=tmp_path / "runs",
        engine=claude_choice(
            "sdk", api_key=FAKE_KEY, base_url=anthropic_server.url, model="claude-haiku-4-5"
        ),
        refuse_values=(FAKE_KEY,),
    ).run(RunSpec(flows=("one",)))
    assert outcome.status == "failed"
    assert "refusing to write" in (outcome.error or "") and "ask-worker-claude.jsonl" in (
        outcome.error or ""
    )
    for path in outcome.path.rglob("*"):
        if path.is_file():
            assert FAKE_KEY not in path.read_text(), path


def test_an_error_body_echoing_the_key_never_reaches_the_event_log(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path
) -> None:
    # A 500 whose body echoes the key: the retry's log event would carry it.
    echo = Reply(status=500, body=error_body("api_error", f"bad key {FAKE_KEY}"))
    anthropic_server.script(echo, echo, echo)
    outcome = Orchestrator(
        FlowRegistry(one_step),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=claude_choice("sdk", api_key=FAKE_KEY, base_url=anthropic_server.url),
        refuse_values=(FAKE_KEY,),
    ).run(RunSpec(flows=("one",)))
    assert outcome.status == "failed"
    assert "refusing to write a log event to" in (outcome.error or "")
    assert FAKE_KEY not in (outcome.error or "")
    for path in outcome.path.rglob("*"):
        if path.is_file():
            assert FAKE_KEY not in path.read_text(), path
    assert validate_run_dir(outcome.path) == []  # it still ends with run_completed


def test_a_recording_leaves_the_http_transport_as_it_found_it(
    anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    """Cassettes open for a whole run must all be closed, in order, or later calls break."""
    import httpx2

    from swarm_runtime.engines.cassette import Cassettes

    original = httpx2.HTTPTransport.handle_request
    cassettes = Cassettes(
        tmp_path / "cassettes", name="demo", record=True, rerecord_command="record it again"
    )
    outcome = Orchestrator(
        FlowRegistry(SHIPPED_FLOWS),
        runs_dir=tmp_path / "runs",
        engine=claude_choice(
            "record", api_key=FAKE_KEY, base_url=anthropic_server.url, cassettes=cassettes
        ),
    ).run(RunSpec(flows=("stepwise-demo",), initiator="pytest"))
    assert outcome.status == "succeeded", outcome.error
    assert len(anthropic_server.requests) > 2  # several cassettes were open at once
    assert httpx2.HTTPTransport.handle_request is original


def test_a_replay_leaves_the_process_free_to_talk_http(
    anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    """A replayed run patches nothing: the test's own HTTP works while the run goes on."""
    import httpx2

    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.engines.registry import default_registry
    from tests.conftest import REPO

    shipped = REPO / "golden" / "cassettes" / "tests" / "contract" / "test_contract"
    cassettes = Cassettes(
        shipped / "test_flow_honours_the_contract-stepwise-demo",
        name="stepwise-demo",
        record=False,
        rerecord_command="tests/record_cassettes.py",
    )
    statuses: list[int] = []

    class Talk:
        def swarm_step_result(self) -> None:  # after every replayed step
            reply = httpx2.post(f"{anthropic_server.url}/v1/messages", json={"model": "m"})
            statuses.append(reply.status_code)

    outcome = Orchestrator(
        FlowRegistry(SHIPPED_FLOWS),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(engines=default_registry(), plugins=process_plugins().with_listeners(Talk())),
        engine=claude_choice("replay", cassettes=cassettes),
    ).run(RunSpec(flows=("stepwise-demo",), initiator="pytest"))
    assert outcome.status == "succeeded", outcome.error
    assert statuses and set(statuses) == {200}
    assert len(anthropic_server.requests) == len(statuses)  # the test's calls, not the run's
    assert cassettes.unplayed == [] and cassettes.divergences == []


def _only_receipt(outcome: RunOutcome) -> dict[str, Any]:
    (path,) = outcome.path.glob("one/receipts/ask-worker.json")
    value: dict[str, Any] = json.loads(path.read_text())
    return value


def test_a_streamed_reply_gives_what_a_plain_call_gives(
    anthropic_server: AnthropicServer, one_step: Path, tmp_path: Path
) -> None:
    text = "Looked at it.\n\n```handoff\nstatus: DONE\nnotes: fine\n```"
    anthropic_server.script(Reply(text=text), Reply(text=text))
    streamed = _run(anthropic_server, tmp_path / "a", ("one",), one_step)
    plain = _run(anthropic_server, tmp_path / "b", ("one",), one_step, stream=False)
    assert [r["body"].get("stream") for r in anthropic_server.requests] == [True, None]
    assert streamed.status == plain.status == "succeeded"
    a, b = _only_receipt(streamed), _only_receipt(plain)
    assert a["handoff"] == b["handoff"] == {"status": "DONE", "notes": "fine"}
    assert a["tokens"] == b["tokens"] and a["tokens"]["completion"] > 0
    lines = [
        json.loads(line)
        for outcome in (streamed, plain)
        for line in next(outcome.path.glob("one/llm/*.jsonl")).read_text().splitlines()
    ]
    assert lines[2]["content"] == lines[5]["content"] == text  # the assistant line


def test_an_overloaded_error_mid_stream_is_retried(
    anthropic_server: AnthropicServer, one_step: Path, tmp_path: Path
) -> None:
    anthropic_server.script(
        Reply(stream_error=error_body("overloaded_error", "Overloaded")), Reply()
    )
    slept: list[float] = []
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step, slept=slept)
    assert outcome.status == "succeeded", outcome.error
    assert len(anthropic_server.requests) == 2 and len(slept) == 1
    retry = next(e for e in events_of(outcome) if e["kind"] == "log")
    assert retry["payload"]["error"] == (
        "Anthropic API stream broke off with an error (529): Overloaded"
    )
    assert _only_receipt(outcome)["attempt"] == 2


def test_an_invalid_request_error_mid_stream_fails_at_once(
    anthropic_server: AnthropicServer, one_step: Path, tmp_path: Path
) -> None:
    anthropic_server.script(Reply(stream_error=error_body("invalid_request_error", "bad")))
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step)
    assert outcome.status == "failed"
    assert len(anthropic_server.requests) == 1
    assert _only_receipt(outcome)["result_code"] == "fatal"


def test_a_damaged_cassette_fails_the_step_naming_it(tmp_path: Path) -> None:
    import shutil

    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.engines.registry import default_registry
    from tests.conftest import REPO

    shipped = REPO / "golden" / "cassettes" / "tests" / "contract" / "test_contract"
    copy = tmp_path / "cas"
    shutil.copytree(shipped / "test_flow_honours_the_contract-stepwise-demo", copy)
    damaged = copy / "stepwise-demo" / "read_request-demo-intake-0.yaml"
    damaged.write_bytes(b"interactions: [\xff\xfe")
    cassettes = Cassettes(copy, name="cas", record=False, rerecord_command="re-record")
    outcome = Orchestrator(
        FlowRegistry(SHIPPED_FLOWS),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(engines=default_registry()),
        engine=claude_choice("replay", cassettes=cassettes),
    ).run(RunSpec(flows=("stepwise-demo",), initiator="pytest"))
    assert outcome.status == "failed"
    assert f"cassette {damaged} cannot be read" in (outcome.error or "")
    assert validate_run_dir(outcome.path) == []


@pytest.mark.parametrize("where", ["step", "runtime.yaml"])
def test_a_stream_kept_alive_by_pings_ends_at_the_step_deadline_and_is_retried(
    anthropic_server: AnthropicServer, tmp_path: Path, where: str
) -> None:
    """A server that pings for ever: each attempt is cut off at the deadline, retryable."""
    flows = tmp_path / "flows"
    step = step_yaml("ask") + ("    timeout_s: 0.5\n" if where == "step" else "")
    write_flow(flows, "one", [step])
    forever = Reply(pings_every_s=0.05)
    anthropic_server.script(forever, forever, Reply())
    slept: list[float] = []
    config = {"timeout_s": 0.5} if where == "runtime.yaml" else {}
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), flows, slept, **config)
    assert outcome.status == "succeeded", outcome.error  # the third attempt answers
    logs = [e for e in events_of(outcome) if e["kind"] == "log"]
    assert len(logs) == 2
    messages = [e["payload"]["error"] for e in logs]
    assert all("did not finish within 0.5 s and was cut off" in m for m in messages), messages
    assert len(slept) == 2  # backoff between attempts, through the injected sleep
    assert validate_run_dir(outcome.path) == []


@pytest.mark.parametrize(
    ("headers", "asked"),
    [({"retry-after": "86400"}, "86400 s"), ({"retry-after-ms": str(10**12)}, "1000000000 s")],
    ids=["a-day", "31-years"],
)
def test_a_retry_after_past_the_cap_fails_the_step_at_once_without_waiting(
    anthropic_server: AnthropicServer,
    tmp_path: Path,
    one_step: Path,
    headers: dict[str, str],
    asked: str,
) -> None:
    anthropic_server.script(
        Reply(status=429, headers=headers, body=error_body("rate_limit_error", "come back later"))
    )
    slept: list[float] = []
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step, slept=slept)
    assert outcome.status == "failed"
    assert slept == [] and len(anthropic_server.requests) == 1
    error = events_of(outcome)[-2]["payload"]["error"]
    assert kinds(outcome)[-2:] == ["step_error", "run_completed"]
    assert f"the server asked to wait {asked}" in error
    assert "max_retry_after_s = 30 s" in error and "come back later" in error
    receipt = json.loads(next(outcome.path.glob("one/receipts/*.json")).read_text())
    assert (receipt["result_code"], receipt["attempt"], receipt["max_attempts"]) == (
        "retryable",
        1,
        3,
    )
    assert validate_run_dir(outcome.path) == []


@pytest.mark.parametrize("value", ["nan", "-5", "inf"])
def test_a_retry_after_that_is_no_length_falls_back_to_the_backoff_or_the_cap(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path, value: str
) -> None:
    anthropic_server.script(
        Reply(status=429, headers={"retry-after": value}, body=error_body("rate_limit_error", "x"))
    )
    slept: list[float] = []
    outcome = _run(anthropic_server, tmp_path / "runs", ("one",), one_step, slept=slept)
    if value == "inf":
        assert outcome.status == "failed" and slept == []
        assert "longer than max_retry_after_s" in (outcome.error or "")
    else:
        assert outcome.status == "succeeded", outcome.error
        assert slept == [0.5]  # the backoff's first wait, full jitter drawn as 1.0


def test_runtime_yaml_raises_the_retry_after_cap(
    anthropic_server: AnthropicServer, tmp_path: Path, one_step: Path
) -> None:
    from swarm_runtime.config import resolve_settings
    from swarm_runtime.orchestrator.assembly import build_orchestrator

    config = tmp_path / "runtime.yaml"
    config.write_text("max_retry_after_s: 86400\n")
    env = {"ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": anthropic_server.url}
    settings = resolve_settings(env=env, mode="sdk", config_path=config, cwd=tmp_path)
    anthropic_server.script(
        Reply(
            status=429, headers={"retry-after": "86400"}, body=error_body("rate_limit_error", "x")
        )
    )
    slept: list[float] = []
    outcome = build_orchestrator(
        settings,
        FlowRegistry(one_step),
        env=env,
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=slept.append, jitter=lambda: 1.0),
    ).run(RunSpec(flows=("one",)))
    assert outcome.status == "succeeded", outcome.error
    assert slept == [86400.0] and len(anthropic_server.requests) == 2
