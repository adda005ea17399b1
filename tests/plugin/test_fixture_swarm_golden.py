"""swarm_golden: goldens through syrupy, drift diffs, --snapshot-update, xdist."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

GOLDEN_TESTS = """
import pytest

@pytest.mark.parametrize("flow", ["signal", "plan"])
def test_golden(flow, flow_runner, swarm_golden):
    swarm_golden(flow_runner(flow), flow)
"""


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _edit_note(flows: Path) -> tuple[str, str, str]:
    """Change one teaching note of signal's second step; return (step, agent, new line)."""
    from swarm_runtime.flow.registry import FlowRegistry

    step = FlowRegistry(flows).get("signal").steps[1]
    old = step.teaching_notes.emphasizes[0]
    new = old + " (edited)"
    path = flows / "signal.yaml"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    return step.id, step.primary_agent, new


def test_missing_golden_fails_until_snapshot_update(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(GOLDEN_TESTS)
    first = swarm_pytester.runpytest()
    first.assert_outcomes(failed=2)
    first.stdout.fnmatch_lines(
        [
            "*no golden for scenario 'signal'*create it with",
            "*pytest --swarm-mode=stub --snapshot-update 'test_missing_golden_fails_until_"
            "snapshot_update.py::test_golden[[]signal[]]'",
        ]
    )
    # Missing is not drifted: nothing was there to drift from.
    first.stdout.fnmatch_lines(["goldens: 0 compared, 0 updated, 0 drifted, 2 missing (no *"])
    swarm_pytester.runpytest("--snapshot-update").assert_outcomes(passed=2)
    swarm_pytester.runpytest().assert_outcomes(passed=2)
    assert (swarm_pytester.path / "golden" / "signal" / "events.jsonl").is_file()


UNNAMED = """
def test_no_name(flow_runner, swarm_golden):
    swarm_golden(flow_runner("plan"))

def test_name_only(swarm_golden):
    swarm_golden("plan")
"""


def test_a_golden_without_a_run_or_a_name_says_what_to_pass(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(test_unnamed=UNNAMED)
    result = swarm_pytester.runpytest("--snapshot-update")
    result.assert_outcomes(failed=2)
    said = 'needs the run and the golden\'s name, e.g. swarm_golden(record, "claims-desk")*'
    result.stdout.fnmatch_lines([f"*swarm_golden(record) {said}", f"*swarm_golden('plan') {said}"])
    assert "TypeError" not in result.stdout.str()
    assert not (swarm_pytester.path / "golden").exists()  # nothing written under a guessed name


def test_a_teaching_note_change_fails_exactly_the_affected_goldens(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(GOLDEN_TESTS)
    swarm_pytester.runpytest("--snapshot-update").assert_outcomes(passed=2)
    golden = swarm_pytester.path / "golden"
    before = _tree(golden)
    step, agent, new_line = _edit_note(swarm_pytester.path / "flows")

    result = swarm_pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)  # plan's golden still holds
    result.stdout.fnmatch_lines(
        [
            "*golden drift in scenario 'signal'*",
            f"*| signal | {step} | `signal/llm/{step}-{agent}-claude.jsonl` (modified)*",
            f"*+#1.content| - {new_line}*",
        ]
    )
    assert "| plan |" not in result.stdout.str()

    swarm_pytester.runpytest("--snapshot-update").assert_outcomes(passed=2)
    swarm_pytester.runpytest().assert_outcomes(passed=2)
    after = _tree(golden)
    changed = sorted(name for name in before if before[name] != after.get(name))
    assert sorted(set(after) - set(before)) == []
    # The step's transcript (prompt), its receipt (prompt tokens), and the run totals.
    assert changed == [
        "signal/meta.json",
        f"signal/signal/llm/{step}-{agent}-claude.jsonl",
        f"signal/signal/receipts/{step}-{agent}.json",
    ]


def test_unused_goldens_fail_and_snapshot_update_deletes_them(
    swarm_pytester: pytest.Pytester,
) -> None:
    # In a subprocess: syrupy's unused-snapshot report must not see this session's xdist.
    swarm_pytester.makepyfile(GOLDEN_TESTS)
    swarm_pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=2)
    ghost = swarm_pytester.path / "golden" / "signal" / "signal" / "receipts" / "gone-x.json"
    ghost.write_text("{}\n")
    # Every test passes, yet the session fails: the unused golden, named by its path
    # inside the run (the name our extension gives it; syrupy's wording is not asserted).
    result = swarm_pytester.runpytest_subprocess("--snapshot-details")
    result.assert_outcomes(passed=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*signal/receipts/gone-x.json*"])
    swarm_pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=2)
    assert not ghost.exists()
    assert swarm_pytester.runpytest_subprocess().ret == 0


def test_goldens_are_byte_identical_with_and_without_xdist(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(GOLDEN_TESTS)
    serial = swarm_pytester.runpytest_subprocess("--snapshot-update", "-n", "0")
    serial.assert_outcomes(passed=2)
    golden = swarm_pytester.path / "golden"
    first = _tree(golden)
    shutil.rmtree(golden)
    parallel = swarm_pytester.runpytest_subprocess("--snapshot-update", "-n", "2")
    parallel.assert_outcomes(passed=2)
    assert _tree(golden) == first
    swarm_pytester.runpytest_subprocess("-n", "2").assert_outcomes(passed=2)


def test_normalize_hook_adds_volatile_fields(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makeconftest(
        """
        def pytest_swarm_normalize(record):
            record.add_volatile("model")
        """
    )
    swarm_pytester.makepyfile(
        """
        def test_golden(flow_runner, swarm_golden):
            swarm_golden(flow_runner("stepwise-demo"), "demo")
        """
    )
    swarm_pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    receipts = list((swarm_pytester.path / "golden" / "demo").glob("*/receipts/*.json"))
    assert receipts
    for path in receipts:
        assert '"model": "<VOLATILE>"' in path.read_text()


def test_snapshot_update_of_the_whole_suite_deletes_a_golden_no_test_makes(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(GOLDEN_TESTS)
    swarm_pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=2)
    golden = swarm_pytester.path / "golden"
    (golden / "cassettes").mkdir()  # not a golden run: never touched
    (golden / "README.md").write_text("ours\n")
    # The plan test is deleted: its golden is left behind.
    swarm_pytester.makepyfile(GOLDEN_TESTS.replace('["signal", "plan"]', '["signal"]'))
    # A narrowed run cannot know what the rest of the suite makes: it keeps everything.
    narrowed = swarm_pytester.runpytest_subprocess("--snapshot-update", "-k", "signal")
    narrowed.assert_outcomes(passed=1)
    assert (golden / "plan" / "spec.json").is_file()
    whole = swarm_pytester.runpytest_subprocess("--snapshot-update")
    whole.assert_outcomes(passed=1)
    whole.stdout.fnmatch_lines(
        ["*goldens: 1 compared, 0 updated, 0 drifted, 1 no test produces removed (plan)*"]
    )
    assert sorted(p.name for p in golden.iterdir()) == ["README.md", "cassettes", "signal"]
