"""A navigator step, as a user runs one: ``swarm run`` with a scenario or
``--navigator deterministic``, ``swarm flows validate`` on a bad condition, and a recording
of the navigator's calls against a local server replayed with no server at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import CliResult
from tests.fakes.anthropic_server import AnthropicServer

KEY = "sk-ant-navigator-not-a-key"

FLOW = """\
key: review
title: "Review"
description: "Write, critique, test, ship."
steps:
  - id: write_code
    agents: [author]
    role: "Write the code."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
  - id: critique_code
    agents: [critic]
    role: "Critique the code."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
    routing:
      kind: navigator
      default: run_tests
      candidates:
        - {id: back_to_author, to: write_code, when: "handoff.status != 'VERIFIED'"}
        - {id: forward, to: run_tests}
        - {id: skip_tests, to: ship, when: "params.trivial == 'yes'"}
  - id: run_tests
    agents: [tester]
    role: "Run the tests."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
  - id: ship
    agents: [shipper]
    role: "Ship it."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
"""


def _project(root: Path, flow: str = FLOW) -> Path:
    (root / "flows").mkdir(parents=True)
    (root / "flows" / "review.yaml").write_text(flow, encoding="utf-8")
    return root


def _swarm(cwd: Path, *args: str, server: AnthropicServer | None = None) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    env["SWARM_CACHE_DIR"] = os.environ["SWARM_CACHE_DIR"]
    if server is not None:
        env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY=KEY)
    done = subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def _moves(run_dir: Path) -> list[tuple[str, Any]]:
    """The navigator step's routing events: (kind, where it went or what it chose)."""
    found = []
    for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        payload = event["payload"]
        if event["step_id"] != "critique_code":
            continue
        if event["kind"] == "routing_decision":
            found.append(("routing_decision", payload["chosen"]))
        elif event["kind"] == "routing_offroad":
            found.append(("routing_offroad", payload["actual_step"]))
        elif event["kind"] == "route_decision":
            found.append(("route_decision", payload["reason"]))
    return found


def _run_dir(runs: Path) -> Path:
    (run_dir,) = runs.iterdir()
    return run_dir


def test_a_scenario_scripts_the_navigator_and_the_run_validates(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "s.yaml").write_text(
        "critique_code:\n  handoff: {status: NEEDS_WORK}\n"
        "navigator:\n  critique_code: [back_to_author, skip_tests]\n",
        encoding="utf-8",
    )
    result = _swarm(
        project,
        "run",
        "review",
        "--scenario",
        "s.yaml",
        "--param",
        "trivial=yes",
        "--runs-dir",
        "runs",
    )
    assert result.code == 0, result.err
    run_dir = _run_dir(project / "runs")
    assert _moves(run_dir) == [
        ("routing_decision", "back_to_author"),
        ("routing_offroad", "write_code"),
        ("route_decision", "navigator:back_to_author"),
        ("routing_decision", "skip_tests"),
        ("routing_offroad", "ship"),
        ("route_decision", "navigator:skip_tests"),
    ]
    assert _swarm(project, "runs", "validate", str(run_dir)).code == 0


def test_deterministic_mode_asks_nobody_and_resume_keeps_it(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "s.yaml").write_text(
        "critique_code:\n  - handoff: {status: NEEDS_WORK}\n  - handoff: {status: VERIFIED}\n",
        encoding="utf-8",
    )
    result = _swarm(
        project,
        "run",
        "review",
        "--scenario",
        "s.yaml",
        "--navigator",
        "deterministic",
        "--runs-dir",
        "runs",
    )
    assert result.code == 0, result.err
    run_dir = _run_dir(project / "runs")
    assert _moves(run_dir) == [
        ("routing_offroad", "write_code"),
        ("route_decision", "navigator_deterministic:back_to_author"),
        ("route_decision", "navigator_single:forward"),
    ]
    assert not list(run_dir.rglob("*-navigator-*"))
    spec = json.loads((run_dir / "spec.json").read_text(encoding="utf-8"))
    assert spec["origin"]["navigator"] == "deterministic"  # what swarm resume reads


