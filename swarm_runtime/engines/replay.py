"""Replay of recorded HTTP calls through the SDK's own HTTP client, without patching.

Recording goes through vcrpy (:mod:`swarm_runtime.engines.cassette`), which patches the
HTTP libraries of the process for as long as a cassette is open. Replay needs none of
that: the replaying engine builds its SDK client on an HTTP transport that answers from
the step's cassette, matching as recording-time replay always has (method, path and JSON
body; each recorded call plays once, in order) and failing the step the same way when no
recorded call matches. Nothing else in the process sees a patched library, no connection
or TLS context is set up, and a cassette file is read and parsed once per process while it
is unchanged (its path, size and mtime), however many runs replay it.

Cassettes are read with vcrpy's own deserializer, so every cassette vcrpy wrote replays.
Every request is scanned for credential values before it is answered, and every recorded
response before it is played, as in recording.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.base import StepContext
from swarm_runtime.engines.cassette import (
    DROPPED_HEADERS,
    Cassettes,
    body_value,
    cause_of,
    miss_detail,
)
from swarm_runtime.errors import CredentialLeak

T = TypeVar("T")

MAX_KEPT = 1024
"""Parsed cassettes kept per process (the least recently used go first)."""

_kept: OrderedDict[tuple[str, int, int], tuple[list[Any], list[dict[str, Any]]]] = OrderedDict()


def load_recording(path: Path) -> tuple[list[Any], list[dict[str, Any]]]:
    """The recorded (requests, responses) of a cassette file; ([], []) when there is none.

    A parse is kept while the file's size and mtime stay the same.
    """
    try:
        info = os.stat(path)
    except OSError:
        return [], []
    key = (str(path), info.st_size, info.st_mtime_ns)
    kept = _kept.get(key)
    if kept is not None:
        _kept.move_to_end(key)
        return kept
    import yaml
    from vcr.serialize import deserialize  # type: ignore[import-untyped]

    from swarm_runtime.inputs.files import read_bytes_limited
    from swarm_runtime.inputs.limits import MAX_RUN_FILE_BYTES

    try:
        text = read_bytes_limited(path, MAX_RUN_FILE_BYTES).decode("utf-8")
        loaded = ([], []) if not text.strip() else deserialize(text, _Checked)
    except (OSError, ValueError, yaml.YAMLError, KeyError, TypeError) as exc:
        said = " ".join(str(exc).split())  # one line, whatever the YAML reader said
        raise ValueError(f"cassette {path} cannot be read: {said}") from None
    requests, responses = list(loaded[0]), list(loaded[1])
    _kept[key] = (requests, responses)
    while len(_kept) > MAX_KEPT:
        _kept.popitem(last=False)
    return requests, responses


class _Checked:
    """vcrpy's cassette reader, then a check of what vcrpy and a replay take for granted."""

    @staticmethod
    def deserialize(text: str) -> Any:
        from vcr.serializers import yamlserializer  # type: ignore[import-untyped]

        data = yamlserializer.deserialize(text)
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
            raise ValueError("it must be a mapping whose 'interactions' is a list")
        for index, call in enumerate(data["interactions"]):
            problem = _call_problem(call)
            if problem is not None:
                raise ValueError(f"interactions[{index}].{problem}")
        return data


def _call_problem(call: Any) -> str | None:
    """The first field of one recorded call that is not of its type, said; or None."""
    if not isinstance(call, dict) or not all(
        isinstance(call.get(part), dict) for part in ("request", "response")
    ):
        return "request and .response must be mappings"
    request, response = call["request"], call["response"]
    status, body = response.get("status"), response.get("body")
    fields: list[tuple[str, Any, Any, str]] = [
        ("request.method", request.get("method"), str, "text"),
        ("request.uri", request.get("uri"), str, "text"),
        ("request.headers", request.get("headers"), dict, "a mapping"),
        ("response.status", status, dict, "a mapping {code, message}"),
        ("response.headers", response.get("headers"), dict, "a mapping"),
        ("response.body", body, dict, "a mapping {string}"),
    ]
    if isinstance(status, dict):
        fields.append(("response.status.code", status.get("code"), int, "a whole number"))
        message = status.get("message")
        fields.append(("response.status.message", message, str | None, "text"))
    if isinstance(body, dict):
        fields.append(("response.body.string", body.get("string"), str | bytes, "text"))
    for name, value, kind, what in fields:
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"{name} must be {what}, not {type(value).__name__} {value!r:.40}"
    if isinstance(request.get("body"), int | float | bool | dict | list):  # file-likes are text
        return f"request.body must be text, not {type(request['body']).__name__}"
    if isinstance(request.get("body"), str | bytes):  # what a replay decodes as JSON
        from swarm_runtime.inputs.json_input import check_json_depth
        from swarm_runtime.inputs.limits import MAX_DEPTH, InputRefused

        try:
            check_json_depth(request["body"], MAX_DEPTH)
        except InputRefused as exc:
            return f"request.body: {exc}"
    headers = response["headers"].values()
    if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in headers):
        return "response.headers must map each name to a list of text values"
    return None


