"""``swarm golden diff``: Markdown naming exactly the steps that differ."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import SHIPPED_FLOWS, CliResult
from tests.runtime.helpers import run_flows


def test_two_runs_differing_in_one_step(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    first = run_flows(SHIPPED_FLOWS, tmp_path / "a", ("signal",))
    second = run_flows(
        SHIPPED_FLOWS,
        tmp_path / "b",
        ("signal",),
        scenario={"frame_problem": {"tokens": {"prompt": 11, "completion": 7}}},
    )
    result = cli("golden", "diff", str(first.path), str(second.path))
    assert result.code == 1
    table = [line for line in result.out.splitlines() if line.startswith("| ")]
    assert table[0] == "| flow | step | files |"
    rows = table[1:]
    assert rows == [
        # spec.json keeps the scenario a run was made with (swarm resume reads it there)
        "| (run) | - | `meta.json` (modified), `spec.json` (modified) |",
        "| signal | frame_problem | `signal/receipts/frame_problem-problem-framer.json` (modified) |",
    ]
    assert '-    "prompt": ' in result.out and '+    "prompt": 11,' in result.out
    assert "```diff" in result.out


def test_identical_runs_and_a_golden_against_a_run(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    first = run_flows(SHIPPED_FLOWS, tmp_path / "a", ("plan",))
    second = run_flows(SHIPPED_FLOWS, tmp_path / "b", ("plan",))
    same = cli("golden", "diff", str(first.path), str(second.path))
    assert same.code == 0 and "No differences" in same.out
    # The golden was made through pytest, this run through the API: who started a run is
    # normalised away, so the shipped golden is exactly what any run of the flow gives.
    golden = Path(__file__).resolve().parents[2] / "golden" / "plan"
    against = cli("golden", "diff", str(golden), str(second.path))
    assert against.code == 0 and "No differences" in against.out, against.out


def test_swarm_run_of_every_flow_reproduces_its_shipped_golden(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    golden_dir = Path(__file__).resolve().parents[2] / "golden"
    for flow in ("signal", "plan", "build", "review", "gate", "deploy", "wisdom"):
        runs = tmp_path / flow
        assert cli("run", flow, "--runs-dir", str(runs)).code == 0
        (run_dir,) = runs.iterdir()
        result = cli("golden", "diff", str(golden_dir / flow), str(run_dir))
        assert result.code == 0 and "No differences" in result.out, result.out


def test_missing_directory_is_a_usage_error(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("golden", "diff", str(tmp_path / "nope"), str(tmp_path))
    assert result.code == 2 and "not a directory" in result.err


def test_added_and_removed_files(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    first = run_flows(SHIPPED_FLOWS, tmp_path / "a", ("stepwise-demo",))
    second = run_flows(SHIPPED_FLOWS, tmp_path / "b", ("stepwise-demo",))
    extra = second.path / "stepwise-demo" / "receipts" / "zz_extra-x.json"
    extra.write_text(json.dumps({"step_id": "zz_extra"}))
    result = cli("golden", "diff", str(first.path), str(second.path))
    assert (
        "| stepwise-demo | zz_extra | `stepwise-demo/receipts/zz_extra-x.json` (added) |"
        in result.out
    )
