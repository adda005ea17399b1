"""A user project with a judge on a step, in stub, record and replay (docs/judges.md#judges).

Its flow's ``draft`` step has a judge (``judges:``); its tests add one of their own with
``swarm_judge``. On the stub a scenario scripts a pass and a fail; then the suite records
against a local Anthropic-compatible server, where the test's own judge scores below its
threshold: the test fails, and its recording is kept. A replay with no network gives the
same verdicts; after the rubric is edited, the replay misses, naming the judge and the
changed rubric line. The key is in no file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import AnthropicServer, Reply, error_body
from tests.plugin.projects import JUDGED_FLOW as FLOW
from tests.plugin.projects import PYTEST, no_network, project_env

KEY = "sk-ant-judge-project-not-a-key"


TESTS = """
def test_the_reply_is_polite(flow_runner):
    record = flow_runner("support")
    assert record.status == "succeeded"


def test_the_reply_names_the_amount(flow_runner, swarm_judge):
    record = flow_runner("support")
    verdict = swarm_judge(
        record, step="draft", name="amount", threshold=0.5,
        rubric="The reply names the amount refunded, in euros.",
    )
    assert verdict.passed


def test_the_stub_scripts_a_failing_judge(flow_runner, stub_scenario):
    stub_scenario({"judges": {"draft": {"tone": {"score": 0.1, "reason": "it blames the customer"}}}})
    flow_runner("support")
