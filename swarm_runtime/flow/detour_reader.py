"""Reading the detours of a step and the utility keys of a flow file.

A step's ``detours:`` is a list of ``{id, flow | step, when?, return?}``; a flow file may
say ``utility: true`` with an ``injection_trigger`` and ``on_complete``. Each value is
checked here, and each error names the file, the line, the step and the field; whether
the flows named exist is checked when flows are planned into a run (they may live in
other files).

See docs/flows.md#detours-and-utility-flows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import yaml

from swarm_runtime.flow.conditions import condition_error
from swarm_runtime.flow.spec import Detour
from swarm_runtime.flow.yaml_reader import NodeReader
from swarm_runtime.ids import FLOW_KEY_RE, STEP_ID_RE


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


Item = TypeVar("Item", bound=_HasId)

DETOUR_KEYS = ("id", "flow", "step", "when", "return")
RETURNS = ("resume", "halt", "bounce_to:<step>")
ON_COMPLETE = ("return", "halt")


class DetourReader(NodeReader):
    """Reads ``detours:`` lists and a flow's ``utility`` keys."""

    def detours(self, node: yaml.Node, step: str) -> tuple[Detour, ...] | None:
        """``detours:``: a non-empty list of detours with distinct ids."""
        return self.distinct(
            node,
            step,
            "detours",
            "a non-empty list of detours, each {id, flow or step, when, return}",
            self._detour,
            "detour",
        )

    def distinct(
        self,
        node: yaml.Node,
        step: str,
        field: str,
        shape: str,
        read: Callable[[yaml.Node, str, str], Item | None],
        each: str,
    ) -> tuple[Item, ...] | None:
        """A non-empty list of ``read`` items whose ids are distinct.

        None when it is no list; the items that read well when some did not (their errors
        are recorded).
        """
        if not isinstance(node, yaml.SequenceNode) or not node.value:
            self.error(f"must be {shape}", node, step=step, field=field)
            return None
        found: list[Item] = []
        for position, entry in enumerate(node.value, start=1):
            item = read(entry, step, f"{field}.#{position}")
            if item is not None and any(other.id == item.id for other in found):
                self.error(
                    f"{field.rpartition('.')[2].removesuffix('s')} id '{item.id}' is given "
                    f"twice; each {each} needs its own id",
                    entry,
                    step=step,
                    field=f"{field}.{item.id}",
                )
                item = None
            if item is not None:
                found.append(item)
        return tuple(found)

    def _detour(self, node: yaml.Node, step: str, label: str) -> Detour | None:
        fields = self.mapping(node, DETOUR_KEYS, what="a detour", step=step, field=label)
        if fields is None:
            return None
        if "id" not in fields:
            self.error("a detour needs 'id'", node, step=step, field=label)
            return None
        move = self.identifier(fields["id"], STEP_ID_RE, step=step, field=label, what="id")
        field = f"detours.{move or label}"
        target = self._target(fields, node, step, field)
        when, _ = self.condition(fields.get("when"), step, f"{field}.when")
        returns = self._returns(fields.get("return"), step, f"{field}.return")
        if move is None or target is None:
            return None
        # A wrong condition or return is recorded; the detour is still read, so that where
        # it goes is checked too.
        return Detour(
            id=move, flow=target[0], step=target[1], when=when, returns=returns or "resume"
        )

    def _target(
        self, fields: dict[str, yaml.Node], node: yaml.Node, step: str, field: str
    ) -> tuple[str, str | None] | None:
        """``flow: KEY`` or ``step: FLOW/STEP`` (exactly one of them)."""
        if ("flow" in fields) == ("step" in fields):
            self.error(
                "a detour needs exactly one of 'flow: KEY' (a whole flow) or "
                "'step: FLOW/STEP' (one step of one)",
                node,
                step=step,
                field=field,
            )
            return None
        if "flow" in fields:
            key = self.identifier(
                fields["flow"], FLOW_KEY_RE, step=step, field=f"{field}.flow", what="flow key"
            )
            return (key, None) if key is not None else None
        text = self.string(fields["step"], step=step, field=f"{field}.step")
        if text is None:
            return None
        flow, _, target = text.partition("/")
        if not FLOW_KEY_RE.fullmatch(flow) or not STEP_ID_RE.fullmatch(target):
            self.error(
                f"step {text!r} must be FLOW/STEP: a flow key and a step id of that flow",
                fields["step"],
                step=step,
                field=f"{field}.step",
            )
            return None
        return flow, target

    def _returns(self, node: yaml.Node | None, step: str, field: str) -> str | None:
        """``return:``: resume (the default), halt or bounce_to:<step>."""
        if node is None:
            return "resume"
        text = self.string(node, step=step, field=field)
        if text is None:
            return None
        kind, sep, target = text.partition(":")
        if text in ("resume", "halt") or (
            kind == "bounce_to" and sep and STEP_ID_RE.fullmatch(target)
        ):
            return text
        self.error(
            f"return {text!r} is not one of {', '.join(RETURNS)}", node, step=step, field=field
        )
        return None

    def condition(
        self, node: yaml.Node | None, step: str | None, field: str
    ) -> tuple[str | None, bool]:
        """A CEL condition, compiled now: its text (None when absent), and whether it is valid."""
        if node is None:
            return None, True
        text = self.string(node, step=step, field=field)
        if text is None:
            return None, False
        why = condition_error(text)
        if why is not None:
            self.error(f"{field.rpartition('.')[2]} {why}", node, step=step, field=field)
            return None, False
        return text, True

    def utility(
        self, fields: dict[str, yaml.Node], root: yaml.Node
    ) -> tuple[bool, str | None, str]:
        """A flow's ``utility``, ``injection_trigger`` and ``on_complete`` (checked together)."""
        utility = False
        if "utility" in fields:
            node = fields["utility"]
            if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:bool":
                self.error("must be true or false", node, field="utility")
            else:
                utility = node.value.lower() in ("true", "yes", "on")
        trigger, _ = self.condition(fields.get("injection_trigger"), None, "injection_trigger")
        on_complete = "return"
        if "on_complete" in fields:
            text = self.string(fields["on_complete"], step=None, field="on_complete")
            if text is not None and text not in ON_COMPLETE:
                self.error(
                    f"on_complete {text!r} is not one of {', '.join(ON_COMPLETE)}",
                    fields["on_complete"],
                    field="on_complete",
                )
            on_complete = text or on_complete
        if not utility and ("injection_trigger" in fields or "on_complete" in fields):
            self.error(
                "injection_trigger and on_complete belong to a utility flow: add 'utility: true'",
                root,
                field="utility",
            )
        return utility, trigger, on_complete
