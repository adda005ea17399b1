"""The tools a step may offer its model: Python functions, named and described.

A Python tool is a function; its input schema comes from its signature and type hints
through pydantic's :class:`~pydantic.TypeAdapter` (a parameter's ``Annotated[..., Field(
description=...)]`` describes it), and its description from its docstring. ``@tool``
names it, marks it ``pure`` (safe to run again: replay runs it again and checks its result
against the recording instead of serving the recorded one) and gives it its own deadline.

Tools come from ``runtime.yaml`` (``tools: [module:function, name=module:function]``), from
plugins (the hook ``swarm_register_tools(registry)``: an installed package's entry point in
the ``swarm_runtime`` group, or a ``conftest.py`` under pytest) and from code
(:meth:`ToolRegistry.register`). MCP servers add theirs as ``server.tool``
(:mod:`swarm_runtime.tools.mcp`).

See docs/tools.md#tools.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, cast

from swarm_runtime.errors import ConfigError
from swarm_runtime.record import Record

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
"""A Python tool's name; an MCP server's tool is ``server.tool``, each part like this."""
DEFAULT_TOOL_TIMEOUT_S = 60.0
"""How long one tool call may take unless the tool or runtime.yaml says otherwise."""

_F = TypeVar("_F", bound=Callable[..., Any])


class ToolSpec(Record):
    """What a model is told of a tool, and what the runtime knows of it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    pure: bool = False
    """Safe to run again (no side effect): replay runs it and compares its result."""
    source: str = ""
    """Where it comes from, for messages: ``python pkg.mod:func``, ``mcp server fs``."""
    timeout_s: float | None = None
    """Its own deadline (None: the run's ``tool_timeout_s``)."""


def tool(
    function: _F | None = None,
    *,
    name: str | None = None,
    pure: bool = False,
    description: str | None = None,
    timeout_s: float | None = None,
) -> Any:
    """Mark a function as a tool: ``@tool``, or ``@tool(pure=True, name="lookup")``.

    The function is returned unchanged, with what the decorator said attached; it is
    registered when runtime.yaml names it or a plugin registers it.
    """

    def mark(target: _F) -> _F:
        target.__swarm_tool__ = {  # type: ignore[attr-defined]
            "name": name,
            "pure": pure,
            "description": description,
            "timeout_s": timeout_s,
        }
        return target

    return mark(function) if function is not None else mark


class PythonTool:
    """A function as a tool: its spec, and a call that checks arguments against it."""

    def __init__(self, function: Callable[..., Any], spec: ToolSpec) -> None:
        self.function = function
        self.spec = spec
        from pydantic import TypeAdapter

        self._adapter: Any = TypeAdapter(cast(Any, function))

    def call(self, arguments: dict[str, Any]) -> Any:
        """The function's return for ``arguments``; ToolInputError when they do not fit."""
        from pydantic import ValidationError
        from pydantic_core import ArgsKwargs

        try:
            return self._adapter.validate_python(ArgsKwargs((), arguments))
        except ValidationError as exc:
            if exc.title != f"call[{self.function.__name__}]":
                raise  # the tool's own pydantic error: an error the tool raised
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'input'}: {error['msg']}"
                for error in exc.errors()[:5]
            )
            raise ToolInputError(
                f"the input does not match {self.spec.name}'s schema: {problems}"
            ) from None


class ToolInputError(Exception):
    """A tool's arguments do not match its schema: answered to the model, never run."""


class ToolTimeout(Exception):
    """A tool did not answer within its deadline."""


def python_tool(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    pure: bool | None = None,
    source: str = "",
) -> PythonTool:
    """``function`` as a tool (what ``@tool`` said, unless ``name`` or ``pure`` say otherwise)."""
    if not callable(function):
        raise ConfigError(f"tool {source or function!r}: is not a function")
    marked: dict[str, Any] = getattr(function, "__swarm_tool__", None) or {}
    tool_name = str(name or marked.get("name") or getattr(function, "__name__", ""))
    if not NAME_RE.fullmatch(tool_name):
        raise ConfigError(
            f"tool {source or tool_name!r}: the name {tool_name!r} is not a tool name (letters, "
            "digits, '_' and '-', starting with a letter or '_', at most 64)"
        )
    description = marked.get("description") or inspect.getdoc(function) or f"The tool {tool_name}."
    spec_source = source or f"python {getattr(function, '__module__', '?')}:{tool_name}"
    try:
        from pydantic import TypeAdapter

        schema = TypeAdapter(cast(Any, function)).json_schema()
    except Exception as exc:  # a type hint pydantic cannot turn into a schema
        raise ConfigError(
            f"tool {tool_name} ({spec_source}): no input schema can be made from its "
            f"signature: {type(exc).__name__}: {exc}"
        ) from None
    schema.pop("title", None)
    spec = ToolSpec(
        name=tool_name,
        description=description,
        input_schema=schema,
        pure=bool(marked.get("pure", False) if pure is None else pure),
        source=spec_source,
        timeout_s=marked.get("timeout_s"),
    )
    return PythonTool(function, spec)


def load_reference(reference: str, where: str) -> tuple[str | None, Callable[..., Any]]:
    """``[name=]module:function`` imported: (the name given or None, the function)."""
    name: str | None = None
    target = reference.strip()
    if "=" in target:
        name, target = (part.strip() for part in target.split("=", 1))
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ConfigError(
            f"{where}: {reference!r} is not a tool reference (write module:function, or "
            "name=module:function)"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(
            f"{where}: cannot import {module_name!r} for tool {reference!r}: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ConfigError(f"{where}: {module_name} has no {attribute!r} (tool {reference!r})")
    return name, found


class ToolRegistry:
    """The Python tools a run may offer, by name."""

    def __init__(self) -> None:
        self._tools: dict[str, PythonTool] = {}

    def register(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        pure: bool | None = None,
        replace: bool = False,
    ) -> ToolSpec:
        """Add ``function`` as a tool; its spec. ConfigError when the name is taken."""
        made = python_tool(function, name=name, pure=pure)
        taken = self._tools.get(made.spec.name)
        if taken is not None and not replace and taken.function is not function:
            raise ConfigError(
                f"tool {made.spec.name!r} ({made.spec.source}) is registered already "
                f"({taken.spec.source}); name one of them otherwise, or pass replace=True"
            )
        self._tools[made.spec.name] = made
        return made.spec

    def add_references(
        self, references: Iterable[str], where: str, base: Path | None = None
    ) -> None:
        """Register ``module:function`` references (runtime.yaml's ``tools:``).

        ``base`` is the project's directory: its modules import as ``python -m`` would
        import them from there (it is put on ``sys.path`` when it is not).
        """
        references = list(references)
        if references and base is not None and str(base) not in sys.path:
            sys.path.insert(0, str(base))
        for reference in references:
            name, function = load_reference(reference, where)
            made = python_tool(function, name=name, source=f"{where}: {reference}")
            taken = self._tools.get(made.spec.name)
            if taken is not None and taken.function is not function:
                raise ConfigError(
                    f"{where}: tool {made.spec.name!r} ({reference}) is registered already "
                    f"({taken.spec.source}); name it otherwise: name=module:function"
                )
            self._tools[made.spec.name] = made

    def get(self, name: str) -> PythonTool | None:
        """The tool of that name, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Every tool's name, sorted."""
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools
