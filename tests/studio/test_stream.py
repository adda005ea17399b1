"""``GET /api/runs/{id}/stream``: server-sent events that tail events.jsonl."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.studio.conftest import Gate, Project


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


def _big_log(project: Project, run_id: str, megabytes: int) -> Any:
    """A running run whose log holds ``megabytes`` MiB of events."""
    lock = project.running_run(run_id)
    pad = "x" * 4000
    lines = [
        json.dumps({"run_id": run_id, "seq": seq, "kind": "log", "payload": {"message": pad}})
        for seq in range(1, megabytes * 1024 * 1024 // 4060 + 2)
    ]
    (project.runs_dir / run_id / "events.jsonl").write_text("\n".join(lines) + "\n")
    return lock


def test_a_stream_holds_one_chunk_of_a_long_log_at_a_time(tmp_path: Path) -> None:
    import asyncio

    from swarm_runtime.studio.sse import StreamLimits, _events
    from swarm_runtime.studio.tail import EventTail

    project = Project(tmp_path)
    run_id = "run-20250101-000000-bigxxx"
    lock = _big_log(project, run_id, 8)
    tail = EventTail(project.runs_dir / run_id / "events.jsonl")
    limits = StreamLimits(chunk_bytes=64 * 1024)

    async def first_two() -> None:
        events = _events(limits, tail, lambda: True, lambda: False, _never)
        await anext(events)  # retry:
        await anext(events)  # the first event
        await events.aclose()

    asyncio.run(first_two())
    assert tail._offset <= limits.chunk_bytes  # not the 8 MiB log, parsed whole
    lock.release()


async def _never() -> bool:
    return False


def test_streams_are_bounded_in_number_and_a_client_that_reads_nothing_is_dropped(
    tmp_path: Path, live_studio: Any
) -> None:
    import socket
    import threading

    from swarm_runtime.studio.sse import StreamLimits

    project = Project(tmp_path)
    run_id = "run-20250101-000000-slowxx"
    lock = _big_log(project, run_id, 20)
    dropped: list[str] = []
    both = threading.Event()

    def on_drop(run: str) -> None:
        dropped.append(run)
        if len(dropped) == 2:
            both.set()

    limits = StreamLimits(max_streams=2, chunk_bytes=64 * 1024, slow_client_seconds=0.2)
    server = live_studio(project.config(streams=limits, on_stream_dropped=on_drop))
    host, port = server.url.removeprefix("http://").split(":")
    stalled = []
    for _ in range(2):  # two clients that ask for the stream and never read a byte
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((host, int(port)))
        sock.sendall(f"GET /api/runs/{run_id}/stream HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        assert sock.recv(12) == b"HTTP/1.1 200"  # its stream is open; from here it reads nothing
        stalled.append(sock)
    third = Stream(server.url, f"/api/runs/{run_id}/stream")
    assert third.response.status == 503 and third.response.getheader("Retry-After") == "5"
    assert "event streams are open" in json.loads(third.response.read())["error"]
    third.close()
    assert both.wait(60), "a client that read nothing was never dropped"
    assert dropped == [run_id, run_id]
    fresh = Stream(server.url, f"/api/runs/{run_id}/stream")  # their slots are free again
    assert fresh.response.status == 200
    assert json.loads(next(fresh.messages())["data"])["seq"] == 1
    fresh.close()
    for sock in stalled:
        sock.close()
    lock.release()


def test_a_stream_opened_as_a_resume_is_answered_follows_the_resumed_run(
    tmp_path: Path, live_studio: Any, gate: Gate
) -> None:
    """The page follows a run it resumes at once: its files still say ``stopped`` then."""
    project = Project(tmp_path)
    server = live_studio(project.config())
    actions = server.studio.actions
    run_id = actions.start({"flows": ["stepwise-demo"], "backend": "gated-step-orchestrator"})
    actions.request(run_id, "stop")
    gate.let()
    backend = actions.backend("gated-step-orchestrator", "stub")
    assert backend.wait(run_id, 60)["status"] == "stopped"
    log = project.runs_dir / run_id / "events.jsonl"
    seen = len(log.read_text().splitlines())
    gate.resumed_start.clear()  # the resumed run has written nothing yet
    actions.resume(run_id)
    stream = Stream(server.url, f"/api/runs/{run_id}/stream?since_seq={seen}")
    messages = stream.messages()
    gate.resumed_start.set()
    gate.let(100)
    kinds = [json.loads(m["data"])["kind"] for m in messages if "event" not in m]
    stream.close()
    assert kinds and kinds[-1] == "run_completed"
    assert backend.wait(run_id, 60)["status"] == "succeeded"
    assert len(kinds) == len(log.read_text().splitlines()) - seen
