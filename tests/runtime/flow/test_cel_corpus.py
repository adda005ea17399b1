"""Conditions mean the same whichever CEL implementation evaluates them (docs/flows.md#conditions).

A corpus of conditions, each checked as a flow's would be, evaluated by cel-expr-python
and by cel-python over the same values: the same answer from both, and the answer
cel-python gave before cel-expr-python was added (its own comparisons, no functions of
ours), written here by hand. Comparisons across number kinds and across kinds are where
the plain cel-python differed from CEL's rules: those answer as CEL says, on both, and
:data:`CHANGED` lists what each gave before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.flow import cel, conditions
from swarm_runtime.flow.conditions import condition_error

VALUES: dict[str, Any] = {
    "handoff": {
        "status": "APPROVED",
        "n": 3,
        "f": 2.5,
        "b": True,
        "no": False,
        "word": "yes",
        "s": "abc",
        "u": "ünï",
        "l": [1, 2, 3],
        "m": {"k": "v", "n": 1},
        "z": None,
        "e": [],
        "neg": -4,
    },
    "receipt": {"status": "succeeded", "tokens": {"input": 10, "output": 5}, "cost_usd": 0.25},
    "params": {"env": "prod", "count": 2},
    "loop_state": {"iteration": 2, "max": 3, "critic:author": 2},
    "facts": [{"id": "ASM-1", "text": "x"}, {"id": "DEC-1", "text": "y"}],
}

ERR = "error"
"""An evaluation error, or a value that is not true or false: the condition counts as false."""

SAME: dict[str, bool | str] = {
    'handoff.status == "APPROVED"': True,
    'handoff.status != "APPROVED"': False,
    'handoff.status == "REJECTED" || handoff.n > 2': True,
    'has(handoff.status) && handoff.status == "APPROVED"': True,
    "!has(handoff.missing)": True,
    "has(handoff.missing) && handoff.missing == true": False,
    "!has(handoff.missing) || handoff.missing != true": True,
    "handoff.missing == 1": ERR,
    "handoff.n == 3": True,
    "handoff.n != 3": False,
    "handoff.n >= 3 && handoff.n <= 3": True,
    "handoff.f > 2.0": True,
    "handoff.f == 2.5": True,
    "handoff.n + 1 == 4": True,
    "handoff.n * 2 == 6": True,
    "handoff.n / 2 == 1": True,
    "handoff.n % 2 == 1": True,
    "handoff.neg < 0": True,
    "-handoff.neg == 4": True,
    "handoff.b == true": True,
    "handoff.b": True,
    "!handoff.no": True,
    "handoff.word == true": True,
    "handoff.s == 'abc'": True,
    "handoff.s.startsWith('a')": True,
    "handoff.s.endsWith('c')": True,
    "handoff.s.contains('b')": True,
    "handoff.s.matches('^a.c$')": True,
    "size(handoff.s) == 3": True,
    "handoff.s.size() == 3": True,
    "size(handoff.u) == 3": True,
    "handoff.s + 'd' == 'abcd'": True,
    "handoff.s < 'abd'": True,
    "'b' in ['a', 'b']": True,
    "handoff.n in [1, 2, 3]": True,
    "handoff.status in ['APPROVED', 'MERGED']": True,
    "'k' in handoff.m": True,
    "handoff.m.k == 'v'": True,
    "handoff.m['k'] == 'v'": True,
    "handoff.m.n == 1": True,
    "size(handoff.l) == 3": True,
    "handoff.l[0] == 1": True,
    "handoff.l[5] == 1": ERR,
    "handoff.l.exists(x, x > 2)": True,
    "handoff.l.all(x, x > 0)": True,
    "handoff.l.exists_one(x, x == 2)": True,
    "handoff.l.map(x, x * 2)[2] == 6": True,
    "handoff.l.filter(x, x > 1).size() == 2": True,
    "size(handoff.e) == 0": True,
    "handoff.z == null": True,
    "handoff.z != null": False,
    "handoff.n > 2 ? true : false": True,
    "handoff.n > 2 ? 'x' : 'y'": ERR,
    "handoff.status": ERR,
    "handoff.n": ERR,
    "int(handoff.f) == 2": True,
    "double(handoff.n) == 3.0": True,
    "string(handoff.n) == '3'": True,
    "receipt.status == 'succeeded'": True,
    "receipt.tokens.input > 5": True,
    "receipt.cost_usd < 1.0": True,
    "receipt.cost_usd > 0": True,
    "params.env == 'prod'": True,
    "params.count >= 2": True,
    "loop_state.iteration < loop_state.max": True,
    "loop_state.iteration + 1 == loop_state.max": True,
    "loop_state['critic:author'] >= 2": True,
    "size(facts) == 2": True,
    "facts.exists(f, f.id.startsWith('DEC-'))": True,
    "facts.all(f, has(f.text))": True,
    "facts[0].id == 'ASM-1'": True,
    "[1, 2] == [1, 2]": True,
    "{'a': 1} == {'a': 1}": True,
    "handoff.m == {'k': 'v', 'n': 1}": True,
    "handoff.n / 0 == 1": ERR,
    "false && handoff.missing": False,
    "true || handoff.missing": True,
    "handoff.missing || true": True,
}

CHANGED: dict[str, tuple[bool | str, bool | str]] = {
    # condition: (what plain cel-python gave, what both give now: CEL's answer)
    "handoff.n == 3.0": (ERR, True),
    "handoff.n != 3.0": (ERR, False),
    "handoff.n > 2.5": (ERR, True),
    "handoff.n < 2.5": (ERR, False),
    "handoff.n in [1.0, 3.0]": (ERR, True),
    "params.count == 2.0": (ERR, True),
    "1 == 1.0": (ERR, True),
    "[1, 2] == [1.0, 2.0]": (ERR, True),
    "handoff.b == 1": (True, False),
    "handoff.no == 0": (True, False),
    "handoff.b != 1": (False, True),
    "handoff.s != 1": (ERR, True),
    "handoff.s == 1": (ERR, False),
}


def _answer(source: str, implementation: str) -> bool | str:
    chosen = cel.implementation(implementation)
    values = {
        name: chosen.convert(conditions._booleans(v) if name == "handoff" else v)
        for name, v in VALUES.items()
    }
    held, error = chosen.compile(source)(values)
    return ERR if error is not None else held


def _before(source: str) -> bool | str:
    """What cel-python gave on its own: its environment and functions, nothing of ours."""
    import celpy
    from celpy.adapter import json_to_cel
    from celpy.celtypes import BoolType
    from celpy.evaluation import CELEvalError

    environment = celpy.Environment()
    values = {
        name: json_to_cel(conditions._booleans(v) if name == "handoff" else v)
        for name, v in VALUES.items()
    }
    try:
        result = environment.program(environment.compile(source)).evaluate(values)
    except CELEvalError:
        return ERR
    return bool(result) if isinstance(result, BoolType) else ERR


def test_the_corpus_is_large_enough_and_every_condition_in_it_loads() -> None:
    assert len(SAME) + len(CHANGED) >= 60
    for source in [*SAME, *CHANGED]:
        assert condition_error(source) is None, source


@pytest.mark.parametrize("source", list(SAME))
def test_both_implementations_give_the_answer_cel_python_gave_before(source: str) -> None:
    expected = SAME[source]
    assert _before(source) == expected
    assert _answer(source, "cel-python") == expected
    assert _answer(source, "cel-expr-python") == expected


@pytest.mark.parametrize("source", list(CHANGED))
def test_comparisons_across_kinds_answer_as_cel_says_on_both(source: str) -> None:
    before, now = CHANGED[source]
    assert _before(source) == before
    assert _answer(source, "cel-python") == now
    assert _answer(source, "cel-expr-python") == now


def test_a_swarm_cel_that_names_no_implementation_is_refused_before_any_run(
    tmp_path: Path,
) -> None:
    """Not a run whose every condition quietly counts as false, taking other routes."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env["SWARM_CEL"] = "cel-rust"
    done = subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", "run", "--runs-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "SWARM_CEL='cel-rust'" in done.stderr
    assert "cel-expr-python, cel-python" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []
