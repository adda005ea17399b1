"""Reading a flow file into a :class:`FlowSpec`, keeping the YAML line of every value.

The file is composed into YAML nodes with a safe loader, so every error can name the line
of the node it is about. Shape errors (types, unknown keys, id syntax) are found here;
rules that look across steps (targets, duplicates, reachability) live in ``validate``.
All errors of a file are collected, so ``swarm flows validate`` can print every one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.spec import (
    DEFAULT_MAX_ITERATIONS,
    Budget,
    FlowSpec,
    RoutingSpec,
    StepSpec,
    TeachingNotes,
)
from swarm_runtime.storage.layout import AGENT_KEY_RE, FLOW_KEY_RE, STEP_ID_RE

__all__ = ["check_flow_file", "load_flow", "load_yaml_nodes"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

TOP_KEYS = ("key", "title", "description", "charter", "steps")
STEP_KEYS = (
    "id",
    "agents",
    "role",
    "teaching_notes",
    "routing",
    "engine",
    "max_attempts",
    "budget",
)
NOTE_KEYS = ("inputs", "outputs", "emphasizes", "constraints")
ROUTING_KEYS = (
    "kind",
    "next",
    "loop_target",
    "loop_condition_field",
    "loop_success_values",
    "max_iterations",
    "branch_field",
    "branches",
    "default",
)
CHARTER_KEYS = ("goal", "exit_criteria", "non_goals")
BUDGET_KEYS = ("tokens", "cost_usd", "duration_ms")
ROUTING_KINDS = ("linear", "microloop", "branch")


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def load_yaml_nodes(path: Path, text: str) -> yaml.Node | None:
    """Compose ``text`` into YAML nodes; raise FlowDefinitionError with the line on failure."""
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=_Loader)
        return node
    except yaml.MarkedYAMLError as exc:
        # An unclosed bracket or quote is best found where it was opened (the context);
        # the problem mark is where the parser gave up, said in the message too.
        mark = exc.context_mark or exc.problem_mark
        line = int(mark.line) + 1 if mark is not None else None
        message = str(exc.problem or exc)
        if exc.context and exc.problem_mark is not None:
            message = f"{message} ({exc.context} at line {line}; noticed at line "
            message += f"{exc.problem_mark.line + 1})"
        raise FlowDefinitionError(f"invalid YAML: {message}", file=str(path), line=line) from None
    except yaml.YAMLError as exc:
        raise FlowDefinitionError(f"invalid YAML: {exc}", file=str(path)) from None


def _scalar_value(node: yaml.ScalarNode) -> Any:
    """The value YAML gives a scalar (0x10, 1:30, .nan …), or None if it has none."""
    try:
        return yaml.load(node.value, Loader=_Loader)
    except (yaml.YAMLError, ValueError):
        return None


def _suggest(word: str, allowed: tuple[str, ...]) -> str:
    import difflib  # only on the error path

    close = difflib.get_close_matches(word, allowed, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"allowed: {', '.join(allowed)}{hint}"


class _FileReader:
    """Walks the nodes of one file and records every error it meets."""

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
        self.errors.append(
            FlowDefinitionError(
                message,
                file=str(self.path),
                line=_line(node) if node is not None else None,
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
                    f"unknown key '{key}' in {what} ({_suggest(key, allowed)})",
                    key_node,
                    step=step,
                    field=name,
                )
            else:
                result[key] = value_node
        return result

    def string(self, node: yaml.Node, *, step: str | None, field: str) -> str | None:
        self.lines[field] = _line(node)
        if (
            not isinstance(node, yaml.ScalarNode)
            or node.tag != "tag:yaml.org,2002:str"
            or not node.value.strip()
        ):
            self.error("must be a non-empty string", node, step=step, field=field)
            return None
        return str(node.value)

    def integer(self, node: yaml.Node, *, step: str | None, field: str, minimum: int) -> int | None:
        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:int":
            self.error(f"must be a whole number >= {minimum}", node, step=step, field=field)
            return None
        value = _scalar_value(node)
        if not isinstance(value, int):
            self.error(f"must be a whole number >= {minimum}", node, step=step, field=field)
            return None
        if value < minimum:
            self.error(f"must be >= {minimum}, got {value}", node, step=step, field=field)
            return None
        return value

    def number(self, node: yaml.Node, *, step: str | None, field: str) -> float | None:
        if not isinstance(node, yaml.ScalarNode) or node.tag not in (
            "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float",
        ):
            self.error("must be a number >= 0", node, step=step, field=field)
            return None
        value = _scalar_value(node)
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

    # -- the parts of a flow -------------------------------------------------------------

    def routing(self, node: yaml.Node, step: str) -> RoutingSpec | None:
        fields = self.mapping(node, ROUTING_KEYS, what="routing", step=step, field="routing")
        if fields is None:
            return None
        kind_node = fields.get("kind")
        kind = "linear"
        if kind_node is not None:
            value = self.string(kind_node, step=step, field="routing.kind")
            if value is None:
                return None
            if value not in ROUTING_KINDS:
                self.error(
                    f"unknown routing kind '{value}' ({_suggest(value, ROUTING_KINDS)})",
                    kind_node,
                    step=step,
                    field="routing.kind",
                )
                return None
            kind = value
        ok = True

        def ident(name: str) -> str | None:
            nonlocal ok
            sub = fields.get(name)
            if sub is None:
                return None
            value = self.identifier(
                sub, STEP_ID_RE, step=step, field=f"routing.{name}", what="step id"
            )
            ok = ok and value is not None
            return value

        next_step = ident("next")
        loop_target = ident("loop_target")
        default = ident("default")
        condition = None
        if "loop_condition_field" in fields:
            condition = self.string(
                fields["loop_condition_field"], step=step, field="routing.loop_condition_field"
            )
            ok = ok and condition is not None
        success: tuple[str, ...] = ()
        if "loop_success_values" in fields:
            got = self.strings(
                fields["loop_success_values"], step=step, field="routing.loop_success_values"
            )
            ok = ok and got is not None
            success = got or ()
        max_iterations = DEFAULT_MAX_ITERATIONS
        if "max_iterations" in fields:
            got_int = self.integer(
                fields["max_iterations"], step=step, field="routing.max_iterations", minimum=1
            )
            ok = ok and got_int is not None
            max_iterations = got_int or DEFAULT_MAX_ITERATIONS
        branch_field = "status"
        if "branch_field" in fields:
            got_str = self.string(fields["branch_field"], step=step, field="routing.branch_field")
            ok = ok and got_str is not None
            branch_field = got_str or "status"
        branches: list[tuple[str, str]] = []
        if "branches" in fields:
            branch_node = fields["branches"]
            if not isinstance(branch_node, yaml.MappingNode) or not branch_node.value:
                self.error(
                    "must be a non-empty mapping of handoff value to step id",
                    branch_node,
                    step=step,
                    field="routing.branches",
                )
                ok = False
            else:
                seen_keys: dict[str, str] = {}
                for key_node, target_node in branch_node.value:
                    if not isinstance(key_node, yaml.ScalarNode) or not str(key_node.value):
                        self.error(
                            "branch keys must be plain values a handoff can declare",
                            key_node,
                            step=step,
                            field="routing.branches",
                        )
                        ok = False
                        continue
                    key = str(key_node.value)
                    if key.lower() in seen_keys:
                        self.error(
                            f"branch key '{key}' repeats '{seen_keys[key.lower()]}' (keys are "
                            "compared case-insensitively)",
                            key_node,
                            step=step,
                            field=f"routing.branches.{key}",
                        )
                        ok = False
                        continue
                    seen_keys[key.lower()] = key
                    target = self.identifier(
                        target_node,
                        STEP_ID_RE,
                        step=step,
                        field=f"routing.branches.{key}",
                        what="step id",
                    )
                    if target is None:
                        ok = False
                        continue
                    branches.append((key, target))

        node_of = fields.get
        if kind == "microloop":
            for name in ("loop_target", "loop_condition_field", "loop_success_values"):
                if name not in fields:
                    self.error(
                        f"a microloop needs '{name}'", node, step=step, field=f"routing.{name}"
                    )
                    ok = False
        if kind == "branch" and "branches" not in fields:
            self.error(
                "a branch needs 'branches' (handoff value -> step id)",
                node,
                step=step,
                field="routing.branches",
            )
            ok = False
        misplaced = {
            "linear": (
                "loop_target",
                "loop_condition_field",
                "loop_success_values",
                "max_iterations",
                "branch_field",
                "branches",
                "default",
            ),
            "microloop": ("branch_field", "branches", "default"),
            "branch": (
                "loop_target",
                "loop_condition_field",
                "loop_success_values",
                "max_iterations",
                "next",
            ),
        }[kind]
        for name in misplaced:
            if name in fields:
                self.error(
                    f"'{name}' does not apply to routing kind '{kind}'",
                    node_of(name),
                    step=step,
                    field=f"routing.{name}",
                )
                ok = False
        if not ok:
            return None
        return RoutingSpec(
            kind=kind,  # type: ignore[arg-type]
            next=next_step,
            loop_target=loop_target,
            loop_condition_field=condition,
            loop_success_values=success,
            max_iterations=max_iterations,
            branch_field=branch_field,
            branches=tuple(branches),
            default=default,
        )

    def notes(self, node: yaml.Node, step: str) -> TeachingNotes | None:
        fields = self.mapping(
            node, NOTE_KEYS, what="teaching_notes", step=step, field="teaching_notes"
        )
        if fields is None:
            return None
        lists: dict[str, tuple[str, ...]] = {}
        for name in NOTE_KEYS:
            if name not in fields:
                self.error(
                    f"teaching_notes needs all of {', '.join(NOTE_KEYS)}; '{name}' is missing",
                    node,
                    step=step,
                    field=f"teaching_notes.{name}",
                )
                continue
            got = self.strings(fields[name], step=step, field=f"teaching_notes.{name}")
            if got is not None:
                lists[name] = got
        if len(lists) != len(NOTE_KEYS):
            return None
        return TeachingNotes(**lists)

    def budget(self, node: yaml.Node, step: str) -> Budget | None:
        fields = self.mapping(node, BUDGET_KEYS, what="budget", step=step, field="budget")
        if fields is None:
            return None
        tokens = duration = None
        cost = None
        if "tokens" in fields:
            tokens = self.integer(fields["tokens"], step=step, field="budget.tokens", minimum=1)
        if "duration_ms" in fields:
            duration = self.integer(
                fields["duration_ms"], step=step, field="budget.duration_ms", minimum=1
            )
        if "cost_usd" in fields:
            cost = self.number(fields["cost_usd"], step=step, field="budget.cost_usd")
        return Budget(tokens=tokens, cost_usd=cost, duration_ms=duration)

    def step(self, node: yaml.Node, position: int) -> StepSpec | None:
        label = f"#{position}"
        self.lines = {}
        if not isinstance(node, yaml.MappingNode):
            self.error(f"step {label} must be a mapping", node, field="steps")
            return None
        id_node = next(
            (v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "id"), None
        )
        step_id: str | None = None
        if id_node is None:
            self.error(f"step {label} has no 'id'", node, field="id")
        else:
            step_id = self.identifier(id_node, STEP_ID_RE, step=None, field="id", what="step id")
        name = step_id or label
        fields = self.mapping(node, STEP_KEYS, what="a step", step=name)
        if fields is None:
            return None
        agents: tuple[str, ...] | None = None
        if "agents" not in fields:
            self.error("a step needs 'agents' (a non-empty list)", node, step=name, field="agents")
        else:
            agents = self.strings(fields["agents"], step=name, field="agents")
            for item in fields["agents"].value if agents else ():
                if not AGENT_KEY_RE.fullmatch(str(item.value)):
                    self.error(
                        f"agent key {item.value!r} is invalid: it must match "
                        f"{AGENT_KEY_RE.pattern}",
                        item,
                        step=name,
                        field="agents",
                    )
                    agents = None
        role = None
        if "role" not in fields:
            self.error("a step needs a one-line 'role'", node, step=name, field="role")
        else:
            role = self.string(fields["role"], step=name, field="role")
        notes = None
        if "teaching_notes" not in fields:
            self.error(
                "a step needs 'teaching_notes' with inputs, outputs, emphasizes, constraints",
                node,
                step=name,
                field="teaching_notes",
            )
        else:
            notes = self.notes(fields["teaching_notes"], name)
        routing: RoutingSpec | None = RoutingSpec()
        if "routing" in fields:
            routing = self.routing(fields["routing"], name)
        engine = None
        if "engine" in fields:
            engine = self.string(fields["engine"], step=name, field="engine")
        max_attempts = None
        if "max_attempts" in fields:
            max_attempts = self.integer(
                fields["max_attempts"], step=name, field="max_attempts", minimum=1
            )
        budget = self.budget(fields["budget"], name) if "budget" in fields else None
        if step_id is None or agents is None or role is None or notes is None or routing is None:
            return None
        return StepSpec(
            id=step_id,
            agents=agents,
            role=role,
            teaching_notes=notes,
            routing=routing,
            line=_line(node),
            engine=engine,
            max_attempts=max_attempts,
            budget=budget,
            field_lines=dict(self.lines),
        )

    def flow(self, root: yaml.Node | None) -> FlowSpec | None:
        if root is None or not isinstance(root, yaml.MappingNode):
            self.error(
                "a flow file must be a YAML mapping with key, title, description, steps", root
            )
            return None
        fields = self.mapping(root, TOP_KEYS, what="a flow")
        if fields is None:
            return None
        values: dict[str, str | None] = {}
        for name in ("key", "title", "description"):
            if name not in fields:
                self.error(f"a flow needs '{name}'", root, field=name)
                values[name] = None
            else:
                values[name] = self.string(fields[name], step=None, field=name)
        key = values["key"]
        if key is not None and not FLOW_KEY_RE.fullmatch(key):
            self.error(
                f"flow key {key!r} is invalid: it must match {FLOW_KEY_RE.pattern} "
                "(it names a directory of every run)",
                fields["key"],
                field="key",
            )
        elif key is not None and key != self.path.stem:
            self.error(
                f"flow key '{key}' differs from the file name '{self.path.name}'; "
                f"rename the file or set key: {self.path.stem}",
                fields["key"],
                field="key",
            )
        charter: dict[str, object] | None = None
        if "charter" in fields:
            charter_fields = self.mapping(
                fields["charter"], CHARTER_KEYS, what="charter", field="charter"
            )
            if charter_fields is not None:
                charter = {}
                for name, value_node in charter_fields.items():
                    if name == "goal":
                        charter[name] = self.string(value_node, step=None, field="charter.goal")
                    else:
                        charter[name] = list(
                            self.strings(
                                value_node, step=None, field=f"charter.{name}", non_empty=False
                            )
                            or ()
                        )
        steps: list[StepSpec] = []
        steps_ok = True
        if "steps" not in fields:
            self.error("a flow needs 'steps' (a non-empty list)", root, field="steps")
            steps_ok = False
        elif not isinstance(fields["steps"], yaml.SequenceNode) or not fields["steps"].value:
            self.error("'steps' must be a non-empty list", fields["steps"], field="steps")
            steps_ok = False
        else:
            for position, step_node in enumerate(fields["steps"].value, start=1):
                built = self.step(step_node, position)
                if built is None:
                    steps_ok = False
                else:
                    steps.append(built)
        if not steps_ok or None in values.values() or self.errors:
            return None
        return FlowSpec(
            key=str(key),
            title=str(values["title"]),
            description=str(values["description"]),
            steps=tuple(steps),
            path=self.path,
            charter=charter,
        )


def check_flow_file(
    path: Path, *, validate: Callable[[FlowSpec], list[FlowDefinitionError]] | None = None
) -> tuple[FlowSpec | None, list[FlowDefinitionError]]:
    """Load one flow file and return it with every error found (none means it is valid)."""
    from swarm_runtime.flow.validate import validate_flow

    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, [FlowDefinitionError(f"cannot read the file: {exc.strerror}", file=str(path))]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, [
            FlowDefinitionError(
                f"the file is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                file=str(path),
                line=line,
            )
        ]
    try:
        root = load_yaml_nodes(path, text)
    except FlowDefinitionError as exc:
        return None, [exc]
    reader = _FileReader(path)
    flow = reader.flow(root)
    errors = list(reader.errors)
    if flow is not None:
        errors.extend((validate or validate_flow)(flow))
    return (flow if not errors else None), errors


def load_flow(path: Path | str) -> FlowSpec:
    """Load and validate a flow file; raise the first FlowDefinitionError found."""
    flow, errors = check_flow_file(Path(path))
    if errors:
        first = errors[0]
        if len(errors) > 1:
            first.add_note(f"{len(errors) - 1} more error(s) in {path}; run 'swarm flows validate'")
        raise first
    assert flow is not None
    return flow
