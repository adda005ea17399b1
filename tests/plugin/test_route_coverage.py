"""Route coverage as a user meets it: a project of their own, the docs' options."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

NOTES = """    teaching_notes:
      inputs: ["the ticket"]
      outputs: ["a reply"]
      emphasizes: ["be brief"]
      constraints: ["stay polite"]
"""
TRIAGE = (
    'key: triage\ntitle: "Triage"\ndescription: "Sort a ticket."\nsteps:\n'
    '  - id: route\n    agents: [router]\n    role: "Decide where the ticket goes."\n'
    + NOTES
    + "    routing:\n      kind: branch\n      branch_field: status\n"
    + "      branches: {answer: reply, bounce: rework}\n"
    '  - id: rework\n    agents: [fixer]\n    role: "Rework the ticket."\n'
    + NOTES
    + "    routing: {kind: linear, next: reply}\n"
    '  - id: reply\n    agents: [writer]\n    role: "Reply to the customer."\n' + NOTES
)
ONE_BRANCH = """
def test_the_answer_branch(flow_runner):
    assert flow_runner("triage").status == "succeeded"
"""
BOTH_BRANCHES = (
    ONE_BRANCH
    + """
def test_the_bounce_branch(flow_runner, stub_scenario):
    stub_scenario({"route": {"handoff": {"status": "bounce"}}})
    assert flow_runner("triage").status == "succeeded"
"""
)
UNTAKEN = "  triage/route: branch value 'bounce' -> rework never taken"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in (
        "SWARM_MODE",
        "SWARM_FLOWS_DIR",
        "SWARM_NAVIGATOR",
        "SWARM_PYTEST_RUNS_DIR",
        "SWARM_COVERAGE_MIN",
        # An inner session must not take itself for one of our xdist workers.
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
    ):
        monkeypatch.delenv(name, raising=False)
    (pytester.path / "flows").mkdir()
    (pytester.path / "flows" / "triage.yaml").write_text(TRIAGE, encoding="utf-8")
    return pytester


def _report(project: pytest.Pytester) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((project.path / "swarm-coverage.json").read_text())
    return value


def test_the_gate_fails_listing_the_untaken_branch_value_then_passes(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_triage=ONE_BRANCH)
    failed = project.runpytest("--swarm-coverage-min", "100")
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    failed.assert_outcomes(passed=1)  # every test passed; the gate failed the session
    failed.stdout.fnmatch_lines(
        [
            "*- swarm coverage -*",
            "triage * 2/3 * 1/3 * 50.0%",
            "FAILED: route coverage 50.0% is below the minimum 100%; edges never taken:",
            UNTAKEN,
            "  triage/rework: next -> reply never taken",
        ]
    )
    # The session's last line says it failed, not a green "1 passed".
    failed.stdout.re_match_lines(
        [r"=+ 1 passed, 1 route coverage below its minimum \(session failed\).*"]
    )
    report = _report(project)
    assert report["percent"] == 50.0
    assert {e["label"]: e["taken"] for e in report["flows"]["triage"]["edges"]} == {
        "branch=answer": 1,
        "branch=bounce": 0,
        "next": 0,
    }

    project.makepyfile(test_triage=BOTH_BRANCHES)
    passed = project.runpytest("--swarm-coverage-min", "100")
    assert passed.ret == pytest.ExitCode.OK
    passed.stdout.fnmatch_lines(["triage * 3/3 * 3/3 * 100.0%"])
    assert "never taken" not in passed.stdout.str()
    assert "session failed" not in passed.stdout.str()
    assert _report(project)["runs"] == 2


def test_coverage_is_combined_across_xdist_workers(project: pytest.Pytester) -> None:
    project.makepyfile(test_triage=ONE_BRANCH)
    gap = project.runpytest_subprocess("-n", "2", "--swarm-coverage-min", "100")
    assert gap.ret == pytest.ExitCode.TESTS_FAILED
    gap.stdout.fnmatch_lines([UNTAKEN])

    project.makepyfile(test_triage=BOTH_BRANCHES)
    single = project.runpytest_subprocess("--swarm-coverage")
    assert single.ret == pytest.ExitCode.OK
    alone = _report(project)
    parallel = project.runpytest_subprocess("-n", "2", "--swarm-coverage-min", "100")
    assert parallel.ret == pytest.ExitCode.OK
    assert _report(project) == alone
    assert alone["runs"] == 2 and alone["percent"] == 100.0


def test_coverage_alone_never_fails_the_session(project: pytest.Pytester) -> None:
    project.makepyfile(test_triage=ONE_BRANCH)
    result = project.runpytest("--swarm-coverage")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["triage * 2/3 * 1/3 * 50.0%", "written to *swarm-coverage.json"])


def test_the_minimum_from_the_ini_file(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nswarm_coverage_min = 60\n")
    project.makepyfile(test_triage=ONE_BRANCH)
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*below the minimum 60%*"])


@pytest.mark.parametrize("value", ["101", "-1", "most", "nan"])
def test_a_minimum_that_is_not_a_percentage_is_a_usage_error(
    project: pytest.Pytester, value: str
) -> None:
    project.makepyfile(test_triage=ONE_BRANCH)
    result = project.runpytest("--swarm-coverage-min", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*coverage minimum '{value}' from --swarm-coverage-min is not allowed: give a "
            "percentage from 0 to 100*"
        ]
    )
    assert not (project.path / "swarm-coverage.json").exists()


def test_mode_paritys_stub_reference_run_is_not_counted(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_triage="""
def test_only_the_reference(flow_runner):
    assert flow_runner.stub("triage").status == "succeeded"
