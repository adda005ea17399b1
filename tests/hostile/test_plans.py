"""Hostile execution plans: each refused by ``swarm plan validate`` and ``swarm plan run``
alike, in a few lines, before any step runs or any store is touched."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

import pytest

from tests.conftest import REPO
from tests.hostile.conftest import Outcome

EXAMPLE = (REPO / "examples" / "plans" / "answer-with-memory.json").read_text("utf-8")


def _deep_metadata(text: str) -> str:
    return text.replace('"policyProfile"', '"deep": ' + "[" * 900 + "]" * 900 + ', "policyProfile"')


def _huge(text: str) -> str:
    plan = json.loads(text)
    step = plan["steps"][0]
    plan["steps"] = [{**step, "id": f"s{n}"} for n in range(100_000)]
    return json.dumps(plan)


def _two_steps_keys(text: str) -> str:
    return text.replace('"steps":', '"steps": [], "steps":', 1)


def _top_k(value: str) -> Callable[[str], str]:
    def change(text: str) -> str:
        plan = json.loads(text)
        plan["metadata"]["topK"] = 3
        return json.dumps(plan).replace('"topK": 3', f'"topK": {value}')

    return change


CASES: list[tuple[str, Callable[[str], str], str]] = [
    ("metadata nested 900 deep", _deep_metadata, "nesting deeper than 100 levels"),
    ("100 000 steps", _huge, "has 100000 steps; a v1 plan has at most 8"),
    ("two steps keys", _two_steps_keys, "has the key 'steps' twice in one object"),
    ("NaN", lambda t: t.replace('"topK": 3', '"topK": NaN'), "holds NaN"),
    ("Infinity", lambda t: t.replace('"topK": 3', '"topK": 1e999'), "too big for a float"),
    ("topK of 5000 digits", _top_k("9" * 5000), "integer of more than 4300 digits"),
    ("topK of 10**30", _top_k(str(10**30)), "a whole number from 1 to 10000"),
]


@pytest.mark.parametrize(("change", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hostile_plan_is_refused_in_a_few_lines(
    swarm: Callable[..., Outcome], change: Callable[[str], str], said: str
) -> None:
    project = swarm("--help").cwd
    plan = project / "plan.json"
    plan.write_text(change(EXAMPLE), encoding="utf-8")
    checked = swarm("plan", "validate", "plan.json")
    assert checked.code == 2, checked.err[:2000]
    ran = swarm("plan", "run", "plan.json", "--input", "q", "--runs-dir", "runs")
    # Unreadable: refused at once (2). Readable but breaking a rule: the cycle fails before
    # any step runs (1), its run dir saying why, as docs/plans.md has it.
    assert ran.code in (1, 2)
    for result in (checked, ran):
        assert "Traceback" not in result.err
        assert said in result.err, result.err[:2000]
        assert len(result.err) < 8_000  # summarised, not one line per broken step
    runs = list((project / "runs").glob("run-*/meta.json"))
    assert all(meta.stat().st_size < 16_000 for meta in runs)
    assert (ran.code == 2) == (not runs)


def test_a_store_of_another_program_is_refused_and_left_as_it_is(
    swarm: Callable[..., Outcome],
) -> None:
    project = swarm("--help").cwd
    (project / "plan.json").write_text(EXAMPLE, encoding="utf-8")
    store = project / "their.sqlite3"
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE invoices (total REAL)")
    before = store.read_bytes()
    result = swarm(
        "plan", "run", "plan.json", "--input", "q", "--store", str(store), "--runs-dir", "runs"
    )
    assert result.code in (1, 2)
    result.one_line_error("their.sqlite3 is not a plan store", "another program's")
    assert store.read_bytes() == before
