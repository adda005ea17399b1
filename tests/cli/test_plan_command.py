"""``swarm plan validate|run``, as a user runs them: real processes, the shipped example plan."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import AnthropicServer

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "plans" / "answer-with-memory.json"


def _swarm(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    clean["SWARM_CACHE_DIR"] = os.environ["SWARM_CACHE_DIR"]
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's repository with a README and the example plan copied in."""
    (tmp_path / "README.md").write_text(
        "# Billing\n\nRotate the postgres credentials every 90 days with the vault CLI.\n"
    )
    shutil.copy(EXAMPLE, tmp_path / "plan.json")
    return tmp_path


def _plan(project: Path) -> dict[str, Any]:
    return json.loads((project / "plan.json").read_text())


def _receipt(run_dir: Path, step: str, agent: str) -> dict[str, Any]:
    return json.loads((run_dir / "cycle" / "receipts" / f"{step}-{agent}.json").read_text())


def _result(run_dir: Path, step: str, agent: str) -> Any:
    """A local step's result, as its transcript's assistant line holds it."""
    path = run_dir / "cycle" / "llm" / f"{step}-{agent}-local.jsonl"
    return json.loads(json.loads(path.read_text().splitlines()[-1])["content"])


def _runs(project: Path) -> list[Path]:
    """The cycles' run dirs in the order they ran (ids made in one second do not sort so)."""
    return sorted(
        (project / "swarm" / "runs").iterdir(),
        key=lambda run: json.loads((run / "meta.json").read_text())["created_at"],
    )


def test_validate_says_a_good_plan_is_valid_and_names_each_broken_rule(project: Path) -> None:
    good = _swarm(project, "plan", "validate", "plan.json")
    assert good.returncode == 0 and "a valid v1 plan" in good.stdout
    plan = _plan(project)
    plan["steps"][3], plan["steps"][4] = plan["steps"][4], plan["steps"][3]
    del plan["metadata"]["topK"]
    (project / "bad.json").write_text(json.dumps(plan))
    bad = _swarm(project, "plan", "validate", "bad.json")
    assert bad.returncode == 2
    assert "steps[4].type (step 'assemble'): PromptAssemble comes after LLMCall" in bad.stderr
    assert "metadata.topK (step 'recall'): is not set [rule 'topK'" in bad.stderr
    (project / "torn.json").write_text('{"steps": [')
    torn = _swarm(project, "plan", "validate", "torn.json")
    assert torn.returncode == 2 and "torn.json:1:12: not valid JSON" in torn.stderr
    assert "Traceback" not in bad.stderr + torn.stderr


def test_memories_of_one_process_come_back_in_the_next(project: Path) -> None:
    first = _swarm(
        project, "plan", "run", "plan.json", "--input", "how do we rotate postgres credentials?"
    )
    assert first.returncode == 0, first.stderr
    assert "cycle 1: succeeded" in first.stdout
    second = _swarm(
        project,
        "plan",
        "run",
        "plan.json",
        "--input",
        "postgres credential rotation policy",
        "--input",
        "banana bread",
        "--session",
        "team-a",
    )
    assert second.returncode == 0, second.stderr
    assert "session team-a; store swarm/plan-store.sqlite3" in second.stdout
    first_run, related, unrelated = _runs(project)
    items = _result(related, "recall", "retrieve-memory")["items"]
    assert len(items) == 1 and "rotate postgres credentials" in items[0]["summary"]
    assert _receipt(first_run, "remember", "persist-memory")["status"] == "succeeded"
    assert _result(unrelated, "recall", "retrieve-memory") == {"items": []}
    for run_dir in (first_run, related, unrelated):
        check = _swarm(project, "runs", "validate", str(run_dir))
        assert check.returncode == 0 and "no violations" in check.stdout


def test_top_k_bounds_what_comes_back(project: Path) -> None:
    plan = _plan(project)
    plan["metadata"]["topK"] = 2
    (project / "plan.json").write_text(json.dumps(plan))
    inputs = [f"postgres credentials note {n}" for n in range(4)]
    args = [arg for text in inputs for arg in ("--input", text)]
    assert _swarm(project, "plan", "run", "plan.json", *args).returncode == 0
    last = _runs(project)[-1]
    assert len(_result(last, "recall", "retrieve-memory")["items"]) == 2


