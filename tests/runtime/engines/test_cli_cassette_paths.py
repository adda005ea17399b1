"""A reply that names a path of the checkout, recorded through the CLI's loopback server and
replayed in another checkout: the cassette holds a placeholder, the replayed reply the path
of the checkout it replays in (a tool call's input then points where it should).

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

REQUEST = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Note it."}],
}


def _post(url: str) -> bytes:
    connection = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=30)
    try:
        connection.request(
            "POST",
            "/v1/messages",
            body=json.dumps(REQUEST),
            headers={"content-type": "application/json"},
        )
        return connection.getresponse().read()
    finally:
        connection.close()


def _served(directory: Path, repo: Path, *, upstream: str, record: bool) -> bytes:
    cassettes = Cassettes(directory, name="cas", record=record, rerecord_command="x")
    server = CassetteServer(
        cassettes, upstream=upstream, provider="anthropic", credentials=Credentials()
    )
    server.use(cassettes.root / "demo" / "note-worker-0.yaml", {"repo": str(repo)})
    try:
        return _post(server.url)
    finally:
        server.close()
        if record:
            cassettes.commit()


def test_a_checkout_path_in_a_recorded_reply_is_the_replaying_checkouts(tmp_path: Path) -> None:
    recorded_in, replayed_in = tmp_path / "first", tmp_path / "second"
    provider = AnthropicServer().start()
    call = {"name": "mcp__swarm__note", "input": {"path": f"{recorded_in}/noted.txt"}}
    provider.script(Reply(tool_use=call))
    try:
        live = _served(tmp_path / "cas", recorded_in, upstream=provider.url, record=True)
    finally:
        provider.stop()
    assert f"{recorded_in}/noted.txt" in live.decode()
    kept = (tmp_path / "cas" / "demo" / "note-worker-0.yaml").read_text(encoding="utf-8")
    assert "<repo>/noted.txt" in kept and str(recorded_in) not in kept
    replayed = _served(tmp_path / "cas", replayed_in, upstream="http://127.0.0.1:9", record=False)
    tool_use = json.loads(replayed)["content"][0]
    assert tool_use["input"] == {"path": f"{replayed_in}/noted.txt"}
