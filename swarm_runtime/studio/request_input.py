"""What a request to the studio brings in: its JSON body, read within a size, and query values.

Whatever is wrong with them is a :class:`~swarm_runtime.errors.SwarmUsageError` the app
answers with a 400 (413 for a body past :data:`MAX_BODY_BYTES`, read no further).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from swarm_runtime.errors import SwarmUsageError
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.inputs.limits import InputRefused

MAX_BODY_BYTES = 1 << 20
"""The largest request body read (a run's params are bounded well below it)."""


class BodyTooLarge(SwarmUsageError):
    """A request body past :data:`MAX_BODY_BYTES` (answered 413, read no further)."""


async def json_body(request: Request, *, optional: bool = False) -> Any:
    """The request's JSON body, read up to :data:`MAX_BODY_BYTES`; None when optional and empty."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"the body is {declared} bytes; at most {MAX_BODY_BYTES} are read")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge(f"the body is over {MAX_BODY_BYTES} bytes, the most read")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if optional and not raw:
        return None
    if "application/json" not in request.headers.get("content-type", ""):
        raise SwarmUsageError("send the body as JSON (Content-Type: application/json)")
    try:
        return load_json(raw)
    except InputRefused as exc:
        raise SwarmUsageError(f"the body is refused: {exc}") from None
    except ValueError:
        raise SwarmUsageError("the body is not valid JSON") from None


def whole_number(value: str | None, default: int) -> int:
    """A query value as a whole number; ``default`` when it is absent or empty."""
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise SwarmUsageError(f"{value!r} is not a whole number") from None
