"""Every key a user may write is in the docs, so a key added to a reader cannot go unsaid.

The readers declare the keys they accept (a flow file's levels, a stub scenario, runtime.yaml,
a fault plan); where a page lists them in a table, the table's first column is exactly the
reader's keys; where it describes them in prose, each is named on the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest

from swarm_runtime.config_file import _HISTORY_KEYS
from swarm_runtime.config_file import TOP_KEYS as RUNTIME_KEYS
from swarm_runtime.engines.fault_loopback import REPLY_KINDS
from swarm_runtime.engines.faults import FAULT_FIELDS
from swarm_runtime.engines.scenario import JUDGE_REPLY_KEYS, OUTCOME_KEYS, TOOL_KEYS
from swarm_runtime.flow.detour_reader import DETOUR_KEYS
from swarm_runtime.flow.judge_reader import JUDGE_KEYS
from swarm_runtime.flow.kinds import ROUTING_KEYS
from swarm_runtime.flow.loader import CHARTER_KEYS
from swarm_runtime.flow.loader import TOP_KEYS as FLOW_KEYS
from swarm_runtime.flow.step_reader import BUDGET_KEYS, CANDIDATE_KEYS, NOTE_KEYS, STEP_KEYS
from tests.conftest import REPO

_KEY_CELL = re.compile(r"`([\w.-]+)`")


def _text(page: str) -> str:
    return (REPO / "docs" / page).read_text(encoding="utf-8")


def tables(text: str) -> list[set[str]]:
    """The keys in the first column of each Markdown table of ``text``."""
    found: list[set[str]] = []
    inside = False
    for line in text.splitlines():
        if not line.startswith("|"):
            inside = False
            continue
        if not inside:
            found.append(set())
            inside = True
        first = line.strip("|").split("|")[0].strip()
        match = _KEY_CELL.fullmatch(first)
        if match:
            found[-1].add(match.group(1))
    return found


def named(text: str) -> set[str]:
    """Every name ``text`` sets in code: alone, as ``key: value``, or in ``{a, b: 1}``."""
    found = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        parts = span[1:-1].split(",") if span.startswith("{") and span.endswith("}") else [span]
        found.update(part.split(":")[0].strip() for part in parts)
    return found


def unnamed(keys: Iterable[str], text: str) -> list[str]:
    said = named(text)
    return sorted(key for key in keys if key not in said)


@pytest.mark.parametrize(
    ("page", "keys"),
    [
        ("flows.md", FLOW_KEYS),
        ("flows.md", STEP_KEYS),
        ("flows.md", ROUTING_KEYS),
        ("flows.md", DETOUR_KEYS),
    ],
    ids=["flow", "step", "routing", "detour"],
)
def test_a_table_of_keys_holds_exactly_the_keys_the_reader_accepts(
    page: str, keys: tuple[str, ...]
) -> None:
    found = tables(_text(page))
    assert set(keys) in found, (
        f"docs/{page} has no table of exactly {sorted(keys)}; the closest differs by "
        f"{sorted(min(found, key=lambda t: len(t ^ set(keys))) ^ set(keys))}"
    )


@pytest.mark.parametrize(
    ("page", "keys"),
    [
        ("flows.md", CHARTER_KEYS + NOTE_KEYS + CANDIDATE_KEYS + BUDGET_KEYS),
        ("judges.md", JUDGE_KEYS + JUDGE_REPLY_KEYS),
        ("engines.md", OUTCOME_KEYS + TOOL_KEYS),
        ("engines.md", RUNTIME_KEYS + _HISTORY_KEYS),
        ("faults.md", tuple(FAULT_FIELDS) + tuple(REPLY_KINDS)),
    ],
    ids=["flow-parts", "judges", "stub-scenario", "runtime-yaml", "fault-kinds"],
)
def test_every_key_a_reader_accepts_is_named_on_its_page(page: str, keys: tuple[str, ...]) -> None:
    missing = unnamed(keys, _text(page))
    assert not missing, f"docs/{page} never names {missing}"


def test_a_key_left_out_of_a_table_or_a_page_is_caught() -> None:
    page = (
        "| key | meaning |\n| --- | --- |\n| `a` | one |\n| `b` | two |\n\nSet `c: 1`, `{d, e}`.\n"
    )
    assert {"a", "b"} in tables(page) and {"a", "b", "z"} not in tables(page)
    assert unnamed(("a", "c", "d", "e", "z"), page) == ["z"]
