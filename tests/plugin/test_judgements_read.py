"""Where a test's flow judges' judgements are looked for (docs/judges.md#judges).

Only a run whose flows (or a utility flow it may take a detour into) declare a judge can hold
a ``judgement`` event; the runs of every other test are not read again at the end of its
call, since most tests' flows have no judges.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_swarm.judges import flow_judgements, flow_judges_failed
from pytest_swarm.run_record import RunRecord
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.conftest import SHIPPED_FLOWS
from tests.plugin.projects import JUDGED_FLOW


def _record(flows: FlowRegistry, key: str, runs_dir: Path) -> RunRecord:
    outcome = Orchestrator(flows, runs_dir=runs_dir).run(RunSpec(flows=(key,)))
    assert outcome.status == "succeeded", outcome.error
    return RunRecord(outcome.path, flows=flows)


def _unread(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_record: RunRecord) -> None:
        raise AssertionError("the run's event log was read")

    monkeypatch.setattr(RunRecord, "event_dicts", property(refuse))


def test_a_run_whose_flows_have_no_judge_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flows = FlowRegistry(SHIPPED_FLOWS)
    record = _record(flows, "signal", tmp_path / "runs")
    _unread(monkeypatch)
    assert flow_judges_failed([record], flows) is None
    assert flow_judgements(record, flows) == []


def test_a_run_whose_flow_has_a_judge_gives_its_judgements(tmp_path: Path) -> None:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "support.yaml").write_text(JUDGED_FLOW, encoding="utf-8")
    flows = FlowRegistry(tmp_path / "flows")
    record = _record(flows, "support", tmp_path / "runs")
    found = flow_judgements(record, flows)
    assert [(where, execution, payload["name"]) for where, execution, payload in found] == [
        ("support/draft", 1, "tone")
    ]
    assert found[0][2]["passed"] is True
    assert flow_judges_failed([record], flows) is None


def test_without_the_flows_the_log_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flows = FlowRegistry(SHIPPED_FLOWS)
    record = _record(flows, "signal", tmp_path / "runs")
    _unread(monkeypatch)
    with pytest.raises(AssertionError, match="event log was read"):
        flow_judgements(record, None)
