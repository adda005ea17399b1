"""Route coverage: the universe of steps and edges, and which edge each route took."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.coverage import report as coverage_report
from swarm_runtime.coverage.routes import Edge, Taken, Universe, collect, collect_file
from swarm_runtime.flow.registry import FlowRegistry
from tests.conftest import SHIPPED_FLOWS
from tests.runtime.helpers import events_of, run_flows, step_yaml, write_flow


def _universe(flows_dir: Path) -> Universe:
    registry = FlowRegistry(flows_dir)
    return Universe.of(registry)


def _edges(universe: Universe, flow: str, step: str) -> list[tuple[str, str]]:
    return [(edge.label, edge.to) for edge in universe.edges[(flow, step)]]


def _report(flows_dir: Path, runs: Path, flows: tuple[str, ...], **kwargs: Any) -> dict[str, Any]:
    taken = Taken()
    collect(events_of(run_flows(flows_dir, runs, flows, **kwargs)), taken)
    return coverage_report.build(_universe(flows_dir), taken)


def _taken(report: dict[str, Any], flow: str, step: str) -> dict[str, int]:
    return {e["label"]: e["taken"] for e in report["flows"][flow]["edges"] if e["from"] == step}


def test_the_shipped_flows_have_an_edge_per_route_kind() -> None:
    universe = _universe(SHIPPED_FLOWS)
    assert _edges(universe, "gate", "decide_merge") == [
        ("branch=MERGE", "merge_change"),
        ("branch=BOUNCE", "bounce_to_build"),
        ("branch=ESCALATE", "escalate_to_human"),
        ("branch-default", "escalate_to_human"),
    ]
    assert _edges(universe, "review", "work_blocking_items") == [
        ("loop", "work_blocking_items"),
        ("loop-exit", "verify_fixes"),
    ]
    assert _edges(universe, "review", "verify_fixes") == [
        ("candidate=reopen_items", "work_blocking_items"),
        ("candidate=forward", "resolve_threads"),
        ("navigator-default", "resolve_threads"),
        ("detour=security_review", "security-scan/scan_changes"),
    ]
    assert _edges(universe, "gate", "merge_change") == [("next", "publish_gate_verdict")]
    assert _edges(universe, "gate", "publish_gate_verdict") == []  # the end of the flow
    # the utility flow is in the universe too, with its own edges
    assert universe.steps("security-scan") == ["scan_changes", "report_findings"]
    assert _edges(universe, "security-scan", "scan_changes") == [("next", "report_findings")]


def test_a_stub_run_takes_the_loop_both_ways_the_detour_and_one_navigator_candidate(
    tmp_path: Path,
) -> None:
    report = _report(SHIPPED_FLOWS, tmp_path, ("review", "gate"))
    # the stub's critic fails once, then passes: the back-edge and the exit, once each
    assert _taken(report, "review", "work_blocking_items") == {"loop": 1, "loop-exit": 1}
    assert _taken(report, "review", "verify_fixes") == {
        "candidate=reopen_items": 0,
        "candidate=forward": 0,
        "navigator-default": 0,
        "detour=security_review": 1,
    }
    assert _taken(report, "gate", "check_policy") == {
        "candidate=decide": 1,
        "candidate=recheck_coverage": 0,
        "navigator-default": 0,
    }
    assert _taken(report, "gate", "decide_merge")["branch=MERGE"] == 1
    steps = {s["id"]: s["taken"] for s in report["flows"]["review"]["steps"]}
    assert steps["work_blocking_items"] == 2
    assert report["flows"]["security-scan"]["percent"] == 100.0
    assert report["flows"]["build"]["percent"] == 0.0
    assert report["runs"] == 1


def test_a_branch_default_is_its_own_edge_beside_a_value_with_the_same_target(
    tmp_path: Path,
) -> None:
    scenario = {
        "decide_merge": {"handoff": {"decision": "MAYBE"}},
        "navigator": {"check_policy": ["recheck_coverage", "decide"]},
    }
    report = _report(SHIPPED_FLOWS, tmp_path, ("gate",), scenario=scenario)
    assert _taken(report, "gate", "decide_merge") == {
        "branch=MERGE": 0,
        "branch=BOUNCE": 0,
        "branch=ESCALATE": 0,
        "branch-default": 1,
    }
    assert _taken(report, "gate", "check_policy") == {
        "candidate=decide": 1,
        "candidate=recheck_coverage": 1,
        "navigator-default": 0,
    }


def test_a_branch_value_is_matched_as_routing_matches_it_whatever_its_case(
    tmp_path: Path,
) -> None:
    scenario = {"decide_merge": {"handoff": {"decision": "bounce"}}}
    report = _report(SHIPPED_FLOWS, tmp_path, ("gate",), scenario=scenario)
    assert _taken(report, "gate", "decide_merge")["branch=BOUNCE"] == 1


def _injecting_flows(root: Path) -> Path:
    write_flow(root, "build", [step_yaml("write_code"), step_yaml("ship")])
    write_flow(
        root,
        "security-scan",
        [step_yaml("scan")],
        head='utility: true\ninjection_trigger: "handoff.touches_db == true"\n',
    )
    return root


def test_a_utility_injection_is_an_edge_from_every_step_of_the_other_flows(
    tmp_path: Path,
) -> None:
    flows = _injecting_flows(tmp_path / "flows")
    universe = _universe(flows)
    assert _edges(universe, "build", "write_code") == [
        ("next", "ship"),
        ("injection", "security-scan/scan"),
    ]
    assert _edges(universe, "build", "ship") == [("injection", "security-scan/scan")]
    assert _edges(universe, "security-scan", "scan") == []  # a utility flow injects nothing
    scenario = {
        "write_code": {"handoff": {"touches_db": True}},
        "navigator": {"write_code": "security-scan"},
    }
    report = _report(flows, tmp_path / "runs", ("build",), scenario=scenario)
    assert _taken(report, "build", "write_code") == {"next": 0, "injection": 1}
    assert _taken(report, "build", "ship") == {"injection": 0}
    assert report["steps"] == {"taken": 3, "total": 3}
    # 3 steps and 1 of 3 edges: 4 of 6
    assert report["percent"] == pytest.approx(400 / 6)


def test_counts_handed_between_processes_add_up(tmp_path: Path) -> None:
    events = events_of(run_flows(SHIPPED_FLOWS, tmp_path, ("review",)))
    one, two, both = Taken(), Taken(), Taken()
    collect(events, one)
    collect(events, two)
    collect(events, both)
    collect(events, both)
    one.merge(two.as_dict())
    assert one.runs == both.runs == 2
    assert one.steps == both.steps and one.routes == both.routes


def test_the_gate_table_and_the_gaps(tmp_path: Path) -> None:
    report = _report(SHIPPED_FLOWS, tmp_path, ("gate",))
    assert coverage_report.below(report, 50.0)
    assert not coverage_report.below(report, 0.0)
    gaps = coverage_report.untaken(report)
    assert "gate/decide_merge: branch value 'BOUNCE' -> bounce_to_build never taken" in gaps
    assert "gate/check_policy: navigator default -> decide_merge never taken" in gaps
    assert not any(line.startswith("gate/decide_merge: branch value 'MERGE'") for line in gaps)
    rows = coverage_report.table(report)
    assert rows[0].split() == ["flow", "steps", "edges", "covered"]
    gate = next(row.split() for row in rows if row.startswith("gate "))
    assert gate[:2] == ["gate", "9/11"]
    assert coverage_report.problem(report) is None


def test_a_percentage_is_never_shown_as_whole_before_it_is() -> None:
    assert coverage_report.shown(99.99) == "99.9%"
    assert coverage_report.shown(100.0) == "100.0%"


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ([], "not a JSON object"),
        ({"format": "other"}, "format is 'other'"),
        (
            {"format": "swarm-coverage/1", "steps": {"taken": 1}, "edges": {}},
            "'steps' must be an object",
        ),
    ],
)
def test_a_document_that_is_not_a_report_says_what_is_wrong(doc: Any, says: str) -> None:
    assert says in str(coverage_report.problem(doc))


def test_an_edge_describes_itself() -> None:
    assert Edge("a", "s", "t", "detour=scan").describe() == "detour 'scan' -> t"
    assert Edge("a", "s", "t", "loop").describe() == "loop back-edge -> t"


def test_reading_the_event_log_counts_what_the_events_count(tmp_path: Path) -> None:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path, ("review",))
    log = outcome.path / "events.jsonl"
    from_events, from_file = Taken(), Taken()
    collect(events_of(outcome), from_events)
    with log.open("a", encoding="utf-8") as torn:
        torn.write('{"kind": "step_start", "flow_key": "rev')  # a run cut off mid-line
    collect_file(log, from_file)
    assert from_file.as_dict() == from_events.as_dict()


def test_each_tool_a_step_names_is_reported_called_or_not_outside_the_percentage(
    tmp_path: Path,
) -> None:
    flows = tmp_path / "flows"
    research = step_yaml("research") + "    tools: [search, fetch_page]\n"
    write_flow(flows, "support", [research, step_yaml("answer")])
    calls = [{"tool": "search", "input": {"q": "refunds"}}, {"tool": "search", "input": {}}]
    outcome = run_flows(flows, tmp_path / "runs", scenario={"research": {"tools": calls}})
    taken, from_file = Taken(), Taken()
    collect(events_of(outcome), taken)
    collect_file(outcome.path / "events.jsonl", from_file)
    assert from_file.as_dict() == taken.as_dict()
    handed = Taken()
    handed.merge(taken.as_dict())  # as an xdist worker hands its counts over
    assert handed.tools == taken.tools == {("support", "research", "search"): 2}
    report = coverage_report.build(_universe(flows), handed)
    assert report["flows"]["support"]["tools"] == [
        {"step": "research", "tool": "search", "called": 2},
        {"step": "research", "tool": "fetch_page", "called": 0},
    ]
    assert report["tools"] == {"called": 1, "total": 2}
    assert report["percent"] == 100.0  # every step and edge taken; tools are no part of it
    assert coverage_report.uncalled(report) == ["support/research: fetch_page never called"]
    rows = [row.split() for row in coverage_report.table(report)]
    assert rows[0] == ["flow", "steps", "edges", "tools", "covered"]
    assert rows[1:] == [
        ["support", "2/2", "1/1", "1/2", "100.0%"],
        ["total", "2/2", "1/1", "1/2", "100.0%"],
    ]
    text = coverage_report.markdown(report)
    assert "| flow | steps | edges | tools | covered |" in text
    assert "- `fetch_page` in `support/research`" in text
    assert coverage_report.problem(report) is None
    report["flows"]["support"]["tools"][0]["tool"] = "search\x1b[2J"
    assert "tool 'search\\x1b[2J' holds a control character" in str(coverage_report.problem(report))


def test_a_report_of_flows_without_tools_has_no_tools_column() -> None:
    report = coverage_report.build(_universe(SHIPPED_FLOWS), Taken())
    assert report["tools"] == {"called": 0, "total": 0}
    assert coverage_report.table(report)[0].split() == ["flow", "steps", "edges", "covered"]
    del report["tools"]  # a report written before tools were counted
    for flow in report["flows"].values():
        del flow["tools"]
    assert coverage_report.problem(report) is None
    assert coverage_report.uncalled(report) == []
