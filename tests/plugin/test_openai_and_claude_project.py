"""A user project whose flows run some steps on ``openai-step`` and some on ``claude-step``.

Driven as a user works with it: its own flows (one step on openai-step through the flow's
``engine:``, one through runtime.yaml's ``engine_strategy``, the rest on claude-step), its
own tests and goldens, recorded against local fake servers of both APIs (each echoing the
request's key in a response header, as a careless server or proxy may), replayed with no
network at all (``unshare -rn``: not even loopback), then a teaching note of the
openai-step step edited: the tests that reach that step fail naming the changed part, the
re-record command the session prints is run as printed, and the replay passes again with
nothing left stale. No file of the project ever holds a key.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import AnthropicServer
from tests.fakes.openai_server import OpenAIServer

pytest.importorskip("openai")  # the [openai] extra: the test extra brings it

KEYS = {
    "OPENAI_API_KEY": "sk-fake-openai-project-key-0000",
    "ANTHROPIC_API_KEY": "sk-ant-fake-project-key-0000",
}
ECHO = "x-echoed-key"

TRIAGE = """\
key: triage
title: "Triage a support ticket"
description: "Reads a ticket, drafts a reply on OpenAI, sends it."
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
    engine: openai-step
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

CLASSIFY = """\
key: classify
title: "Classify a ticket"
description: "Names the kind of a ticket."
steps:
  - id: label
    agents: [classifier]
    role: "Name the kind of the ticket."
    teaching_notes:
      inputs: ["The ticket text"]
      outputs: ["One of: billing, delivery, other"]
      emphasizes: ["One word"]
      constraints: ["Never repeat a secret such as OPENAI_API_KEY"]
"""

RUNTIME = """\
engine_strategy:
  classify:
    label: openai-step
engines:
  openai:
    model: gpt-4o-mini
    api_key_env: OPENAI_API_KEY
"""

TESTS = """
import pytest


@pytest.mark.parametrize(
    "ticket", ["I was charged twice.", "My parcel never came."], ids=["charged", "parcel"]
)
def test_triage_answers_the_ticket(flow_runner, swarm_contract, ticket):
    record = flow_runner("triage", ticket=ticket)
    assert record.status == "succeeded", record.summary.get("error")
    swarm_contract.assert_run(record)


def test_triage_matches_its_golden(flow_runner, swarm_golden):
    record = flow_runner("triage", ticket="Please refund me.")
    assert record.status == "succeeded", record.summary.get("error")
    swarm_golden(record, "triage")


def test_the_ticket_is_read(flow_runner):
    record = flow_runner("triage", end_step="read_ticket", ticket="Where is my order?")
    assert record.status == "succeeded", record.summary.get("error")


def test_classify_matches_its_golden(flow_runner, swarm_golden):
    record = flow_runner("classify", ticket="Please refund me.")
    assert record.status == "succeeded", record.summary.get("error")
    swarm_golden(record, "classify")
"""

REACHING_DRAFT_REPLY = {
    "test_support.py::test_triage_answers_the_ticket[charged]",
    "test_support.py::test_triage_answers_the_ticket[parcel]",
    "test_support.py::test_triage_matches_its_golden",
}
NOT_REACHING = {
    "test_support.py::test_the_ticket_is_read",
    "test_support.py::test_classify_matches_its_golden",
}


@contextlib.contextmanager
def _running_servers() -> Iterator[dict[str, str]]:
    """Both APIs on loopback, echoing the key; the variables that point a project at them."""
    anthropic, openai = AnthropicServer(), OpenAIServer()
    anthropic.echo_key_header = openai.echo_key_header = ECHO
    anthropic.start()
    openai.start()
    try:
        yield {
            **KEYS,
            "ANTHROPIC_BASE_URL": anthropic.url,
            "OPENAI_BASE_URL": openai.url + "/v1",
        }
    finally:
        anthropic.stop()
        openai.stop()


