"""Run storage: atomic writes, the event log reader, ~n renames, unique run ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm_runtime.errors import (
    StorageError,
)
from swarm_runtime.ids import RUN_ID_RE, new_run_id
from swarm_runtime.storage.store import (
    EventLog,
    dump_json,
    encode_line,
    encoded,
    message_line,
    preserve_previous,
    read_event_log,
    stamped_line,
    write_json_atomic,
)
from tests.conftest import StepClock
from tests.runtime.helpers import step_yaml, write_flow


def test_atomic_write_leaves_no_temp_file_and_replaces_whole(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    write_json_atomic(target, {"a": 1})
    write_json_atomic(target, {"b": [1, 2]})
    assert json.loads(target.read_text()) == {"b": [1, 2]}
    assert [p.name for p in tmp_path.iterdir()] == ["doc.json"]


def test_failed_atomic_write_keeps_the_old_document(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    write_json_atomic(target, {"ok": True})
    with pytest.raises(TypeError):
        write_json_atomic(target, {"bad": object()})
    assert json.loads(target.read_text()) == {"ok": True}
    with pytest.raises(StorageError, match="could not write"):
        write_json_atomic(tmp_path / "missing-dir" / "doc.json", {"a": 1})


def test_event_log_reader_reports_and_skips_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append({"seq": 1})
    log.append({"seq": 2})
    log.close()
    with path.open("a") as handle:
        handle.write('{"seq": 3, "kind": "step_')
    result = read_event_log(path)
    assert [e["seq"] for e in result.events] == [1, 2]
    assert result.torn is not None and result.torn.line == 3
    assert "torn last line" in result.torn.describe(path)


def test_event_log_reader_refuses_a_torn_middle_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"seq": 1}\n{"seq": 2\n{"seq": 3}\n')
    with pytest.raises(StorageError, match=r"events.jsonl:2: .*only the last line"):
        read_event_log(path)


def test_closed_event_log_refuses_appends(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    log.close()
    with pytest.raises(StorageError, match="closed"):
        log.append({"seq": 1})


def test_preserve_previous_numbers_in_execution_order(tmp_path: Path) -> None:
    path = tmp_path / "step-agent.json"
    assert preserve_previous(path) is None
    for n in range(3):
        preserve_previous(path)
        path.write_text(str(n))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "step-agent.json",
        "step-agent~1.json",
        "step-agent~2.json",
    ]
    assert (tmp_path / "step-agent~1.json").read_text() == "0"
    assert path.read_text() == "2"


def test_run_id_shape() -> None:
    run_id = new_run_id(StepClock()())
    assert RUN_ID_RE.match(run_id)
    assert run_id.startswith("run-20250115-100000-")


def test_run_ids_unique_across_parallel_processes_in_the_same_second(tmp_path: Path) -> None:
    # Every process gets the same clock second and a random source with few values, so ids
    # collide often; the exclusive mkdir must still give each run its own directory.
    script = f"""
import sys, random
from datetime import datetime, UTC
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.runtime.helpers import write_flow, step_yaml
flows = Path(sys.argv[1])
rng = random.Random()
orch = Orchestrator(FlowRegistry(flows), runs_dir=Path(sys.argv[2]), deps=RunDeps(
                    clock=lambda: datetime(2025, 1, 1, tzinfo=UTC),
                    rand=lambda n: rng.choice(["aaaaaa", "bbbbbb", "cccccc", "dddddd", "eeeeee",
                                               "ffffff", "gggggg", "hhhhhh"])))
for _ in range(3):
    print(orch.run(RunSpec(flows=("tiny",))).run_id)
