"""Reading one run's files for the studio, fenced inside the runs dir.

Everything the studio serves comes through :class:`RunFiles`. A run id must match the run
id pattern, and every other part of a path (flow key, step id, agent key, file name) its
own pattern, before any path is built; then each directory on the way is checked with
``lstat`` and a symlink is refused, and files are opened with ``O_NOFOLLOW``. A request for
anything else is :class:`NotFound`, decided without touching the file system outside the
runs dir.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from swarm_runtime.ids import FLOW_KEY_RE, RUN_ID_RE, STEP_ID_RE
from swarm_runtime.inputs.files import read_bytes_limited
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.inputs.limits import MAX_RUN_FILE_BYTES, InputRefused

LIVE_STATUSES = frozenset({"pending", "running", "paused"})
"""Statuses whose run may still change while the studio looks at it."""

_RECEIPT_RE = re.compile(r"^([a-z][a-z0-9_]*)-([a-z][a-z0-9-]*)(?:~([1-9][0-9]{0,5}))?\.json$")
_TRANSCRIPT_RE = re.compile(r"^llm/([a-z][a-z0-9_]*-[a-z][a-z0-9_-]*(?:~[1-9][0-9]{0,5})?\.jsonl)$")
_MAX_SERVED_BYTES = 32 << 20
"""The largest transcript or receipt sent to a browser: 32 MiB."""


class NotFound(LookupError):
    """What was asked for is not a file of a run in this runs dir (the message says which)."""


GOLDEN_PREFIX = "golden:"
GOLDEN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class RunFiles:
    """Fenced, read-only access to the runs of one runs dir."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = Path(runs_dir).absolute()
        self.golden_dir: Path | None = None
        """Where ``golden:<name>`` runs are (read like runs, never run or controlled)."""

    def run_dir(self, run_id: str) -> Path:
        """The directory of run ``run_id`` or ``golden:<name>``; NotFound if there is none.

        A bad id, a symlink or a file is no run.
        """
        if run_id.startswith(GOLDEN_PREFIX):
            name = run_id[len(GOLDEN_PREFIX) :]
            if self.golden_dir is None or not GOLDEN_NAME_RE.fullmatch(name):
                raise NotFound(f"no golden run {name!r}")
            return self._real_dir(
                self.golden_dir / name, f"golden run {name!r} in {self.golden_dir}"
            )
        if not RUN_ID_RE.fullmatch(run_id):
            raise NotFound(f"{run_id!r} is not a run id (run-YYYYMMDD-HHMMSS-xxxxxx)")
        return self._real_dir(self.runs_dir / run_id, f"run {run_id}")

    def _real_dir(self, path: Path, what: str) -> Path:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            raise NotFound(f"no {what}") from None
        if not stat.S_ISDIR(mode):
            raise NotFound(f"no {what} (not a directory)")
        return path

    def read_json(self, path: Path, *, limit: int = MAX_RUN_FILE_BYTES) -> Any:
        """A JSON document of a run (no symlink); NotFound when missing or not JSON."""
        try:
            return load_json(read_bytes_limited(path, limit, nofollow=True))
        except (OSError, InputRefused, ValueError) as exc:
            raise NotFound(f"{path.name}: {_reason(exc)}") from None

    def meta(self, run_dir: Path) -> dict[str, Any]:
        """The run's ``meta.json`` (not followed if a symlink), or ``{}`` when there is none."""
        return self.meta_and_problem(run_dir)[0]

    def meta_and_problem(self, run_dir: Path) -> tuple[dict[str, Any], str | None]:
        """The run's ``meta.json`` and None; ``{}`` and why when it is there but refused.

        Refused: a symlink, a FIFO, too big, not a JSON object.
        """
        path = run_dir / "meta.json"
        try:
            meta = self.read_json(path)
        except NotFound as exc:
            return {}, (str(exc) if os.path.lexists(path) else None)
        if not isinstance(meta, dict):
            return {}, "meta.json: not a JSON object"
        return meta, None

    def read_lines(self, path: Path) -> list[Any]:
        """A JSON-lines file of a run; a line that is not JSON is kept as its text."""
        try:
            raw = read_bytes_limited(path, _MAX_SERVED_BYTES, nofollow=True)
        except (OSError, InputRefused) as exc:
            raise NotFound(f"{path.name}: {_reason(exc)}") from None
        lines: list[Any] = []
        for text in raw.decode("utf-8", errors="replace").splitlines():
            if not text.strip():
                continue
            try:
                lines.append(load_json(text))
            except ValueError:
                lines.append({"unparsed": text})
        return lines

    def flow_dir(self, run_id: str, flow_key: str, sub: str) -> Path:
        """``<run>/<flow>/<sub>`` for ``sub`` in receipts, llm; each level checked."""
        if not FLOW_KEY_RE.fullmatch(flow_key) or sub not in ("receipts", "llm"):
            raise NotFound(f"{flow_key!r} is not a flow key")
        flow = self._real_dir(self.run_dir(run_id) / flow_key, f"flow {flow_key} in {run_id}")
        return self._real_dir(flow / sub, f"{sub} of {flow_key} in {run_id}")

    def step(
        self, run_id: str, flow_key: str, step_id: str, iteration: int | None
    ) -> dict[str, Any]:
        """A step's receipt, transcript, handoff and tool calls: its latest execution or one."""
        if not STEP_ID_RE.fullmatch(step_id):
            raise NotFound(f"{step_id!r} is not a step id")
        receipts = self.flow_dir(run_id, flow_key, "receipts")
        found: list[tuple[int, str, dict[str, Any]]] = []
        with os.scandir(receipts) as entries:
            for entry in entries:
                match = _RECEIPT_RE.fullmatch(entry.name)
                if match is None or match.group(1) != step_id:
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                receipt = self.read_json(receipts / entry.name, limit=_MAX_SERVED_BYTES)
                if isinstance(receipt, dict):
                    # ~1, ~2 … are earlier executions, in order; the plain name is the latest
                    found.append((int(match.group(3) or 1 << 30), entry.name, receipt))
        if not found:
            raise NotFound(f"no receipt of step {step_id} in {flow_key} of {run_id}")
        found.sort(key=lambda item: item[0])
        iterations = [_iteration(item[2], index) for index, item in enumerate(found)]
        chosen = len(found) - 1 if iteration is None else _index_of(iterations, iteration, step_id)
        order, name, receipt = found[chosen]
        return {
            "run_id": run_id,
            "flow_key": flow_key,
            "step_id": step_id,
            "receipt_file": f"{flow_key}/receipts/{name}",
            "iteration": iterations[chosen],
            "iterations": iterations,
            "receipt": receipt,
            "handoff": receipt.get("handoff"),
            "tool_calls": self._tool_calls(run_id, flow_key, step_id, iterations[chosen], chosen),
            "transcript": self._transcript(
                run_id, flow_key, receipt, None if order == 1 << 30 else order
            ),
        }

    def _tool_calls(
        self, run_id: str, flow_key: str, step_id: str, iteration: int, index: int
    ) -> list[dict[str, Any]]:
        """The tool calls of one execution of a step, in order, from the event log.

        The execution whose ``step_start`` has the receipt's iteration (the last, when a
        crash made it run twice), else the ``index``-th; a call still running has
        ``success`` None.
        """
        from swarm_runtime.contracts.tools import INTERRUPTED, step_executions
        from swarm_runtime.studio.tail import EventTail

        events = EventTail(self.run_dir(run_id) / "events.jsonl").read_all()
        runs = [
            execution
            for execution in step_executions(enumerate(events, start=1))
            if (execution.flow_key, execution.step_id) == (flow_key, step_id)
            and execution.error != INTERRUPTED
        ]
        same = [execution for execution in runs if execution.iteration == iteration]
        chosen = same[-1] if same else runs[index] if index < len(runs) else None
        return [
            {
                "tool": call.tool,
                "input": call.input,
                "success": call.success,
                "output": call.output,
                "ms": call.ms(),
                "started_at": call.started,
            }
            for call in (chosen.calls if chosen else ())
        ]

    def _transcript(
        self, run_id: str, flow_key: str, receipt: dict[str, Any], earlier: int | None
    ) -> list[Any]:
        # A receipt names its transcript before both are moved aside as ``~N`` when the step
        # runs again (docs/contract/run-dir.md): the transcript of receipt ``~N`` is ``~N`` too.
        match = _TRANSCRIPT_RE.fullmatch(str(receipt.get("transcript_path") or ""))
        if match is None:
            return []
        name = match.group(1)
        if earlier is not None:
            name = re.sub(r"(~[0-9]+)?\.jsonl$", f"~{earlier}.jsonl", name)
        path = self.flow_dir(run_id, flow_key, "llm") / name
        try:
            return self.read_lines(path)
        except NotFound:
            return []


