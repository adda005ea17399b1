"""Every malformed flow file gives a FlowDefinitionError naming file, line and field
(docs/flows.md#loading-and-validation).

Each case is the valid base flow below with one or a few lines replaced (line numbers are kept,
removed lines become comments), so the expected line of every error can be read off BASE.
The same cases are run through ``swarm flows validate``: exit 2, one line per error on stderr,
no traceback, nothing written under the runs dir.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.loader import load_flow
from swarm_runtime.flow.registry import FlowRegistry
from tests.conftest import SHIPPED_FLOWS, CliResult

# The base flow. Line numbers are what the cases below refer to.
BASE_LINES = (
    "key: demo",  # 1
    'title: "Demo flow"',  # 2
    'description: "A small flow for validation tests."',  # 3
    "steps:",  # 4
    "  - id: draft",  # 5
    "    agents: [writer]",  # 6
    '    role: "Write the first draft."',  # 7
    "    teaching_notes:",  # 8
    '      inputs: ["the request"]',  # 9
    '      outputs: ["draft.md"]',  # 10
    '      emphasizes: ["clarity"]',  # 11
    '      constraints: ["no code"]',  # 12
    "  - id: critique",  # 13
    "    agents: [critic]",  # 14
    '    role: "Critique the draft."',  # 15
    "    teaching_notes:",  # 16
    '      inputs: ["draft.md"]',  # 17
    '      outputs: ["critique.md"]',  # 18
    '      emphasizes: ["rigour"]',  # 19
    '      constraints: ["do not rewrite the draft"]',  # 20
    "    routing:",  # 21
    "      kind: microloop",  # 22
    "      loop_target: draft",  # 23
    "      loop_condition_field: status",  # 24
    "      loop_success_values: [VERIFIED]",  # 25
    "      max_iterations: 3",  # 26
    "  - id: publish",  # 27
    "    agents: [publisher]",  # 28
    '    role: "Publish the result."',  # 29
    "    teaching_notes:",  # 30
    '      inputs: ["critique.md"]',  # 31
    '      outputs: ["report.md"]',  # 32
    '      emphasizes: ["brevity"]',  # 33
    '      constraints: ["no new claims"]',  # 34
)
BASE = "\n".join(BASE_LINES) + "\n"
FILE_NAME = "demo.yaml"


def variant(*edits: tuple[int, str, str]) -> str:
    """BASE with line ``n`` (1-based) replaced: each edit is (n, the line there now, new line)."""
    lines = list(BASE_LINES)
    for number, old, new in edits:
        assert lines[number - 1] == old, f"line {number} of BASE is {lines[number - 1]!r}"
        assert "\n" not in new, "an edit must keep the line count"
        lines[number - 1] = new
    return "\n".join(lines) + "\n"


# Lines 22-26 of the step `critique` as a branch instead of a microloop.
BRANCH = (
    (22, "      kind: microloop", "      kind: branch"),
    (23, "      loop_target: draft", "      branch_field: decision"),
    (24, "      loop_condition_field: status", "      branches: {SHIP: publish, REWORK: draft}"),
    (25, "      loop_success_values: [VERIFIED]", "      # (no loop fields in a branch)"),
    (26, "      max_iterations: 3", "      default: publish"),
)


def branch(*edits: tuple[int, str, str]) -> str:
    """The branch variant of BASE with further edits on top of it (edits name BRANCH lines)."""
    replaced = {number: new for number, _, new in BRANCH}
    for number, old, new in edits:
        assert replaced[number] == old, f"line {number} of the branch variant is not {old!r}"
        replaced[number] = new
    return variant(*((n, old, replaced[n]) for n, old, _ in BRANCH))


@dataclass(frozen=True)
class Case:
    id: str
    content: str | bytes
    line: int
    field: str | None
    step: str | None
    message: str


CASES = [
    Case(
        "duplicate-step-id",
        variant((27, "  - id: publish", "  - id: draft")),
        27,
        "id",
        "draft",
        "duplicate step id 'draft'",
    ),
    Case(
        "bad-step-id",
        variant((13, "  - id: critique", "  - id: Bad-Id")),
        13,
        "id",
        None,
        "step id 'Bad-Id' is invalid",
    ),
    Case(
        "bad-agent-key",
        variant((14, "    agents: [critic]", "    agents: [Agent_X]")),
        14,
        "agents",
        "critique",
        "agent key 'Agent_X' is invalid",
    ),
    Case(
        "unknown-routing-kind",
        variant((22, "      kind: microloop", "      kind: fork")),
        22,
        "routing.kind",
        "critique",
        "unknown routing kind 'fork'",
    ),
    Case(
        "next-names-no-step",
        variant((26, "      max_iterations: 3", "      next: nowhere")),
        26,
        "routing.next",
        "critique",
        "'nowhere' names no step",
    ),
    Case(
        "loop-target-names-no-step",
        variant((23, "      loop_target: draft", "      loop_target: nowhere")),
        23,
        "routing.loop_target",
        "critique",
        "'nowhere' names no step",
    ),
    Case(
        "branch-target-names-no-step",
        branch(
            (
                24,
                "      branches: {SHIP: publish, REWORK: draft}",
                "      branches: {SHIP: publish, REWORK: nowhere}",
            )
        ),
        24,
        "routing.branches.REWORK",
        "critique",
        "'nowhere' names no step",
    ),
    Case(
        "branch-default-names-no-step",
        branch((26, "      default: publish", "      default: nowhere")),
        26,
        "routing.default",
        "critique",
        "'nowhere' names no step",
    ),
    Case(
        "microloop-without-loop-target",
        variant((23, "      loop_target: draft", "      # loop_target: removed")),
        22,
        "routing.loop_target",
        "critique",
        "a microloop needs 'loop_target'",
    ),
    Case(
        "microloop-without-loop-condition-field",
        variant((24, "      loop_condition_field: status", "      # removed")),
        22,
        "routing.loop_condition_field",
        "critique",
        "a microloop needs 'loop_condition_field'",
    ),
    Case(
        "microloop-without-loop-success-values",
        variant((25, "      loop_success_values: [VERIFIED]", "      # removed")),
        22,
        "routing.loop_success_values",
        "critique",
        "a microloop needs 'loop_success_values'",
    ),
    Case(
        "branch-without-branches",
        branch((24, "      branches: {SHIP: publish, REWORK: draft}", "      # removed")),
        22,
        "routing.branches",
        "critique",
        "a branch needs 'branches'",
    ),
    Case(
        "max-iterations-zero",
        variant((26, "      max_iterations: 3", "      max_iterations: 0")),
        26,
        "routing.max_iterations",
        "critique",
        "must be >= 1, got 0",
    ),
    Case(
        "unknown-top-level-key",
        variant((2, 'title: "Demo flow"', 'titel: "Demo flow"')),
        2,
        "titel",
        None,
        "did you mean 'title'",
    ),
    Case(
        "unknown-step-key",
        variant((21, "    routing:", "    rotuing:")),
        21,
        "rotuing",
        "critique",
        "did you mean 'routing'",
    ),
    Case(
        "unknown-routing-key-fork",
        variant((26, "      max_iterations: 3", "      fork: true")),
        26,
        "routing.fork",
        "critique",
        "unknown key 'fork' in routing",
    ),
    Case(
        "unknown-teaching-notes-key",
        variant((19, '      emphasizes: ["rigour"]', '      emphasises: ["rigour"]')),
        19,
        "teaching_notes.emphasises",
        "critique",
        "did you mean 'emphasizes'",
    ),
    Case(
        "key-differs-from-file-name",
        variant((1, "key: demo", "key: other")),
        1,
        "key",
        None,
        "differs from the file name 'demo.yaml'",
    ),
    Case(
        "unreachable-step",
        variant((26, "      max_iterations: 3", "      next: critique")),
        27,
        None,
        "publish",
        "step 'publish' is unreachable",
    ),
    Case(
        "not-utf8",
        variant((15, '    role: "Critique the draft."', '    role: "Critique <BAD> the draft."'))
        .encode("utf-8")
        .replace(b"<BAD>", b"\xff\xfe"),
        15,
        None,
        None,
        "not UTF-8",
    ),
    Case("top-level-list", "- draft\n- critique\n", 1, None, None, "must be a YAML mapping"),
    Case("top-level-scalar", "just some text\n", 1, None, None, "must be a YAML mapping"),
    Case(
        "yaml-syntax-error",
        variant((15, '    role: "Critique the draft."', "    role: Critique: the draft.")),
        15,
        None,
        None,
        "invalid YAML",
    ),
    Case(
        "missing-teaching-note-list",
        variant((19, '      emphasizes: ["rigour"]', "      # emphasizes: removed")),
        17,
        "teaching_notes.emphasizes",
        "critique",
        "'emphasizes' is missing",
    ),
    Case(
        "step-without-agents",
        variant((14, "    agents: [critic]", "    agents: []")),
        14,
        "agents",
        "critique",
        "must not be empty",
    ),
]
CASE_IDS = [case.id for case in CASES]


def write_case(directory: Path, content: str | bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / FILE_NAME
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def names_line(text: str, path: Path, line: int) -> bool:
    """Whether an error line starts with ``<path>:<line>`` (then ':' or ', step ...')."""
    return text.startswith((f"{path}:{line}:", f"{path}:{line},"))


def snapshot(root: Path) -> set[str]:
    """Every file and directory under ``root``, relative."""
    return {str(path.relative_to(root)) for path in root.rglob("*")}


def test_there_are_at_least_twelve_cases_with_unique_ids() -> None:
    assert len(CASES) >= 12
    assert len(set(CASE_IDS)) == len(CASE_IDS)


def test_the_base_flow_is_valid(tmp_path: Path) -> None:
    flow = load_flow(write_case(tmp_path, BASE))
    assert [step.id for step in flow.steps] == ["draft", "critique", "publish"]
    assert flow.steps[1].routing.kind == "microloop"
    # The base of the branch cases is valid too, so each branch case breaks one rule only.
    flow = load_flow(write_case(tmp_path / "branch", branch()))
    assert flow.steps[1].routing.branches == (("SHIP", "publish"), ("REWORK", "draft"))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_load_flow_names_file_line_step_and_field(tmp_path: Path, case: Case) -> None:
    path = write_case(tmp_path, case.content)
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    error = info.value
    assert error.file == str(path)
    assert error.line == case.line, str(error)
    assert error.field == case.field, str(error)
    assert error.step_id == case.step, str(error)
    assert case.message in str(error)
    assert names_line(str(error), path, case.line)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_registry_get_raises_the_same_error(tmp_path: Path, case: Case) -> None:
    path = write_case(tmp_path, case.content)
    with pytest.raises(FlowDefinitionError) as info:
        FlowRegistry(tmp_path).get("demo")
    assert (info.value.file, info.value.line, info.value.field) == (
        str(path),
        case.line,
        case.field,
    )


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_cli_validate_exits_2_with_file_and_line_and_writes_nothing(
    tmp_path: Path, cli: Callable[..., CliResult], case: Case
) -> None:
    directory = tmp_path / "case"
    path = write_case(directory, case.content)
    before = snapshot(tmp_path)
    result = cli("flows", "validate", str(directory))
    assert result.code == 2, result
    error_lines = [line for line in result.err.splitlines() if line.startswith(str(path))]
    assert any(names_line(line, path, case.line) for line in error_lines), result.err
    assert f"{len(error_lines)} error(s) in {directory}" in result.err
    assert "Traceback" not in result.out + result.err
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "swarm").exists()


def test_yaml_error_of_an_unclosed_bracket_points_at_the_bracket(tmp_path: Path) -> None:
    # The bracket opened on line 14 is never closed; PyYAML notices it on line 15.
    path = write_case(
        tmp_path, variant((14, "    agents: [critic]", "    agents: [critic, reviewer"))
    )
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    error = info.value
    assert error.file == str(path)
    assert "invalid YAML" in str(error)
    # A user must be told where the unclosed bracket is: as the line, or in the message.
    assert error.line == 14 or "line 14" in str(error), str(error)


def test_empty_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = write_case(tmp_path, "")
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    assert info.value.file == str(path)
    assert "must be a YAML mapping" in str(info.value)


# Three independent errors: two unknown step keys in different steps and a bad agent key.
THREE_ERRORS = """\
key: demo
title: "Demo flow"
description: "Three independent errors."
steps:
  - id: draft
    agents: [writer]
    role: "Write the first draft."
    emphasis: high
    teaching_notes:
      inputs: ["the request"]
      outputs: ["draft.md"]
      emphasizes: ["clarity"]
      constraints: ["no code"]
  - id: critique
    agents: [Critic]
    role: "Critique the draft."
    teaching_notes:
      inputs: ["draft.md"]
      outputs: ["critique.md"]
      emphasizes: ["rigour"]
      constraints: ["do not rewrite the draft"]
    engnie: claude-step
