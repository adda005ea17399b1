"""The write side (TypedDicts) and the read side (pydantic contracts) name the same fields."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from swarm_runtime import documents
from swarm_runtime.contracts.receipt import Receipt, ReceiptRouting, Tokens
from swarm_runtime.contracts.run import FlowTotals, RunSpecDocument, RunSummary
from swarm_runtime.versions import SCHEMA_VERSION


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (documents.ReceiptDoc, Receipt),
        (documents.RunSpecDoc, RunSpecDocument),
        (documents.RunSummaryDoc, RunSummary),
        (documents.FlowTotalsDoc, FlowTotals),
        (documents.TokensDoc, Tokens),
        (documents.RoutingDoc, ReceiptRouting),
    ],
)
def test_every_written_field_is_a_contract_field(written: Any, read: type[BaseModel]) -> None:
    # The receipt contract also knows optional fields no engine writes yet (timing,
    # artifacts, tools_allowed); everything the runtime writes must be known to it.
    missing = set(written.__annotations__) - set(read.model_fields)
    assert not missing, f"{written.__name__} writes fields {read.__name__} rejects: {missing}"
    required = {name for name, info in read.model_fields.items() if info.is_required()}
    assert required <= set(written.__required_keys__), (
        f"{read.__name__} requires fields {written.__name__} may leave out: "
        f"{required - set(written.__required_keys__)}"
    )


def test_one_schema_version_for_both_sides() -> None:
    assert SCHEMA_VERSION == "1"
    assert Receipt.model_fields["schema_version"].default == SCHEMA_VERSION
