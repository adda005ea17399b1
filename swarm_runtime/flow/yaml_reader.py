"""A typed, line-aware reader of YAML nodes: every error names the file and the line.

A file is composed into nodes with a safe loader (never executed), and values are read
from the nodes one by one, so each error can say which line, step and field it is about.
All errors are collected rather than raised, so a tool can report every one at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from swarm_runtime.errors import FlowDefinitionError

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""Only for single scalars (:func:`scalar_value`); documents go through compose_yaml."""


def line_of(node: yaml.Node) -> int:
    """The 1-based line a node starts on."""
    return int(node.start_mark.line) + 1


def load_yaml_nodes(path: Path, text: str) -> yaml.Node | None:
    """Compose ``text`` into YAML nodes; raise FlowDefinitionError with the line on failure.

    Nesting and alias expansion are bounded (:mod:`swarm_runtime.inputs`).
    """
    from swarm_runtime.inputs.yaml_input import compose_yaml, describe_yaml_error

    try:
        node: yaml.Node | None = compose_yaml(text)
        return node
    except yaml.YAMLError as exc:
        message, line = describe_yaml_error(exc)
        raise FlowDefinitionError(f"invalid YAML: {message}", file=str(path), line=line) from None


def scalar_value(node: yaml.ScalarNode) -> Any:
    """The value YAML gives a scalar (0x10, 1:30, .nan …), or None if it has none."""
    try:
        return yaml.load(node.value, Loader=_Loader)
    except (yaml.YAMLError, ValueError):
        return None


def suggest(word: str, allowed: tuple[str, ...]) -> str:
    """``allowed: …`` and a did-you-mean for ``word``, for an error message."""
    import difflib  # only on the error path

    close = difflib.get_close_matches(word, allowed, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"allowed: {', '.join(allowed)}{hint}"


class NodeReader:
    """Reads typed values from the YAML nodes of one file, recording every error it meets.

    Each reader method returns the value, or None after recording an error that names
    the file, the node's line, and the step and field it belongs to.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[FlowDefinitionError] = []
        self.lines: dict[str, int] = {}

    def error(
        self,
        message: str,
        node: yaml.Node | None,
        *,
        step: str | None = None,
        field: str | None = None,
    ) -> None:
        """Record an error at ``node``."""
        self.errors.append(
            FlowDefinitionError(
                message,
                file=str(self.path),
                line=line_of(node) if node is not None else None,
                step_id=step,
                field=field,
            )
        )

    def mapping(
        self,
        node: yaml.Node,
        allowed: tuple[str, ...],
        *,
        what: str,
        step: str | None = None,
        field: str | None = None,
    ) -> dict[str, yaml.Node] | None:
        """The value nodes of a mapping by key; unknown or repeated keys are errors."""
        if not isinstance(node, yaml.MappingNode):
            self.error(f"{what} must be a mapping", node, step=step, field=field)
            return None
        result: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            name = f"{field}.{key}" if field else str(key)
            if key is None:
                self.error(f"{what} keys must be plain names", key_node, step=step, field=field)
            elif key in result:
                self.error(f"duplicate key '{key}' in {what}", key_node, step=step, field=name)
            elif key not in allowed:
                self.error(
                    f"unknown key '{key}' in {what} ({suggest(key, allowed)})",
                    key_node,
                    step=step,
                    field=name,
                )
            else:
                result[key] = value_node
        return result

    def string(self, node: yaml.Node, *, step: str | None, field: str) -> str | None:
        """A non-empty string."""
        self.lines[field] = line_of(node)
        if (
            not isinstance(node, yaml.ScalarNode)
            or node.tag != "tag:yaml.org,2002:str"
            or not node.value.strip()
        ):
            self.error("must be a non-empty string", node, step=step, field=field)
            return None
        return str(node.value)

    def integer(self, node: yaml.Node, *, step: str | None, field: str, minimum: int) -> int | None:
        """A whole number >= ``minimum``."""
        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:int":
            self.error(f"must be a whole number >= {minimum}", node, step=step, field=field)
            return None
        value = scalar_value(node)
        if not isinstance(value, int):
            self.error(f"must be a whole number >= {minimum}", node, step=step, field=field)
            return None
        if value < minimum:
            self.error(f"must be >= {minimum}, got {value}", node, step=step, field=field)
            return None
        return value

    def number(self, node: yaml.Node, *, step: str | None, field: str) -> float | None:
        """A finite number >= 0."""
        if not isinstance(node, yaml.ScalarNode) or node.tag not in (
            "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float",
        ):
            self.error("must be a number >= 0", node, step=step, field=field)
            return None
        value = scalar_value(node)
        if (
            not isinstance(value, int | float)
            or value != value
            or value
            in (
                float("inf"),
                float("-inf"),
            )
        ):
            self.error("must be a finite number >= 0", node, step=step, field=field)
            return None
        if value < 0:
            self.error(f"must be >= 0, got {node.value}", node, step=step, field=field)
            return None
        return value

    def strings(
        self, node: yaml.Node, *, step: str | None, field: str, non_empty: bool = True
    ) -> tuple[str, ...] | None:
        """A list of non-empty strings (YAML values compared as their text)."""
        if not isinstance(node, yaml.SequenceNode):
            self.error("must be a list of strings", node, step=step, field=field)
            return None
        values: list[str] = []
        for item in node.value:
            # Values such as VERIFIED or yes/no are compared as text whatever YAML made of them.
            if not isinstance(item, yaml.ScalarNode) or not str(item.value).strip():
                self.error("every item must be a non-empty string", item, step=step, field=field)
                return None
            values.append(str(item.value))
        if non_empty and not values:
            self.error("must not be empty", node, step=step, field=field)
            return None
        return tuple(values)

    def identifier(
        self, node: yaml.Node, pattern: Any, *, step: str | None, field: str, what: str
    ) -> str | None:
        """A string that matches ``pattern`` (an id that names files)."""
        text = self.string(node, step=step, field=field)
        if text is None:
            return None
        if not pattern.fullmatch(text):
            self.error(
                f"{what} {text!r} is invalid: it must match {pattern.pattern}",
                node,
                step=step,
                field=field,
            )
            return None
        return text
