"""Conditions (SPEC §4.8): CEL expressions over what a step left behind.

A condition (a navigator candidate's ``when``) is a CEL expression over five names:
``handoff``, ``receipt``, ``params``, ``loop_state`` and ``facts``. It is checked when its
flow loads (:func:`condition_error`: a syntax error, or a name it cannot see) and evaluated
after a step (:func:`evaluate`): an evaluation error, or a value that is not true or false,
counts as false and says why. The CEL implementation (``cel-python``) is imported only
when a flow has a condition, and each expression is compiled once per process.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from swarm_runtime.record import Record

NAMES = ("handoff", "receipt", "params", "loop_state", "facts")
"""What a condition sees."""
_MACROS = frozenset(("all", "exists", "exists_one", "map", "filter"))
"""CEL macros whose first argument names a variable of their own."""


class Evaluation(Record):
    """One condition, evaluated: its text, whether it held, and why not when it failed."""

    expr: str
    value: bool
    error: str | None = None


class _Cel(Record):
    """The CEL implementation, every part of it from one import.

    Kept together so that a program, the values it is given and the errors it raises come
    from the same classes even if the modules are imported again later (a pytest session
    that runs pytest in-process drops the modules its inner session imported).
    """

    environment: Any
    parse_error: Any
    eval_error: Any
    boolean: Any
    json_to_cel: Any


@cache
def _cel() -> _Cel:
    import celpy
    from celpy.adapter import json_to_cel
    from celpy.celparser import CELParseError
    from celpy.celtypes import BoolType
    from celpy.evaluation import CELEvalError

    return _Cel(
        environment=celpy.Environment(),
        parse_error=CELParseError,
        eval_error=CELEvalError,
        boolean=BoolType,
        json_to_cel=json_to_cel,
    )


def condition_error(source: str) -> str | None:
    """Why ``source`` is not a condition, or None when it is one."""
    cel = _cel()
    try:
        tree = cel.environment.compile(source)
    except cel.parse_error as exc:
        detail = " ".join(str(exc).split())
        return f"is not a CEL expression ({detail})"
    unknown = sorted(_names(tree) - set(NAMES) - _bound(tree))
    if unknown:
        return (
            f"names {', '.join(repr(n) for n in unknown)}, which a condition cannot see "
            f"(it sees {', '.join(NAMES)})"
        )
    return None


def _names(tree: Any) -> set[str]:
    """The top-level names an expression reads (``handoff`` of ``handoff.status``)."""
    names: set[str] = set()
    for node in tree.iter_subtrees():
        if node.data == "primary":
            for child in node.children:
                if getattr(child, "data", None) == "ident":
                    names.update(str(token) for token in child.children)
    return names


def _bound(tree: Any) -> set[str]:
    """Variables that macros such as ``exists(f, …)`` bind."""
    bound: set[str] = set()
    for node in tree.iter_subtrees():
        if node.data != "member_dot_arg" or len(node.children) < 3:
            continue
        if str(node.children[1]) in _MACROS:
            first = next(iter(node.children[2].children), None)
            if first is not None:
                bound.update(_names(first))
    return bound


def _booleans(handoff: Any) -> Any:
    """A handoff as YAML declared it: its yes/no are true/false to a condition.

    A handoff keeps YAML's booleans as the words ``yes``/``no`` (routing compares text);
    a condition sees them as the booleans YAML read, so ``handoff.touches_db == true`` holds
    for ``touches_db: true`` (or ``yes``).
    """
    if not isinstance(handoff, Mapping):
        return handoff
    words = {"yes": True, "no": False}
    return {
        key: words.get(value, value) if isinstance(value, str) else value
        for key, value in handoff.items()
    }


@cache
def _program(source: str) -> Any:
    environment = _cel().environment
    return environment.program(environment.compile(source))


def evaluate(source: str, values: Mapping[str, Any]) -> Evaluation:
    """Evaluate a condition over ``values`` (JSON values by name; a missing one is empty)."""
    cel = _cel()
    given = {name: values.get(name, [] if name == "facts" else {}) for name in NAMES}
    given["handoff"] = _booleans(given["handoff"])
    activation = {name: cel.json_to_cel(value) for name, value in given.items()}
    try:
        result = _program(source).evaluate(activation)
    except cel.eval_error as exc:
        reason = exc.args[0] if exc.args else str(exc)
        return Evaluation(expr=source, value=False, error=str(reason))
    if isinstance(result, cel.eval_error):
        return Evaluation(expr=source, value=False, error=str(result.args[0]))
    if not isinstance(result, cel.boolean):
        shown = type(result).__name__.removesuffix("Type").lower()
        return Evaluation(expr=source, value=False, error=f"gave a {shown}, not true or false")
    return Evaluation(expr=source, value=bool(result))
