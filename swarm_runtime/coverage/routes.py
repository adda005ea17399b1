"""Route coverage (docs/coverage.md): every step and edge of a flows dir, and which ones runs took.

The universe is every step and every edge of every flow (utility flows included): one
edge per (from step, to step, label). Labels:

- a routing kind's edges, as its entry in :mod:`swarm_runtime.flow.kinds` names them:
  ``next`` (linear), ``loop`` and ``loop-exit`` (microloop), ``branch=VALUE`` and
  ``branch-default`` (branch), ``candidate=ID`` and ``navigator-default`` (navigator);
- ``detour=ID`` for each detour (to ``FLOW/STEP``, where the detour starts);
- ``injection`` from every step of a non-utility flow into each utility flow with an
  ``injection_trigger`` (to ``FLOW/STEP``, its first step).

What a run took is read from its events: a ``step_start`` takes its step, a
``route_decision`` the edge its reason names (:meth:`Universe.edge_of`), a ``tool_start``
calls a tool of its step. Collecting (:func:`collect`) only counts ``(flow, step)``, the
raw route and ``(flow, step, tool)``; the edge is worked out once per distinct route, when
the report is made. Beside the steps and edges, each tool a step's ``tools:`` names is
reported as called or not (docs/tools.md#tools); that is no part of the coverage percentage.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.flow.kinds import KINDS
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.record import Record

if TYPE_CHECKING:
    from swarm_runtime.flow.registry import FlowRegistry

StepKey = tuple[str, str]
"""``(flow, step)``."""
Route = tuple[str, str, str | None, str, str]
"""``(flow, from step, to step, decision, reason)`` of a ``route_decision``."""
ToolKey = tuple[str, str, str]
"""``(flow, step, tool)``."""


class Edge(Record):
    """One edge of a flow: from a step to a step (``FLOW/STEP`` across flows), labelled."""

    flow: str
    source: str
    to: str
    label: str

    def describe(self) -> str:
        """``branch value 'bounce' -> fix_code`` and the like, for a person."""
        head, _, name = self.label.partition("=")
        readings = {key: text for kind in KINDS.values() for key, text in kind.labels.items()}
        text = readings.get(head) or _READINGS.get(head)
        return f"{text.format(name) if text else self.label} -> {self.to}"


_READINGS = {"detour": "detour '{}'", "injection": "utility injection"}
"""How a person reads the labels that are not a routing kind's, by the part before ``=``."""


class Taken:
    """Steps, routes and tool calls taken, counted (cheap to add to, plain to send around)."""

    __slots__ = ("judged", "routes", "runs", "steps", "tools")

    def __init__(self) -> None:
        self.runs = 0
        self.steps: Counter[StepKey] = Counter()
        self.routes: Counter[Route] = Counter()
        self.tools: Counter[ToolKey] = Counter()
        self.judged: Counter[tuple[str, str, str, bool]] = Counter()
        """``(flow, step, judge, passed)``: judgements made, by how they went."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-able counts (a pytest-xdist worker hands them to the controller)."""
        return {
            "runs": self.runs,
            "steps": [[*key, n] for key, n in self.steps.items()],
            "routes": [[*key, n] for key, n in self.routes.items()],
            "tools": [[*key, n] for key, n in self.tools.items()],
            "judged": [[*key, n] for key, n in self.judged.items()],
        }

    def merge(self, other: Mapping[str, Any]) -> None:
        """Add counts made by :meth:`as_dict` (another process's)."""
        self.runs += int(other.get("runs", 0))
        for flow, step, n in other.get("steps", ()):
            self.steps[(flow, step)] += int(n)
        for flow, source, to, decision, reason, n in other.get("routes", ()):
            self.routes[(flow, source, to, decision, reason)] += int(n)
        for flow, step, tool, n in other.get("tools", ()):
            self.tools[(flow, step, tool)] += int(n)
        for flow, step, judge, passed, n in other.get("judged", ()):
            self.judged[(flow, step, judge, bool(passed))] += int(n)


def collect(events: Iterable[Mapping[str, Any]], taken: Taken) -> None:
    """Count the steps, routes and tool calls of one run's events into ``taken``."""
    steps, routes = taken.steps, taken.routes
    for event in events:
        kind = event.get("kind")
        if kind == "step_start":
            steps[(str(event.get("flow_key")), str(event.get("step_id")))] += 1
        elif kind == "tool_start":
            tool = (event.get("payload") or {}).get("tool")
            taken.tools[(str(event.get("flow_key")), str(event.get("step_id")), str(tool))] += 1
        elif kind == "judgement":
            p = event.get("payload") or {}
            key = (str(event.get("flow_key")), str(event.get("step_id")), str(p.get("name")))
            taken.judged[(*key, bool(p.get("passed")))] += 1
        elif kind == "route_decision":
            p = event.get("payload") or {}
            source, decision = str(p.get("from_step")), str(p.get("decision"))
            flow, to = str(event.get("flow_key")), p.get("to_step")
            routes[(flow, source, to, decision, str(p.get("reason")))] += 1
    taken.runs += 1