"""
    )
    result = project.runpytest("--swarm-coverage")
    assert result.ret == pytest.ExitCode.OK
    report = _report(project)
    assert report["runs"] == 0
    assert all(step["taken"] == 0 for step in report["flows"]["triage"]["steps"])


XDIST_GONE = "raise ImportError('pytest-xdist is not installed here')\n"


@pytest.mark.parametrize("option", ["--swarm-coverage", "--swarm-coverage-min=50"])
def test_coverage_needs_no_pytest_xdist(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    project.makepyfile(test_triage=ONE_BRANCH)
    inline = project.runpytest("-p", "no:xdist", option)
    assert inline.ret == pytest.ExitCode.OK, inline.stdout.str()
    assert _report(project)["runs"] == 1
    (project.path / "swarm-coverage.json").unlink()
    # As with only the [pytest] extra installed: plugins named one by one, and an
    # `import xdist` that fails.
    shadow = project.mkdir("no_xdist")
    (shadow / "xdist.py").write_text(XDIST_GONE)
    monkeypatch.setenv("PYTHONPATH", str(shadow))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    alone = project.runpytest_subprocess("-p", "pytest_swarm.plugin", "-p", "syrupy", option)
    assert alone.ret == pytest.ExitCode.OK, alone.stdout.str() + alone.stderr.str()
    alone.stdout.fnmatch_lines(["triage * 2/3 * 1/3 * 50.0%"])
    assert _report(project)["runs"] == 1


def test_a_session_that_broke_writes_no_report(project: pytest.Pytester) -> None:
    project.makepyfile(test_triage=ONE_BRANCH)
    project.makeconftest(
        "def pytest_collection_modifyitems(items):\n    raise RuntimeError('a broken plugin')\n"
    )
    broken = project.runpytest("--swarm-coverage")
    assert broken.ret == pytest.ExitCode.INTERNAL_ERROR
    assert not (project.path / "swarm-coverage.json").exists()


SUPPORT = (
    'key: support\ntitle: "Support"\ndescription: "Look it up, then answer."\nsteps:\n'
    '  - id: research\n    agents: [researcher]\n    role: "Look the question up."\n'
    + NOTES
    + "    tools: [search, fetch_page]\n"
    '  - id: answer\n    agents: [writer]\n    role: "Answer the customer."\n'
    + NOTES
    + "    tools: [send_mail]\n"
)
TOOL_TESTS = """
def _calls(*tools):
    return {"research": {"tools": [{"tool": t, "input": {}, "output": "ok"} for t in tools]}}


def test_a_search(flow_runner, stub_scenario):
    stub_scenario(_calls("search"))
    assert flow_runner("support").status == "succeeded"


