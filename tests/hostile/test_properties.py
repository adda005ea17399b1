"""Generated flow and scenario documents: loading either succeeds or raises the project's
own error, never anything else."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import SwarmError
from swarm_runtime.flow.loader import check_flow_file

KEYS = st.sampled_from(
    [
        "key",
        "steps",
        "id",
        "agents",
        "next",
        "routing",
        "kind",
        "max_iterations",
        "branches",
        "text",
        "handoff",
        "result_code",
        "tokens",
        "prompt",
        "delay_ms",
        "write_spec",
        "x",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.binary(max_size=8).map(lambda b: b.decode("latin-1")),
)
DOCS = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=5)
    ),
    max_leaves=30,
)
# Raw text too: documents no dumper would write (tabs, unclosed brackets, anchors, tags).
RAW = st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#\n\t ,?%@`")), max_size=80)


def _texts() -> st.SearchStrategy[str]:
    return st.one_of(DOCS.map(lambda d: yaml.safe_dump(d, allow_unicode=True)), RAW)


ANY_SPEED = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
"""What each case does, never how fast: a busy machine runs a case in more than 200 ms."""


@ANY_SPEED
@given(text=_texts())
def test_loading_a_flow_succeeds_or_raises_our_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    flow, errors = check_flow_file(path)  # errors are returned, nothing else escapes
    assert flow is not None or errors
    for error in errors:
        assert isinstance(error, SwarmError) and str(path) in str(error)


@ANY_SPEED
@given(text=_texts())
def test_loading_a_scenario_succeeds_or_raises_our_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        Scenario.from_file(path)
    except SwarmError as exc:
        assert str(path) in str(exc)