def forget_recordings() -> None:
    """Drop every parsed cassette this process keeps (the next replay reads them again)."""
    _kept.clear()


class _Sent:
    """The request being replayed, as :func:`body_diff` reads a request."""

    def __init__(self, method: str, uri: str, body: bytes) -> None:
        self.method, self.uri, self.body = method, uri, body


class _NoMatch(Exception):
    """No recorded call of the step's cassette matches the request."""

    def __init__(self, sent: _Sent) -> None:
        super().__init__("no recorded call matches the request")
        self.sent = sent


class Recording:
    """One cassette of a replay: its recorded calls and which of them have played."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.requests, self.responses = load_recording(path)
        self.played = [False] * len(self.requests)
        self.played_index = -1
        self._bodies: dict[int, Any] = {}

    def play(self, method: str, uri: str, body: bytes) -> dict[str, Any]:
        """The response of the first unplayed recorded call like this one; _NoMatch."""
        index = self.find(method, uri, body_value(body))
        if index is None:
            raise _NoMatch(_Sent(method, uri, body))
        self.mark_played(index)
        return self.responses[index]

    def find(self, method: str, uri: str, sent_body: Any) -> int | None:
        """The first unplayed recorded call like this one (its body's JSON value), or None."""
        from urllib.parse import urlsplit

        path = urlsplit(uri).path
        for index, recorded in enumerate(self.requests):
            if self.played[index] or recorded.method != method:
                continue
            if urlsplit(recorded.uri).path != path or self._body(index) != sent_body:
                continue
            return index
        return None

    def mark_played(self, index: int) -> None:
        """The recorded call ``index`` has played."""
        self.played[index] = True
        self.played_index = index

    def _body(self, index: int) -> Any:
        """A recorded request's body as matched on, decoded once."""
        if index not in self._bodies:
            self._bodies[index] = body_value(self.requests[index].body)
        return self._bodies[index]

    @property
    def unplayed(self) -> int:
        """How many recorded calls have not played."""
        return self.played.count(False)


class Replayer:
    """Answers an SDK's HTTP from one cassette per step call: no server, no patched library."""

    def __init__(self, cassettes: Cassettes, credentials: Credentials, needs: str = "") -> None:
        self.cassettes = cassettes
        self.credentials = credentials
        self.needs = needs
        self._open: dict[Path, Recording] = {}
        self._current: Recording | None = None
        self.last_uri: str | None = None
        """The URI of the recorded call played last: where the recording was made."""

    def transport(self) -> Any:
        """An httpx2 transport that answers from the cassette of the call under way."""
        import httpx2

        replayer = self

        class Transport(httpx2.BaseTransport):
            def handle_request(self, request: Any) -> Any:
                return replayer.respond(request, httpx2)

        return Transport()

    def respond(self, request: Any, httpx: Any) -> Any:
        """The recorded response to ``request``, an httpx request of the SDK's client."""
        recording = self._current
        if recording is None:
            raise RuntimeError("a request outside a replayed step")
        # The call reached its cassette (a fault the plan answered never does).
        self.cassettes.played.add(
            self.cassettes.directory / recording.path.relative_to(self.cassettes.root)
        )
        body = request.read()
        uri = str(request.url)
        self._refuse_secrets(body.decode("utf-8", "replace") + uri, recording, "request")
        recorded = recording.play(request.method, uri, body)
        self._played(recording, recorded)
        text = recorded["body"]["string"]
        message = recorded["status"].get("message")
        return httpx.Response(
            recorded["status"]["code"],
            headers=[
                (name, value)
                for name, values in recorded["headers"].items()
                if not DROPPED_HEADERS.match(name)
                for value in values
            ],
            stream=httpx.ByteStream(text if isinstance(text, bytes) else str(text).encode()),
            extensions={"reason_phrase": message.encode("ascii")} if message else None,
            request=request,
        )

    def answer(
        self, uri: str, body: dict[str, Any], read: Callable[[dict[str, Any]], T]
    ) -> T | None:
        """The recorded response to a POST of ``body``, as ``read`` reads it.

        For an engine that replays without its SDK's client: None, with nothing played,
        when no recorded call matches or ``read`` gives None (the SDK replays it then).
        """
        recording = self._current
        if recording is None:
            raise RuntimeError("a request outside a replayed step")
        index = recording.find("POST", uri, body)
        if index is None:
            return None
        recorded = recording.responses[index]
        answered = read(recorded)
        if answered is None:
            return None
        self.cassettes.played.add(
            self.cassettes.directory / recording.path.relative_to(self.cassettes.root)
        )
        self._refuse_secrets(json.dumps(body) + uri, recording, "request")
        recording.mark_played(index)
        self._played(recording, recorded)
        return answered

    def _played(self, recording: Recording, recorded: dict[str, Any]) -> None:
        """A recorded call played: where it was made, and no secret in its response."""
        self.last_uri = recording.requests[recording.played_index].uri
        text = recorded["body"]["string"]
        self._refuse_secrets(
            text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text),
            recording,
            "response",
        )

    def _refuse_secrets(self, text: str, recording: Recording, what: str) -> None:
        self.credentials.check(text, f"cassette {recording.path} (the recorded {what})")

    def _recording(self, ctx: StepContext) -> Recording:
        path = self.cassettes.path(ctx)
        recording = self._open.get(path)
        if recording is None:
            recording = self._open[path] = Recording(path)
            for recorded in recording.requests:  # as recording-time replay scanned them
                body = recorded.body or b""
                text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
                self._refuse_secrets(text + recorded.uri, recording, "request")
        return recording

    # -- the tool tape: a step's tool answers, served from its cassette ---------------------------
    # (docs/tools.md#tools-in-record-and-replay)

    replays = True

    def recorded(self, ctx: StepContext, tool: str, tool_input: Any) -> tuple[bool, str] | None:
        """The recorded answer of this tool call (each plays once, in order); None if none."""
        from swarm_runtime.engines.tool_tape import TOOL_METHOD, tool_answer, tool_body, tool_uri

        recording = self._recording(ctx)
        self.cassettes.played.add(
            self.cassettes.directory / recording.path.relative_to(self.cassettes.root)
        )
        try:
            response = recording.play(TOOL_METHOD, tool_uri(tool), tool_body(tool, tool_input))
        except _NoMatch:
            return None
        text = response["body"]["string"]
        self._refuse_secrets(
            text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text),
            recording,
            "tool answer",
        )
        return tool_answer(response, f"cassette {recording.path}")

    def keep(
        self, ctx: StepContext, tool: str, tool_input: Any, success: bool, output: str
    ) -> None:
        """A replay keeps nothing."""

    def missing(self, ctx: StepContext, tool: str, tool_input: Any) -> Exception:
        """The divergence of a tool call the cassette holds no recording of."""
        import json

        from swarm_runtime.engines.tool_tape import TOOL_METHOD, tool_body, tool_uri

        recording = self._recording(ctx)
        label = self.cassettes.label(recording.path)
        if not recording.requests:
            return self.cassettes.divergence(ctx, label, "", missing=True, needs=self.needs)
        shown = json.dumps(tool_input, sort_keys=True, ensure_ascii=False)[:300]
        sent = _Sent(TOOL_METHOD, tool_uri(tool), tool_body(tool, tool_input))
        recorded = [r for r in recording.requests if r.uri == tool_uri(tool)] or recording.requests
        detail = (
            f"the model called the tool {tool} with input {shown}, a call the recording does "
            f"not hold\n{miss_detail(recorded[0], sent)}"
        )
        return self.cassettes.divergence(ctx, label, detail, needs=self.needs)

    @contextlib.contextmanager
    def call(self, ctx: StepContext) -> Iterator[None]:
        """One call of the step in ``ctx``, answered from its cassette; a miss is a divergence."""
        recording = self._recording(ctx)
        self._current = recording
        try:
            yield
        except Exception as exc:
            cause = cause_of(exc, (_NoMatch, CredentialLeak))
            if cause is None:
                raise
            if isinstance(cause, CredentialLeak):
                raise CredentialLeak(str(cause)) from None
            assert isinstance(cause, _NoMatch)
            raise self._divergence(ctx, recording, cause.sent) from None
        finally:
            self._current = None

    def _divergence(self, ctx: StepContext, recording: Recording, sent: _Sent) -> Exception:
        label = self.cassettes.label(recording.path)
        if not recording.requests:
            return self.cassettes.divergence(ctx, label, "", missing=True, needs=self.needs)
        detail = miss_detail(recording.requests[0], sent)
        return self.cassettes.divergence(ctx, label, detail, needs=self.needs)

    def close(self) -> None:
        """Note the recordings a replay never played."""
        try:
            for path, recording in self._open.items():
                if recording.unplayed:
                    self.cassettes.unplayed.append(
                        f"{self.cassettes.label(path)}: "
                        f"{recording.unplayed} recorded call(s) never played"
                    )
        finally:
            self._open.clear()
