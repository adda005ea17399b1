"""Reading a flow file into a :class:`FlowSpec`, keeping the YAML line of every value.

The file is composed into YAML nodes with a safe loader, so every error can name the line
of the node it is about. Shape errors (types, unknown keys, id syntax) are found here, for
the file's top keys, and in :mod:`swarm_runtime.flow.step_reader`, for each step; rules
that look across steps (targets, duplicates, reachability) live in ``validate``.
All errors of a file are collected, so ``swarm flows validate`` can print every one.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.flow.step_reader import StepReader
from swarm_runtime.flow.yaml_reader import load_yaml_nodes
from swarm_runtime.ids import FLOW_KEY_RE

TOP_KEYS = (
    "key",
    "title",
    "description",
    "charter",
    "steps",
    "utility",
    "injection_trigger",
    "on_complete",
    "budget",
    "max_tool_calls",
)
CHARTER_KEYS = ("goal", "exit_criteria", "non_goals")


class _FlowReader(StepReader):
    """Reads the parts of a flow file into a :class:`FlowSpec`."""

    def flow(self, root: yaml.Node | None) -> FlowSpec | None:
        """The whole file as far as it reads; None when its steps cannot be read.

        After an error (in :attr:`errors`) the flow holds what read well, for the checks
        across steps and flows to run on it too: it is never a flow to run.
        """
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
        if key is not None:
            self._check_key(key, fields["key"])
        charter = self._charter(fields["charter"]) if "charter" in fields else None
        utility, trigger, on_complete = self.utility(fields, root)
        budget = self.budget(fields["budget"], None) if "budget" in fields else None
        max_tool_calls = None
        if "max_tool_calls" in fields:
            max_tool_calls = self.integer(
                fields["max_tool_calls"], step=None, field="max_tool_calls", minimum=1
            )
        steps = self._steps(root, fields)
        if steps is None:
            return None
        return FlowSpec(
            key=self.path.stem if key is None or self.errors else key,
            title=values["title"] or "",
            description=values["description"] or "",
            steps=steps,
            path=self.path,
            charter=charter,
            utility=utility,
            injection_trigger=trigger,
            on_complete=on_complete,
            budget=budget,
            max_tool_calls=max_tool_calls,
        )

    def _check_key(self, key: str, node: yaml.Node) -> None:
        """``key:`` names a directory of every run, and must be the file's name."""
        if not FLOW_KEY_RE.fullmatch(key):
            self.error(
                f"flow key {key!r} is invalid: it must match {FLOW_KEY_RE.pattern} "
                "(it names a directory of every run)",
                node,
                field="key",
            )
        elif key != self.path.stem:
            self.error(
                f"flow key '{key}' differs from the file name '{self.path.name}'; "
                f"rename the file or set key: {self.path.stem}",
                node,
                field="key",
            )

    def _charter(self, node: yaml.Node) -> dict[str, object] | None:
        """``charter:``: a ``goal`` string and lists of ``exit_criteria`` and ``non_goals``."""
        fields = self.mapping(node, CHARTER_KEYS, what="charter", field="charter")
        if fields is None:
            return None
        charter: dict[str, object] = {}
        for name, value_node in fields.items():
            if name == "goal":
                charter[name] = self.string(value_node, step=None, field="charter.goal")
            else:
                charter[name] = list(
                    self.strings(value_node, step=None, field=f"charter.{name}", non_empty=False)
                    or ()
                )
        return charter

    def _steps(
        self, root: yaml.MappingNode, fields: dict[str, yaml.Node]
    ) -> tuple[StepSpec, ...] | None:
        """``steps:``: every step read (so each one's errors are recorded), or None."""
        if "steps" not in fields:
            self.error("a flow needs 'steps' (a non-empty list)", root, field="steps")
            return None
        if not isinstance(fields["steps"], yaml.SequenceNode) or not fields["steps"].value:
            self.error("'steps' must be a non-empty list", fields["steps"], field="steps")
            return None
        steps: list[StepSpec] = []
        complete = True
        for position, step_node in enumerate(fields["steps"].value, start=1):
            built = self.step(step_node, position)
            if built is None:  # no id: a step naming it could not be told from a typo
                complete = False
            else:
                steps.append(built)
        return tuple(steps) if complete else None


def check_flow_file(
    path: Path,
    *,
    raw: bytes | None = None,
    partial: bool = False,
) -> tuple[FlowSpec | None, list[FlowDefinitionError]]:
    """Load one flow file and return it with every error found (none means it is valid).

    ``raw``: the file's bytes, when the caller has read them already. ``partial``: after an
    error, return the flow as far as it reads (to check what it names in other flows)
    rather than None.
    """
    from swarm_runtime.flow.validate import validate_flow
    from swarm_runtime.inputs.files import decode_utf8, read_bytes_limited
    from swarm_runtime.inputs.limits import MAX_INPUT_BYTES, InputRefused

    try:
        if raw is None:
            raw = read_bytes_limited(path, MAX_INPUT_BYTES)
        text = decode_utf8(raw)
    except InputRefused as exc:
        return None, [FlowDefinitionError(f"the file {exc}", file=str(path), line=exc.line)]
    except OSError as exc:
        return None, [FlowDefinitionError(f"cannot read the file: {exc.strerror}", file=str(path))]
    try:
        root = load_yaml_nodes(path, text)
    except FlowDefinitionError as exc:
        return None, [exc]
    reader = _FlowReader(path)
    flow = reader.flow(root)
    errors = list(reader.errors)
    if flow is not None:
        errors.extend(validate_flow(flow, reachability=not errors))
    return (flow if not errors or partial else None), errors


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
