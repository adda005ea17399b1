"""A provider that echoes the key into its reply, recorded through the CLI's loopback server:
the key is scrubbed from the cassette (docs/record-replay.md#secrets), the recording is kept, and it
replays.

The server is driven over a real socket as a CLI would drive it (tests/real_cli runs the
real CLIs).
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.engines.cli_cassette import CassetteServer
from tests.fakes.anthropic_server import AnthropicServer, Reply

KEY = "sk-ant-loopback-echo-not-a-key"
REQUEST = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Say hello."}],
}


def _post(url: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=30)
    try:
        connection.request(
            "POST",
            "/v1/messages",
            body=json.dumps(REQUEST),
            headers={"content-type": "application/json", "x-api-key": KEY},
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _server(directory: Path, *, record: bool, upstream: str) -> tuple[CassetteServer, Path]:
    cassettes = Cassettes(directory, name="cas", record=record, rerecord_command="x")
    server = CassetteServer(
        cassettes,
        upstream=upstream,
        provider="anthropic",
        credentials=Credentials.from_env({"ANTHROPIC_API_KEY": KEY}),
    )
    path = cassettes.root / "demo" / "draft-worker-0.yaml"
    server.use(path, {})
    return server, path


def test_a_key_echoed_in_a_reply_is_scrubbed_from_the_cli_cassette(tmp_path: Path) -> None:
    provider = AnthropicServer().start()
    provider.echo_key_header = "x-echoed-key"
    provider.script(Reply(text=f"Your key is {KEY}."))
    try:
        server, _ = _server(tmp_path / "cas", record=True, upstream=provider.url)
        status, _ = _post(server.url)
        server.close()
        server.cassettes.commit()
    finally:
        provider.stop()
    assert status == 200
    assert provider.requests[0]["headers"]["x-api-key"] == KEY
    cassette = tmp_path / "cas" / "demo" / "draft-worker-0.yaml"
    assert "Your key is [scrubbed ANTHROPIC_API_KEY]." in cassette.read_text()
    holding = [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert holding == []
    replay, _ = _server(tmp_path / "cas", record=False, upstream="http://127.0.0.1:9")
    status, body = _post(replay.url)
    replay.close()
    assert status == 200
    assert json.loads(body)["content"][0]["text"] == "Your key is [scrubbed ANTHROPIC_API_KEY]."
    assert replay.cassettes.unplayed == []