def test_a_failfast_step_exits_3_and_stores_nothing_half(project: Path) -> None:
    plan = _plan(project)
    plan["steps"][-1]["payload"] = {"meta": {}}  # PersistSession without its sessionRef
    (project / "plan.json").write_text(json.dumps(plan))
    done = _swarm(project, "plan", "run", "plan.json", "--input", "postgres", "--input", "two")
    assert done.returncode == 3
    assert "FailFast: step 'session' (PersistSession) failed: payload.sessionRef is missing" in (
        done.stderr
    )
    assert "(1 input(s) not run)" in done.stderr and "Traceback" not in done.stderr
    (run_dir,) = _runs(project)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1]["kind"] == "run_completed" and events[-1]["payload"]["status"] == "failed"
    with sqlite3.connect(project / "swarm" / "plan-store.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0


def test_a_cyclefail_step_fails_its_cycle_and_the_next_one_runs(project: Path) -> None:
    plan = _plan(project)
    plan["steps"][1]["payload"]["sources"] = [{"$ref": "input"}]  # the input names the file
    (project / "plan.json").write_text(json.dumps(plan))
    done = _swarm(
        project, "plan", "run", "plan.json", "--input", "missing.md", "--input", "README.md"
    )
    assert done.returncode == 1
    assert "cycle 1: failed" in done.stdout and "cycle 2: succeeded" in done.stdout
    assert "step 'context' (ContextSelect) failed: payload.sources[0] 'missing.md'" in done.stderr
    assert len(_runs(project)) == 2


def test_a_recorded_cycle_replays_with_no_server(project: Path) -> None:
    repo = project / "repo"  # what the runs, the store and the cassettes write stays out of it
    repo.mkdir()
    shutil.move(project / "README.md", repo / "README.md")
    cycle = ["plan", "run", "plan.json", "--repo", "repo", "--input", "postgres"]
    key = {"ANTHROPIC_BASE_URL": "", "ANTHROPIC_API_KEY": "sk-ant-plan-not-a-key"}
    server = AnthropicServer().start()
    try:
        key["ANTHROPIC_BASE_URL"] = server.url
        recorded = _swarm(
            project, *cycle, "--mode", "record", "--cassette-dir", "cas", "--runs-dir", "a", env=key
        )
    finally:
        server.stop()
    assert recorded.returncode == 0, recorded.stderr
    cassette = project / "cas" / "cycle" / "answer-llm-call-0.yaml"
    assert cassette.is_file() and "sk-ant-plan-not-a-key" not in cassette.read_text()
    (project / "swarm" / "plan-store.sqlite3").unlink()  # the same memories as when recorded
    replayed = _swarm(
        project, *cycle, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b"
    )
    assert replayed.returncode == 0, replayed.stderr
    (a,) = (project / "a").iterdir()
    (b,) = (project / "b").iterdir()
    answer_a, answer_b = _receipt(a, "answer", "llm-call"), _receipt(b, "answer", "llm-call")
    assert answer_b["mode"] == "sdk" and answer_b["cassette"] == "cycle/answer-llm-call-0.yaml"
    assert answer_a["tokens"] == answer_b["tokens"] and answer_a["model"] == answer_b["model"]
    two = _swarm(project, *cycle, "--input", "b", "--mode", "replay", "--cassette-dir", "cas")
    assert two.returncode == 2 and "give one --input" in two.stderr


def test_runtime_yamls_run_budget_bounds_a_cycle_as_it_bounds_a_run(project: Path) -> None:
    (project / "runtime.yaml").write_text("budget:\n  tokens: 10\n")
    done = _swarm(
        project, "plan", "run", "plan.json", "--input", "postgres", "--config", "runtime.yaml"
    )
    assert done.returncode == 1
    assert "step 'answer' (LLMCall) failed: budget_exceeded" in done.stderr
    (run_dir,) = _runs(project)
    assert not (run_dir / "cycle" / "receipts" / "summarize-summarize-memory.json").exists()
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["origin"]["budget"] == {"tokens": 10}  # a resume keeps it