def test_a_page_read(flow_runner, stub_scenario):
    stub_scenario(_calls("fetch_page", "fetch_page"))
    assert flow_runner("support").status == "succeeded"
"""


def test_each_tool_a_step_names_is_reported_called_or_never_called_and_never_gated(
    project: pytest.Pytester,
) -> None:
    (project.path / "flows" / "triage.yaml").unlink()
    (project.path / "flows" / "support.yaml").write_text(SUPPORT, encoding="utf-8")
    project.makepyfile(test_support=TOOL_TESTS)
    single = project.runpytest_subprocess("--swarm-coverage-min", "100")
    # Every step and edge taken: the gate passes, though send_mail was never called.
    assert single.ret == pytest.ExitCode.OK, single.stdout.str()
    single.stdout.fnmatch_lines(
        [
            "flow * steps * edges * tools * covered",
            "support * 2/2 * 1/1 * 2/3 * 100.0%",
            "total * 2/2 * 1/1 * 2/3 * 100.0%",
            "tools never called (not counted in the coverage):",
            "  support/answer: send_mail never called",
            "written to *swarm-coverage.json",
        ]
    )
    alone = _report(project)
    assert alone["tools"] == {"called": 2, "total": 3}
    assert alone["flows"]["support"]["tools"] == [
        {"step": "research", "tool": "search", "called": 1},
        {"step": "research", "tool": "fetch_page", "called": 2},
        {"step": "answer", "tool": "send_mail", "called": 0},
    ]
    parallel = project.runpytest_subprocess("-n", "2", "--swarm-coverage")
    assert parallel.ret == pytest.ExitCode.OK, parallel.stdout.str()
    assert _report(project) == alone  # each worker's calls counted once, on the controller


JUDGED = TRIAGE.replace(
    '  - id: reply\n    agents: [writer]\n    role: "Reply to the customer."\n' + NOTES,
    '  - id: reply\n    agents: [writer]\n    role: "Reply to the customer."\n'
    + NOTES
    + "    judges:\n"
    + "      - {name: tone, rubric: Polite., threshold: 0.5}\n"
    + "      - {name: facts, rubric: Accurate., threshold: 0.5}\n",
).replace(
    '"Rework the ticket."\n' + NOTES,
    '"Rework the ticket."\n'
    + NOTES
    + "    judges: [{name: care, rubric: Careful., threshold: 0.5}]\n",
)
JUDGE_TESTS = """
def test_one(flow_runner, stub_scenario):
    stub_scenario({"judges": {"reply": {"facts": 0.9}}})
    assert flow_runner("triage").status == "succeeded"


def test_two(flow_runner, stub_scenario):
    stub_scenario({"judges": {"reply": {"facts": 0.9}}})
    assert flow_runner("triage").status == "succeeded"
"""


def test_each_judge_is_reported_with_how_often_it_judged_and_passed_never_gated(
    project: pytest.Pytester,
) -> None:
    (project.path / "flows" / "triage.yaml").write_text(JUDGED, encoding="utf-8")
    project.makepyfile(test_judged=JUDGE_TESTS)
    result = project.runpytest_subprocess("-n", "2", "--swarm-coverage")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "judges (not counted in the coverage):",
            "  triage/rework: care never judged",
            "  triage/reply: tone 2/2 passed",
            "  triage/reply: facts 2/2 passed",
        ]
    )
    report = _report(project)
    assert report["flows"]["triage"]["judges"] == [
        {"step": "rework", "judge": "care", "judged": 0, "passed": 0},
        {"step": "reply", "judge": "tone", "judged": 2, "passed": 2},
        {"step": "reply", "judge": "facts", "judged": 2, "passed": 2},
    ]
    assert report["percent"] < 100  # the bounce branch: judges change nothing of it

    def report_of(*flags: str) -> str:
        command = [sys.executable, "-m", "swarm_runtime.cli.main", "coverage", "report"]
        done = subprocess.run(
            [*command, "swarm-coverage.json", *flags],
            cwd=project.path,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout

    shown = report_of()
    assert "  triage/rework: care never judged" in shown, shown
    markdown = report_of("--markdown")
    assert "- `triage/reply`: tone 2/2 passed" in markdown, markdown