_COUNTED = ('"step_start"', '"route_decision"', '"tool_start"', '"judgement"')
"""The kinds of line :func:`collect` counts."""


def collect_file(path: Path, taken: Taken) -> None:
    """:func:`collect` over an ``events.jsonl``, parsing only the lines that may count.

    A line that does not parse (a torn last line) is left out; OSError if it cannot be read.
    """
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if any(kind in line for kind in _COUNTED):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
    collect(events, taken)


def _edges_of(
    flow: FlowSpec, step: StepSpec, flows: Mapping[str, FlowSpec], utilities: list[FlowSpec]
) -> list[Edge]:
    """Every edge out of ``step``, in declared order: its routing kind's, then detours."""
    position = flow.index_of(step.id) + 1
    following = flow.steps[position].id if position < len(flow.steps) else None
    out = [(e.to, e.label) for e in KINDS[step.routing.kind].edges(step.routing, following)]
    for detour in step.detours:
        target = flows.get(detour.flow)
        if target is not None and target.steps:
            start = detour.step or target.steps[0].id
            out.append((f"{detour.flow}/{start}", f"detour={detour.id}"))
    if not flow.utility:
        out += [(f"{u.key}/{u.steps[0].id}", "injection") for u in utilities if u.steps]
    return [Edge(flow.key, step.id, to, label) for to, label in out]


class Universe:
    """Every step and edge of a set of flows, and which edge a route took."""

    def __init__(self, flows: Iterable[FlowSpec]) -> None:
        self.flows: dict[str, FlowSpec] = {flow.key: flow for flow in flows}
        utilities = [f for f in self.flows.values() if f.utility and f.injection_trigger]
        self.edges: dict[StepKey, list[Edge]] = {
            (flow.key, step.id): _edges_of(flow, step, self.flows, utilities)
            for flow in self.flows.values()
            for step in flow.steps
        }

    @classmethod
    def of(cls, registry: FlowRegistry) -> Universe:
        """Every flow of a flows dir; FlowDefinitionError when one does not load."""
        keys = registry.keys()
        return cls([registry.get(key) for key in keys])

    def steps(self, flow_key: str) -> list[str]:
        """The step ids of a flow, in order."""
        return [step.id for step in self.flows[flow_key].steps]

    def tools_of(self, flow_key: str) -> list[tuple[str, str]]:
        """``(step, tool)`` for each tool each step of a flow may call (its ``tools:``)."""
        return [(step.id, tool) for step in self.flows[flow_key].steps for tool in step.tools or ()]

    def judges_of(self, flow_key: str) -> list[tuple[str, str]]:
        """``(step, judge)`` for each judge of each step of a flow (its ``judges:``)."""
        return [(step.id, j.name) for step in self.flows[flow_key].steps for j in step.judges]

    def edges_of(self, flow_key: str) -> list[Edge]:
        """The edges of a flow, step by step in declared order."""
        return [e for step in self.steps(flow_key) for e in self.edges[(flow_key, step)]]

    def edge_of(self, route: Route) -> Edge | None:
        """The edge a ``route_decision`` took; None for the end of a flow or no edge known."""
        flow_key, source, to, decision, reason = route
        edges = self.edges.get((flow_key, source))
        if not edges or to is None:
            return None
        label = _label(self.flows[flow_key].step(source), decision, reason)
        same_to = [e for e in edges if e.to == to]
        exact = [e for e in same_to if e.label == label]
        if exact:
            return exact[0]
        # A golden path written under another reason (a refused detour, a navigator that
        # fell back): the one plain edge to where the run went.
        plain = [e for e in same_to if not e.label.startswith(("detour=", "injection"))]
        return plain[0] if len(plain) == 1 else None


def _label(step: StepSpec, decision: str, reason: str) -> str | None:
    """The label of the edge a route's decision and reason name, if they name one."""
    head, _, rest = reason.partition(":")
    if head == "detour":
        return f"detour={rest}" if any(d.id == rest for d in step.detours) else "injection"
    return KINDS[step.routing.kind].taken(step.routing, decision, head, rest)
