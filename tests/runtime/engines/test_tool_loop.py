"""Steps that use tools on claude-step and openai-step (docs/tools.md#tools): the tool loop.

A local Messages / Chat Completions server asks for tool calls; the runtime runs the
step's Python tools, answers, and the model ends its turn. Every bad tool and bad model case
is answered to the model as a tool error and never crashes the run; a run is recorded and
replayed with no server, and a replay never runs a tool that is not pure again.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.engines.faults import FaultPlan
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.tools import ToolRegistry, tool
from swarm_runtime.tools.config import ToolSettings
from tests.fakes.anthropic_server import AnthropicServer
from tests.fakes.anthropic_server import Reply as AReply
from tests.fakes.openai_server import OpenAIServer
from tests.fakes.openai_server import Reply as OReply
from tests.runtime.helpers import events_of, receipt, step_yaml, write_flow

FAKE_ANTHROPIC_KEY = "sk-ant-fake-tool-key-0000"
FAKE_OPENAI_KEY = "sk-fake-openai-tool-key-0000"

WORLD: dict[str, Any] = {"calls": [], "written": None, "rate": 3}
"""What the tools below did: a test reads it to see whether a tool ran."""
HANG = threading.Event()


def lookup(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    WORLD["calls"].append(("lookup", order_id))
    return {"order": order_id, "status": "shipped"}


def append_line(path: str, line: str) -> str:
    """Append a line to a file (a side effect: never run again in replay)."""
    WORLD["calls"].append(("append_line", line))
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    return "appended"


@tool(pure=True)
def price(amount: int) -> int:
    """The price of an amount at today's rate (pure: replay runs it again)."""
    WORLD["calls"].append(("price", amount))
    return amount * int(WORLD["rate"])


def explode(reason: str) -> str:
    """A tool that raises."""
    WORLD["calls"].append(("explode", reason))
    raise RuntimeError(f"the warehouse is on fire: {reason}")


@tool(timeout_s=0.2)
def hang() -> str:
    """A tool that never answers (until the test lets it go)."""
    WORLD["calls"].append(("hang", None))
    HANG.wait()
    return "late"


def huge(size_mb: int) -> str:
    """A tool whose output is far too big."""
    return "x" * (size_mb << 20)


def not_json() -> Any:
    """A tool that returns something JSON cannot carry."""
    return object()


def leak() -> str:
    """A tool that returns a credential."""
    return f"the key is {FAKE_ANTHROPIC_KEY}"


TOOLS = (lookup, append_line, price, explode, hang, huge, not_json, leak)


@pytest.fixture(autouse=True)
def _fresh_world() -> Any:
    WORLD.update(calls=[], rate=3)
    HANG.clear()
    yield
    HANG.set()  # let an abandoned tool thread end


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    for function in TOOLS:
        registry.register(function)
    return registry


def _flows(tmp_path: Path, tools: list[str], extra: str = "") -> Path:
    flows = tmp_path / "flows"
    step = step_yaml("draft") + f"    tools: [{', '.join(tools)}]\n" + extra
    write_flow(flows, "demo", [step, step_yaml("review")])
    return flows