def _reason(exc: Exception) -> str:
    """Why a run file could not be served, in our words (the OS's reason in brackets)."""
    if isinstance(exc, InputRefused):
        return str(exc)
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON (line {exc.lineno})"
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or exc})"
    return "not valid JSON"


def _iteration(receipt: dict[str, Any], index: int) -> int:
    value = receipt.get("iteration")
    return value if isinstance(value, int) and not isinstance(value, bool) else index


def _index_of(iterations: list[int], iteration: int, step_id: str) -> int:
    if iteration not in iterations:
        raise NotFound(f"step {step_id} has no iteration {iteration} (it has {iterations})")
    return iterations.index(iteration)


def run_row(
    files: RunFiles, run_id: str, read: tuple[dict[str, Any], str | None] | None = None
) -> dict[str, Any]:
    """The list row of one run: what ``meta.json`` says, its status as seen from outside.

    ``read`` is what :meth:`RunFiles.meta_and_problem` gave, when it was called already. Why
    a ``meta.json`` that is there was refused is the row's error. A run without one is
    ``pending`` (being made); a golden run is a record, never under way: ``unreadable``.
    """
    from swarm_runtime.storage.status import observed_status

    run_dir = files.run_dir(run_id)
    meta, problem = files.meta_and_problem(run_dir) if read is None else read
    if meta:
        status = observed_status(run_dir, meta)
    else:
        status = "unreadable" if run_id.startswith(GOLDEN_PREFIX) else "pending"
    if status in LIVE_STATUSES:  # meta.json changes with the status, the checkpoint each step
        meta = {**meta, **_live_counters(files, run_dir)}
    tokens = meta.get("tokens")
    listed = meta.get("flows")
    flows: list[Any] = listed if isinstance(listed, list) else []
    return {
        "run_id": run_id,
        "status": status,
        "flows": [str(f) for f in flows],
        "backend": _text(meta.get("backend")),
        "mode": _text(meta.get("mode")),
        "steps": _number(meta.get("total_steps_executed")),
        "loops": _number(meta.get("loop_iterations")),
        "tokens": _number(tokens.get("total")) if isinstance(tokens, dict) else 0,
        "cost_usd": _number(meta.get("cost_usd"), float),
        "created_at": _text(meta.get("created_at")) or _created_from_id(run_id),
        "completed_at": _text(meta.get("completed_at")),
        "error": problem or _text(meta.get("error")),
    }


def _live_counters(files: RunFiles, run_dir: Path) -> dict[str, Any]:
    """A live run's counters as ``meta.json`` words them, from ``checkpoint.json``."""
    try:
        checkpoint = files.read_json(run_dir / "checkpoint.json")
    except NotFound:
        return {}
    totals = checkpoint.get("totals") if isinstance(checkpoint, dict) else None
    if not isinstance(totals, dict):
        return {}
    tokens = _number(totals.get("prompt_tokens")) + _number(totals.get("completion_tokens"))
    cost = _number(totals.get("cost_usd"), float)
    return {
        "total_steps_executed": _number(totals.get("executed")),
        "loop_iterations": _number(totals.get("loops")),
        "tokens": {"total": tokens},
        "cost_usd": None if _number(totals.get("steps_without_cost")) else round(cost, 6),
    }


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _number(value: Any, kind: type = int) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return kind(0)
    return kind(value)


def _created_from_id(run_id: str) -> str | None:
    if not RUN_ID_RE.fullmatch(run_id):
        return None  # golden:<name>
    day, clock = run_id.split("-")[1:3]
    return f"{day[:4]}-{day[4:6]}-{day[6:]}T{clock[:2]}:{clock[2:4]}:{clock[4:]}Z"
