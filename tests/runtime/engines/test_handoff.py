"""The handoff block: parsed from the end of a reply, YAML or JSON."""

from __future__ import annotations

import pytest

from swarm_runtime.engines.handoff import HandoffError, format_handoff, parse_handoff


def test_handoff_yaml_json_last_block_and_yes_no_words() -> None:
    text = "thinking\n```handoff\nstatus: DRAFT\n```\nmore\n```handoff\nstatus: VERIFIED\ncan_further_iteration_help: no\n```"
    assert parse_handoff(text) == {"status": "VERIFIED", "can_further_iteration_help": "no"}
    assert parse_handoff('```handoff\n{"decision": "MERGE"}\n```') == {"decision": "MERGE"}
    assert parse_handoff("no block at all") is None
    assert parse_handoff(format_handoff({"a": 1, "b": "x"})) == {"a": 1, "b": "x"}


@pytest.mark.parametrize("body", ["- a\n- b", "status: [unclosed"])
def test_handoff_that_is_not_a_mapping_is_an_error(body: str) -> None:
    with pytest.raises(HandoffError):
        parse_handoff(f"```handoff\n{body}\n```")
