"""The CEL implementations a condition is evaluated by, giving the same answers.

A condition is *checked* by ``cel-python`` when its flow loads (syntax, names, depth: one
implementation decides what loads, on every machine) and *evaluated* by
``cel-expr-python`` — the CEL C++ runtime bound for Python, about a hundred times faster to
start and to evaluate — where it is installed (its wheels cover Linux x86_64, macOS and
Windows), else by ``cel-python``. Both evaluate with CEL's rules for comparing numbers:
``1 == 1.0`` and ``2 < 2.5`` hold across ``int``, ``uint`` and ``double``, values of
different kinds are not equal (``true == 1`` is false, ``"a" != 1`` true) and ordering them
is an error. cel-python is given comparison functions that follow those rules (on its own
it calls a cross-type comparison an error and ``true == 1`` true); a corpus test holds the
two implementations to the same answers.

A value nested deeper than :data:`MAX_VALUE_DEPTH` is refused before either implementation
sees it (the C++ one converts every value it is given, recursively).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Protocol

MAX_VALUE_DEPTH = 200
"""How deep a value a condition reads may nest (lists and maps in one another)."""

IMPLEMENTATIONS = ("cel-expr-python", "cel-python")
"""The CEL implementations conditions can be evaluated by, the preferred first."""

Outcome = tuple[bool, str | None]
"""Whether a condition held, and why not when it could not be evaluated."""

Program = Callable[[Mapping[str, Any]], Outcome]
"""A compiled condition: given its names' values (each made by ``convert``), its outcome."""


class TooDeep(ValueError):
    """A value nests deeper than a condition may read."""


class Implementation(Protocol):
    """One CEL implementation: how it takes values and compiles a condition."""

    name: str

    def convert(self, value: Any) -> Any:
        """A JSON value in the types this implementation evaluates."""

    def compile(self, source: str) -> Program:
        """``source`` compiled (it raises when this implementation cannot compile it)."""


def check_depth(value: Any, limit: int = MAX_VALUE_DEPTH) -> None:
    """Raise :class:`TooDeep` when ``value`` nests more than ``limit`` levels (no recursion)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        node, level = todo.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if level > limit:
            raise TooDeep(f"a value it reads nests more than {limit} levels deep")
        todo.extend((child, level + 1) for child in children)


_TYPE_NAMES = {"null_type": "null", "none": "null", "nonetype": "null"}


def type_name(name: str) -> str:
    """A CEL type's name as an evaluation error says it (``string``, ``list``, ``null`` …)."""
    plain = name.lower().removesuffix("type") if name.endswith("Type") else name.lower()
    return _TYPE_NAMES.get(plain, plain)


class CelExprPython:
    """``cel-expr-python``: the CEL C++ runtime. It takes plain JSON values as they are."""

    name = "cel-expr-python"

    def __init__(self) -> None:
        from cel_expr_python import cel

        self._cel = cel
        self._env = cel.NewEnv()

    def convert(self, value: Any) -> Any:
        check_depth(value)
        return value

    def compile(self, source: str) -> Program:
        # Unchecked: cel-python's check at load already decided what a condition may say.
        expression = self._env.compile(source, disable_check=True)
        boolean, error = self._cel.Type.BOOL, self._cel.Type.ERROR

        def run(values: Mapping[str, Any]) -> Outcome:
            result = expression.eval(data=values)
            kind = result.type()
            if kind == boolean:
                return bool(result.value()), None
            if kind == error:
                return False, str(result.value())
            return False, f"gave a {type_name(kind.name())}, not true or false"

        return run


class CelPython:
    """``cel-python``, with comparisons that follow CEL's rules for numbers and kinds."""

    name = "cel-python"

    def __init__(self) -> None:
        import celpy
        from celpy import celtypes
        from celpy.adapter import json_to_cel
        from celpy.evaluation import CELEvalError

        self._celpy = celpy
        self._environment = celpy.Environment()
        self._json_to_cel = json_to_cel
        self._eval_error = CELEvalError
        self._boolean = celtypes.BoolType
        self._functions = _comparisons(celtypes, CELEvalError)

    @property
    def environment(self) -> Any:
        """The environment that compiles (and checks) conditions."""
        return self._environment

    def convert(self, value: Any) -> Any:
        check_depth(value)
        return self._json_to_cel(value)

    def compile(self, source: str) -> Program:
        program = self._environment.program(
            self._environment.compile(source), functions=self._functions
        )

        def run(values: Mapping[str, Any]) -> Outcome:
            try:
                result = program.evaluate(dict(values))
            except self._eval_error as exc:
                return False, str(exc.args[0] if exc.args else exc)
            if isinstance(result, self._eval_error):
                return False, str(result.args[0])
            if not isinstance(result, self._boolean):
                return False, f"gave a {type_name(type(result).__name__)}, not true or false"
            return bool(result), None

        return run


