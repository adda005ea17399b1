"""Session totals for the terminal summary, combined across pytest-xdist workers."""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["TOTALS_KEY", "SwarmTotals"]


class SwarmTotals:
    """Runs, steps, tokens and cost of every run the fixtures made in this session."""

    __slots__ = ("cost_usd", "runs", "steps", "steps_without_cost", "tokens")

    def __init__(self) -> None:
        self.runs = 0
        self.steps = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self.steps_without_cost = 0
        """Steps whose cost is unknown: the total is then unknown too, never a made-up 0."""

    def add_run(self, summary: dict[str, Any]) -> None:
        """Count one finished run from its ``meta.json`` summary."""
        self.runs += 1
        self.steps += int(summary.get("total_steps_executed", 0))
        self.tokens += int((summary.get("tokens") or {}).get("total", 0))
        if summary.get("cost_usd") is None:
            self.steps_without_cost += int(
                summary.get("steps_without_cost") or summary.get("total_steps_executed", 0)
            )
        else:
            self.cost_usd += float(summary["cost_usd"])

    def as_dict(self) -> dict[str, Any]:
        """Plain values, for a worker's ``workeroutput``."""
        return {
            "runs": self.runs,
            "steps": self.steps,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "steps_without_cost": self.steps_without_cost,
        }

    def merge(self, other: dict[str, Any]) -> None:
        """Add a worker's totals."""
        self.runs += int(other.get("runs", 0))
        self.steps += int(other.get("steps", 0))
        self.tokens += int(other.get("tokens", 0))
        self.cost_usd += float(other.get("cost_usd", 0.0))
        self.steps_without_cost += int(other.get("steps_without_cost", 0))

    def line(self, mode: str) -> str:
        """The summary line."""
        cost = f"cost ${self.cost_usd:.4f}"
        if self.steps_without_cost:
            cost = f"cost unknown ({self.steps_without_cost} step(s) of a model without a price)"
        return (
            f"mode {mode}: {self.runs} run(s), {self.steps} step(s), {self.tokens} token(s), {cost}"
        )


TOTALS_KEY = pytest.StashKey[SwarmTotals]()
"""Where the session's totals live on ``config.stash``."""
