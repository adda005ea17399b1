"""The local OpenAI server speaks Chat Completions as the real openai SDK expects it."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

from tests.fakes.openai_server import Reply, context_length_exceeded, error_reply

KEY = "sk-fake-test-key"
SYSTEM = "## Step 1 of 1: ask\nFlow: f\nExample:\n```handoff\nstatus: OK\n```"
MESSAGES: list[Any] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "hi"},
]
HANDOFF = "Done as asked.\n\n```handoff\nstatus: OK\n```"


def _client(server: Any, base: str = "/v1", **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + base, api_key=KEY, max_retries=0, **options)


def test_default_reply_declares_the_prompts_handoff(openai_server: Any) -> None:
    client = _client(openai_server)
    completion = client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    client.close()
    assert completion.choices[0].message.content == HANDOFF
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    assert openai_server.usage == [completion.usage.model_dump(exclude_none=True)]
    request = openai_server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {KEY}"


def test_stream_with_usage_in_the_last_chunk_through_an_httpx2_client(openai_server: Any) -> None:
    client = _client(openai_server, http_client=httpx2.Client())
    stream = client.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    client.close()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == HANDOFF
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert openai_server.usage == [chunks[-1].usage.model_dump(exclude_none=True)]
    assert openai_server.requests[0]["body"]["stream_options"] == {"include_usage": True}


def test_stream_without_include_usage_has_no_usage_chunk(openai_server: Any) -> None:
    client = _client(openai_server, base="")  # a base URL without /v1 is answered too
    chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    client.close()
    assert all(c.choices and c.usage is None for c in chunks)
    assert openai_server.requests[0]["path"] == "/chat/completions"


def test_scripted_status_with_retry_after_reaches_the_sdk(openai_server: Any) -> None:
    openai_server.script(
        error_reply(429, "requests", code="rate_limit_exceeded", headers={"retry-after": "7"}),
        error_reply(503, "server_error"),
    )
    client = _client(openai_server)
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    with pytest.raises(openai.InternalServerError) as unavailable:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    client.close()
    assert limited.value.status_code == 429
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.code == "rate_limit_exceeded"
    assert unavailable.value.status_code == 503
    assert openai_server.usage == []


def test_context_length_exceeded_is_a_bad_request_with_its_code(openai_server: Any) -> None:
    openai_server.script(context_length_exceeded())
    client = _client(openai_server)
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    client.close()
    assert refused.value.status_code == 400
    assert refused.value.code == "context_length_exceeded"
    assert refused.value.type == "invalid_request_error"


def test_unknown_path_is_a_404_in_the_apis_shape(openai_server: Any) -> None:
    client = _client(openai_server, base="/v2")
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    client.close()
    assert missing.value.status_code == 404


@pytest.mark.parametrize("reply", [Reply(drop=True), Reply(cut_after=2)], ids=["drop", "cut"])
def test_dropped_connection_and_stream_cut_mid_event_fail_the_call(
    openai_server: Any, reply: Reply
) -> None:
    openai_server.script(reply)
    client = _client(openai_server)
    # openai 3.14 and later wrap a transport error mid-stream as APIConnectionError; 3.0 to
    # 3.13 let httpx2's own error through.
    with pytest.raises((openai.APIConnectionError, httpx2.TransportError)):
        list(client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True))
    client.close()
    assert openai_server.usage == []


def test_stream_error_event_fails_the_stream(openai_server: Any) -> None:
    openai_server.script(Reply(stream_error={"message": "busy", "type": "server_error"}))
    client = _client(openai_server)
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True))
    client.close()


def test_stalled_stream_keeps_sending_keep_alives_and_never_ends(openai_server: Any) -> None:
    openai_server.script(Reply(pings_every_s=0.01))
    client = _client(openai_server)
    with client.chat.completions.with_streaming_response.create(
        model="gpt-4o", messages=MESSAGES, stream=True
    ) as response:
        lines = response.iter_lines()
        first = next(lines)
        later = [line for line in (next(lines) for _ in range(20)) if line]
    client.close()
    assert first.startswith("data: ")
    assert later == [": keep-alive"] * 10  # comments only: no content, no [DONE]


def test_key_echoed_in_a_response_header_when_asked(openai_server: Any) -> None:
    openai_server.echo_key_header = "x-echo-auth"
    client = _client(openai_server)
    raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES)
    client.close()
    assert raw.headers["x-echo-auth"] == f"Bearer {KEY}"
