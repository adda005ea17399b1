"""Session totals for the terminal summary, combined across pytest-xdist workers."""

from __future__ import annotations

from typing import Any

__all__ = ["SwarmTotals"]


class SwarmTotals:
    """Runs, steps, tokens and cost of every run the fixtures made in this session."""

    __slots__ = ("cost_usd", "runs", "steps", "tokens")

    def __init__(self) -> None:
        self.runs = 0
        self.steps = 0
        self.tokens = 0
        self.cost_usd = 0.0

    def add_run(self, summary: dict[str, Any]) -> None:
        """Count one finished run from its ``meta.json`` summary."""
        self.runs += 1
        self.steps += int(summary.get("total_steps_executed", 0))
        self.tokens += int((summary.get("tokens") or {}).get("total", 0))
        self.cost_usd += float(summary.get("cost_usd") or 0.0)

    def as_dict(self) -> dict[str, Any]:
        """Plain values, for a worker's ``workeroutput``."""
        return {
            "runs": self.runs,
            "steps": self.steps,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
        }

    def merge(self, other: dict[str, Any]) -> None:
        """Add a worker's totals."""
        self.runs += int(other.get("runs", 0))
        self.steps += int(other.get("steps", 0))
        self.tokens += int(other.get("tokens", 0))
        self.cost_usd += float(other.get("cost_usd", 0.0))

    def line(self, mode: str) -> str:
        """The summary line."""
        return (
            f"mode {mode}: {self.runs} run(s), {self.steps} step(s), {self.tokens} token(s), "
            f"cost ${self.cost_usd:.4f}"
        )
