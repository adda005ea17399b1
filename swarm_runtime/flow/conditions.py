"""Conditions (docs/flows.md#conditions): CEL expressions over what a step left behind.

A condition (a navigator candidate's ``when``) is a CEL expression over five names:
``handoff``, ``receipt``, ``params``, ``loop_state`` and ``facts``. It is checked when its
flow loads (:func:`condition_error`: too big or too deep, a syntax error, or a name it
cannot see) and evaluated after a step (:func:`evaluate`): an evaluation error of any kind,
or a value that is not true or false, counts as false and says why. The CEL
implementation (``cel-python``) is imported only when a flow has a condition, and each
expression is compiled once per process.

The CEL implementation evaluates recursively, about five Python frames per level of the
parse tree, and its parse time grows with the text: a condition is bounded in length,
bracket nesting and operators by a scan of its text before it is parsed, then in the
depth of its parse tree (the exact measure of what evaluation needs), so a condition that
loads always has the stack it needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from swarm_runtime.flow.cel import Outcome, Program, TooDeep, implementation
from swarm_runtime.record import Record

NAMES = ("handoff", "receipt", "params", "loop_state", "facts")
"""What a condition sees."""
_MACROS = frozenset(("all", "exists", "exists_one", "map", "filter"))
"""CEL macros whose first argument names a variable of their own."""
MAX_CHARS = 1000
"""The longest condition, in characters."""
MAX_NESTING = 7
"""How deep brackets (``(``, ``[``, ``{``) may nest in a condition (each adds ~10 levels)."""
MAX_OPERATORS = 100
"""How many operator characters (``&&`` is two, ``!`` one …) a condition may hold."""
MAX_DEPTH = 80
"""How deep a condition's parse tree may be (a plain comparison is about 14 levels)."""
_EXCERPT = 60
"""The widest excerpt of a condition a syntax error shows around its column."""
_OPERATOR_CHARS = frozenset("&|!=<>+-*/%?")


class Evaluation(Record):
    """One condition, evaluated: its text, whether it held, and why not when it failed."""

    expr: str
    value: bool
    error: str | None = None


class _Cel(Record):
    """What checks a condition at load: cel-python's parser, and its syntax error.

    Kept together so that the parser and the error it raises come from the same classes even
    if the modules are imported again later (a pytest session that runs pytest in-process
    drops the modules its inner session imported).
    """

    environment: Any
    parse_error: Any


@cache
def _cel() -> _Cel:
    import celpy
    from celpy.celparser import CELParseError

    return _Cel(environment=celpy.Environment(), parse_error=CELParseError)


def condition_error(source: str) -> str | None:
    """Why ``source`` is not a condition, or None when it is one."""
    too_big = _size_error(source)
    if too_big is not None:
        return too_big
    cel = _cel()
    try:
        tree = cel.environment.compile(source)
    except cel.parse_error as exc:
        return f"is not a CEL expression: {_syntax_error(source, exc)}"
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        return (
            f"is nested too deeply: its parse tree is {depth} levels deep, at most "
            f"{MAX_DEPTH} (a comparison takes about 14, a bracket about 10, each operator "
            "of a chain 1); split it into simpler conditions"
        )
    unknown = sorted(_names(tree) - set(NAMES) - _bound(tree))
    if unknown:
        return (
            f"names {', '.join(repr(n) for n in unknown)}, which a condition cannot see "
            f"(it sees {', '.join(NAMES)})"
        )
    return None


def _size_error(source: str) -> str | None:
    """Why ``source`` is too big to parse, from one scan of its text (never the parser)."""
    if len(source) > MAX_CHARS:
        return f"is {len(source)} characters long, at most {MAX_CHARS}"
    nesting = deepest = operators = 0
    quote: str | None = None
    escaped = False
    for char in source:
        if quote is not None:  # inside a string literal: brackets and operators are text
            escaped = not escaped and char == "\\"
            if char == quote and not escaped:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "([{":
            nesting += 1
            deepest = max(deepest, nesting)
        elif char in ")]}":
            nesting -= 1
        elif char in _OPERATOR_CHARS:
            operators += 1
    if deepest > MAX_NESTING:
        return f"nests brackets {deepest} deep, at most {MAX_NESTING}"
    if operators > MAX_OPERATORS:
        return f"holds {operators} operator characters (&&, ==, !, + …), at most {MAX_OPERATORS}"
    return None


def _syntax_error(source: str, exc: Exception) -> str:
    """Where a syntax error is: the expression (around the column when it is long), a caret."""
    line, column = getattr(exc, "line", None), getattr(exc, "column", None)
    lines = source.splitlines() or [""]
    if not isinstance(line, int) or not isinstance(column, int) or not 1 <= line <= len(lines):
        first = str(exc).strip().splitlines()
        return f"a syntax error ({first[0] if first else type(exc).__name__})"
    text = lines[line - 1]
    at = min(max(column, 1), len(text) + 1) - 1  # 0-based, at most just past the end
    start = 0
    if len(text) > _EXCERPT:
        start = min(max(at - _EXCERPT // 2, 0), len(text) - _EXCERPT)
    end = min(start + _EXCERPT, len(text))
    shown = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    caret = " " * (at - start + (1 if start else 0)) + "^"
    where = f"line {line}, column {column}" if len(lines) > 1 else f"column {column}"
    return f"a syntax error at {where}:\n    {shown}\n    {caret}"


def _depth(tree: Any) -> int:
    """How many levels deep a parse tree is (walked without recursion)."""
    deepest = 0
    todo = [(tree, 1)]
    while todo:
        node, level = todo.pop()
        deepest = max(deepest, level)
        todo.extend((child, level + 1) for child in getattr(node, "children", ()))
    return deepest


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
def _program(source: str) -> tuple[Program, tuple[str, ...]]:
    """The compiled condition, and which of the five names it may read (by its text)."""
    chosen = implementation()
    try:
        program = chosen.compile(source)
    except Exception:
        if chosen.name == "cel-python":
            raise
        # What loaded was checked by cel-python: one it compiles, the other may not.
        program = _fallback(chosen.convert, source)
    return program, tuple(name for name in NAMES if re.search(rf"\b{name}\b", source))


def _fallback(convert: Callable[[Any], Any], source: str) -> Program:
    """``source`` compiled by cel-python, taking values made for the preferred implementation."""
    celpy = implementation("cel-python")
    program = celpy.compile(source)

    def run(values: Mapping[str, Any]) -> Outcome:
        return program({name: celpy.convert(value) for name, value in values.items()})

    return run


class Converted(Record):
    """A value already in CEL's types: kept by its owner across steps, never converted again."""

    value: Any


def to_cel(value: Any) -> Any:
    """A JSON value in CEL's types (for a :class:`Converted` value a caller keeps)."""
    return implementation().convert(value)


class Activation:
    """What the conditions after one step see, each name made ready once, when first read.

    ``values`` maps a name to a JSON value, a :class:`Converted` one, or a function that
    gives either: a name no condition reads costs nothing (a run's facts, say, when no
    condition looks at them), and one read by several conditions is converted once.
    """

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values
        self._ready: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        """The CEL value of ``name`` (a missing one is empty)."""
        if name not in self._ready:
            value = self._values.get(name, [] if name == "facts" else {})
            value = value() if callable(value) else value
            if isinstance(value, Converted):
                value = value.value
            else:
                value = to_cel(_booleans(value) if name == "handoff" else value)
            self._ready[name] = value
        return self._ready[name]


_TOO_DEEP = "could not be evaluated: it, or a value it reads, nests too deeply"


def evaluate(source: str, values: Mapping[str, Any] | Activation) -> Evaluation:
    """Evaluate a condition over ``values`` (an :class:`Activation`, or what one takes).

    Never raises: whatever goes wrong (a missing field, a value too deep for the CEL
    implementation, memory) counts as false and is said in the evaluation's ``error``.
    """
    implementation()  # a SWARM_CEL that names none is the user's error, not a false condition
    try:
        program, names = _program(source)
        ready = values if isinstance(values, Activation) else Activation(values)
        held, error = program({name: ready[name] for name in names})
    except (RecursionError, TooDeep):
        return Evaluation(expr=source, value=False, error=_TOO_DEEP)
    except MemoryError:
        return Evaluation(expr=source, value=False, error="could not be evaluated: out of memory")
    except Exception as exc:  # the CEL implementation's own failures count as false too
        return Evaluation(expr=source, value=False, error=_short(f"{type(exc).__name__}: {exc}"))
    if error is not None:
        return Evaluation(expr=source, value=False, error=_short(error))
    return Evaluation(expr=source, value=held)


def _short(reason: str, limit: int = 500) -> str:
    """An evaluation error's reason, cut visibly past ``limit`` characters (it is logged)."""
    if len(reason) <= limit:
        return reason
    return f"{reason[:limit]}[… {len(reason) - limit} more characters cut]"