def _choice(
    engine: str,
    server: AnthropicServer | OpenAIServer | None,
    mode: str = "sdk",
    *,
    cassettes: Cassettes | None = None,
    plan: dict[str, Any] | None = None,
    settings: ToolSettings | None = None,
) -> EngineChoice:
    env: dict[str, str] = {}
    if engine == "claude-step" and server is not None:
        env = {"ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY, "ANTHROPIC_BASE_URL": server.url}
    elif server is not None:
        env = {"OPENAI_API_KEY": FAKE_OPENAI_KEY, "OPENAI_BASE_URL": server.url + "/v1"}
    return EngineChoice(
        engine_id=engine,
        mode=mode,
        cassettes=cassettes,
        env=env,
        credentials=_credentials(),
        faults=FaultPlan.from_mapping(plan, source="plan") if plan is not None else None,
        tools=settings or ToolSettings(),
        tool_registry=_registry(),
    )


def _credentials() -> Credentials:
    return Credentials.from_env(
        {"ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY, "OPENAI_API_KEY": FAKE_OPENAI_KEY}
    )


def _run(flows: Path, runs: Path, choice: EngineChoice) -> RunOutcome:
    return Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        deps=RunDeps(sleep=lambda _s: None, jitter=lambda: 0.0),
        engine=choice,
        refuse_values=_credentials(),
    ).run(RunSpec(flows=("demo",)))


def _calls(engine: str, *calls: tuple[str, Any]) -> list[Any]:
    """Scripted replies calling each tool in turn (then the default answer)."""
    if engine == "claude-step":
        return [AReply(tool_use={"name": name, "input": value}) for name, value in calls]
    return [OReply(tool_calls=[{"name": name, "arguments": value}]) for name, value in calls]


@pytest.fixture(params=["claude-step", "openai-step"])
def provider(request: pytest.FixtureRequest) -> Any:
    engine = request.param
    server: AnthropicServer | OpenAIServer = (
        AnthropicServer() if engine == "claude-step" else OpenAIServer()
    ).start()
    try:
        yield engine, server
    finally:
        server.stop()


def _tool_events(outcome: RunOutcome) -> list[tuple[str, dict[str, Any]]]:
    return [
        (e["kind"], e["payload"])
        for e in events_of(outcome)
        if e["kind"] in ("tool_start", "tool_end")
    ]


def _answers_sent(engine: str, server: Any) -> list[dict[str, Any]]:
    """The tool answers the runtime sent back to the model, in order."""
    found: list[dict[str, Any]] = []
    for request in server.requests:
        messages = request["body"].get("messages", [])
        if not messages:
            continue
        last = messages[-1]
        if engine == "claude-step" and isinstance(last.get("content"), list):
            found += [b for b in last["content"] if b.get("type") == "tool_result"]
        elif engine == "openai-step":
            tools = [m for m in messages if m.get("role") == "tool"]
            if tools:
                found.append(tools[-1])
    return found


def _said(answer: dict[str, Any]) -> str:
    return str(answer.get("content"))


def test_a_step_calls_a_python_tool_and_gets_its_answer(provider: Any, tmp_path: Path) -> None:
    engine, server = provider
    server.script(*_calls(engine, ("lookup", {"order_id": "A-17"})))
    outcome = _run(_flows(tmp_path, ["lookup"]), tmp_path / "runs", _choice(engine, server))
    assert outcome.status == "succeeded", outcome.error
    assert WORLD["calls"] == [("lookup", "A-17")]
    offered = server.requests[0]["body"]["tools"]
    assert json.dumps(offered).count("order_id") >= 1  # its schema, from the signature
    assert json.loads(_said(_answers_sent(engine, server)[0])) == {
        "order": "A-17",
        "status": "shipped",
    }
    assert _tool_events(outcome) == [
        ("tool_start", {"tool": "lookup", "input": {"order_id": "A-17"}}),
        (
            "tool_end",
            {"tool": "lookup", "success": True, "output": '{"order": "A-17", "status": "shipped"}'},
        ),
    ]
    kinds = [e["kind"] for e in events_of(outcome) if e["step_id"] == "draft"]
    assert kinds[:4] == ["step_start", "tool_start", "tool_end", "step_end"]
    got = receipt(outcome, "demo", "draft", "worker")
    # One receipt for the two calls of the step: their tokens summed.
    draft_usage = server.usage[:2]
    prompt_key = "input_tokens" if engine == "claude-step" else "prompt_tokens"
    assert got["tokens"]["prompt"] == sum(u[prompt_key] for u in draft_usage)
    assert got["tools_allowed"] == ["lookup"]
    assert got["timing"]["toolCallMs"] >= 0
    transcript = outcome.path / "demo" / got["transcript_path"]
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [line.get("type") or line["role"] for line in lines] == [
        "system",
        "user",
        "tool_use",
        "tool_result",
        "assistant",
    ]


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (("no_such_tool", {}), "no_such_tool"),  # a tool that does not exist
        (("append_line", {"path": "x", "line": "y"}), "append_line"),  # not offered by the step
        (("lookup", {"order": 17}), "order_id"),  # arguments that do not fit its schema
        (("explode", {"reason": "drill"}), "the warehouse is on fire: drill"),  # it raises
        (("hang", {}), "0.2 s"),  # past its deadline
        (("not_json", {}), "not JSON"),  # it returns what JSON cannot carry
    ],
)
def test_a_bad_tool_call_is_answered_as_an_error_and_the_step_goes_on(
    provider: Any, tmp_path: Path, call: tuple[str, Any], said: str
) -> None:
    engine, server = provider
    server.script(*_calls(engine, call))
    tools = ["lookup", "explode", "hang", "not_json"]
    outcome = _run(_flows(tmp_path, tools), tmp_path / "runs", _choice(engine, server))
    assert outcome.status == "succeeded", outcome.error
    answer = _answers_sent(engine, server)[0]
    assert said in _said(answer)
    if engine == "claude-step":
        assert answer["is_error"] is True
    assert ("append_line", "y") not in WORLD["calls"]  # a tool the step does not offer never runs
    ends = [p for kind, p in _tool_events(outcome) if kind == "tool_end"]
    assert [end["success"] for end in ends] == [False]


