"""The route coverage report: ``swarm-coverage.json``, its table, its Markdown, its gaps.

A flow's coverage is (steps taken + edges taken) / (steps + edges) of that flow, as a
percentage; the total's is the same sum over every flow. A step or edge counts as taken
when at least one run took it. Each tool a step's ``tools:`` names is reported as called
(at least one ``tool_start`` of it in that step) or not, beside the percentage and never
in it. The document (format ``swarm-coverage/1``; ``tools`` came later, and a report
without them still reads)::

    {"format": "swarm-coverage/1", "runs": 3, "percent": 87.5,
     "steps": {"taken": 20, "total": 22}, "edges": {"taken": 15, "total": 18},
     "tools": {"called": 1, "total": 2},
     "flows": {"review": {"utility": false, "percent": 90.0,
                          "steps": [{"id": "open_pull_request", "taken": 3}, ...],
                          "edges": [{"from": "work_blocking_items", "to": "verify_fixes",
                                     "label": "loop-exit", "taken": 3}, ...],
                          "tools": [{"step": "open_pull_request", "tool": "search",
                                     "called": 2}, ...],
                          "judges": [{"step": "open_pull_request", "judge": "tone",
                                      "judged": 3, "passed": 2}, ...]}, ...}}

Each judge of a step (docs/judges.md#judges) is reported with how often it judged and passed; like
tools, judges are never counted in the percentage.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from swarm_runtime.coverage.routes import Edge, Taken, Universe
from swarm_runtime.ids import FLOW_KEY_RE, STEP_ID_RE

FORMAT = "swarm-coverage/1"


def build(universe: Universe, taken: Taken) -> dict[str, Any]:
    """The report of what ``taken`` covered of ``universe``."""
    edge_counts: Counter[Edge] = Counter()
    for route, n in taken.routes.items():
        edge = universe.edge_of(route)
        if edge is not None:
            edge_counts[edge] += n
    flows: dict[str, Any] = {}
    for key in sorted(universe.flows):
        steps = [{"id": s, "taken": taken.steps.get((key, s), 0)} for s in universe.steps(key)]
        edges = [
            {"from": e.source, "to": e.to, "label": e.label, "taken": edge_counts.get(e, 0)}
            for e in universe.edges_of(key)
        ]
        tools = [
            {"step": step, "tool": tool, "called": taken.tools.get((key, step, tool), 0)}
            for step, tool in universe.tools_of(key)
        ]
        flows[key] = {"utility": universe.flows[key].utility, "steps": steps, "edges": edges}
        flows[key]["percent"] = _percent(*_sums([flows[key]]))
        flows[key]["tools"] = tools
        flows[key]["judges"] = [
            {
                "step": step,
                "judge": judge,
                "judged": taken.judged.get((key, step, judge, True), 0)
                + taken.judged.get((key, step, judge, False), 0),
                "passed": taken.judged.get((key, step, judge, True), 0),
            }
            for step, judge in universe.judges_of(key)
        ]
    sums = _sums(list(flows.values()))
    every_tool = [tool for flow in flows.values() for tool in flow["tools"]]
    return {
        "format": FORMAT,
        "runs": taken.runs,
        "percent": _percent(*sums),
        "steps": {"taken": sums[0], "total": sums[1]},
        "edges": {"taken": sums[2], "total": sums[3]},
        "tools": {"called": sum(1 for t in every_tool if t["called"]), "total": len(every_tool)},
        "flows": flows,
    }


def _sums(flows: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    """Steps taken, steps, edges taken, edges."""
    steps = [s for f in flows for s in f["steps"]]
    edges = [e for f in flows for e in f["edges"]]
    return (
        sum(1 for s in steps if s["taken"]),
        len(steps),
        sum(1 for e in edges if e["taken"]),
        len(edges),
    )


def _percent(steps_taken: int, steps: int, edges_taken: int, edges: int) -> float:
    total = steps + edges
    return 100.0 if total == 0 else (steps_taken + edges_taken) * 100.0 / total


def shown(percent: float) -> str:
    """A percentage rounded down to one decimal: 100.0% only when everything was taken."""
    return f"{math.floor(percent * 10) / 10:.1f}%"


def below(report: dict[str, Any], minimum: float) -> bool:
    """Whether the report's total coverage is under ``minimum`` percent."""
    steps, edges = report["steps"], report["edges"]
    covered = int(steps["taken"]) + int(edges["taken"])
    return covered * 100.0 < minimum * (int(steps["total"]) + int(edges["total"]))


