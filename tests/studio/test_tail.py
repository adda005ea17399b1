"""Following events.jsonl: whole lines only, each event once, a replaced log read again."""

from __future__ import annotations

import json
from pathlib import Path

from swarm_runtime.studio.tail import EventTail


def _line(seq: int) -> bytes:
    return (json.dumps({"seq": seq, "kind": "log", "payload": {}}) + "\n").encode()


def test_a_line_half_written_waits_for_its_end(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    tail = EventTail(log)
    assert tail.poll() == []  # not there yet
    whole = _line(1) + _line(2)
    log.write_bytes(whole + _line(3)[:10])
    assert [e["seq"] for e in tail.poll()] == [1, 2]
    with log.open("ab") as out:
        out.write(_line(3)[10:])
    assert [e["seq"] for e in tail.poll()] == [3]
    assert tail.poll() == []


def test_since_seq_and_a_replaced_log(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"".join(_line(n) for n in range(1, 6)))
    tail = EventTail(log, since_seq=3)
    assert [e["seq"] for e in tail.read_all()] == [4, 5]
    log.write_bytes(_line(1) + _line(6))  # shorter: read from the start, seq 1 already given
    assert [e["seq"] for e in tail.poll()] == [6]


def test_lines_that_are_not_events_are_skipped(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b'[1]\n{"seq": true}\nnot json\n' + _line(1))
    assert [e["seq"] for e in EventTail(log).read_all()] == [1]
