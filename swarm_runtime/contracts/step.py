"""JSON Schema of the engine-facing types StepContext and StepResult (SPEC §3.4).

They are :class:`~swarm_runtime.record.Record` classes in :mod:`swarm_runtime.engines.base`
so the run path does not pay for pydantic; here pydantic models are derived from their
fields (unknown fields are errors) to export the schema and validate.
"""

from __future__ import annotations

import sys
import typing
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from swarm_runtime.engines.base import HistoryItem, Prompt, StepContext, StepResult
from swarm_runtime.record import MISSING, Record, record_fields


@cache
def model_of(cls: type[Record], nested: tuple[type[Record], ...] = ()) -> type[BaseModel]:
    """A frozen pydantic model with the fields, types and defaults of a record class.

    Records named in ``nested`` that appear in its field types become models too.
    """
    namespace: dict[str, Any] = {**vars(typing), "Path": Path}
    namespace.update(vars(sys.modules[cls.__module__]))
    for inner in nested:
        namespace[inner.__name__] = model_of(inner)
    hints = typing.get_type_hints(cls, globalns=namespace)
    fields: dict[str, Any] = {}
    for name, (default, factory) in record_fields(cls).items():
        if factory is not None:
            fields[name] = (hints[name], factory())
        elif default is MISSING:
            fields[name] = (hints[name], ...)
        else:
            fields[name] = (hints[name], default)
    return create_model(
        cls.__name__,
        __config__=ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True),
        __doc__=cls.__doc__,
        **fields,
    )


def step_result_schema() -> dict[str, Any]:
    """JSON Schema of StepResult."""
    return model_of(StepResult).model_json_schema()


def step_context_schema() -> dict[str, Any]:
    """JSON Schema of StepContext (paths as strings)."""
    return model_of(StepContext, (HistoryItem, Prompt)).model_json_schema()
