"""Reading one step of a flow file (its routing, notes, budget and options) into a StepSpec.

:class:`StepReader` checks the shape of a step's YAML node (types, unknown keys, id syntax)
and records an error with the line of every node that is wrong; the file around the steps
is read by :mod:`swarm_runtime.flow.loader`.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from swarm_runtime.flow.detour_reader import DetourReader
from swarm_runtime.flow.judge_reader import JudgeReader
from swarm_runtime.flow.kinds import KEY_TYPES, KINDS, ROUTING_KEYS, RoutingKind
from swarm_runtime.flow.spec import Budget, Candidate, RoutingSpec, StepSpec, TeachingNotes
from swarm_runtime.flow.yaml_reader import line_of, suggest
from swarm_runtime.ids import AGENT_KEY_RE, STEP_ID_RE

STEP_KEYS = (
    "id",
    "agents",
    "role",
    "teaching_notes",
    "routing",
    "engine",
    "max_attempts",
    "budget",
    "tools",
    "max_tool_calls",
    "timeout_s",
    "detours",
    "judges",
)
CANDIDATE_KEYS = ("id", "to", "when")
NOTE_KEYS = ("inputs", "outputs", "emphasizes", "constraints")
BUDGET_KEYS = ("tokens", "cost_usd", "duration_ms")
TOOL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*(\([^\n()]*\))?$")
"""A tool a CLI step may use: ``Bash``, ``Read``, ``run_shell_command``, ``Bash(git:*)``."""
MAX_TIMEOUT_S = 86_400


class StepReader(DetourReader, JudgeReader):
    """Reads the steps of a flow file into :class:`StepSpec` records."""

    def routing(self, node: yaml.Node, step: str) -> RoutingSpec | None:
        """A ``routing:`` mapping: its kind, then each key, checked against the kind's entry."""
        fields = self.mapping(node, ROUTING_KEYS, what="routing", step=step, field="routing")
        if fields is None:
            return None
        kind = self._routing_kind(fields.get("kind"), step)
        if kind is None:
            return None
        values: dict[str, Any] = {}
        ok = True
        for name, value_node in fields.items():
            if name == "kind":
                continue
            value = self._routing_value(name, value_node, step)
            ok = ok and value is not None
            values[name] = value
        for name, hint in kind.required:
            if name not in fields:
                self.error(
                    f"a {kind.name} needs '{name}'{hint}", node, step=step, field=f"routing.{name}"
                )
                ok = False
        for name in fields:
            if name != "kind" and name not in kind.keys:
                self.error(
                    f"'{name}' does not apply to routing kind '{kind.name}'",
                    fields[name],
                    step=step,
                    field=f"routing.{name}",
                )
                ok = False
        if not ok:
            return None
        return RoutingSpec(kind=kind.name, **values)  # type: ignore[arg-type]

    def _routing_kind(self, node: yaml.Node | None, step: str) -> RoutingKind | None:
        """``routing.kind``, an entry of the kinds table; ``linear`` when it is left out."""
        if node is None:
            return KINDS["linear"]
        value = self.string(node, step=step, field="routing.kind")
        if value is None:
            return None
        if value not in KINDS:
            self.error(
                f"unknown routing kind '{value}' ({suggest(value, tuple(KINDS))})",
                node,
                step=step,
                field="routing.kind",
            )
            return None
        return KINDS[value]

    def _branches(self, node: yaml.Node, step: str) -> tuple[tuple[str, str], ...] | None:
        """``branches:``: handoff value -> step id, keys compared case-insensitively."""
        if not isinstance(node, yaml.MappingNode) or not node.value:
            self.error(
                "must be a non-empty mapping of handoff value to step id",
                node,
                step=step,
                field="routing.branches",
            )
            return None
        branches: list[tuple[str, str]] = []
        seen: dict[str, str] = {}
        ok = True
        for key_node, target_node in node.value:
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
            field = f"routing.branches.{key}"
            if key.lower() in seen:
                self.error(
                    f"branch key '{key}' repeats '{seen[key.lower()]}' (keys are compared "
                    "case-insensitively)",
                    key_node,
                    step=step,
                    field=field,
                )
                ok = False
                continue
            seen[key.lower()] = key
            target = self.identifier(
                target_node, STEP_ID_RE, step=step, field=field, what="step id"
            )
            if target is None:
                ok = False
                continue
            branches.append((key, target))
        return tuple(branches) if ok else None

    def _routing_value(self, name: str, node: yaml.Node, step: str) -> Any:
        """One routing key's value, read as its type in the kinds table says."""
        field, kind = f"routing.{name}", KEY_TYPES[name]
        if kind == "step":
            return self.identifier(node, STEP_ID_RE, step=step, field=field, what="step id")
        if kind == "text":
            return self.string(node, step=step, field=field)
        if kind == "texts":
            return self.strings(node, step=step, field=field)
        if kind == "count":
            return self.integer(node, step=step, field=field, minimum=1)
        if kind == "candidates":
            return self._candidates(node, step)
        return self._branches(node, step)

    def _candidates(self, node: yaml.Node, step: str) -> tuple[Candidate, ...] | None:
        """``candidates:``: the moves a navigator step may make, each ``{id, to, when?}``."""
        return self.distinct(
            node,
            step,
            "routing.candidates",
            "a non-empty list of moves, each {id, to, when}",
            self._candidate,
            "move",
        )

    def _candidate(self, node: yaml.Node, step: str, label: str) -> Candidate | None:
        fields = self.mapping(node, CANDIDATE_KEYS, what="a candidate", step=step, field=label)
        if fields is None:
            return None
        missing = [key for key in ("id", "to") if key not in fields]
        if missing:
            self.error(f"a candidate needs '{missing[0]}'", node, step=step, field=label)
            return None
        move = self.identifier(fields["id"], STEP_ID_RE, step=step, field=label, what="id")
        field = f"routing.candidates.{move or label}"
        target = self.identifier(
            fields["to"], STEP_ID_RE, step=step, field=f"{field}.to", what="step id"
        )
        when, _ = self.condition(fields.get("when"), step, f"{field}.when")
        if move is None or target is None:
            return None
        return Candidate(id=move, to=target, when=when)

    def notes(self, node: yaml.Node, step: str) -> TeachingNotes | None:
        """``teaching_notes:``: all four lists, inputs, outputs, emphasizes and constraints."""
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

    def budget(self, node: yaml.Node, step: str | None) -> Budget | None:
        """``budget:`` of a step (or, ``step`` None, of the flow): tokens, USD, ms."""
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

    def tools(self, node: yaml.Node, step: str) -> tuple[str, ...] | None:
        """``tools:``: the tools a CLI step may use, each a name with an optional pattern."""
        names = self.strings(node, step=step, field="tools", non_empty=False)
        for item in node.value if names is not None else ():
            if not TOOL_RE.fullmatch(str(item.value)):
                self.error(
                    f"tool {item.value!r} is not a tool name (like Bash, Read or "
                    "Bash(git:*)): letters, digits, '_', '.', '-', then an optional (pattern)",
                    item,
                    step=step,
                    field="tools",
                )
                names = None
        return names

    def options(self, fields: dict[str, yaml.Node], name: str) -> dict[str, Any]:
        """The optional fields of a step: engine, max_attempts, budget, tools, timeout_s."""
        engine = None
        if "engine" in fields:
            engine = self.string(fields["engine"], step=name, field="engine")
        max_attempts = None
        if "max_attempts" in fields:
            max_attempts = self.integer(
                fields["max_attempts"], step=name, field="max_attempts", minimum=1
            )
        budget = self.budget(fields["budget"], name) if "budget" in fields else None
        tools = self.tools(fields["tools"], name) if "tools" in fields else None
        max_tool_calls = None
        if "max_tool_calls" in fields:
            max_tool_calls = self.integer(
                fields["max_tool_calls"], step=name, field="max_tool_calls", minimum=1
            )
        timeout_s = None
        if "timeout_s" in fields:
            timeout_s = self.number(fields["timeout_s"], step=name, field="timeout_s")
            if timeout_s is not None and not 0 < timeout_s <= MAX_TIMEOUT_S:
                self.error(
                    f"timeout_s must be above 0 and at most {MAX_TIMEOUT_S} (a day), "
                    f"got {timeout_s}",
                    fields["timeout_s"],
                    step=name,
                    field="timeout_s",
                )
                timeout_s = None
        return {
            "engine": engine,
            "max_attempts": max_attempts,
            "budget": budget,
            "tools": tools,
            "max_tool_calls": max_tool_calls,
            "timeout_s": timeout_s,
        }

    def _step_id(self, node: yaml.MappingNode, label: str) -> str | None:
        """The step's ``id``, read before its other keys so their errors can name the step."""
        id_node = next(
            (v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "id"), None
        )
        if id_node is None:
            self.error(f"step {label} has no 'id'", node, field="id")
            return None
        return self.identifier(id_node, STEP_ID_RE, step=None, field="id", what="step id")

    def _agents(
        self, fields: dict[str, yaml.Node], node: yaml.Node, name: str
    ) -> tuple[str, ...] | None:
        """``agents:``: a non-empty list of agent keys, each a valid key."""
        if "agents" not in fields:
            self.error("a step needs 'agents' (a non-empty list)", node, step=name, field="agents")
            return None
        agents = self.strings(fields["agents"], step=name, field="agents")
        for item in fields["agents"].value if agents else ():
            if not AGENT_KEY_RE.fullmatch(str(item.value)):
                self.error(
                    f"agent key {item.value!r} is invalid: it must match {AGENT_KEY_RE.pattern}",
                    item,
                    step=name,
                    field="agents",
                )
                agents = None
        return agents

    def step(self, node: yaml.Node, position: int) -> StepSpec | None:
        """The step at ``position`` (1-based) of ``steps:``, or None after recording its errors."""
        label = f"#{position}"
        self.lines = {}
        if not isinstance(node, yaml.MappingNode):
            self.error(f"step {label} must be a mapping", node, field="steps")
            return None
        step_id = self._step_id(node, label)
        name = step_id or label
        fields = self.mapping(node, STEP_KEYS, what="a step", step=name)
        if fields is None:
            return None
        agents = self._agents(fields, node, name)
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
        options = self.options(fields, name)
        detours = self.detours(fields["detours"], name) if "detours" in fields else ()
        judges = self.judges(fields["judges"], name, agents) if "judges" in fields else ()
        if step_id is None:
            return None
        # What read well, even after an error: the checks across steps and flows still run
        # on it (every error of a file at once), and the flow is not returned anyway.
        return StepSpec(
            id=step_id,
            agents=agents or (),
            role=role or "",
            teaching_notes=notes or TeachingNotes((), (), (), ()),
            routing=routing or RoutingSpec(),
            line=line_of(node),
            **options,
            detours=detours or (),
            judges=judges or (),
            field_lines=dict(self.lines),
        )
