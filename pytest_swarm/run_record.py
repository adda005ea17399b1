"""RunRecord: a finished run as a test sees it, read back from its directory."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swarm_runtime.documents.payload import Event
    from swarm_runtime.engines.base import StepResult
    from swarm_runtime.flow.registry import FlowRegistry

StepKey = tuple[str, str]
"""``(flow_key, step_id)``."""


def _execution_order(path: Path) -> tuple[int, int]:
    # step-agent~1.json, ~2, … are earlier executions; the plain name is the latest.
    stem = path.name.split(".")[0]
    if "~" in stem:
        return (0, int(stem.rsplit("~", 1)[1]))
    return (1, 0)


class RunStatus(str):
    """A run's status: the word itself (compared, printed, serialised as such).

    Its repr carries the cause when the run did not succeed.
    """

    record: RunRecord | None

    def __new__(cls, value: str, record: RunRecord | None = None) -> RunStatus:
        status = super().__new__(cls, value)
        status.record = record
        return status

    def __repr__(self) -> str:
        word = str.__repr__(self)
        if self == "succeeded" or self.record is None:
            return word
        return f"{word} ({self.record.cause()})"

    def __reduce__(self) -> Any:
        return (str, (str(self),))  # a copy, or pickled, is the plain word


class RunRecord:
    """What a run wrote, keyed for tests.

    ``receipts`` and ``transcripts`` hold the latest execution of each ``(flow, step)``;
    ``executions`` holds every receipt of a step in execution order. ``events`` are the
    events as declared (attribute access); ``event_dicts`` the raw lines.
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
        self.reference = False
        """True for the stub run ``flow_runner.stub()`` makes as mode parity's reference."""
        self.volatile: set[str] = set()
        """Extra volatile keys added through the ``pytest_swarm_normalize`` hook."""
        self.expectations: list[tuple[str, bool]] | None = None
        """Where ``swarm_expect`` notes each check of this run and how it went (its test's
        flow runner's list; None: nowhere)."""
        self.budget_use: dict[str, str] = {}
        """Per flow (``""``: the run), the largest share of a declared budget the run used,
        e.g. ``83% (tokens of flow build)`` (in-process runs only)."""

    def __repr__(self) -> str:
        """The status and, for a run that did not succeed, why: the failing step first.

        pytest shows this under a failed ``assert record.status == "succeeded"`` (cut in
        the middle past 240 characters, so the step and result code come first).
        """
        try:
            status = self.status
        except (OSError, ValueError):
            return f"RunRecord({self.run_id!r}, meta.json unreadable, path={str(self.path)!r})"
        if status == "succeeded":
            return (
                f"RunRecord({self.run_id!r}, status='succeeded', flows={self.flow_keys!r}, "
                f"path={str(self.path)!r})"
            )
        return f"RunRecord({self.run_id!r}, status={status!r}: {self.cause()})"

    def cause(self) -> str:
        """Why the run did not succeed, in one line.

        The failing step, its result code and attempt, the error, and the last ``log``
        lines (retries and warnings).
        """
        try:
            events = self.event_dicts
        except (OSError, ValueError) as exc:
            return f"its event log cannot be read ({exc})"
        failed = next((e for e in reversed(events) if e.get("kind") == "step_error"), None)
        parts: list[str] = []
        if failed is not None:
            key = (str(failed.get("flow_key")), str(failed.get("step_id")))
            receipt = self.receipts.get(key, {})
            code = receipt.get("result_code") or "error"
            attempt = receipt.get("attempt")
            tries = f", attempt {attempt} of {receipt.get('max_attempts')}" if attempt else ""
            payload = failed.get("payload") or {}
            parts.append(f"failed at {key[0]}/{key[1]} ({code}{tries}): {payload.get('error')}")
        else:
            parts.append(str(self.summary.get("error") or "no step failed; see the event log"))
        logs = [e for e in events if e.get("kind") == "log"][-2:]
        for event in logs:
            payload = event.get("payload") or {}
            message = payload.get("message")
            error = payload.get("error")
            parts.append(f"log: {message}" + (f" ({error})" if error else ""))
        return "; ".join(parts)

    def raise_for_status(self) -> RunRecord:
        """Return the record of a run that succeeded; raise AssertionError saying why not."""
        if self.status != "succeeded":
            __tracebackhide__ = True
            raise AssertionError(
                f"run {self.run_id} {self.status}: {self.cause()}\n  run dir: {self.path}"
            )
        return self

    # -- run level --------------------------------------------------------------------

    @cached_property
    def summary(self) -> dict[str, Any]:
        """``meta.json``."""
        value: dict[str, Any] = json.loads((self.path / "meta.json").read_text("utf-8"))
        return value

    @property
    def flow_keys(self) -> list[str]:
        """The flows the run ran, in order (``flow_runner()`` with none named runs them all)."""
        flows = self.summary.get("flows")
        return [str(flow) for flow in flows] if isinstance(flows, list) else []

    @property
    def run_id(self) -> str:
        """The run's id (the directory name)."""
        return self.path.name

    @property
    def status(self) -> RunStatus:
        """succeeded, failed or stopped (from meta.json), a plain string to compare.

        Its repr says why a run did not succeed, so a failed ``assert record.status ==
        "succeeded"`` shows the cause in pytest's report.
        """
        return RunStatus(str(self.summary.get("status")), self)

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
        """The events, each as its kind declares it (``event.kind``, ``event.payload.status``).

        A line that is not the event its kind declares raises ValueError naming the line.
        """
        from swarm_runtime.documents.base import Invalid
        from swarm_runtime.documents.events import read_event

        events = []
        for line, event in enumerate(self.event_dicts, start=1):
            try:
                events.append(read_event(event))
            except Invalid as exc:
                raise ValueError(f"{self.path / 'events.jsonl'}:{line}: {exc}") from None
        return events

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