def test_output_past_the_budget_is_cut_visibly(provider: Any, tmp_path: Path) -> None:
    engine, server = provider
    server.script(*_calls(engine, ("huge", {"size_mb": 50})))
    outcome = _run(_flows(tmp_path, ["huge"]), tmp_path / "runs", _choice(engine, server))
    assert outcome.status == "succeeded", outcome.error
    sent = _said(_answers_sent(engine, server)[0])
    assert len(sent) < 60_000
    assert "[CONTEXT_TRUNCATED:" in sent and "chars of this tool output cut" in sent


def test_past_max_tool_calls_the_step_is_fatal_naming_the_limit(
    provider: Any, tmp_path: Path
) -> None:
    engine, server = provider
    server.script(*_calls(engine, *[("lookup", {"order_id": str(i)}) for i in range(3)]))
    flows = _flows(tmp_path, ["lookup"], "    max_tool_calls: 2\n")
    outcome = _run(flows, tmp_path / "runs", _choice(engine, server))
    assert outcome.status == "failed"
    assert "max_tool_calls=2" in (outcome.error or "")
    assert len(WORLD["calls"]) == 2
    assert events_of(outcome)[-1]["kind"] == "run_completed"


@pytest.mark.parametrize("kind", ["tool_error", "tool_timeout"])
def test_a_tool_fault_answers_the_call_without_running_the_tool(
    provider: Any, tmp_path: Path, kind: str
) -> None:
    engine, server = provider
    server.script(*_calls(engine, ("lookup", {"order_id": "A-1"})))
    plan = {"draft": [{"kind": kind, "tool": "lookup"}]}
    outcome = _run(
        _flows(tmp_path, ["lookup"]), tmp_path / "runs", _choice(engine, server, plan=plan)
    )
    assert outcome.status == "succeeded", outcome.error
    assert WORLD["calls"] == []
    assert "error" in _said(_answers_sent(engine, server)[0])
    logs = [e["payload"] for e in events_of(outcome) if e["kind"] == "log"]
    assert any(log.get("fault") == kind for log in logs)


def test_a_credential_a_tool_returns_is_scrubbed_from_every_file(
    provider: Any, tmp_path: Path
) -> None:
    engine, server = provider
    server.script(*_calls(engine, ("leak", {})))
    outcome = _run(_flows(tmp_path, ["leak"]), tmp_path / "runs", _choice(engine, server))
    assert outcome.status == "succeeded", outcome.error
    assert "[scrubbed" in _said(_answers_sent(engine, server)[0])
    for path in outcome.path.rglob("*"):
        if path.is_file():
            assert FAKE_ANTHROPIC_KEY not in path.read_text(encoding="utf-8", errors="replace")


def test_record_then_replay_never_runs_a_side_effect_again(provider: Any, tmp_path: Path) -> None:
    engine, server = provider
    target = tmp_path / "written.txt"
    server.script(
        *_calls(
            engine,
            ("append_line", {"path": str(target), "line": "hello"}),
            ("price", {"amount": 2}),
        )
    )
    flows = _flows(tmp_path, ["append_line", "price"])
    cassette_dir = tmp_path / "cassettes"

    def cassettes(record: bool) -> Cassettes:
        return Cassettes(cassette_dir, name="t", record=record, rerecord_command="record it")

    recorded = cassettes(True)
    outcome = _run(flows, tmp_path / "rec", _choice(engine, server, "record", cassettes=recorded))
    recorded.commit()
    assert outcome.status == "succeeded", outcome.error
    assert target.read_text() == "hello\n"
    assert WORLD["calls"] == [("append_line", "hello"), ("price", 2)]
    text = (cassette_dir / "demo" / "draft-worker-0.yaml").read_text()
    assert text.count("swarm-tool://local/") == 2  # the step's calls, in one cassette

    target.unlink()
    WORLD["calls"].clear()
    replayed = _run(
        flows, tmp_path / "rep", _choice(engine, None, "replay", cassettes=cassettes(False))
    )
    assert replayed.status == "succeeded", replayed.error
    assert not target.exists()  # the write was not repeated
    assert WORLD["calls"] == [("price", 2)]  # the pure tool ran again
    assert _tool_events(replayed) == _tool_events(outcome)

    WORLD["rate"] = 5  # the pure tool now answers otherwise: a divergence naming it
    diverged = _run(
        flows, tmp_path / "div", _choice(engine, None, "replay", cassettes=cassettes(False))
    )
    assert diverged.status == "failed"
    assert "pure tool price" in (diverged.error or "")
    assert '"amount": 2' in (diverged.error or "")
    assert not target.exists()


