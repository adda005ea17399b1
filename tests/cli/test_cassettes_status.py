"""``swarm cassettes status``, as a user runs it: which recordings went stale after an edit.

A user project records its test against the local Anthropic-compatible server, then edits
its flow (a teaching note, the model, a step) and asks, before any replay, which recorded
calls the flows would no longer send.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.fakes.anthropic_server import AnthropicServer

KEY = "sk-ant-status-test-not-a-key"

FLOW = """\
key: triage
title: "Triage a support ticket"
description: "Reads a ticket, drafts a reply, sends it."
steps:
  - id: read_ticket
    agents: [ticket-reader]
    role: "Say what the customer asks for."
    teaching_notes:
      inputs: ["The ticket text"]
      outputs: ["A one-line summary of the ask"]
      emphasizes: ["Quote the customer's own words"]
      constraints: ["No reply yet"]
  - id: draft_reply
    agents: [reply-writer]
    role: "Draft a polite reply."
    teaching_notes:
      inputs: ["The summary of the ask"]
      outputs: ["A reply of at most five sentences"]
      emphasizes: ["Answer the ask first"]
      constraints: ["Promise no refund"]
  - id: send_reply
    agents: [reply-sender]
    role: "Send the reply."
    teaching_notes:
      inputs: ["The drafted reply"]
      outputs: ["A note that the reply was sent"]
      emphasizes: ["Keep the reply as drafted"]
      constraints: ["Send it once"]
"""

USER_TEST = """
def test_triage(flow_runner):
    record = flow_runner("triage", ticket="I was charged twice.")
    assert record.status == "succeeded", record.summary.get("error")