@pytest.fixture
def servers() -> Iterator[dict[str, str]]:
    with _running_servers() as env:
        yield env


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The project, its tests recorded with their goldens (once per module); the output."""
    root = tmp_path_factory.mktemp("recorded") / "project"
    (root / "flows").mkdir(parents=True)
    (root / "flows" / "triage.yaml").write_text(TRIAGE)
    (root / "flows" / "classify.yaml").write_text(CLASSIFY)
    (root / "flows" / "flows.yaml").write_text("order: [triage, classify]\n")
    (root / "swarm" / "config").mkdir(parents=True)
    (root / "swarm" / "config" / "runtime.yaml").write_text(RUNTIME)
    (root / "test_support.py").write_text(TESTS)
    (root / "pytest.ini").write_text("[pytest]\n")
    with _running_servers() as env:  # stopped before any test: replays reach no server
        out = _record(root, env, "--snapshot-update")
    return root, out


@pytest.fixture
def project(recorded: tuple[Path, str], tmp_path: Path) -> Path:
    """A copy of the recorded project, for a test to replay and edit."""
    shutil.copytree(recorded[0], tmp_path / "project")
    return tmp_path / "project"


def _env(servers: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a user's shell: no keys or servers unless given, the venv on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k == "SWARM_CACHE_DIR"
        or not k.startswith(("SWARM_", "ANTHROPIC_", "OPENAI_", "PYTEST_XDIST", "PYTEST_ADDOPTS"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(servers or {})
    return env


PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--swarm-runs-dir=runs"]


def _run(project: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, check=False)


def _record(project: Path, servers: dict[str, str], *args: str) -> str:
    done = _run(project, [*PYTEST, "--swarm-mode=record", *args], _env(servers))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _no_network() -> list[str]:
    """What runs a command with no network at all (not even loopback), where the machine
    allows it; else the plugin's own block of every connection off the machine."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False)
    if probe.returncode == 0:
        return ["unshare", "-rn", *PYTEST]
    print(
        "unshare -rn is refused on this machine: the replays run under the plugin's own "
        "network block (--swarm-block-network=yes) instead"
    )
    return [*PYTEST, "--swarm-block-network=yes"]


