"""The rules a v1 plan must meet before any of its steps runs (docs/plans.md).

:func:`plan_violations` reads a plan document (as parsed from JSON) and names every rule
it breaks with the step concerned; :func:`checked_plan` turns a clean one into an
:class:`~swarm_runtime.contracts.plan.ExecutionPlan`. Nothing here runs a handler.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import PlanError
from swarm_runtime.plan.kinds import CANONICAL_ORDER, KINDS
from swarm_runtime.record import Record

if TYPE_CHECKING:
    from swarm_runtime.contracts.plan import ExecutionPlan

RULES: dict[str, str] = {
    "document": "a plan is a JSON object with step_contract_version, extensions, metadata "
    "and steps, and nothing else",
    "version": 'step_contract_version is "1"',
    "extensions": "extensions is an empty list in v1",
    "metadata": "metadata is {topK?, timeouts?: {llmMs?, ioMs?}, budgets?: {promptTokens?}, "
    "policyProfile, mode}; numbers are whole and >= 1",
    "step": "each step is an object {id, type, payload} with nothing else",
    "type": f"a step's type is one of {', '.join(CANONICAL_ORDER)}",
    "ids": "step ids are unique and match ^[a-z][a-z0-9_]*$",
    "order": "step types follow the order " + " → ".join(CANONICAL_ORDER) + ", each at most once",
    "mandatory": "the plan has a "
    + ", ".join(name for name, kind in KINDS.items() if kind.mandatory)
    + " step",
    "topK": "metadata.topK is set when a RetrieveMemory step is present",
}
"""Every rule by name, with what it allows."""

_ID_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_TOP_KEYS = ("step_contract_version", "extensions", "metadata", "steps")
_METADATA_KEYS = {"topK", "timeouts", "budgets", "policyProfile", "mode"}
_NUMBERS = {"timeouts": ("llmMs", "ioMs"), "budgets": ("promptTokens",)}
LIMITS = {
    "topK": 10_000,
    "llmMs": 86_400_000,
    "ioMs": 86_400_000,
    "promptTokens": 100_000_000,
}
"""The largest value of each metadata number: a day for a timeout; past these a number is a
mistake (or an attack), and the run would fail on it long after validate said yes."""


class PlanViolation(Record):
    """One broken rule: which, where (a JSON path, the step), and why."""

    rule: str
    path: str
    message: str
    step_id: str | None = None

    def __str__(self) -> str:
        step = f" (step '{self.step_id}')" if self.step_id else ""
        return f"{self.path}{step}: {self.message} [rule '{self.rule}': {RULES[self.rule]}]"


def read_plan_file(path: Path) -> Any:
    """The JSON document of a plan file; a PlanError naming the file and line if unreadable."""
    from swarm_runtime.inputs.files import read_text_limited
    from swarm_runtime.inputs.json_input import load_json
    from swarm_runtime.inputs.limits import InputRefused

    try:
        text = read_text_limited(path)
        return load_json(text)
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file", rule="document") from None
    except json.JSONDecodeError as exc:
        raise PlanError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}", rule="document"
        ) from None
    except InputRefused as exc:
        raise PlanError(exc.located(path), rule="document") from None
    except OSError as exc:
        raise PlanError(f"{path}: cannot read: {exc.strerror or exc}", rule="document") from None


def plan_violations(plan: Any) -> list[PlanViolation]:
    """Every rule ``plan`` (a parsed plan document) breaks, in document order."""
    if not isinstance(plan, Mapping):
        return [PlanViolation("document", "(plan)", f"got {type(plan).__name__}")]
    found: list[PlanViolation] = []
    for key in _TOP_KEYS:
        if key not in plan:
            found.append(PlanViolation("document", key, "is missing"))
    for key in plan:
        if key not in _TOP_KEYS:
            found.append(PlanViolation("document", str(key), "is not a plan field"))
    version = plan.get("step_contract_version", "1")
    if version != "1":
        found.append(PlanViolation("version", "step_contract_version", f"is {version!r}"))
    extensions = plan.get("extensions", [])
    if extensions != []:
        found.append(PlanViolation("extensions", "extensions", f"is {_short(extensions)}"))
    metadata = plan.get("metadata", {})
    found.extend(_metadata(metadata))
    steps = plan.get("steps", [])
    if not isinstance(steps, list) or not steps:
        found.append(PlanViolation("document", "steps", "must be a non-empty list of steps"))
        return found
    if len(steps) > MAX_STEPS:  # not read step by step: one line says it all
        found.append(
            PlanViolation(
                "order",
                "steps",
                f"has {len(steps)} steps; a v1 plan has at most {len(CANONICAL_ORDER)} (one "
                "of each type, in order)",
            )
        )
        return found
    typed = _steps(steps, found)
    found.extend(_order(typed))
    present = {step_type for _, _, step_type in typed}
    for name, kind in KINDS.items():
        if kind.mandatory and name not in present:
            found.append(PlanViolation("mandatory", "steps", f"has no {name} step"))
    top_k = metadata.get("topK") if isinstance(metadata, Mapping) else None
    if "RetrieveMemory" in present and top_k is None:
        step_id = next(i for _, i, t in typed if t == "RetrieveMemory")
        found.append(PlanViolation("topK", "metadata.topK", "is not set", step_id=step_id or None))
    return found


def _metadata(metadata: Any) -> list[PlanViolation]:
    if not isinstance(metadata, Mapping):
        return [PlanViolation("metadata", "metadata", f"must be an object, got {_short(metadata)}")]
    found: list[PlanViolation] = []
    for key in metadata:
        if key not in _METADATA_KEYS:
            found.append(PlanViolation("metadata", f"metadata.{key}", "is not a metadata field"))
    for key in ("policyProfile", "mode"):
        if not isinstance(metadata.get(key), str):
            what = "is missing" if key not in metadata else f"must be text, got {metadata[key]!r}"
            found.append(PlanViolation("metadata", f"metadata.{key}", what))
    top_k = metadata.get("topK")
    if top_k is not None and not _whole(top_k, LIMITS["topK"]):
        found.append(PlanViolation("metadata", "metadata.topK", _not_whole(top_k, "topK")))
    for group, names in _NUMBERS.items():
        value = metadata.get(group)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            found.append(PlanViolation("metadata", f"metadata.{group}", "must be an object"))
            continue
        for key, number in value.items():
            where = f"metadata.{group}.{key}"
            if key not in names:
                found.append(PlanViolation("metadata", where, "is not allowed"))
            elif number is not None and not _whole(number, LIMITS[key]):
                found.append(PlanViolation("metadata", where, _not_whole(number, key)))
    return found


def _whole(value: Any, maximum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= maximum


def _not_whole(value: Any, name: str) -> str:
    return f"is {_short(value)}; it must be a whole number from 1 to {LIMITS[name]}"


def _steps(steps: list[Any], found: list[PlanViolation]) -> list[tuple[int, str, str]]:
    """Check each step's shape, type and id; (index, id, type) of those with a known type."""
    typed: list[tuple[int, str, str]] = []
    seen: dict[str, int] = {}
    for index, step in enumerate(steps):
        where = f"steps[{index}]"
        if not isinstance(step, Mapping):
            found.append(PlanViolation("step", where, f"must be an object, got {_short(step)}"))
            continue
        step_id = step.get("id")
        sid = step_id if isinstance(step_id, str) else None
        for key in ("id", "type", "payload"):
            if key not in step:
                found.append(PlanViolation("step", f"{where}.{key}", "is missing", step_id=sid))
        for key in step:
            if key not in ("id", "type", "payload"):
                found.append(
                    PlanViolation("step", f"{where}.{key}", "is not a step field", step_id=sid)
                )
        if "id" in step:
            if sid is None or not _ID_RE.fullmatch(sid):
                found.append(PlanViolation("ids", f"{where}.id", f"{step_id!r} is not allowed"))
            elif sid in seen:
                found.append(
                    PlanViolation(
                        "ids", f"{where}.id", f"repeats the id of steps[{seen[sid]}]", step_id=sid
                    )
                )
            else:
                seen[sid] = index
        step_type = step.get("type")
        if "type" in step and step_type not in KINDS:
            found.append(
                PlanViolation("type", f"{where}.type", f"{step_type!r} is no v1 type", step_id=sid)
            )
        elif step_type in KINDS:
            typed.append((index, sid or "", str(step_type)))
    return typed


