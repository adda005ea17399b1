"""The studio's JSON API over runs made by ``swarm run``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.storage.lock import RunLock
from tests.conftest import SHIPPED_FLOWS
from tests.studio.conftest import LOCAL, Project

pytestmark = pytest.mark.usefixtures("made_runs")


@pytest.fixture
def client(made_runs: tuple[Project, dict[str, str]], client_for: Any) -> Any:
    project, _ = made_runs
    return client_for(project.config())


def test_the_list_shows_every_run_newest_first_with_its_totals(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    project, runs = made_runs
    body = client.get("/api/runs").json()
    assert body["total"] == 3
    assert [r["run_id"] for r in body["runs"]] == [
        runs["build_fails"],
        runs["deploy"],
        runs["signal"],
    ]
    signal = body["runs"][2]
    meta = json.loads((project.runs_dir / runs["signal"] / "meta.json").read_text())
    assert signal["status"] == "succeeded"
    assert signal["flows"] == ["signal"]
    assert signal["steps"] == meta["total_steps_executed"] == 10
    assert signal["loops"] == meta["loop_iterations"] == 1
    assert signal["tokens"] == meta["tokens"]["total"] > 0
    assert signal["created_at"] == meta["created_at"]
    assert body["runs"][0]["status"] == "failed"
    assert "the build broke" in body["runs"][0]["error"]


def test_the_list_filters_by_status_and_flow_and_pages(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    _, runs = made_runs
    failed = client.get("/api/runs", params={"status": "failed"}).json()
    assert [r["run_id"] for r in failed["runs"]] == [runs["build_fails"]]
    deploy = client.get("/api/runs", params={"flow": "deploy"}).json()
    assert [r["run_id"] for r in deploy["runs"]] == [runs["deploy"]]
    assert (
        client.get("/api/runs", params={"flow": "deploy", "status": "failed"}).json()["runs"] == []
    )
    second = client.get("/api/runs", params={"per_page": 2, "page": 2}).json()
    assert [r["run_id"] for r in second["runs"]] == [runs["signal"]]
    assert second["total"] == 3
    facets = client.get("/api/facets").json()
    assert facets == {"statuses": ["failed", "succeeded"], "flows": ["build", "deploy", "signal"]}
    bad = client.get("/api/runs", params={"page": "two"})
    assert bad.status_code == 400 and "'two' is not a whole number" in bad.json()["error"]


def test_a_run_summary_and_its_events_since_a_seq(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    project, runs = made_runs
    run_id = runs["signal"]
    summary = client.get(f"/api/runs/{run_id}").json()
    assert summary["status"] == "succeeded" and summary["live"] is False
    assert summary["spec"]["flows"] == ["signal"]
    assert summary["flow_totals"]["signal"]["steps_executed"] == 10
    lines = (project.runs_dir / run_id / "events.jsonl").read_text().splitlines()
    everything = client.get(f"/api/runs/{run_id}/events").json()["events"]
    assert everything == [json.loads(line) for line in lines]
    later = client.get(f"/api/runs/{run_id}/events", params={"since_seq": 5}).json()["events"]
    assert [e["seq"] for e in later] == list(range(6, len(lines) + 1))


def _graph(client: Any, run_id: str, flow: str) -> dict[str, Any]:
    flows = client.get(f"/api/runs/{run_id}/graph").json()["flows"]
    return next(f for f in flows if f["key"] == flow)


def test_the_run_graph_has_every_step_and_the_loop_edge_with_counts(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    _, runs = made_runs
    graph = _graph(client, runs["signal"], "signal")
    flow = FlowRegistry(SHIPPED_FLOWS).get("signal")
    assert [n["id"] for n in graph["nodes"]] == [s.id for s in flow.steps]
    loops = [e for e in graph["edges"] if e["kind"] == "loop"]
    assert loops == [
        {
            "from": "critique_requirements",
            "to": "author_requirements",
            "kind": "loop",
            "label": "status≠VERIFIED (max 3)",
        }
    ]
    by_id = {n["id"]: n for n in graph["nodes"]}
    assert by_id["author_requirements"]["count"] == 2  # the critic sent it back once
    assert by_id["frame_problem"]["count"] == 1
    assert {n["status"] for n in graph["nodes"]} == {"succeeded"}


def test_branch_edges_are_labelled_with_their_values(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    _, runs = made_runs
    graph = _graph(client, runs["deploy"], "deploy")
    branches = {(e["to"], e["label"]) for e in graph["edges"] if e["kind"] == "branch"}
    assert branches == {
        ("promote_release", "health=HEALTHY"),
        ("roll_back_canary", "health=DEGRADED"),
        ("roll_back_canary", "default"),
    }
    statuses = {n["id"]: n["status"] for n in graph["nodes"]}
    assert "not_run" in statuses.values()  # the branch not taken


def test_a_failed_step_is_failed_in_the_graph(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    _, runs = made_runs
    nodes = {n["id"]: n for n in _graph(client, runs["build_fails"], "build")["nodes"]}
    assert nodes["implement_code"]["status"] == "failed"
    assert nodes["implement_code"]["count"] == 1


def test_a_step_gives_its_receipt_transcript_and_handoff_per_execution(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    project, runs = made_runs
    run_id = runs["signal"]
    url = f"/api/runs/{run_id}/flows/signal/steps/critique_requirements"
    latest = client.get(url).json()
    assert latest["iterations"] == [0, 1] and latest["iteration"] == 1
    receipt_file = project.runs_dir / run_id / latest["receipt_file"]
    assert latest["receipt"] == json.loads(receipt_file.read_text())
    assert latest["handoff"]["status"] == "VERIFIED"
    assert [line["role"] for line in latest["transcript"]] == ["system", "user", "assistant"]
    first = client.get(url, params={"iteration": 0}).json()
    assert first["receipt_file"].endswith("~1.json") and first["handoff"]["status"] != "VERIFIED"
    # each execution shows its own transcript, not the latest one
    llm = project.runs_dir / run_id / "signal" / "llm"
    (earlier,) = llm.glob("critique_requirements-*~1.jsonl")
    assert first["transcript"] == [json.loads(line) for line in earlier.read_text().splitlines()]
    assert first["transcript"] != latest["transcript"]
    missing = client.get(url, params={"iteration": 7})
    assert missing.status_code == 404 and "no iteration 7" in missing.json()["error"]


def test_flows_and_their_graphs(client: Any) -> None:
    listing = client.get("/api/flows").json()
    assert listing["default"][:2] == ["signal", "plan"]
    assert {f["key"] for f in listing["flows"]} >= {"signal", "stepwise-demo"}
    utility = {f["key"] for f in listing["flows"] if f.get("utility")}
    assert utility == {"security-scan"}  # listed, marked: the page does not offer it to start
    graph = client.get("/api/flows/stepwise-demo/graph").json()
    assert any(e["kind"] == "loop" for e in graph["edges"])
    assert client.get("/api/flows/nope/graph").status_code == 404


def test_compare_a_golden_with_a_run_and_two_runs(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    _, runs = made_runs
    same = client.get("/api/compare", params={"a": "golden:signal", "b": runs["signal"]}).json()
    assert same["changes"] == [] and "No differences" in same["markdown"]
    other = client.get("/api/compare", params={"a": runs["signal"], "b": runs["deploy"]}).json()
    assert {c["change"] for c in other["changes"]} >= {"added", "removed", "modified"}
    touched = {(s["flow"], s["step"]) for s in other["steps"]}
    assert ("deploy", "promote_release") in touched and ("signal", "frame_problem") in touched
    assert any(line.startswith("+") for c in other["changes"] for line in c["diff"])
    for bad in ({"a": "golden:../runs", "b": runs["signal"]}, {"a": "golden:nope", "b": "x"}):
        assert client.get("/api/compare", params=bad).status_code == 404


def test_the_event_kinds_the_timeline_lays_out_are_the_contracts(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    from swarm_runtime.documents.events import KINDS, payload_fields

    kinds = client.get("/api/event-kinds").json()
    assert list(kinds) == list(KINDS)
    for kind, row in kinds.items():
        fields, open_ended = payload_fields(kind)
        assert row["fields"] == list(fields) and row["open"] == open_ended
        assert row["required"] == [name for name, required in fields.items() if required]
        assert row["stands"] == KINDS[kind].stands.value
    project, runs = made_runs
    written = {
        json.loads(line)["kind"]
        for line in (project.runs_dir / runs["signal"] / "events.jsonl").read_text().splitlines()
    }
    assert written and written <= set(kinds)
    assert kinds["route_decision"]["fields"][:2] == ["from_step", "to_step"]


def test_the_openapi_document_lists_exactly_the_api_routes(client: Any) -> None:
    document = client.get("/api/openapi.json").json()
    assert document["openapi"].startswith("3.")
    routes = {
        (route.path, method.lower())
        for route in client.app.routes
        if route.path.startswith("/api/")
        for method in route.methods - {"HEAD"}
    }
    described = {(path, method) for path, item in document["paths"].items() for method in item}
    assert described == routes
    components = document["components"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert operation["summary"], (path, method)  # each handler says what it answers
            named = [
                components["parameters"][p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p
                for p in operation["parameters"]
            ]
            in_path = [p["name"] for p in named if p["in"] == "path"]
            assert in_path == [part[1:-1] for part in path.split("/") if part.startswith("{")]
            assert "404" in operation["responses"] or not (in_path or method == "get")
    assert document["paths"]["/api/runs"]["get"]["parameters"][0]["name"] == "page"


def test_the_page_and_its_files_are_served_and_nothing_else(client: Any) -> None:
    page = client.get("/", params={"run": "run-20250101-000000-abcdef"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert client.get("/static/studio.js").status_code == 200
    for name in ("../app.py", "app.py", "..%2fapp.py", "static"):
        assert client.get(f"/static/{name}").status_code == 404


def test_start_and_control_runs_through_the_run_service(tmp_path: Path, client_for: Any) -> None:
    project = Project(tmp_path)
    client = client_for(project.config())
    origin = {"Origin": LOCAL}
    started = client.post(
        "/api/runs", json={"flows": ["stepwise-demo"], "mode": "stub"}, headers=origin
    )
    assert started.status_code == 201
    run_id = started.json()["run_id"]
    studio = client.app.state.studio
    backend = studio.actions.backend("claude-step-orchestrator", "stub")
    assert backend.wait(run_id, timeout=60)["status"] == "succeeded"
    summary = client.get(f"/api/runs/{run_id}").json()
    assert summary["spec"]["initiator"] == "studio" and summary["mode"] == "stub"
    refused = client.post(f"/api/runs/{run_id}/pause", headers=origin)
    assert refused.status_code == 409 and "nothing to pause" in refused.json()["error"]
    for body, text in (
        ({"flows": []}, "'flows' must be a non-empty list"),
        ({"flows": ["signal"], "mode": "live"}, "mode 'live' is not one of stub, sdk, cli"),
        ({"flows": ["signal"], "backend": "x"}, "backend 'x' is not known"),
        ({"flows": ["nope"]}, "nope"),
        ({"flows": ["signal"], "extra": 1}, "unknown field(s) extra"),
    ):
        answer = client.post("/api/runs", json=body, headers=origin)
        assert answer.status_code == 400, body
        assert text in answer.json()["error"]


def test_a_run_of_another_process_is_asked_through_its_control_file(
    tmp_path: Path, client_for: Any
) -> None:
    project = Project(tmp_path)
    run_id = "run-20250101-000000-otherp"
    run_dir = project.runs_dir / run_id
    lock = project.running_run(run_id)  # as `swarm run` in a terminal holds it
    try:
        client = client_for(project.config())
        answer = client.post(f"/api/runs/{run_id}/pause", headers={"Origin": LOCAL})
        assert answer.status_code == 200, answer.text
        assert f"pid {os.getpid()}" in answer.json()["message"]
        request = json.loads((run_dir / "control.json").read_text())
        assert request["request"] == "pause" and "studio" in request["reason"]
    finally:
        lock.release()
    gone = client.post(f"/api/runs/{run_id}/stop", headers={"Origin": LOCAL})
    assert gone.status_code == 409 and "crashed" in gone.json()["error"]
    unknown = client.post(f"/api/runs/{run_id}/explode", headers={"Origin": LOCAL})
    assert unknown.status_code == 404


def test_params_and_bodies_past_their_bounds_are_refused_as_4xx(
    tmp_path: Path, client_for: Any, monkeypatch: Any
) -> None:
    key = "sk-ant-fake-studio-params-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    project = Project(tmp_path)
    client = client_for(project.config())
    origin = {"Origin": LOCAL, "Content-Type": "application/json"}
    huge = b'{"flows": ["signal"], "params": {"doc": "' + b"x" * (2 << 20) + b'"}}'
    answer = client.post("/api/runs", content=huge, headers=origin)
    assert answer.status_code == 413 and "at most 1048576" in answer.json()["error"]
    cases = (
        ({"doc": "x" * 300_000}, "the params are 300005 bytes; at most 262144"),
        ({"token": f"use {key}"}, "param 'token' holds the value of ANTHROPIC_API_KEY"),
        ({"deep": json.loads("[" * 150 + "]" * 150)}, "nesting deeper than 100 levels"),
    )
    for params, text in cases:
        answer = client.post(
            "/api/runs", json={"flows": ["signal"], "params": params}, headers={"Origin": LOCAL}
        )
        assert answer.status_code == 400, answer.text
        assert text in answer.json()["error"]
    assert not project.runs_dir.exists() or project.runs() == []
    assert key not in answer.text


def test_a_running_runs_counters_move_with_its_steps_not_its_status(
    client: Any, made_runs: tuple[Project, dict[str, str]]
) -> None:
    """meta.json is rewritten when the status changes; the list and the header read a live
    run's steps, tokens and cost from the checkpoint, rewritten after every step."""
    import shutil

    project, runs = made_runs
    done = project.runs_dir / runs["signal"]
    final = json.loads((done / "meta.json").read_text())
    live_id = "run-20990101-000000-live01"
    shutil.copytree(done, project.runs_dir / live_id)
    # As a run's meta.json stands from its start until it ends: running, nothing counted.
    (project.runs_dir / live_id / "meta.json").write_text(
        json.dumps(
            {
                "status": "running",
                "flows": ["signal"],
                "total_steps_executed": 0,
                "tokens": {"total": 0},
                "cost_usd": 0.0,
            }
        )
    )
    lock = RunLock(project.runs_dir / live_id)
    (project.runs_dir / live_id / "run.lock").unlink(missing_ok=True)
    lock.acquire("now")
    try:
        row = next(r for r in client.get("/api/runs").json()["runs"] if r["run_id"] == live_id)
        header = client.get(f"/api/runs/{live_id}").json()
    finally:
        lock.release()
    for shown in (row, header):
        assert shown["status"] == "running"
        assert shown["steps"] == final["total_steps_executed"] == 10
        assert shown["loops"] == final["loop_iterations"]
        assert shown["tokens"] == final["tokens"]["total"] > 0


def test_a_golden_run_is_read_like_a_run_and_never_controlled(client: Any) -> None:
    row = client.get("/api/runs/golden:sdlc").json()
    assert row["status"] == "succeeded" and "review" in row["flows"]
    graph = client.get("/api/runs/golden:sdlc/graph").json()
    assert [f["key"] for f in graph["flows"]][:2] == ["signal", "plan"]
    events = client.get("/api/runs/golden:sdlc/events").json()
    assert events["events"][-1]["kind"] == "run_completed"
    step = client.get("/api/runs/golden:sdlc/flows/signal/steps/frame_problem")
    assert step.status_code == 200
    for bad in ("golden:..", "golden:nope", "golden:"):
        assert client.get(f"/api/runs/{bad}/graph").status_code == 404
    origin = {"Origin": "http://127.0.0.1:5000"}
    refused = client.post("/api/runs/golden:sdlc/stop", headers=origin)
    assert refused.status_code >= 400 and "golden run" in refused.json()["error"]
