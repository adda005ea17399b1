"""Text output of the CLI: the per-step progress line, the final table, how a run ended."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from swarm_runtime.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.state import RunOutcome
    from swarm_runtime.plugins import SwarmPlugins


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain aligned table: numbers right-aligned, text left-aligned."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [
        all(isinstance(row[i], int | float) for row in rows) if rows else False
        for i in range(len(headers))
    ]

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if numeric[i] else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out.extend(line(row) for row in cells[1:])
    return "\n".join(out)


def run_table(
    summary: dict[str, Any], wall_ms: int, budget_use: dict[str, str] | None = None
) -> str:
    """The table ``swarm run`` prints at the end: one row per flow, then the total.

    With budgets declared (``budget_use``), a last column shows per flow the largest
    share of any budget used, and on the total row the run budget's.
    """
    rows: list[list[object]] = []
    for flow, totals in summary.get("flow_totals", {}).items():
        rows.append(
            [
                flow,
                totals["steps_executed"],
                totals["loop_iterations"],
                totals["tokens"],
                _cost(totals.get("cost_usd")),
                totals["duration_ms"],
            ]
        )
    flows_ms = sum(int(totals["duration_ms"]) for totals in summary.get("flow_totals", {}).values())
    rows.append(
        [
            "total",
            summary["total_steps_executed"],
            summary["loop_iterations"],
            summary["tokens"]["total"],
            _cost(summary.get("cost_usd")),
            max(wall_ms, flows_ms),  # the run's time holds every flow's, to the millisecond
        ]
    )
    headers = ["flow", "steps", "loops", "tokens", "cost_usd", "time_ms"]
    if budget_use:
        headers.append("budget")
        keys = [*summary.get("flow_totals", {}), ""]
        for row, key in zip(rows, keys, strict=True):
            row.append(budget_use.get(key, "\u2014" if key else ""))
    table = format_table(headers, rows)
    unknown = summary.get("steps_without_cost") or 0
    if unknown:
        table += (
            f"\n\u2014 cost unknown: {unknown} step execution(s) used a model that is not in the "
            "price table (the engine's prices in runtime.yaml add it: engines.claude.prices, "
            "engines.openai.prices)"
        )
    return table


def _cost(value: object) -> str:
    """A cost cell: four decimals, or a dash when the cost is unknown (never a made-up 0)."""
    return f"{value:.4f}" if isinstance(value, int | float) else "\u2014"


def listeners(progress: str) -> SwarmPlugins:
    """The process's plugins, with the progress lines beside them when ``--progress`` asks.

    ``auto`` shows them on a terminal only; ``always`` and ``never`` say it outright.
    """
    from swarm_runtime.plugins import process_plugins

    show = progress == "always" or (progress == "auto" and sys.stdout.isatty())
    plugins = process_plugins()
    return plugins.with_listeners(ProgressPrinter(sys.stdout)) if show else plugins


class ProgressPrinter:
    """A listener that prints a line per step as it starts and as it finishes.

    On a terminal the start line ("[ .. ] flow/step") is replaced by the finish line, so
    the screen shows what is running now and one line per finished step.
    """

    def __init__(self, stream: TextIO, *, live: bool | None = None) -> None:
        self.stream = stream
        self.live = stream.isatty() if live is None else live

    def swarm_event(self, event: dict[str, Any]) -> None:
        """Print the line of ``event``, if it makes one."""
        kind = event["kind"]
        payload = event["payload"]
        where = f"{event['flow_key']}/{event['step_id']}"
        clear = "\r\x1b[K" if self.live else ""
        if kind == "step_start":
            self.stream.write(f"[ .. ] {where}" + ("" if self.live else "\n"))
        elif kind == "step_end":
            mark = "skip" if payload["status"] == "skipped" else " ok "
            self.stream.write(f"{clear}[{mark}] {where} ({payload['duration_ms']} ms)\n")
        elif kind == "step_error":
            self.stream.write(f"{clear}[FAIL] {where}: {payload['error']}\n")
        elif kind == "route_decision" and payload["decision"] == "loop":
            self.stream.write(f"       loop -> {payload['to_step']} ({payload['reason']})\n")
        elif kind == "log" and "retry_in_ms" in payload:
            # A retry shows as it happens, not only in the log
            # (docs/contract/steps.md#result-codes).
            self.stream.write(
                f"{clear}[wait] retrying {where} in {payload['retry_in_ms'] / 1000:.1f} s "
                f"(attempt {payload['attempt'] + 1} of {payload['max_attempts']}): "
                f"{payload.get('error') or 'retryable'}\n"
            )
        elif kind in ("run_paused", "run_resumed", "run_stopping"):
            self.stream.write(f"{clear}-- {kind.removeprefix('run_')}: {payload['reason']}\n")
        else:
            return
        self.stream.flush()


def earlier_attempts_ms(run_dir: Path, wall_ms: int) -> int:
    """The time of a run's attempts that began before this process's ``wall_ms`` did.

    A resumed run's events hold each attempt, from its ``run_created`` or ``run_resumed``
    to its last line; those that began before this process are its earlier attempts (a
    follower that watched them all has them in its own time already). 0 when unreadable.
    """
    from swarm_runtime.timeutil import system_clock

    began = system_clock() - timedelta(milliseconds=wall_ms)
    try:
        spans = attempt_spans(run_dir / "events.jsonl")
    except (OSError, ValueError):
        return 0
    return sum(int((last - first).total_seconds() * 1000) for first, last in spans if first < began)


_STARTS = (b'"run_created"', b'"run_resumed"')


def attempt_spans(path: Path) -> list[tuple[datetime, datetime]]:
    """When each attempt of a run began and last wrote, from its event log read line by line.

    Only the lines that may start an attempt, and the last whole one before each, are
    parsed: a long run's log is never held in memory (it grows with the run).
    """
    from swarm_runtime.inputs.files import open_run_file

    spans: list[list[datetime]] = []
    last: bytes | None = None
    with open_run_file(path) as log:
        for line in log:
            if not line.endswith(b"\n"):
                break  # a torn last line: the attempt ended with the line before it
            if not line.strip():
                continue
            if not spans or (any(m in line for m in _STARTS) and _kind(line) in _KINDS):
                if spans and last is not None:
                    spans[-1][1] = _moment(last)
                moment = _moment(line)
                spans.append([moment, moment])
            last = line
    if spans and last is not None:
        spans[-1][1] = _moment(last)
    return [(first, end) for first, end in spans]


_KINDS = ("run_created", "run_resumed")


def judgement_lines(path: Path) -> list[str]:
    """A line per ``judgement`` of a run's event log (docs/judges.md#judges), read line by line."""
    from swarm_runtime.inputs.files import open_run_file

    lines: list[str] = []
    with open_run_file(path) as log:
        for line in log:
            if b'"judgement"' not in line or not line.endswith(b"\n"):
                continue
            event = _event(line)
            if event.get("kind") != "judgement":
                continue
            payload = event.get("payload") or {}
            score = payload.get("score")
            shown = "no score" if score is None else f"{score:g}"
            verdict = "passed" if payload.get("passed") else "FAILED"
            lines.append(
                f"judge {payload.get('name')} on {event.get('flow_key')}/{payload.get('step')}: "
                f"{shown} (threshold {payload.get('threshold'):g}) {verdict}: "
                f"{payload.get('reason')}"
            )
    return lines


