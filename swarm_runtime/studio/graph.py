"""A flow as a graph for the studio: its steps as nodes, its routing as labelled edges.

:func:`flow_graph` draws a flow from its definition: a ``linear`` step has one edge to the
step after it, a ``microloop`` an edge forward when its exit condition holds and a
back-edge to its loop target, a ``branch`` one edge per value and one for its default.
:func:`run_graphs` lays a run's events over the graphs of its flows: each node gets the
status of its last execution and how many times it ran. A flow the studio has no
definition of (a plan cycle, a flows dir that moved) is drawn from the events alone, with
the edges the run took.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from swarm_runtime.flow.kinds import KINDS
from swarm_runtime.flow.spec import FlowSpec, StepSpec

Graph = dict[str, Any]


def flow_graph(flow: FlowSpec) -> Graph:
    """Nodes and edges of ``flow``; an edge has ``from``, ``to``, ``kind`` and ``label``."""
    nodes = [
        {
            "id": step.id,
            "agents": list(step.agents),
            "role": step.role,
            "routing": step.routing.kind,
            "index": index + 1,
        }
        for index, step in enumerate(flow.steps)
    ]
    edges: list[dict[str, Any]] = []
    for index, step in enumerate(flow.steps):
        following = flow.steps[index + 1].id if index + 1 < len(flow.steps) else None
        edges.extend(_edges(step, following))
    return {
        "key": flow.key,
        "title": flow.title,
        "description": flow.description,
        "source": "flow",
        "nodes": nodes,
        "edges": edges,
    }


def _edges(step: StepSpec, following: str | None) -> list[dict[str, Any]]:
    drawn = KINDS[step.routing.kind].edges(step.routing, following)
    return [_edge(step.id, e.to, e.drawn, e.caption) for e in drawn]


def _edge(source: str, target: str, kind: str, label: str) -> dict[str, Any]:
    return {"from": source, "to": target, "kind": kind, "label": label}


def step_states(events: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """For each ``(flow, step)`` that ran: its last status and its execution count."""
    states: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        flow, step, kind = event.get("flow_key"), event.get("step_id"), event.get("kind")
        if not isinstance(flow, str) or not isinstance(step, str):
            continue
        state = states.setdefault((flow, step), {"status": "pending", "count": 0})
        if kind == "step_start":
            state["count"] += 1
            state["status"] = "running"
        elif kind == "step_end":
            payload = event.get("payload") or {}
            state["status"] = str(payload.get("status") or "succeeded")
        elif kind == "step_error":
            state["status"] = "failed"
    return states


def run_graphs(
    flow_keys: Iterable[str],
    events: Sequence[Mapping[str, Any]],
    definition: Callable[[str], FlowSpec | None],
) -> list[Graph]:
    """One graph per flow of a run, each node with ``status`` and ``count`` from ``events``.

    A flow the run entered by a detour or an injection (docs/flows.md#detours-and-utility-flows)
    follows the flow that entered it, with ``injected_by`` (that flow and step) and ``depth`` (its
    stack depth).
    """
    states = step_states(events)
    planned = list(flow_keys)
    order = _with_injected(planned, events)
    graphs = []
    for key, injected_by, depth in order:
        flow = definition(key)
        graph = flow_graph(flow) if flow is not None else _graph_from_events(key, events)
        for node in graph["nodes"]:
            state = states.get((key, node["id"]), {"status": "not_run", "count": 0})
            node.update(status=state["status"], count=state["count"])
        if injected_by is not None:
            graph.update(injected_by=injected_by, depth=depth)
        graphs.append(graph)
    return graphs


def _with_injected(
    planned: list[str], events: Sequence[Mapping[str, Any]]
) -> list[tuple[str, dict[str, str] | None, int]]:
    """The planned flows, each followed by the flows it injected (nested, in order)."""
    children: dict[str, list[tuple[str, dict[str, str], int]]] = {}
    seen = set(planned)
    for event in events:
        payload = event.get("payload") or {}
        if event.get("kind") != "stack_push" or not isinstance(payload, Mapping):
            continue
        injected, paused = payload.get("injected_flow"), payload.get("paused_flow")
        if not isinstance(injected, str) or not isinstance(paused, str) or injected in seen:
            continue
        seen.add(injected)
        by = {"flow": paused, "step": str(payload.get("paused_step"))}
        depth = payload.get("current_depth")
        children.setdefault(paused, []).append(
            (injected, by, depth if isinstance(depth, int) else 2)
        )
    order: list[tuple[str, dict[str, str] | None, int]] = []

    def add(key: str, by: dict[str, str] | None, depth: int) -> None:
        order.append((key, by, depth))
        for child in children.get(key, []):
            add(*child)

    for key in planned:
        add(key, None, 1)
    return order


def _graph_from_events(key: str, events: Sequence[Mapping[str, Any]]) -> Graph:
    order: list[str] = []
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        if event.get("flow_key") != key:
            continue
        step = event.get("step_id")
        if event.get("kind") == "step_start" and isinstance(step, str) and step not in order:
            order.append(step)
        payload = event.get("payload") or {}
        if event.get("kind") == "route_decision" and payload.get("to_step"):
            source, target = str(payload.get("from_step")), str(payload["to_step"])
            kind = "loop" if payload.get("decision") == "loop" else "linear"
            edges.setdefault((source, target), _edge(source, target, kind, ""))
    return {
        "key": key,
        "title": key,
        "description": "drawn from the run's events (no definition of this flow here)",
        "source": "events",
        "nodes": [
            {"id": s, "agents": [], "role": "", "routing": "linear", "index": i + 1}
            for i, s in enumerate(order)
        ],
        "edges": list(edges.values()),
    }
