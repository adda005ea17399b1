"""The CLI stream readers over real outputs of Claude Code 2.1.x and Gemini CLI 0.61.

Every expected value below was read off the sample files by hand (see cli_samples/).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarm_runtime.documents.run_events import ToolEnd, ToolStart
from swarm_runtime.engines.process import StreamBroken
from swarm_runtime.engines.streams import ClaudeStream, GeminiStream, StreamReport, status_in

SAMPLES = Path(__file__).parent / "cli_samples"


def _read(reader: StreamReport, name: str) -> StreamReport:
    for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines():
        if line.strip():
            reader.feed(line)
    return reader


def _claude(name: str) -> ClaudeStream:
    return _read(ClaudeStream(clock=lambda: "T"), name)  # type: ignore[return-value]


def _gemini(name: str) -> GeminiStream:
    return _read(GeminiStream(clock=lambda: "T"), name)  # type: ignore[return-value]


def _kinds(report: StreamReport) -> list[str]:
    return [line.get("role") or line["type"] for line in report.transcript]


def test_claude_text_reply() -> None:
    report = _claude("claude_stream_text.jsonl")
    assert report.text == "hi from fake-anthropic"
    assert report.transcript == [
        {"timestamp": "T", "role": "assistant", "content": "hi from fake-anthropic"}
    ]
    assert report.events == []
    assert (report.tokens.prompt, report.tokens.completion) == (3217, 13)
    assert report.cost_usd == pytest.approx(0.01641)
    assert report.model == "claude-opus-4-8"
    assert report.error is None


@pytest.mark.parametrize(
    ("name", "prompt", "completion", "cost", "version"),
    [
        ("claude_stream_tool.jsonl", 6522, 50, 0.03386, "2.1.197"),
        ("claude_stream_tool_cli2.1.330.jsonl", 8958, 50, 0.036832, "2.1.330"),
    ],
)
def test_claude_tool_turn_gives_tool_events_in_order_and_result_usage(
    name: str, prompt: int, completion: int, cost: float, version: str
) -> None:
    report = _claude(name)
    # Tokens are the result line's (summed over both turns: 3219 + 3303 = 6522 for 2.1.197),
    # never the assistant lines' stream-start counts added up.
    assert (report.tokens.prompt, report.tokens.completion) == (prompt, completion)
    assert report.cost_usd == pytest.approx(cost)
    assert [e.payload for e in report.events] == [
        ToolStart(
            tool="Bash", input={"command": "echo fake-tool-ok", "description": "Print a marker"}
        ),
        ToolEnd(tool="Bash", success=True, output="fake-tool-ok"),
    ]
    assert _kinds(report) == ["tool_use", "tool_result", "assistant"]
    assert report.text == "tool said: fake-tool-ok"
    assert report.error is None


def test_claude_multiblock_message_keeps_every_block_in_order() -> None:
    report = _claude("claude_stream_multiblock.jsonl")
    assert report.texts == ["Let me run it.", "Done: multi-ok"]
    assert report.text == "Let me run it.\n\nDone: multi-ok"
    assert _kinds(report) == ["assistant", "tool_use", "tool_result", "assistant"]
    assert report.events[1].payload == ToolEnd(tool="Bash", success=True, output="multi-ok")
    assert (report.tokens.prompt, report.tokens.completion) == (6526, 54)


def test_claude_partial_messages_are_not_counted_twice() -> None:
    report = _claude("claude_stream_partial.jsonl")
    assert report.texts == ["hi from fake-anthropic"]  # stream_event deltas are skipped
    assert (report.tokens.prompt, report.tokens.completion) == (6701, 13)
    assert report.model == "claude-haiku-4-5"


def test_claude_bare_mode() -> None:
    report = _claude("claude_stream_bare.jsonl")
    assert report.text == "hi from fake-anthropic"
    assert (report.tokens.prompt, report.tokens.completion, report.cost_usd) == (193, 13, 0.000774)


def test_claude_refused_tool_is_a_failed_tool_end() -> None:
    report = _claude("claude_stream_bash_blocked.jsonl")
    end = report.events[1]
    assert end.kind == "tool_end" and end.payload["success"] is False
    assert "was blocked" in end.payload["output"]
    assert report.error is None  # the step itself succeeded
    assert (report.tokens.prompt, report.tokens.completion) == (6585, 71)


def test_claude_401_is_fatal_with_the_status() -> None:
    report = _claude("claude_stream_err401.jsonl")
    assert report.error == (
        "Claude Code CLI: the API answered HTTP 401: Failed to authenticate. API Error: 401 fake 401"
    )
    assert report.error_code == "fatal"
    assert report.cost_usd == 0


@pytest.mark.parametrize(
    ("name", "code", "error_part", "tokens"),
    [
        ("claude_result.json", None, None, (3216, 13)),
        ("claude_result_err529.json", "retryable", "HTTP 529: API Error: 529 fake 529", (0, 0)),
        (  # Claude Code 2.1.197 after a stream cut: an API error with no HTTP status
            "claude_result_conn_lost.json",
            "retryable",
            "the API call broke off: API Error: Connection to the API was lost (ECONNRESET)",
            (0, 0),
        ),
        (
            "claude_result_max_turns.json",
            "fatal",
            "(error_max_turns): Reached maximum number of turns (1)",
            (3222, 37),
        ),
    ],
)
def test_claude_result_objects(
    name: str, code: str | None, error_part: str | None, tokens: tuple[int, int]
) -> None:
    line = json.dumps(json.loads((SAMPLES / name).read_text(encoding="utf-8")))
    report = ClaudeStream()
    report.feed(line)
    assert (report.tokens.prompt, report.tokens.completion) == tokens
    if code is None:
        assert report.error is None and report.text == "hi from fake-anthropic"
    else:
        assert report.error_code == code
        assert error_part in (report.error or "")


def test_gemini_text_reply_joins_deltas_and_names_the_model_used() -> None:
    report = _gemini("gemini_stream.jsonl")
    assert report.text == "hi from fake-gemini"
    assert _kinds(report) == ["assistant"]  # the user echo is not the reply
    assert (report.tokens.prompt, report.tokens.completion) == (297, 26)
    assert report.model == "gemini-3.8-flash"  # "auto" routed to it; the router is listed first
    assert report.cost_usd is None and report.error is None


def test_gemini_tool_call() -> None:
    report = _gemini("gemini_stream_tool.jsonl")
    assert [(e.kind, e.payload["tool"]) for e in report.events] == [
        ("tool_start", "run_shell_command"),
        ("tool_end", "run_shell_command"),
    ]
    assert report.events[0].payload["input"] == {
        "command": "echo fake-tool-ok",
        "description": "marker",
    }
    assert report.events[1].payload == ToolEnd(
        tool="run_shell_command", success=True, output="fake-tool-ok"
    )
    assert _kinds(report) == ["tool_use", "tool_result", "assistant"]
    assert report.text.startswith("tool said:") and report.text.endswith("PGID: 24116")
    assert (report.tokens.prompt, report.tokens.completion) == (416, 56)


def test_gemini_400_is_fatal_with_the_message() -> None:
    report = _gemini("gemini_stream_err400.jsonl")
    assert report.error_code == "fatal"
    assert report.error is not None and "fake 400" in report.error
    assert (report.tokens.prompt, report.tokens.completion) == (0, 0)


def test_gemini_error_on_stderr_names_its_status() -> None:
    error = json.loads((SAMPLES / "gemini_json_err400_stderr.json").read_text(encoding="utf-8"))
    assert status_in(error["error"]["message"]) == 400
    assert status_in("[API Error: 529 overloaded]") == 529
    assert status_in("no number here") is None


@pytest.mark.parametrize("name", ["gemini_result.json", "gemini_json_err400_stderr.json"])
def test_json_output_format_is_refused_as_not_a_stream(name: str) -> None:
    first = (SAMPLES / name).read_text(encoding="utf-8").splitlines()[0]
    with pytest.raises(StreamBroken, match=r"line 1 of the gemini output is not a JSON object"):
        GeminiStream().feed(first)


@pytest.mark.parametrize("line", ["not json", "[1, 2]", '{"no": "type"}', "{" * 5000])
def test_malformed_lines_are_named(line: str) -> None:
    reader = ClaudeStream()
    reader.feed('{"type": "system", "subtype": "init", "model": "m"}')
    with pytest.raises(StreamBroken, match=r"line 2 of the claude output"):
        reader.feed(line)


def test_unknown_line_types_are_skipped() -> None:
    reader = ClaudeStream()
    reader.feed('{"type": "rate_limit_event", "info": {}}')
    reader.feed('{"type": "system", "subtype": "hook_response"}')
    assert reader.result is None and reader.transcript == []
