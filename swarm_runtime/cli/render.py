"""Text output of the CLI: the per-step progress line and the final table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO


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
    rows.append(
        [
            "total",
            summary["total_steps_executed"],
            summary["loop_iterations"],
            summary["tokens"]["total"],
            _cost(summary.get("cost_usd")),
            wall_ms,
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
            "price table (engines.claude.prices in runtime.yaml adds it)"
        )
    return table


def _cost(value: object) -> str:
    """A cost cell: four decimals, or a dash when the cost is unknown (never a made-up 0)."""
    return f"{value:.4f}" if isinstance(value, int | float) else "\u2014"


class ProgressPrinter:
    """Prints a line per step as it starts and as it finishes.

    On a terminal the start line ("[ .. ] flow/step") is replaced by the finish line, so
    the screen shows what is running now and one line per finished step.
    """

    def __init__(self, stream: TextIO, *, live: bool | None = None) -> None:
        self.stream = stream
        self.live = stream.isatty() if live is None else live

    def __call__(self, event: dict[str, Any]) -> None:
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
            # A retry shows as it happens, not only in the log (SPEC §7.3).
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