def _replay(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A replay as CI runs it: no key, no server, no network."""
    return _run(project, [*_no_network(), "--swarm-mode=replay", *args], _env())


def _outcomes(out: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {"PASSED": set(), "FAILED": set()}
    for outcome, node in re.findall(r"^(PASSED|FAILED) (\S+)", out, re.MULTILINE):
        found[outcome].add(node)
    return found


def _files_holding_a_key(project: Path) -> list[str]:
    return [
        str(path.relative_to(project))
        for path in project.rglob("*")
        if path.is_file() and any(key.encode() in path.read_bytes() for key in KEYS.values())
    ]


def test_a_mixed_project_records_against_both_servers_and_replays_with_no_network(
    recorded: tuple[Path, str], project: Path
) -> None:
    assert "goldens: 0 compared, 2 updated, 0 drifted" in recorded[1]
    cassettes = project / "golden" / "cassettes" / "test_support"
    heads = {
        path.relative_to(cassettes).as_posix(): path.read_text().splitlines()[0]
        for path in cassettes.rglob("*.yaml")
    }
    assert len(heads) == 11
    for name, head in heads.items():
        on_openai = "/draft_reply-" in name or "/label-" in name
        assert head == ("engine: openai-step" if on_openai else "engine: claude-step"), name
    # Both servers echoed the key in a response header: the recordings hold its name only.
    texts = "".join(path.read_text() for path in cassettes.rglob("*.yaml"))
    for name in KEYS:
        # (Quoted or not, as the YAML writer of the installed release decides.)
        assert re.search(rf"{ECHO}:\n +- '?(Bearer )?\[scrubbed {name}\]'?\n", texts), name
    receipts = project / "golden" / "triage.replay" / "triage" / "receipts"
    assert '"engine": "openai-step"' in (receipts / "draft_reply-reply-writer.json").read_text()
    assert '"engine": "claude-step"' in (receipts / "read_ticket-ticket-reader.json").read_text()

    replayed = _replay(project)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert _outcomes(replayed.stdout)["PASSED"] == REACHING_DRAFT_REPLY | NOT_REACHING
    assert "goldens: 2 compared, 0 updated, 0 drifted" in replayed.stdout
    assert "cassettes: 11 played, 0 recorded, 0 unplayed" in replayed.stdout
    assert len(list((project / "runs").iterdir())) == 10  # the recording's runs, the replay's
    assert _files_holding_a_key(project) == []


def _failure(out: str, test: str) -> str:
    """The failures section of ``test`` (``test_name[param]``), up to the next one."""
    match = re.search(
        rf"_{{3,}} {re.escape(test)} _{{3,}}\n(.*?)(?=\n_{{3,}} |\n-{{3,}} swarm)", out, re.S
    )
    assert match, f"no failure of {test} in:\n{out}"
    return match.group(1)


def test_an_edited_note_of_the_openai_step_fails_the_tests_that_reach_it_and_the_printed_command_re_records(
    project: Path, servers: dict[str, str]
) -> None:
    flow = project / "flows" / "triage.yaml"
    flow.write_text(flow.read_text().replace("Answer the ask first", "Answer the ask last"))

    missed = _replay(project)
    assert missed.returncode == 1, missed.stdout + missed.stderr
    found = _outcomes(missed.stdout)
    assert found == {"FAILED": REACHING_DRAFT_REPLY, "PASSED": NOT_REACHING}
    for node in REACHING_DRAFT_REPLY:
        failure = _failure(missed.stdout, node.split("::")[1])
        assert "replay of triage/draft_reply iteration 0: no recorded call matches" in failure
        assert "\nchanged: prompt\n" in failure
        assert re.search(r"^\+messages\|.*Answer the ask last", failure, re.M), failure
        assert "Re-record with: pytest --swarm-mode=record " in failure
    printed = re.search(
        r"^re-record the 3 test\(s\) whose recordings no longer match[^:]*: (pytest [^\n]+)$",
        missed.stdout,
        re.M,
    )
    assert printed, missed.stdout
    command = printed.group(1)

    # Recorded again without accepting the golden: its drift is shown by step, and only
    # the edited step (whose request changed) drifted.
    drift = _run(
        project,
        [*PYTEST, "--swarm-mode=record", "test_support.py::test_triage_matches_its_golden"],
        _env(servers),
    )
    assert drift.returncode == 1, drift.stdout
    assert "golden drift in scenario 'triage.replay'" in drift.stdout
    rows = re.findall(r"^E\s+\| triage \| (\w+) \|", drift.stdout, re.M)
    assert rows == ["draft_reply"], drift.stdout

    # The command the replay printed, as printed, in a shell with both servers up.
    rerecorded = _run(project, ["sh", "-c", command], _env(servers))
    assert rerecorded.returncode == 0, f"{command}\n{rerecorded.stdout}\n{rerecorded.stderr}"
    assert "3 passed" in rerecorded.stdout

    again = _replay(project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _outcomes(again.stdout)["PASSED"] == REACHING_DRAFT_REPLY | NOT_REACHING
    assert "unused" not in again.stdout and "never played" not in again.stdout
    assert "cassettes: 11 played, 0 recorded, 0 unplayed" in again.stdout
    status = _run(
        project, [sys.executable, "-m", "swarm_runtime.cli.main", "cassettes", "status"], _env()
    )
    assert status.returncode == 0, status.stdout + status.stderr
    assert "nothing stale: the 11 recorded call(s)" in status.stdout
    assert _files_holding_a_key(project) == []


CONTROLLER_PROBE = """
import sys
from pathlib import Path

SDKS = ("anthropic", "openai")


def pytest_unconfigure(config):
    imported = " ".join(name for name in SDKS if name in sys.modules) or "none"
    who = config.workerinput["workerid"] if hasattr(config, "workerinput") else "controller"
    Path("sdks-" + who + ".txt").write_text(imported)
"""


def test_a_replay_under_xdist_imports_no_provider_sdk_in_the_controller(project: Path) -> None:
    (project / "conftest.py").write_text(CONTROLLER_PROBE)
    replayed = _replay(project, "-n", "2")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "cassettes: 11 played, 0 recorded, 0 unplayed" in replayed.stdout
    imported = {path.name: path.read_text() for path in project.glob("sdks-*.txt")}
    assert imported.pop("sdks-controller.txt") == "none"
    # The workers replayed openai-step's calls through its SDK; claude-step's plain
    # successes were read from their cassettes without the anthropic SDK, never imported.
    assert len(imported) == 2
    assert {name for text in imported.values() for name in text.split()} == {"openai"}
