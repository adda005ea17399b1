"""``swarm flows validate`` is the whole check, and ``swarm run`` refuses what it reports.

A claims desk as a new user writes it: a flow with a navigator step and detours into a
utility flow. Each typo is a flow error with its file and line, every error of the
directory is reported at once, and ``swarm run`` refuses the same, with the same lines,
before it writes anything.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

NOTES = "teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}"
CLAIMS = f"""\
key: claims
title: Claims
description: A claims desk.
steps:
  - id: intake
    agents: [intake-clerk]
    role: Read the claim.
    {NOTES}
    detours:
      - {{id: fraud, flow: fraud-chek, when: "handoff.suspicious == true"}}
      - {{id: screen, step: fraud-check/scren_claimant}}
  - id: decide
    agents: [adjuster]
    role: Decide.
    {NOTES}
    routing:
      kind: navigator
      default: pya
      candidates:
        - {{id: back, to: intake, when: "handoff.status != 'OK' &&"}}
        - {{id: forward, to: pay}}
  - id: pay
    agents: [payer]
    role: Pay.
    {NOTES}
"""
FRAUD_CHECK = f"""\
key: fraud-check
title: Fraud check
description: Checks a claim for fraud.
utility: true
injection_trigger: "handoff.amount > 1000"
steps:
  - id: screen_claimant
    agents: [screener]
    role: Screen the claimant.
    {NOTES}
