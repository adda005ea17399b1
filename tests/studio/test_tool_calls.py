"""A step's tool calls in the studio's API: each execution's, in order, with their times."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.studio.conftest import HOSTILE, LONG_OUTPUT, Project, tool_project


@pytest.fixture(scope="module")
def tooly(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str]:
    return tool_project(tmp_path_factory.mktemp("tooly"))


def _step(client: Any, run_id: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/runs/{run_id}/flows/support/steps/research", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_step_gives_each_executions_tool_calls_in_order_with_their_times(
    tooly: tuple[Project, str], client_for: Any
) -> None:
    project, run_id = tooly
    client = client_for(project.config())
    first = _step(client, run_id, iteration=0)
    calls = first["tool_calls"]
    assert [(c["tool"], c["success"]) for c in calls] == [
        ("search", True),
        ("fetch_page", True),
        (HOSTILE, False),
    ]
    assert calls[0]["input"] == {"q": HOSTILE} and calls[0]["output"] == ["doc-7", HOSTILE]
    assert calls[1]["output"] == LONG_OUTPUT  # whole: the page cuts it, visibly
    events = [
        json.loads(line)
        for line in (project.runs_dir / run_id / "events.jsonl").read_text().splitlines()
    ]
    starts = [e["ts"] for e in events if e["kind"] == "tool_start"]
    assert [c["started_at"] for c in calls] == starts[:3]
    assert all(isinstance(c["ms"], int) and c["ms"] >= 0 for c in calls)
    latest = _step(client, run_id)
    assert latest["iteration"] == 1
    assert [(c["tool"], c["input"]) for c in latest["tool_calls"]] == [
        ("fetch_page", {"id": "doc-8"})
    ]


def test_a_calls_time_is_its_tool_end_less_its_tool_start(
    tooly: tuple[Project, str], client_for: Any, tmp_path: Path
) -> None:
    import shutil

    project, run_id = tooly
    copy = Project(tmp_path)
    shutil.copytree(project.runs_dir / run_id, copy.runs_dir / run_id)
    log = copy.runs_dir / run_id / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    search = [e for e in events if e["kind"] in ("tool_start", "tool_end")][:2]
    search[0]["ts"], search[1]["ts"] = "2026-01-01T10:00:00.000000Z", "2026-01-01T10:00:01.250000Z"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    calls = _step(client_for(copy.config()), run_id, iteration=0)["tool_calls"]
    assert calls[0]["ms"] == 1250


def test_a_call_still_running_has_no_result_yet(
    tooly: tuple[Project, str], client_for: Any, tmp_path: Path
) -> None:
    import shutil

    project, run_id = tooly
    copy = Project(tmp_path)
    shutil.copytree(project.runs_dir / run_id, copy.runs_dir / run_id)
    log = copy.runs_dir / run_id / "events.jsonl"
    lines = log.read_text().splitlines()
    last_start = max(i for i, line in enumerate(lines) if '"tool_start"' in line)
    log.write_text("".join(line + "\n" for line in lines[: last_start + 1]))
    (call,) = _step(client_for(copy.config()), run_id)["tool_calls"]
    assert call["tool"] == "fetch_page"
    assert (call["success"], call["output"], call["ms"]) == (None, None, None)


def test_a_step_without_tool_calls_has_none(tooly: tuple[Project, str], client_for: Any) -> None:
    project, run_id = tooly
    client = client_for(project.config())
    body = client.get(f"/api/runs/{run_id}/flows/support/steps/check").json()
    assert body["tool_calls"] == []
