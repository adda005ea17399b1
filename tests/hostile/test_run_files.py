"""Run files that were tampered with: validate, show and diff report them, never crash or
hang, and never read through a symlink."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import Outcome


@pytest.fixture
def run_dir(swarm: Callable[..., Outcome]) -> Path:
    result = swarm("run", "stepwise-demo", "--runs-dir", "runs")
    assert result.code == 0, result.err
    (path,) = (result.cwd / "runs").iterdir()
    return path


DEEP_JSON = "[" * 100_000 + "]" * 100_000


def test_deep_meta_json_is_reported_not_a_recursion_error(
    swarm: Callable[..., Outcome], run_dir: Path
) -> None:
    (run_dir / "meta.json").write_text(DEEP_JSON)
    result = swarm("runs", "validate", str(run_dir))
    assert result.code == 1
    assert "Traceback" not in result.err
    assert "meta.json:1: unreadable: nesting deeper than 100 levels" in result.out + result.err
    shown = swarm("runs", "show", str(run_dir))
    assert shown.code == 2
    shown.one_line_error("meta.json")


def test_deep_event_line_is_reported_with_its_line(
    swarm: Callable[..., Outcome], run_dir: Path
) -> None:
    with open(run_dir / "events.jsonl", "a") as handle:
        handle.write(DEEP_JSON + "\n")
    result = swarm("runs", "validate", str(run_dir))
    assert result.code == 1
    assert "Traceback" not in result.err
    assert "events.jsonl" in result.out and "nesting deeper than 100 levels" in result.out
    assert "Traceback" not in swarm("runs", "show", str(run_dir)).err


def test_event_log_symlinked_to_dev_zero_is_refused_not_read(
    swarm: Callable[..., Outcome], run_dir: Path
) -> None:
    (run_dir / "events.jsonl").unlink()
    os.symlink("/dev/zero", run_dir / "events.jsonl")
    result = swarm("runs", "validate", str(run_dir))  # it read without end before
    assert result.code == 1
    assert "events.jsonl: is a symlink (to /dev/zero)" in result.out
    assert "Traceback" not in swarm("runs", "show", str(run_dir)).err


def test_golden_diff_of_garbage_names_the_file(
    swarm: Callable[..., Outcome], run_dir: Path
) -> None:
    other = run_dir.with_name("run-20200101-000000-aaaaaa")
    other.mkdir()
    (other / "meta.json").write_bytes(b"\xff\xfe{garbage")
    result = swarm("golden", "diff", str(run_dir), str(other))
    assert result.code == 2
    result.one_line_error(f"{other}/meta.json", "is not UTF-8")


def test_a_symlinked_receipt_is_reported_and_not_followed(
    swarm: Callable[..., Outcome], run_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    receipts = run_dir / "stepwise-demo" / "receipts"
    victim = next(receipts.glob("*.json"))
    victim.unlink()
    os.symlink(outside, victim)
    result = swarm("runs", "validate", str(run_dir))
    assert result.code == 1
    assert f"{victim.relative_to(run_dir)}: is a symlink (to {outside})" in result.out


@pytest.mark.parametrize(
    ("receipt", "step", "iteration"),
    [
        ("write_spec-demo-spec-writer.json", "write_spec", 0),
        ("write_function-demo-coder~1.json", "write_function", 0),  # a loop's first round
        ("write_function-demo-coder.json", "write_function", 1),
    ],
)
def test_a_deleted_receipt_is_reported_by_validate(
    swarm: Callable[..., Outcome], run_dir: Path, receipt: str, step: str, iteration: int
) -> None:
    assert swarm("runs", "validate", str(run_dir)).code == 0
    (run_dir / "stepwise-demo" / "receipts" / receipt).unlink()
    result = swarm("runs", "validate", str(run_dir))
    assert result.code == 1
    assert "Traceback" not in result.err
    assert f"step_end of stepwise-demo/{step} (iteration {iteration}) has no receipt" in result.out


def test_nan_or_a_repeated_key_in_a_run_file_is_a_violation(
    swarm: Callable[..., Outcome], run_dir: Path
) -> None:
    receipt = run_dir / "stepwise-demo" / "receipts" / "write_spec-demo-spec-writer.json"
    text = receipt.read_text()
    receipt.write_text(text.replace('"duration_ms": ', '"duration_ms": NaN, "x": ', 1))
    meta = run_dir / "meta.json"
    meta.write_text(meta.read_text().replace("{", '{"status": "running", ', 1))
    result = swarm("runs", "validate", str(run_dir))
    assert result.code == 1
    assert "write_spec-demo-spec-writer.json: unreadable: holds NaN" in result.out
    assert "meta.json: unreadable: has the key 'status' twice" in result.out


def test_a_reply_whose_handoff_holds_nan_fails_its_step_and_writes_no_nan(
    swarm: Callable[..., Outcome],
) -> None:
    project = swarm("--help").cwd
    (project / "s.yaml").write_text(
        'write_spec:\n  text: "done\\n```handoff\\nscore: .nan\\n```"\n'
    )
    result = swarm("run", "stepwise-demo", "--scenario", "s.yaml", "--runs-dir", "runs")
    assert result.code == 1
    assert "not a finite number" in result.out + result.err
    for path in (project / "runs").rglob("*.json*"):
        assert "NaN" not in path.read_text(), path
