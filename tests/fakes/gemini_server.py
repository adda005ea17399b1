"""A local Gemini API server for tests: loopback only, on a free port.

It speaks what the Gemini CLI calls: ``POST /v1beta/models/<model>:streamGenerateContent
?alt=sse`` (server-sent events, one ``GenerateContentResponse`` per event),
``:generateContent`` and ``:countTokens``. Replies are scripted per request (a queue);
with none scripted it answers like the stub, declaring the handoff the prompt asks for.
A scripted reply can call a function (a tool) or fail with any status. Every request and
the usage each reply reported are kept.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.anthropic_server import AnthropicServer


@dataclass
class GeminiReply:
    """One scripted answer."""

    status: int = 200
    text: str | None = None
    """The model's text (default: declare the handoff the prompt asks for)."""
    function_call: dict[str, Any] | None = None
    """Call a tool instead: ``{"name": "run_shell_command", "args": {...}}``."""


def _texts(body: Any) -> str:
    """Every text part of the request's contents."""
    parts: list[str] = []
    for content in body.get("contents") or () if isinstance(body, dict) else ():
        for part in content.get("parts") or () if isinstance(content, dict) else ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    return "\n".join(parts)


class GeminiServer:
    """Start with :meth:`start`; ``url`` is the base URL for GOOGLE_GEMINI_BASE_URL."""

    def __init__(self) -> None:
        self.replies: deque[GeminiReply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.usage: list[dict[str, int]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def script(self, *replies: GeminiReply) -> None:
        self.replies.extend(replies)

    def start(self) -> GeminiServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
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
                if ":countTokens" in self.path:
                    self._send(200, "application/json", {"totalTokens": len(_texts(body)) // 4})
                    return
                reply = owner.replies.popleft() if owner.replies else GeminiReply()
                if reply.status != 200:
                    error = {"code": reply.status, "message": f"fake {reply.status}"}
                    self._send(reply.status, "application/json", {"error": error})
                    return
                chunks = owner.chunks(body, reply)
                if "alt=sse" in self.path:
                    payload = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)
                    self._send(200, "text/event-stream", payload)
                else:
                    self._send(200, "application/json", chunks[-1])

            def _send(self, status: int, content_type: str, body: Any) -> None:
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def chunks(self, body: Any, reply: GeminiReply) -> list[dict[str, Any]]:
        """The reply as stream chunks: the text in two parts, usage on the last."""
        prompt = _texts(body)
        usage = {
            "promptTokenCount": max(1, len(prompt) // 4),
            "candidatesTokenCount": 0,
            "totalTokenCount": 0,
        }
        if reply.function_call is not None:
            parts: list[list[dict[str, Any]]] = [[{"functionCall": reply.function_call}]]
            usage["candidatesTokenCount"] = 5
        else:
            text = reply.text
            if text is None:
                text = "Done as asked." + AnthropicServer._handoff_like_the_stub(prompt, prompt)
            half = len(text) // 2
            parts = [[{"text": text[:half]}], [{"text": text[half:]}]]
            usage["candidatesTokenCount"] = max(1, len(text) // 4)
        usage["totalTokenCount"] = usage["promptTokenCount"] + usage["candidatesTokenCount"]
        self.usage.append(dict(usage))
        chunks: list[dict[str, Any]] = []
        for index, piece in enumerate(parts):
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": piece}, "index": 0}
            chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}
            if index == len(parts) - 1:
                candidate["finishReason"] = "STOP"
                chunk["usageMetadata"] = usage
            chunks.append(chunk)
        return chunks

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def running_gemini_server() -> Iterator[GeminiServer]:
    server = GeminiServer().start()
    try:
        yield server
    finally:
        server.stop()
