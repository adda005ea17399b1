"""``swarm coverage report FILE``: the table and the gaps, or Markdown; bad files refused."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm_runtime.coverage import report as coverage_report
from swarm_runtime.coverage.routes import Taken, Universe, collect
from swarm_runtime.flow.registry import FlowRegistry
from tests.conftest import SHIPPED_FLOWS
from tests.runtime.helpers import events_of, run_flows

Swarm = Callable[..., subprocess.CompletedProcess[str]]


def _report_file(tmp_path: Path) -> Path:
    taken = Taken()
    collect(events_of(run_flows(SHIPPED_FLOWS, tmp_path / "runs", ("gate",))), taken)
    registry = FlowRegistry(SHIPPED_FLOWS)
    report = coverage_report.build(Universe.of(registry), taken)
    path = tmp_path / "swarm-coverage.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_the_table_and_the_edges_never_taken(swarm_process: Swarm, tmp_path: Path) -> None:
    path = _report_file(tmp_path)
    result = swarm_process("coverage", "report", str(path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["flow", "steps", "edges", "covered"]
    assert next(line.split() for line in lines if line.startswith("gate "))[:3] == [
        "gate",
        "9/11",
        "8/15",
    ]
    assert "  gate/decide_merge: branch value 'BOUNCE' -> bounce_to_build never taken" in lines
    assert any(line.startswith("route coverage ") and "over 1 run(s)" in line for line in lines)


def test_markdown_for_a_pull_request(swarm_process: Swarm, tmp_path: Path) -> None:
    path = _report_file(tmp_path)
    result = swarm_process("coverage", "report", str(path), "--markdown")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "| flow | steps | edges | covered |" in lines
    assert any(line.startswith("| gate | 9/11 | 8/15 | ") for line in lines)
    assert "- `gate/decide_merge`: branch value 'BOUNCE' -> bounce_to_build" in lines
    assert "- step `gate/bounce_to_build`" in lines


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "no such file"),
        ("{not json", "not JSON"),
        ('{"format": "swarm-coverage/1"}', "not a swarm coverage report: 'steps' must be"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(
    swarm_process: Swarm, tmp_path: Path, content: str | None, says: str
) -> None:
    path = tmp_path / "swarm-coverage.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = swarm_process("coverage", "report", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"swarm: error: {path}: ") and says in result.stderr


def _valid_with(**changes: object) -> str:
    doc = {
        "format": "swarm-coverage/1",
        "runs": 1,
        "percent": 50.0,
        "steps": {"taken": 1, "total": 2},
        "edges": {"taken": 0, "total": 0},
        "flows": {},
    }
    return json.dumps({**doc, **changes})


HOSTILE: list[tuple[str, Callable[[Path], None], str]] = [
    ("a FIFO", lambda path: os.mkfifo(path), "not a regular file"),
    ("a symlink to /dev/zero", lambda path: path.symlink_to("/dev/zero"), "not a regular file"),
    ("NaN", lambda path: path.write_text(_valid_with().replace("50.0", "NaN")), "NaN"),
    ("1e308", lambda path: path.write_text(_valid_with(percent=1e308)), "'percent' a number"),
    ("a huge whole number", lambda path: path.write_text(_valid_with(percent=10**400)), "0 to 100"),
    (
        "10 000-deep nesting",
        lambda path: path.write_text(
            _valid_with(flows={}).replace("{}", "[" * 10_000 + "]" * 10_000)
        ),
        "nesting deeper than",
    ),
    (
        "a flow's percent of -1",
        lambda path: path.write_text(
            _valid_with(flows={"f": {"percent": -1, "steps": [], "edges": []}})
        ),
        "flows.f: must be an object with a 'percent' from 0 to 100",
    ),
    (
        "a terminal escape and a new line in a step id",
        lambda path: path.write_text(
            _valid_with(
                flows={
                    "f": {
                        "percent": 0,
                        "steps": [],
                        "edges": [
                            {"from": "a\x1b[2J\nFAKE", "to": "b", "label": "next", "taken": 0}
                        ],
                    }
                }
            )
        ),
        "flows.f: edge 'from' 'a\\x1b[2J\\nFAKE' is not a step id",
    ),
    (
        "markup as a flow key",
        lambda path: path.write_text(
            _valid_with(flows={"<img src=x>\n": {"percent": 0, "steps": [], "edges": []}})
        ),
        "flows.'<img src=x>\\n': not a flow key",
    ),
    (
        "a control character in a label",
        lambda path: path.write_text(
            _valid_with(
                flows={
                    "f": {
                        "percent": 0,
                        "steps": [{"id": "a", "taken": 0}],
                        "edges": [{"from": "a", "to": "g/b", "label": "x\ry", "taken": 0}],
                    }
                }
            )
        ),
        "flows.f: edge label 'x\\ry' holds a control character",
    ),
]


@pytest.mark.parametrize(("what", "make", "says"), HOSTILE, ids=[case[0] for case in HOSTILE])
def test_a_hostile_file_is_one_line_naming_it(
    swarm_process: Swarm, tmp_path: Path, what: str, make: Callable[[Path], None], says: str
) -> None:
    path = tmp_path / "swarm-coverage.json"
    make(path)
    for markdown in ((), ("--markdown",)):
        result = swarm_process("coverage", "report", str(path), *markdown)
        assert result.returncode == 2, (what, result.stderr)
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"swarm: error: {path}:") and says in result.stderr


def test_the_tools_never_called_under_the_table(swarm_process: Swarm, tmp_path: Path) -> None:
    from tests.runtime.helpers import step_yaml, write_flow

    flows = tmp_path / "flows"
    write_flow(flows, "support", [step_yaml("research") + "    tools: [search, fetch_page]\n"])
    calls = {"research": {"tools": [{"tool": "search", "input": {}}]}}
    taken = Taken()
    collect(events_of(run_flows(flows, tmp_path / "runs", scenario=calls)), taken)
    path = tmp_path / "swarm-coverage.json"
    path.write_text(json.dumps(coverage_report.build(Universe.of(FlowRegistry(flows)), taken)))
    result = swarm_process("coverage", "report", str(path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split() for line in lines[:2]] == [
        ["flow", "steps", "edges", "tools", "covered"],
        ["support", "1/1", "0/0", "1/2", "100.0%"],
    ]
    assert lines[-2:] == [
        "tools never called (not counted in the coverage):",
        "  support/research: fetch_page never called",
    ]