def _row(report: dict[str, Any]) -> tuple[str, str, str]:
    """Steps taken/total, edges taken/total, percent of one flow (or of the total)."""
    if "steps" in report and isinstance(report["steps"], dict):  # the total
        steps, edges = report["steps"], report["edges"]
        counts = (steps["taken"], steps["total"], edges["taken"], edges["total"])
    else:
        counts = _sums([report])
    return f"{counts[0]}/{counts[1]}", f"{counts[2]}/{counts[3]}", shown(report["percent"])


def _tools(report: dict[str, Any]) -> str:
    """Tools called/total of one flow, or of the total (with tools, ``""`` without)."""
    if "flows" in report:
        counts = report.get("tools") or {}
        return f"{counts['called']}/{counts['total']}" if counts.get("total") else ""
    tools = report.get("tools") or []
    return f"{sum(1 for t in tools if t['called'])}/{len(tools)}"


def _has_tools(report: dict[str, Any]) -> bool:
    return bool((report.get("tools") or {}).get("total"))


def table(report: dict[str, Any]) -> list[str]:
    """The terminal table: one row per flow, then the total.

    With a tools column (tools called at least once / tools named) when a step names tools.
    """
    tools = _has_tools(report)
    rows: list[tuple[str, ...]] = [("flow", "steps", "edges", *(("tools",) * tools), "covered")]
    for key, flow in [*report["flows"].items(), ("total", report)]:
        steps, edges, covered = _row(flow)
        rows.append((key, steps, edges, *((_tools(flow),) * tools), covered))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def uncalled(report: dict[str, Any]) -> list[str]:
    """Every tool a step names that no run of it called: ``flow/step: tool never called``."""
    return [
        f"{key}/{tool['step']}: {tool['tool']} never called"
        for key, flow in report["flows"].items()
        for tool in flow.get("tools") or ()
        if not tool["called"]
    ]


def judged(report: dict[str, Any]) -> list[str]:
    """Each judge of a step, how often it judged and passed: ``flow/step: judge 3/4 passed``."""
    return [
        f"{key}/{j['step']}: {j['judge']} "
        + (f"{j['passed']}/{j['judged']} passed" if j["judged"] else "never judged")
        for key, flow in report["flows"].items()
        for j in flow.get("judges") or ()
    ]


def untaken(report: dict[str, Any]) -> list[str]:
    """Every edge no run took, grouped by flow and step: ``flow/step: <edge> never taken``."""
    lines = []
    for key, flow in report["flows"].items():
        for edge in flow["edges"]:
            if not edge["taken"]:
                described = Edge(key, edge["from"], edge["to"], edge["label"]).describe()
                lines.append(f"{key}/{edge['from']}: {described} never taken")
    return lines


def untaken_steps(report: dict[str, Any]) -> list[str]:
    """Every step no run took: ``flow/step``."""
    return [
        f"{key}/{step['id']}"
        for key, flow in report["flows"].items()
        for step in flow["steps"]
        if not step["taken"]
    ]


