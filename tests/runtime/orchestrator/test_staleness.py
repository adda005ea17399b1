"""The comparison behind ``swarm cassettes status`` and a replay miss's changed parts."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.engines.base import request_digest
from swarm_runtime.engines.request_parts import Expected, changed_line, changed_parts
from swarm_runtime.errors import SwarmUsageError
from swarm_runtime.flow.cache import FlowCache
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.staleness import (
    REQUEST_HEADING,
    base_test,
    compare_body,
    first_difference,
    stale_calls,
)
from tests.conftest import REPO

EXPECTED = Expected(model="claude-sonnet-4-6", params={"max_tokens": 4096, "stream": True})
BY_ENGINE = {"claude-step": EXPECTED}
SYSTEM = "You are the writer.\n\n## Step 1 of 2: draft\n- Be brief"
USER = f"{REQUEST_HEADING}{{}}\n\n## History (newest first)\n(no earlier steps)"


def _body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "stream": True,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": USER}],
    }
    body.update(changes)
    return {key: value for key, value in body.items() if value is not None}


def _parts(body: dict[str, Any]) -> list[str]:
    return [part for part, _ in compare_body(body, EXPECTED, SYSTEM, REQUEST_HEADING)]


def test_a_body_the_flows_would_send_again_has_no_changed_part() -> None:
    assert _parts(_body()) == []


@pytest.mark.parametrize(
    ("changes", "part"),
    [
        ({"system": SYSTEM.replace("brief", "thorough")}, "prompt"),
        ({"messages": [{"role": "user", "content": "no headings"}]}, "prompt"),
        ({"model": "claude-opus-4-1"}, "model"),
        ({"tools": [{"name": "Bash"}]}, "tools"),
        ({"max_tokens": 1024}, "parameters"),
        ({"stream": None}, "parameters"),
        ({"temperature": 0.2}, "parameters"),
    ],
)
def test_each_change_is_named_by_its_part(changes: dict[str, Any], part: str) -> None:
    assert _parts(_body(**changes)) == [part]


def test_the_history_in_the_user_prompt_is_never_a_change() -> None:
    later = USER.replace("(no earlier steps)", "### flow/read (reader, execution 1)\nDone.")
    params = later.replace("{}", '{\n  "ticket": "refund"\n}')
    assert _parts(_body(messages=[{"role": "user", "content": params}])) == []


def test_a_prompt_change_says_the_line_and_both_sides() -> None:
    detail = first_difference(SYSTEM, SYSTEM.replace("- Be brief", "- Be thorough"))
    assert detail == "line 4: recorded '- Be brief', now '- Be thorough'"
    assert first_difference(SYSTEM, SYSTEM + "\n- More").startswith("line 5: recorded nothing")


def test_a_replay_miss_names_the_parts_in_order() -> None:
    sent = _body(model="claude-opus-4-1", system="other", max_tokens=1)
    assert changed_parts(_body(), sent) == ("prompt", "model", "parameters")
    assert changed_line(changed_parts(_body(), sent)) == "changed: prompt, model, parameters"
    assert changed_parts(_body(), _body()) == ()


def test_later_runs_of_a_test_belong_to_the_test() -> None:
    assert base_test("tests/test_x/test_y@2") == "tests/test_x/test_y"


def test_the_request_digest_ignores_key_order() -> None:
    assert request_digest({"a": 1, "b": [1, 2]}) == request_digest({"b": [1, 2], "a": 1})
    assert request_digest({"a": 1}) != request_digest({"a": 2})


def _one_test(tmp_path: Path) -> tuple[Path, FlowRegistry]:
    """One recorded test of the shipped gate flow (a navigator call among its cassettes)."""
    source = REPO / "golden" / "cassettes" / "tests" / "golden" / "test_goldens"
    root = tmp_path / "cassettes"
    shutil.copytree(source / "test_sdlc_golden" / "gate", root / "t" / "test_x" / "gate")
    flows = tmp_path / "flows"
    shutil.copytree(REPO / "flows", flows)
    return root, FlowRegistry(flows, cache=FlowCache(None))


def test_recorded_steps_and_navigator_calls_match_the_flows_they_came_from(tmp_path: Path) -> None:
    root, flows = _one_test(tmp_path)
    assert any("navigator" in p.name for p in root.rglob("*.yaml"))
    assert stale_calls(root, flows, BY_ENGINE) == []


def test_a_gone_flow_and_a_renamed_agent_are_listed(tmp_path: Path) -> None:
    root, flows = _one_test(tmp_path)
    folder = root / "t" / "test_x" / "gate"
    (folder / "check_policy-policy-analyst-0.yaml").rename(folder / "check_policy-old-agent-0.yaml")
    shutil.copytree(folder, root / "t" / "test_x" / "retired")
    found = stale_calls(root, flows, BY_ENGINE)
    renamed = [c for c in found if c.flow_key == "gate"]
    assert [(c.flow_key, c.parts, c.details) for c in renamed] == [
        ("gate", ("prompt",), ("agent: recorded 'old-agent', now 'policy-analyst'",))
    ]
    gone = [c for c in found if c.flow_key == "retired"]
    assert gone and all(c.details == ("flow 'retired' is gone",) for c in gone)
    assert {c.test for c in found} == {"t/test_x"}


def test_a_missing_dir_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SwarmUsageError, match="not a directory"):
        stale_calls(tmp_path / "none", FlowRegistry(REPO / "flows"), BY_ENGINE)


def test_a_step_whose_agent_is_called_judge_something_is_compared_as_the_step(
    tmp_path: Path,
) -> None:
    """Only a name that is none of the step's agents is a judge's call (docs/judges.md#judges)."""
    root, _ = _one_test(tmp_path)
    flow = tmp_path / "flows" / "gate.yaml"
    flow.write_text(flow.read_text().replace("policy-analyst", "judge-panel"))
    agents = tmp_path / "flows" / "agents"
    (agents / "policy-analyst.md").rename(agents / "judge-panel.md")
    folder = root / "t" / "test_x" / "gate"
    (folder / "check_policy-policy-analyst-0.yaml").rename(
        folder / "check_policy-judge-panel-0.yaml"
    )
    found = stale_calls(root, FlowRegistry(tmp_path / "flows", cache=FlowCache(None)), BY_ENGINE)
    details = [d for call in found for d in call.details]
    assert details, "the agent's name is in its step's prompt: the call is stale"
    assert not any("You are a judge" in detail for detail in details), details
