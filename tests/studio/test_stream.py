"""``GET /api/runs/{id}/stream``: server-sent events that tail events.jsonl."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.studio.conftest import Project


class Stream:
    """An SSE connection read message by message (blocking reads, a socket timeout)."""

    def __init__(self, url: str, path: str, headers: dict[str, str] | None = None) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=30)
        self.connection.request("GET", path, headers=headers or {})
        self.response = self.connection.getresponse()

    def messages(self) -> Iterator[dict[str, str]]:
        message: dict[str, str] = {}
        while True:
            line = self.response.readline()
            if not line:
                return
            text = line.decode().rstrip("\n")
            if text == "":
                if message.keys() - {"retry"}:
                    yield message
                message = {}
            elif not text.startswith(":"):
                key, _, value = text.partition(": ")
                message[key] = value

    def close(self) -> None:
        self.connection.close()


def test_a_finished_run_streams_every_event_then_ends(tmp_path: Path, live_studio: Any) -> None:
    project = Project(tmp_path)
    run_id = project.run("stepwise-demo")
    server = live_studio(project.config())
    stream = Stream(server.url, f"/api/runs/{run_id}/stream")
    assert stream.response.getheader("content-type").startswith("text/event-stream")
    messages = list(stream.messages())
    lines = (project.runs_dir / run_id / "events.jsonl").read_text().splitlines()
    events = [m for m in messages if "data" in m and "event" not in m]
    assert [json.loads(m["data"]) for m in events] == [json.loads(line) for line in lines]
    assert [int(m["id"]) for m in events] == list(range(1, len(lines) + 1))
    assert messages[-1]["event"] == "end"
    stream.close()


def test_a_reconnect_with_last_event_id_goes_on_after_it(tmp_path: Path, live_studio: Any) -> None:
    project = Project(tmp_path)
    run_id = project.run("stepwise-demo")
    server = live_studio(project.config())
    stream = Stream(server.url, f"/api/runs/{run_id}/stream", {"Last-Event-ID": "7"})
    ids = [int(m["id"]) for m in stream.messages() if "id" in m]
    assert ids[0] == 8
    stream.close()
    last = len((project.runs_dir / run_id / "events.jsonl").read_text().splitlines())
    caught_up = Stream(server.url, f"/api/runs/{run_id}/stream", {"Last-Event-ID": str(last)})
    # a client that has every event, run_completed included, is told the run is over
    assert list(caught_up.messages()) == [{"event": "end", "data": f'{{"last_seq": {last}}}'}]
    caught_up.close()
    missing = Stream(server.url, "/api/runs/run-20250101-000000-nosuch/stream")
    assert missing.response.status == 404
    missing.close()


def _event(run_id: str, seq: int, kind: str) -> str:
    return json.dumps({"run_id": run_id, "seq": seq, "kind": kind, "payload": {}}) + "\n"


def test_events_appended_to_a_running_run_arrive_as_they_are_written(
    tmp_path: Path, live_studio: Any
) -> None:
    project = Project(tmp_path)
    run_id = "run-20250101-000000-livexx"
    run_dir = project.runs_dir / run_id
    lock = project.running_run(run_id)
    log = run_dir / "events.jsonl"
    log.write_text(_event(run_id, 1, "run_created"))
    server = live_studio(project.config())
    stream = Stream(server.url, f"/api/runs/{run_id}/stream")
    messages = stream.messages()
    assert json.loads(next(messages)["data"])["seq"] == 1
    for seq, kind in ((2, "run_started"), (3, "step_start")):
        with log.open("a") as out:
            out.write(_event(run_id, seq, kind))
        assert json.loads(next(messages)["data"]) == json.loads(_event(run_id, seq, kind))
    with log.open("a") as out:
        out.write(_event(run_id, 4, "run_completed"))
    (run_dir / "meta.json").write_text(json.dumps({"status": "succeeded", "flows": ["x"]}))
    lock.release()
    assert json.loads(next(messages)["data"])["kind"] == "run_completed"
    assert next(messages)["event"] == "end"
    stream.close()
