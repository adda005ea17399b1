"""What a recorded CLI request is matched on: the step, not the CLI's run-to-run noise."""

from __future__ import annotations

import json
from pathlib import Path

from swarm_runtime.engines.cli_match import placeholders, recorded_via, request_key


def _claude_body(user: str, *, session: str, date: str, version: str) -> str:
    return json.dumps(
        {
            "model": "claude-sonnet-4-6",
            "system": [
                {"type": "text", "text": f"x-anthropic-billing-header: cc_version={version};"},
                {"type": "text", "text": "You are the demo coder."},
            ],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"<system-reminder>\nToday's date is {date}.\n"},
                        {"type": "text", "text": user},
                    ],
                }
            ],
            "metadata": {"user_id": json.dumps({"session_id": session})},
            "tools": [{"name": f"Tool{version}"}],
            "max_tokens": 32000,
        }
    )


def test_session_ids_dates_versions_and_tool_definitions_do_not_count() -> None:
    one = _claude_body(
        "## Request",
        session="4750fe4f-1635-4e6c-aa17-3005952b4875",
        date="2026-11-23",
        version="2.1.197.d7d",
    )
    two = _claude_body(
        "## Request",
        session="8209922a-96fc-4568-934f-500df56e9a4e",
        date="2027-01-02",
        version="2.1.330.872",
    )
    assert request_key("POST", "/v1/messages?beta=true", one) == request_key(
        "POST", "/v1/messages?beta=true", two
    )


def test_the_prompt_the_model_and_the_path_count() -> None:
    base = _claude_body("## Request", session="s", date="2026-11-23", version="1")
    changed = _claude_body("## Changed request", session="s", date="2026-11-23", version="1")
    assert request_key("POST", "/v1/messages", base) != request_key("POST", "/v1/messages", changed)
    assert request_key("POST", "/v1/messages", base) != request_key("POST", "/v1/other", base)


def test_what_a_tool_printed_does_not_count_but_the_call_does() -> None:
    def body(output: str, command: str) -> str:
        return json.dumps(
            {
                "contents": [
                    {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "sh", "args": {"c": command}}}],
                    },
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "sh", "response": {"o": output}}}],
                    },
                ]
            }
        )

    path = "/v1beta/models/m:streamGenerateContent?alt=sse"
    assert request_key("POST", path, body("PGID: 1", "ls")) == request_key(
        "POST", path, body("PGID: 2", "ls")
    )
    assert request_key("POST", path, body("x", "ls")) != request_key("POST", path, body("x", "rm"))


def test_paths_become_placeholders_longest_first() -> None:
    text = placeholders("/home/u/repo/a and /home/u/b", {"repo": "/home/u/repo", "home": "/home/u"})
    assert text == "<repo>/a and <home>/b"


def test_a_cli_cassette_is_told_apart_by_its_first_line(tmp_path: Path) -> None:
    (tmp_path / "cli.yaml").write_text("recorded_via: cli\ninteractions: []\n")
    (tmp_path / "sdk.yaml").write_text("interactions: []\nversion: 1\n")
    assert recorded_via(tmp_path / "cli.yaml") == "cli"
    assert recorded_via(tmp_path / "sdk.yaml") == "sdk"
    assert recorded_via(tmp_path / "missing.yaml") == "sdk"
