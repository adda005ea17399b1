"""A run's attempts, read from its event log for the final table's total time."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

from swarm_runtime.cli.render import attempt_spans

START = datetime(2026, 11, 28, 8, 0, 0, tzinfo=UTC)


def _line(seq: int, kind: str, seconds: float, **payload: object) -> str:
    ts = (START + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
    event = {"seq": seq, "ts": ts.replace("+00:00", "Z"), "kind": kind, "payload": payload}
    return json.dumps(event) + "\n"


def test_each_attempt_runs_from_its_start_to_its_last_whole_line(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(
        _line(1, "run_created", 0)
        + _line(2, "step_end", 5, output="a reply that says run_resumed and run_created")
        + _line(3, "run_completed", 7)
        + _line(4, "run_resumed", 60)
        + _line(5, "step_end", 62)
        + _line(6, "run_resumed", 100)
        + _line(7, "step_end", 103)
        + '{"seq": 8, "ts": "2026-11-28T08:01:50.000Z", "kind": "step_e',  # torn
        encoding="utf-8",
    )
    second = timedelta(seconds=1)
    assert attempt_spans(log) == [
        (START, START + 7 * second),
        (START + 60 * second, START + 62 * second),
        (START + 100 * second, START + 103 * second),
    ]


def test_a_long_log_is_read_without_holding_it(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    pad = "x" * 2000
    with log.open("w", encoding="utf-8") as out:
        out.write(_line(1, "run_created", 0))
        for seq in range(2, 10_002):
            out.write(_line(seq, "step_end", seq / 100, text=pad))
    assert log.stat().st_size > 20_000_000
    tracemalloc.start()
    try:
        spans = attempt_spans(log)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert spans == [(START, START + timedelta(seconds=100.01))]
    assert peak < 1_000_000  # a few lines at a time, not the 20 MB log