def _event(line: bytes) -> dict[str, Any]:
    from swarm_runtime.inputs.json_input import load_json

    value = load_json(line)
    if not isinstance(value, dict):
        raise ValueError("an event must be a JSON object")
    return value


def _kind(line: bytes) -> str:
    return str(_event(line).get("kind"))


def _moment(line: bytes) -> datetime:
    from swarm_runtime.timeutil import parse_ts

    return parse_ts(str(_event(line).get("ts")))


def report(outcome: RunOutcome, wall_ms: int) -> int:
    """Print how the run ended and its table; the exit code.

    ``wall_ms`` is this process's time; a resumed run's table adds its earlier attempts.
    """
    if outcome.paused:
        if outcome.blocked:
            print(
                f"swarm: {outcome.blocked}; resume with: swarm resume {outcome.run_id} "
                "--input TEXT",
                file=sys.stderr,
            )
        else:
            print(
                f"swarm: paused at a step boundary; resume with: swarm resume {outcome.run_id}",
                file=sys.stderr,
            )
    if outcome.interrupted:
        code = EXIT_INTERRUPTED
    else:
        code = EXIT_OK if outcome.status == "succeeded" else EXIT_FAILED
    if outcome.interrupted and not outcome.paused:
        executed = outcome.summary.get("total_steps_executed", 0)
        if outcome.aborted:
            print(
                f"swarm: aborted: the step under way was cut short and recorded as failed "
                f"(run {outcome.run_id}, {executed} step execution(s))",
                file=sys.stderr,
            )
        else:
            print(
                f"swarm: stopped at a step boundary after {executed} step execution(s); every "
                f"finished step is recorded in run {outcome.run_id}",
                file=sys.stderr,
            )
    elif outcome.error:
        print(f"error: {outcome.error}", file=sys.stderr)
    try:
        total_ms = wall_ms + earlier_attempts_ms(outcome.path, wall_ms)
        print(run_table(outcome.summary, total_ms, outcome.budget_use))
        print(f"run {outcome.run_id}: {outcome.status} ({outcome.path})")
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader of our output went away (`swarm run | head`); the run's outcome,
        # not the pipe, decides the exit code.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return code
