"""swarm_expect: checks on what a step said, as a user's tests write them
(docs/judges.md#expectations).

A user project (its own flow, a Python tool named in runtime.yaml, a stub scenario that
scripts what each execution says) runs its tests through pytester: every expectation
passes where it holds, and where it does not, fails with a message that names the run dir,
flow, step and execution, the expectation, and the text it looked at.
"""

from __future__ import annotations

import re

import pytest

FLOW = """\
key: support
title: "Answer a support ticket"
description: "Drafts a reply, then checks it until it is approved."
steps:
  - id: draft
    agents: [writer]
    role: "Draft the reply."
    tools: [lookup_order]
    teaching_notes:
      inputs: ["The ticket"]
      outputs: ["The reply"]
      emphasizes: ["Look the order up first"]
      constraints: ["Be brief"]
  - id: check
    agents: [checker]
    role: "Check the reply."
    teaching_notes:
      inputs: ["The reply"]
      outputs: ["A verdict"]
      emphasizes: ["Be strict"]
      constraints: ["No tools"]
    routing:
      kind: microloop
      loop_target: draft
      loop_condition_field: status
      loop_success_values: [APPROVED]
      max_iterations: 3
"""

TOOLS = '''
def lookup_order(order_id: str) -> dict:
    """Look an order up by its id."""
    return {"order": order_id, "status": "shipped"}
'''

CONFTEST = """
import pytest

LONG = "word " * 2000

SCENARIO = {
    "draft": [
        {
            "text": "Your refund for order S-1 is on its way." + LONG + "THE END",
            "tools": [{"tool": "lookup_order", "input": {"order_id": "S-1", "region": "eu"},
                       "output": {"status": "shipped"}}],
        },
        {"text": 'Second draft.\\n```json\\n{"refund": 12.5, "currency": "EUR"}\\n```'},
    ],
    "check": [
        {"handoff": {"status": "REJECTED", "reason": "too long"}},
        {"handoff": {"status": "APPROVED"}, "tokens": {"prompt": 100, "completion": 20}},
    ],
}


@pytest.fixture
def record(flow_runner, stub_scenario):
    stub_scenario(SCENARIO)
    return flow_runner("support")
"""

PASSING = """
import re

from pytest_swarm import swarm_expect as expect_function


def test_what_the_steps_said(record, swarm_expect):
    assert record.status == "succeeded"
    (
        swarm_expect(record)
        .step("check").handoff(status="APPROVED")
        .step("support/check", execution=1).handoff(status="REJECTED", reason="too long")
        .step("draft", execution=1).contains("refund").not_contains("apology")
        .matches(r"order S-\\d+").matches(re.compile("the end", re.IGNORECASE))
        .tool_called("lookup_order", order_id="S-1").tool_called("lookup_order")
        .step("draft").json_schema(
            {"type": "object", "required": ["refund"],
             "properties": {"refund": {"type": "number"}, "currency": {"enum": ["EUR"]}}},
            of="block",
        )
        .not_contains("refund for order")
        .step("check", flow="support").json_schema(
            {"type": "object", "properties": {"status": {"enum": ["APPROVED", "REJECTED"]}}}
        )
        .cost_below(0.01).tokens_below(121)
    )


def test_the_function_is_the_fixture(record, swarm_expect):
    assert expect_function is swarm_expect
    expect_function(record).step("draft", execution=-2).contains("THE END")
"""

FAILING = """
def test_contains(record, swarm_expect):
    swarm_expect(record).step("draft", execution=1).contains("apology")

def test_not_contains(record, swarm_expect):
    swarm_expect(record).step("draft").not_contains("Second")

def test_matches(record, swarm_expect):
    swarm_expect(record).step("draft").matches(r"refund of \\d+")

def test_handoff_value(record, swarm_expect):
    swarm_expect(record).step("check", execution=1).handoff(status="APPROVED")

def test_handoff_missing_field(record, swarm_expect):
    swarm_expect(record).step("check").handoff(reason="fine")

def test_no_handoff(record, swarm_expect):
    swarm_expect(record).step("draft").handoff(status="x")

def test_json_schema_handoff(record, swarm_expect):
    swarm_expect(record).step("check", execution=1).json_schema(
        {"type": "object", "properties": {"status": {"enum": ["APPROVED"]}}})

def test_json_schema_no_block(record, swarm_expect):
    swarm_expect(record).step("draft", execution=1).json_schema({"type": "object"}, of="block")

def test_json_schema_block(record, swarm_expect):
    swarm_expect(record).step("draft").json_schema(
        {"type": "object", "properties": {"refund": {"type": "integer"}}}, of="block")

def test_tool_called_input(record, swarm_expect):
    swarm_expect(record).step("draft", execution=1).tool_called("lookup_order", order_id="S-2")

def test_tool_called_none(record, swarm_expect):
    swarm_expect(record).step("draft").tool_called("lookup_order")

def test_cost_below(record, swarm_expect):
    swarm_expect(record).step("check").cost_below(0)

def test_tokens_below(record, swarm_expect):
    swarm_expect(record).step("check").tokens_below(120)

def test_step_that_did_not_run(record, swarm_expect):
    swarm_expect(record).step("publish")

def test_execution_that_does_not_exist(record, swarm_expect):
    swarm_expect(record).step("draft", execution=3)
"""

