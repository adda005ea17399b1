"""The step envelopes (docs/contract/steps.md#envelopes): camelCase JSON, and every rule names its
JSON path."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from pydantic import ValidationError

from swarm_runtime.contracts.envelope import (
    StepInput,
    StepOutput,
    check_pair,
    validate_partial,
    validate_step_input,
    validate_step_output,
)

SHA = "a" * 64


def _input() -> dict[str, Any]:
    return {
        "runId": "run-20261123-101010-abcdef",
        "stepId": "triage",
        "tenantId": "acme",
        "repo": "acme/shop",
        "stepType": "triage",
        "riskMode": "comment_only",
        "capabilitiesMode": "comment-only",
        "queuedAt": "2026-11-23T10:10:10.000000Z",
        "attemptNumber": 1,
        "maxAttempts": 3,
    }


def _output() -> dict[str, Any]:
    return {
        "runId": "run-20261123-101010-abcdef",
        "stepId": "triage",
        "resultCode": "ok",
        "summary": "triaged",
        "timing": {
            "startedAt": "2026-11-23T10:10:10.000000Z",
            "completedAt": "2026-11-23T10:10:10.250000Z",
            "durationMs": 250,
            "llmWaitMs": 200,
            "toolCallMs": 0,
            "ioMs": 50,
        },
        "requiresApproval": False,
        "artifacts": [
            {
                "kind": "pointer",
                "name": "report.md",
                "uri": "file:///runs/run-1/triage/artifacts/report.md",
                "contentType": "text/markdown",
                "sizeBytes": 12,
                "sha256": SHA,
            }
        ],
    }


def test_camel_case_json_and_snake_case_attributes_round_trip() -> None:
    step_input = StepInput.model_validate(_input())
    assert step_input.attempt_number == 1 and step_input.capabilities_mode == "comment-only"
    output = StepOutput.model_validate(_output())
    assert output.timing.llm_wait_ms == 200 and output.requires_approval is False
    dumped = output.model_dump(by_alias=True, exclude_none=True)
    assert dumped["timing"]["durationMs"] == 250 and "resultCode" in dumped
    assert StepOutput.model_validate(dumped) == output
    assert check_pair(step_input, output) == []


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    target = doc
    for part in parents:
        target = target[part]
    target[last] = value
    return doc


OUTPUT_RULES = [
    # (what breaks the rule, the JSON path the message must name)
    (lambda d: _set(d, "timing.completedAt", "2026-11-23T10:10:09.000000Z"), "timing.completedAt"),
    (lambda d: _set(d, "timing.durationMs", 999), "timing.durationMs"),
    (lambda d: _set(d, "resultCode", "fatal"), "error"),
    (lambda d: _set(d, "error", {"message": "no"}), "error"),
    (
        lambda d: _set(
            _set(d, "resultCode", "fatal"), "error", {"message": "no", "retryAfterMs": 5}
        ),
        "error.retryAfterMs",
    ),
    (
        lambda d: _set(d, "artifacts", [{**d["artifacts"][0], "sha256": "xyz"}]),
        "artifacts[0].sha256",
    ),
    (
        lambda d: _set(d, "artifacts", [{**d["artifacts"][0], "uri": "http://x"}]),
        "artifacts[0].uri",
    ),
    (
        lambda d: _set(
            d,
            "artifacts",
            [
                {
                    "kind": "inline",
                    "name": "big",
                    "contentType": "text/plain",
                    "content": "x" * 65536,
                }
            ],
        ),
        "artifacts[0].content",
    ),
    (lambda d: _set(d, "surprise", 1), "surprise"),
]


@pytest.mark.parametrize(("breaking", "path"), OUTPUT_RULES, ids=[p for _, p in OUTPUT_RULES])
def test_each_step_output_rule_reports_its_json_path(breaking: Any, path: str) -> None:
    bad = breaking(_output())
    issues = validate_step_output(bad)
    assert path in [issue.path for issue in issues], issues
    with pytest.raises(ValidationError) as raised:
        StepOutput.model_validate(bad)
    # The field each error is about: its location, or (for our own cross-field rules, which
    # have none) the field our message names first. pydantic's rendering is not read.
    top = path.split(".")[0].split("[")[0]
    named = [
        str(error["loc"][0]) if error["loc"] else str(error.get("ctx", {}).get("error", ""))
        for error in raised.value.errors()
    ]
    assert any(re.match(rf"{re.escape(top)}\b", name) for name in named), named


@pytest.mark.parametrize(("attempt", "maximum"), [(0, 3), (4, 3)])
def test_attempt_number_within_one_and_max_attempts(attempt: int, maximum: int) -> None:
    bad = {**_input(), "attemptNumber": attempt, "maxAttempts": maximum}
    (issue,) = validate_step_input(bad)
    assert issue.path == "attemptNumber" and str(maximum) in issue.message
    with pytest.raises(ValidationError, match="attemptNumber"):
        StepInput.model_validate(bad)


def test_output_must_answer_its_input() -> None:
    step_input = StepInput.model_validate(_input())
    other = StepOutput.model_validate({**_output(), "stepId": "plan", "runId": "run-other"})
    assert sorted(issue.path for issue in check_pair(step_input, other)) == ["runId", "stepId"]


def test_the_partial_validator_checks_only_what_is_there() -> None:
    half = {"runId": "run-1", "stepId": "triage", "resultCode": "ok"}
    assert validate_partial("step_output", half) == []
    assert validate_partial("step_input", {"attemptNumber": 1}) == []
    bad = {"resultCode": "maybe", "timing": {"startedAt": "2026-11-23T10:10:10Z"}}
    paths = [issue.path for issue in validate_partial("step_output", bad)]
    assert paths == ["resultCode"]
    late = {"timing": {"startedAt": "2026-11-23T10:10:10Z", "completedAt": "2026-11-23T10:10:09Z"}}
    assert [i.path for i in validate_partial("step_output", late)] == ["timing.completedAt"]
    assert [
        i.path for i in validate_partial("step_input", {"attemptNumber": 5, "maxAttempts": 2})
    ] == ["attemptNumber"]
    assert str(validate_partial("step_input", {"riskMode": "yolo"})[0]).startswith("riskMode: ")