"""
TYPOS = {
    # line of claims.yaml -> what its error says
    10: "no flow 'fraud-chek'",
    11: "flow 'fraud-check' has no step 'scren_claimant'",
    18: "'pya' names no step of flow 'claims'",
    20: "is not a CEL expression",
}


def _desk(root: Path, claims: str = CLAIMS, fraud_check: str = FRAUD_CHECK) -> Path:
    flows = root / "flows"
    flows.mkdir()
    (flows / "claims.yaml").write_text(claims)
    (flows / "fraud-check.yaml").write_text(fraud_check)
    (flows / "flows.yaml").write_text("order: [claims]\n")
    return flows


def _errors_at(text: str, name: str) -> dict[int, str]:
    """The error lines of ``text`` about file ``name``, by line number."""
    found: dict[int, str] = {}
    for line in text.splitlines():
        match = re.search(rf"{re.escape(name)}:(\d+), ", line)
        if match:
            found[int(match.group(1))] = line
    return found


def test_validate_reports_every_typo_of_a_file_at_once_with_its_line(
    swarm_process: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    _desk(tmp_path)
    result = swarm_process("flows", "validate")
    assert result.returncode == 2, result.stdout + result.stderr
    errors = _errors_at(result.stderr, "claims.yaml")
    assert sorted(errors) == sorted(TYPOS), result.stderr
    for line, message in TYPOS.items():
        assert message in errors[line], errors[line]
    assert "did you mean 'fraud-check'?" in errors[10]
    assert "did you mean 'screen_claimant'?" in errors[11]
    assert "Traceback" not in result.stderr


def test_run_refuses_what_validate_reports_with_the_same_lines_before_writing(
    swarm_process: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    _desk(tmp_path)
    validated = swarm_process("flows", "validate")
    result = swarm_process("run", "claims", "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    refused = _errors_at(result.stderr, "claims.yaml")
    reported = _errors_at(validated.stderr, "claims.yaml")
    assert sorted(refused) == sorted(reported) == sorted(TYPOS)
    for line in TYPOS:  # the same message, after the prefix the CLI puts before each line
        assert refused[line].endswith(reported[line].split(f"claims.yaml:{line}, ", 1)[1])
    assert "swarm flows validate" in result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_detour_typo_alone_fails_validate_and_run_with_its_line(
    swarm_process: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    """The report's case: the rest of the file is right, only the detour's target is not."""
    fixed = CLAIMS.replace("default: pya", "default: pay").replace(' &&"', '"')
    _desk(tmp_path, fixed.replace("      - {id: screen, step: fraud-check/scren_claimant}\n", ""))
    for command in (("flows", "validate"), ("run", "claims", "--runs-dir", "runs")):
        result = swarm_process(*command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        (message,) = _errors_at(result.stderr, "claims.yaml").items()
        assert message[0] == 10 and "field 'detours.fraud.flow'" in message[1], message
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(FRAUD_CHECK.replace("injection_trigger", "injection_triger"), id="key-typo"),
        pytest.param(FRAUD_CHECK.replace("> 1000", "> "), id="trigger-syntax"),
    ],
)
def test_a_utility_flow_that_does_not_load_is_refused_by_run_as_by_validate(
    swarm_process: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path, broken: str
) -> None:
    """Not a run that 'succeeds' without the injection the navigator was told to take.

    No detour names the utility flow: it is only injected, when its trigger holds.
    """
    detours = CLAIMS[CLAIMS.index("    detours:") : CLAIMS.index("  - id: decide")]
    fixed = CLAIMS.replace(detours, "").replace("default: pya", "default: pay")
    _desk(tmp_path, fixed.replace(' &&"', '"'), broken)
    validated = swarm_process("flows", "validate")
    assert validated.returncode == 2
    (line,) = _errors_at(validated.stderr, "fraud-check.yaml")
    result = swarm_process("run", "claims", "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"fraud-check.yaml:{line}, " in result.stderr
    assert "succeeded" not in result.stdout + result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_step_engine_typo_fails_validate_and_run_with_the_same_line(
    swarm_process: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    fixed = CLAIMS.replace("flow: fraud-chek", "flow: fraud-check").replace("scren", "screen")
    fixed = fixed.replace("default: pya", "default: pay").replace(' &&"', '"')
    _desk(tmp_path, fixed.replace("    role: Pay.\n", "    role: Pay.\n    engine: claud-step\n"))
    validated = swarm_process("flows", "validate")
    assert validated.returncode == 2, validated.stdout + validated.stderr
    ((line, reported),) = _errors_at(validated.stderr, "claims.yaml").items()
    assert "field 'engine': no engine 'claud-step'" in reported and "claude-step" in reported
    result = swarm_process("run", "claims", "--runs-dir", "runs")
    assert result.returncode == 2, result.stdout + result.stderr
    assert _errors_at(result.stderr, "claims.yaml") == {line: "swarm: error: " + reported}
    assert not (tmp_path / "runs").exists()


def test_an_engine_typo_in_a_file_with_other_typos_is_reported_with_them(
    swarm_process: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    """A condition's error does not hide the engine typo two steps further: one pass."""
    _desk(tmp_path, CLAIMS.replace("    role: Pay.\n", "    role: Pay.\n    engine: claud-step\n"))
    typos = {**TYPOS, 25: "field 'engine': no engine 'claud-step'"}
    validated = swarm_process("flows", "validate")
    result = swarm_process("run", "claims", "--runs-dir", str(tmp_path / "runs"))
    for outcome in (validated, result):
        assert outcome.returncode == 2, outcome.stdout + outcome.stderr
        errors = _errors_at(outcome.stderr, "claims.yaml")
        assert sorted(errors) == sorted(typos), outcome.stderr
        for line, message in typos.items():
            assert message in errors[line], errors[line]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_engine_typo_in_a_flow_the_run_does_not_name_is_refused_as_validate_does(
    swarm_process: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    fixed = CLAIMS.replace("flow: fraud-chek", "flow: fraud-check").replace("scren", "screen")
    fixed = fixed.replace("default: pya", "default: pay").replace(' &&"', '"')
    flows = _desk(tmp_path, fixed)
    archive = FRAUD_CHECK.replace("key: fraud-check", "key: archive").split("utility:")[0]
    archive += FRAUD_CHECK[FRAUD_CHECK.index("steps:") :]
    (flows / "archive.yaml").write_text(
        archive.replace(
            "    role: Screen the claimant.\n", "    role: Screen.\n    engine: claud-step\n"
        )
    )
    validated = swarm_process("flows", "validate")
    assert validated.returncode == 2, validated.stdout + validated.stderr
    ((line, reported),) = _errors_at(validated.stderr, "archive.yaml").items()
    assert "no engine 'claud-step'" in reported
    result = swarm_process("run", "claims", "--runs-dir", "runs")
    assert result.returncode == 2, result.stdout + result.stderr
    assert _errors_at(result.stderr, "archive.yaml") == {line: "swarm: error: " + reported}
    assert not (tmp_path / "runs").exists()


def test_run_of_the_order_refuses_a_broken_flows_yaml_with_every_other_error(
    swarm_process: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    """``swarm run`` with no flow named reads flows.yaml first: its error does not hide the
    flow files' (nor does a broken utility flow hide that the order names it)."""
    flows = _desk(tmp_path, fraud_check=FRAUD_CHECK.replace("> 1000", "> "))
    (flows / "flows.yaml").write_text("order: [claims, fraud-check, clams]\n")
    validated = swarm_process("flows", "validate")
    result = swarm_process("run", "--runs-dir", "runs")
    for outcome in (validated, result):
        assert outcome.returncode == 2, outcome.stdout + outcome.stderr
        assert "Traceback" not in outcome.stderr
        # (line 11's detour names a step of fraud-check.yaml, whose own error is reported)
        claims = sorted(_errors_at(outcome.stderr, "claims.yaml"))
        assert claims == sorted(set(TYPOS) - {11}), outcome.stderr
        order = [line for line in outcome.stderr.splitlines() if "flows.yaml:1, " in line]
        assert len(order) == 2, outcome.stderr
        assert "'fraud-check' is a utility flow" in order[0] and "'clams'" in order[1]
        assert len(_errors_at(outcome.stderr, "fraud-check.yaml")) == 1, outcome.stderr
    assert not (tmp_path / "runs").exists()
