"""The session's lines in ``swarm-results.jsonl``: one per test, one per judgement.

Written by the process that ran the test (an xdist worker, or the session itself), when
the test's teardown ends, under the file's lock (:func:`swarm_runtime.results.append`).
The lines of one session share its id: xdist's test run id, the same in every worker.

See docs/judges.md#the-results-file.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_swarm.judges import JudgeVerdict
    from pytest_swarm.run_record import RunRecord
    from swarm_runtime.flow.registry import FlowRegistry

OUTCOME_KEY = pytest.StashKey[str]()
"""How the test has gone so far: passed, failed or skipped."""


class ResultsLog:
    """Where the session appends, and what every line of it shares."""

    def __init__(self, path: Path, config: pytest.Config, mode: str) -> None:
        self.path = path
        workerinput: Any = getattr(config, "workerinput", None)
        self.session = str((workerinput or {}).get("testrunuid") or uuid.uuid4().hex)
        self.commit = git_commit(config.rootpath)
        self.mode = mode

    def write(
        self,
        nodeid: str,
        outcome: str,
        records: list[RunRecord],
        verdicts: list[JudgeVerdict],
        flows: FlowRegistry | None,
    ) -> None:
        """The test's line and one per judgement of its runs and its own judges."""
        from swarm_runtime.results import VERSION, append

        at = datetime.now(UTC).isoformat(timespec="seconds")
        base = {"v": VERSION, "session": self.session, "at": at, "commit": self.commit}
        base["mode"] = self.mode
        cost: float | None = 0.0
        tokens = 0
        for record in records:
            summary = record.summary
            tokens += int((summary.get("tokens") or {}).get("total", 0))
            spent = summary.get("cost_usd")
            cost = None if cost is None or spent is None else cost + float(spent)
        lines: list[dict[str, Any]] = [
            {
                **base,
                "kind": "test",
                "test": nodeid,
                "outcome": outcome,
                "runs": len(records),
                "tokens": tokens,
                "cost_usd": cost,
            }
        ]
        for record in records:
            lines.extend(
                {**base, **line, "test": nodeid} for line in _flow_judgements(record, flows)
            )
        lines.extend(
            {
                **base,
                "kind": "judge",
                "test": nodeid,
                "source": "test",
                "judge": verdict.name,
                "flow": verdict.flow,
                "step": verdict.step,
                "execution": verdict.execution,
                "model": verdict.model,
                "score": verdict.score,
                "threshold": verdict.threshold,
                "passed": verdict.passed,
                "cost_usd": verdict.cost_usd,
            }
            for verdict in verdicts
        )
        append(self.path, lines)


def _flow_judgements(record: RunRecord, flows: FlowRegistry | None) -> list[dict[str, Any]]:
    """A line per judgement the run's flow judges made: only judged steps' receipts are read."""
    import json

    if flows is None:
        return []
    lines: list[dict[str, Any]] = []
    for flow_key in record.flow_keys:
        try:
            judged = [step for step in flows.get(flow_key).steps if step.judges]
        except Exception:  # a flow no longer readable: its runs have no judges to report
            continue
        for step in judged:
            paths = sorted((record.path / flow_key / "receipts").glob(f"{step.id}-*.json"))
            receipts = [json.loads(path.read_text("utf-8")) for path in paths]
            receipts.sort(key=lambda r: int(r.get("iteration") or 0))
            for receipt in receipts:
                for judgement in receipt.get("judgements") or ():
                    lines.append(
                        {
                            "kind": "judge",
                            "source": "flow",
                            "judge": judgement.get("name"),
                            "flow": flow_key,
                            "step": step.id,
                            "execution": int(receipt.get("iteration") or 0) + 1,
                            "model": judgement.get("model"),
                            "score": judgement.get("score"),
                            "threshold": judgement.get("threshold"),
                            "passed": judgement.get("passed"),
                            "cost_usd": judgement.get("cost_usd"),
                        }
                    )
    return lines


def git_commit(root: Path) -> str | None:
    """The commit checked out at ``root`` (or above it), read from ``.git``; None outside git."""
    for folder in (root, *root.parents):
        git = folder / ".git"
        if git.is_file():  # a worktree: "gitdir: PATH"
            text = git.read_text("utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            git = (folder / text.partition(":")[2].strip()).resolve()
        if git.is_dir():
            return _head(git)
    return None


def _head(git: Path) -> str | None:
    try:
        head = (git / "HEAD").read_text("utf-8").strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head.partition(":")[2].strip()
        for base in (git, _common(git)):
            loose = base / ref
            if loose.is_file():
                return loose.read_text("utf-8").strip() or None
            packed = base / "packed-refs"
            if packed.is_file():
                for line in packed.read_text("utf-8").splitlines():
                    if line.endswith(" " + ref):
                        return line.split(" ", 1)[0]
    except OSError:
        return None
    return None


def _common(git: Path) -> Path:
    """A worktree's shared git dir (``commondir``), else ``git`` itself."""
    common = git / "commondir"
    if common.is_file():
        return (git / common.read_text("utf-8").strip()).resolve()
    return git
