"""References and templates in payloads, as the built-in handlers read them.

The core never wires one step's result into another's payload (docs/plans.md). A plan says
where a value comes from, and the handler that reads the payload looks it up:

- ``{"$ref": "input"}``: the cycle's input; ``{"$ref": "session"}``: its session ref;
- ``{"$ref": "metadata.topK"}``: a metadata value;
- ``{"$ref": "steps.<id>.<field>[.<field>…]"}``: a result of an earlier step.

A template (``PromptAssemble``) fills ``{{name}}`` from its ``vars``. Resolving builds new
values; the payload it reads is never changed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from swarm_runtime.plan.handlers import HandlerError, StepCall

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def resolve(value: Any, call: StepCall, *, where: str = "payload") -> Any:
    """``value`` with every ``{"$ref": …}`` in it replaced by what it names (a new value)."""
    if isinstance(value, Mapping):
        if set(value) == {"$ref"}:
            return _lookup(value["$ref"], call, where)
        return {key: resolve(item, call, where=f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, call, where=f"{where}[{i}]") for i, item in enumerate(value)]
    return value


def _lookup(ref: Any, call: StepCall, where: str) -> Any:
    if not isinstance(ref, str) or not ref:
        raise HandlerError(f"{where}: $ref must be text, got {ref!r}")
    head, *rest = ref.split(".")
    if head == "input" and not rest:
        return call.input
    if head == "session" and not rest:
        return call.session_ref
    if head == "metadata" and rest:
        return _walk(call.metadata, rest, ref, where)
    if head == "steps" and len(rest) >= 2:
        step_id = rest[0]
        if step_id not in call.results:
            done = ", ".join(call.results) or "none yet"
            raise HandlerError(
                f"{where}: $ref {ref!r} names step '{step_id}', which has no result before "
                f"this step (results so far: {done})"
            )
        return _copy(_walk(call.results[step_id], rest[1:], ref, where))
    raise HandlerError(
        f"{where}: $ref {ref!r} is not understood; use input, session, metadata.<field> "
        "or steps.<id>.<field>"
    )


def _walk(value: Any, path: list[str], ref: str, where: str) -> Any:
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            raise HandlerError(f"{where}: $ref {ref!r}: there is no '{part}' there")
        value = value[part]
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(item) for item in value]
    return value


def render_value(value: Any) -> str:
    """A value as it goes into a prompt: text as is, a list one ``- item`` per line."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"- {_one_line(item)}" for item in value) if value else "(none)"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _one_line(item: Any) -> str:
    if isinstance(item, Mapping):
        for key in ("summary", "excerpt", "text"):
            if isinstance(item.get(key), str):
                source = item.get("source") or item.get("id")
                prefix = f"[{source}] " if isinstance(source, str) else ""
                return prefix + " ".join(str(item[key]).split())
    return render_value(item).replace("\n", " ")


def fill_template(template: str, variables: Mapping[str, Any]) -> str:
    """``template`` with each ``{{name}}`` replaced by its variable, rendered."""
    missing = sorted(
        {m.group(1) for m in _PLACEHOLDER.finditer(template)} - set(variables), key=str
    )
    if missing:
        raise HandlerError(
            f"template uses {', '.join('{{' + n + '}}' for n in missing)} but vars has no "
            f"such key (vars: {', '.join(sorted(variables)) or 'none'})"
        )
    return _PLACEHOLDER.sub(lambda m: render_value(variables[m.group(1)]), template)


_KINDS: dict[type, str] = {
    str: "text",
    int: "a whole number",
    list: "a list",
    dict: "an object",
}


def payload_fields(
    call: StepCall, required: Mapping[str, type], optional: Mapping[str, type] | None = None
) -> dict[str, Any]:
    """The payload resolved and checked: an object with these fields of these types."""
    optional = optional or {}
    payload = resolve(call.payload, call)
    if not isinstance(payload, dict):
        raise HandlerError(f"the payload of a {call.step_type} step must be an object")
    allowed = {**required, **optional}
    for key in payload:
        if key not in allowed:
            raise HandlerError(
                f"payload.{key} is not a {call.step_type} field (allowed: {', '.join(allowed)})"
            )
    for key, kind in allowed.items():
        if key not in payload:
            if key in required:
                raise HandlerError(f"payload.{key} is missing ({_KINDS[kind]})")
            continue
        value = payload[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise HandlerError(f"payload.{key} must be {_KINDS[kind]}, got {value!r:.80}")
    return payload