def markdown(report: dict[str, Any]) -> str:
    """The table and the gaps as Markdown, for a pull request."""
    head, *rows = [row.split() for row in table(report)]  # no cell holds a space
    rows[-1][0] = "**total**"
    lines = [
        f"### Route coverage: {shown(report['percent'])} ({report['runs']} run(s))",
        "",
        f"| {' | '.join(head)} |",
        "| --- |" + " ---: |" * (len(head) - 1),
    ]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    steps, edges = untaken_steps(report), untaken(report)
    if steps or edges:
        lines += ["", "<details><summary>Never taken</summary>", ""]
        lines += [f"- step `{step}`" for step in steps]
        for line in edges:
            where, _, what = line.removesuffix(" never taken").partition(": ")
            lines.append(f"- `{where}`: {what}")
        lines += ["", "</details>"]
    tools = uncalled(report)
    if tools:
        lines += ["", "<details><summary>Tools never called</summary>", ""]
        for line in tools:
            where, _, tool = line.removesuffix(" never called").partition(": ")
            lines.append(f"- `{tool}` in `{where}`")
        lines += ["", "</details>"]
    judges = judged(report)
    if judges:
        lines += ["", "<details><summary>Judges</summary>", ""]
        for line in judges:
            where, _, what = line.partition(": ")
            lines.append(f"- `{where}`: {what}")
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def problem(doc: Any) -> str | None:
    """What makes ``doc`` not a coverage report this version reads, or None."""
    if not isinstance(doc, dict):
        return "it is not a JSON object"
    if doc.get("format") != FORMAT:
        return f"format is {doc.get('format')!r}, not {FORMAT!r}"
    for name in ("steps", "edges"):
        part = doc.get(name)
        if not (isinstance(part, dict) and _counts(part, "taken", "total")):
            return f"'{name}' must be an object with whole-number 'taken' and 'total'"
    if not _counts(doc, "runs") or not _percentage(doc.get("percent")):
        return "'runs' must be a whole number and 'percent' a number from 0 to 100"
    tools = doc.get("tools", {"called": 0, "total": 0})  # absent from an earlier report
    if not (isinstance(tools, dict) and _counts(tools, "called", "total")):
        return "'tools' must be an object with whole-number 'called' and 'total'"
    flows = doc.get("flows")
    if not isinstance(flows, dict):
        return "'flows' must be an object keyed by flow"
    for key, flow in flows.items():
        if not FLOW_KEY_RE.fullmatch(key):
            return f"flows.{key!r}: not a flow key"
        found = _flow_problem(flow) or _names_problem(flow)
        if found:
            return f"flows.{key}: {found}"
    return None


def _names_problem(flow: dict[str, Any]) -> str | None:
    """What is wrong with a step id, an edge's end or label no flow could have, or None.

    A report is printed to a terminal and into a pull request, where a control character
    or markup would not be text.
    """
    for step in flow["steps"]:
        if not STEP_ID_RE.fullmatch(step["id"]):
            return f"step {step['id']!r} is not a step id"
    for edge in flow["edges"]:
        for end in ("from", "to"):
            *into, step = edge[end].split("/", 1) if end == "to" else [edge[end]]
            if not STEP_ID_RE.fullmatch(step) or not all(map(FLOW_KEY_RE.fullmatch, into)):
                return f"edge {end!r} {edge[end]!r} is not a step id"
        if not edge["label"].isprintable():
            return f"edge label {edge['label']!r} holds a control character"
    for tool in flow.get("tools") or ():
        if not STEP_ID_RE.fullmatch(tool["step"]):
            return f"the step {tool['step']!r} of tool {tool['tool']!r} is not a step id"
        if not tool["tool"].isprintable():
            return f"tool {tool['tool']!r} holds a control character"
    for judge in flow.get("judges") or ():
        if not (STEP_ID_RE.fullmatch(judge["step"]) and STEP_ID_RE.fullmatch(judge["judge"])):
            return f"judge {judge['judge']!r} of step {judge['step']!r}: not ids"
    return None


def _flow_problem(flow: Any) -> str | None:
    if not isinstance(flow, dict) or not _percentage(flow.get("percent")):
        return "must be an object with a 'percent' from 0 to 100"
    steps, edges = flow.get("steps"), flow.get("edges")
    if not isinstance(steps, list) or not all(
        isinstance(s, dict) and isinstance(s.get("id"), str) and _counts(s, "taken") for s in steps
    ):
        return "'steps' must be a list of {id, taken}"
    if not isinstance(edges, list) or not all(
        isinstance(e, dict)
        and all(isinstance(e.get(k), str) for k in ("from", "to", "label"))
        and _counts(e, "taken")
        for e in edges
    ):
        return "'edges' must be a list of {from, to, label, taken}"
    tools = flow.get("tools", [])
    if not isinstance(tools, list) or not all(
        isinstance(t, dict)
        and all(isinstance(t.get(k), str) for k in ("step", "tool"))
        and _counts(t, "called")
        for t in tools
    ):
        return "'tools' must be a list of {step, tool, called}"
    judges = flow.get("judges", [])  # absent from an earlier report
    if not isinstance(judges, list) or not all(
        isinstance(j, dict)
        and all(isinstance(j.get(k), str) for k in ("step", "judge"))
        and _counts(j, "judged", "passed")
        for j in judges
    ):
        return "'judges' must be a list of {step, judge, judged, passed}"
    return None


def _counts(doc: dict[str, Any], *names: str) -> bool:
    return all(
        isinstance(doc.get(n), int) and not isinstance(doc.get(n), bool) and doc[n] >= 0
        for n in names
    )


def _percentage(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 100
