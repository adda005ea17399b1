"""Fault plans through the CLI's loopback cassette server (cli record and replay).

The server is driven over a real socket with http.client, as a CLI would: a fault armed
for the attempt answers the first request (a status, a reset or closed connection, a
broken stream, a reply standing in for the model's), and never reaches the provider or
the cassette. No CLI is needed here; tests/real_cli runs the real one.
"""

from __future__ import annotations

import errno
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.engines.cli_cassette import CassetteServer
from swarm_runtime.engines.faults import Fault, FaultInjector, FaultPlan, parse_fault
from tests.fakes.anthropic_server import AnthropicServer

REQUEST = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Say hello."}],
}
NUDGE = {**REQUEST, "messages": [*REQUEST["messages"], {"role": "user", "content": "Again."}]}


def _send(
    url: str, body: dict[str, Any], *, stream: bool = False
) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
    port = int(url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    payload = json.dumps({**body, "stream": True} if stream else body)
    connection.request(
        "POST", "/v1/messages", body=payload, headers={"content-type": "application/json"}
    )
    return connection.getresponse(), connection


def _post(
    url: str, body: dict[str, Any], *, stream: bool = False
) -> tuple[int, dict[str, str], bytes]:
    response, connection = _send(url, body, stream=stream)
    try:
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def _server(cassettes: Cassettes, injector: FaultInjector, upstream: str = "") -> CassetteServer:
    return CassetteServer(
        cassettes,
        upstream=upstream or "http://127.0.0.1:9",
        provider="anthropic",
        credentials=Credentials.from_env({}),
        injector=injector,
    )


@pytest.fixture
def recorded(tmp_path: Path, anthropic_server: AnthropicServer) -> Path:
    """A cli-recorded cassette with one call: REQUEST, not streamed."""
    cassettes = Cassettes(tmp_path / "cas", name="cas", record=True, rerecord_command="x")
    server = _server(cassettes, FaultInjector(FaultPlan()), anthropic_server.url)
    server.use(cassettes.root / "demo" / "draft-worker-0.yaml", {})
    assert _post(server.url, REQUEST)[0] == 200
    server.close()
    cassettes.commit()
    return tmp_path / "cas"


@pytest.fixture
def replay(recorded: Path) -> Iterator[tuple[CassetteServer, FaultInjector, Cassettes]]:
    cassettes = Cassettes(recorded, name="cas", record=False, rerecord_command="re-record")
    injector = FaultInjector(FaultPlan())
    server = _server(cassettes, injector)
    server.use(recorded / "demo" / "draft-worker-0.yaml", {})
    yield server, injector, cassettes
    server.close()


def _arm(injector: FaultInjector, raw: Any) -> Fault:
    fault = parse_fault(raw, "test")
    assert fault is not None
    injector.armed = fault
    return fault


@pytest.mark.parametrize(
    ("raw", "status", "error_type"),
    [
        ({"kind": "http_429", "retry_after_ms": 0}, 429, "rate_limit_error"),
        ("http_500", 500, "api_error"),
        ("http_529", 529, "overloaded_error"),
    ],
)
def test_a_status_fault_answers_the_first_request_then_the_recording_answers(
    replay: tuple[CassetteServer, FaultInjector, Cassettes],
    raw: Any,
    status: int,
    error_type: str,
) -> None:
    server, injector, cassettes = replay
    _arm(injector, raw)
    got, headers, body = _post(server.url, REQUEST)
    assert got == status
    assert json.loads(body)["error"]["type"] == error_type
    if status == 429:
        assert (headers["retry-after-ms"], headers["retry-after"]) == ("0", "0")
    else:
        assert "retry-after-ms" not in headers
    assert injector.armed is None  # served: the engine's log says so
    got, _, body = _post(server.url, REQUEST)  # the CLI's retry: the recorded reply
    assert got == 200 and json.loads(body)["type"] == "message"
    tape = server.current
    assert tape is not None and tape.played == [True] and tape.misses == []
    server.close()
    assert cassettes.unplayed == []


def test_a_connection_reset_resets_the_connection_with_no_reply(
    replay: tuple[CassetteServer, FaultInjector, Cassettes],
) -> None:
    server, injector, _ = replay
    _arm(injector, "connection_reset")
    with pytest.raises(ConnectionResetError) as caught:
        _post(server.url, REQUEST)
    assert caught.value.errno == errno.ECONNRESET
    assert not isinstance(caught.value, http.client.RemoteDisconnected)
    assert _post(server.url, REQUEST)[0] == 200


def test_a_timeout_closes_the_connection_with_no_reply(
    replay: tuple[CassetteServer, FaultInjector, Cassettes],
) -> None:
    server, injector, _ = replay
    _arm(injector, "timeout")
    with pytest.raises(http.client.RemoteDisconnected):
        _post(server.url, REQUEST)
    assert _post(server.url, REQUEST)[0] == 200


def test_a_stream_cut_breaks_off_in_the_middle_of_an_event(
    replay: tuple[CassetteServer, FaultInjector, Cassettes],
) -> None:
    server, injector, _ = replay
    _arm(injector, "stream_cut")
    response, connection = _send(server.url, REQUEST, stream=True)
    assert response.status == 200
    assert response.getheader("content-type") == "text/event-stream"
    with pytest.raises(http.client.IncompleteRead) as caught:
        response.read()
    connection.close()
    partial = caught.value.partial.decode()
    assert partial.startswith("event: message_start\n")
    assert partial.endswith('"ind')  # the last event is cut off
    assert _post(server.url, REQUEST)[0] == 200


def test_overloaded_mid_stream_sends_an_error_event_after_the_stream_started(
    replay: tuple[CassetteServer, FaultInjector, Cassettes],
) -> None:
    server, injector, _ = replay
    _arm(injector, "overloaded_mid_stream")
    status, headers, body = _post(server.url, REQUEST, stream=True)
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    events = [block.split("\n") for block in body.decode().strip().split("\n\n")]
    assert events[0][0] == "event: message_start"
    assert events[-1][0] == "event: error"
    assert json.loads(events[-1][1][len("data: ") :])["error"]["type"] == "overloaded_error"
    _arm(injector, "overloaded_mid_stream")  # a request with no stream: a 529
    assert _post(server.url, REQUEST)[0] == 529


def test_a_malformed_handoff_stands_in_for_the_recorded_reply(
    replay: tuple[CassetteServer, FaultInjector, Cassettes],
) -> None:
    server, injector, cassettes = replay
    _arm(injector, "malformed_handoff")
    status, _, body = _post(server.url, REQUEST)
    (block,) = json.loads(body)["content"]
    assert status == 200 and "```handoff\n[not, a, mapping]\n```" in block["text"]
    server.close()
    assert cassettes.unplayed == []  # the fault replaced the recorded call


def test_an_empty_reply_answers_every_request_of_its_attempt_streamed_or_not(
    replay: tuple[CassetteServer, FaultInjector, Cassettes],
) -> None:
    server, injector, cassettes = replay
    _arm(injector, "empty_reply")
    status, _, body = _post(server.url, REQUEST)
    assert status == 200 and json.loads(body)["content"] == []
    # Claude Code asks again when a reply is empty; that request gets nothing either.
    status, _, body = _post(server.url, NUDGE, stream=True)
    assert status == 200 and "text_delta" not in body.decode()
    assert body.decode().rstrip().endswith('data: {"type": "message_stop"}')
    tape = server.current
    assert tape is not None and tape.played == [True] and tape.misses == []
    server.close()
    assert cassettes.unplayed == []  # the fault replaced the recorded call


def test_an_empty_reply_ends_with_its_attempt(
    replay: tuple[CassetteServer, FaultInjector, Cassettes],
) -> None:
    server, injector, _ = replay
    assert server.current is not None
    path = server.current.path
    _arm(injector, "empty_reply")
    assert json.loads(_post(server.url, REQUEST)[2])["content"] == []
    tape = server.use(path, {})  # the next attempt
    status, _, body = _post(server.url, REQUEST)  # the cassette answers: its call was used
    assert status == 400 and "no recorded call" in json.loads(body)["error"]["message"]
    assert "played already" in tape.misses[0]


def test_a_reply_fault_uses_up_its_recorded_call_before_the_cli_has_the_reply(
    replay: tuple[CassetteServer, FaultInjector, Cassettes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI may ask again the instant it has the empty reply: by then the recorded call
    must already count as played, or the next request replays it a second time."""
    from swarm_runtime.engines import fault_loopback

    server, injector, _ = replay
    order: list[str] = []
    serve = fault_loopback.serve_fault
    monkeypatch.setattr(
        fault_loopback,
        "serve_fault",
        lambda handler, fault, body: (order.append("replied"), serve(handler, fault, body)),
    )
    stand_in = server.stand_in
    monkeypatch.setattr(
        server, "stand_in", lambda *args: (order.append("used up"), stand_in(*args))
    )
    _arm(injector, "empty_reply")  # the loopback starts on first use, with the hooks in place
    _post(server.url, REQUEST)
    assert order == ["used up", "replied"]


def test_a_fault_while_recording_never_reaches_the_provider_and_is_not_recorded(
    tmp_path: Path, anthropic_server: AnthropicServer
) -> None:
    cassettes = Cassettes(tmp_path / "cas", name="cas", record=True, rerecord_command="x")
    injector = FaultInjector(FaultPlan())
    server = _server(cassettes, injector, anthropic_server.url)
    server.use(cassettes.root / "demo" / "draft-worker-0.yaml", {})
    _arm(injector, "http_529")
    assert _post(server.url, REQUEST)[0] == 529
    assert _post(server.url, REQUEST)[0] == 200
    server.close()
    cassettes.commit()
    assert len(anthropic_server.requests) == 1
    text = (tmp_path / "cas" / "demo" / "draft-worker-0.yaml").read_text(encoding="utf-8")
    assert text.startswith("recorded_via: cli\n")
    assert text.count("request:") == 1 and "injected by the fault plan" not in text