def test_a_bad_condition_is_refused_with_its_file_and_line(tmp_path: Path) -> None:
    project = _project(tmp_path, FLOW.replace("params.trivial == 'yes'", "param.trivial = 1"))
    result = _swarm(project, "flows", "validate", "--flows-dir", "flows")
    assert result.code != 0
    assert "Traceback" not in result.err
    line = FLOW.splitlines().index(next(x for x in FLOW.splitlines() if "skip_tests" in x)) + 1
    out = result.out + result.err
    assert f"review.yaml:{line}" in out and "routing.candidates.skip_tests.when" in out
    run = _swarm(project, "run", "review", "--runs-dir", "runs")
    assert run.code != 0 and "Traceback" not in run.err and "skip_tests.when" in run.err


def test_the_navigator_call_is_recorded_and_replayed_with_no_server(tmp_path: Path) -> None:
    project = _project(tmp_path)
    server = AnthropicServer().start()
    try:
        recorded = _swarm(
            project,
            "run",
            "review",
            "--mode",
            "record",
            "--cassette-dir",
            "cas",
            "--param",
            "trivial=yes",
            "--runs-dir",
            "a",
            server=server,
        )
    finally:
        server.stop()
    assert recorded.code == 0, recorded.err
    assert (project / "cas" / "review" / "critique_code-navigator-0.yaml").is_file()
    first = _moves(_run_dir(project / "a"))
    # The local server's navigator takes the first candidate it is offered, as the stub.
    assert first == [
        ("routing_decision", "forward"),
        ("route_decision", "navigator:forward"),
    ]
    replayed = _swarm(
        project,
        "run",
        "review",
        "--mode",
        "replay",
        "--cassette-dir",
        "cas",
        "--param",
        "trivial=yes",
        "--runs-dir",
        "b",
    )
    assert replayed.code == 0, replayed.err
    assert _moves(_run_dir(project / "b")) == first
    transcript = _run_dir(project / "b") / "review" / "llm" / "critique_code-navigator-0.jsonl"
    roles = [json.loads(line)["role"] for line in transcript.read_text().splitlines()]
    assert roles == ["system", "user", "assistant"]
    assert KEY not in "".join(p.read_text(errors="replace") for p in project.rglob("*.*"))


def test_swarm_runs_facts_prints_the_current_facts_or_the_whole_journal(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "s.yaml").write_text(
        'write_code:\n  text: "Done.\\n[REQ-001] UTF-8 only.\\n[ASM-001] Under 1 MB."\n'
        "critique_code:\n"
        "  handoff: {status: VERIFIED, facts: [{id: REQ-001, text: UTF-8 and Latin-1.}]}\n",
        encoding="utf-8",
    )
    result = _swarm(project, "run", "review", "--scenario", "s.yaml", "--runs-dir", "runs")
    assert result.code == 0, result.err
    run_dir = _run_dir(project / "runs")
    current = _swarm(project, "runs", "facts", str(run_dir))
    assert current.code == 0, current.err
    rows = [line.split(None, 2) for line in current.out.splitlines()[2:]]
    assert rows == [
        ["REQ-001", "review/critique_code#0", "UTF-8 and Latin-1."],
        ["ASM-001", "review/write_code#0", "Under 1 MB."],
    ]
    everything = _swarm(project, "runs", "facts", str(run_dir), "--all")
    assert len(everything.out.splitlines()[2:]) == 3
    none = _project(tmp_path / "other")
    assert _swarm(none, "run", "review", "--runs-dir", "runs").code == 0
    empty = _swarm(none, "runs", "facts", str(_run_dir(none / "runs")))
    assert empty.code == 0 and empty.out.endswith("no facts\n")