"""


def test_three_independent_errors_give_three_lines(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    directory = tmp_path / "case"
    path = write_case(directory, THREE_ERRORS)
    result = cli("flows", "validate", str(directory))
    assert result.code == 2
    error_lines = [line for line in result.err.splitlines() if line.startswith(str(path))]
    assert len(error_lines) == 3, result.err
    prefixes = (
        f"{path}:8, step 'draft', field 'emphasis':",
        f"{path}:15, step 'critique', field 'agents':",
        f"{path}:22, step 'critique', field 'engnie':",
    )
    for prefix in prefixes:
        assert sum(line.startswith(prefix) for line in error_lines) == 1, (prefix, result.err)
    assert "did you mean 'engine'" in result.err
    assert f"3 error(s) in {directory}" in result.err
    assert "Traceback" not in result.err
    # load_flow raises the first one and says how many more there are.
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    assert info.value.line == 8
    assert any("2 more error(s)" in note for note in info.value.__notes__)


def test_errors_of_several_files_are_all_reported(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    directory = tmp_path / "case"
    first = write_case(directory, variant((22, "      kind: microloop", "      kind: fork")))
    second = directory / "other.yaml"
    second.write_text(
        variant(
            (1, "key: demo", "key: other"),
            (26, "      max_iterations: 3", "      max_iterations: -1"),
        ),
        encoding="utf-8",
    )
    result = cli("flows", "validate", str(directory))
    assert result.code == 2
    assert f"{first}:22," in result.err
    assert f"{second}:26," in result.err
    assert "2 error(s)" in result.err


def test_validate_in_a_real_process_exits_2_without_traceback(
    tmp_path: Path, swarm_process: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    directory = tmp_path / "case"
    path = write_case(directory, variant((23, "      loop_target: draft", "      loop_target: x")))
    before = snapshot(tmp_path)
    proc = swarm_process("flows", "validate", str(directory))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path}:23," in proc.stderr
    assert snapshot(tmp_path) == before


def test_validate_non_utf8_in_a_real_process(
    tmp_path: Path, swarm_process: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    directory = tmp_path / "case"
    path = write_case(directory, b"key: demo\n\xff\xfe\n")
    proc = swarm_process("flows", "validate", str(directory))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path}:2:" in proc.stderr


@pytest.mark.parametrize("named", [False, True], ids=["order", "named-flow"])
def test_run_refuses_a_broken_flow_before_creating_a_run(
    tmp_path: Path, cli: Callable[..., CliResult], named: bool
) -> None:
    directory = tmp_path / "case"
    path = write_case(directory, variant((23, "      loop_target: draft", "      loop_target: x")))
    before = snapshot(tmp_path)
    args = ["run", "--flows-dir", str(directory)] + (["demo"] if named else [])
    result = cli(*args)
    assert result.code == 2, result
    assert f"{path}:23, step 'critique'" in result.err
    assert "routing.loop_target" in result.err
    assert "Traceback" not in result.out + result.err
    assert not (tmp_path / "swarm").exists()
    assert snapshot(tmp_path) == before


def test_run_with_explicit_runs_dir_creates_no_run(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    directory = tmp_path / "case"
    path = write_case(directory, variant((22, "      kind: microloop", "      kind: fork")))
    runs = tmp_path / "runs"
    result = cli("run", "--flows-dir", str(directory), "--runs-dir", str(runs))
    assert result.code == 2, result
    assert f"{path}:22," in result.err
    assert not runs.exists() or list(runs.iterdir()) == []


def test_shipped_flows_validate_with_zero_errors(cli: Callable[..., CliResult]) -> None:
    assert FlowRegistry(SHIPPED_FLOWS).validate_all() == []
    result = cli("flows", "validate", str(SHIPPED_FLOWS))
    assert result.code == 0, result.err
    assert result.err == ""
    assert "flow(s) valid" in result.out


def test_validate_defaults_to_the_flows_dir_of_the_working_directory(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    # `cli` runs from tmp_path, which holds a copy of the shipped flows as ./flows.
    result = cli("flows", "validate")
    assert result.code == 0, result.err
    broken = tmp_path / "flows" / "signal.yaml"
    lines = broken.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "key: signal"
    lines[0] = "key: signall"
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("flows", "validate")
    assert result.code == 2
    assert "flows/signal.yaml:1, field 'key'" in result.err
