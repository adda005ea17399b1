"""A replay reads a recorded Messages response without the SDK: the same Message, or none.

Every recorded Messages API response in the repository's cassettes, and streams of the
shapes the API sends (text in pieces, tool calls, several blocks, pings, usage in the
last delta), read by :func:`message_of` give what the anthropic SDK assembles from them:
the same text and tool-call blocks, usage and model. What it does not read (an error
event, an HTTP error, a kind of block it does not know, a stream cut short) gives None,
so that the SDK replays it, with its own errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.engines.recorded_messages import message_of
from swarm_runtime.engines.replay import load_recording
from tests.conftest import REPO

pytest.importorskip("anthropic")


def _sdk_message(recorded: dict[str, Any], streamed: bool) -> Any:
    """What the anthropic SDK makes of ``recorded`` (its client answered from it)."""
    import anthropic
    import httpx2

    body = recorded["body"]["string"]
    content = body if isinstance(body, bytes) else str(body).encode()
    kind = "text/event-stream" if streamed else "application/json"

    def answer(request: Any) -> Any:
        return httpx2.Response(
            recorded["status"]["code"], headers={"content-type": kind}, content=content
        )

    client = anthropic.Anthropic(
        api_key="sk-ant-fake-test-key",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
    )
    request: dict[str, Any] = {
        "model": "m",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "hi"}],
    }
    if not streamed:
        return client.messages.create(**request)
    with client.messages.stream(**request) as events:
        return events.get_final_message()


def _seen(message: Any) -> dict[str, Any]:
    """What the engine reads of a Message: its text and tool-call blocks, usage and model."""
    blocks = []
    for block in message.content:
        if block.type == "text":
            blocks.append(("text", block.text))
        elif block.type == "tool_use":
            blocks.append(("tool_use", block.id, block.name, block.input))
    usage = message.usage
    return {
        "blocks": blocks,
        "tokens": (usage.input_tokens, usage.output_tokens),
        "model": message.model,
    }


def _recorded_messages() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(REPO.glob("**/cassettes/**/*.yaml")):
        if ".venv" in path.parts:
            continue
        requests, responses = load_recording(path)
        for index, (request, response) in enumerate(zip(requests, responses, strict=True)):
            if request.uri.endswith("/v1/messages"):
                found.append((f"{path.relative_to(REPO)}#{index}", response))
    return found


RECORDED = _recorded_messages()


def test_the_repository_holds_recorded_messages_to_check() -> None:
    assert len(RECORDED) >= 100


@pytest.mark.parametrize(("where", "recorded"), RECORDED, ids=[w for w, _ in RECORDED])
def test_a_recorded_response_reads_as_the_sdk_reads_it(
    where: str, recorded: dict[str, Any]
) -> None:
    streamed = "event:" in str(recorded["body"]["string"])
    ours = message_of(recorded, streamed=streamed)
    assert ours is not None, where
    assert _seen(ours) == _seen(_sdk_message(recorded, streamed))


def _sse(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def _start(usage: dict[str, int] | None = None) -> dict[str, Any]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def _end(usage: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage},
        {"type": "message_stop"},
    ]


TEXT_AND_TOOLS = _sse(
    _start(),
    {"type": "ping"},
    _block_start(0, {"type": "text", "text": ""}),
    _delta(0, {"type": "text_delta", "text": "Looking it up, "}),
    _delta(0, {"type": "text_delta", "text": "ünïcode too."}),
    _stop(0),
    _block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}),
    _delta(1, {"type": "input_json_delta", "partial_json": '{"order": "A-'}),
    _delta(1, {"type": "input_json_delta", "partial_json": '17", "deep": {"n": [1, 2]}}'}),
    _stop(1),
    _block_start(2, {"type": "tool_use", "id": "toolu_2", "name": "fs__read", "input": {}}),
    _stop(2),
    *_end({"output_tokens": 40, "input_tokens": 15}),
)


@pytest.mark.parametrize(
    "body",
    [
        TEXT_AND_TOOLS,
        _sse(_start(), *_end({"output_tokens": 3})),  # no content at all
        _sse(
            _start({"input_tokens": 5, "output_tokens": 0}),
            _block_start(0, {"type": "text", "text": "whole at once"}),
            _stop(0),
            *_end({"output_tokens": 9}),
        ),
    ],
    ids=["text-and-tool-calls", "empty", "text-in-its-start"],
)
def test_a_stream_of_each_shape_reads_as_the_sdk_reads_it(body: str) -> None:
    recorded = {"status": {"code": 200}, "body": {"string": body}}
    ours = message_of(recorded, streamed=True)
    assert ours is not None
    assert _seen(ours) == _seen(_sdk_message(recorded, True))


def test_a_plain_json_message_reads_as_the_sdk_reads_it() -> None:
    message = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": "Sure."},
            {"type": "tool_use", "id": "toolu_3", "name": "lookup", "input": {"q": 1}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 7, "output_tokens": 8},
    }
    recorded = {"status": {"code": 200}, "body": {"string": json.dumps(message)}}
    ours = message_of(recorded, streamed=False)
    assert ours is not None
    assert _seen(ours) == _seen(_sdk_message(recorded, False))


@pytest.mark.parametrize(
    ("code", "body"),
    [
        (529, json.dumps({"type": "error", "error": {"type": "overloaded_error"}})),
        (200, _sse(_start(), {"type": "error", "error": {"type": "overloaded_error"}})),
        (200, _sse(_start(), _block_start(0, {"type": "text", "text": ""}))),  # cut short
        (
            200,
            _sse(
                _start(),
                _block_start(0, {"type": "thinking", "thinking": ""}),
                _stop(0),
                *_end({"output_tokens": 1}),
            ),
        ),
        (200, "event: message_start\ndata: {not json\n\n"),
        (200, _sse(*_end({"output_tokens": 1}))),  # no message_start
        (200, "event: message_start\ndata: " + "[" * 100_000 + "]" * 100_000 + "\n\n"),
    ],
    ids=[
        "http-error",
        "error-event",
        "cut-short",
        "thinking-block",
        "not-json",
        "no-start",
        "nested-100000-deep",
    ],
)
def test_what_it_does_not_read_is_left_to_the_sdk(code: int, body: str) -> None:
    assert message_of({"status": {"code": code}, "body": {"string": body}}, streamed=True) is None


def test_a_replay_read_from_its_cassettes_never_imports_the_sdk(tmp_path: Path) -> None:
    """Importing the anthropic SDK costs more than a replayed run's steps: a replay whose
    calls are all plain successes runs without it (in a process of its own, as a user's)."""
    import subprocess
    import sys

    code = f"""
import sys
from pathlib import Path
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator

flows = FlowRegistry(Path({str(REPO / "flows")!r}))
cassettes = Cassettes(
    Path({str(REPO / "golden/cassettes/tests/golden/test_goldens/test_sdlc_golden")!r}),
    name="sdlc", record=False, rerecord_command="tests/record_cassettes.py",
)
outcome = Orchestrator(
    flows, runs_dir=Path({str(tmp_path)!r}),
    engine=EngineChoice(mode="replay", cassettes=cassettes),
).run(RunSpec(flows=tuple(flows.order())))
print(outcome.status, outcome.summary["total_steps_executed"], "anthropic" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr
    status, steps, imported = done.stdout.split()
    assert (status, imported) == ("succeeded", "False")
    assert int(steps) >= 60
