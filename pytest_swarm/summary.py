"""Session totals for the terminal summary, combined across pytest-xdist workers."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_swarm.budgets import add_shares, budget_line

COUNTERS = (
    "runs",
    "steps",
    "tokens",
    "steps_without_cost",
    "goldens_compared",
    "goldens_updated",
    "goldens_drifted",
    "goldens_missing",
    "cassettes_played",
    "cassettes_recorded",
    "cassettes_unplayed",
    "cassettes_missing",
    "cassettes_diverged",
)
"""Whole-number totals, added up across pytest-xdist workers as they are."""


class SwarmTotals:
    """Runs, steps, tokens, cost, goldens and cassettes of this session's tests."""

    __slots__ = (
        "budgets",
        "rerecord",
        "cassette_dirs",
        "cassettes_removed",
        "cost_usd",
        "goldens_removed",
        "scenarios",
        "unused_cassettes",
        "unused_goldens",
        "stub_only_skipped",
        "unexplained_skips",
        "passed_over",
        "failed_by_unused",
        "plugin_warnings",
        *COUNTERS,
    )

    runs: int
    steps: int
    tokens: int
    steps_without_cost: int
    goldens_compared: int
    goldens_updated: int
    goldens_drifted: int
    goldens_missing: int
    cassettes_played: int
    cassettes_recorded: int
    cassettes_unplayed: int
    cassettes_missing: int
    cassettes_diverged: int

    def __init__(self) -> None:
        for name in COUNTERS:
            setattr(self, name, 0)
        self.cost_usd = 0.0
        # steps_without_cost: steps whose cost is unknown; the total is then unknown too.
        self.scenarios: set[str] = set()
        """Golden scenarios compared in this session (for --snapshot-update's clean-up)."""
        self.goldens_removed: list[str] = []
        self.rerecord: dict[str, bool] = {}
        """Tests whose recordings no longer match (node as a command names it) and whether
        each compares a golden: one command at the end records them all again."""
        self.cassette_dirs: set[str] = set()
        """Cassette dirs (relative to the cassette dir) this session's tests used."""
        self.cassettes_removed: list[str] = []
        self.unused_goldens: list[str] = []
        """Goldens of the mode's family no test used, left in place (controller only)."""
        self.unused_cassettes: list[str] = []
        self.unexplained_skips = 0
        """Tests skipped for a reason other than their swarm modes (controller only)."""
        self.passed_over: set[str] = set()
        """Tests deselected, or skipped for swarm modes that share this mode's goldens and
        cassettes: after such a session nothing counts as unused."""
        self.failed_by_unused = False
        """Whether unused goldens or cassettes failed a session of passing tests."""
        self.stub_only_skipped = 0
        """Tests skipped because they script the stub (controller only: it sees every report)."""
        self.budgets: dict[str, str] = {}
        """Per flow (``""``: the run), the largest share of a declared budget used."""
        self.plugin_warnings: dict[str, str] = {}
        """Per runtime plugin that failed (a listener that raised), the first line said."""

    def count(self, name: str, amount: int = 1) -> None:
        """Add to a counter (``goldens_compared``, …), or note ``scenario:<name>`` as used."""
        if name.startswith("scenario:"):
            self.scenarios.add(name.partition(":")[2])
            return
        setattr(self, name, getattr(self, name) + amount)

    def add_call(self, tokens: int, cost_usd: float | None) -> None:
        """Count a call made outside a run (a test's judge): its tokens and cost."""
        self.count("tokens", tokens)
        if cost_usd is None:
            self.count("steps_without_cost")
        else:
            self.cost_usd += cost_usd

    def add_run(self, summary: dict[str, Any], budgets: dict[str, str] | None = None) -> None:
        """Count one finished run from its ``meta.json`` summary (and its budget shares)."""
        add_shares(self.budgets, budgets or {})
        self.count("runs")
        self.count("steps", int(summary.get("total_steps_executed", 0)))
        self.count("tokens", int((summary.get("tokens") or {}).get("total", 0)))
        if summary.get("cost_usd") is None:
            self.count(
                "steps_without_cost",
                int(summary.get("steps_without_cost") or summary.get("total_steps_executed", 0)),
            )
        else:
            self.cost_usd += float(summary["cost_usd"])

    def as_dict(self) -> dict[str, Any]:
        """Plain values, for a worker's ``workeroutput``."""
        return {
            "cost_usd": self.cost_usd,
            "scenarios": sorted(self.scenarios),
            "cassette_dirs": sorted(self.cassette_dirs),
            "passed_over": sorted(self.passed_over),
            "rerecord": dict(self.rerecord),
            "budgets": dict(self.budgets),
            "plugin_warnings": dict(self.plugin_warnings),
            **{name: getattr(self, name) for name in COUNTERS},
        }

    def merge(self, other: dict[str, Any]) -> None:
        """Add a worker's totals."""
        for name in COUNTERS:
            self.count(name, int(other.get(name, 0)))
        self.cost_usd += float(other.get("cost_usd", 0.0))
        self.scenarios.update(other.get("scenarios", ()))
        self.cassette_dirs.update(other.get("cassette_dirs", ()))
        self.passed_over.update(other.get("passed_over", ()))
        self.rerecord.update(other.get("rerecord", {}))
        add_shares(self.budgets, other.get("budgets", {}))
        for plugin, line in other.get("plugin_warnings", {}).items():
            self.plugin_warnings.setdefault(plugin, line)

    def lines(self, mode: str) -> list[str]:
        """The summary lines: runs, then goldens and cassettes when any were used."""
        get = self.as_dict()
        cost = f"cost ${self.cost_usd:.4f}"
        if get["steps_without_cost"]:
            cost = f"cost unknown ({get['steps_without_cost']} step(s) of a model without a price)"
        out = [
            f"mode {mode}: {get['runs']} run(s), {get['steps']} step(s), {get['tokens']} "
            f"token(s), {cost}"
        ]
        out.extend(budget_line(self.budgets))
        if (
            get["goldens_compared"]
            or get["goldens_updated"]
            or get["goldens_drifted"]
            or get["goldens_missing"]
            or self.goldens_removed
        ):
            removed = (
                f", {len(self.goldens_removed)} no test produces removed "
                f"({', '.join(self.goldens_removed)})"
                if self.goldens_removed
                else ""
            )
            missing = (
                f", {get['goldens_missing']} missing (no golden yet)"
                if get["goldens_missing"]
                else ""
            )
            out.append(
                f"goldens: {get['goldens_compared']} compared, {get['goldens_updated']} updated, "
                f"{get['goldens_drifted']} drifted{missing}{removed}"
            )
        if mode in ("replay", "record") or any(
            get[name] for name in COUNTERS if name.startswith("cassettes_")
        ):
            missing, diverged = get["cassettes_missing"], get["cassettes_diverged"]
            out.append(
                f"cassettes: {get['cassettes_played']} played, {get['cassettes_recorded']} "
                f"recorded, {get['cassettes_unplayed']} unplayed"
                + (f", {missing} missing (calls with no recording)" if missing else "")
                + (f", {diverged} diverged (calls unlike their recording)" if diverged else "")
            )
        if self.cassettes_removed:
            out.append(
                f"cassettes: {len(self.cassettes_removed)} dir(s) no test used removed "
                f"({', '.join(self.cassettes_removed)})"
            )
        if self.unused_goldens or self.unused_cassettes:
            out.extend(self.unused_lines())
        out.extend(f"warning: {line}" for line in self.plugin_warnings.values())
        if self.stub_only_skipped:
            out.append(
                f"stub-only: {self.stub_only_skipped} test(s) skipped (they script the stub; "
                "run them with --swarm-mode=stub)"
            )
        return out

    def unused_lines(self) -> list[str]:
        """What no test used, and how to remove it."""
        lines = []
        if self.unused_goldens:
            lines.append(
                f"unused: {len(self.unused_goldens)} golden(s) no test compared: "
                f"{', '.join(self.unused_goldens)} (pytest --snapshot-update removes them)"
            )
        if self.unused_cassettes:
            lines.append(
                f"unused: {len(self.unused_cassettes)} cassette dir(s) no test recorded or "
                f"played: {', '.join(self.unused_cassettes)} (pytest --swarm-prune-cassettes "
                "removes them)"
            )
        return lines


TOTALS_KEY = pytest.StashKey[SwarmTotals]()
"""Where the session's totals live on ``config.stash``."""
