"""swarm-results.jsonl and ``swarm results`` (docs/judges.md#the-results-file), as a user's sessions
write them.

A user project with a judge on a step runs its suite under ``pytest -n 2``: the file at
the rootdir has exactly one line per test that ran flows and one per judgement, all of
one session. A second session in which the judge fails more often is flagged by
``swarm results`` (as text and as Markdown); a broken file is refused naming its line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_swarm.results_log import git_commit

FLOW = """\
key: support
title: Support
description: Drafts a reply.
steps:
  - id: draft
    agents: [writer]
    role: Draft the reply.
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
    judges:
      - {name: tone, rubric: The reply is polite., threshold: 0.7}
"""

TESTS = """
import pytest


@pytest.mark.parametrize("n", range(6))
def test_support(n, flow_runner, stub_scenario):
    stub_scenario({"judges": {"draft": {"tone": SCORES[n]}}})
    flow_runner("support")


def test_two_runs_and_a_judge_of_its_own(flow_runner, swarm_judge):
    flow_runner("support")
    record = flow_runner("support")
    swarm_judge(record, step="draft", rubric="It is short.", name="brevity")


def test_no_flow():
    pass
"""


def _session(pytester: pytest.Pytester, scores: list[float], *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_support=f"SCORES = {scores!r}\n" + TESTS)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def _swarm(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", "results", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    flows = swarm_pytester.path / "flows"
    for path in flows.iterdir():
        if path.is_file():
            path.unlink()
    (flows / "support.yaml").write_text(FLOW)
    (flows / "flows.yaml").write_text("order: [support]\n")
    return swarm_pytester


def test_a_parallel_session_writes_one_line_per_test_and_judgement(
    project: pytest.Pytester,
) -> None:
    result = _session(project, [0.9, 0.9, 0.9, 0.9, 0.2, 0.9], "-n", "2")
    result.assert_outcomes(passed=7, failed=1)  # test_no_flow passes too
    path = project.path / "swarm-results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    tests = [line for line in lines if line["kind"] == "test"]
    judges = [line for line in lines if line["kind"] == "judge"]
    # 7 tests ran flows (test_no_flow ran none); 6 + 2 flow judgements, 1 of the test's own
    assert sorted(line["test"] for line in tests) == sorted(
        [f"test_support.py::test_support[{n}]" for n in range(6)]
        + ["test_support.py::test_two_runs_and_a_judge_of_its_own"]
    )
    assert len(judges) == 9, judges
    assert len({line["session"] for line in lines}) == 1  # both workers: one session
    outcomes = {line["test"]: line["outcome"] for line in tests}
    assert outcomes["test_support.py::test_support[4]"] == "failed"
    assert sum(o == "passed" for o in outcomes.values()) == 6
    failed = [j for j in judges if not j["passed"]]
    assert [(j["judge"], j["score"], j["test"]) for j in failed] == [
        ("tone", 0.2, "test_support.py::test_support[4]")
    ]
    own = [j for j in judges if j["source"] == "test"]
    assert [(j["judge"], j["flow"], j["step"], j["execution"]) for j in own] == [
        ("brevity", "support", "draft", 1)
    ]
    assert {line["mode"] for line in lines} == {"stub"}


def test_swarm_results_flags_a_judge_whose_pass_rate_fell(project: pytest.Pytester) -> None:
    _session(project, [0.9] * 6).assert_outcomes(passed=8)
    _session(project, [0.9, 0.1, 0.1, 0.9, 0.9, 0.9]).assert_outcomes(passed=6, failed=2)
    shown = _swarm(project.path)
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0] + " " + line.split()[1]: line for line in shown.stdout.splitlines()}
    assert rows["support/draft tone"].split()[2:] == ["8/8", "6/8", "FELL"], shown.stdout
    own = "(test_support.py::test_two_runs_and_a_judge_of_its_own)"  # a test's own judge
    assert rows["support/draft brevity"].split()[2:] == [own, "1/1", "1/1"], shown.stdout
    assert "pass rate fell in the last session for: support/draft tone" in shown.stdout
    assert "(7/7 tests passed)" in shown.stdout and "(5/7 tests passed)" in shown.stdout
    markdown = _swarm(project.path, "--markdown", "--last", "2")
    assert "| support/draft tone | 8/8 | 6/8 | FELL |" in markdown.stdout, markdown.stdout
    assert "**Pass rate fell** in the last session for: support/draft tone" in markdown.stdout
    last = _swarm(project.path, "--last", "1")
    assert "FELL" not in last.stdout and "6/8" in last.stdout, last.stdout


def test_no_results_file_when_told_so(project: pytest.Pytester) -> None:
    _session(project, [0.9] * 6, "--swarm-results=none").assert_outcomes(passed=8)
    assert not (project.path / "swarm-results.jsonl").exists()
    _session(project, [0.9] * 6, "--swarm-results=out/mine.jsonl").assert_outcomes(passed=8)
    assert len((project.path / "out" / "mine.jsonl").read_text().splitlines()) == 7 + 9


def test_a_broken_results_file_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "swarm-results.jsonl"
    path.write_text('{"kind": "test", "session": "a", "test": "t", "outcome": "passed"}\n{nope\n')
    shown = _swarm(tmp_path)
    assert shown.returncode == 2
    assert f"{path.name}:2: not a JSON line" in shown.stderr, shown.stderr
    assert "Traceback" not in shown.stderr
    missing = _swarm(tmp_path, "--file", "other.jsonl")
    assert missing.returncode == 2 and "other.jsonl: no such file" in missing.stderr
    path.write_text('["a list"]\n')
    assert "not a swarm results line" in _swarm(tmp_path).stderr


def test_the_commit_is_read_from_the_git_dir_without_git(tmp_path: Path) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    git = tmp_path / "repo" / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(sha + "\n")
    (tmp_path / "repo" / "sub").mkdir()
    assert git_commit(tmp_path / "repo" / "sub") == sha
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs\n{sha} refs/heads/main\n")
    assert git_commit(tmp_path / "repo") == sha
    (git / "HEAD").write_text(sha[::-1] + "\n")  # detached
    assert git_commit(tmp_path / "repo") == sha[::-1]
    (tmp_path / "elsewhere").mkdir()
    assert git_commit(tmp_path / "elsewhere") is None


def _line(session: str, at: str, judge: str, passed: object, **more: object) -> dict[str, object]:
    return {
        "kind": "judge",
        "session": session,
        "at": at,
        "flow": "support",
        "step": "draft",
        "judge": judge,
        "passed": passed,
        "source": "flow",
        **more,
    }


def test_a_judge_missing_from_the_last_session_is_not_said_to_have_fallen() -> None:
    from swarm_runtime.results import sessions, trend

    lines = [
        _line("a", "2026-01-01T00:00", "tone", True),
        _line("b", "2026-01-02T00:00", "tone", False),
        _line("c", "2026-01-03T00:00", "facts", True),  # tone did not run (pytest -k)
    ]
    _, rows = trend(sessions(lines), 5)
    assert {row[0]: row[1:] for row in rows}["support/draft tone"] == ["1/1", "0/1", "-", ""]


def test_a_tests_own_judges_are_rows_of_their_own_and_only_true_passes() -> None:
    from swarm_runtime.results import sessions, trend

    lines = [
        _line("a", "2026-01-01T00:00", "judge", True, source="test", test="t.py::one"),
        _line("a", "2026-01-01T00:00", "judge", "false", source="test", test="t.py::two"),
        _line("a", "2026-01-01T00:00", "judge", True),
    ]
    _, rows = trend(sessions(lines), 5)
    assert [row[:2] for row in rows] == [
        ["support/draft judge", "1/1"],
        ["support/draft judge (t.py::one)", "1/1"],
        ["support/draft judge (t.py::two)", "0/1"],  # "false" is no pass
    ]


def test_a_results_file_behind_a_symlink_is_appended_to(tmp_path: Path) -> None:
    from swarm_runtime.results import append

    target = tmp_path / "kept" / "results.jsonl"
    target.parent.mkdir()
    link = tmp_path / "swarm-results.jsonl"
    link.symlink_to(target)
    append(link, [{"kind": "test", "session": "a", "test": "t", "outcome": "passed"}])
    assert json.loads(target.read_text())["test"] == "t"