def test_the_stub_runs_the_real_tool_a_scenario_names_unless_it_gives_output(
    tmp_path: Path,
) -> None:
    from swarm_runtime.engines.scenario import Scenario

    scenario = Scenario.from_mapping(
        {
            "draft": {
                "tools": [
                    {"tool": "lookup", "input": {"order_id": "S-1"}},
                    {"tool": "lookup", "input": {"order_id": "S-2"}, "output": "canned"},
                ]
            }
        }
    )
    choice = _choice("claude-step", None, "stub")
    outcome = _run(
        _flows(tmp_path, ["lookup"]),
        tmp_path / "runs",
        EngineChoice(**{**_fields(choice), "scenario": scenario}),
    )
    assert outcome.status == "succeeded", outcome.error
    assert WORLD["calls"] == [("lookup", "S-1")]  # the scripted one did not run
    ends = [p["output"] for kind, p in _tool_events(outcome) if kind == "tool_end"]
    assert ends == ['{"order": "S-1", "status": "shipped"}', "canned"]


def test_a_stub_tool_fault_answers_without_running_the_tool(tmp_path: Path) -> None:
    from swarm_runtime.engines.scenario import Scenario

    scenario = Scenario.from_mapping(
        {"draft": {"tools": [{"tool": "lookup", "input": {"order_id": "S-1"}}]}}
    )
    choice = _choice("claude-step", None, "stub", plan={"draft": ["tool_timeout"]})
    outcome = _run(
        _flows(tmp_path, ["lookup"]),
        tmp_path / "runs",
        EngineChoice(**{**_fields(choice), "scenario": scenario}),
    )
    assert outcome.status == "succeeded", outcome.error
    assert WORLD["calls"] == []
    ends = [p for kind, p in _tool_events(outcome) if kind == "tool_end"]
    assert ends[0]["success"] is False and "deadline" in ends[0]["output"]


def _fields(choice: EngineChoice) -> dict[str, Any]:
    return {name: getattr(choice, name) for name in choice.__struct_fields__}


def test_a_flows_max_tool_calls_holds_for_its_steps(tmp_path: Path) -> None:
    server = AnthropicServer().start()
    try:
        server.script(*_calls("claude-step", *[("lookup", {"order_id": str(i)}) for i in range(2)]))
        flows = tmp_path / "flows"
        step = step_yaml("draft") + "    tools: [lookup]\n"
        write_flow(flows, "demo", [step, step_yaml("review")], head="max_tool_calls: 1\n")
        outcome = _run(flows, tmp_path / "runs", _choice("claude-step", server))
    finally:
        server.stop()
    assert outcome.status == "failed"
    assert "max_tool_calls=1" in (outcome.error or "")


def test_a_replayed_call_keeps_no_deadline_timer_and_a_live_one_does(
    provider: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.engines import deadline

    made: list[float] = []
    real = deadline.CallDeadline.__init__

    def counted(self: Any, seconds: float) -> None:
        made.append(seconds)
        real(self, seconds)

    monkeypatch.setattr(deadline.CallDeadline, "__init__", counted)
    engine, server = provider
    flows = _flows(tmp_path, ["lookup"])
    cassette_dir = tmp_path / "cassettes"
    recorded = Cassettes(cassette_dir, name="t", record=True, rerecord_command="record it")
    server.script(*_calls(engine, ("lookup", {"order_id": "A-1"})))
    outcome = _run(flows, tmp_path / "rec", _choice(engine, server, "record", cassettes=recorded))
    recorded.commit()
    assert outcome.status == "succeeded", outcome.error
    assert len(made) == 3  # each call that reaches a server runs under its deadline
    made.clear()
    replay = Cassettes(cassette_dir, name="t", record=False, rerecord_command="record it")
    replayed = _run(flows, tmp_path / "rep", _choice(engine, None, "replay", cassettes=replay))
    assert replayed.status == "succeeded", replayed.error
    assert made == []  # a replay reaches no socket: no timer thread per call
