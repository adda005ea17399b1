"""RunRecord: a finished run as a test sees it, read back from its directory."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swarm_runtime.contracts import Event
    from swarm_runtime.engines.base import StepResult
    from swarm_runtime.flow.registry import FlowRegistry

__all__ = ["RunRecord", "StepKey"]

StepKey = tuple[str, str]
"""``(flow_key, step_id)``."""


def _execution_order(path: Path) -> tuple[int, int]:
    # step-agent~1.json, ~2, … are earlier executions; the plain name is the latest.
    stem = path.name.split(".")[0]
    if "~" in stem:
        return (0, int(stem.rsplit("~", 1)[1]))
    return (1, 0)


class RunRecord:
    """What a run wrote, keyed for tests.

    ``receipts`` and ``transcripts`` hold the latest execution of each ``(flow, step)``;
    ``executions`` holds every receipt of a step in execution order. ``events`` are the
    event models (attribute access); ``event_dicts`` the raw lines.
    """

    def __init__(
        self,
        path: Path,
        *,
        flows: FlowRegistry | None = None,
        results: list[tuple[str, StepResult]] | None = None,
        mode: str = "stub",
    ) -> None:
        self.path = Path(path)
        self.flows = flows
        self.results: list[tuple[str, StepResult]] = list(results or [])
        """(flow key, StepResult) of every engine call, in order (in-process runs only)."""
        self.mode = mode
        self.volatile: set[str] = set()
        """Extra volatile keys added through the ``pytest_swarm_normalize`` hook."""

    def __repr__(self) -> str:
        return f"RunRecord({self.run_id!r}, status={self.status!r}, path={str(self.path)!r})"

    # -- run level --------------------------------------------------------------------

    @cached_property
    def summary(self) -> dict[str, Any]:
        """``meta.json``."""
        value: dict[str, Any] = json.loads((self.path / "meta.json").read_text("utf-8"))
        return value

    @property
    def run_id(self) -> str:
        """The run's id (the directory name)."""
        return self.path.name

    @property
    def status(self) -> str:
        """succeeded, failed or stopped (from meta.json)."""
        return str(self.summary.get("status"))

    @cached_property
    def spec(self) -> dict[str, Any]:
        """``spec.json``."""
        value: dict[str, Any] = json.loads((self.path / "spec.json").read_text("utf-8"))
        return value

    @cached_property
    def event_dicts(self) -> list[dict[str, Any]]:
        """The event lines as written (a torn last line is left out)."""
        from swarm_runtime.storage.store import read_event_log

        return read_event_log(self.path / "events.jsonl").events

    @cached_property
    def events(self) -> list[Event]:
        """The events as models (``event.kind``, ``event.payload.status``, …)."""
        from swarm_runtime.contracts import parse_event

        return [parse_event(event) for event in self.event_dicts]

    def add_volatile(self, key: str) -> None:
        """Mark a field name as volatile for normalisation (golden comparisons)."""
        self.volatile.add(key)

    # -- steps --------------------------------------------------------------------------

    @cached_property
    def executions(self) -> dict[StepKey, list[dict[str, Any]]]:
        """Every receipt of every step, in execution order."""
        found: dict[StepKey, list[tuple[tuple[int, int], dict[str, Any]]]] = {}
        for path in sorted(self.path.glob("*/receipts/*.json")):
            receipt = json.loads(path.read_text("utf-8"))
            key = (path.parent.parent.name, str(receipt.get("step_id")))
            found.setdefault(key, []).append((_execution_order(path), receipt))
        return {
            key: [r for _, r in sorted(items, key=lambda x: x[0])] for key, items in found.items()
        }

    @cached_property
    def receipts(self) -> dict[StepKey, dict[str, Any]]:
        """The latest receipt of each step."""
        return {key: runs[-1] for key, runs in self.executions.items()}

    @cached_property
    def transcripts(self) -> dict[StepKey, list[dict[str, Any]]]:
        """The lines of the latest transcript of each step."""
        found: dict[StepKey, list[dict[str, Any]]] = {}
        for key, receipt in self.receipts.items():
            path = self.path / key[0] / str(receipt.get("transcript_path", ""))
            if path.is_file():
                found[key] = [
                    json.loads(line) for line in path.read_text("utf-8").splitlines() if line
                ]
        return found

    def files(self) -> list[str]:
        """Every file of the run, relative to its directory, sorted."""
        return sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*") if p.is_file())

    def steps_executed(self) -> list[StepKey]:
        """``(flow, step)`` of every ``step_start``, in order."""
        return [
            (str(e.get("flow_key")), str(e.get("step_id")))
            for e in self.event_dicts
            if e.get("kind") == "step_start"
        ]