"""

    flows = tmp_path / "flows"
    write_flow(flows, "tiny", [step_yaml("only")])
    runs = tmp_path / "runs"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(flows), str(runs)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    ids = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        ids.extend(out.split())
    assert len(ids) == 6 and len(set(ids)) == 6
    assert sorted(os.listdir(runs)) == sorted(ids)


def test_a_write_that_fails_half_way_leaves_no_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from swarm_runtime.errors import StorageError
    from swarm_runtime.storage import store

    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append({"seq": 1})
    real = store._write
    calls: list[int] = []

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data[:5]))  # a short write: half the line lands
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "_write", half_then_full)
    with pytest.raises(StorageError, match=r"could not append to .*events.jsonl: ENOSPC"):
        log.append({"seq": 2, "kind": "step_start"})
    monkeypatch.setattr(store, "_write", real)
    assert path.read_text() == '{"seq": 1}\n'  # cut back to the last whole line
    log.append({"seq": 2})
    log.close()
    log.close()  # closing twice never raises
    assert [e["seq"] for e in read_event_log(path).events] == [1, 2]


def test_a_whole_last_line_without_newline_is_an_event_not_torn(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"seq": 1}\n{"seq": 2}')
    result = read_event_log(path)
    assert [e["seq"] for e in result.events] == [1, 2] and result.torn is None


def test_preserve_previous_starts_where_the_caller_says(tmp_path: Path) -> None:
    path = tmp_path / "step-agent.json"
    for n in (1, 2, 3):
        (tmp_path / f"step-agent~{n}.json").write_text(str(n))
    path.write_text("fourth")
    assert preserve_previous(path, first=4) == str(tmp_path / "step-agent~4.json")
    path.write_text("fifth")
    # A hint that is too low still finds the next free number: nothing is overwritten.
    assert preserve_previous(path, first=2) == str(tmp_path / "step-agent~5.json")
    assert [(tmp_path / f"step-agent~{n}.json").read_text() for n in (4, 5)] == ["fourth", "fifth"]


@pytest.mark.parametrize(
    "value",
    [
        {"kind": "log", "payload": {"b": [1, 2.5, None, True], "a": 'é\n\u2028\x7f\t"q\\'}},
        {"nested": {"z": {}, "y": [], "x": [{"k": "v"}]}, "n": -0.0, "big": 2**70},
        ["plain", 0, False],
    ],
)
def test_run_files_keep_the_layout_json_dumps_gives(value: object) -> None:
    # What a user greps for ('"kind": "log"') and what every earlier run dir holds.
    line = encode_line(value)
    assert line == json.dumps(value, sort_keys=True, ensure_ascii=False) + "\n"
    pretty = dump_json(value, pretty=True)
    assert pretty == json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def test_a_nan_in_a_reply_is_written_as_null_never_as_a_bare_word() -> None:
    line = encode_line({"input": {"score": float("nan"), "top": float("inf")}})
    assert line == '{"input": {"score": null, "top": null}}\n'
    assert json.loads(line, parse_constant=lambda word: pytest.fail(word)) is not None


def test_an_encoded_line_stands_in_a_document_as_its_value() -> None:
    event = {"seq": 3, "kind": "step_end", "payload": {"status": "succeeded"}}
    document = {"pending_events": [encoded(encode_line(event))], "next_seq": 4}
    assert json.loads(dump_json(document)) == {"pending_events": [event], "next_seq": 4}


TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
"""Any text UTF-8 can hold: quotes, backslashes, control characters, U+2028, emoji."""


@settings(deadline=None, max_examples=400)
@given(TEXT, TEXT, TEXT, TEXT)
def test_a_transcript_line_is_the_line_the_encoder_lays_out(
    content: str, role: str, timestamp: str, other: str
) -> None:
    # Message lines are built around their encoded strings, with no layout pass: the same
    # bytes as encode_line, whatever the text holds.
    line = {"content": content, "role": role, "timestamp": timestamp}
    assert message_line(content, role, timestamp) == encode_line(line).encode()
    reply = {"role": role, "content": content}
    assert stamped_line(reply, timestamp) == encode_line({"timestamp": timestamp, **reply}).encode()
    tool = {"role": role, "content": [{"type": other}], "id": other}
    assert stamped_line(tool, timestamp) == encode_line({"timestamp": timestamp, **tool}).encode()