def _comparisons(celtypes: Any, eval_error: type[Exception]) -> dict[str, Any]:
    """``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` and ``in`` as CEL defines them across kinds."""
    rules = _Comparisons(celtypes, eval_error)
    boolean = celtypes.BoolType
    return {
        "_==_": rules.checked(lambda left, right: boolean(rules.equal(left, right))),
        "_!=_": rules.checked(lambda left, right: boolean(not rules.equal(left, right))),
        "_<_": rules.checked(rules.ordered(lambda a, b: a < b)),
        "_<=_": rules.checked(rules.ordered(lambda a, b: a <= b)),
        "_>_": rules.checked(rules.ordered(lambda a, b: a > b)),
        "_>=_": rules.checked(rules.ordered(lambda a, b: a >= b)),
        "_in_": rules.checked(rules.member),
    }


class _Comparisons:
    """CEL's rules for comparing cel-python's values.

    Numbers (``int``, ``uint``, ``double``) compare by value; a bool is not a number; values
    of different kinds are never equal, and ordering them is an error (as an unsupported
    overload is, in CEL). An operand that is an error makes the comparison that error.
    """

    def __init__(self, celtypes: Any, eval_error: type[Exception]) -> None:
        self._types = celtypes
        self._error = eval_error
        self._boolean = celtypes.BoolType
        self._kinds: tuple[tuple[Any, str], ...] = (
            (celtypes.BoolType, "bool"),
            ((celtypes.IntType, celtypes.UintType, celtypes.DoubleType), "number"),
            (str, "string"),
            (bytes, "bytes"),
            (celtypes.ListType, "list"),
            (celtypes.MapType, "map"),
        )

    def kind(self, value: Any) -> str:
        for types, name in self._kinds:
            if isinstance(value, types):
                return name
        return type(value).__name__

    def equal(self, left: Any, right: Any) -> bool:
        kind = self.kind(left)
        if kind != self.kind(right):
            return False
        if kind == "list":
            return len(left) == len(right) and all(map(self.equal, left, right))
        if kind == "map":
            return left.keys() == right.keys() and all(self.equal(left[k], right[k]) for k in left)
        if kind == "number":
            return _number(left) == _number(right)  # exact, as Python compares int and float
        return bool(left == right)

    def ordered(self, compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
        def order(left: Any, right: Any) -> Any:
            kind = self.kind(left)
            if kind != self.kind(right):
                return self._error("no such overload", type(left), (left, right))
            if kind == "number":
                return self._boolean(compare(_number(left), _number(right)))
            return self._boolean(compare(left, right))

        return order

    def member(self, item: Any, container: Any) -> Any:
        if isinstance(container, self._types.ListType):
            return self._boolean(any(self.equal(item, entry) for entry in container))
        if isinstance(container, self._types.MapType):
            return self._boolean(any(self.equal(item, key) for key in container))
        return self._error("no such overload", type(container), (item, container))

    def checked(self, function: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def run(left: Any, right: Any) -> Any:
            for value in (left, right):
                if isinstance(value, self._error):
                    return value
            return function(left, right)

        return run


def _number(value: Any) -> int | float:
    """A CEL number as Python's own (cel-python's types refuse to compare across kinds)."""
    return float(value) if isinstance(value, float) else int(value)


def available(name: str) -> bool:
    """Whether the implementation ``name`` is installed (found, not imported)."""
    from importlib.util import find_spec

    module = "cel_expr_python" if name == "cel-expr-python" else "celpy"
    return find_spec(module) is not None


def choice_error(env: Mapping[str, str]) -> str | None:
    """Why ``SWARM_CEL`` in ``env`` names no implementation (None: unset, or one that is)."""
    chosen = env.get("SWARM_CEL") or ""
    if not chosen or chosen in IMPLEMENTATIONS:
        return None
    return (
        f"SWARM_CEL={chosen!r} names no CEL implementation: set it to one of "
        f"{', '.join(IMPLEMENTATIONS)}, or leave it unset"
    )


@cache
def implementation(name: str | None = None) -> Implementation:
    """The implementation ``name``, or the one conditions use here.

    That is ``cel-expr-python`` where it is installed, else ``cel-python``;
    ``SWARM_CEL=cel-python`` chooses cel-python where both are.
    """
    problem = choice_error(os.environ) if name is None else None
    if problem is not None:
        from swarm_runtime.errors import ConfigError

        raise ConfigError(problem)
    chosen = name or os.environ.get("SWARM_CEL") or ""
    if chosen != "cel-python" and available("cel-expr-python"):
        return CelExprPython()
    return CelPython()