USAGE = """
import pytest

def test_execution_zero(record, swarm_expect):
    with pytest.raises(ValueError, match="counted from 1"):
        swarm_expect(record).step("draft", execution=0)

def test_bad_regex(record, swarm_expect):
    with pytest.raises(ValueError, match=r"matches\\('\\(unclosed'\\): not a regular expression"):
        swarm_expect(record).step("draft").matches("(unclosed")

def test_bad_schema(record, swarm_expect):
    with pytest.raises(ValueError, match="the schema is not valid at"):
        swarm_expect(record).step("check").json_schema({"type": "objekt"})

def test_bad_source(record, swarm_expect):
    with pytest.raises(ValueError, match="allowed: handoff, block"):
        swarm_expect(record).step("check").json_schema({}, of="reply")
"""


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    flows = swarm_pytester.path / "flows"
    for path in flows.iterdir():
        if path.is_file():
            path.unlink()
    (flows / "support.yaml").write_text(FLOW)
    (flows / "flows.yaml").write_text("order: [support]\n")
    swarm_pytester.makepyfile(project_tools=TOOLS)
    config = swarm_pytester.path / "swarm" / "config"
    config.mkdir(parents=True)
    (config / "runtime.yaml").write_text("tools: [project_tools:lookup_order]\n")
    swarm_pytester.makeconftest(CONFTEST)
    return swarm_pytester


def test_every_expectation_passes_where_it_holds(project: pytest.Pytester) -> None:
    project.makepyfile(test_passing=PASSING)
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def _failures(result: pytest.RunResult) -> dict[str, str]:
    """Each failed test's section of pytest's report, by test name."""
    text = result.stdout.str()
    sections = re.split(r"\n_{3,} (test_\w+) _{3,}\n", text)
    return {sections[i]: sections[i + 1] for i in range(1, len(sections) - 1, 2)}


def test_each_expectation_fails_with_what_a_user_needs(project: pytest.Pytester) -> None:
    project.makepyfile(test_failing=FAILING)
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=15)
    failures = _failures(result)
    contains = failures["test_contains"]
    assert "expected support/draft (execution 1 of 2) in run run-" in contains
    assert "to say 'apology'" in contains
    assert "run dir: " in contains and "flow: support  step: draft  execution: 1 of 2" in contains
    assert "the reply in support/llm/draft-writer-" in contains and "~1.jsonl" in contains
    assert "Your refund for order S-1" in contains  # the start of the text it looked at
    assert "THE END" in contains  # and its end
    cut = re.search(r"\[\.\.\. (\d+) characters cut \.\.\.\]", contains)
    assert cut is not None and int(cut.group(1)) > 8000, contains

    assert "not to say 'Second' (it does, at character 0)" in failures["test_not_contains"]
    assert "execution 2 of 2" in failures["test_not_contains"]
    assert "to match 'refund of \\\\d+'" in failures["test_matches"]

    value = failures["test_handoff_value"]
    assert "to hand on status='APPROVED'" in value
    assert "status: expected 'APPROVED', got 'REJECTED'" in value
    assert '"reason": "too long"' in value  # the handoff it looked at
    assert "reason: expected 'fine', missing" in failures["test_handoff_missing_field"]
    assert "its receipt has no handoff" in failures["test_no_handoff"]

    schema = failures["test_json_schema_handoff"]
    assert "to give a handoff valid against the schema (1 problem(s))" in schema
    assert "$.status: " in schema
    assert "to give a fenced ```json block" in failures["test_json_schema_no_block"]
    assert "$.refund: " in failures["test_json_schema_block"]
    assert "its last ```json block" in failures["test_json_schema_block"]

    tool = failures["test_tool_called_input"]
    assert "to call lookup_order(order_id='S-2')" in tool
    assert "the tool calls it made (1):" in tool
    assert '"order_id": "S-1"' in tool
    assert "the tool calls it made (0):" in failures["test_tool_called_none"]
    assert "(none)" in failures["test_tool_called_none"]

    assert "to cost below $0" in failures["test_cost_below"]
    assert "its receipt's cost: $0.000000" in failures["test_cost_below"]
    tokens = failures["test_tokens_below"]
    assert "to use fewer than 120 tokens" in tokens
    assert "its receipt's tokens: 120 (prompt 100, completion 20)" in tokens

    missing = failures["test_step_that_did_not_run"]
    assert "step 'publish' did not run in run run-" in missing
    assert "steps that ran: support/check, support/draft" in missing or (
        "steps that ran: support/draft, support/check" in missing
    )
    assert "ran 2 time(s)" in failures["test_execution_that_does_not_exist"]
    assert "there is no execution 3" in failures["test_execution_that_does_not_exist"]
    for name, section in failures.items():  # an assertion, not a crash inside the plugin
        assert "AssertionError" in section or "E   " in section, (name, section)
        assert "Traceback" not in section, (name, section)


def test_a_mistake_in_using_it_is_a_clear_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_usage=USAGE)
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=4)
