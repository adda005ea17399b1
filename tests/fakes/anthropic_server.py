"""A local Anthropic Messages API server for tests: loopback only, on a free port.

Replies are scripted per request (a queue); with none scripted it answers like a model
that declares the handoff the prompt asks for (it copies the prompt's example block).
Faults on demand: any status with headers and an error body, a malformed body, a dropped
connection. It records every request (path, headers, body).
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXAMPLE_RE = re.compile(r"Example:\n(```handoff\n.*?\n```)", re.DOTALL)


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
    """For a streamed request: start the stream, then send this ``error`` event and stop."""
    tool_use: dict[str, Any] | None = None
    """Call a tool instead of answering: ``{"name": "Bash", "input": {...}}``."""
    pings_every_s: float | None = None
    """For a streamed request: start the stream, then send a ``ping`` every so often, for
    ever (until the client goes away): a stream that is alive and never ends."""


def _text_of(value: Any) -> str:
    """A system prompt or message content: a string, or the text of its blocks (the CLI's)."""
    if isinstance(value, list):
        return "\n".join(str(block.get("text", "")) for block in value if isinstance(block, dict))
    return str(value)


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def message_body(text: str, *, model: str, prompt_chars: int) -> dict[str, Any]:
    return {
        "id": "msg_local_0001",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(1, prompt_chars // 4),
            "output_tokens": max(1, len(text) // 4),
        },
    }


class AnthropicServer:
    """Start with :meth:`start`; ``url`` is the base URL for ANTHROPIC_BASE_URL."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.usage: list[dict[str, int]] = []
        """The usage each model reply reported, in order."""
        self.tool_calls = 0
        self.echo_key_header: str | None = None
        """Name a response header that echoes the request's key (``x-api-key``, else
        ``authorization``), as a careless server or proxy may."""
        self.pingers: list[threading.Event] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> AnthropicServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = None
                owner.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                reply = owner.replies.popleft() if owner.replies else Reply()
                headers = dict(reply.headers)
                if owner.echo_key_header is not None:
                    key = self.headers.get("x-api-key") or self.headers.get("authorization")
                    headers[owner.echo_key_header] = str(key)
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if reply.pings_every_s is not None:
                    owner.ping_forever(self, reply.pings_every_s)
                    return
                if (
                    reply.raw is None
                    and reply.body is None
                    and isinstance(body, dict)
                    and body.get("stream")
                ):
                    owner.stream(
                        self,
                        owner.reply_message(body, reply),
                        error=reply.stream_error,
                        headers=headers,
                    )
                    return
                if reply.raw is not None:
                    payload = reply.raw
                elif reply.body is not None:
                    payload = json.dumps(reply.body).encode()
                else:
                    payload = json.dumps(owner.reply_message(body, reply)).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.send_header("request-id", "req_local_0001")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def reply_message(self, body: Any, reply: Reply) -> dict[str, Any]:
        """The message a scripted (or default) reply answers with; usage is logged."""
        message = self.default_message(body, reply.text)
        if reply.tool_use is not None:
            self.tool_calls += 1
            message["content"] = [
                {"type": "tool_use", "id": f"toolu_local_{self.tool_calls:04d}", **reply.tool_use}
            ]
            message["stop_reason"] = "tool_use"
        self.usage.append(dict(message["usage"]))
        return message

    def default_message(self, body: Any, text: str | None) -> dict[str, Any]:
        system = ""
        user = ""
        model = "claude-test"
        if isinstance(body, dict):
            system = _text_of(body.get("system", ""))
            model = str(body.get("model", model))
            messages = body.get("messages") or []
            if messages and isinstance(messages[0], dict):
                user = _text_of(messages[0].get("content", ""))
        if text is None:
            text = "Done as asked." + self._handoff_like_the_stub(system, user)
        return message_body(text, model=model, prompt_chars=len(system) + len(user))

    @staticmethod
    def stream(
        handler: BaseHTTPRequestHandler,
        message: dict[str, Any],
        *,
        error: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer as server-sent events, the way the Messages API streams.

        With ``error``, the stream starts and then carries an ``error`` event instead of
        the reply, as the API does when it is overloaded mid-stream.
        """
        block = message["content"][0]
        start = {**message, "content": [], "usage": {**message["usage"], "output_tokens": 0}}
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
        ]
        if block["type"] == "tool_use":
            events += [
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {**block, "input": {}},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        },
                    },
                ),
            ]
        else:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            text = block["text"]
            for piece in (text[i : i + 40] for i in range(0, len(text), 40)):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
                )
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": message["usage"]["output_tokens"]},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        if error is not None:
            events = [*events[:2], ("error", error)]
        payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        raw = payload.encode()
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("content-length", str(len(raw)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(raw)

    def ping_forever(self, handler: BaseHTTPRequestHandler, every_s: float) -> None:
        """Open a stream and keep it alive with pings until the client hangs up."""
        start = {"type": "message_start", "message": self.default_message({}, "")}
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("connection", "close")
        handler.end_headers()
        handler.close_connection = True
        frames = [f"event: message_start\ndata: {json.dumps(start)}\n\n"]
        stopped = threading.Event()
        self.pingers.append(stopped)
        try:
            while not stopped.is_set():
                frames.append('event: ping\ndata: {"type": "ping"}\n\n')
                handler.wfile.write("".join(frames).encode())
                handler.wfile.flush()
                frames.clear()
                stopped.wait(every_s)  # the server's pace, not a test waiting
        except OSError:
            pass  # the client hung up: the end this stream is waiting for

    @staticmethod
    def _handoff_like_the_stub(system: str, user: str) -> str:
        """Declare the handoff as the stub does, so replayed runs route like stub runs.

        A critic fails a first draft and passes the second (it can tell from the history
        whether its step ran before); a branch takes its first key; the navigator takes the
        first candidate it is offered.
        """
        if system.startswith("You are the navigator"):  # the first candidate, as the stub
            moves = re.findall(r"^- (\S+): (?:go to step|end the flow|detour|run the)", user, re.M)
            if moves:
                return f"\n\n```handoff\nchoice: {moves[0]}\nconfidence: 0.5\n```"
        example = EXAMPLE_RE.search(system)
        if not example:
            return ""
        block = example.group(1)
        step = re.search(r"^## Step \d+ of \d+: (\S+)$", system, re.MULTILINE)
        flow = re.search(r"^Flow: (\S+)$", system, re.MULTILINE)
        looped = "can_further_iteration_help" in block
        if looped and step and flow and f"### {flow.group(1)}/{step.group(1)} (" not in user:
            lines = block.splitlines()
            field = lines[1].split(":", 1)[0]
            block = f"```handoff\n{field}: NEEDS_WORK\ncan_further_iteration_help: yes\n```"
        return f"\n\n{block}"

    def stop(self) -> None:
        for pinger in self.pingers:
            pinger.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def running_server() -> Iterator[AnthropicServer]:
    server = AnthropicServer().start()
    try:
        yield server
    finally:
        server.stop()


def record_project(project: Any, key: str, *args: str) -> Any:
    """``project`` (a pytester project) run in record mode against a fake server of its own.

    The server and the environment that points the SDK at it (``ANTHROPIC_BASE_URL`` and
    the fake ``key``) last for that one session, so the replay that follows has no server.
    """
    import pytest

    server = AnthropicServer().start()
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("ANTHROPIC_BASE_URL", server.url)
            env.setenv("ANTHROPIC_API_KEY", key)
            return project.runpytest_subprocess("--swarm-mode=record", *args)
    finally:
        server.stop()