def _order(typed: list[tuple[int, str, str]]) -> list[PlanViolation]:
    found: list[PlanViolation] = []
    highest = -1
    previous = ""
    for index, step_id, step_type in typed:
        rank = CANONICAL_ORDER.index(step_type)
        if rank <= highest:
            what = "repeats" if CANONICAL_ORDER[highest] == step_type else "comes after"
            found.append(
                PlanViolation(
                    "order",
                    f"steps[{index}].type",
                    f"{step_type} {what} {previous}",
                    step_id=step_id or None,
                )
            )
            continue
        highest, previous = rank, f"{CANONICAL_ORDER[rank]} ('{step_id}')"
    return found


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


SHOWN = 20
"""The most violations a message lists; the rest are counted."""
MAX_STEPS = 64
"""Past this many steps a plan is refused as a whole, not step by step (a v1 plan has 8)."""


def summarise(found: list[PlanViolation]) -> list[str]:
    """The first :data:`SHOWN` violations as lines, and how many more there are."""
    lines = [str(violation) for violation in found[:SHOWN]]
    if len(found) > SHOWN:
        lines.append(f"… and {len(found) - SHOWN} more")
    return lines


def checked_plan(plan: Any) -> ExecutionPlan:
    """``plan`` as an ExecutionPlan; a PlanError naming every broken rule otherwise."""
    from pydantic import ValidationError

    from swarm_runtime.contracts.plan import ExecutionPlan

    if isinstance(plan, ExecutionPlan):  # the model holds the shape; the order is checked here
        found = plan_violations(plan.model_dump(mode="json"))
        if not found:
            return plan
    else:
        found = plan_violations(plan)
    if not found:
        try:
            return ExecutionPlan.model_validate(plan)
        except ValidationError as exc:  # what the rules let through (none known)
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            found = [PlanViolation("document", where, str(first["msg"]))]
    first_found = found[0]
    lines = "\n  ".join(summarise(found))
    raise PlanError(
        f"the plan breaks {len(found)} rule(s):\n  {lines}",
        rule=first_found.rule,
        step_id=first_found.step_id,
    )
