"""Judges on a step, as ``swarm`` runs and checks them (docs/judges.md#judges).

A flow's ``judges:`` are read with the step: each mistake is a flow error naming the file,
the line, the step and the field (an engine no plugin registers too), reported by ``swarm
flows validate`` and refused by ``swarm run`` before it writes. A stub run grades each
execution, writes the verdicts to the receipt and the event log, prints them, and a
verdict that fails does not fail the run.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

NOTES = "teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}"
FLOW = f"""\
key: support
title: Support
description: Drafts a reply.
steps:
  - id: draft
    agents: [writer]
    role: Draft the reply.
    {NOTES}
    judges:
      - name: tone
        rubric: The reply is polite.
        threshold: 0.7
      - name: facts
        rubric: The reply names the amount.
        threshold: 0.5
        min_pass_rate: 0.9
"""

Run = Callable[..., subprocess.CompletedProcess[str]]


def _project(root: Path, flow: str = FLOW) -> None:
    (root / "flows").mkdir()
    (root / "flows" / "support.yaml").write_text(flow)
    (root / "flows" / "flows.yaml").write_text("order: [support]\n")


def test_a_stub_run_grades_prints_and_keeps_each_verdict(
    swarm_process: Run, tmp_path: Path
) -> None:
    _project(tmp_path)
    (tmp_path / "scenario.yaml").write_text(
        "draft: [{text: first}, {text: second}]\n"
        "judges:\n  draft:\n    facts: [{score: 0.2, reason: no amount}, 0.9]\n"
    )
    result = swarm_process("run", "--runs-dir", "runs", "--scenario", "scenario.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "judge facts on support/draft: 0.2 (threshold 0.5) FAILED: no amount" in result.stdout
    assert "judge tone on support/draft: 1 (threshold 0.7) passed" in result.stdout
    (run,) = (tmp_path / "runs").glob("run-*")
    receipt = json.loads((run / "support" / "receipts" / "draft-writer.json").read_text())
    assert [(j["name"], j["score"], j["passed"]) for j in receipt["judgements"]] == [
        ("tone", 1.0, True),
        ("facts", 0.2, False),
    ]
    kinds = [json.loads(line)["kind"] for line in (run / "events.jsonl").read_text().splitlines()]
    at = kinds.index("step_start")
    assert kinds[at : at + 4] == ["step_start", "judgement", "judgement", "step_end"], kinds
    judge_log = run / "support" / "llm" / "draft-judge-facts-0.jsonl"
    lines = [json.loads(line) for line in judge_log.read_text().splitlines()]
    assert [line["role"] for line in lines] == ["system", "user", "assistant"]
    assert "The reply names the amount." in lines[1]["content"]  # the rubric it was given
    assert "first" in lines[1]["content"]  # and the reply it graded
    assert swarm_process("runs", "validate", run.name, "--runs-dir", "runs").returncode == 0


@pytest.mark.parametrize(
    ("change", "line", "says"),
    [
        ("threshold: 0.7", 12, "field 'judges.tone.threshold': must be from 0 to 1, got 7"),
        ("rubric: The reply is polite.", 10, "a judge needs rubric (it has: name, threshold)"),
        ("name: facts", 13, "judge name 'tone' is given twice"),
        ("min_pass_rate: 0.9", 16, "judges.facts.min_pass_rate': must be a number from 0 to 1"),
        ("threshold: 0.5", 15, "unknown key 'treshold' in a judge"),
        ("name: tone", 10, "judge name 'Tone!' is invalid"),
        ("agents: [writer]", 10, "judge 'tone' and agent 'judge-tone' would share their"),
    ],
    ids=["threshold", "no-rubric", "twice", "rate", "key-typo", "name", "agent"],
)
def test_each_judge_mistake_is_a_flow_error_with_its_line(
    swarm_process: Run, tmp_path: Path, change: str, line: int, says: str
) -> None:
    broken = {
        "threshold: 0.7": "threshold: 7",
        "rubric: The reply is polite.": "",
        "name: facts": "name: tone",
        "min_pass_rate: 0.9": "min_pass_rate: lots",
        "threshold: 0.5": "treshold: 0.5",
        "name: tone": "name: Tone!",
        "agents: [writer]": "agents: [writer, judge-tone]",
    }[change]
    _project(tmp_path, FLOW.replace(change, broken))
    for command in (("flows", "validate"), ("run", "--runs-dir", "runs")):
        result = swarm_process(*command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        found = re.search(rf"support\.yaml:{line}, .*", result.stderr)
        assert found is not None and says in found.group(0), result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_judge_engine_no_plugin_registers_is_refused_with_its_line(
    swarm_process: Run, tmp_path: Path
) -> None:
    engine = "threshold: 0.7\n        engine: grader\n"
    _project(tmp_path, FLOW.replace("threshold: 0.7\n", engine))
    for command in (("flows", "validate"), ("run", "--runs-dir", "runs")):
        result = swarm_process(*command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        found = re.search(r"support\.yaml:10, .*", result.stderr)
        assert found is not None, result.stderr
        assert "field 'judges.tone.engine'" in found.group(0)
        assert "judge 'tone': no engine 'grader' (registered: " in found.group(0)
    assert not (tmp_path / "runs").exists()


def test_a_scripted_score_outside_zero_to_one_fails_the_judgement_saying_so(
    swarm_process: Run, tmp_path: Path
) -> None:
    _project(tmp_path)
    (tmp_path / "scenario.yaml").write_text(
        "judges:\n  draft:\n    tone: 7\n    facts: {text: 'no block at all'}\n"
    )
    result = swarm_process("run", "--runs-dir", "runs", "--scenario", "scenario.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "judge tone on support/draft: no score (threshold 0.7) FAILED: " in out
    assert "the judge's score 7 is outside [0, 1]" in out
    assert "judge facts on support/draft: no score (threshold 0.5) FAILED: " in out
    assert "the judge's reply has no handoff block with a score" in out


def test_a_judges_tokens_count_in_the_flows_budget(swarm_process: Run, tmp_path: Path) -> None:
    _project(tmp_path, FLOW.replace("steps:\n", "budget: {tokens: 100}\nsteps:\n", 1))
    (tmp_path / "scenario.yaml").write_text("draft: {tokens: {prompt: 10, completion: 10}}\n")
    result = swarm_process("run", "--runs-dir", "runs", "--scenario", "scenario.yaml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "budget_exceeded" in result.stderr and "flow budget of 'support'" in result.stderr
    (run,) = (tmp_path / "runs").glob("run-*")
    receipt = json.loads((run / "support" / "receipts" / "draft-writer.json").read_text())
    assert receipt["tokens"]["total"] == 20  # the step alone is well within the budget
    assert receipt["result_code"] == "fatal" and len(receipt["judgements"]) == 2
    meta = json.loads((run / "meta.json").read_text())
    assert meta["tokens"]["total"] > 100  # the judges' calls are in the run's totals
