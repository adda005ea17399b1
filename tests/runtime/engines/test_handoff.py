"""The handoff block: parsed from the end of a reply, YAML or JSON."""

from __future__ import annotations

import pytest

from swarm_runtime.engines.handoff import format_handoff, parse_handoff
from swarm_runtime.errors import HandoffError


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


def test_a_reply_of_unclosed_fences_is_read_in_one_pass() -> None:
    # 1.5 MB of fences that never close: a lazy pattern rescans the rest of the text for
    # each of them (quadratic: minutes); one pass takes milliseconds. The child process
    # and its timeout only guard the suite against the hang this is about.
    import subprocess
    import sys

    code = (
        "from swarm_runtime.engines.handoff import parse_handoff\n"
        "print(parse_handoff('reply\\n' + '```handoff\\nfoo ' * 100_000))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "None"  # no block closes: there is no handoff


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("a\n```handoff\nx: 1\n```\nb\n```handoff \nx: 2\n  ```", ["x: 1", "x: 2"]),
        ("```handoff\n\n```", [""]),
        ("```handoffish\nx: 1\n```", []),
        ("```handoff\nx: 1", []),
        ("```handoff\nx: 1\n```handoff\nx: 2\n```", ["x: 1"]),  # its fence closes the first
    ],
)
def test_handoff_blocks_are_the_fenced_bodies_in_order(text: str, blocks: list[str]) -> None:
    from swarm_runtime.engines.handoff import handoff_blocks

    assert handoff_blocks(text) == blocks
