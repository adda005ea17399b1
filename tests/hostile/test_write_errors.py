"""A disk that fails (ENOSPC, EFBIG) at any write of a run: one line on stderr naming the
file and the errno, exit 1, no torn event line, and meta.json agrees with the last event
or ``swarm runs validate`` names the disagreement."""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.storage import store
from tests.conftest import CliResult
from tests.hostile.conftest import Outcome

# Which file a write goes to, by the path of its descriptor (temp files carry the name).
KINDS = {
    "spec": re.compile(r"/spec\.json"),
    "meta": re.compile(r"/meta\.json"),
    "events": re.compile(r"/events\.jsonl$"),
    "receipt": re.compile(r"/receipts/[^/]+\.json"),
    "transcript": re.compile(r"/llm/[^/]+\.jsonl"),
    "checkpoint": re.compile(r"/checkpoint\.json"),
    "history": re.compile(r"/history\.jsonl$"),
}
CODES = {"ENOSPC": errno.ENOSPC, "EFBIG": errno.EFBIG}


def _failing_write(kind: str, nth: int, code: int) -> Callable[[int, bytes], int]:
    """os.write that fails the ``nth`` write to a ``kind`` file (after half of it lands)."""
    real = store._write
    seen = [0]

    def write(fd: int, data: bytes) -> int:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if KINDS[kind].search(target):
            seen[0] += 1
            if seen[0] == nth:
                real(fd, bytes(data[: len(data) // 2]))
                raise OSError(code, os.strerror(code))
        return real(fd, data)

    return write


def _check_run_dirs(runs: Path) -> None:
    for run in runs.glob("run-*") if runs.is_dir() else ():
        text = (run / "events.jsonl").read_text()
        assert text == "" or text.endswith("\n"), "a torn last line"
        events = [json.loads(line) for line in text.splitlines()]  # every line whole
        meta = json.loads((run / "meta.json").read_text())
        if events and events[-1]["kind"] == "run_completed":
            found = [str(v) for v in validate_run_dir(run)]
            if meta["status"] != events[-1]["payload"]["status"]:
                assert any("meta.json" in v for v in found), found
            else:  # the run ended in order: every step it opened is closed, and so on
                assert not found, found
        elif meta["status"] in ("succeeded", "failed", "stopped"):
            found = [str(v) for v in validate_run_dir(run)]
            assert any("does not end with run_completed" in v for v in found), found
        assert not list(run.rglob("*.tmp")), "a temp file left behind"


@pytest.mark.parametrize("code_name", sorted(CODES))
@pytest.mark.parametrize(
    ("kind", "nth"), [(k, n) for k in KINDS for n in (1, 3) if (k, n) != ("spec", 3)]
)
def test_a_write_error_ends_the_run_in_one_line(
    cli: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    kind: str,
    nth: int,
    code_name: str,
) -> None:
    monkeypatch.setattr(store, "_write", _failing_write(kind, nth, CODES[code_name]))
    result = cli("run", "stepwise-demo", "--runs-dir", "runs")
    monkeypatch.undo()
    assert result.code == 1, (result.out, result.err)
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert code_name in lines[0] and "Traceback" not in result.err
    assert re.search(KINDS[kind].pattern.rstrip("$"), lines[0]), lines[0]  # names the file
    _check_run_dirs(tmp_path / "runs")
    if kind == "spec":
        assert not list((tmp_path / "runs").glob("run-*"))  # no run dir at all


def _file_size_limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (40 * 1024, 40 * 1024))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes then fail with EFBIG


def test_a_real_file_size_limit_ends_the_run_cleanly(swarm: Callable[..., Outcome]) -> None:
    # ulimit -f 40: the SDLC's event log outgrows 40 KiB part-way through the run.
    result = swarm("run", "--runs-dir", "runs", preexec=_file_size_limit)
    assert result.code == 1, result.err
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "EFBIG" in lines[0], result.err
    _check_run_dirs(result.cwd / "runs")
