"""A local OpenAI Chat Completions API server for tests: loopback only, on a free port.

It answers ``POST /v1/chat/completions`` (and ``/chat/completions``, for a base URL without
``/v1``). Replies are scripted per request (a queue); with none scripted it answers like a
model that declares the handoff the prompt asks for (it copies the prompt's example block,
as the Anthropic fake does). A streamed request (``stream: true``) gets server-sent
``chat.completion.chunk`` events, with the usage in a last chunk when
``stream_options.include_usage`` is set. Faults on demand: any status with headers and an
OpenAI-shaped error body, a malformed body, a dropped connection, a stream cut in the middle
of an event, a stream that stays alive and never ends. It records every request (path,
headers, body).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.anthropic_server import AnthropicServer, _text_of

PATHS = ("/v1/chat/completions", "/chat/completions")

handoff_like_the_stub = AnthropicServer._handoff_like_the_stub


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None
    """A JSON value, or None for the default model reply."""
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    """Sent as-is instead of JSON (a malformed body)."""
    drop: bool = False
    """Close the connection without answering."""
    text: str | None = None
    """The assistant text of a 200 reply (default: copy the prompt's handoff example)."""
    stream_error: dict[str, Any] | None = None
    """For a streamed request: send the first chunk, then ``data: {"error": …}`` and stop,
    as the API does when it fails mid-stream."""
    cut_after: int | None = None
    """For a streamed request: send this many chunks, then half of the next one, and close
    the connection (the body is shorter than its ``content-length`` says)."""
    pings_every_s: float | None = None
    """For a streamed request: send the first chunk, then a keep-alive comment every so
    often, for ever (until the client goes away): a stream that is alive and never ends."""
    tool_calls: list[dict[str, Any]] | None = None
    """Call tools instead of answering: ``[{"name": "lookup", "arguments": {...}}]`` (the
    arguments a mapping, sent as JSON text, or text sent as it is)."""


def error_body(
    message: str, kind: str, *, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """The API's error shape: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_reply(
    status: int,
    kind: str,
    *,
    code: str | None = None,
    headers: dict[str, str] | None = None,
    message: str = "scripted error",
) -> Reply:
    """A scripted error answer, e.g. ``error_reply(429, "rate_limit_exceeded",
    headers={"retry-after": "2"})``."""
    return Reply(status=status, body=error_body(message, kind, code=code), headers=headers or {})


def context_length_exceeded() -> Reply:
    """The 400 the API answers when the prompt does not fit the model's context window."""
    return error_reply(
        400,
        "invalid_request_error",
        code="context_length_exceeded",
        message="This model's maximum context length is 128 tokens.",
    )


def completion_body(text: str, *, model: str, prompt_chars: int) -> dict[str, Any]:
    prompt_tokens = max(1, prompt_chars // 4)
    completion_tokens = max(1, len(text) // 4)
    return {
        "id": "chatcmpl-local0001",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def chunk_events(completion: dict[str, Any], *, include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` events that stream ``completion``, in order."""
    choice = completion["choices"][0]
    text = choice["message"]["content"]
    usage_field = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion["id"],
            "object": "chat.completion.chunk",
            "created": completion["created"],
            "model": completion["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **usage_field,
        }

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": text[i : i + 40]}) for i in range(0, len(text or ""), 40)]
    for index, call in enumerate(choice["message"].get("tool_calls") or ()):
        arguments = call["function"]["arguments"]
        head = {"index": index, "id": call["id"], "type": "function"}
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {**head, "function": {"name": call["function"]["name"], "arguments": ""}}
                    ]
                }
            )
        )
        for i in range(0, len(arguments), 16):  # the arguments arrive in pieces
            piece = {"index": index, "function": {"arguments": arguments[i : i + 16]}}
            events.append(chunk({"tool_calls": [piece]}))
    events.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        events.append({**chunk({}), "choices": [], "usage": dict(completion["usage"])})
    return events


def _sse(event: dict[str, Any] | str) -> bytes:
    data = event if isinstance(event, str) else json.dumps(event)
    return f"data: {data}\n\n".encode()


class OpenAIServer:
    """Start with :meth:`start`; ``url`` + ``/v1`` is the base URL for OPENAI_BASE_URL."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.usage: list[dict[str, int]] = []
        """The usage each model reply delivered whole reported, in order."""
        self.echo_key_header: str | None = None
        """Name a response header that echoes the request's ``authorization`` (the key), as
        a careless server or proxy may."""
        self.pingers: list[threading.Event] = []
        self.tool_call_count = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> OpenAIServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet

            def do_POST(self) -> None:
                owner.answer(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        """Record the request and send the next scripted (or the default) reply."""
        length = int(handler.headers.get("content-length", "0"))
        raw = handler.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        self.requests.append(
            {
                "path": handler.path,
                "headers": {k.lower(): v for k, v in handler.headers.items()},
                "body": body,
            }
        )
        if handler.path.split("?")[0] not in PATHS:
            reply = error_reply(404, "invalid_request_error", message=f"no route {handler.path}")
        else:
            reply = self.replies.popleft() if self.replies else Reply()
        headers = {"x-request-id": "req_local_0001", **reply.headers}
        if self.echo_key_header is not None:
            headers[self.echo_key_header] = str(handler.headers.get("authorization"))
        if reply.drop:
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        if (
            reply.raw is None
            and reply.body is None
            and isinstance(body, dict)
            and body.get("stream")
        ):
            self.stream(handler, body, reply, headers)
            return
        if reply.raw is not None:
            payload = reply.raw
        elif reply.body is not None:
            payload = json.dumps(reply.body).encode()
        else:
            completion = self.with_tool_calls(self.default_completion(body, reply.text), reply)
            self.usage.append(dict(completion["usage"]))
            payload = json.dumps(completion).encode()
        self._send_head(handler, reply.status, "application/json", headers, len(payload))
        handler.wfile.write(payload)

    @staticmethod
    def _send_head(
        handler: BaseHTTPRequestHandler,
        status: int,
        content_type: str,
        headers: dict[str, str],
        length: int | None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("content-type", content_type)
        if length is None:  # the body runs until the connection closes
            handler.send_header("connection", "close")
            handler.close_connection = True
        else:
            handler.send_header("content-length", str(length))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()

    def with_tool_calls(self, completion: dict[str, Any], reply: Reply) -> dict[str, Any]:
        """``completion`` calling the reply's tools instead of answering, when it has some."""
        if reply.tool_calls is None:
            return completion
        calls = []
        for call in reply.tool_calls:
            self.tool_call_count += 1
            arguments = call.get("arguments", {})
            calls.append(
                {
                    "id": f"call_local_{self.tool_call_count:04d}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
            )
        choice = completion["choices"][0]
        choice["message"] = {**choice["message"], "content": None, "tool_calls": calls}
        choice["finish_reason"] = "tool_calls"
        return completion

    @staticmethod
    def default_completion(body: Any, text: str | None) -> dict[str, Any]:
        system = ""
        user = ""
        model = "gpt-test"
        if isinstance(body, dict):
            model = str(body.get("model", model))
            messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
            if messages and messages[0].get("role") in ("system", "developer"):
                system = _text_of(messages[0].get("content", ""))
            users = [m for m in messages if m.get("role") == "user"]
            if users:
                user = _text_of(users[0].get("content", ""))
        if text is None:
            text = "Done as asked." + handoff_like_the_stub(system, user)
        return completion_body(text, model=model, prompt_chars=len(system) + len(user))

    def stream(
        self,
        handler: BaseHTTPRequestHandler,
        body: dict[str, Any],
        reply: Reply,
        headers: dict[str, str],
    ) -> None:
        """Answer as server-sent events, the way Chat Completions streams."""
        options = body.get("stream_options") or {}
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        completion = self.with_tool_calls(self.default_completion(body, reply.text), reply)
        events = [_sse(e) for e in chunk_events(completion, include_usage=include_usage)]
        if reply.pings_every_s is not None:
            self.ping_forever(handler, events[0], reply.pings_every_s, headers)
            return
        events.append(_sse("[DONE]"))
        if reply.stream_error is not None:
            events = [events[0], _sse({"error": reply.stream_error})]
        elif reply.cut_after is None:
            self.usage.append(dict(completion["usage"]))  # a reply delivered whole
        payload = b"".join(events)
        if reply.cut_after is not None:
            sent = b"".join(events[: reply.cut_after])
            half = events[reply.cut_after][: len(events[reply.cut_after]) // 2]
            self._send_head(handler, 200, "text/event-stream", headers, len(payload))
            handler.wfile.write(sent + half)
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        self._send_head(handler, 200, "text/event-stream", headers, len(payload))
        handler.wfile.write(payload)

    def ping_forever(
        self, handler: BaseHTTPRequestHandler, first: bytes, every_s: float, headers: dict[str, str]
    ) -> None:
        """Open a stream and keep it alive with comments until the client hangs up."""
        self._send_head(handler, 200, "text/event-stream", headers, None)
        frames = [first]
        stopped = threading.Event()
        self.pingers.append(stopped)
        try:
            while not stopped.is_set():
                frames.append(b": keep-alive\n\n")
                handler.wfile.write(b"".join(frames))
                handler.wfile.flush()
                frames.clear()
                stopped.wait(every_s)  # the server's pace, not a test waiting
        except OSError:
            pass  # the client hung up: the end this stream is waiting for

    def stop(self) -> None:
        for pinger in self.pingers:
            pinger.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def running_openai_server() -> Iterator[OpenAIServer]:
    server = OpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()