"""


def _pytest(project: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [*args], cwd=project, env=env or project_env(), capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout + done.stderr


def _swarm_status(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", "cassettes", "status"],
        cwd=project,
        env=project_env(),
        capture_output=True,
        text=True,
        check=False,
    )


def _said(text: str, score: float, reason: str) -> Reply:
    return Reply(text=f"{text}\n\n```handoff\nscore: {score}\nreason: {reason}\n```")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "flows").mkdir(parents=True)
    (root / "flows" / "support.yaml").write_text(FLOW)
    (root / "flows" / "flows.yaml").write_text("order: [support]\n")
    (root / "test_support.py").write_text(TESTS)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def test_a_judged_project_in_stub_record_and_replay(project: Path) -> None:
    # Stub: the judges score 1 unless the scenario scripts otherwise.
    code, out = _pytest(project, *PYTEST)
    assert code == 1, out
    assert "2 passed, 1 failed" in out or "1 failed, 2 passed" in out, out
    assert "judge 'tone' on support/draft (execution 1) scored 0.1, below its threshold 0.7" in out
    assert "it blames the customer" in out

    # Record: the step, its flow judge, then the test's own judge, which scores too low.
    server = AnthropicServer().start()
    server.script(
        Reply(text="We are sorry: your order will be refunded."),  # test 1: the step
        _said("Polite.", 0.9, "courteous throughout"),  # its flow judge
        Reply(text="We are sorry: your order will be refunded."),  # test 2: the step
        _said("Polite.", 0.95, "courteous"),  # its flow judge
        _said("No amount.", 0.2, "the reply never says how much"),  # the test's judge
    )
    try:
        env = project_env({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url})
        code, out = _pytest(project, *PYTEST, "--swarm-mode=record", env=env)
    finally:
        server.stop()
    assert code == 1, out
    assert "1 passed, 1 failed, 1 skipped" in out or "1 failed, 1 passed, 1 skipped" in out, out
    expected = "judge 'amount' on support/draft (execution 1) scored 0.2, below its threshold 0.5"
    assert expected in out, out
    judged = [json.dumps(r["body"]) for r in server.requests]
    assert sum("The reply names the amount refunded" in body for body in judged) == 1
    cassettes = project / "golden" / "cassettes"
    names = sorted(p.name for p in cassettes.rglob("*.yaml"))
    assert names.count("draft-judge-tone-0.yaml") == 2, names
    assert names.count("draft-judge-amount-0.yaml") == 1, names  # kept, though the test failed
    receipts = [
        json.loads(p.read_text()) for p in (project / "runs").rglob("receipts/draft-writer.json")
    ]
    tones = [r["judgements"][0] for r in receipts if r.get("mode") != "stub"]
    assert sorted(t["score"] for t in tones) == [0.9, 0.95], tones
    assert {t["model"] for t in tones} != {"claude-stub"}, tones

    # Replay with no network: the same verdicts, from the recordings.
    code, out = _pytest(project, *no_network(), *PYTEST, "--swarm-mode=replay")
    assert code == 1, out
    assert expected in out and "the reply never says how much" in out, out
    assert "1 passed, 1 failed, 1 skipped" in out or "1 failed, 1 passed, 1 skipped" in out, out
    assert "0 unplayed" in out, out

    leaking = [
        str(path)
        for path in project.rglob("*")
        if path.is_file() and KEY.encode() in path.read_bytes()
    ]
    assert leaking == []

    # The flows as recorded: nothing is stale, the judges' cassettes included.
    status = _swarm_status(project)
    assert status.returncode == 0 and "draft-judge" not in status.stdout, status.stdout

    # The rubric changes: cassettes status names the judge and its line, with no run, and
    # its judge's replay misses, naming the judge and showing the changed line.
    flow = project / "flows" / "support.yaml"
    flow.write_text(FLOW.replace("never blames the customer", "thanks the customer"))
    status = _swarm_status(project)
    assert "draft-judge-tone-0.yaml" in status.stdout, status.stdout
    assert "judge 'tone' rubric: line 1: recorded 'The reply is polite and never blames" in (
        status.stdout
    )
    assert "draft-judge-amount-0.yaml" not in status.stdout, status.stdout
    code, out = _pytest(project, *no_network(), *PYTEST, "--swarm-mode=replay", "-k", "polite")
    assert code == 1, out
    assert "replay of judge 'tone' of support/draft iteration 0" in out, out
    assert "draft-judge-tone-0.yaml" in out, out
    assert "+messages|" in out and "thanks the customer" in out, out


def _record(project: Path, *replies: Reply, select: str) -> tuple[int, str]:
    server = AnthropicServer().start()
    server.script(*replies)
    try:
        env = project_env({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url})
        return _pytest(project, *PYTEST, "--swarm-mode=record", "-k", select, env=env)
    finally:
        server.stop()


def test_a_failed_call_never_takes_the_place_of_a_good_recording(project: Path) -> None:
    step = Reply(text="We are sorry: your order will be refunded.")
    code, out = _record(project, step, _said("Polite.", 0.9, "courteous"), select="polite")
    assert code == 0, out
    (kept,) = (project / "golden" / "cassettes").rglob("draft-judge-tone-0.yaml")
    good = kept.read_bytes()

    # The judge's call answers HTTP 400: no verdict, so the test fails and records nothing.
    refused = Reply(status=400, body=error_body("invalid_request_error", "bad"))
    code, out = _record(project, step, refused, select="polite")
    assert code == 1, out
    assert (
        "judge 'tone' on support/draft (execution 1) gave no usable score: the judge's call failed"
        in out
    )
    assert kept.read_bytes() == good

    # The step's call fails: the run fails, and an expectation on it fails too; not a
    # verdict on a good run, so the recording stays as it was.
    project.joinpath("test_support.py").write_text(
        TESTS + "\n\ndef test_polite_again(flow_runner, swarm_expect):\n"
        '    swarm_expect(flow_runner("support")).step("draft").contains("sorry")\n'
    )
    code, out = _record(project, refused, select="polite_again")
    assert code == 1, out
    assert not list((project / "golden" / "cassettes").rglob("test_polite_again/*/*.yaml"))
    assert kept.read_bytes() == good


def test_a_new_test_judge_missing_from_the_recording_is_said_plainly(project: Path) -> None:
    step = Reply(text="We are sorry: your order will be refunded.")
    replies = (step, _said("Polite.", 0.9, "fine"), _said("Amount.", 0.9, "names it"))
    code, out = _record(project, *replies, select="amount")
    assert code == 0, out
    tests = project / "test_support.py"
    tests.write_text(
        TESTS.replace(
            "    assert verdict.passed\n",
            '    assert verdict.passed\n    swarm_judge(record, step="draft", name="extra", rubric="Short?")\n',
        )
    )
    code, out = _pytest(project, *no_network(), *PYTEST, "--swarm-mode=replay", "-k", "amount")
    assert code == 1, out
    assert "swarm: judge 'extra': replay of judge 'extra' of support/draft iteration 0: " in out
    assert "Traceback" not in out and "site-packages" not in out, out
