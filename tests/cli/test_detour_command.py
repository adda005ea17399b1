"""Detours and a utility flow, as a user runs them: ``swarm run`` with a scenario that
takes the injection, ``swarm runs validate`` on the run, and a recording against a local
server (whose navigator takes the detour) replayed with no server at all."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_navigator_command import _run_dir, _swarm
from tests.fakes.anthropic_server import AnthropicServer

NOTES = "    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}\n"
BUILD = (
    'key: build\ntitle: "Build"\ndescription: "Write and ship."\nsteps:\n'
    '  - id: write_code\n    agents: [author]\n    role: "Write the code."\n'
    + NOTES
    + "    routing:\n      kind: navigator\n      default: ship\n      candidates:\n"
    + '        - {id: forward, to: ship, when: "has(handoff.clean)"}\n'
    + "    detours:\n      - {id: scan_first, flow: security-scan, return: resume}\n"
    '  - id: ship\n    agents: [shipper]\n    role: "Ship it."\n' + NOTES
)
SCAN = (
    'key: security-scan\ntitle: "Security scan"\ndescription: "Scan what changed."\n'
    'utility: true\ninjection_trigger: "handoff.touches_db == true"\nsteps:\n'
    '  - id: scan\n    agents: [scanner]\n    role: "Scan the change."\n' + NOTES
)


def _project(root: Path) -> Path:
    (root / "flows").mkdir(parents=True)
    (root / "flows" / "build.yaml").write_text(BUILD, encoding="utf-8")
    (root / "flows" / "security-scan.yaml").write_text(SCAN, encoding="utf-8")
    return root


def _walk(run_dir: Path) -> list[str]:
    walked = []
    for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["kind"] == "step_start":
            walked.append(f"{event['flow_key']}/{event['step_id']}")
        elif event["kind"] in ("stack_push", "stack_pop"):
            walked.append(f"{event['kind']} {event['payload']['current_depth']}")
        elif event["kind"] == "routing_decision":
            walked.append(f"chose {event['payload']['chosen']}")
    return walked


def test_a_scenario_injects_the_utility_flow_and_the_run_validates(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "s.yaml").write_text(
        "write_code:\n  handoff: {touches_db: yes}\nnavigator:\n  write_code: security-scan\n",
        encoding="utf-8",
    )
    assert _swarm(project, "flows", "list").out.split().count("security-scan") <= 1
    result = _swarm(project, "run", "--scenario", "s.yaml", "--runs-dir", "runs")
    assert result.code == 0, result.err
    run_dir = _run_dir(project / "runs")
    assert _walk(run_dir) == [
        "build/write_code",
        "chose security-scan",
        "stack_push 2",
        "security-scan/scan",
        "stack_pop 1",
        "build/ship",
    ]
    assert (run_dir / "security-scan" / "receipts" / "scan-scanner.json").is_file()
    assert _swarm(project, "runs", "validate", str(run_dir)).code == 0
    alone = _swarm(project, "run", "security-scan", "--runs-dir", "runs")
    assert alone.code != 0 and "utility flow" in alone.err and "Traceback" not in alone.err


def test_a_recorded_detour_is_replayed_with_no_server(tmp_path: Path) -> None:
    project = _project(tmp_path)
    server = AnthropicServer().start()
    try:
        recorded = _swarm(
            project,
            "run",
            "build",
            "--mode",
            "record",
            "--cassette-dir",
            "cas",
            "--runs-dir",
            "a",
            server=server,
        )
    finally:
        server.stop()
    assert recorded.code == 0, recorded.err
    first = _walk(_run_dir(project / "a"))
    # No edge holds (the reply declares no 'clean'): the detour is the one move, no call.
    assert first == [
        "build/write_code",
        "stack_push 2",
        "security-scan/scan",
        "stack_pop 1",
        "build/ship",
    ]
    replayed = _swarm(
        project, "run", "build", "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b"
    )
    assert replayed.code == 0, replayed.err
    assert _walk(_run_dir(project / "b")) == first
