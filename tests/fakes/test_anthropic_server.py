"""The local Anthropic server speaks the Messages API as the real SDK expects it."""

from __future__ import annotations

from typing import Any

import anthropic


def test_streaming_reply_through_the_sdk(anthropic_server: Any) -> None:
    client = anthropic.Anthropic(
        api_key="sk-ant-fake", base_url=anthropic_server.url, max_retries=0
    )
    system = "## Step 1 of 1: ask\nFlow: f\nExample:\n```handoff\nstatus: OK\n```"
    with client.messages.stream(
        model="claude-haiku-4-5",
        max_tokens=50,
        system=system,
        messages=[{"role": "user", "content": "hi"}],
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    client.close()
    assert text == "Done as asked.\n\n```handoff\nstatus: OK\n```"  # streamed in pieces
    assert final.usage.output_tokens > 0
    assert anthropic_server.requests[0]["body"]["stream"] is True


def test_non_streaming_reply_and_recorded_headers(anthropic_server: Any) -> None:
    client = anthropic.Anthropic(
        api_key="sk-ant-fake", base_url=anthropic_server.url, max_retries=0
    )
    message = client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=50,
        system="s",
        messages=[{"role": "user", "content": "hi"}],
    )
    client.close()
    assert message.content[0].text == "Done as asked."
    assert anthropic_server.requests[0]["headers"]["anthropic-version"]