"""


def _env() -> dict[str, str]:
    keep = {"SWARM_CACHE_DIR"}
    return {
        k: v
        for k, v in os.environ.items()
        if k in keep or not k.startswith(("SWARM_", "ANTHROPIC_", "PYTEST_XDIST"))
    }


def _swarm(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _status(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _swarm(
        cwd,
        "cassettes",
        "status",
        "--cassette-dir",
        "golden/cassettes",
        "--flows-dir",
        "flows",
        *args,
    )


def _pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user project whose one test recorded its flow's calls (recorded once per module)."""
    root = tmp_path_factory.mktemp("recorded")
    (root / "flows").mkdir()
    (root / "flows" / "triage.yaml").write_text(FLOW)
    (root / "flows" / "flows.yaml").write_text("order: [triage]\n")
    (root / "test_triage.py").write_text(USER_TEST)
    (root / "pytest.ini").write_text("[pytest]\n")
    server = AnthropicServer().start()
    try:
        env = {**_env(), "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": KEY}
        done = _pytest(root, "--swarm-mode=record", "--swarm-runs-dir=runs", env=env)
    finally:
        server.stop()  # everything below runs with no server to reach
    assert done.returncode == 0, done.stdout + done.stderr
    return root


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the recorded project, for a test to edit."""
    shutil.copytree(recorded, tmp_path / "project")
    return tmp_path / "project"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_an_unchanged_project_has_nothing_stale(project: Path) -> None:
    done = _status(project)
    assert done.returncode == 0, done.stderr
    assert "nothing stale: the 3 recorded call(s)" in done.stdout


def test_each_receipt_carries_the_digest_of_the_body_its_cassette_recorded(
    recorded: Path,
) -> None:
    from swarm_runtime.engines.base import request_digest
    from swarm_runtime.engines.cassette import body_value
    from swarm_runtime.engines.replay import load_recording

    receipts = sorted(recorded.glob("runs/run-*/triage/receipts/*.json"))
    assert len(receipts) == 3
    for path in receipts:
        receipt = json.loads(path.read_text())
        requests, _ = load_recording(recorded / "golden" / "cassettes" / receipt["cassette"])
        assert receipt["request_sha256"] == request_digest(body_value(requests[0].body))
    (run,) = recorded.glob("runs/run-*")
    assert _swarm(recorded, "runs", "validate", str(run)).returncode == 0


def test_an_edited_teaching_note_lists_that_call_with_its_test(project: Path) -> None:
    _edit(project / "flows" / "triage.yaml", "Answer the ask first", "Answer the ask last")
    done = _status(project)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "1 of 3 recorded call(s)" in out
    assert "\ntest_triage/test_triage\n" in out
    (line,) = [line for line in out.splitlines() if ".yaml:" in line]
    assert line.strip().startswith("triage/draft_reply-reply-writer-0.yaml: prompt (")
    assert "'- Answer the ask first'" in line and "'- Answer the ask last'" in line
    assert "re-record: pytest --swarm-mode=record test_triage.py::test_triage" in out
    assert "Traceback" not in done.stderr
    # The same edit fails a replay, which names the changed part above its body diff.
    replay = _pytest(project, "--swarm-mode=replay")
    assert replay.returncode == 1, replay.stdout
    assert "no recorded call matches" in replay.stdout
    assert "\nchanged: prompt\n" in replay.stdout


def test_a_new_model_makes_every_call_stale(project: Path) -> None:
    config = project / "swarm" / "config"
    config.mkdir(parents=True)
    (config / "runtime.yaml").write_text("engines:\n  claude:\n    model: claude-opus-4-1\n")
    done = _status(project)
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stdout.splitlines() if ".yaml:" in line]
    assert len(lines) == 3
    assert all(": model (model: recorded " in line for line in lines), lines
    assert all("now 'claude-opus-4-1'" in line for line in lines), lines


def test_a_removed_step_is_listed_as_gone(project: Path) -> None:
    path = project / "flows" / "triage.yaml"
    text = path.read_text()
    path.write_text(text[: text.index("  - id: send_reply")])
    done = _status(project)
    assert done.returncode == 1, done.stderr
    assert "triage/send_reply-reply-sender-0.yaml: gone (step is gone from flow 'triage')" in (
        done.stdout
    )
    # The other steps' prompts say "Step N of 2" now: they are stale too, as a replay finds.
    assert "triage/read_ticket-ticket-reader-0.yaml: prompt" in done.stdout


def test_usage_errors_exit_2_with_one_line(project: Path) -> None:
    missing = _swarm(project, "cassettes", "status", "--cassette-dir", "nowhere")
    assert missing.returncode == 2
    assert missing.stderr.startswith("swarm: error: cassette dir nowhere: not a directory")
    broken = next((project / "golden" / "cassettes").rglob("read_ticket-*.yaml"))
    broken.write_text("interactions: [unclosed\n")
    unreadable = _status(project)
    assert unreadable.returncode == 2
    assert "cannot be read" in unreadable.stderr and "Traceback" not in unreadable.stderr


@pytest.mark.parametrize(
    ("part", "field"),
    [("response", "body.string"), ("request", "body"), ("response", "headers")],
)
def test_a_cassette_field_of_another_type_is_one_line_naming_it(
    project: Path, part: str, field: str
) -> None:
    cassette = next((project / "golden" / "cassettes").rglob("read_ticket-*.yaml"))
    data = yaml.safe_load(cassette.read_text())
    *parents, name = field.split(".")
    holder = data["interactions"][0][part]
    for key in parents:
        holder = holder[key]
    holder[name] = 5
    cassette.write_text(yaml.safe_dump(data))
    done = _status(project)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert f"cassette {cassette.relative_to(project)} cannot be read: " in done.stderr
    assert f"interactions[0].{part}.{field} must be " in done.stderr


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            json.dumps("[" * 5000 + "]" * 5000),  # a YAML string holding the JSON
            "interactions[0].request.body: nesting deeper than 100 levels",
        ),
        ("!!python/object/apply:os.getcwd []", "python/object/apply"),
    ],
    ids=["a request body nested 5000 deep", "a YAML tag"],
)
def test_a_hostile_recorded_request_is_one_line_naming_it(
    project: Path, body: str, says: str
) -> None:
    cassette = next((project / "golden" / "cassettes").rglob("read_ticket-*.yaml"))
    data = yaml.safe_load(cassette.read_text())
    data["interactions"][0]["request"]["body"] = "BODY"
    cassette.write_text(yaml.safe_dump(data).replace("BODY", body))
    done = _status(project)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert f"cassette {cassette.relative_to(project)} cannot be read: " in done.stderr
    assert says in done.stderr


def test_this_repos_own_recordings_match_the_shipped_flows() -> None:
    done = _swarm(
        REPO,
        "cassettes",
        "status",
        "--cassette-dir",
        "golden/cassettes",
        "--flows-dir",
        "flows",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing stale" in done.stdout
    example = _swarm(REPO / "examples", "cassettes", "status", "--cassette-dir", "golden/cassettes")
    assert example.returncode == 0, example.stdout + example.stderr


GOLDEN_TEST = """
def test_triage(flow_runner, swarm_golden):
    record = flow_runner("triage", ticket="I was charged twice.")
    assert record.status == "succeeded", record.summary.get("error")
    swarm_golden(record, "triage")
"""


def test_the_re_record_line_of_a_golden_test_records_and_rewrites_its_golden(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    (root / "flows").mkdir(parents=True)
    (root / "flows" / "triage.yaml").write_text(FLOW)
    (root / "test_triage.py").write_text(GOLDEN_TEST)
    (root / "pytest.ini").write_text("[pytest]\n")
    server = AnthropicServer().start()
    try:
        env = {**_env(), "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": KEY}
        done = _pytest(root, "--swarm-mode=record", "--snapshot-update", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        _edit(root / "flows" / "triage.yaml", "Answer the ask first", "Answer the ask last")
        status = _status(root)
        assert status.returncode == 1, status.stderr
        (line,) = [line for line in status.stdout.splitlines() if "re-record:" in line]
        command = line.split("re-record:", 1)[1].split(" (with ANTHROPIC_API_KEY")[0].strip()
        assert "--snapshot-update" in command
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        rerecorded = subprocess.run(
            ["sh", "-c", command], cwd=root, env=env, capture_output=True, text=True, check=False
        )
        assert rerecorded.returncode == 0, rerecorded.stdout + rerecorded.stderr
    finally:
        server.stop()
    assert _status(root).returncode == 0
    replay = _pytest(root, "--swarm-mode=replay")
    assert replay.returncode == 0, replay.stdout  # the recording and its golden agree
