"""A request's digest is sha256 over stdlib ``json.dumps(sort_keys=True)`` bytes, however
it is computed: receipts' ``request_sha256`` and the goldens holding it never change."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm_runtime.engines.base import Prompt, StepContext, request_digest
from swarm_runtime.engines.stub import StubEngine

ANY_SPEED = settings(deadline=None, max_examples=400)

TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
"""Any text UTF-8 can hold: non-ASCII, control characters, quotes, U+2028, emoji."""


def _json(floats: bool) -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | TEXT
    if floats:
        scalars |= st.floats() | st.integers(-(2**70), 2**70)
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(TEXT, inner, max_size=4)
            | (st.dictionaries(st.integers(), inner, max_size=3) if floats else st.nothing())
            | (st.tuples(inner, inner) if floats else st.nothing())
        ),
        max_leaves=24,
    )


def _stdlib(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@ANY_SPEED
@given(_json(floats=False))
def test_msgspecs_sorted_encoder_writes_the_stdlib_bytes_for_plain_json(body: Any) -> None:
    assert msgspec.json.Encoder(order="sorted").encode(body) == _stdlib(body)


@ANY_SPEED
@given(_json(floats=True))
def test_the_digest_is_sha256_of_the_stdlib_bytes_for_any_json_value(body: Any) -> None:
    assert request_digest(body) == hashlib.sha256(_stdlib(body)).hexdigest()


def test_floats_and_int_keys_are_digested_as_the_stdlib_writes_them() -> None:
    # msgspec writes 1e16 and 1e-07 as 1e16 and 1e-7, and sorts int keys as ints.
    for body in (
        {"temperature": 1e16, "top_p": 1e-07},
        {"n": [float("nan"), float("inf")]},
        {"by_id": {10: "a", 9: "b"}},
        {"big": 2**64},
    ):
        assert request_digest(body) == hashlib.sha256(_stdlib(body)).hexdigest(), body


@ANY_SPEED
@given(st.lists(st.tuples(TEXT, TEXT, st.lists(TEXT, max_size=2), st.booleans()), max_size=6))
def test_a_steps_digest_begun_once_is_the_digest_of_its_whole_request(
    calls: list[tuple[str, str, list[str], bool]],
) -> None:
    # The part of the request before the user prompt is hashed once per step and kept;
    # every call's digest is still the digest of the whole body.
    engine = StubEngine()
    for system, user, tools, navigator in calls:
        ctx = StepContext(
            repo_root=Path("."),
            run_id="run-1",
            flow_key="f",
            step_id="s",
            step_index=1,
            total_steps=1,
            spec={},
            flow_title="F",
            step_role="r",
            step_agents=("a",),
            history=(),
            run_base=Path("."),
            prompt=Prompt(system, user),
            tools=tuple(tools),
            call="navigator" if navigator else "step",
        )
        body = engine.request_body(ctx)
        assert engine.request_sha256(ctx) == hashlib.sha256(_stdlib(body)).hexdigest()
