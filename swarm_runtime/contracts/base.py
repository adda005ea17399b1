"""The shared base of every contract model, and the timestamp type."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from swarm_runtime.timeutil import parse_ts


def _check_ts(value: str) -> str:
    parse_ts(value)
    return value


Timestamp = Annotated[str, AfterValidator(_check_ts)]
"""RFC 3339 UTC with exactly one trailing ``Z``."""


class Contract(BaseModel):
    """Frozen, and unknown fields are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenContract(BaseModel):
    """Frozen, but extra fields are kept (payloads documented as ``{…, …}``)."""

    model_config = ConfigDict(frozen=True, extra="allow")


SchemaVersion = Literal["1"]
"""The contract version a file says it follows (``schema_version``)."""
